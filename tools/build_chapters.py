"""Write the Korean and English chapter notebooks from one bilingual source per chapter.

    python tools/build_chapters.py            # every chapters/src/*.md -> chapters/{ko,en}/*.ipynb
    python tools/build_chapters.py 03_batchnorm

Then execute them (``make chapters`` does both). Editing a notebook directly is fine while
exploring, but the source under ``chapters/src/`` is what is kept: tests/test_chapter_sources.py
fails when the notebooks no longer match it.

Source format: blocks start with a marker line ``<!-- kind [options] -->``.

``<!-- ko -->`` / ``<!-- en -->``
    a Markdown cell in that language only.
``<!-- code [tag ...] -->``
    a code cell in both languages, with optional cell tags (``nbval-ignore-output`` for
    timings, ``hide-input`` …). A line ``#ko: words`` becomes the comment ``# words`` in the
    Korean notebook only, ``#en: words`` in the English one only.
``<!-- solution -->``
    a code cell collapsed in JupyterLab and in the book (an exercise's solution).
``<!-- caption ko -->``, ``<!-- caption en -->``, ``<!-- alt ko -->``, ``<!-- alt en -->``
    the caption and alt text of the figure drawn by the code cell just before.

Two code cells open every notebook, inserted here. The first installs normlib (with what the
chapters need) from the book's repository (``repository.url`` in ``_config.yml``) when it is
not importable, as on Colab or Binder, and does nothing otherwise; it is the same in both
languages and removed from the HTML book (tag ``remove-cell``). The second is ``LANG = "ko"``
or ``LANG = "en"``, the only code that differs between the two languages. The first Markdown cell of each language
gets a link to the other language's page after its title.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "chapters" / "src"
LANGS = ("ko", "en")
MARKER = re.compile(r"^<!--\s*(\w+)((?:\s+[\w.-]+)*)\s*-->\s*$")
OTHER = {"ko": ("en", "English version"), "en": ("ko", "한국어판")}
KERNEL = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
}


class SourceError(ValueError):
    pass


def repository_url() -> str:
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    url = (config.get("repository") or {}).get("url")
    if not url:
        raise SourceError("_config.yml has no repository.url: the notebooks' install cell needs it")
    return url


def install_cell() -> nbformat.NotebookNode:
    source = (
        "# Opened on Colab, Binder or a JupyterHub? Install normlib from the book's repository.\n"
        "# Where normlib is already installed (make lab, the book's own .venv) this does nothing.\n"
        "try:\n"
        "    import normlib\n"
        "except ModuleNotFoundError:\n"
        "    import subprocess, sys\n"
        f'    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "normlib[book] @ git+{repository_url()}"], check=True)\n'
        "    import normlib"
    )
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["tags"] = ["remove-cell"]
    return cell


def parse(text: str, name: str) -> list[dict]:
    """The blocks of a source file, in order: dicts with kind, options and body."""
    blocks: list[dict] = []
    for number, line in enumerate(text.splitlines(), 1):
        m = MARKER.match(line)
        if m:
            blocks.append({"kind": m.group(1), "options": m.group(2).split(), "lines": [], "line": number})
        elif blocks:
            blocks[-1]["lines"].append(line)
        elif line.strip():
            raise SourceError(f"{name}:{number}: text before the first <!-- marker -->")
    for b in blocks:
        b["body"] = "\n".join(b.pop("lines")).strip("\n")
        if b["kind"] not in ("ko", "en", "code", "solution", "caption", "alt"):
            raise SourceError(f"{name}:{b['line']}: unknown block kind {b['kind']!r}")
        if b["kind"] in ("caption", "alt") and b["options"] not in (["ko"], ["en"]):
            raise SourceError(f"{name}:{b['line']}: {b['kind']} needs 'ko' or 'en', got {b['options']}")
        if not b["body"]:
            raise SourceError(f"{name}:{b['line']}: empty {b['kind']} block")
    return blocks


def code_for(body: str, lang: str) -> str:
    out = []
    for line in body.splitlines():
        m = re.match(r"^(\s*)#(ko|en):\s?(.*)$", line)
        if m:
            if m.group(2) == lang:
                out.append(f"{m.group(1)}# {m.group(3)}")
        else:
            out.append(line)
    return "\n".join(out)


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
    return sorted(p.stem for p in SRC.glob("*.md"))


def main(args: list[str]) -> int:
    for stem in args or stems():
        for path in build(stem):
            print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
