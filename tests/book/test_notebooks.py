"""The Korean and English chapters are pairs: same code, same text outputs, each links to the
other in its first cell; and every chapter notebook is committed executed. (That both languages
have the same file names, one per chapter source, is checked in test_chapter_sources.py.)"""

from __future__ import annotations

import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path
from unittest import mock

import nbformat
import pytest
import yaml

from helpers.paths import ROOT
from helpers.text import has_hangul, text_outputs
from normlib_book import i18n

KO, EN = ROOT / "chapters" / "ko", ROOT / "chapters" / "en"
NAMES = sorted(p.name for p in KO.glob("*.ipynb"))
LANG_CELL = re.compile(r'^\s*LANG\s*=\s*["\'](ko|en)["\']\s*$')
LANG_LINE = re.compile(r'^\s*LANG\s*=\s*["\'](ko|en)["\'][ \t]*\n', re.MULTILINE)   # the setup cell's first line


def strip_comments(source: str) -> str:
    """The code without comments and blank lines (comments may be translated)."""
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type != tokenize.COMMENT]
    code = tokenize.untokenize(tokens)
    return "\n".join(line.rstrip() for line in code.splitlines() if line.strip())


def code_cells(path: Path):
    nb = nbformat.read(path, as_version=4)
    return [c for c in nb.cells if c.cell_type == "code" and not LANG_CELL.match(c.source)]


PLACEHOLDER = re.compile(r"\{(\w+)(?:![rsa])?(?::[^{}]*)?\}")


def _template(ko: str) -> re.Pattern:
    """A Korean page string with {placeholders} as a regular expression that captures each value."""
    pieces, pattern, seen = PLACEHOLDER.split(ko), "", set()
    for index, piece in enumerate(pieces):
        if index % 2 == 0:
            pattern += re.escape(piece)
        elif piece in seen:
            pattern += f"(?P={piece})"
        else:
            last = index == len(pieces) - 2 and pieces[-1] == ""
            pattern += f"(?P<{piece}>[^\n]+)" if last else f"(?P<{piece}>[^\n]+?)"
            seen.add(piece)
    return re.compile(pattern)


def _translations():
    """normlib_book.i18n's (Korean, English) pairs, longest Korean first: templates with
    placeholders as (regex, English with bare placeholders), plain strings as they are."""
    templates, plain = [], []
    for key, ko in sorted(i18n.STRINGS["ko"].items(), key=lambda item: -len(item[1])):
        en = i18n.STRINGS["en"][key]
        if not has_hangul(ko) or ko == en:
            continue
        if PLACEHOLDER.search(ko):
            templates.append((_template(ko), PLACEHOLDER.sub(r"{\1}", en)))
        else:
            plain.append((ko, en))
    return templates, plain


TEMPLATES, PLAIN = _translations()
NUMBERS = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def in_english(text: str) -> str:
    """A Korean page's printed text with the page strings (normlib_book.i18n) put back into English:
    each template is matched with its values captured and written out in the English template."""
    for pattern, en in TEMPLATES:
        text = pattern.sub(lambda m, en=en: en.format(**m.groupdict()), text)
    for ko, en in PLAIN:
        text = text.replace(ko, en)
    return text


def test_a_korean_output_reads_back_into_english():
    ko = i18n.text("cmp:summary", "ko").format(name="X", train=1, eval=2, keys=True, values=3, loads=False)
    en = i18n.text("cmp:summary", "en").format(name="X", train=1, eval=2, keys=True, values=3, loads=False)
    assert ko != en and in_english(ko) == en
    assert in_english(ko.replace("1", "9")) != en   # the numbers still count


@pytest.mark.parametrize("name", NAMES)
def test_pair_has_the_same_code_and_outputs(name):
    """The same code, and the same outputs once the Korean page's strings are read back into English."""
    ko, en = code_cells(KO / name), code_cells(EN / name)
    assert len(ko) == len(en), f"{name}: {len(ko)} code cells in Korean, {len(en)} in English"
    for i, (a, b) in enumerate(zip(ko, en)):
        assert a.source.count("LANG = ") == b.source.count("LANG = ") <= 1, f"{name}: code cell {i} sets LANG twice"
        same = (strip_comments(LANG_LINE.sub("", a.source, count=1)), strip_comments(LANG_LINE.sub("", b.source, count=1)))
        assert same[0] == same[1], f"{name}: code cell {i} differs"
        if "nbval-ignore-output" in a.metadata.get("tags", []):
            continue  # timings: nbval does not compare them either
        ko_out, en_out = [in_english(t) for t in text_outputs(a)], text_outputs(b)
        if ko_out != en_out and any(has_hangul(t) for t in ko_out):
            # what the page strings do not cover is normlib's own explanation of an error, written in
            # Korean where it is raised (normlib.messages): the numbers and shapes must still agree
            ko_out, en_out = [NUMBERS.findall(t) for t in ko_out], [NUMBERS.findall(t) for t in en_out]
        assert ko_out == en_out, f"{name}: outputs of code cell {i} differ"


