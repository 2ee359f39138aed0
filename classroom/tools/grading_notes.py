"""What grading did to a submission that its score alone does not say: a cell stopped at the time
limit, a call to the reference implementation (the checkers' guard, classroom/normlib_classroom/_guard.py),
read-only cells the student edited (graded as released) or deleted (put back).

``make autograde`` (classroom/tools/classroom.py) finds these for every graded submission, prints them, puts
them in grades.csv's ``note`` and stores them in the autograded notebook's metadata
(``metadata.classroom.notes``), where the feedback page (classroom/tools/feedback_pages.py) reads them, so
that the student reads the same thing the teacher does. Each note is a dict:

    {"kind": "timeout",    "cells": [...], "seconds": 60}     (+ "killed": true: it ignored the interrupt)
    {"kind": "delegation", "cells": [...], "calls": ["torch.nn.BatchNorm1d"]}
    {"kind": "edited",     "cells": [...]}     read-only cells edited: graded as released
    {"kind": "put_back",   "cells": [...]}     test cells deleted: put back and graded
    {"kind": "deleted",    "cells": [...]}     read-only cells deleted that nbgrader does not put back
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

KINDS = ("timeout", "delegation", "edited", "put_back", "deleted")
TIMEOUT_ERROR = "CellTimeoutError"
# the value of a timeout whose kernel ignored the interrupt and was killed (classroom/tools/grading_execute.py)
KILLED = "the code did not stop when interrupted: its kernel was killed and started again"


@functools.lru_cache(maxsize=1)
def _delegation_patterns() -> tuple[re.Pattern, ...]:
    """The guard's messages, both languages, as patterns that capture the call they name."""
    from normlib_classroom.words import PAIRS
    patterns = []
    for key in ("ex:delegated", "ex:delegated_autograd"):
        for template in PAIRS[key]:
            head, tail = template.split("{call}", 1)
            patterns.append(re.compile(re.escape(head) + r"(?P<call>.+?)" + re.escape(tail[:12])))
    return tuple(patterns)


def delegated_call(text: str) -> str | None:
    """The reference implementation a checker's message says the student's code called, if any."""
    for pattern in _delegation_patterns():
        m = pattern.search(text)
        if m:
            return m.group("call")
    return None


def from_outputs(notebook: dict, seconds: float | None = None) -> list[dict]:
    """The timeout and delegation notes of an autograded notebook, from its graded cells' outputs."""
    timeouts, cells, calls, killed = [], [], [], False
    for cell in notebook.get("cells", []):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if not meta.get("grade"):
            continue
        grade_id = meta.get("grade_id", "?")
        for output in cell.get("outputs", []):
            if output.get("output_type") != "error":
                continue
            if output.get("ename") == TIMEOUT_ERROR:
                timeouts.append(grade_id)
                killed = killed or output.get("evalue") == KILLED
            call = delegated_call(output.get("evalue", ""))
            if call:
                cells.append(grade_id)
                calls.append(call)
    notes = []
    if timeouts:
        notes.append({"kind": "timeout", "cells": list(dict.fromkeys(timeouts)),
                      **({"seconds": seconds} if seconds else {}), **({"killed": True} if killed else {})})
    if cells:
        notes.append({"kind": "delegation", "cells": list(dict.fromkeys(cells)), "calls": list(dict.fromkeys(calls))})
    return notes


def describe(note: dict) -> str:
    """One note in the few English words of grades.csv's note and the console."""
    cells = ", ".join(note.get("cells", []))
    kind = note["kind"]
    if kind == "timeout":
        limit = f" ({note['seconds']:g} s)" if note.get("seconds") else ""
        killed = "; it ignored the interrupt, so its kernel was killed and the cells before run again in a new one" \
            if note.get("killed") else ""
        return f"stopped at the time limit{limit}, 0 points: {cells}{killed}"
    if kind == "delegation":
        return f"called {', '.join(note.get('calls', []))} (a reference implementation), 0 points: {cells}"
    return {"edited": "read-only cells edited, graded as released",
            "put_back": "test cells deleted, put back and graded",
            "deleted": "read-only cells deleted (nbgrader does not put these back)"}[kind] + f": {cells}"


def store(path: Path, notes: list[dict]) -> None:
    """Keep ``notes`` in the notebook's metadata (``classroom.notes``); the file is rewritten only
    when they change, in nbformat's own layout."""
    import nbformat
    nb = nbformat.read(path, as_version=4)
    old = nb.metadata.get("classroom", {}).get("notes")
    if old == notes or (old is None and not notes):
        return
    nb.metadata.setdefault("classroom", {})["notes"] = notes
    nbformat.write(nb, path)


def read(path: Path) -> list[dict]:
    """The notes stored in a notebook (empty when none)."""
    return json.loads(path.read_text(encoding="utf-8")).get("metadata", {}).get("classroom", {}).get("notes", [])
