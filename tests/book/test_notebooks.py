"""The Korean and English chapters are pairs: the same code but for the strings each prints (written
once in the chapter's source as pairs, ``T(en="…", ko="…")``, each notebook holding its language's
literal), the same text outputs once a Korean page's strings are read back into English with its
chapter's pairs, each page links to the other in its first cell; and every chapter notebook is
committed executed. (That both languages have the same file names, one per chapter source, is
checked in test_chapter_sources.py.)"""

from __future__ import annotations

import ast
import functools
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

from book.tools import build_chapters
from helpers.paths import ROOT
from helpers.text import has_hangul, text_outputs
from normlib_book import i18n

KO, EN = ROOT / "chapters" / "ko", ROOT / "chapters" / "en"
NAMES = sorted(p.name for p in KO.glob("*.ipynb"))
LANG_CELL = re.compile(r'^\s*LANG\s*=\s*["\'](ko|en)["\']\s*$')
LANG_LINE = re.compile(r'^\s*LANG\s*=\s*["\'](ko|en)["\'][ \t]*\n', re.MULTILINE)   # the setup cell's first line
SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}


def code_tokens(source: str) -> list[tuple[int, str]]:
    """The code's tokens (type, text) without comments, line breaks and indentation tokens (comments
    may be translated; the indentation still shows in the tokens' order)."""
    return [(t.type, t.string) for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type not in SKIP]


def code_cells(path: Path):
    nb = nbformat.read(path, as_version=4)
    return [c for c in nb.cells if c.cell_type == "code" and not LANG_CELL.match(c.source)]


def differences(ko: str, en: str, pairs: set[tuple[str, str]]) -> list[str]:
    """What differs between a Korean and an English code cell beyond the chapter's pairs: their
    tokens must be the same, but where the Korean holds a pair's Korean literal and the English
    that pair's English one (the pairs masked); and no string literal of the English cell may hold
    Hangul (a Korean literal left in the English notebook)."""
    a, b = code_tokens(LANG_LINE.sub("", ko, count=1)), code_tokens(LANG_LINE.sub("", en, count=1))
    problems = [f"Korean literal in the English notebook: {t}" for kind, t in b if kind == tokenize.STRING and has_hangul(t)]
    if len(a) != len(b):
        return problems + [f"{len(a)} tokens in Korean, {len(b)} in English"]
    for (kind_a, x), (kind_b, y) in zip(a, b):
        if x != y and not (kind_a == kind_b == tokenize.STRING and (x, y) in pairs):
            problems.append(f"{x!r} (ko) vs {y!r} (en): not one of the chapter's pairs")
    return problems


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


def pair_texts(pair: dict) -> tuple[str, str]:
    """A source pair as (Korean, English) templates: a plain literal as it is (a ``.format``
    template keeps its {placeholders}), an f-string with each replacement field as a placeholder
    named after its expression, the same name in both languages."""
    names: dict[str, str] = {}

    def one(literal: str) -> str:
        node = ast.parse(literal.strip(), mode="eval").body
        if isinstance(node, ast.Constant):
            return node.value
        out = []
        for part in node.values:
            if isinstance(part, ast.Constant):
                out.append(part.value)
            else:
                expression = ast.unparse(part.value)
                out.append("{%s}" % names.setdefault(expression, f"field{len(names)}"))
        return "".join(out)
    return one(pair["ko"]), one(pair["en"])


def _translations(texts):
    """(Korean, English) strings, longest Korean first: templates with placeholders as (regex,
    English with bare placeholders), plain strings as they are."""
    templates, plain = [], []
    for ko, en in sorted(set(texts), key=lambda pair: -len(pair[0])):
        if not has_hangul(ko) or ko == en:
            continue
        if PLACEHOLDER.search(ko):
            templates.append((_template(ko), PLACEHOLDER.sub(r"{\1}", en)))
        else:
            plain.append((ko, en))
    return templates, plain


@functools.lru_cache(maxsize=None)
def chapter_strings(stem: str):
    """A chapter's translations: its source's pairs, and the words the helpers print for it
    (normlib_book.i18n: ``examples.compare``'s summary …)."""
    texts = [pair_texts(p) for p in build_chapters.source_pairs(stem)]
    texts += [(ko, i18n.STRINGS["en"][key]) for key, ko in i18n.STRINGS["ko"].items()]
    return _translations(texts)


@functools.lru_cache(maxsize=None)
def chapter_literals(stem: str) -> set[tuple[str, str]]:
    """A chapter's pairs as the two notebooks write them: (Korean literal, English literal)."""
    return {(p["ko"], p["en"]) for p in build_chapters.source_pairs(stem)}


NUMBERS = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def in_english(text: str, stem: str) -> str:
    """A Korean page's printed text with the chapter's strings put back into English: each template
    is matched with its values captured and written out in the English template."""
    templates, plain = chapter_strings(stem)
    for pattern, en in templates:
        text = pattern.sub(lambda m, en=en: en.format(**m.groupdict()), text)
    for ko, en in plain:
        text = text.replace(ko, en)
    return text


def test_a_korean_output_reads_back_into_english():
    stem = "04_layernorm"
    pair = next(p for p in build_chapters.source_pairs(stem) if "{" in p["en_value"] and p["en"][0] != "f")
    ko_t, en_t = pair_texts(pair)
    fields = {name: str(9 + i) for i, name in enumerate(dict.fromkeys(PLACEHOLDER.findall(en_t)))}
    bare = lambda t: PLACEHOLDER.sub(lambda m: fields[m.group(1)], t)
    ko, en = bare(ko_t), bare(en_t)
    assert ko != en and in_english(ko, stem) == en
    assert in_english(ko.replace("9", "8"), stem) != en   # the numbers still count
    # an f-string pair: its fields are named after their expressions, whatever their order
    assert pair_texts({"ko": 'f"{b}의 {a:.2f}"', "en": 'f"{a:.2f} of {b}"'}) == ("{field0}의 {field1}", "{field1} of {field0}")


def test_the_code_check_masks_pairs_and_nothing_else():
    pairs = {('"샘플 하나에 LayerNorm:"', '"LayerNorm on one sample:"')}
    ko, en = 'print("샘플 하나에 LayerNorm:", x)', 'print("LayerNorm on one sample:", x)'
    assert differences(ko, en, pairs) == []
    assert differences(ko, en.replace("x)", "y)"), pairs)                     # other code differs
    assert differences(ko, 'print("LayerNorm on one sampel:", x)', pairs)   # not the pair's English
    assert differences(ko, ko, pairs)                                         # the Korean left in the English notebook
    assert differences('print("표본:", x)', 'print("sample:", x)', pairs)     # a pair the source does not hold


@pytest.mark.parametrize("name", NAMES)
def test_pair_has_the_same_code_and_outputs(name):
    """The same code but for the chapter's pairs, and the same outputs once the Korean page's strings
    are read back into English."""
    stem = Path(name).stem
    ko, en = code_cells(KO / name), code_cells(EN / name)
    assert len(ko) == len(en), f"{name}: {len(ko)} code cells in Korean, {len(en)} in English"
    for i, (a, b) in enumerate(zip(ko, en)):
        assert a.source.count("LANG = ") == b.source.count("LANG = ") <= 1, f"{name}: code cell {i} sets LANG twice"
        problems = differences(a.source, b.source, chapter_literals(stem))
        assert not problems, f"{name}: code cell {i}: {problems[:3]}"
        if "nbval-ignore-output" in a.metadata.get("tags", []):
            continue  # timings: nbval does not compare them either
        ko_out, en_out = [in_english(t, stem) for t in text_outputs(a)], text_outputs(b)
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
