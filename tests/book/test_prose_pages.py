"""Chapters that read as prose (issue 29, point 5), checked in the chapter notebooks and the site's
extension without building the book (the built pages: test_site.py, test_browser.py):

- a figure's long plotting code is folded (tag ``hide-input``), code that computes or prints what
  the chapter teaches is not;
- an exercise's solution carries the tag ``solution`` and its toggle says "Show solution";
- both languages of a chapter have the same sections in the same order, so the language switch can
  open the other page at the same section by its place (book/site/site_pages.py place_ids);
- folding a cell (a display tag) keeps the notebook's outputs: no re-execution for a change of view.
"""

from __future__ import annotations

import re

import nbformat
import pytest

from book.site import site_pages as pages
from book.tools import build_chapters
from helpers.paths import ROOT

STEMS = build_chapters.stems()
LANGS = ("ko", "en")
# What the chapters teach: calling the library, PyTorch's normalization, the statistics, or printing
# a result. A cell that does any of this stays in view, however much it also draws.
LESSON = re.compile(r"\bnormlib\b|\bnn\.functional\b|\bstats\.|\bprint\(|\bbench\.run\(")
LONG = 8    # lines of code: a shorter figure cell (a viz.table_figure call) stays in view


def code_lines(cell) -> list[str]:
    return [line for line in cell.source.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def cells(lang: str, stem: str):
    return nbformat.read(ROOT / "chapters" / lang / f"{stem}.ipynb", as_version=4).cells


@pytest.mark.parametrize("stem", STEMS)
def test_long_plotting_code_is_folded_and_the_lesson_is_not(stem):
    for lang in LANGS:
        for k, cell in enumerate(cells(lang, stem)):
            if cell.cell_type != "code":
                continue
            tags = set(cell.metadata.get("tags", []))
            lines = code_lines(cell)
            draws = "plt.subplots(" in cell.source
            if draws and not LESSON.search(cell.source) and len(lines) >= LONG:
                assert "hide-input" in tags, f"{lang}/{stem} cell {k}: {len(lines)} lines of plotting shown"
            if "hide-input" in tags and not cell.source.startswith("LANG = "):   # the setup cell aside
                assert draws, f"{lang}/{stem} cell {k}: folded, and draws nothing"
                assert not LESSON.search(cell.source), f"{lang}/{stem} cell {k}: folded, and it is the lesson"


def test_some_plotting_is_folded_in_most_chapters():
    """The check above can fail: most chapters draw long figures, and those are folded."""
    folded = {stem for stem in STEMS for cell in cells("en", stem)
              if "hide-input" in cell.metadata.get("tags", []) and "plt.subplots(" in cell.source}
    assert len(folded) >= 6, sorted(folded)


@pytest.mark.parametrize("stem", STEMS)
def test_every_solution_is_tagged_as_one(stem):
    for lang, heading in (("ko", "## 연습 문제"), ("en", "## Exercises")):
        nb = cells(lang, stem)
        at = max(i for i, c in enumerate(nb) if c.cell_type == "markdown" and heading in c.source)
        after = [c for c in nb[at:] if c.cell_type == "code"]
        before = [c for c in nb[:at] if c.cell_type == "code"]
        assert after and all("solution" in c.metadata.get("tags", []) for c in after), f"{lang}/{stem}"
        assert not [c for c in before if "solution" in c.metadata.get("tags", [])], f"{lang}/{stem}"


def headings(lang: str, stem: str) -> list[int]:
    """The levels of a notebook's Markdown headings, in order (not those in a code block)."""
    levels = []
    for cell in cells(lang, stem):
        if cell.cell_type != "markdown":
            continue
        fenced = False
        for line in cell.source.splitlines():
            fenced ^= line.startswith("```")
            if not fenced and (m := re.match(r"(#{1,6}) ", line)):
                levels.append(len(m.group(1)))
    return levels


@pytest.mark.parametrize("stem", STEMS)
def test_both_languages_of_a_chapter_have_the_same_sections(stem):
    ko, en = headings("ko", stem), headings("en", stem)
    assert ko == en, f"{stem}: Korean headings {ko}, English {en}: the switch would open the wrong section"
    assert ko[0] == 1 and ko.count(1) == 1 and ko.count(2) >= 3


def myst_cell(tags: list[str], words: str = "content") -> str:
    classes = " ".join(f"tag_{t}" for t in tags)
    return (f'<div class="cell {classes} docutils container">\n<details class="admonition hide above-input">\n'
            f'<summary>\n<p class="collapsed admonition-title">Show code cell {words}</p>\n'
            f'<p class="expanded admonition-title">Hide code cell {words}</p>\n</summary>\n'
            f'<div class="cell_input docutils container"><pre>x = 1</pre></div></details></div>\n')


def test_a_solutions_toggle_says_solution_and_other_folded_cells_keep_theirs():
    body = (myst_cell(["hide-cell"]) + myst_cell(["hide-cell", "solution"]) + myst_cell(["hide-input"], "source")
            + myst_cell(["hide-cell", "solution"]))
    out = pages.solution_labels(body)
    plain, first, folded, second = out.split('<div class="cell ')[1:]
    assert ">Show code cell content<" in plain and ">Hide code cell content<" in plain
    assert ">Show solution 1<" in first and ">Hide solution 1<" in first and "code cell" not in first
    assert ">Show solution 2<" in second and ">Hide solution 2<" in second
    assert ">Show code cell source<" in folded
    assert pages.solution_labels(out) == out


def test_folding_a_cell_keeps_the_outputs_and_a_test_tag_does_not():
    stem = STEMS[0]
    blocks = build_chapters.parse((build_chapters.SRC / f"{stem}.md").read_text(encoding="utf-8"), stem)
    executed = nbformat.read(ROOT / "chapters" / "en" / f"{stem}.ipynb", as_version=4)
    shown = [dict(b, options=[o for o in b["options"] if o != "hide-input"]) if b["kind"] == "code" else b
             for b in blocks]
    assert shown != blocks, "the chapter folds no cell: nothing to check"
    assert build_chapters.keep_outputs(build_chapters.notebook(shown, stem, "en"), executed)
    ignored = [dict(b, options=[*b["options"], "nbval-ignore-output"]) if b["kind"] == "code" else b
               for b in blocks]
    assert not build_chapters.keep_outputs(build_chapters.notebook(ignored, stem, "en"), executed)
