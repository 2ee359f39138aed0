"""nbgrader's configuration for the book's classroom assignments. This folder is the course
directory: run nbgrader from here (the Makefile's classroom targets do, README "Classroom").

    source/<assignment>/        the teacher's notebooks, generated from src/ (python -m tools.build_assignments)
    release/<assignment>/       what students get: solutions and hidden tests stripped
    submitted/<student>/<assignment>/   the notebooks students hand in
    autograded/, feedback/      written by nbgrader autograde and generate_feedback
    gradebook.db, grades.csv    the SQLite gradebook and its CSV export

Everything generated is git-ignored (.gitignore beside this file).
"""

import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821 - nbgrader defines get_config when it loads this file

HERE = Path(__file__).resolve().parent

c.CourseDirectory.course_id = "normalization-layers"
c.CourseDirectory.root = str(HERE)
c.CourseDirectory.db_url = f"sqlite:///{HERE / 'gradebook.db'}"

# nbgrader creates the gradebook by running `alembic` by name, found on PATH. A teacher who calls
# `.venv/bin/nbgrader …` without activating the environment has no alembic on PATH (seen:
# FileNotFoundError: 'alembic'), so the bin folder of the Python running nbgrader goes first.
_BIN = str(Path(sys.executable).parent)
if _BIN not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = _BIN + os.pathsep + os.environ.get("PATH", "")

# Each cell gets at most this many seconds; then nbgrader interrupts the kernel, the cell keeps a
# CellTimeoutError (a test cell scores 0) and the next cells run as usual. Override for one run
# with  --Execute.timeout=N  (make autograde TIMEOUT=N). A test cell of these assignments takes
# well under a second with a correct answer.
c.Execute.timeout = 60
c.Execute.interrupt_on_timeout = True

# A test cell the student deleted is put back (with a comment saying so) and graded; edited
# read-only cells are restored from the gradebook by nbgrader's checksums in any case.
c.OverwriteCells.add_missing_cells = True

# What replaces a solution in the release, in both languages (the notebooks are Korean or English).
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE (여기에 코드를 작성하세요)\nraise NotImplementedError()"}
