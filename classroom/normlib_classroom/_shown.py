"""How a failed check shows in a notebook: the checker's explanation first, then the student's own lines.

IPython renders an exception through its ``_render_traceback_()`` when it has one: a list of
strings, joined by newlines, which ipykernel stores as the error output's ``traceback`` (its
``ename`` and ``evalue`` stay the exception's class name and message, what nbgrader's feedback page
reads). :class:`~._report.CheckFailed` answers with :func:`render`:

* the explanation (the exception's message, in the notebook's language);
* the student's own frames, one line each: the test cell's line that called the checker and,
  when their code raised, the lines of their code the error passed through (``__cause__``).

No frame of normlib, torch, IPython or Python itself is shown. The whole traceback stays on the
exception (``exc.__traceback__``, ``exc.__cause__``; after the cell, ``sys.last_value``), and
IPython's Verbose mode shows it in full: ``%tb verbose`` after the failing cell, or ``%xmode
verbose`` before it.
"""

from __future__ import annotations

import linecache
import os
import site
import sys
import sysconfig
import traceback
from typing import List, Optional, Tuple

import torch

from normlib_classroom.words import text

_CYAN, _GREEN, _RESET = "\x1b[36m", "\x1b[32m", "\x1b[39m"   # IPython's colours for a frame's heading and line


def _folder(path: str) -> str:
    return os.path.join(os.path.abspath(path), "")


def _libraries() -> Tuple[str, ...]:
    """normlib/ (this package's parent), torch, and Python's own folders (its prefix, the
    standard library, site-packages): a frame in none of them is the student's."""
    paths = {os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.path.dirname(torch.__file__),
             sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    paths.update(p for key in ("stdlib", "platstdlib", "purelib", "platlib")
                 if (p := sysconfig.get_paths().get(key)))
    user = getattr(site, "getusersitepackages", lambda: "")()
    if isinstance(user, str) and user:
        paths.add(user)
    folders = {_folder(p) for p in paths if p}
    return tuple(sorted(f for f in folders if os.path.dirname(f.rstrip(os.sep)) != f.rstrip(os.sep)))  # never "/"


_LIBRARIES = _libraries()


def is_students(filename: str) -> bool:
    """Is this file the student's: a notebook cell, or a module of theirs?"""
    if filename.startswith("<frozen"):
        return False
    return not os.path.abspath(filename).startswith(_LIBRARIES)


def student_frames(error: Optional[BaseException]) -> List[traceback.FrameSummary]:
    """The frames of ``error``'s traceback in the student's files, outermost first."""
    if error is None:
        return []
    return [frame for frame in traceback.extract_tb(error.__traceback__) if is_students(frame.filename)]


def _shell():
    """IPython's running shell, or ``None`` (not imported: the checkers run without IPython)."""
    ipython = sys.modules.get("IPython")
    return getattr(ipython, "get_ipython", lambda: None)() if ipython is not None else None


def _cell(filename: str, shell) -> Optional[str]:
    """The execution count of the notebook cell compiled as ``filename`` (IPython's "In[3]")."""
    names = getattr(getattr(shell, "compile", None), "_filename_map", None)
    if isinstance(names, dict) and filename in names:
        return str(names[filename])
    return None


def _frame(frame: traceback.FrameSummary, lang: str, shell) -> Optional[str]:
    """One frame as a heading (where) and its line, as IPython shows a frame, in ``lang``."""
    code = (linecache.getline(frame.filename, frame.lineno) or frame.line or "").strip()
    if not code:
        return None
    cell = _cell(frame.filename, shell)
    where = (text("ex:tb_cell", lang).format(cell=cell, line=frame.lineno) if cell is not None
             else text("ex:tb_file", lang).format(file=frame.filename, line=frame.lineno))
    if frame.name != "<module>":
        where += text("ex:tb_in", lang).format(function=frame.name)
    return f"{_CYAN}{where}{_RESET}\n{_GREEN}---->{_RESET} {frame.lineno} {code}"


def render(error: BaseException, lang: str) -> List[str]:
    """``error``'s explanation, then the student's frames (see the module's docstring); the
    whole traceback as IPython shows it when its mode is Verbose."""
    shell = _shell()
    tb = getattr(shell, "InteractiveTB", None)
    if getattr(tb, "mode", None) == "Verbose":
        return tb.structured_traceback(type(error), error, error.__traceback__)
    frames = student_frames(error) + student_frames(error.__cause__)
    shown = [line for frame in frames if (line := _frame(frame, lang, shell)) is not None]
    return [str(error)] + ([""] + shown if shown else [])
