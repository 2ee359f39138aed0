"""tools/grading_execute.py under the real nbgrader: after a timeout the trailing self-check cell is
not run again, and the graded cells after the timeout still are.

A course of one tiny Korean assignment (no torch: a plain Python kernel) in a temporary folder, with
the book's nbgrader_config.py copied beside it (as tests/test_assignments.py copies assignments/):
a solution cell, a graded test that loops with the student's function, a cell a student added, a
second graded test, and a "스스로 확인하기" cell calling the looping function again. Autograded with
a 3 s per-cell timeout. Slow-ish (two nbgrader runs, one kernel; about 15 s): the classroom group.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from helpers import ROOT
from tools import classroom, grading_execute

NAME = "99_loop_ko"
STEM = "99_loop"
TIMEOUT = 3


def _grading(cell, grade_id: str, *, grade=False, solution=False, points=None):
    meta = {"grade": grade, "solution": solution, "locked": not solution, "grade_id": grade_id,
            "schema_version": 3}
    if points is not None:
        meta["points"] = points
    cell.metadata["nbgrader"] = meta
    return cell


def _source_notebook() -> nbformat.NotebookNode:
    return new_notebook(cells=[
        new_markdown_cell("# 반복 과제"),
        _grading(new_code_cell("def twice(n):\n    ### BEGIN SOLUTION\n    return 2 * n\n    ### END SOLUTION"),
                 "twice", solution=True),
        _grading(new_code_cell("assert twice(2) == 4"), "test_twice", grade=True, points=1),
        new_code_cell("helper = 41  # a cell the student added: a later solution may need it"),
        _grading(new_code_cell("print('later test ran')\nassert helper + 1 == 42"), "test_later",
                 grade=True, points=1),
        new_markdown_cell("## 스스로 확인하기 (채점하지 않음)"),
        new_code_cell("print(twice(3))"),
    ], metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})


@pytest.fixture(scope="module")
def autograded(tmp_path_factory) -> tuple[dict, str, float, Path]:
    course = tmp_path_factory.mktemp("course")
    shutil.copy(ROOT / "assignments" / "nbgrader_config.py", course / "nbgrader_config.py")
    (course / "source" / NAME).mkdir(parents=True)
    nbformat.write(_source_notebook(), course / "source" / NAME / f"{STEM}.ipynb")
    result = classroom.nbgrader(course, "generate_assignment", NAME, "--force", quiet=True)
    assert result.returncode == 0, result.stdout[-3000:]
    submission = nbformat.read(course / "release" / NAME / f"{STEM}.ipynb", as_version=4)
    for cell in submission.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "twice":
            cell.source = "def twice(n):\n    while True:\n        pass"
    folder = course / "submitted" / "loops" / NAME
    folder.mkdir(parents=True)
    nbformat.write(submission, folder / f"{STEM}.ipynb")
    start = time.monotonic()
    result = classroom.nbgrader(course, "autograde", NAME, "--create", f"--Execute.timeout={TIMEOUT}", quiet=True)
    seconds = time.monotonic() - start
    assert result.returncode == 0, result.stdout[-3000:]
    notebook = json.loads((course / "autograded" / "loops" / NAME / f"{STEM}.ipynb").read_text(encoding="utf-8"))
    return notebook, result.stdout, seconds, course


def _text(cell: dict) -> str:
    return "".join("".join(o.get("text", "")) for o in cell.get("outputs", []) if o["output_type"] == "stream")


def _errors(cell: dict) -> list[str]:
    return [o["ename"] for o in cell.get("outputs", []) if o["output_type"] == "error"]


def test_the_self_check_cell_is_not_run_after_a_timeout(autograded):
    notebook, log, seconds, _ = autograded
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    by_id = {c["metadata"].get("nbgrader", {}).get("grade_id"): c for c in code}
    # one timeout (the interrupted loop also leaves its KeyboardInterrupt), in the graded test only
    assert [e for c in code for e in _errors(c) if e == "CellTimeoutError"] == ["CellTimeoutError"], log[-3000:]
    assert "CellTimeoutError" in _errors(by_id["test_twice"])
    assert [c for c in code if _errors(c) and c is not by_id["test_twice"]] == []
    # the graded cell after the timeout ran, and so did the student's own cell it needs
    assert by_id["test_later"]["execution_count"] is not None
    assert _text(by_id["test_later"]) == "later test ran\n"
    assert _errors(by_id["test_later"]) == []
    # the self-check: not run, told why, in Korean
    check = code[-1]
    assert "nbgrader" not in check["metadata"]
    assert check["execution_count"] is None and _errors(check) == []
    assert "채점 중 건너뜀" in _text(check) and f"셀마다 {TIMEOUT}초" in _text(check)
    assert not any("\uac00" <= ch <= "\ud7a3" for ch in grading_execute.skip_message("en", TIMEOUT))
    print(f"autograding the looping notebook with a {TIMEOUT} s timeout took {seconds:.1f} s")


def test_the_later_test_is_graded(autograded):
    from nbgrader.api import Gradebook
    course = autograded[3]
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "normalization-layers") as gb:
        grades = {g.name: (g.score, g.max_score) for g in gb.find_submission_notebook(STEM, NAME, "loops").grades}
    assert grades == {"test_twice": (0, 1), "test_later": (1, 1)}


def test_the_course_config_uses_it_for_autograde():
    from traitlets.config.loader import PyFileConfigLoader
    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT / "assignments")).load_config()
    names = [p.__name__ for p in config.Autograde.autograde_preprocessors]
    assert names[0] == "ExecuteSkippingAfterTimeout" and "Execute" not in names
