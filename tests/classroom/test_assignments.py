"""The classroom assignments under the real nbgrader CLI (nbgrader 0.9.6), in a copy of classroom/course/.

* The committed source notebooks are what classroom/tools/build_assignments.py makes of classroom/course/src,
  and the Korean and English notebooks of a pair have the same code, grade ids and points.
* classroom/tools/classroom.py release (what `make assignments-release` runs): nbgrader generate_assignment
  for all ten, nbgrader validate: every source scores full marks, every release zero; a
  release contains no line of a solution and no hidden test.
* A class of synthetic submissions of assignment 2, each made by editing the released notebook as
  a student would (correct, partial, raising, looping, deleting and reordering cells, editing test
  cells, untouched, swallowing the interrupt: its kernel is killed and the rest graded) or handing it
  in wrongly (misnamed as a browser's second download, no notebook, not JSON, outside an assignment's
  folder, in a folder that is no assignment), plus a student of students.csv who handed in nothing.
  The class list is three, as a teacher gets them: a university's CP949 list with a title line, then
  Moodle's participants export and Canvas's gradebook export merged with `make roster … ADD=1`; most
  hand in through Moodle (two of the same name, placed with the ASSIGN= command collect prints), two
  through Canvas (one `_late_`); four students also hand in assignment 5 (a correct fold, one that forgets the conv's
  bias, one with batch statistics and ε outside the square root, one that folds a training-mode
  BatchNorm), two of them only that. All autograded once by classroom/tools/classroom.py autograde with a
  short per-cell timeout: grades.csv holds the two assignments handed in, every student's status
  and exact grade in each, the timestamps; the console shows each student per assignment and the
  file's counts; every problem is named with its cause and remedy and the others are graded;
  nbgrader's checksum warning comes only for the edited test cells. Then nbgrader
  generate_feedback writes one HTML page per graded student and assignment, the checker's
  explanation in Korean on it.
* What a teacher can get wrong without any kernel started (a course with a gradebook and nothing
  released): no submitted/, an assignment never released, a students.csv Excel's plain CSV made
  or without an id column; the commands printed run as printed (nbgrader from a plain shell, the
  make target under make).

Slow by nature (every notebook starts a kernel that imports torch). The class runs on two
assignments; the other eight are validated only. No timing is asserted. Regrading with --force,
with nbgrader called by hand, is in tests/classroom/test_classroom_shell.py.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import zipfile
from datetime import datetime, timezone
from pathlib import Path

import nbformat
import pytest

from classroom.tools import build_assignments, classroom
from helpers.background import early
from helpers.paths import ROOT

# what this module needs beyond Python (tests/conftest.py: not in make test-fast)
pytestmark = pytest.mark.nbgrader

STEMS = build_assignments.stems()
NAMES = sorted(f"{stem}_{lang}" for stem in STEMS for lang in build_assignments.LANGS)
CLASS = "02_batchnorm_ko"          # the assignment the synthetic class hands in
FOLD = "05_fold_ko"                # the one four of its students hand in too (two of them only that)
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
    assert len(STEMS) == 5
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
            f"{path.relative_to(ROOT)} differs from classroom/course/src/{stem}.md: run `make assignments`")


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
    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT / "classroom" / "course")).load_config()
    assert isinstance(config.Execute.timeout, int) and 0 < config.Execute.timeout <= 600
    assert config.Execute.interrupt_on_timeout is True
    assert config.OverwriteCells.add_missing_cells is True
    assert config.CourseDirectory.db_url.endswith("/classroom/course/gradebook.db")
    # regrading reports only real changes: nbgrader's OverwriteCells, aware of hidden tests
    overwrite = [p for p in config.Autograde.sanitize_preprocessors if p.__name__.startswith("OverwriteCells")]
    assert [p.__name__ for p in overwrite] == ["OverwriteCellsWithHiddenTests"]


# --------------------------------------------------------------------------- release and validate, all ten

def _released_course(folder: Path) -> tuple[Path, list[dict]]:
    """A copy of classroom/course/ (sources and config only), released by classroom/tools/classroom.py (nbgrader's
    processes: started early, beside the rest of the session, see EARLY), and what release said."""
    course = folder / "assignments"
    shutil.copytree(ROOT / "classroom" / "course", course, ignore=shutil.ignore_patterns(
        "release", "submitted", "autograded", "feedback", "gradebook.db*", "*.csv", ".ipynb_checkpoints"))
    return course, classroom.release(course)


EARLY = {"released course": _released_course}


@pytest.fixture(scope="module")
def _course_and_release() -> tuple[Path, list[dict]]:
    return early("released course", _released_course)


@pytest.fixture(scope="module")
def course(_course_and_release) -> Path:
    return _course_and_release[0]


@pytest.fixture(scope="module")
def released(_course_and_release) -> list[dict]:
    return _course_and_release[1]


def test_each_source_scores_full_marks_and_each_release_zero(released):
    by = {(r["assignment"], r["kind"]): r for r in released}
    assert sorted(by) == sorted((n, kind) for n in NAMES for kind in ("source", "release"))
    for (name, kind), record in by.items():
        assert record["ok"], f"{name} {kind}:\n{record['output']}"
        assert record["points"] >= 5 and record["cells"] >= 2


def test_one_glob_names_exactly_the_assignments_asked_for():
    known = ["01_layernorm_en", "01_layernorm_ko", "02_batchnorm_en", "02_batchnorm_ko", "05_fold_ko"]
    assert classroom.one_glob(known, known + [".ipynb_checkpoints"]) == "*"
    assert classroom.one_glob(["01_layernorm_ko", "01_layernorm_en"], known) == "01_layernorm_*"
    assert classroom.one_glob(["01_layernorm_ko", "02_batchnorm_ko"], known) is None       # 0* is all five
    assert classroom.one_glob(["02_batchnorm_en", "02_batchnorm_ko", "05_fold_ko"], known) is None
    assert classroom.one_glob(["a[1]_x", "a[1]_y"], ["a[1]_x", "a[1]_y", "a1_z"]) == "a[[]1]_*"


def test_a_source_nbgrader_cannot_release_is_named_and_the_others_are_released(tmp_path):
    """Released in one nbgrader process, which fails: each is generated again alone, and the
    failure is the broken one's (two grade cells with one id), with nbgrader's words."""
    course = tmp_path / "assignments"
    shutil.copytree(ROOT / "classroom" / "course", course, ignore=shutil.ignore_patterns(
        "release", "submitted", "autograded", "feedback", "gradebook.db*", "*.csv", ".ipynb_checkpoints", "source"))
    for name in ("01_layernorm_ko", "01_layernorm_en"):
        shutil.copytree(ROOT / "classroom" / "course" / "source" / name, course / "source" / name)
    notebook = course / "source" / "01_layernorm_en" / "01_layernorm.ipynb"
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    ids = [c["metadata"]["nbgrader"] for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade")]
    ids[1]["grade_id"] = ids[0]["grade_id"]
    notebook.write_text(json.dumps(nb), encoding="utf-8")
    with contextlib.redirect_stdout(io.StringIO()) as console:
        failed = classroom.generate(course, ["01_layernorm_ko", "01_layernorm_en"])
    assert list(failed) == ["01_layernorm_en"], failed
    assert "GenerateAssignmentApp | ERROR" in failed["01_layernorm_en"], failed
    here = f"(cd {classroom.shown(course)} && "        # as printed: relative to the current folder when shorter
    mine = [line.split("nbgrader ", 1)[1].rstrip(")") for line in console.getvalue().splitlines() if here in line]
    assert mine == ["generate_assignment '*' --force", "generate_assignment 01_layernorm_ko --force",
                    "generate_assignment 01_layernorm_en --force"], mine      # (the course holds these two)
    assert (course / "release" / "01_layernorm_ko" / "01_layernorm.ipynb").exists()


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

def _solution_body(course: Path, assignment: str = CLASS, grade_id: str = "batch_norm") -> str:
    """The teacher's answer: the source's solution cell with the markers removed."""
    stem = assignment.rsplit("_", 1)[0]
    source = json.loads((course / "source" / assignment / f"{stem}.ipynb").read_text(encoding="utf-8"))
    text = _source(_cells(source)[grade_id])
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
    """Submissions as students would make them from the release: student → (cell edits, expected
    points, changes); points None: nbgrader cannot grade it."""
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
    # hands the whole task to torch: the checkers' guard fails every test (classroom/normlib_classroom/_guard.py)
    delegating = "from torch import nn\n\n\nclass BatchNorm(nn.BatchNorm1d):\n    pass\n"
    # points of the four tests: train 2, running 2, eval 1, momentum=None 1
    return {
        "delegating": ({"batch_norm": delegating}, 0, []),
        "correct": ({"batch_norm": right}, 6, []),
        "partial": ({"batch_norm": biased}, 2 + 0 + 1 + 0, []),        # biased running_var: tests 2 and 4 fail
        "raises": ({"batch_norm": raises}, 2 + 0 + 0 + 0, []),         # the running test also calls eval()
        "loops": ({"batch_norm": loops}, 0 + 2 + 1 + 1, []),           # test 1 times out, the rest are graded
        "deleted": ({"batch_norm": fixed_none}, 2 + 2 + 1 + 0, ["delete", "reorder"]),
        "edited": ({"batch_norm": biased, "test_running": "pass", "test_cumulative": "print('fine')"}, 3, []),
        "untouched": ({}, 0, []),                                     # the release as handed out, renamed
        "deaf": ({"batch_norm": deaf}, 0 + 2 + 1 + 1, []),            # swallows the interrupt: killed, the rest graded
        "misnamed": ({"batch_norm": right}, None, ["rename"]),       # what a browser's second download is called
        "stray": ({"batch_norm": right}, None, ["stray"]),           # no assignment folder
        "wrongdir": ({"batch_norm": right}, None, ["wrongdir"]),     # the folder without the language
        "gutted": ({}, None, ["gut"]),          # the solution and its test deleted: nbgrader 0.9.6 fails (README)
    }


BN_REFUSAL = '    if bn.training:\n        raise ValueError("fold needs a BatchNorm in evaluation mode: call bn.eval() first")\n'
CONV_BIAS = "b = conv.bias if conv.bias is not None else torch.zeros_like(s)"
SCALE = "s = bn.weight / torch.sqrt(bn.running_var + bn.eps)"
# a fold that returns a layer normalizing with its own input's statistics (y.var: n − 1), not a conv
BATCH_FOLD = """def fold(conv, bn):
    if bn.training:
        raise ValueError("evaluation mode only")

    class Folded(nn.Module):
        def forward(self, x):
            y = conv(x)
            dims = (0, *range(2, y.dim()))
            view = (1, -1) + (1,) * (y.dim() - 2)
            mean, var = y.mean(dims).reshape(view), y.var(dims).reshape(view)
            return (y - mean) / torch.sqrt(var + bn.eps) * bn.weight.reshape(view) + bn.bias.reshape(view)
    return Folded()