@pytest.mark.parametrize("path", sorted(KO.glob("*.ipynb")) + sorted(EN.glob("*.ipynb")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_notebook_is_committed_executed(path):
    nb = nbformat.read(path, as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code"]
    assert cells, f"{path.name} has no code"
    counts = [c.execution_count for c in cells]
    assert all(isinstance(n, int) for n in counts), f"{path.name}: unexecuted cells {counts}"
    assert counts == sorted(counts), f"{path.name}: cells were run out of order {counts}"
    assert not any(o.output_type == "error" for c in cells for o in c.outputs), f"{path.name} stored an error"


@pytest.mark.parametrize("path", sorted(KO.glob("*.ipynb")) + sorted(EN.glob("*.ipynb")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_notebook_prints_no_warnings(path):
    """A warning in a chapter (a missing glyph, a deprecation) is something a reader should not see."""
    nb = nbformat.read(path, as_version=4)
    stderr = [o.text for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "stream" and o.name == "stderr"]
    assert not stderr, f"{path.name} printed to stderr: {stderr[0][:300]}"


@pytest.mark.parametrize("name", NAMES)
def test_each_page_links_to_its_counterpart(name):
    for lang, other in (("ko", "en"), ("en", "ko")):
        nb = nbformat.read(ROOT / "chapters" / lang / name, as_version=4)
        first = next(c for c in nb.cells if c.cell_type == "markdown")
        assert f"(../{other}/{name})" in first.source, f"{lang}/{name}: no link to ../{other}/{name} in its first cell"


# -- the first cell: install normlib where it is missing (Colab, Binder, a JupyterHub) ---------------
def _first_code_cell(path: Path):
    nb = nbformat.read(path, as_version=4)
    return next(c for c in nb.cells if c.cell_type == "code")


@pytest.mark.parametrize("name", NAMES)
def test_first_cell_installs_normlib_only_where_it_is_missing(name):
    ko, en = _first_code_cell(KO / name), _first_code_cell(EN / name)
    # the same code, its comments in each page's language
    code = lambda cell: [line for line in cell.source.splitlines() if not line.startswith("#")]
    assert code(ko) == code(en), f"{name}: the install cell differs between languages"
    comments = [line for line in ko.source.splitlines() if line.startswith("#")]
    assert comments and all(re.search("[가-힣]", line) for line in comments), \
        f"{name}: the Korean install cell's comments are not Korean: {comments}"
    assert "remove-cell" in ko.metadata.get("tags", []), f"{name}: the install cell shows in the book"
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    url = config["repository"]["url"]

    def run_cell(importable: bool):
        calls = []

        def fake_run(args, check=False, **kwargs):
            calls.append(args)
            sys.modules.pop("normlib", None)  # "installed": the retry imports the real package
            return subprocess.CompletedProcess(args, 0)

        saved = sys.modules.get("normlib")
        if not importable:
            sys.modules["normlib"] = None  # import normlib -> ModuleNotFoundError
        try:
            with mock.patch("subprocess.run", fake_run):
                exec(compile(ko.source, f"{name}:install", "exec"), {})
        finally:
            if saved is not None:
                sys.modules["normlib"] = saved
        return calls

    assert run_cell(importable=True) == [], f"{name}: pip ran although normlib is importable"
    calls = run_cell(importable=False)
    assert len(calls) == 1, calls
    assert calls[0][1:4] == ["-m", "pip", "install"] and f"normlib[book] @ git+{url}" in calls[0], calls[0]


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.mark.parametrize("path", sorted(KO.glob("*.ipynb")) + sorted(EN.glob("*.ipynb")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_widget_shown_has_its_state_stored(path):
    """The book's explorers work without a kernel only if the notebook stores every shown widget's
    state (Jupyter Book embeds metadata.widgets): a rebuild that dropped it broke them once."""
    nb = nbformat.read(path, as_version=4)
    shown = {o.data[WIDGET_VIEW]["model_id"] for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
             if o.output_type in ("display_data", "execute_result") and WIDGET_VIEW in o.get("data", {})}
    state = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    missing = sorted(shown - set(state))
    assert not missing, f"{path.name} shows {len(shown)} widgets, {len(missing)} without stored state: run make chapters"
