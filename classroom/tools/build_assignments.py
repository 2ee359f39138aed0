"""Write the Korean and English nbgrader source notebooks of each assignment from one bilingual source.

    python -m classroom.tools.build_assignments              # every classroom/course/src/*.md
    python -m classroom.tools.build_assignments 01_layernorm

``classroom/course/src/NN_name.md`` becomes ``classroom/course/source/NN_name_ko/NN_name.ipynb`` and
``classroom/course/source/NN_name_en/NN_name.ipynb``: two separate nbgrader assignments with the same
grade ids and points, so a teacher who teaches in one language releases and grades that one out
of full marks (the teachers' guide; classroom/GUIDE.md). tests/classroom/test_assignments.py fails when the committed
notebooks no longer match their source.

The source format is ``book.tools.bilingual``'s (markers, ``#ko:``/``#en:`` comments, the install cell),
shared with the chapters. The assignments' block kinds:

``<!-- ko -->`` / ``<!-- en -->``
    a Markdown cell in that language only. It is an ordinary cell, not an nbgrader one: nbgrader
    0.9.6 puts a deleted test cell back after "the previous source cell" and fails on the whole
    notebook (KeyError in ``OverwriteCells.add_missing_grade_cells``) when that cell is a
    read-only cell that is neither a solution nor a test. So the cell before a test block, among
    nbgrader's cells, is always a solution or a test, and ``parse`` refuses a source where not.
``<!-- setup -->``
    the read-only code cell after the install cell; ``LANG = "ko"`` or ``"en"`` is put before its
    code, the only code that differs between the languages.
``<!-- code -->``
    an ordinary code cell in both languages, free to edit and not graded.
``<!-- solution GRADE_ID -->``
    the student's answer cell: ``### BEGIN SOLUTION`` … ``### END SOLUTION`` regions become
    nbgrader's stub in the release.
``<!-- tests GRADE_ID POINTS -->``
    an autograded, read-only test cell worth POINTS; ``### BEGIN HIDDEN TESTS`` …
    ``### END HIDDEN TESTS`` is removed from the release and restored when grading.

The first code cell of every notebook is the install cell, read-only.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

try:
    from book.tools.bilingual import KERNEL, LANGS, ROOT, SourceError, code_for, count, install_cell
    from book.tools.bilingual import parse as parse_blocks
    from book.tools.bilingual import stems as stems_in
except ModuleNotFoundError as error:  # run as a file (python classroom/tools/build_assignments.py) instead of a module
    raise SystemExit(f"run it from the repository's root as a module: python -m classroom.tools.build_assignments ({error})") from None

SRC = ROOT / "classroom" / "course" / "src"
SOURCE = ROOT / "classroom" / "course" / "source"
KINDS = {"ko": count(0), "en": count(0), "setup": count(0), "code": count(0), "solution": count(1),
         "tests": count(2)}


def parse(text: str, name: str) -> list[dict]:
    """The blocks of an assignment source, in order: dicts with kind, options, body and line."""
    blocks = parse_blocks(text, name, KINDS)
    ids = set()
    for b in blocks:
        where = f"{name}:{b['line']}"
        if b["kind"] in ("solution", "tests"):
            if b["options"][0] in ids:
                raise SourceError(f"{where}: grade id {b['options'][0]!r} is used twice")
            ids.add(b["options"][0])
        if b["kind"] == "tests" and not b["options"][1].isdigit():
            raise SourceError(f"{where}: points must be a whole number, got {b['options'][1]!r}")
        if b["kind"] == "solution" and "### BEGIN SOLUTION" not in b["body"]:
            raise SourceError(f"{where}: a solution block needs a ### BEGIN SOLUTION region")
    if not any(b["kind"] == "tests" for b in blocks):
        raise SourceError(f"{name}: no tests block, nothing to grade")
    graded = [b for b in blocks if b["kind"] in ("setup", "solution", "tests")]
    for before, b in zip(graded, graded[1:]):
        if b["kind"] == "tests" and before["kind"] == "setup":
            raise SourceError(f"{name}:{b['line']}: a tests block must follow a solution or tests block, "
                              f"not the setup (nbgrader could not put it back if a student deleted it)")
    return blocks


def _nbgrader(cell, grade_id: str, *, grade=False, solution=False, locked=False, points=None):
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3, "solution": solution,
            "task": False}
    if points is not None:
        meta["points"] = points
    cell.metadata["nbgrader"] = meta
    return cell


def notebook(blocks: list[dict], lang: str) -> nbformat.NotebookNode:
    """The nbgrader source notebook of one language."""
    nb = nbformat.v4.new_notebook(metadata=dict(KERNEL))
    cells = nb.cells
    for b in blocks:
        kind, body = b["kind"], b["body"]
        if kind in LANGS:
            if kind == lang:
                cells.append(nbformat.v4.new_markdown_cell(body))
            continue
        source = code_for(body, lang)
        if kind == "setup":
            cells.append(_nbgrader(install_cell(lang=lang), "install", locked=True))
            cells.append(_nbgrader(nbformat.v4.new_code_cell(f'LANG = "{lang}"\n' + source), "setup", locked=True))
        elif kind == "code":
            cells.append(nbformat.v4.new_code_cell(source))
        elif kind == "solution":
            cells.append(_nbgrader(nbformat.v4.new_code_cell(source), b["options"][0], solution=True))
        else:
            grade_id, points = b["options"]
            cells.append(_nbgrader(nbformat.v4.new_code_cell(source), grade_id, grade=True, locked=True,
                                   points=int(points)))
    for index, cell in enumerate(cells):
        cell.metadata.pop("tags", None)       # the install cell's remove-cell tag is for the book only
        cell.id = f"{lang}-{index:03d}"
    return nb


def targets(stem: str) -> dict[str, Path]:
    """Where the notebooks of ``stem`` go, by language."""
    return {lang: SOURCE / f"{stem}_{lang}" / f"{stem}.ipynb" for lang in LANGS}


def build(stem: str) -> list[Path]:
    source = SRC / f"{stem}.md"
    blocks = parse(source.read_text(encoding="utf-8"), source.name)
    written = []
    for lang, path in targets(stem).items():
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook(blocks, lang), path)
        written.append(path)
    return written


def stems() -> list[str]:
    return stems_in(SRC)


def main(args: list[str]) -> int:
    unknown = sorted(set(args) - set(stems()))
    if unknown:
        print(f"no source classroom/course/src/{unknown[0]}.md; the sources are: {', '.join(stems())}", file=sys.stderr)
        return 2
    for stem in args or stems():
        for path in build(stem):
            print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