"""


def _fold_class(course: Path) -> dict:
    """Who hands in assignment 5 too, and what: student → (cell edits, expected points)."""
    scale_shift, fold = (_solution_body(course, FOLD, grade_id) for grade_id in ("scale_shift", "fold"))
    std_eps = _edit(scale_shift, SCALE, "s = bn.weight / (torch.sqrt(bn.running_var) + bn.eps)")
    # points of the four tests: scale_shift 2, fold 2, fold with stride, padding, groups kept 1 (convs without a
    # bias: a slip with the bias costs test 2 only), the refusal of training mode 1
    return {
        "correct": ({"scale_shift": scale_shift, "fold": fold}, 6),
        "partial": ({"scale_shift": scale_shift, "fold": _edit(fold, CONV_BIAS, "b = torch.zeros_like(s)")},
                    2 + 0 + 1 + 1),
        "batchstats": ({"scale_shift": std_eps, "fold": BATCH_FOLD}, 0 + 0 + 0 + 1),   # still refuses training mode
        "trainfold": ({"scale_shift": scale_shift, "fold": _edit(fold, BN_REFUSAL, "")}, 2 + 2 + 1 + 0),
    }


INT_SHAPE = "    if isinstance(normalized_shape, int):\n        normalized_shape = (normalized_shape,)\n"


def test_a_near_correct_answer_scores_the_cells_it_gets_right(tmp_path):
    """Assignment 1 right in everything but an int ``normalized_shape`` (the teacher's answer without
    its int case), validated by nbgrader with the hidden tests: only the two cells of the other forms
    of ``normalized_shape`` (and float32) fail, 3 of 5 points (0 when each part was one cell)."""
    stem = "01_layernorm"
    notebook = json.loads(build_assignments.targets(stem)["ko"].read_text(encoding="utf-8"))
    cells = _cells(notebook)
    cells["layer_norm_stats"]["source"] = _edit(_source(cells["layer_norm_stats"]), INT_SHAPE, "")
    (tmp_path / f"{stem}.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    # wide enough that nbgrader prints each failed cell's whole source: which cells failed
    result = classroom.nbgrader(tmp_path, "validate", "--Validator.width=100000", f"{stem}.ipynb", quiet=True)
    points = {gid: c["metadata"]["nbgrader"]["points"] for gid, c in cells.items() if c["metadata"]["nbgrader"]["grade"]}
    failed = {gid for gid in points if "The following cell failed:\n\n" + "\n".join(
        "    " + line for line in _source(cells[gid]).strip().split("\n")) + "\n\n" in result.stdout}
    assert failed == {"test_layer_norm_stats_forms", "test_layer_norm_forms"}, result.stdout[-3000:]
    assert "VALIDATION FAILED ON 2 CELL(S)" in result.stdout
    assert (sum(points.values()) - sum(points[gid] for gid in failed), sum(points.values())) == (3, 5)


@pytest.mark.parametrize("lang", build_assignments.LANGS)
def test_the_guides_table_gives_the_points_of_each_test_cell(lang):
    """chapters/<lang>/teachers.md lists each assignment's points per test cell, in order (1+1+2+1)."""
    guide = (ROOT / "chapters" / lang / "teachers.md").read_text(encoding="utf-8")
    for stem in STEMS:
        row = next(line for line in guide.splitlines() if line.startswith(f"| `{stem}` |"))
        notebook = json.loads(build_assignments.targets(stem)[lang].read_text(encoding="utf-8"))
        points = [c["metadata"]["nbgrader"]["points"] for c in notebook["cells"]
                  if c["metadata"].get("nbgrader", {}).get("grade")]
        assert row.split("|")[3].strip() == "+".join(map(str, points)), (lang, row)


