"""Drive nbgrader for the classroom assignments: what `make assignments-release`, `make autograde`
and `make feedback` run (README, "Classroom").

    python tools/classroom.py release   [ASSIGNMENT ...]  [--course DIR]
    python tools/classroom.py autograde [ASSIGNMENT ...]  [--course DIR] [--timeout SECONDS] [--force]
    python tools/classroom.py feedback  [ASSIGNMENT ...]  [--course DIR] [--force]

Every step is the real nbgrader command line, run inside the course folder (default
``assignments/``, where ``nbgrader_config.py`` and ``gradebook.db`` live) and printed before it
runs. This script only chooses the commands and reads their verdicts:

release
    ``nbgrader generate_assignment NAME --force`` for each assignment (all of ``source/`` by
    default), then ``nbgrader validate`` on the source notebooks (each must pass every graded
    test: full marks) and ``nbgrader validate --invert`` on the released ones (each must pass
    none: zero marks), the two lists side by side. Exit status 1 if any check fails.
autograde
    registers every folder of ``submitted/`` as a student (``nbgrader db student import``, plus
    ``students.csv`` in the course folder if there is one, so that students who submitted nothing
    are listed too), runs ``nbgrader autograde NAME`` for each assignment that has submissions,
    and exports every grade with ``nbgrader export --to grades.csv``. A submission nbgrader
    cannot grade (not a notebook, a kernel that ignores the interrupt) is named and scores 0;
    the others are graded and exported all the same, and the exit status is 1.
feedback
    ``nbgrader generate_feedback NAME``: one HTML page per student and notebook under
    ``feedback/<student>/<assignment>/``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COURSE = ROOT / "assignments"
BIN = Path(sys.executable).parent
PASSES_ALL = "Success! Your notebook passes all the tests."
PASSES_NONE = "Success! The notebook does not pass any tests."
GRADING_ERROR = re.compile(r"There was an error processing assignment '([^']+)' for student '([^']+)'")


def nbgrader(course: Path, *args: str, quiet: bool = False) -> subprocess.CompletedProcess:
    """Run ``nbgrader ARGS`` in ``course``. nbgrader starts ``alembic`` by name, so the
    environment's bin folder goes first on PATH."""
    if not quiet:
        print("$ nbgrader " + " ".join(args), flush=True)
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    return subprocess.run([str(BIN / "nbgrader"), *args], cwd=course, env=env, capture_output=True, text=True,
                          check=False)


def assignments(course: Path, names: list[str] | None = None, folder: str = "source") -> list[str]:
    """The assignments named, checked against ``source/``; all of them when none are named."""
    known = sorted(p.name for p in (course / "source").iterdir() if p.is_dir())
    unknown = [n for n in names or [] if n not in known]
    if unknown:
        raise SystemExit(f"no assignment {unknown[0]!r} in {course / 'source'}; there are: {', '.join(known)}")
    return list(names) if names else known


