"""Write the Korean and English chapter notebooks from one bilingual source per chapter.

    python -m tools.build_chapters                # every chapters/src/*.md -> chapters/{ko,en}/*.ipynb
    python -m tools.build_chapters 03_batchnorm

Then execute them (``make chapters`` does both). Editing a notebook directly is fine while
exploring, but the source under ``chapters/src/`` is what is kept: tests/test_chapter_sources.py
fails when the notebooks no longer match it.

The source format is ``tools.bilingual``'s (markers, ``#ko:``/``#en:`` comments, the install
cell). The chapters' block kinds:

``<!-- ko -->`` / ``<!-- en -->``
    a Markdown cell in that language only. The first one of each language must start with a
    ``# `` title; a link to the other language's page goes after it.
``<!-- code [tag ...] -->``
    a code cell in both languages, with optional cell tags (``nbval-ignore-output`` for
    timings, ``hide-input`` …).
``<!-- solution [tag ...] -->``
    a code cell collapsed in JupyterLab and in the book (an exercise's solution).
``<!-- caption ko|en -->``, ``<!-- alt ko|en -->``
    the caption and alt text of the figure drawn by the code cell just before.

Two code cells open every notebook, after its title: the install cell (removed from the HTML
book, tag ``remove-cell``) and ``LANG = "ko"`` or ``LANG = "en"``, the only code that differs
between the two languages.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

try:
    from tools.bilingual import KERNEL, LANGS, ROOT, SourceError, any_options, code_for, count, install_cell
    from tools.bilingual import parse as parse_blocks
    from tools.bilingual import stems as stems_in
except ModuleNotFoundError as error:  # run as a file (python tools/build_chapters.py) instead of a module
    raise SystemExit(f"run it from the repository's root as a module: python -m tools.build_chapters ({error})") from None

SRC = ROOT / "chapters" / "src"
OTHER = {"ko": ("en", "English version"), "en": ("ko", "한국어판")}


def _one_language(options: list[str]) -> str | None:
    return None if options in (["ko"], ["en"]) else f"needs 'ko' or 'en', got {options}"


KINDS = {"ko": count(0), "en": count(0), "code": any_options, "solution": any_options,
         "caption": _one_language, "alt": _one_language}


def parse(text: str, name: str) -> list[dict]:
    """The blocks of a chapter source, in order: dicts with kind, options, body and line."""
    return parse_blocks(text, name, KINDS)


def notebook(blocks: list[dict], stem: str, lang: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook(metadata=dict(KERNEL))
    cells = nb.cells
    titled = False
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
                cells.append(nbformat.v4.new_markdown_cell(body))
                cells.append(install_cell())
                cells.append(nbformat.v4.new_code_cell(f'LANG = "{lang}"'))
                titled = True
                continue
            cells.append(nbformat.v4.new_markdown_cell(body))
        elif kind in ("code", "solution"):
            if not titled:
                raise SourceError(f"{stem}: code before the title block")
            cell = nbformat.v4.new_code_cell(code_for(b["body"], lang))
            tags = list(b["options"])
            if kind == "solution":
                tags.append("hide-cell")
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


def build(stem: str) -> list[Path]:
    source = SRC / f"{stem}.md"
    blocks = parse(source.read_text(encoding="utf-8"), source.name)
    written = []
    for lang in LANGS:
        nb = notebook(blocks, stem, lang)
        path = ROOT / "chapters" / lang / f"{stem}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, path)
        written.append(path)
    return written


def stems() -> list[str]:
    return stems_in(SRC)


def main(args: list[str]) -> int:
    for stem in args or stems():
        for path in build(stem):
            print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