# what else the class hands in: student → (what is in submitted/<student>/, the PROBLEM's cause, its remedy)
NOT_NOTEBOOKS = {
    "broken": ('{"cells": [', "02_batchnorm_ko: 02_batchnorm.ipynb is not a notebook: it is not JSON",
               "ask the student for the notebook again (in Jupyter: File > Download), put it at "),
    "nofile": (None, "02_batchnorm_ko: no notebook in ", "put the student's 02_batchnorm.ipynb there, then run: "),
}
CAUSES = {      # student → what the PROBLEM line says, and what its remedy line says
    "misnamed": ("02_batchnorm_ko: `02_batchnorm (1).ipynb` is not graded: this file must be named `02_batchnorm.ipynb`",
                 "rename "),
    "stray": ("stray: 02_batchnorm.ipynb is directly in ", "move it into "),
    "wrongdir": ("wrongdir/02_batchnorm: ", "rename the folder to the assignment it holds (02_batchnorm_en or "
                 "02_batchnorm_ko), then run: "),
    "gutted": ("02_batchnorm_ko: nbgrader could not grade it: KeyError: 'batch_norm'",
               "see nbgrader's whole message: (cd "),
    **{student: (cause, remedy) for student, (_, cause, remedy) in NOT_NOTEBOOKS.items()},
}
HANDED_IN = "2025-03-14 09:26:53"        # UTC: the modification time of the correct student's notebook
# The class as three lists. A university's 학사 list: CP949, CRLF, a title line above the header, the whole name in
# one column (every student of the course). Moodle's participants export (UTF-8 with a BOM; First name, Last name,
# ID number; the instructor's row has no ID number) and Canvas's gradebook export (Points Possible, Test Student),
# each of its own students, merged into the first with make roster … ADD=1. The students the platforms' zips
# bring are found by name on Moodle (its numbers are participant numbers), by Canvas's user number on Canvas.
FULL_NAMES = {"absent": "김수민", "correct": "박지호", "partial": "이하늘", "raises": "최민준", "loops": "정서연",
              "deleted": "강도윤", "edited": "강도윤", "untouched": "송유나", "deaf": "윤지우", "delegating": "장예준",
              "redo": "임서아", "tardy": "한시우"}           # two 강도윤: Moodle's file names cannot tell them apart
CANVAS_IDS = {"loops": "52005", "delegating": "52010"}      # on Canvas; everyone else of FULL_NAMES on Moodle
ON_MOODLE = [s for s in FULL_NAMES if s not in CANVAS_IDS]
HAKSA = "2025학년도 1학기 수강생 명단 (딥러닝),,,,\r\n번호,분반,학번,이름,이메일\r\n" + "".join(
    f"{i},{'03' if student in CANVAS_IDS else '01'},{student},{name},"
    f"{'sumin@example.org' if student == 'absent' else ''}\r\n" for i, (student, name) in enumerate(FULL_NAMES.items(), 1))
MOODLE_PARTICIPANTS = "\ufeffFirst name,Last name,ID number,Email address\n교수,박,,prof@example.org\n" + "".join(
    f"{FULL_NAMES[s][1:]},{FULL_NAMES[s][0]},{s},{'sumin@example.org' if s == 'absent' else ''}\n" for s in ON_MOODLE)
CANVAS_GRADEBOOK = ("\ufeffStudent,ID,SIS User ID,SIS Login ID,Section,과제 2 (4242),Current Score\n"
                    "    Points Possible,,,,,6.00,(read only)\n" + "".join(
                        f"{FULL_NAMES[s]},{number},{s},{s}03,DL-03,,\n" for s, number in CANVAS_IDS.items())
                    + "\"Student, Test\",52099,,,DL-03,,\n")
# Who hands the class assignment in through Moodle ("Download all submissions") and through Canvas ("Download
# Submissions"), how their file arrives there, and, for the late zip, what changes; the others are put into
# submitted/ by hand, as before.
ZIPPED = {"correct": "as released", "partial": "(1)", "raises": "nested zip", "deleted": "as released",
          "edited": "as released", "untouched": "renamed", "deaf": "as released", "redo": "as released"}
CANVAS_ZIPPED = {"loops": "_late_", "delegating": ""}


def _make_any(args: list[str]) -> tuple[int, str]:
    """A make target of the guide, run as a teacher runs it: (the command's exit status, its output). make itself
    ends with 2 when the command ends with 1 (and says "Error 1")."""
    result = subprocess.run(["make", "--no-print-directory", *args], cwd=ROOT, capture_output=True, text=True,
                            timeout=600, check=False)
    failed = result.returncode == 2 and result.stderr.rstrip().endswith("] Error 1")
    assert result.returncode == 0 or failed, result.stdout[-3000:] + result.stderr[-3000:]
    return int(failed), result.stdout


def _collect_class(course: Path, moodle: Path, canvas: Path) -> str:
    """The three lists into students.csv, then both downloads collected as the console says: the two files of the
    same name placed with the ASSIGN= command it prints, each for the student it is (the teacher opened them)."""
    stem = CLASS.rsplit("_", 1)[0]
    lists = course.parent / "lists"
    lists.mkdir()
    (lists / "수강생명단.csv").write_bytes(HAKSA.encode("cp949"))
    (lists / "courseid_51234_participants.csv").write_text(MOODLE_PARTICIPANTS, encoding="utf-8", newline="")
    (lists / "2025-03-01T1030_Grades-DL.csv").write_text(CANVAS_GRADEBOOK, encoding="utf-8", newline="")
    out = _make(["roster", f"FILE={lists / '수강생명단.csv'}", f"COURSE={course}"])
    assert f"a list without a platform (header on row 2), {len(FULL_NAMES)} students" in out, out
    out = _make(["roster", f"FILE={lists / 'courseid_51234_participants.csv'}", "ADD=1", f"COURSE={course}"])
    assert "row 2 (박교수: no ID number;" in out and f"{len(ON_MOODLE)} updated, 0 added" in out, out
    out = _make(["roster", f"FILE={lists / '2025-03-01T1030_Grades-DL.csv'}", "ADD=1", f"COURSE={course}"])
    assert "row 2 (Canvas's Points Possible row)" in out and "(Student, Test: Canvas's test student)" in out, out
    status, console = _make_any(["collect", f"ZIP={moodle}", f"ASSIGNMENT={CLASS}", f"COURSE={course}"])
    assert status == 1 and "exit status 1: 2 files left to place" in console, console[-3000:]
    whose = {moodle_prefix(s) + f"{stem}.ipynb": s for s in ("deleted", "edited")}
    out = console
    for _ in whose:
        printed = re.findall(r"then place it: (make collect .*) \(or …:\S+\)\n", out)[0]
        command = shlex.split(printed)
        head = command[-1].removeprefix("ASSIGN=").rpartition(":")[0]
        command[-1] = f"ASSIGN={head}:{whose[head]}"
        status, out = _make_any(command[1:])
        console += out
    assert status == 0 and "not placed" not in out, out
    return console + _make(["collect", f"ZIP={canvas}", f"ASSIGNMENT={CLASS}", f"COURSE={course}"])


def _canvas_zip(path: Path, notebooks: dict[str, bytes], stem: str) -> Path:
    """Canvas's "Download Submissions": flat files <sortable name>_<late>_<user number>_<attachment>_<file>."""
    with zipfile.ZipFile(path, "w") as archive:
        for student, late in CANVAS_ZIPPED.items():
            name = f"{canvas_name(student)}{late.rstrip('_') and '_late'}_{CANVAS_IDS[student]}_{canvas_attachment(student)}_"
            archive.writestr(zipfile.ZipInfo(name + f"{stem}.ipynb", (2025, 3, 14, 9, 30, 0)), notebooks[student])
    return path


def canvas_name(student: str) -> str:
    return {"loops": "jeongseoyeon", "delegating": "jangyejun"}[student]


def canvas_attachment(student: str) -> str:
    return {"loops": "7005", "delegating": "7010"}[student]