def graded_cells(notebook: Path) -> list[tuple[str, float]]:
    """(grade id, points) of every autograded cell of a notebook."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    meta = [c.get("metadata", {}).get("nbgrader", {}) for c in cells]
    return [(m["grade_id"], float(m.get("points", 0))) for m in meta if m.get("grade")]


def _tail(result: subprocess.CompletedProcess, lines: int = 15) -> str:
    return "\n".join((result.stdout + result.stderr).strip().splitlines()[-lines:])


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
        verdicts.append((expected in alone.stdout, (alone.stdout + alone.stderr[-2000:]).strip()))
    return verdicts


def release(course: Path, names: list[str] | None = None) -> list[dict]:
    """Generate the releases, then validate every source (full marks) and every release (zero).

    Returns one record per notebook and kind (``source``/``release``): assignment, notebook,
    kind, ok, points (the notebook's total), cells (graded cells) and nbgrader's output."""
    names = assignments(course, names)
    records = []
    for name in names:
        result = nbgrader(course, "generate_assignment", name, "--force")
        if result.returncode != 0:
            records.append(dict(assignment=name, notebook=None, kind="generate", ok=False, points=0, cells=0,
                                output=_tail(result)))
    groups = {kind: [nb for name in names for nb in sorted((course / kind / name).glob("*.ipynb"))]
              for kind in ("source", "release")}
    print(f"$ nbgrader validate {' '.join(str(nb.relative_to(course)) for nb in groups['source'])}")
    print(f"$ nbgrader validate --invert {' '.join(str(nb.relative_to(course)) for nb in groups['release'])}",
          flush=True)
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


def register_students(course: Path) -> list[str]:
    """Put every student of ``submitted/`` (and of ``students.csv``, if present) in the gradebook."""
    submitted = course / "submitted"
    ids = sorted(p.name for p in submitted.iterdir() if p.is_dir()) if submitted.is_dir() else []
    roster = course / "students.csv"
    if roster.exists():
        with roster.open(newline="", encoding="utf-8") as f:
            ids = sorted(set(ids) | {row["id"] for row in csv.DictReader(f) if row.get("id")})
        result = nbgrader(course, "db", "student", "import", "students.csv")
        if result.returncode != 0:
            raise SystemExit(f"nbgrader could not import {roster}:\n{_tail(result)}")
    listed = course / "submitted-students.csv"      # git-ignored, removed again below
    listed.write_text("id\n" + "".join(f"{i}\n" for i in ids), encoding="utf-8")
    try:
        result = nbgrader(course, "db", "student", "import", listed.name)
    finally:
        listed.unlink()
    if result.returncode != 0:
        raise SystemExit(f"nbgrader could not register the students:\n{_tail(result)}")
    return ids


def autograde(course: Path, names: list[str] | None = None, timeout: int | None = None,
              force: bool = False) -> tuple[Path, list[tuple[str, str]]]:
    """Autograde every submission, export grades.csv; returns its path and the (assignment,
    student) pairs nbgrader could not grade."""
    if not (course / "gradebook.db").exists():
        raise SystemExit(f"no gradebook in {course}: release the assignments first (make assignments-release)")
    students = register_students(course)
    names = assignments(course, names)
    submitted = [n for n in names if any((course / "submitted" / s / n).is_dir() for s in students)]
    if not submitted:
        print(f"no submissions under {course / 'submitted'}/<student>/<assignment>/ for {', '.join(names)}")
    failed = []
    extra = ([f"--Execute.timeout={timeout}"] if timeout else []) + (["--force"] if force else [])
    for name in submitted:
        result = nbgrader(course, "autograde", name, *extra)
        broken = GRADING_ERROR.findall(result.stdout + result.stderr)
        if result.returncode != 0 and not broken:
            raise SystemExit(f"nbgrader autograde {name} failed:\n{_tail(result)}")
        failed += broken
    result = nbgrader(course, "export", "--to", "grades.csv")
    if result.returncode != 0:
        raise SystemExit(f"nbgrader export failed:\n{_tail(result)}")
    grades = course / "grades.csv"
    with grades.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    print(f"{len(rows)} grades ({len(students)} students) written to {grades}")
    for name, student in failed:
        print(f"  could not grade {student}/{name}: scored 0; see the log of  nbgrader autograde {name} "
              f"--student {student}")
    return grades, failed


def feedback(course: Path, names: list[str] | None = None, force: bool = False) -> list[Path]:
    """Feedback HTML for every autograded submission; returns the pages written."""
    for name in assignments(course, names):
        if not any((course / "autograded").glob(f"*/{name}")):
            continue
        result = nbgrader(course, "generate_feedback", name, *(["--force"] if force else []))
        if result.returncode != 0:
            print(f"  nbgrader generate_feedback {name} reported a problem:\n{_tail(result)}")
    pages = sorted((course / "feedback").glob("*/*/*.html"))
    print(f"{len(pages)} feedback pages under {course / 'feedback'}/<student>/<assignment>/")
    return pages


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("release", "autograde", "feedback"))
    parser.add_argument("assignments", nargs="*", help="assignment names (folders of source/); all by default")
    parser.add_argument("--course", type=Path, default=COURSE, help="the course folder (default: assignments/)")
    parser.add_argument("--timeout", type=int, help="seconds per cell when autograding (default: nbgrader_config.py)")
    parser.add_argument("--force", action="store_true", help="redo submissions already autograded / feedback written")
    args = parser.parse_intermixed_args(argv)
    course = args.course.resolve()
    if not (course / "nbgrader_config.py").exists():
        parser.error(f"{course} is not a course folder: it has no nbgrader_config.py")
    if args.command == "release":
        return 0 if all(r["ok"] for r in release(course, args.assignments)) else 1
    if args.command == "autograde":
        _, failed = autograde(course, args.assignments, args.timeout, args.force)
        return 1 if failed else 0
    feedback(course, args.assignments, args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
