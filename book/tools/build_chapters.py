"""Write the Korean and English chapter notebooks from one bilingual source per chapter.

    python -m book.tools.build_chapters                # every chapters/src/*.md -> chapters/{ko,en}/*.ipynb
    python -m book.tools.build_chapters 03_batchnorm

Then execute them (``make chapters`` does both). A notebook whose code cells are unchanged keeps its
outputs, so a change to the prose alone needs no execution. Editing a notebook directly is fine while
exploring, but the source under ``chapters/src/`` is what is kept: tests/book/test_chapter_sources.py
fails when the notebooks no longer match it.

The source format is ``book.tools.bilingual``'s (markers, ``#ko:``/``#en:`` comments, the install
cell). The chapters' block kinds:

``<!-- ko -->`` / ``<!-- en -->``
    a Markdown cell in that language only. The first one of each language must start with a
    ``# `` title; a link to the other language's page goes after it.
``<!-- setup -->``
    the chapter's setup (imports, ``book.start(LANG)``): the first code block of every chapter.
    It becomes one cell that starts with ``LANG = "ko"`` or ``LANG = "en"`` (the only code that
    differs between the two languages) and that the book shows collapsed (tag ``hide-input``), so
    a page opens with its content. It prints nothing.
``<!-- code [tag ...] -->``
    a code cell in both languages, with optional cell tags (``nbval-ignore-output`` for
    timings, ``hide-input`` …).
``<!-- solution [tag ...] -->``
    a code cell collapsed in JupyterLab and in the book (an exercise's solution: tags ``hide-cell``
    and ``solution``; the book labels its toggle 풀이 보기 / Show solution, book/site/site_pages.py).
``<!-- caption ko|en -->``, ``<!-- alt ko|en -->``
    the caption and alt text of the figure drawn by the code cell just before.

Every string a code cell prints or draws is written in the source as a pair,
``print(T(en="LayerNorm on one sample:", ko="샘플 하나에 LayerNorm:"))``, and each notebook gets its
language's literal as written (``print("샘플 하나에 LayerNorm:")``), so a reader sees plain strings and
an author edits one file per chapter (``book.tools.bilingual.pairs_in``). A pair's literals may be
f-strings or ``.format`` templates; a string chosen at run time is a dict of pairs
(``NAMES = {"bn": T(en="with BatchNorm", ko="BatchNorm 사용")}``, then ``NAMES[name]``). ``T`` is
nothing else in a source: a table key ``T("key")`` is an error. The words the helper modules draw
themselves (figure labels, the explorer) stay in ``normlib_book``'s tables.

Two code cells open every notebook, after its title block: the install cell (removed from the HTML
book, tag ``remove-cell``) and the setup cell.

A citation ``{cite:p}`ioffe2015``` (a key of references.bib) becomes ``{cite:p}`ko-ioffe2015``` in
the Korean notebook and ``en-…`` in the English one: each language has its bibliography page.

In Markdown, a link to ``normlib:<module>.<name>`` (``[layer_norm](normlib:functional.layer_norm)``), or
into a package shipped beside the library (``normlib_benchmarks:work``, ``normlib_book:viz.draw_sharing``),
becomes a link to the line of the repository's source where ``<name>`` is defined, so a chapter
points at the library code it derives. tests/book/test_chapter_sources.py fails when the library has
moved since the notebooks were built.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path

import nbformat

try:
    from book.tools.bilingual import (
        KERNEL,
        LANGS,
        ROOT,
        SourceError,
        any_options,
        code_for,
        count,
        install_cell,
        installed_from,
        pair_calls,
        pairs_in,
        repository_branch,
        repository_url,
    )
    from book.tools.bilingual import parse as parse_blocks
    from book.tools.bilingual import stems as stems_in
except ModuleNotFoundError as error:  # run as a file (python book/tools/build_chapters.py) instead of a module
    raise SystemExit(f"run it from the repository's root as a module: python -m book.tools.build_chapters ({error})") from None

SRC = ROOT / "chapters" / "src"
OTHER = {"ko": ("en", "영어판(English version)"), "en": ("ko", "한국어판")}


def _one_language(options: list[str]) -> str | None:
    return None if options in (["ko"], ["en"]) else f"needs 'ko' or 'en', got {options}"


KINDS = {"ko": count(0), "en": count(0), "setup": count(0), "code": any_options, "solution": any_options,
         "caption": _one_language, "alt": _one_language}
LIBRARY_LINK = re.compile(r"\]\((normlib(?:_book|_classroom|_benchmarks)?:[\w.]+)\)")
CITATION = re.compile(r"\{cite(:\w+)?\}`([^`]+)`")


def library_url(target: str) -> str:
    """``normlib:functional.layer_norm`` → the URL of the lines in the repository where it is defined
    (``normlib_benchmarks:work``, a module → its file)."""
    package, _, dotted = target.partition(":")
    module_name, _, name = dotted.rpartition(".")
    try:
        module = importlib.import_module(f"{package}.{module_name}" if module_name else package)
        obj = getattr(module, name)
        lines, first = inspect.getsourcelines(obj)
    except (ImportError, AttributeError, TypeError, OSError) as error:
        raise SourceError(f"{target} does not name a function or class of {package} ({error})") from None
    path = Path(inspect.getsourcefile(obj)).resolve().relative_to(ROOT).as_posix()
    if inspect.ismodule(obj):   # a whole module: its file
        return f"{repository_url()}/blob/{repository_branch()}/{path}"
    return f"{repository_url()}/blob/{repository_branch()}/{path}#L{first}-L{first + len(lines) - 1}"


def link_library(markdown: str) -> str:
    return LIBRARY_LINK.sub(lambda m: f"]({library_url(m.group(1))})", markdown)


def cite_in(markdown: str, lang: str) -> str:
    """``{cite:p}`ioffe2015``` → ``{cite:p}`ko-ioffe2015```: each language's pages cite into that
    language's bibliography page (chapters/<lang>/references.md, ``:keyprefix: <lang>-``)."""
    def prefix(m):
        keys = ",".join(f"{lang}-{key.strip()}" for key in m.group(2).split(","))
        return f"{{cite{m.group(1) or ''}}}`{keys}`"
    return CITATION.sub(prefix, markdown)


