"""classroom/tools/grading_execute.py under the real nbgrader: after a timeout the trailing self-check cell is
not run again, and the graded cells after the timeout still are.

A course of one tiny Korean assignment (no torch: a plain Python kernel) in a temporary folder, with
the book's nbgrader_config.py copied beside it (as tests/classroom/test_assignments.py copies classroom/course/):
a setup cell, a solution cell, a graded test that loops with the student's function, a cell a student
added, a second graded test, and a "스스로 확인하기" cell calling the looping function again. Two students:
one whose loop stops when interrupted, one whose loop swallows the interrupt (a bare ``except:``): its
kernel is killed, a new one runs the cells before the loop again, and the later test is graded on them.
Autograded with a 3 s per-cell timeout. Slow-ish (two nbgrader runs; about 25 s): the classroom group.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from classroom.tools import classroom, grading_execute
from helpers.paths import ROOT

# what this module needs beyond Python (tests/conftest.py: not in make test-fast)
pytestmark = pytest.mark.nbgrader

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
        new_code_cell("base = 40  # set up before the student's code: a restarted kernel needs it again"),
        _grading(new_code_cell("def twice(n):\n    ### BEGIN SOLUTION\n    return 2 * n\n    ### END SOLUTION"),
                 "twice", solution=True),
        _grading(new_code_cell("assert twice(2) == 4"), "test_twice", grade=True, points=1),
        new_code_cell("helper = 41  # a cell the student added: a later solution may need it"),
        _grading(new_code_cell("print('later test ran')\nassert helper + 1 == 42 == base + 2 and twice is not None"),
                 "test_later",
                 grade=True, points=1),
        new_markdown_cell("## 스스로 확인하기 (채점하지 않음)"),
        new_code_cell("print(twice(3))"),
    ], metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})


LOOPS = {"loops": "def twice(n):\n    while True:\n        pass",
         # swallows the interrupt: nbgrader's KeyboardInterrupt is caught, the loop goes on
         "deaf": "import time\n\n\ndef twice(n):\n    while True:\n        try:\n            time.sleep(0.05)\n"
                 "        except:  # noqa: E722\n            pass"}


@pytest.fixture(scope="module")
def course_graded(tmp_path_factory) -> tuple[dict[str, dict], str, float, Path]:
    course = tmp_path_factory.mktemp("course")
    shutil.copy(ROOT / "classroom" / "course" / "nbgrader_config.py", course / "nbgrader_config.py")
    (course / "source" / NAME).mkdir(parents=True)
    nbformat.write(_source_notebook(), course / "source" / NAME / f"{STEM}.ipynb")
    result = classroom.nbgrader(course, "generate_assignment", NAME, "--force", quiet=True)
    assert result.returncode == 0, result.stdout[-3000:]
    for student, code in LOOPS.items():
        submission = nbformat.read(course / "release" / NAME / f"{STEM}.ipynb", as_version=4)
        for cell in submission.cells:
            if cell.metadata.get("nbgrader", {}).get("grade_id") == "twice":
                cell.source = code
        folder = course / "submitted" / student / NAME
        folder.mkdir(parents=True)
        nbformat.write(submission, folder / f"{STEM}.ipynb")
    start = time.monotonic()
    result = classroom.nbgrader(course, "autograde", NAME, "--create", f"--Execute.timeout={TIMEOUT}", quiet=True)
    seconds = time.monotonic() - start
    assert result.returncode == 0, result.stdout[-3000:]
    notebooks = {s: json.loads((course / "autograded" / s / NAME / f"{STEM}.ipynb").read_text(encoding="utf-8"))
                 for s in LOOPS}
    return notebooks, result.stdout, seconds, course


@pytest.fixture(scope="module", params=list(LOOPS))
def autograded(course_graded, request) -> tuple[dict, str, float, Path]:
    notebooks, log, seconds, course = course_graded
    return notebooks[request.param], log, seconds, course, request.param


def _text(cell: dict) -> str:
    return "".join("".join(o.get("text", "")) for o in cell.get("outputs", []) if o["output_type"] == "stream")


def _errors(cell: dict) -> list[str]:
    return [o["ename"] for o in cell.get("outputs", []) if o["output_type"] == "error"]


def test_the_self_check_cell_is_not_run_after_a_timeout(autograded):
    notebook, log, seconds, _, student = autograded
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
    # the loop that swallows the interrupt: its kernel was killed (said in the cell and in nbgrader's log)
    timeout = next(o for o in by_id["test_twice"]["outputs"] if o.get("ename") == "CellTimeoutError")
    assert (timeout["evalue"] == grading_execute.KILLED) == (student == "deaf")
    print(f"autograding the two looping notebooks with a {TIMEOUT} s timeout took {seconds:.1f} s")


def test_a_kernel_that_ignores_the_interrupt_is_killed_and_the_cells_before_run_again(course_graded):
    notebooks, log, _, _ = course_graded
    assert log.count("did not stop when interrupted") == 1, log[-3000:]
    assert re.search(r"Kernel restarted; cells before 3 run again", log), log[-3000:]
    # the cells run again leave no trace in the notebook: the setup cell's outputs are its first run's
    setup = next(c for c in notebooks["deaf"]["cells"] if c["cell_type"] == "code")
    assert setup["outputs"] == [] and setup["execution_count"] is not None


def test_the_later_test_is_graded(autograded):
    from nbgrader.api import Gradebook
    course, student = autograded[3], autograded[4]
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "normalization-layers") as gb:
        grades = {g.name: (g.score, g.max_score) for g in gb.find_submission_notebook(STEM, NAME, student).grades}
    assert grades == {"test_twice": (0, 1), "test_later": (1, 1)}


def test_the_course_config_uses_it_for_autograde():
    from traitlets.config.loader import PyFileConfigLoader
    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT / "classroom" / "course")).load_config()
    names = [p.__name__ for p in config.Autograde.autograde_preprocessors]
    assert names[0] == "ExecuteSkippingAfterTimeout" and "Execute" not in names
