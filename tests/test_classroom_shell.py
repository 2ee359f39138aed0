"""nbgrader called the way a teacher calls it: `.venv/bin/nbgrader …` from a plain shell, with
no environment activated (README, "Classroom").

nbgrader creates the gradebook by running `alembic` by name from PATH; the course's
nbgrader_config.py puts the bin folder of the Python running nbgrader first on PATH, so the
command works without `source .venv/bin/activate`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NBGRADER = Path(sys.executable).parent / "nbgrader"


def test_nbgrader_runs_without_the_environment_on_path(tmp_path):
    course = tmp_path / "course"
    shutil.copytree(ROOT / "assignments", course,
                    ignore=shutil.ignore_patterns("release", "submitted", "autograded", "feedback", "gradebook.db*"))
    assignment = sorted(p.name for p in (course / "source").iterdir() if p.is_dir())[0]
    plain = {"HOME": os.environ.get("HOME", str(tmp_path)), "PATH": os.pathsep.join(["/usr/bin", "/bin"])}
    assert shutil.which("alembic", path=plain["PATH"]) is None, "this test needs a PATH without alembic on it"
    result = subprocess.run([str(NBGRADER), "generate_assignment", assignment, "--force"], cwd=course, env=plain,
                            capture_output=True, text=True, timeout=300, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0 and "ERROR" not in output, output[-3000:]
    assert (course / "release" / assignment).is_dir(), output[-3000:]
    assert (course / "gradebook.db").exists(), "nbgrader created no gradebook"
