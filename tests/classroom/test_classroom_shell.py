"""nbgrader called the way a teacher calls it: `.venv/bin/nbgrader …` from a plain shell, with
no environment activated, and `nbgrader …` by name from an activated one (classroom/GUIDE.md).

nbgrader creates the gradebook by running `alembic` by name from PATH; the course's
nbgrader_config.py puts the bin folder of the Python running nbgrader first on PATH, so the
command works without `source .venv/bin/activate`.

Regrading with `--force` reports only real changes: nbgrader stores a test cell's checksum from
the source, hidden tests included, and used to say "Attribute 'checksum' … has changed!" for every
such cell of every untouched submission (jupyter/nbgrader#1961). The course's nbgrader_config.py
compares the cell with its released text first; a submission as released regrades silently, a
test cell a student edited is still reported (and restored).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# what this module needs beyond Python (tests/conftest.py: not in make test-fast)
pytestmark = pytest.mark.nbgrader

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
NBGRADER = BIN / "nbgrader"
PLAIN_PATH = os.pathsep.join(["/usr/bin", "/bin"])
CHECKSUM = re.compile(r"Attribute 'checksum' for cell (\S+) has changed")


def _run(course: Path, command: list[str], path: str) -> str:
    env = {"HOME": os.environ.get("HOME", str(course)), "PATH": path}
    result = subprocess.run(command, cwd=course, env=env, capture_output=True, text=True, timeout=600, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0 and "ERROR" not in output, output[-3000:]
    return output


def _warned(output: str) -> dict[str, list[str]]:
    """student → the cells nbgrader's log says changed (its "Sanitizing" line names the submission)."""
    return {Path(block.split()[0]).parent.parent.name: CHECKSUM.findall(block)
            for block in output.split("Sanitizing ")[1:]}


def test_nbgrader_runs_without_the_environment_on_path_and_regrades_silently(tmp_path):
    course = tmp_path / "course"
    shutil.copytree(ROOT / "classroom" / "course", course, ignore=shutil.ignore_patterns(
        "release", "submitted", "autograded", "feedback", "gradebook.db*", "*.csv", ".ipynb_checkpoints"))
    assignment = "01_layernorm_en"
    assert shutil.which("alembic", path=PLAIN_PATH) is None, "this test needs a PATH without alembic on it"
    _run(course, [str(NBGRADER), "generate_assignment", assignment, "--force"], PLAIN_PATH)
    assert (course / "release" / assignment).is_dir()
    assert (course / "gradebook.db").exists(), "nbgrader created no gradebook"

    released = json.loads((course / "release" / assignment / "01_layernorm.ipynb").read_text(encoding="utf-8"))
    tests = [c for c in released["cells"] if c["metadata"].get("nbgrader", {}).get("grade")]
    assert len(tests) == 4, "01_layernorm's four test cells (1+1+2+1 points)"
    for student in ("untouched", "tampered"):
        nb = json.loads(json.dumps(released))
        if student == "tampered":      # the student makes the second test cell harmless
            next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") ==
                 tests[1]["metadata"]["nbgrader"]["grade_id"])["source"] = "pass"
        folder = course / "submitted" / student / assignment
        folder.mkdir(parents=True)
        (folder / "01_layernorm.ipynb").write_text(json.dumps(nb), encoding="utf-8")

    tampered = [tests[1]["metadata"]["nbgrader"]["grade_id"]]
    first = _run(course, [str(NBGRADER), "autograde", assignment], PLAIN_PATH)        # no environment
    assert _warned(first) == {"untouched": [], "tampered": tampered}, first[-3000:]
    activated = os.pathsep.join([str(BIN), PLAIN_PATH])                                # source .venv/bin/activate
    again = _run(course, ["nbgrader", "autograde", assignment, "--force"], activated)
    assert _warned(again) == {"untouched": [], "tampered": tampered}, again[-3000:]
    graded = json.loads((course / "autograded" / "tampered" / assignment / "01_layernorm.ipynb").read_text("utf-8"))
    restored = next(c for c in graded["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == tampered[0])
    assert "### BEGIN HIDDEN TESTS" in "".join(restored["source"]), "the edited test cell is graded as released"