def markdown_for(body: str, lang: str) -> str:
    """A Markdown block as the notebook shows it: library links and citations resolved."""
    return cite_in(link_library(body), lang)


def parse(text: str, name: str) -> list[dict]:
    """The blocks of a chapter source, in order: dicts with kind, options, body and line."""
    return parse_blocks(text, name, KINDS)


def code_in(block: dict, stem: str, lang: str) -> str:
    """A code block as ``lang``'s notebook shows it: its ``#ko:``/``#en:`` comments resolved and each
    inline pair ``T(en="…", ko="…")`` written as that language's plain literal."""
    code = code_for(block["body"], lang)
    return pairs_in(code, lang, f"{stem}.md:{block['line']}+")


def source_pairs(stem: str) -> list[dict]:
    """Every inline pair ``T(en=…, ko=…)`` of a chapter's source, in order (``bilingual.pair_calls``'s
    dicts: each language's literal as written and its value): what the tests read the pages'
    strings from."""
    source = SRC / f"{stem}.md"
    found = []
    for block in parse(source.read_text(encoding="utf-8"), source.name):
        if block["kind"] in ("setup", "code", "solution"):
            found += pair_calls(code_for(block["body"], "en"), f"{source.name}:{block['line']}+")
    return found


def notebook(blocks: list[dict], stem: str, lang: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook(metadata=dict(KERNEL))
    cells = nb.cells
    titled = False
    set_up = False
    last_code = None
    for b in blocks:
        kind = b["kind"]
        if kind in LANGS:
            if kind != lang:
                continue
            body = b["body"]
            if not titled:
                other, label = OTHER[lang]
                lines = body.splitlines()
                if not lines or not lines[0].startswith("# "):
                    raise SourceError(f"{stem}: the first {lang} block must start with a '# ' title")
                lines.insert(1, f"\n[{label} →](../{other}/{stem}.ipynb)")
                body = "\n".join(lines)
                cells.append(nbformat.v4.new_markdown_cell(markdown_for(body, lang)))
                cells.append(install_cell(lang=lang))
                titled = True
                continue
            cells.append(nbformat.v4.new_markdown_cell(markdown_for(body, lang)))
        elif kind == "setup":
            if not titled or set_up or last_code is not None:
                raise SourceError(f"{stem}:{b['line']}: one setup block, the first code block, after the title block")
            cell = nbformat.v4.new_code_cell(f'LANG = "{lang}"\n' + code_in(b, stem, lang))
            cell.metadata["tags"] = ["hide-input"]
            cells.append(cell)
            set_up = True
        elif kind in ("code", "solution"):
            if not titled:
                raise SourceError(f"{stem}: code before the title block")
            if not set_up:
                raise SourceError(f"{stem}:{b['line']}: a {kind} block before the setup block")
            cell = nbformat.v4.new_code_cell(code_in(b, stem, lang))
            tags = list(b["options"])
            if kind == "solution":
                tags += ["hide-cell", "solution"]
                cell.metadata["jupyter"] = {"source_hidden": True}
            if tags:
                cell.metadata["tags"] = tags
            cells.append(cell)
            last_code = cell
        else:  # caption / alt for the figure of the last code cell
            if b["options"][0] != lang:
                continue
            if last_code is None:
                raise SourceError(f"{stem}:{b['line']}: {kind} with no code cell before it")
            mystnb = last_code.metadata.setdefault("mystnb", {})
            if kind == "caption":
                mystnb.setdefault("figure", {})["caption"] = b["body"]
            else:
                mystnb.setdefault("image", {})["alt"] = b["body"]
    for index, cell in enumerate(cells):
        cell.id = f"{lang}-{index:03d}"  # stable ids: rebuilding changes nothing that did not change
    return nb


# Tags that change how the book shows a cell, never what it computes: adding or removing one keeps
# the outputs (folding a plotting cell needs no re-execution). nbval's tags are not among them.
DISPLAY_TAGS = frozenset({"hide-input", "hide-output", "hide-cell", "solution"})


def keep_outputs(new: nbformat.NotebookNode, old: nbformat.NotebookNode) -> bool:
    """When ``new`` has exactly ``old``'s code cells (same sources, same tags but those of
    DISPLAY_TAGS), give it ``old``'s
    outputs and what execution stored in the notebook's metadata (the widgets' state, which the
    book's static explorers need), so a change to the prose alone (or a library link) needs no
    re-execution. Returns whether it did."""
    def code(nb):   # an install cell counts by the address it installs from, not its comments' language
        return [(installed_from(c.source) or c.source,
                 [t for t in c.metadata.get("tags", []) if t not in DISPLAY_TAGS]) for c in nb.cells
                if c.cell_type == "code"]
    if code(new) != code(old):
        return False
    for key, value in old.metadata.items():   # what execution stored: the widgets' state, language_info
        if key != "kernelspec":
            new.metadata[key] = value
    fresh = [c for c in new.cells if c.cell_type == "code"]
    for cell, executed in zip(fresh, (c for c in old.cells if c.cell_type == "code")):
        cell.outputs, cell.execution_count = executed.outputs, executed.execution_count
        if "execution" in executed.metadata:
            cell.metadata["execution"] = executed.metadata["execution"]
    return True


def build(stem: str) -> list[Path]:
    """Write both notebooks of a chapter; returns those whose code changed (they need executing)."""
    source = SRC / f"{stem}.md"
    blocks = parse(source.read_text(encoding="utf-8"), source.name)
    changed = []
    for lang in LANGS:
        nb = notebook(blocks, stem, lang)
        path = ROOT / "chapters" / lang / f"{stem}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        if not (path.exists() and keep_outputs(nb, nbformat.read(path, as_version=4))):
            changed.append(path)
        nbformat.write(nb, path)
    return changed


def stems() -> list[str]:
    return stems_in(SRC)


def main(args: list[str]) -> int:
    for stem in args or stems():
        changed = build(stem)
        for lang in LANGS:
            path = ROOT / "chapters" / lang / f"{stem}.ipynb"
            print(f"wrote {path.relative_to(ROOT)}" + (" (code changed: execute it)" if path in changed else
                                                       " (same code: outputs kept)"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
