"""The classroom assignments under the real nbgrader CLI (nbgrader 0.9.6), in a copy of assignments/.

* The committed source notebooks are what tools/build_assignments.py makes of assignments/src,
  and the Korean and English notebooks of a pair have the same code, grade ids and points.
* tools/classroom.py release (what `make assignments-release` runs): nbgrader generate_assignment
  for all eight, nbgrader validate: every source scores full marks, every release zero; a
  release contains no line of a solution and no hidden test.
* A class of synthetic submissions, each made by editing the released notebook as a student would,
  autograded (tools/classroom.py autograde → nbgrader autograde, nbgrader export) with a short
  per-cell timeout: the grades in grades.csv are the expected ones, exactly, for every student;
  then nbgrader generate_feedback writes one HTML page per graded student.

Slow by nature (every notebook starts a kernel that imports torch). The class runs on one
assignment; the other seven are validated only. No timing is asserted.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import time
from pathlib import Path

import nbformat
import pytest

from helpers import ROOT
from tools import build_assignments, classroom

STEMS = build_assignments.stems()
NAMES = sorted(f"{stem}_{lang}" for stem in STEMS for lang in build_assignments.LANGS)
CLASS = "02_batchnorm_ko"          # the assignment the synthetic class hands in
TIMEOUT = 8                        # seconds per cell while grading the class (the course default is longer)


def _cells(notebook: dict) -> dict[str, dict]:
    return {c["metadata"]["nbgrader"]["grade_id"]: c for c in notebook["cells"] if "nbgrader" in c["metadata"]}


def _source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _between(text: str, begin: str, end: str) -> list[str]:
    """The lines strictly between ``begin`` and ``end`` marker lines."""
    out, inside = [], False
    for line in text.splitlines():
        if line.strip() == begin:
            inside = True
        elif line.strip() == end:
            inside = False
        elif inside:
            out.append(line)
    return out


# --------------------------------------------------------------------------- the sources

def test_every_source_has_both_languages():
    assert len(STEMS) == 4
    for name in NAMES:
        stem = name.rsplit("_", 1)[0]
        assert (build_assignments.SOURCE / name / f"{stem}.ipynb").exists(), name
    assert sorted(p.name for p in build_assignments.SOURCE.iterdir() if p.is_dir()) == NAMES


@pytest.mark.parametrize("stem", STEMS)
def test_notebooks_match_their_source(stem):
    blocks = build_assignments.parse((build_assignments.SRC / f"{stem}.md").read_text(encoding="utf-8"), stem)
    for lang, path in build_assignments.targets(stem).items():
        expected = build_assignments.notebook(blocks, lang)
        committed = nbformat.read(path, as_version=4)
        assert [(c.cell_type, c.source, c.metadata) for c in committed.cells] == \
            [(c.cell_type, c.source, c.metadata) for c in expected.cells], (
            f"{path.relative_to(ROOT)} differs from assignments/src/{stem}.md: run `make assignments`")


@pytest.mark.parametrize("stem", STEMS)
def test_the_pair_has_the_same_code_and_grading(stem):
    paths = build_assignments.targets(stem)
    ko, en = (json.loads(paths[lang].read_text(encoding="utf-8")) for lang in ("ko", "en"))

    def code(nb, lang):
        out = []
        for c in nb["cells"]:
            if c["cell_type"] == "code":
                lines = [line for line in _source(c).splitlines()
                         if line != f'LANG = "{lang}"' and not line.lstrip().startswith("#")]
                out.append("\n".join(lines))
        return out

    def grading(nb):
        return [(m["grade_id"], m.get("points"), m["solution"], m["locked"]) for m in
                (c["metadata"].get("nbgrader", {"grade_id": None, "solution": False, "locked": False})
                 for c in nb["cells"] if c["cell_type"] == "code")]

    assert code(ko, "ko") == code(en, "en")
    assert grading(ko) == grading(en)
    assert sum(p or 0 for _, p, _, _ in grading(ko)) >= 5


def test_a_malformed_source_is_refused_with_its_line():
    with pytest.raises(build_assignments.SourceError, match=r"x\.md:3: tests takes 2 option"):
        build_assignments.parse("<!-- ko -->\n# t\n<!-- tests only_id -->\nassert True\n", "x.md")
    with pytest.raises(build_assignments.SourceError, match="used twice"):
        build_assignments.parse("<!-- tests a 1 -->\nx\n<!-- tests a 1 -->\ny\n", "x.md")
    with pytest.raises(build_assignments.SourceError, match=r"x\.md:3: a tests block must follow a solution"):
        build_assignments.parse("<!-- setup -->\nimport torch\n<!-- tests a 1 -->\nassert True\n", "x.md")


def test_the_course_config_sets_a_cell_timeout_and_restores_deleted_tests():
    from traitlets.config.loader import PyFileConfigLoader
    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT / "assignments")).load_config()
    assert isinstance(config.Execute.timeout, int) and 0 < config.Execute.timeout <= 600
    assert config.Execute.interrupt_on_timeout is True
    assert config.OverwriteCells.add_missing_cells is True
    assert config.CourseDirectory.db_url.endswith("/assignments/gradebook.db")


# --------------------------------------------------------------------------- release and validate, all eight

@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """A copy of assignments/ (sources and config only), released by tools/classroom.py."""
    course = tmp_path_factory.mktemp("class") / "assignments"
    shutil.copytree(ROOT / "assignments", course, ignore=shutil.ignore_patterns(
        "release", "submitted", "autograded", "feedback", "gradebook.db*", "*.csv", ".ipynb_checkpoints"))
    return course


@pytest.fixture(scope="module")
def released(course) -> list[dict]:
    return classroom.release(course)


def test_each_source_scores_full_marks_and_each_release_zero(released):
    by = {(r["assignment"], r["kind"]): r for r in released}
    assert sorted(by) == sorted((n, kind) for n in NAMES for kind in ("source", "release"))
    for (name, kind), record in by.items():
        assert record["ok"], f"{name} {kind}:\n{record['output']}"
        assert record["points"] >= 5 and record["cells"] >= 2


@pytest.mark.parametrize("name", NAMES)
def test_a_release_has_no_solution_and_no_hidden_test(course, released, name):
    stem = name.rsplit("_", 1)[0]
    source = json.loads((course / "source" / name / f"{stem}.ipynb").read_text(encoding="utf-8"))
    raw = (course / "release" / name / f"{stem}.ipynb").read_text(encoding="utf-8")
    released_text = "\n".join(_source(c) for c in json.loads(raw)["cells"])
    secret = []
    for cell in source["cells"]:
        text = _source(cell)
        secret += _between(text, "### BEGIN SOLUTION", "### END SOLUTION")
        secret += _between(text, "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")
    secret = [line.strip() for line in secret if len(line.strip()) >= 12]
    assert len(secret) >= 5, name
    for line in secret:
        assert line not in released_text, f"{name}: the release still holds {line!r}"
        assert json.dumps(line)[1:-1] not in raw, f"{name}: the release file still holds {line!r}"
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "HIDDEN TESTS"):
        assert marker not in raw
    # what the student needs is still there: the visible tests and the stub
    for grade_id, cell in _cells(json.loads(raw)).items():
        meta = cell["metadata"]["nbgrader"]
        if meta["grade"]:
            visible = _source(_cells(source)[grade_id]).split("### BEGIN HIDDEN TESTS")[0].strip()
            assert _source(cell).strip() == visible
        if meta["solution"]:
            assert "raise NotImplementedError()" in _source(cell)


# --------------------------------------------------------------------------- a class, autograded

def _solution_body(course: Path) -> str:
    """The teacher's answer: the source's solution cell with the markers removed."""
    stem = CLASS.rsplit("_", 1)[0]
    source = json.loads((course / "source" / CLASS / f"{stem}.ipynb").read_text(encoding="utf-8"))
    text = _source(_cells(source)["batch_norm"])
    return "\n".join(line for line in text.splitlines() if "### BEGIN SOLUTION" not in line
                     and "### END SOLUTION" not in line)


def _edit(code: str, old: str, new: str) -> str:
    assert old in code, f"the solution no longer contains {old!r}: update the synthetic class"
    return code.replace(old, new)


RUNNING_VAR = "self.running_var.mul_(1 - m).add_(m * var * n / (n - 1))"
EVAL_STATS = "mean, var = self.running_mean, self.running_var"
CUMULATIVE = "1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum"
FORWARD = "    def forward(self, x):\n"


def _class(course: Path) -> dict:
    """Submissions as students would make them from the release: student → (cell edits, expected points)."""
    right = _solution_body(course)
    biased = _edit(right, RUNNING_VAR, "self.running_var.mul_(1 - m).add_(m * var)")
    raises = _edit(right, EVAL_STATS, 'raise RuntimeError("evaluation mode: not finished")')
    # loops forever on the first test's first batch only (training mode, 8 samples)
    loops = _edit(right, FORWARD, FORWARD + "        while self.training and x.shape[0] == 8:\n            pass\n")
    fixed_none = _edit(right, CUMULATIVE, "0.1 if self.momentum is None else self.momentum")
    deaf = "import time\n" + _edit(right, FORWARD, FORWARD + (
        "        while self.training and x.shape[0] == 8:\n"
        "            try:\n"
        "                time.sleep(0.05)\n"
        "            except BaseException:\n"
        "                pass\n"))
    # points of the four tests: train 2, running 2, eval 1, momentum=None 1
    return {
        "correct": ({"batch_norm": right}, 6, []),
        "partial": ({"batch_norm": biased}, 2 + 0 + 1 + 0, []),        # biased running_var: tests 2 and 4 fail
        "raises": ({"batch_norm": raises}, 2 + 0 + 0 + 0, []),         # the running test also calls eval()
        "loops": ({"batch_norm": loops}, 0 + 2 + 1 + 1, []),           # test 1 times out, the rest are graded
        "deleted": ({"batch_norm": fixed_none}, 2 + 2 + 1 + 0, ["delete", "reorder"]),
        "edited": ({"batch_norm": biased, "test_running": "pass", "test_cumulative": "print('fine')"}, 3, []),
        "deaf": ({"batch_norm": deaf}, 0, []),                        # swallows the interrupt: nothing graded
    }


@pytest.fixture(scope="module")
def graded(course, released):
    """Hand the class in, autograde it, export grades.csv; returns (rows by student, broken, seconds)."""
    stem = CLASS.rsplit("_", 1)[0]
    release = json.loads((course / "release" / CLASS / f"{stem}.ipynb").read_text(encoding="utf-8"))
    for student, (edits, _, changes) in _class(course).items():
        nb = json.loads(json.dumps(release))
        cells = _cells(nb)
        for grade_id, code in edits.items():
            cells[grade_id]["source"] = code
        if "delete" in changes:       # two test cells and the first text cell go; nbgrader puts the tests back
            nb["cells"] = [c for i, c in enumerate(nb["cells"]) if i != 0 and c["metadata"].get("nbgrader", {})
                           .get("grade_id") not in ("test_eval", "test_cumulative")]
        if "reorder" in changes:      # the running test moves to the end, the last text cell to the top
            order = nb["cells"]
            order.append(order.pop(order.index(cells["test_running"])))
            order.insert(0, order.pop(max(i for i, c in enumerate(order) if c["cell_type"] == "markdown")))
        folder = course / "submitted" / student / CLASS
        folder.mkdir(parents=True)
        (folder / f"{stem}.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    broken = course / "submitted" / "broken" / CLASS
    broken.mkdir(parents=True)
    (broken / f"{stem}.ipynb").write_text('{"cells": [', encoding="utf-8")      # not a notebook at all
    (course / "students.csv").write_text("id,first_name,last_name\nabsent,Sumin,Kim\ncorrect,Jiho,Park\n",
                                         encoding="utf-8")
    start = time.monotonic()
    grades, failed = classroom.autograde(course, [CLASS], timeout=TIMEOUT)
    seconds = time.monotonic() - start
    with grades.open(newline="", encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["assignment"] == CLASS]
    return {r["student_id"]: r for r in rows}, failed, seconds


def test_every_student_gets_exactly_the_expected_grade(course, graded):
    rows, _, _ = graded
    expected = {student: points for student, (_, points, _) in _class(course).items()}
    expected.update(broken=0, absent=0)
    assert sorted(rows) == sorted(expected), "grades.csv must list every student"
    for student, points in expected.items():
        assert float(rows[student]["score"]) == points, (student, rows[student])
        assert float(rows[student]["max_score"]) == 6
    assert rows["absent"]["last_name"] == "Kim"          # from students.csv


def test_broken_submissions_are_named_and_the_rest_graded(graded):
    rows, failed, _ = graded
    assert sorted(failed) == [(CLASS, "broken"), (CLASS, "deaf")]
    assert float(rows["correct"]["score"]) == 6


def test_the_infinite_loop_times_out_and_the_later_cells_are_graded(course, graded):
    _, _, seconds = graded
    autograded = json.loads((course / "autograded" / "loops" / CLASS / "02_batchnorm.ipynb").read_text("utf-8"))
    outputs = {gid: [o.get("ename") for o in c.get("outputs", []) if o["output_type"] == "error"]
               for gid, c in _cells(autograded).items()}
    assert "CellTimeoutError" in outputs["test_train"]
    assert outputs["test_running"] == outputs["test_eval"] == outputs["test_cumulative"] == []
    print(f"autograding the class of {len(_class(course)) + 1} submissions took {seconds:.0f} s")


def test_deleted_test_cells_are_put_back_and_graded(course, graded):
    autograded = json.loads((course / "autograded" / "deleted" / CLASS / "02_batchnorm.ipynb").read_text("utf-8"))
    cells = _cells(autograded)
    for grade_id in ("test_eval", "test_cumulative"):
        assert "was missing from the submission" in _source(cells[grade_id])
        assert "check_batch_norm" in _source(cells[grade_id])
    errors = [o for o in cells["test_cumulative"].get("outputs", []) if o["output_type"] == "error"]
    assert errors and errors[0]["ename"] == "CheckFailed" and "1/k" in errors[0]["evalue"]


def test_an_edited_test_cell_is_restored_with_its_hidden_tests(course, graded):
    autograded = json.loads((course / "autograded" / "edited" / CLASS / "02_batchnorm.ipynb").read_text("utf-8"))
    running = _source(_cells(autograded)["test_running"])
    assert running.startswith("check_batch_norm_running(BatchNorm, LANG)")
    assert "### BEGIN HIDDEN TESTS" in running and "momentum=0.3" in running


@pytest.fixture(scope="module")
def feedback(course, graded) -> list[Path]:
    return classroom.feedback(course, [CLASS])


def test_feedback_html_for_every_graded_student(course, feedback):
    graded_students = {"correct", "partial", "raises", "loops", "deleted", "edited"}
    assert {p.parent.parent.name for p in feedback} == graded_students
    assert all(p.parent.name == CLASS and p.name == "02_batchnorm.html" for p in feedback)
    pages = {p.parent.parent.name: p.read_text(encoding="utf-8") for p in feedback}
    # the checker's Korean explanation reaches the student: the biased running_var, chapter 3 to reread
    assert "표본분산" in pages["partial"] and "학습 모드와 평가 모드" in pages["partial"]
    assert "CellTimeoutError" in pages["loops"]
    assert re.search(r"3(\.0)?\s*/\s*6", pages["partial"]), "the page shows the score"