@pytest.fixture(scope="module")
def graded(course, released):
    """Hand the class in, autograde it with classroom/tools/classroom.py: (Grades, the rows of grades.csv by
    assignment and student, the raw file, the console output, seconds)."""
    stem = CLASS.rsplit("_", 1)[0]
    release = json.loads((course / "release" / CLASS / f"{stem}.ipynb").read_text(encoding="utf-8"))
    notebooks = {}
    for student, (edits, _, changes) in _class(course).items():
        nb = json.loads(json.dumps(release))
        cells = _cells(nb)
        for grade_id, code in edits.items():
            cells[grade_id]["source"] = code
        if "delete" in changes:       # two test cells and the first text cell go; nbgrader puts the tests back
            nb["cells"] = [c for i, c in enumerate(nb["cells"]) if i != 0 and c["metadata"].get("nbgrader", {})
                           .get("grade_id") not in ("test_eval", "test_cumulative")]
        if "gut" in changes:
            nb["cells"] = [c for c in nb["cells"] if c not in (cells["batch_norm"], cells["test_train"])]
        if "reorder" in changes:      # the running test moves to the end, the last text cell to the top
            order = nb["cells"]
            order.append(order.pop(order.index(cells["test_running"])))
            order.insert(0, order.pop(max(i for i, c in enumerate(order) if c["cell_type"] == "markdown")))
        if student in ZIPPED or student in CANVAS_ZIPPED:
            notebooks[student] = json.dumps(nb).encode()
            continue
        folder = course / "submitted" / student / {"stray": "", "wrongdir": stem}.get(student, CLASS)
        folder.mkdir(parents=True, exist_ok=True)
        name = f"{stem} (1).ipynb" if "rename" in changes else f"{stem}.ipynb"
        (folder / name).write_text(json.dumps(nb), encoding="utf-8")
    notebooks["redo"] = notebooks["partial"]            # hands in the partial answer first, then a late fix
    download = _moodle_zip(course.parent / "moodle.zip", {s: notebooks[s] for s in ZIPPED}, stem)
    canvas = _canvas_zip(course.parent / "canvas.zip", notebooks, stem)
    start = time.monotonic()
    collected = _collect_class(course, download, canvas)
    print(f"make roster (three lists) and collect (Moodle, twice ASSIGN, Canvas) took {time.monotonic() - start:.1f} s")
    fold_stem = FOLD.rsplit("_", 1)[0]
    fold_release = json.loads((course / "release" / FOLD / f"{fold_stem}.ipynb").read_text(encoding="utf-8"))
    for student, (edits, _) in _fold_class(course).items():
        nb = json.loads(json.dumps(fold_release))
        for grade_id, code in edits.items():
            _cells(nb)[grade_id]["source"] = code
        folder = course / "submitted" / student / FOLD
        folder.mkdir(parents=True)
        (folder / f"{fold_stem}.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    for student, (content, _, _) in NOT_NOTEBOOKS.items():
        folder = course / "submitted" / student / CLASS
        folder.mkdir(parents=True)
        if content is None:
            (folder / "notes.txt").write_text("the notebook is on my other computer", encoding="utf-8")
        else:
            (folder / f"{stem}.ipynb").write_text(content, encoding="utf-8")
    handed_in = datetime.strptime(HANDED_IN, "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc).timestamp()
    os.utime(course / "submitted" / "correct" / CLASS / f"{stem}.ipynb", (handed_in, handed_in))
    start = time.monotonic()
    console = io.StringIO()
    make = os.environ.pop("MAKELEVEL", None)         # remedies name this script, as outside make
    try:
        with contextlib.redirect_stdout(console):
            grades = classroom.autograde(course, timeout=TIMEOUT)
    finally:
        if make is not None:
            os.environ["MAKELEVEL"] = make
    seconds = time.monotonic() - start
    raw = grades.path.read_bytes()
    rows = {}
    for row in csv.DictReader(io.StringIO(raw.decode("utf-8-sig"))):
        rows.setdefault(row["assignment"], {})[row["student_id"]] = row
    return grades, rows, raw, console.getvalue(), seconds, collected


def _moodle_zip(path: Path, notebooks: dict[str, bytes], stem: str, when=(2025, 3, 14, 9, 26, 52)) -> Path:
    """Moodle's download of all submissions: <full name>_<participant number>_assignsubmission_file_<file>,
    with a student's own zip of her folder (checkpoints, __MACOSX) inside, a "(1)" file, a renamed one."""
    with zipfile.ZipFile(path, "w") as archive:
        for student, data in sorted(notebooks.items()):
            prefix = moodle_prefix(student)
            how = ZIPPED.get(student, "as released")
            if how == "nested zip":
                inner = io.BytesIO()
                with zipfile.ZipFile(inner, "w") as folder:
                    folder.writestr(f"과제2/{stem}.ipynb", data)
                    folder.writestr(f"과제2/.ipynb_checkpoints/{stem}-checkpoint.ipynb", b"{}")
                    folder.writestr(f"__MACOSX/과제2/._{stem}.ipynb", b"\x00\x05\x16\x07")
                archive.writestr(zipfile.ZipInfo(prefix + "과제2.zip", when), inner.getvalue())
                continue
            name = {"(1)": f"{stem} (1).ipynb", "renamed": f"과제2_{FULL_NAMES[student]}.ipynb"}.get(how, f"{stem}.ipynb")
            archive.writestr(zipfile.ZipInfo(prefix + name, when), data)
    return path


def moodle_prefix(student: str) -> str:
    """What Moodle puts before a student's file: the full name and the participant number (the same in every zip)."""
    return f"{FULL_NAMES[student]}_{31001 + list(FULL_NAMES).index(student)}_assignsubmission_file_"


def _make(args: list[str]) -> str:
    """A make target of the guide, run as a teacher runs it; its output."""
    result = subprocess.run(["make", "--no-print-directory", *args], cwd=ROOT, capture_output=True, text=True,
                            timeout=600, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def _expected(course: Path, assignment: str = CLASS) -> dict[str, float | None]:
    """student → points in ``assignment``; None: not graded; "absent": not submitted."""
    assignment_2 = {**{student: points for student, (_, points, _) in _class(course).items()},
                    **dict.fromkeys(NOT_NOTEBOOKS)}
    assignment_5 = {student: points for student, (_, points) in _fold_class(course).items()}
    assignment_2["redo"] = assignment_2["partial"]       # the same answer, through the platform's zip
    handed_in = assignment_5 if assignment == FOLD else assignment_2
    return {student: handed_in.get(student, "absent") for student in {**assignment_2, **assignment_5, **FULL_NAMES}}


@pytest.mark.parametrize("assignment", [CLASS, FOLD])
def test_every_student_gets_exactly_the_expected_grade(course, graded, assignment):
    rows = graded[1][assignment]
    expected = _expected(course, assignment)
    assert sorted(rows) == sorted(expected), "grades.csv must list every student of submitted/ and students.csv"
    for student, points in expected.items():
        row = rows[student]
        assert row["max_score"] == "6", row
        if points == "absent":
            assert (row["status"], row["score"], row["timestamp"], row["note"]) == ("not submitted", "", "", ""), row
        elif points is None:
            assert (row["status"], row["score"]) == ("not graded", ""), row
            assert row["note"] == next(p.cause for p in graded[0].problems if p.student == student), row
        else:
            assert (row["status"], float(row["score"])) == ("graded", points), row
    # from students.csv, the 학사 list's whole name kept as one name (Moodle's two parts did not replace it)
    assert {student: rows[student]["last_name"] for student in FULL_NAMES} == FULL_NAMES
    assert rows["absent"]["first_name"] == "" and rows["absent"]["email"] == "sumin@example.org"


def test_grades_csv_is_the_graded_assignments_only_and_opens_in_a_spreadsheet(graded):
    _, by_assignment, raw, _, _, _ = graded
    assert raw.startswith(b"\xef\xbb\xbfassignment,student_id,"), "UTF-8 with a byte order mark, for Excel"
    assert b"\r\n" in raw and "김".encode() in raw
    header = raw.decode("utf-8-sig").splitlines()[0].split(",")
    assert header == list(classroom.COLUMNS)
    assert sorted(by_assignment) == [CLASS, FOLD], "only the assignments that were handed in, of the ten released"
    assert len(raw.decode("utf-8-sig").splitlines()) == 1 + 2 * len(by_assignment[CLASS])
    assert {r["status"] for rows in by_assignment.values() for r in rows.values()} == set(classroom.STATUSES)


def test_timestamps_are_the_notebooks_modification_times(course, graded):
    rows = graded[1][CLASS]
    stamped = datetime.strptime(HANDED_IN, "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc).astimezone()
    assert rows["correct"]["timestamp"] == stamped.strftime("%Y-%m-%d %H:%M:%S")
    assert all(r["timestamp"] for rows in graded[1].values() for r in rows.values() if r["status"] == "graded")
    written = (course / "submitted" / "correct" / CLASS / "timestamp.txt").read_text(encoding="utf-8")
    assert written == f"{HANDED_IN}.000000 UTC\n"


def _console_sections(console: str) -> dict[str, list[str]]:
    """The console's lines under each ``<assignment>, out of N points:`` heading, by assignment."""
    sections, current = {}, None
    for line in console.splitlines():
        heading = re.fullmatch(r"(\S+), out of 6 points:", line)
        if heading:
            current = sections.setdefault(heading.group(1), [])
        elif not line.startswith("  "):
            current = None
        elif current is not None:
            current.append(line)
    return sections


def test_the_console_shows_each_student_per_assignment_then_the_counts_of_the_file(course, graded):
    grades, by_assignment, _, console, _, _ = graded
    sections = _console_sections(console)
    assert list(sections) == [CLASS, FOLD]
    for assignment, rows in by_assignment.items():
        assert len(sections[assignment]) == len(rows), sections[assignment]
        for student, row in rows.items():
            line = next(line for line in sections[assignment] if line.startswith(f"  {student} "))
            if row["status"] == "graded":
                assert re.search(rf"\s{re.escape(row['score'])} / 6\b", line), line
            else:
                assert row["status"] in line, line
    every = [r for rows in by_assignment.values() for r in rows.values()]
    counts = {status: sum(r["status"] == status for r in every) for status in classroom.STATUSES}
    students = len(by_assignment[CLASS])
    summary = console.strip().splitlines()[-1]
    assert summary.startswith(f"{classroom.shown(grades.path)}: {len(every)} rows, {students} students x 2 assignments "
                              f"({CLASS}, {FOLD})")
    assert all(f"{n} {status}" in summary for status, n in counts.items()), summary
    assert counts == {"graded": 10 + 4, "not submitted": 4 + 16, "not graded": 6 + 0}


def test_every_problem_says_what_to_do_and_the_rest_are_graded(course, graded):
    grades, by_assignment, _, console, _, _ = graded
    rows = by_assignment[CLASS]
    assert sorted(p.student for p in grades.problems) == sorted(CAUSES)
    for problem in grades.problems:
        cause, remedy = CAUSES[problem.student]
        assert str(problem) in console
        printed = str(problem).splitlines()
        assert len(printed) == 2 and printed[0].startswith(f"PROBLEM {problem.student}"), printed
        assert cause in printed[0] and printed[1].startswith(f"  what to do: {remedy}"), printed
    # the command a remedy names runs as printed: this Python, this script, the course
    command = shlex.split(grades.problems[0].remedy.rsplit("then run: ", 1)[1])
    assert Path(command[0]).resolve() == Path(sys.executable).resolve() or Path(command[0]).exists()
    assert Path(command[1]).resolve() == ROOT / "classroom" / "tools" / "classroom.py"
    assert command[2:] == ["autograde", "--course", classroom.shown(course), "--timeout", str(TIMEOUT)]
    assert rows["correct"]["status"] == "graded" and rows["misnamed"]["status"] == "not graded"
    # nbgrader's own message, for what it fails on: the command runs from a plain shell
    gutted = next(p for p in grades.problems if p.student == "gutted")
    command = gutted.remedy.removeprefix("see nbgrader's whole message: ")
    plain = {"HOME": os.environ.get("HOME", str(course)), "PATH": os.pathsep.join(["/usr/bin", "/bin"])}
    result = subprocess.run(["bash", "-c", command], env=plain, capture_output=True, text=True, timeout=300,
                            check=False)
    assert "KeyError: 'batch_norm'" in result.stdout + result.stderr, command


def test_only_real_changes_to_read_only_cells_are_reported(course, graded):
    """nbgrader's checksum warning (jupyter/nbgrader#1961) only for the student who edited a test
    cell, none for the untouched ones; grades.csv notes what was edited and what was put back."""
    grades, by_assignment, _, console, _, _ = graded
    rows = by_assignment[CLASS]
    for assignment, edited in ((CLASS, {"edited"}), (FOLD, set())):
        log = grades.logs[assignment]
        warned = set()
        for block in log.split("Sanitizing ")[1:]:
            if "Attribute 'checksum'" in block:
                warned.add(Path(block.split()[0]).parent.parent.name)
        assert warned == edited, log[-3000:]
    assert rows["edited"]["note"] == "read-only cells edited, graded as released: test_running, test_cumulative"
    assert rows["deleted"]["note"] == "test cells deleted, put back and graded: test_eval, test_cumulative"
    # what the score alone does not say: the cell stopped at the time limit, the call to torch's BatchNorm
    assert rows["loops"]["note"] == f"stopped at the time limit ({TIMEOUT} s), 0 points: test_train"
    graded_ids = ", ".join(gid for gid, _ in classroom.graded_cells(course / "source" / CLASS / "02_batchnorm.ipynb"))
    assert re.fullmatch(rf"called torch\.nn\.BatchNorm1d\S* \(a reference implementation\), 0 points: {graded_ids}",
                        rows["delegating"]["note"]), rows["delegating"]["note"]
    # the loop inside a bare except: its kernel killed, the tests after it graded (4 of 6)
    assert rows["deaf"]["note"] == (f"stopped at the time limit ({TIMEOUT} s), 0 points: test_train; it ignored the "
                                    "interrupt, so its kernel was killed and the cells before run again in a new one")
    assert all(not r["note"] for rows in by_assignment.values() for s, r in rows.items()
               if s not in ("edited", "deleted", "loops", "delegating", "deaf") and r["status"] == "graded")
    assert "test_running, test_cumulative" in next(line for line in console.splitlines() if "  edited " in line)


def test_the_infinite_loop_times_out_and_the_later_cells_are_graded(course, graded):
    seconds = graded[4]
    autograded = json.loads((course / "autograded" / "loops" / CLASS / "02_batchnorm.ipynb").read_text("utf-8"))
    outputs = {gid: [o.get("ename") for o in c.get("outputs", []) if o["output_type"] == "error"]
               for gid, c in _cells(autograded).items()}
    assert "CellTimeoutError" in outputs["test_train"]
    assert outputs["test_running"] == outputs["test_eval"] == outputs["test_cumulative"] == []
    handed_in = sum(p != "absent" for a in (CLASS, FOLD) for p in _expected(course, a).values())
    print(f"autograding the class's {handed_in} submissions took {seconds:.0f} s")


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
    start = time.monotonic()
    pages = classroom.feedback(course, [CLASS, FOLD])
    print(f"make feedback of {len(pages)} pages took {time.monotonic() - start:.0f} s")
    return pages


def test_feedback_html_for_every_graded_student(course, feedback):
    graded_students = {"correct", "partial", "raises", "loops", "deleted", "edited", "untouched", "delegating", "redo",
                       "deaf"}
    assert {p.parent.parent.name for p in feedback if p.parent.name == CLASS} == graded_students
    assert {p.parent.parent.name for p in feedback if p.parent.name == FOLD} == set(_fold_class(course))
    assert all(p.name == {CLASS: "02_batchnorm.html", FOLD: "05_fold.html"}[p.parent.name] for p in feedback)
    pages = {p.parent.parent.name: p.read_text(encoding="utf-8") for p in feedback if p.parent.name == CLASS}
    # the checker's Korean explanation reaches the student: the biased running_var, chapter 3 to reread
    assert "표본분산" in pages["partial"] and "학습 모드와 평가 모드" in pages["partial"]
    assert "CellTimeoutError" in pages["loops"]
    # the delegation is named, in the student's language
    assert "torch.nn.BatchNorm1d" in pages["delegating"] and "직접 작성하세요" in pages["delegating"]
    assert re.search(r"3(\.0)?\s*/\s*6", pages["partial"]), "the page shows the score"


def test_the_fold_feedback_names_each_slip_in_korean(feedback):
    pages = {p.parent.parent.name: p.read_text(encoding="utf-8") for p in feedback if p.parent.name == FOLD}
    assert "conv의 bias를 0으로 두고 접은 결과" in pages["partial"]                 # the conv's bias forgotten
    assert "입력 배치 자신의 평균과 표본분산" in pages["batchstats"]                 # batch statistics, y.var's n − 1
    assert "ε은 제곱근 안에 들어갑니다" in pages["batchstats"]                       # and part 1's ε outside the root
    assert "학습 모드의 BatchNorm을 그대로 접었습니다" in pages["trainfold"]         # a training-mode layer folded
    for student, score in (("correct", 6), ("partial", 4), ("batchstats", 1), ("trainfold", 5)):
        assert re.search(rf"{score}(\.0)?\s*/\s*6", pages[student]), (student, "the page shows the score")


# --------------------------------------------------------------------------- the platform: zip in, grades and feedback out

PROGRESS = re.compile(r"^  \[(\d+)/(\d+)\] (\S+) (\S+): \d+ s(.*)$", re.MULTILINE)


def test_the_moodle_zip_is_filed_by_make_collect(course, graded):
    out = graded[5]
    for student, how in ZIPPED.items():
        line = next(line for line in out.splitlines() if f"-> {student} {FULL_NAMES[student]}" in line)
        by = "(placed by ASSIGN; " if student in ("deleted", "edited") else "(name on the roster; "
        assert "[new]" in line and by in line, line
        assert {"as released": "named as released)", "(1)": "(named 02_batchnorm (1).ipynb))",
                "renamed": f"the student's only notebook (named 과제2_{FULL_NAMES[student]}.ipynb))",
                "nested zip": "named as released)"}[how] in line, line
        assert sorted(p.name for p in (course / "submitted" / student / CLASS).iterdir()) == \
            ["02_batchnorm.ipynb", "timestamp.txt"]
    assert f"{moodle_prefix('raises')}과제2.zip/과제2/02_batchnorm.ipynb" in out
    assert "2 files ignored (.ipynb_checkpoints, __MACOSX)" in out
    # the same name twice: both left, with the command that places each; run as printed (tests: _collect_class)
    assert out.count("2 students of students.csv are called 강도윤 (deleted, edited)") == 3
    assert "make roster" not in out, "never a make roster for students already on the list"
    for student, late in CANVAS_ZIPPED.items():
        assert re.search(rf"{canvas_name(student)}{late.rstrip('_') and '_late'}_{CANVAS_IDS[student]}_\S+ +-> "
                         rf"{student} {FULL_NAMES[student]}  \[new\]  \(Canvas number on the roster; named as released\)",
                         out), out
    assert "no submission yet from 2 students of students.csv: absent 김수민, tardy 한시우" in out
    assert f"/<student>/{CLASS}/: 2 new, 0 replaced, 0 unchanged. Next: make autograde ASSIGNMENTS={CLASS} " \
        f"COURSE={classroom.shown(course, ROOT)}" in out
    assert f"/<student>/{CLASS}/: {len(ZIPPED) - 2} new, 0 replaced, 0 unchanged; 2 not placed." in out
    assert not list((course / "collected" / CLASS / "unplaced").rglob("*.ipynb")), "placed files leave unplaced/"


def test_autograding_says_each_student_as_it_finishes(course, graded):
    console = graded[3]
    lines = [m.groups() for m in PROGRESS.finditer(console)]
    by = {(assignment, student): rest for _, _, assignment, student, rest in lines}
    # nbgrader is not started on what is already a PROBLEM (misnamed, no notebook, not JSON); it is on these two,
    # and fails inside them
    graded_students = {s for s, p in _expected(course, CLASS).items() if p not in ("absent",)} - set(CAUSES) \
        | {"gutted"}
    assert {s for a, s in by if a == CLASS} == graded_students
    assert by[(CLASS, "loops")] == ": a cell ran past the time limit and was stopped"
    assert by[(CLASS, "deaf")] == (": a cell ran past the time limit and was stopped; it ignored the interrupt: its "
                                   "kernel was killed, the cells before run again and the rest graded")
    assert all(int(k) <= int(n) for k, n, *_ in lines) and [int(k) for k, _, a, *_ in lines if a == FOLD] == [1, 2, 3, 4]


@pytest.fixture(scope="module")
def late(course, graded, feedback):
    """A week later: a late zip with a fixed answer (redo), a first one (tardy) and an unchanged one (correct);
    collected, autograded again (only those two are graded), feedback written: (collect's output, the
    console of autograde, of feedback)."""
    stem = CLASS.rsplit("_", 1)[0]
    right = (course / "submitted" / "correct" / CLASS / f"{stem}.ipynb").read_bytes()
    download = _moodle_zip(course.parent / "moodle-late.zip", {"redo": right, "tardy": right, "correct": right}, stem,
                           when=(2025, 3, 21, 23, 58, 30))
    out = _make(["collect", f"ZIP={download}", f"ASSIGNMENT={CLASS}", f"COURSE={course}"])
    console = io.StringIO()
    with contextlib.redirect_stdout(console):
        classroom.autograde(course, timeout=TIMEOUT)
        classroom.feedback(course, [CLASS])
    return out, console.getvalue()


def _final(course: Path) -> dict[str, float | None | str]:
    """student → points in the class assignment after the late zip."""
    expected = _expected(course, CLASS)
    expected["redo"] = expected["tardy"] = _class(course)["correct"][1]
    return expected


def test_a_late_zip_replaces_only_its_students_and_only_they_are_regraded(course, late):
    out, console = late
    assert re.search(r"-> correct 박지호  \[unchanged\]", out) and re.search(r"-> redo 임서아  \[replaced\]", out)
    assert re.search(r"-> tardy 한시우  \[new\]", out) and "1 new, 1 replaced, 1 unchanged" in out
    (kept,) = (course / "collected" / CLASS / "replaced" / "redo").iterdir()
    assert kept.read_bytes() != (course / "submitted" / "redo" / CLASS / "02_batchnorm.ipynb").read_bytes()
    assert sorted(s for _, _, _, s, _ in PROGRESS.findall(console)) == ["redo", "tardy"]
    # the one nbgrader failed on is not tried again while unchanged
    assert f"{FOLD}: every submission is graded and unchanged since" in console
    assert re.search(rf"PROBLEM gutted/{CLASS}: .* \(not tried again: unchanged since it failed\)\n"
                     r"  what to do: .*; to try it as it is: .*autograde.*(--force|FORCE=1)", console), console[-3000:]
    assert "new: " in console and "tardy/02_batchnorm_ko/02_batchnorm.html" in console
    assert "changed: " in console and "redo/02_batchnorm_ko/02_batchnorm.html" in console
    # make feedback names who handed something in and has no page
    assert re.search(rf"  {CLASS}: no feedback page for \d+ who handed something in: .*gutted \(not graded: nbgrader "
                     r"could not grade it", console), console[-3000:]


def test_the_first_zip_collected_again_after_the_late_one_changes_nothing(course, late):
    """A, then B, then A again: the older download does not take back the late fix, and says so."""
    submitted = course / "submitted" / "redo" / CLASS / "02_batchnorm.ipynb"
    before = submitted.read_bytes(), (course / "autograded" / "redo" / CLASS / "02_batchnorm.ipynb").exists()
    status, out = _make_any(["collect", f"ZIP={course.parent / 'moodle.zip'}", f"ASSIGNMENT={CLASS}", f"COURSE={course}"])
    assert status == 0, out         # the two 강도윤 placed as before (the ASSIGN= given once is remembered)
    assert re.search(r"-> redo 임서아  \[older\]", out) and "older than the one there (2025-03-21 23:58:30), which is " \
        "kept and graded" in out, out
    assert (submitted.read_bytes(), (course / "autograded" / "redo" / CLASS / "02_batchnorm.ipynb").exists()) == before
    assert "1 older (older than the one there: not placed)" in out
    # the older file is the first version, already kept when the late one replaced it: kept once, not twice
    (kept,) = (course / "collected" / CLASS / "replaced" / "redo").iterdir()
    with zipfile.ZipFile(course.parent / "moodle.zip") as archive:
        assert kept.read_bytes() == archive.read(f"{moodle_prefix('redo')}02_batchnorm.ipynb")


def _score(points) -> str:
    return "" if points in ("absent", None) else f"{points:g}"


# The grade files, written out by hand from the platforms' rules and the class's final points (after the late zip:
# redo and tardy 6; deaf 4, its loop killed): only the platform's own students, only the graded ones (absent, who
# handed nothing in, is left out: an empty cell would clear a grade typed in the platform).
MOODLE_GRADES = ("ID number,Full name,Email address,02_batchnorm_ko\r\n"
                 "correct,박지호,,6\r\n"
                 "deaf,윤지우,,4\r\n"
                 "deleted,강도윤,,5\r\n"
                 "edited,강도윤,,3\r\n"
                 "partial,이하늘,,3\r\n"
                 "raises,최민준,,2\r\n"
                 "redo,임서아,,6\r\n"
                 "tardy,한시우,,6\r\n"
                 "untouched,송유나,,0\r\n")
CANVAS_GRADES = ("Student,ID,SIS User ID,SIS Login ID,Section,과제 2 (4242)\r\n"
                 "장예준,52010,delegating,delegating03,03,0\r\n"
                 "정서연,52005,loops,loops03,03,4\r\n")


def test_grades_export_for_moodle_is_its_students_and_moodle_imports_it(course, late):
    from helpers.platform_imports import moodle_import
    out = _make(["grades-export", "PLATFORM=moodle", f"ASSIGNMENT={CLASS}", f"COURSE={course}"])
    path = course / "export" / f"{CLASS}_moodle_grades_not-submitted-empty.csv"
    assert path.read_bytes() == MOODLE_GRADES.encode()
    assert "left out, not submitted (no grade; MISSING=zero gives them 0) (1): absent" in out
    assert "left out, not on Moodle (" in out and "delegating" in out and "gutted" in out
    # Moodle's course: the ID numbers of its participants export; nothing aborts, each graded student imported
    imported = moodle_import(path.read_bytes(), set(ON_MOODLE), {"absent": "5"}, CLASS)
    assert imported["absent"] == "5", "a grade typed in Moodle for who handed nothing in stays"
    assert {k: v for k, v in imported.items() if k != "absent"} == {
        row.split(",")[0]: row.split(",")[3] for row in MOODLE_GRADES.split("\r\n")[1:-1]}


def test_grades_export_for_canvas_fills_its_ids_from_the_roster_and_canvas_imports_it(course, late):
    from helpers.platform_imports import canvas_import
    _make(["grades-export", "PLATFORM=canvas", f"ASSIGNMENT={CLASS}", f"COURSE={course}", "COLUMN=과제 2 (4242)"])
    path = course / "export" / f"{CLASS}_canvas_grades_not-submitted-empty.csv"
    assert path.read_bytes() == CANVAS_GRADES.encode()
    users = [{"id": CANVAS_IDS[s], "sis_user_id": s, "sis_login_id": f"{s}03", "name": FULL_NAMES[s]} for s in CANVAS_IDS]
    assert canvas_import(path.read_bytes(), users, {}) == ({"52010": "0", "52005": "4"}, [])


def test_feedback_export_for_moodle_names_each_page_with_the_students_prefix(course, late):
    out = _make(["feedback-export", "PLATFORM=moodle", f"ASSIGNMENT={CLASS}", f"COURSE={course}"])
    path = course / "export" / f"{CLASS}_moodle_feedback.zip"
    through_moodle = sorted(s for s, p in _final(course).items() if s in ON_MOODLE and p not in ("absent", None))
    with zipfile.ZipFile(path) as archive:
        assert sorted(archive.namelist()) == sorted(f"{moodle_prefix(s)}02_batchnorm.html" for s in through_moodle)
        sizes = [info.file_size for info in archive.infolist()]
    assert "deleted" in through_moodle and "edited" in through_moodle, "the two placed with ASSIGN= keep their prefix"
    assert "not in the zip (" not in out, "every page of a Moodle student has its prefix"
    assert "not in the zip, collected from another platform (2): delegating (Canvas), loops (Canvas)" in out
    assert re.search(r"no feedback page for \d+ who handed something in: .*gutted \(not graded", out), out
    assert max(sizes) <= 600_000, f"a feedback page of {max(sizes)} bytes: at most 600 kB"
    forty = path.stat().st_size / len(sizes) * 40
    assert forty <= 15e6, f"40 students' feedback would be {forty / 1e6:.1f} MB zipped: at most 15 MB"
    print(f"feedback pages: largest {max(sizes) / 1e3:.0f} kB; zip {path.stat().st_size / 1e6:.2f} MB for {len(sizes)}, "
          f"{forty / 1e6:.2f} MB for 40")
    _make(["feedback-export", "PLATFORM=canvas", f"ASSIGNMENT={CLASS}", f"COURSE={course}"])
    with zipfile.ZipFile(course / "export" / f"{CLASS}_canvas_feedback.zip") as archive:
        assert sorted(archive.namelist()) == [
            "jangyejun_52010_7010_02_batchnorm.html", "jeongseoyeon_late_52005_7005_02_batchnorm.html"]


@pytest.fixture(scope="module")
def moodle_only(course, late, tmp_path_factory) -> tuple[Path, str, str]:
    """A Moodle-only course, as the guide says, in a copy of the graded course: its participants export as the only
    class list (make roster), the first Moodle zip collected (the two 강도윤 placed with ASSIGN=), autograde (nothing
    changed: nothing graded again); (course, collect's output, autograde's console)."""
    copy = tmp_path_factory.mktemp("moodle") / "assignments"
    shutil.copytree(course, copy, ignore=shutil.ignore_patterns("collected", "export", "students*.csv"))
    export = copy.parent / "courseid_51234_participants.csv"
    export.write_text(MOODLE_PARTICIPANTS, encoding="utf-8", newline="")
    _make(["roster", f"FILE={export}", f"COURSE={copy}"])
    stem = CLASS.rsplit("_", 1)[0]
    assign = ";".join(f"{moodle_prefix(s)}{stem}.ipynb:{s}" for s in ("deleted", "edited"))
    out = _make(["collect", f"ZIP={course.parent / 'moodle.zip'}", f"ASSIGNMENT={CLASS}", f"COURSE={copy}",
                 f"ASSIGN={assign}"])
    console = io.StringIO()
    with contextlib.redirect_stdout(console):
        classroom.autograde(copy, timeout=TIMEOUT)
    return copy, out, console.getvalue()


def test_a_moodle_only_course_from_roster_to_grades(moodle_only):
    copy, out, console = moodle_only
    assert f"Moodle; {len(ZIPPED)} students' notebooks" in out and "\nnot placed (" not in out, out
    assert "-> redo 임서아  [older]" in out, "the first zip does not take back the late fix"
    assert not PROGRESS.search(console), "nothing changed: nothing graded again"
    _make(["grades-export", "PLATFORM=moodle", f"ASSIGNMENT={CLASS}", f"COURSE={copy}"])
    assert (copy / "export" / f"{CLASS}_moodle_grades_not-submitted-empty.csv").read_bytes() == MOODLE_GRADES.encode()


# --------------------------------------------------------------------------- what a teacher gets wrong, no kernel

@pytest.fixture(scope="module")
def bare_template(tmp_path_factory) -> Path:
    """A copy of classroom/course/ with a gradebook (nbgrader db student add makes one) and nothing released."""
    course = tmp_path_factory.mktemp("bare") / "assignments"
    shutil.copytree(ROOT / "classroom" / "course", course, ignore=shutil.ignore_patterns(
        "release", "submitted", "autograded", "feedback", "gradebook.db*", "*.csv", ".ipynb_checkpoints"))
    result = classroom.nbgrader(course, "db", "student", "add", "kim", quiet=True)
    assert result.returncode == 0 and (course / "gradebook.db").exists(), result.stdout[-3000:]
    return course


@pytest.fixture
def bare(bare_template, tmp_path, monkeypatch) -> Path:
    course = tmp_path / "assignments"
    shutil.copytree(bare_template, course)
    monkeypatch.delenv("MAKELEVEL", raising=False)
    return course


def _one_problem(grades) -> tuple[str, str]:
    assert len(grades.problems) == 1, "\n".join(map(str, grades.problems))
    cause, remedy = str(grades.problems[0]).splitlines()
    assert remedy.startswith("  what to do: ")
    return cause, remedy[len("  what to do: "):]


def test_no_submitted_folder_says_where_notebooks_go(bare, capsys):
    grades = classroom.autograde(bare)
    cause, remedy = _one_problem(grades)
    assert cause == f"PROBLEM there is no folder {classroom.shown(bare / 'submitted')}/: nothing to grade"
    assert remedy.startswith(f"put each notebook at {classroom.shown(bare / 'submitted')}/<student id>/<assignment>/")
    assert grades.path is None and not (bare / "grades.csv").exists()
    assert "grades.csv not written" in capsys.readouterr().out


def test_exit_status_1_says_first_that_it_is_not_a_crash(bare, capsys):
    assert classroom.main(["autograde", "--course", str(bare)]) == 1
    assert capsys.readouterr().out.endswith("\nexit status 1: 1 problem above needs you (each with what to do); not a "
                                            "crash: everything else is graded and in grades.csv\n")


def test_an_assignment_never_released_is_named_with_the_command_that_releases_it(bare):
    folder = bare / "submitted" / "kim" / "01_layernorm_ko"
    folder.mkdir(parents=True)
    shutil.copy(bare / "source" / "01_layernorm_ko" / "01_layernorm.ipynb", folder)
    grades = classroom.autograde(bare)
    cause, remedy = _one_problem(grades)
    assert cause == ("PROBLEM kim/01_layernorm_ko: 01_layernorm_ko was never released, so nbgrader has nothing "
                     "to grade it against")
    release, again = remedy.removeprefix("release it first: ").split("; then run: ")
    assert shlex.split(release)[2:] == ["release", "01_layernorm_ko", "--course", classroom.shown(bare)]
    assert shlex.split(again)[2:] == ["autograde", "--course", classroom.shown(bare)]
    assert grades.logs == {}, "nbgrader autograde is not run on an assignment it does not know"
    named = classroom.autograde(bare, ["01_layernorm_en"])
    cause, remedy = _one_problem(named)
    assert cause.startswith("PROBLEM 01_layernorm_en: 01_layernorm_en was never released")


def test_a_students_csv_in_excels_own_encoding_is_read_one_without_ids_is_named(bare):
    from nbgrader.api import Gradebook
    (bare / "submitted" / "lee").mkdir(parents=True)
    (bare / "students.csv").write_bytes("id,last_name\npark,박\n".encode("cp949"))    # Excel's plain "CSV"
    grades = classroom.autograde(bare)
    assert [p.student for p in grades.problems] == ["lee"]       # lee's folder is empty; the CP949 file is read
    with Gradebook(f"sqlite:///{bare / 'gradebook.db'}") as gb:
        assert gb.find_student("park").last_name == "박"
    (bare / "students.csv").write_text("student,mail\npark,p@x\n", encoding="utf-8")
    grades = classroom.autograde(bare)
    (problem,) = [p for p in grades.problems if "students.csv" in p.cause]
    assert problem.cause == (f"{bare / 'students.csv'} has no column for the student's id: expected one of 학번, 아이디, "
                             "ID number, SIS User ID, id (in any case) in its first row; its first row is: student, mail: "
                             "its students are left out")
    assert problem.remedy.startswith("write it again from the platform's class list (make roster FILE=<export>)")
    with Gradebook(f"sqlite:///{bare / 'gradebook.db'}") as gb:
        assert "lee" in {s.id for s in gb.students}


def test_the_commands_printed_run_as_printed(bare, monkeypatch):
    """The nbgrader line runs from a plain shell (no environment on PATH); under make, a remedy
    names the make target with the same assignments and flags."""
    command = classroom.nbgrader_command(bare, "--version")
    assert command.startswith(f"(cd {shlex.quote(classroom.shown(bare))} && ")
    plain = {"HOME": os.environ.get("HOME", str(bare)), "PATH": os.pathsep.join(["/usr/bin", "/bin"])}
    result = subprocess.run(["bash", "-c", command], env=plain, capture_output=True, text=True, timeout=120,
                            check=False)
    assert result.returncode == 0 and re.search(r"\d+\.\d+\.\d+", result.stdout), result.stdout + result.stderr
    monkeypatch.setenv("MAKELEVEL", "1")
    target = classroom.classroom_command("autograde", bare, ["01_layernorm_ko", "02_batchnorm_ko"], force=True)
    assert shlex.split(target) == ["make", "autograde", f"COURSE={classroom.shown(bare, ROOT)}",
                                   "ASSIGNMENTS=01_layernorm_ko 02_batchnorm_ko", "FORCE=1"]
    dry = subprocess.run([*shlex.split(target), "-n"], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         check=False)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert (f"classroom/tools/classroom.py autograde --course {classroom.shown(bare, ROOT)} --force "
            "01_layernorm_ko 02_batchnorm_ko") in " ".join(dry.stdout.split())
