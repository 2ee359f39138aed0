"""Drive nbgrader for the classroom assignments: what `make assignments-release`, `make autograde`
and `make feedback` run (the teachers' guide; classroom/GUIDE.md).

    python classroom/tools/classroom.py release   [ASSIGNMENT ...]  [--course DIR]
    python classroom/tools/classroom.py autograde [ASSIGNMENT ...]  [--course DIR] [--timeout SECONDS] [--force]
    python classroom/tools/classroom.py feedback  [ASSIGNMENT ...]  [--course DIR] [--force]

Every nbgrader step is the real nbgrader command line, run inside the course folder (default
``classroom/course/``, where ``nbgrader_config.py`` and ``gradebook.db`` live) and printed before it
runs in a form that runs as printed from the current folder, without an activated environment:
``$ (cd classroom/course && ../../.venv/bin/nbgrader autograde 01_layernorm_ko)``.

release
    ``nbgrader generate_assignment NAME --force`` for each assignment (all of ``source/`` by
    default), then ``nbgrader validate`` on the source notebooks (each must pass every graded
    test: full marks) and ``nbgrader validate --invert`` on the released ones (each must pass
    none: zero marks), the two lists side by side. Exit status 1 if any check fails.
autograde
    looks through ``submitted/<student>/<assignment>/`` first. What nbgrader could not grade, or
    would grade wrongly, is a PROBLEM with a one-line cause and a one-line remedy: a notebook not
    named as released (``01_layernorm (1).ipynb``, what a browser download makes), a folder with no
    notebook, a notebook that is not JSON, a notebook outside an assignment's folder, a folder that
    is no assignment, an assignment never released, no ``submitted/`` at all, a ``students.csv``
    that classroom/tools/roster.py cannot read (no id column; an encoding no platform writes). Every student
    of ``submitted/`` and of ``students.csv`` goes into the gradebook. A submission without
    ``timestamp.txt`` gets one with its notebook's modification time (see ``stamp``). Then
    ``nbgrader autograde NAME`` for each assignment with submissions to grade (or each one named),
    leaving out what is already a PROBLEM, with a line per student as each finishes (``Progress``);
    an assignment whose submissions are all graded and unchanged is not started at all. A
    submission nbgrader fails on (a kernel that ignores the interrupt, …) is a PROBLEM too, the
    other students are graded all the same, and it is not tried again while unchanged (``FAILURES``).
    Last, ``grades.csv`` (see ``write_grades``): one row per student and assignment graded, a
    ``status`` that tells "not submitted" from 0, a ``note`` of what the score alone does not say
    (classroom/tools/grading_notes.py: a cell stopped at the time limit, a call to a reference implementation,
    read-only cells edited or deleted; also stored in the autograded notebook for the feedback
    page), and the console shows one line per student with score, maximum and note, then the
    problems, then the counts of the file. Exit status 1 if there was any problem, said on the last
    line first (make's "Error 1" after it is not a crash).
feedback
    ``nbgrader generate_feedback NAME``: one HTML page per student and notebook under
    ``feedback/<student>/<assignment>/``; the pages new or changed since the last run are named,
    and so are the students who handed something in and have no page (not graded).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    # run as a script (python classroom/tools/classroom.py, as the Makefile does): Python put this folder
    # first on the path, where this very file would pass for the package ``classroom``; the repository's
    # root stands there instead, so that ``classroom.tools`` is the classroom's tools
    sys.path[0] = str(ROOT)
elif str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from classroom.tools import grading_notes  # noqa: E402 - after the path is set

COURSE = ROOT / "classroom" / "course"
BIN = Path(sys.executable).parent
PASSES_ALL = "Success! Your notebook passes all the tests."
PASSES_NONE = "Success! The notebook does not pass any tests."
GRADING_ERROR = re.compile(r"There was an error processing assignment '([^']+)' for student '([^']+)'")
CONFIG_ERROR = "Exception while loading config file"
STATUSES = ("graded", "not submitted", "not graded")
COLUMNS = ("assignment", "student_id", "last_name", "first_name", "email", "status", "score", "max_score",
           "timestamp", "note")
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f UTC"      # what timestamp.txt holds; nbgrader's parse_utc reads it


# --------------------------------------------------------------------------- commands as printed

def shown(path: Path, start: Path | None = None) -> str:
    """``path`` as typed from ``start`` (the current folder): relative when that is shorter."""
    try:
        relative = os.path.relpath(path, start or Path.cwd())
    except ValueError:                                   # another drive (Windows)
        return str(path)
    return relative if len(relative) <= len(str(path)) else str(path)


def nbgrader_command(course: Path, *args: str) -> str:
    """The shell command that runs ``nbgrader ARGS`` as this script does, from the current folder and
    without an activated environment: ``(cd assignments && ../.venv/bin/nbgrader ARGS)``."""
    return f"(cd {shlex.quote(shown(course))} && {shlex.join([shown(BIN / 'nbgrader', course), *args])})"


def classroom_command(command: str, course: Path, names: list[str] | None = None, force: bool = False,
                      timeout: int | None = None) -> str:
    """How to run this script's ``command`` again, as printed: the make target when make runs it
    (make sets MAKELEVEL; its recipes run in the book's folder), else this Python and this script."""
    if os.environ.get("MAKELEVEL"):
        parts = ["make", {"release": "assignments-release"}.get(command, command)]
        if course != COURSE.resolve():
            parts.append(f"COURSE={shown(course, ROOT)}")
        if names:
            parts.append("ASSIGNMENTS=" + " ".join(names))
        if timeout:
            parts.append(f"TIMEOUT={timeout}")
        if force:
            parts.append("FORCE=1")
        return shlex.join(parts)
    parts = [shown(Path(sys.executable)), shown(Path(__file__).resolve()), command, *(names or [])]
    if course != COURSE.resolve():
        parts += ["--course", shown(course)]
    if timeout:
        parts += ["--timeout", str(timeout)]
    if force:
        parts.append("--force")
    return shlex.join(parts)


@dataclass
class Problem:
    """Something a teacher has to act on: what is wrong, and what to do (one line each)."""
    cause: str
    remedy: str
    student: str | None = None
    assignment: str | None = None
    maybe: tuple[str, ...] = ()         # the assignments a misplaced submission may be for

    def __str__(self) -> str:
        where = "/".join(p for p in (self.student, self.assignment) if p)
        return f"PROBLEM {where + ': ' if where else ''}{self.cause}\n  what to do: {self.remedy}"


def nbgrader(course: Path, *args: str, quiet: bool = False, on_line=None) -> subprocess.CompletedProcess:
    """Run ``nbgrader ARGS`` in ``course`` (its output, stdout and stderr in order, in ``.stdout``;
    each line also given to ``on_line`` as it comes). nbgrader starts ``alembic`` by name, so the
    environment's bin folder goes first on PATH."""
    if not quiet:
        print("$ " + nbgrader_command(course, *args), flush=True)
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    with subprocess.Popen([str(BIN / "nbgrader"), *args], cwd=course, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, encoding="utf-8", errors="replace") as process:
        lines = []
        for line in process.stdout:
            lines.append(line)
            if on_line is not None:
                on_line(line)
    result = subprocess.CompletedProcess(process.args, process.returncode, "".join(lines), "")
    if CONFIG_ERROR in result.stdout:       # nbgrader goes on with its defaults: another course, another gradebook
        error = [line for line in result.stdout.splitlines() if line.strip()]
        raise SystemExit(str(Problem(
            f"nbgrader could not load {shown(course / 'nbgrader_config.py')}: "
            f"{next((line.strip() for line in reversed(error) if not line.startswith(' ' * 8)), '?')}",
            f"fix the file (the message above says where), then run again: {nbgrader_command(course, *args)}")))
    return result


def assignments(course: Path, names: list[str] | None = None, folder: str = "source") -> list[str]:
    """The assignments named, checked against ``source/``; all of them when none are named."""
    known = sorted(p.name for p in (course / "source").iterdir() if p.is_dir())
    unknown = [n for n in names or [] if n not in known]
    if unknown:
        raise SystemExit(str(Problem(f"there is no assignment {unknown[0]!r} in {shown(course / 'source')}/",
                                     f"name one of: {' '.join(known)}")))
    return list(names) if names else known


def graded_cells(notebook: Path) -> list[tuple[str, float]]:
    """(grade id, points) of every autograded cell of a notebook."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    meta = [c.get("metadata", {}).get("nbgrader", {}) for c in cells]
    return [(m["grade_id"], float(m.get("points", 0))) for m in meta if m.get("grade")]


def _tail(result: subprocess.CompletedProcess, lines: int = 15) -> str:
    return "\n".join(((result.stdout or "") + (result.stderr or "")).strip().splitlines()[-lines:])


def validate(course: Path, notebooks: list[Path], invert: bool) -> list[tuple[bool, str]]:
    """nbgrader's verdict on each notebook: (as expected?, its output). One nbgrader process
    validates them all (it prints one verdict per notebook); only when some fail is each run
    again alone, to tell which."""
    expected = PASSES_NONE if invert else PASSES_ALL
    flag = ["--invert"] if invert else []
    result = nbgrader(course, "validate", *flag, *(str(nb.relative_to(course)) for nb in notebooks), quiet=True)
    if result.stdout.count(expected) == len(notebooks):
        return [(True, expected)] * len(notebooks)
    verdicts = []
    for nb in notebooks:
        alone = nbgrader(course, "validate", *flag, str(nb.relative_to(course)), quiet=True)
        verdicts.append((expected in alone.stdout, alone.stdout[-4000:].strip()))
    return verdicts


def one_glob(names: list[str], known: list[str]) -> str | None:
    """A pattern of nbgrader's assignment argument (a glob over source/) that matches exactly
    ``names`` among the ``known`` assignments: ``*`` for all, else their common beginning and ``*``;
    None when none does."""
    import fnmatch
    import glob
    if sorted(names) == sorted(n for n in known if not n.startswith(".")):
        return "*"
    pattern = glob.escape(os.path.commonprefix(names)) + "*"
    return pattern if sorted(fnmatch.filter(known, pattern)) == sorted(names) else None


def generate(course: Path, names: list[str]) -> dict[str, str]:
    """nbgrader generate_assignment for ``names``: in one process when one glob names them all (ten
    assignments took 28.8 s one process each, 3.8 s in one), else one process each, as again when
    the one process fails, to tell which. Returns {assignment: nbgrader's output} of those that failed."""
    pattern = one_glob(names, assignments(course)) if len(names) > 1 else None
    if pattern is not None and nbgrader(course, "generate_assignment", pattern, "--force").returncode == 0:
        return {}
    failed = {}
    for name in names:
        result = nbgrader(course, "generate_assignment", name, "--force")
        if result.returncode != 0:
            failed[name] = _tail(result)
    return failed


def release(course: Path, names: list[str] | None = None) -> list[dict]:
    """Generate the releases, then validate every source (full marks) and every release (zero).

    Returns one record per notebook and kind (``source``/``release``): assignment, notebook,
    kind, ok, points (the notebook's total), cells (graded cells) and nbgrader's output."""
    names = assignments(course, names)
    records = [dict(assignment=name, notebook=None, kind="generate", ok=False, points=0, cells=0, output=output)
               for name, output in generate(course, names).items()]
    groups = {kind: [nb for name in names for nb in sorted((course / kind / name).glob("*.ipynb"))]
              for kind in ("source", "release")}
    print("$ " + nbgrader_command(course, "validate", *(str(nb.relative_to(course)) for nb in groups["source"])))
    print("$ " + nbgrader_command(course, "validate", "--invert",
                                  *(str(nb.relative_to(course)) for nb in groups["release"])), flush=True)
    with ThreadPoolExecutor(max_workers=2) as pool:     # the two lists at once: each kernel is mostly waiting on imports
        verdicts = dict(zip(groups, pool.map(lambda kind: validate(course, groups[kind], kind == "release"), groups)))
    for kind, notebooks in groups.items():
        for nb, (ok, output) in zip(notebooks, verdicts[kind]):
            name = nb.parent.name
            cells = graded_cells(course / "source" / name / nb.name)
            records.append(dict(assignment=name, notebook=nb.name, kind=kind, ok=ok, points=sum(p for _, p in cells),
                                cells=len(cells), output=output))
    for name in names:
        if not list((course / "release" / name).glob("*.ipynb")):
            records.append(dict(assignment=name, notebook=None, kind="release", ok=False, points=0, cells=0,
                                output=f"no released notebook in {course / 'release' / name}"))
    for r in sorted(records, key=lambda r: (r["assignment"], r["kind"] != "source")):
        if r["ok"]:
            score = r["points"] if r["kind"] == "source" else 0
            print(f"  {r['assignment']}/{r['notebook']}: {r['kind']} scores {score:g} of {r['points']:g} "
                  f"({r['cells']} graded cells)")
        else:
            print(f"PROBLEM {r['assignment']}/{r['notebook']} ({r['kind']}):\n{r['output'][-3000:]}", file=sys.stderr)
    return records



# --------------------------------------------------------------------------- autograde: what was handed in

def _visible(folder: Path) -> list[Path]:
    """The entries of ``folder`` a teacher put there: not hidden (.ipynb_checkpoints, .DS_Store), no __MACOSX."""
    return sorted(p for p in folder.iterdir() if not p.name.startswith(".") and p.name != "__MACOSX")


def _is_notebook_name(name: str) -> bool:
    return name.lower().endswith(".ipynb")


def course_config(course: Path):
    """The course's nbgrader_config.py, as nbgrader loads it."""
    from traitlets.config.loader import PyFileConfigLoader
    try:
        return PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    except Exception as error:      # noqa: BLE001 - any error of the teacher's config file
        raise SystemExit(str(Problem(f"{shown(course / 'nbgrader_config.py')} does not load: "
                                     f"{type(error).__name__}: {error}",
                                     "fix the file, then run the same command again"))) from None


@contextmanager
def gradebook(course: Path):
    """nbgrader's gradebook of the course, as nbgrader_config.py names it (course id and database)."""
    from nbgrader.api import Gradebook
    config = course_config(course).CourseDirectory
    db_url = config.db_url if "db_url" in config else f"sqlite:///{course / 'gradebook.db'}"
    with Gradebook(db_url, config.course_id if "course_id" in config else "default_course") as gb:
        yield gb


def read_roster(course: Path, again: str) -> tuple[dict[str, dict], list[Problem]]:
    """``students.csv`` of the course, if there is one: id → first_name, last_name, email (those
    given). Any platform's class list is read as exported (classroom/tools/roster.py: UTF-8 ± BOM, UTF-16,
    CP949/EUC-KR; Korean or English headers); a whole name in one column goes into nbgrader's
    last_name as it is, never split."""
    from classroom.tools import roster as rosters
    path = course / "students.csv"
    if not path.exists():
        return {}, []
    try:
        students = rosters.read(path)[0]
    except rosters.RosterError as error:
        return {}, [Problem(f"{error}: its students are left out",
                            "write it again from the platform's class list (make roster FILE=<export>), or make "
                            f"its first row  id,name,email  (only id is required), then run: {again}")]
    return {s.id: {key: value for key, value in (("first_name", s.first_name), ("last_name", s.last_name or s.name),
                                                 ("email", s.email)) if value} for s in students}, []


def survey(course: Path, known: list[str], released: dict[str, list[str]],
           again: str) -> tuple[dict[tuple[str, str], Path], list[str], list[Problem]]:
    """What ``submitted/`` holds: the folders of released assignments by (student, assignment),
    the students (every folder of ``submitted/``), and what is in the wrong place."""
    submitted = course / "submitted"
    example = f"{shown(submitted)}/kim_sumin/{(sorted(released) or known)[0]}/"
    if not submitted.is_dir() or not any(p.is_dir() for p in _visible(submitted)):
        what = "no folder" if not submitted.is_dir() else "no student's folder in"
        return {}, [], [Problem(f"there is {what} {shown(submitted)}/: nothing to grade",
                                f"put each notebook at {shown(submitted)}/<student id>/<assignment>/, e.g. "
                                f"{example}, then run: {again}")]
    folders, students, problems = {}, [], []
    for entry in _visible(submitted):
        if entry.is_file():
            if _is_notebook_name(entry.name):
                problems.append(Problem(f"{shown(entry)} is not in a student's folder",
                                        f"move it to {shown(submitted)}/<student id>/<assignment>/, then run: {again}"))
            continue
        student = entry.name
        students.append(student)
        inside = _visible(entry)
        if not inside:
            problems.append(Problem(f"{shown(entry)}/ is empty",
                                    f"put the student's notebook in {shown(entry)}/<assignment>/, e.g. "
                                    f"{shown(entry)}/{(sorted(released) or known)[0]}/, or delete the folder, "
                                    f"then run: {again}", student))
        for item in inside:
            if item.is_file():
                if _is_notebook_name(item.name):
                    stem = re.sub(r"\s*\(\d+\)$", "", item.name[:-len(".ipynb")])
                    homes = [a for a, notebooks in released.items() if stem in notebooks]
                    problems.append(Problem(f"{item.name} is directly in {shown(entry)}/, not in an assignment's folder",
                                            f"move it into {shown(entry)}/<assignment>/ "
                                            f"({' or '.join(homes or sorted(released))}), then run: {again}",
                                            student, None, tuple(homes)))
            elif item.name not in known:
                near = [a for a in known if a.startswith(item.name) or item.name.startswith(a)]
                problems.append(Problem(f"{shown(item)}/ is not an assignment of this course",
                                        f"rename the folder to the assignment it holds ({' or '.join(near or known)}), "
                                        f"then run: {again}", student, item.name, tuple(near)))
            elif item.name not in released:
                twins = tuple(a for a in released if a.rsplit("_", 1)[0] == item.name.rsplit("_", 1)[0])
                problems.append(Problem(f"{item.name} was never released, so nbgrader has nothing to grade it against",
                                        f"release it first: {classroom_command('release', course, [item.name])}; "
                                        f"then run: {again}", student, item.name, twins))
            else:
                folders[(student, item.name)] = item
    return folders, students, problems


def not_a_notebook(path: Path) -> str | None:
    """Why nbgrader cannot read ``path`` as a notebook, in a few words; None when it can."""
    import nbformat
    data = path.read_bytes()
    if not data.strip():
        return "the file is empty"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "it is not a text file (a zip, a PDF or another format?)"
    if text.lstrip().startswith("<"):
        return "it is a web page, not a notebook (saved with the browser's Save Page?)"
    try:
        content = json.loads(text)
    except json.JSONDecodeError as error:
        cut = " (the file ends too early: cut short?)" if error.pos >= len(text.rstrip()) else ""
        return f"it is not JSON: {error.msg} at line {error.lineno}, column {error.colno}{cut}"
    if not isinstance(content, dict) or "cells" not in content:
        return "it is JSON, but not a Jupyter notebook (no cells)"
    try:
        nbformat.reads(text, as_version=4)
    except Exception as error:      # noqa: BLE001 - nbformat's errors have no common base
        return f"nbformat cannot read it: {str(error).splitlines()[0] if str(error) else type(error).__name__}"
    return None


def check_submission(folder: Path, notebooks: list[str], again: str) -> tuple[str, str] | None:
    """(cause, remedy) when the notebooks of a submission are not there under their released names,
    or are not notebooks; None when nbgrader can grade it."""
    files = [p.name for p in _visible(folder) if p.is_file() and p.name != "timestamp.txt"]
    for name in notebooks:
        wanted = f"{name}.ipynb"
        if wanted not in files:
            others = {f"{n}.ipynb" for n in notebooks}
            candidates = [f for f in files if f not in others and (_is_notebook_name(f) or name.lower() in f.lower())]
            if len(candidates) == 1:
                return (f"`{candidates[0]}` is not graded: this file must be named `{wanted}`",
                        f"rename {shown(folder / candidates[0])} to {wanted}, then run: {again}")
            if candidates:
                return (f"no `{wanted}`, but {len(candidates)} files that may be it: "
                        f"{', '.join(f'`{c}`' for c in candidates)}",
                        f"keep the one to grade, named {wanted}, and move the others out of {shown(folder)}/, "
                        f"then run: {again}")
            holds = f" (it holds: {', '.join(files)})" if files else ""
            return (f"no notebook in {shown(folder)}/{holds}",
                    f"put the student's {wanted} there, then run: {again}")
        reason = not_a_notebook(folder / wanted)
        if reason:
            return (f"{wanted} is not a notebook: {reason}",
                    f"ask the student for the notebook again (in Jupyter: File > Download), put it at "
                    f"{shown(folder / wanted)}, then run: {again}")
    return None


def stamp(folder: Path, notebooks: list[str]) -> None:
    """Give the submission a ``timestamp.txt``, which nbgrader reads as the time it was handed in
    (the ``timestamp`` of grades.csv; without it, that is empty): the modification time of its
    newest notebook, in UTC. A ``timestamp.txt`` from elsewhere (nbgrader's exchange, the teacher)
    is kept; one written here is rewritten when the notebook has changed since. Ours are the ones
    whose own modification time is the time they hold."""
    path = folder / "timestamp.txt"
    mtime = max((folder / f"{name}.ipynb").stat().st_mtime for name in notebooks)
    if path.exists():
        try:
            held = datetime.strptime(path.read_text(encoding="utf-8").strip(), TIMESTAMP_FORMAT)
        except (ValueError, UnicodeDecodeError):
            return
        held = held.replace(tzinfo=timezone.utc).timestamp()
        if abs(path.stat().st_mtime - held) > 2 or abs(held - mtime) < 1e-3:
            return
    try:
        path.write_text(datetime.fromtimestamp(mtime, timezone.utc).strftime(TIMESTAMP_FORMAT) + "\n",
                        encoding="utf-8")
        os.utime(path, (mtime, mtime))
    except OSError:         # a read-only copy of the submissions: no timestamp, as with nbgrader alone
        pass


def register_students(course: Path, roster: dict[str, dict], students: list[str]) -> list[str]:
    """Put every student of ``submitted/`` and of ``students.csv`` in the gradebook (with the
    names and e-mail of students.csv); returns their ids, sorted."""
    ids = sorted(set(students) | set(roster))
    with gradebook(course) as gb:
        for student in ids:
            gb.update_or_create_student(student, **roster.get(student, {}))
    return ids


def _grading_failure(course: Path, log: str, assignment: str, student: str, timeout: int | None,
                     again: str) -> tuple[str, str]:
    """(cause, remedy) of a submission nbgrader failed on, from its log."""
    marker = f"There was an error processing assignment: {course / 'submitted' / student / assignment}"
    block = log.split(marker, 1)[1] if marker in log else ""
    block = re.split(r"\n\[\w+App \| (?:INFO|WARNING)\]", block, maxsplit=1)[0]
    errors = re.findall(r"^\s*([\w.]*(?:Error|Exception|Interrupt)): (.*)$", block, flags=re.MULTILINE)
    name, message = errors[-1] if errors else ("", "")
    folder = shown(course / "submitted" / student / assignment)
    if name.endswith(("CellTimeoutError", "DeadKernelError")) or "Timeout" in name:
        limit = timeout or course_config(course).Execute.get("timeout")
        cell = re.search(r"-{5,}\n\s*(\S[^\n]*)", block)
        where = f" in the cell that starts `{cell.group(1).strip()[:60]}`" if cell else ""
        return (f"the notebook's code did not stop when interrupted after the {f'{limit} s' if limit else 'time'} "
                f"per cell{where} (a loop that catches the interrupt, e.g. a bare `except:`?): nothing graded",
                f"read {folder}/; grade it by hand, or have it fixed and run: {again}")
    said = f"{name.rsplit('.', 1)[-1]}: {message[:200]}" if name else "its log says why"
    return (f"nbgrader could not grade it: {said}",
            f"see nbgrader's whole message: {nbgrader_command(course, 'autograde', assignment, '--student', student)}")


def _released_text(source: str) -> str:
    """A read-only cell's text as released: nbgrader's ClearHiddenTests applied to the source."""
    from nbformat.notebooknode import NotebookNode
    from nbgrader.preprocessors import ClearHiddenTests
    cell = NotebookNode(source=source, cell_type="code", metadata={})
    ClearHiddenTests()._remove_hidden_test_region(cell)
    return cell.source


def changed_cells(gb, folder: Path, assignment: str, name: str) -> list[dict]:
    """What the student changed of the read-only cells of notebook ``name`` (nbgrader restores
    them before grading), as grading notes (classroom/tools/grading_notes.py): edited, put_back, deleted."""
    cells = json.loads((folder / f"{name}.ipynb").read_text(encoding="utf-8")).get("cells", [])
    by_id = {c.get("metadata", {}).get("nbgrader", {}).get("grade_id"): c for c in cells}
    notebook = gb.find_notebook(name, assignment)
    graded = {cell.name for cell in notebook.grade_cells}
    found = {"edited": [], "put_back": [], "deleted": []}
    for cell in notebook.source_cells:
        if not cell.locked:
            continue
        if cell.name not in by_id:
            found["put_back" if cell.name in graded else "deleted"].append(cell.name)
            continue
        text = by_id[cell.name].get("source", "")
        text = "".join(text) if isinstance(text, list) else text
        if text not in (cell.source, _released_text(cell.source)):
            found["edited"].append(cell.name)
    return [{"kind": kind, "cells": cells} for kind, cells in found.items() if cells]


def grading_notes_of(course: Path, gb, folder: Path, student: str, assignment: str, notebooks: list[str],
                     timeout: int | None) -> list[dict]:
    """The grading notes of a graded submission (a cell stopped at the time limit, a call to the
    reference implementation, read-only cells edited or deleted), stored in each autograded
    notebook for its feedback page."""
    seconds = timeout or course_config(course).Execute.get("timeout")
    every = []
    for name in notebooks:
        path = course / "autograded" / student / assignment / f"{name}.ipynb"
        notes = grading_notes.from_outputs(json.loads(path.read_text(encoding="utf-8")), seconds)
        notes += changed_cells(gb, folder, assignment, name)
        grading_notes.store(path, notes)
        every += notes
    return every


def _number(x: float) -> str:
    return f"{x:g}"


def _local(timestamp: datetime | None) -> str:
    """nbgrader's timestamp (naive UTC) in the local time of this computer."""
    if timestamp is None:
        return ""
    return timestamp.replace(tzinfo=timezone.utc).astimezone().strftime("%Y-%m-%d %H:%M:%S")


@dataclass
class Grades:
    """What ``autograde`` did: the CSV written (None when nothing was graded), its rows and the problems."""
    path: Path | None
    rows: list[dict]
    problems: list[Problem]
    logs: dict[str, str] = field(default_factory=dict)     # nbgrader autograde's output, by assignment


def write_grades(path: Path, rows: list[dict]) -> None:
    """grades.csv: comma-separated, UTF-8 with a byte order mark (Excel reads a CSV without one in
    the computer's own code page, which garbles Korean names; LibreOffice, Google Sheets, Numbers
    and pandas read it as UTF-8 either way), CRLF line ends (RFC 4180). A score is empty unless
    the status is "graded"."""
    with path.open("w", newline="", encoding="utf-8-sig") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)


def autograde(course: Path, names: list[str] | None = None, timeout: int | None = None,
              force: bool = False) -> Grades:
    """Check and autograde every submission, write grades.csv; see the module's docstring."""
    known = assignments(course)
    names = assignments(course, names) if names else []
    again = classroom_command("autograde", course, names, force, timeout)
    if not (course / "gradebook.db").exists():
        raise SystemExit(str(Problem(f"there is no gradebook in {shown(course)}/: no assignment was released",
                                     f"release the assignments first: {classroom_command('release', course, names)}")))
    with gradebook(course) as gb:
        released = {a.name: sorted(n.name for n in a.notebooks) for a in gb.assignments if a.notebooks}
    roster, problems = read_roster(course, again)
    folders, students, found = survey(course, known, released, again)
    targets = names or sorted({a for _, a in folders})
    problems += [Problem(f"{name} was never released, so nbgrader has nothing to grade it against",
                         f"release it first: {classroom_command('release', course, [name])}; then run: {again}",
                         None, name) for name in targets if name not in released]
    targets = [name for name in targets if name in released]
    problems += [p for p in found   # naming assignments leaves out what is about the others
                 if not names or (p.assignment is None and not p.maybe) or {p.assignment, *p.maybe} & set(targets)]
    bad = {}
    for (student, name), folder in sorted(folders.items()):
        if name in targets:
            issue = check_submission(folder, released[name], again)
            if issue:
                bad[(student, name)] = Problem(*issue, student, name)
                problems.append(bad[(student, name)])
            else:
                stamp(folder, released[name])
    ids = register_students(course, roster, students)
    logs = {}
    extra = ([f"--Execute.timeout={timeout}"] if timeout else []) + (["--force"] if force else [])
    failed = _failures(course)
    for name in targets:
        if not any(a == name for _, a in folders):
            continue
        # A submission nbgrader failed on (a kernel that ignores the interrupt costs the whole timeout and more) is
        # not tried again while it is unchanged, unless forced; it stays a PROBLEM, said so.
        for (student, a) in folders:
            record = failed.get(f"{student}/{name}")
            held = _held(course, "submitted", student, name)
            if a == name and record and (student, name) not in bad and not force \
                    and held is not None and record["handed_in"] == str(held):
                retry = classroom_command("autograde", course, names, True, timeout)
                bad[(student, name)] = Problem(record["cause"] + " (not tried again: unchanged since it failed)",
                                               f"{record['remedy']}; to try it as it is: {retry}", student, name)
                problems.append(bad[(student, name)])
        pending = [s for (s, a) in folders if a == name and (s, name) not in bad
                   and (force or _needs_grading(course, s, name, released[name]))]
        if not pending:
            print(f"  {name}: every submission is graded and unchanged since (FORCE=1 grades them again)")
            continue
        # what is already a PROBLEM (no notebook, not a notebook, misnamed) nbgrader would only fail on again
        skip = sorted(s for (s, a) in bad if a == name and "," not in s)
        exclude = [f"--CourseDirectory.student_id_exclude={','.join(skip)}"] if skip else []
        progress = Progress(name, len(pending))
        result = nbgrader(course, "autograde", name, *extra, *exclude, on_line=progress.line)
        progress.done()
        logs[name] = result.stdout
        failures = [(a, s) for a, s in GRADING_ERROR.findall(result.stdout) if a == name]
        if result.returncode != 0 and not failures:
            raise SystemExit(str(Problem(f"nbgrader autograde {name} failed:\n{_tail(result)}",
                                         f"fix what the message above says, then run: {again}")))
        for student in pending:
            failed.pop(f"{student}/{name}", None)
        for _, student in failures:
            if (student, name) not in bad:
                bad[(student, name)] = Problem(*_grading_failure(course, result.stdout, name, student, timeout, again),
                                               student, name)
                problems.append(bad[(student, name)])
                failed[f"{student}/{name}"] = {"handed_in": str(_held(course, "submitted", student, name)),
                                               "cause": bad[(student, name)].cause,
                                               "remedy": bad[(student, name)].remedy}
    _remember_failures(course, failed)
    problems.sort(key=lambda p: (p.student is not None, p.student or "", p.assignment or ""))
    if not targets:
        print(f"nothing graded: {shown(course / 'grades.csv')} not written")
        for problem in problems:
            print(problem)
        return Grades(None, [], problems, logs)
    rows = []
    with gradebook(course) as gb:
        for name in targets:
            maximum = gb.find_assignment(name).max_score
            for student in ids:
                person = gb.find_student(student)
                row = dict(assignment=name, student_id=student, last_name=person.last_name or "",
                           first_name=person.first_name or "", email=person.email or "", status="graded",
                           score="", max_score=_number(maximum), timestamp="", note="")
                folder = folders.get((student, name))
                done = folder is not None and all(
                    (course / "autograded" / student / name / f"{nb}.ipynb").exists() for nb in released[name])
                misplaced = [p for p in problems if p.student == student and name in p.maybe]
                if folder is None and misplaced:
                    row["status"], row["note"] = "not graded", misplaced[0].cause
                elif folder is None:
                    row["status"] = "not submitted"
                elif (student, name) in bad or not done:
                    row["status"] = "not graded"
                    row["note"] = bad[(student, name)].cause if (student, name) in bad else \
                        "nbgrader wrote no autograded notebook"
                else:
                    submission = gb.find_submission(name, student)
                    notes = grading_notes_of(course, gb, folder, student, name, released[name], timeout)
                    row.update(score=_number(submission.score), timestamp=_local(submission.timestamp),
                               note="; ".join(map(grading_notes.describe, notes)))
                rows.append(row)
    path = course / "grades.csv"
    write_grades(path, rows)
    report(path, rows, problems)
    return Grades(path, rows, problems, logs)


def _held(course: Path, root: str, student: str, assignment: str):
    """The time a ``timestamp.txt`` of ``root/student/assignment`` holds (None when there is none or it is unreadable)."""
    from nbgrader.utils import parse_utc
    path = course / root / student / assignment / "timestamp.txt"
    try:
        return parse_utc(path.read_text(encoding="utf-8").strip()) if path.exists() else None
    except (ValueError, UnicodeDecodeError):
        return None


def _needs_grading(course: Path, student: str, assignment: str, notebooks: list[str]) -> bool:
    """Whether nbgrader autograde grades this submission without --force: as nbgrader decides it, when
    an autograded notebook is missing or the submission is newer than what was graded."""
    if not all((course / "autograded" / student / assignment / f"{nb}.ipynb").exists() for nb in notebooks):
        return True
    new, old = _held(course, "submitted", student, assignment), _held(course, "autograded", student, assignment)
    return new is not None and old is not None and new > old


FAILURES = ".classroom-failures.json"      # in autograded/: what nbgrader failed on, and when it was handed in


def _failures(course: Path) -> dict[str, dict]:
    path = course / "autograded" / FAILURES
    try:
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (ValueError, UnicodeDecodeError):
        return {}


def _remember_failures(course: Path, failed: dict[str, dict]) -> None:
    path = course / "autograded" / FAILURES
    if failed:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(failed, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    elif path.exists():
        path.unlink()


class Progress:
    """A line per student as nbgrader autograde finishes each (it is silent for minutes otherwise):
    ``[3/12] kim_sumin: 14 s``, and when a cell of it ran past the time limit, that too."""
    STARTS = re.compile(r"Creating/updating student with ID '([^']+)'")
    TIMEOUT = re.compile(r"Timeout waiting for execute reply|CellTimeoutError|Cell execution timed out")
    KILLED = re.compile(r"did not stop when interrupted")      # classroom/tools/grading_execute.py killed its kernel

    def __init__(self, assignment: str, expected: int):
        self.assignment, self.expected, self.count = assignment, expected, 0
        self.student, self.started, self.timed_out, self.killed = None, 0.0, False, False

    def line(self, text: str) -> None:
        m = self.STARTS.search(text)
        if m:
            self.done()
            self.student, self.started, self.timed_out, self.killed = m.group(1), time.monotonic(), False, False
        elif self.student and self.KILLED.search(text):
            self.killed = True
        elif self.student and self.TIMEOUT.search(text):
            self.timed_out = True

    def done(self) -> None:
        if self.student is None:
            return
        self.count += 1
        total = max(self.expected, self.count)
        note = ": a cell ran past the time limit and was stopped" if self.timed_out else ""
        if self.killed:
            note += "; it ignored the interrupt: its kernel was killed, the cells before run again and the rest graded"
        print(f"  [{self.count}/{total}] {self.assignment} {self.student}: "
              f"{time.monotonic() - self.started:.0f} s{note}", flush=True)
        self.student = None


def report(path: Path, rows: list[dict], problems: list[Problem]) -> None:
    """One line per student and assignment (score / maximum, or why not), the problems, then the
    counts of the file."""
    width = max(len(r["student_id"]) for r in rows)
    for name in dict.fromkeys(r["assignment"] for r in rows):
        mine = [r for r in rows if r["assignment"] == name]
        print(f"\n{name}, out of {mine[0]['max_score']} points:")
        for r in mine:
            if r["status"] == "graded":
                result = f"{r['score']:>4} / {r['max_score']}" + (f"   ({r['note']})" if r["note"] else "")
            elif r["status"] == "not graded":
                result = "   not graded: see PROBLEM below"
            else:
                result = "   not submitted"
            print(f"  {r['student_id']:<{width}}  {result}")
    if problems:
        print()
    for problem in problems:
        print(problem)
    count = {status: sum(r["status"] == status for r in rows) for status in STATUSES}
    assignments_ = list(dict.fromkeys(r["assignment"] for r in rows))
    students = len({r["student_id"] for r in rows})
    print(f"\n{shown(path)}: {len(rows)} rows, {students} students x {len(assignments_)} "
          f"assignment{'s' * (len(assignments_) != 1)} ({', '.join(assignments_)}): "
          + ", ".join(f"{count[s]} {s}" for s in STATUSES)
          + (f"; {len(problems)} problem{'s' * (len(problems) != 1)} above" if problems else ""))


def _pages(course: Path) -> dict[Path, bytes]:
    return {p: hashlib.sha256(p.read_bytes()).digest() for p in sorted((course / "feedback").glob("*/*/*.html"))}


def feedback(course: Path, names: list[str] | None = None, force: bool = False) -> list[Path]:
    """Feedback HTML for every autograded submission; returns the pages written. Says which pages
    are new or changed since the last run (nbgrader rewrites only those regraded, or all with --force)."""
    before = _pages(course)
    for name in assignments(course, names):
        if not any((course / "autograded").glob(f"*/{name}")):
            continue
        result = nbgrader(course, "generate_feedback", name, *(["--force"] if force else []))
        if result.returncode != 0:
            print(f"  {nbgrader_command(course, 'generate_feedback', name)} reported a problem:\n{_tail(result)}")
    after = _pages(course)
    new = [p for p in after if p not in before]
    changed = [p for p in after if p in before and before[p] != after[p]]
    for label, pages in (("new", new), ("changed", changed)):
        for page in pages:
            print(f"  {label}: {shown(page)}")
    print(f"{len(after)} feedback pages under {shown(course / 'feedback')}/<student>/<assignment>/: "
          f"{len(new)} new, {len(changed)} changed, {len(after) - len(new) - len(changed)} as before")
    for name in assignments(course, names):
        for line in without_page(course, name):
            print(f"  {line}")
    return sorted(after)


def without_page(course: Path, assignment: str) -> list[str]:
    """The students of ``assignment`` in grades.csv who handed something in and have no feedback page,
    with why (a line to print; none when every one has a page)."""
    path = course / "grades.csv"
    if not path.exists():
        return []
    with path.open(encoding="utf-8-sig", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r.get("assignment") == assignment and r.get("status") != "not submitted"]
    lacking = [r for r in rows if not any((course / "feedback" / r["student_id"] / assignment).glob("*.html"))]
    if not lacking:
        return []
    return [f"{assignment}: no feedback page for {len(lacking)} who handed something in: " + "; ".join(
        f"{r['student_id']} ({'not graded: ' + r['note'] if r['status'] == 'not graded' else 'graded; run make feedback'})"
        for r in lacking) + ". Tell them yourself"]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("release", "autograde", "feedback"))
    parser.add_argument("assignments", nargs="*", help="assignment names (folders of source/); all by default")
    parser.add_argument("--course", type=Path, default=COURSE, help="the course folder (default: classroom/course/)")
    parser.add_argument("--timeout", type=int, help="seconds per cell when autograding (default: nbgrader_config.py)")
    parser.add_argument("--force", action="store_true", help="redo submissions already autograded / feedback written")
    args = parser.parse_intermixed_args(argv)
    course = args.course.resolve()
    if not (course / "nbgrader_config.py").exists():
        parser.error(f"{course} is not a course folder: it has no nbgrader_config.py")
    if args.command == "release":
        return 0 if all(r["ok"] for r in release(course, args.assignments)) else 1
    if args.command == "autograde":
        problems = autograde(course, args.assignments, args.timeout, args.force).problems
        if problems:
            print(f"\nexit status 1: {len(problems)} problem{'s' * (len(problems) != 1)} above need{'s' * (len(problems) == 1)} "
                  "you (each with what to do); not a crash: everything else is graded and in grades.csv")
        return 1 if problems else 0
    feedback(course, args.assignments, args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
