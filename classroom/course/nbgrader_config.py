"""nbgrader's configuration for the book's classroom assignments. This folder is the course
directory: run nbgrader from here (the Makefile's classroom targets do, classroom/GUIDE.md).

    source/<assignment>/        the teacher's notebooks, generated from src/ (python -m classroom.tools.build_assignments)
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

# Regrading reports only real changes. nbgrader saves a test cell's checksum in the gradebook from
# the source, hidden tests included, but the release (and so every untouched submission) holds the
# cell without them: nbgrader's OverwriteCells then says "Attribute 'checksum' for cell … has
# changed!" for every test cell with hidden tests of every submission, on every autograde
# (jupyter/nbgrader#1961). This one first compares such a cell with its released text, the
# gradebook's source cleared by nbgrader's own ClearHiddenTests: an untouched cell gets its hidden
# tests back silently; any other change is still reported, and the cell restored, as before.
from nbgrader.api import MissingEntry  # noqa: E402
from nbgrader.converters.autograde import Autograde  # noqa: E402
from nbgrader.preprocessors import ClearHiddenTests, OverwriteCells  # noqa: E402


class OverwriteCellsWithHiddenTests(OverwriteCells):
    def preprocess_cell(self, cell, resources, cell_index):
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        try:
            source = self.gradebook.find_source_cell(grade_id, self.notebook_id, self.assignment_id) if grade_id \
                else None
        except MissingEntry:
            source = None
        if source is not None and source.locked and cell.source != source.source:
            released = cell.copy()
            released.source = source.source
            ClearHiddenTests(parent=self)._remove_hidden_test_region(released)
            if cell.source == released.source:
                cell.source = source.source
        return super().preprocess_cell(cell, resources, cell_index)


c.Autograde.sanitize_preprocessors = [OverwriteCellsWithHiddenTests if p is OverwriteCells else p
                                      for p in Autograde.class_traits()["sanitize_preprocessors"].default()]

# This course hands its notebooks out and collects them through the teachers' platform (make collect),
# not through nbgrader's exchange (Exchange.root, /usr/local/share/nbgrader/exchange, which nobody
# creates here). Formgrader looks for that folder on every request, and nbgrader logged each miss as
# "[C] Unwritable directory, please contact your instructor: …" in the teacher's JupyterLab. For
# Formgrader's look only, a missing exchange is now logged at debug level; Formgrader still treats it as
# missing (Release and Collect off; its Manage Assignments page says so). nbgrader's commands
# (`nbgrader list`, release_assignment, collect, …) keep their message, and a real exchange still works.
from nbgrader.apps.api import NbGraderAPI  # noqa: E402
from nbgrader.exchange import ExchangeError  # noqa: E402
from nbgrader.exchange.default import ExchangeList  # noqa: E402
from nbgrader.utils import check_directory  # noqa: E402


class ExchangeListQuietInFormgrader(ExchangeList):
    def ensure_root(self):
        if isinstance(self.parent, NbGraderAPI) and not check_directory(self.root, write=True, execute=True):
            self.log.debug("No nbgrader exchange at %s: this course does not use one", self.root)
            raise ExchangeError(f"no exchange directory {self.root}")
        super().ensure_root()


c.ExchangeFactory.list = ExchangeListQuietInFormgrader

# What replaces a solution in the release, in both languages (the notebooks are Korean or English).
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE (여기에 코드를 작성하세요)\nraise NotImplementedError()"}

# Feedback pages a student can read anywhere (classroom/tools/feedback_pages.py): in the assignment's language
# (_ko/_en), no path of this machine, each failed test's explanation above a traceback cut down to the
# notebook's cells, its formulas as MathML and NanumGothic cut to the page's Hangul inlined, so that the
# page makes no request at all (about 100 kB in Korean, 50 kB in English). nbgrader's pipeline stays (GenerateFeedback): one more preprocessor and the template
# templates/feedback_page/, set for GenerateFeedback only. classroom/tools/ is the repository's, around this folder;
# for a copy of this folder elsewhere (the tests make one), the repository of the normlib installed from it.
import importlib  # noqa: E402
import importlib.util  # noqa: E402


def _book_with_tools():
    spec = importlib.util.find_spec("normlib")
    for root in (HERE.parent.parent, spec and spec.origin and Path(spec.origin).resolve().parent.parent):
        if root and (root / "classroom" / "tools" / "feedback_pages.py").exists():
            return root
    return None


_BOOK = _book_with_tools()
if _BOOK is None:
    print(f"{__file__}: classroom/tools/feedback_pages.py not found beside this folder: nbgrader's own feedback pages",
          file=sys.stderr)
else:
    if str(_BOOK) not in sys.path:
        sys.path.insert(0, str(_BOOK))
    importlib.import_module("classroom.tools.feedback_pages").configure(c, HERE)

# After a cell has timed out, the ungraded cells at the end ("Try it yourself / 스스로 확인하기", which
# call the student's function again) are not run: one timeout per looping notebook, not two; each
# gets a line saying why (classroom/tools/grading_execute.py). Without classroom/tools/, nbgrader's own Execute runs all.
if _BOOK is not None and (_BOOK / "classroom" / "tools" / "grading_execute.py").exists():
    importlib.import_module("classroom.tools.grading_execute").configure(c)
