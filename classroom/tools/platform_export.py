"""Grades and feedback back onto the learning platform: what ``make grades-export`` and
``make feedback-export`` run.

    python -m classroom.tools.platform_export grades   PLATFORM ASSIGNMENT [--missing empty|zero] [--column NAME] [--section 01,02]
    python -m classroom.tools.platform_export feedback PLATFORM ASSIGNMENT

Grades come from ``grades.csv`` (``make autograde``), the students' platform details from
``students.csv`` (``make roster``) and, for file prefixes, from ``collected/<assignment>/platform.csv``
(``make collect``). Everything is written under ``export/`` of the course folder; each file's name
says the platform, and for grades, how a student who handed nothing in is counted:

* ``moodle``: a CSV for Moodle's "Import grades → CSV file", keyed by ``ID number`` (the student's
  id), the grade in a column named after the assignment (or ``--column``);
* ``canvas``: the layout of Canvas's gradebook export, which its gradebook import takes back:
  ``Student, ID, SIS User ID, SIS Login ID, Section`` and the assignment's column. Name the
  column as Canvas's export does (``Assignment 1 (12345)``) to fill that assignment; any other
  name makes Canvas create a new assignment;
* ``simple``: ``학번,점수`` for a Korean assignment, ``id,score`` for an English one (UTF-8 with a
  byte order mark, as Excel opens it), what many Korean platforms upload;
* feedback (``moodle``, ``canvas``, ``google``, ``simple``): the feedback pages (written first where
  missing or out of date, as ``make feedback`` does), in one zip, each named with the student's file
  prefix from the platform's own download, as Moodle's "Upload
  multiple feedback files in a zip" and Canvas's "Re-upload submissions" match them.

A grade file holds the platform's students only (students.csv's ``platform`` column, or collected
from that platform's download; every student, with a warning, when nothing says who is on it), or
those of ``--section``: Moodle's import stops at the first ID number it does not know. A row that
would clear a grade typed in the platform is left out: a "not graded" submission (a problem of
``make autograde``) always, one "not submitted" unless ``--missing zero``; how many, and why, is
printed. Canvas's ``ID`` and ``SIS Login ID`` come from students.csv (Canvas's export merged in),
else from the prefix of its download.
"""

from __future__ import annotations

import argparse
import csv
import io
import re
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    # run as a script (python classroom/tools/classroom.py, as the Makefile does): Python put this folder
    # first on the path, where this very file would pass for the package ``classroom``; the repository's
    # root stands there instead, so that ``classroom.tools`` is the classroom's tools
    sys.path[0] = str(ROOT)
elif str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from book.tools.bilingual import assignment_language  # noqa: E402
from classroom.tools import classroom, collect, roster  # noqa: E402

COURSE = ROOT / "classroom" / "course"
GRADE_PLATFORMS = ("moodle", "canvas", "simple")
FEEDBACK_PLATFORMS = ("moodle", "canvas", "google", "simple")
PLATFORM_LABEL = {"moodle": "Moodle", "canvas": "Canvas", "google": "Google Classroom", "simple": "a plain folder"}
MISSING = {"empty": "", "zero": "0"}
ZIP_TIME = (2020, 1, 1, 0, 0, 0)       # every entry's time: the same pages give the same zip


class ExportError(SystemExit):
    pass


def _problem(cause: str, remedy: str) -> ExportError:
    return ExportError(f"PROBLEM {cause}\n  what to do: {remedy}")


def grade_rows(course: Path, assignment: str) -> list[dict]:
    """grades.csv's rows of ``assignment``."""
    path = course / "grades.csv"
    if not path.exists():
        raise _problem(f"there is no {collect.shown(path)}: nothing was graded yet",
                       f"grade first: make autograde ASSIGNMENTS={assignment}")
    with path.open(encoding="utf-8-sig", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r.get("assignment") == assignment]
    if not rows:
        raise _problem(f"{collect.shown(path)} has no grades of {assignment} (it holds the assignments of the last "
                       "make autograde)", f"grade it: make autograde ASSIGNMENTS={assignment}")
    return rows


def _roster(course: Path) -> dict[str, roster.Student]:
    return {s.id: s for s in collect.load_roster(course)}


def _canvas_number(prefix: str) -> str:
    """Canvas's user number from a file prefix of its download (``kimsumin_12345_67890_``)."""
    m = collect.Canvas()._match(prefix + "x")
    return (m or {}).get("student_id") or ""


def _sections(text: str | None) -> set[str]:
    """SECTION="01,02" → {"1", "2"}: a section named with or without leading zeros."""
    return {part.strip().lstrip("0") or "0" for part in re.split(r"[,\s]+", text or "") if part.strip()}


def who_is_on(course: Path, platform: str, assignment: str, students: dict[str, roster.Student],
              seen: dict[str, dict]) -> tuple[set[str] | None, str]:
    """The students of ``platform`` (students.csv's platform column, or collected from its download), and how
    that is known; None when nothing says who is on it."""
    if platform not in roster.PLATFORMS:
        return None, ""
    label = PLATFORM_LABEL[platform]
    listed = {sid for sid, s in students.items() if platform in s.platforms}
    collected = {sid for sid, row in seen.items() if row.get("platform") == label}
    if not listed and not collected:
        return None, ""
    how = " and ".join(filter(None, [f"{len(listed)} on {label} in students.csv" if listed else "",
                                     f"{len(collected)} collected from {label}'s download" if collected else ""]))
    return listed | collected, how


def grades_table(course: Path, platform: str, assignment: str, missing: str = "empty",
                 column: str | None = None, section: str | None = None) -> tuple[list[list[str]], list[str]]:
    """(the rows of the file, header first; what was left out and other notes) for ``platform``."""
    table, left, warnings = _grades(course, platform, assignment, missing, column, section)
    return table, [f"left out, {why} ({len(ids)}): {', '.join(ids)}" for why, ids in left.items()] + warnings


def _grades(course: Path, platform: str, assignment: str, missing: str, column: str | None,
            section: str | None) -> tuple[list[list[str]], dict[str, list[str]], list[str]]:
    """(the rows of the file, header first; the rows left out, each reason with its students; other notes)."""
    if platform not in GRADE_PLATFORMS:
        raise _problem(f"no grade format for {platform!r}", f"name one of: {', '.join(GRADE_PLATFORMS)}")
    if missing not in MISSING:
        raise _problem(f"--missing must be empty or zero, not {missing!r}", "say how a student who handed nothing "
                       "in is counted: empty (no grade: the row is left out) or zero")
    rows, students, seen = grade_rows(course, assignment), _roster(course), collect.manifest(course, assignment)
    warnings = []
    column = column or assignment
    if platform == "simple":
        table = [["학번", "점수"] if assignment_language(assignment) == "ko" else ["id", "score"]]
    elif platform == "moodle":
        table = [["ID number", "Full name", "Email address", column]]
    else:
        table = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", column]]
    on, how = who_is_on(course, platform, assignment, students, seen)
    wanted = _sections(section)
    if wanted and not any(s.section.strip().lstrip("0") in wanted for s in students.values()):
        raise _problem(f"no student of students.csv is in section {section}: its sections are "
                       + (", ".join(sorted({s.section for s in students.values() if s.section})) or "none"),
                       "name one of them, e.g. SECTION=01, or write the sections in with make roster")
    left: dict[str, list[str]] = {}
    for r in sorted(rows, key=lambda r: r["student_id"]):
        sid = r["student_id"]
        s = students.get(sid) or roster.Student(sid, last_name=r.get("last_name", ""),
                                                first_name=r.get("first_name", ""), email=r.get("email", ""))
        if wanted and s.section.strip().lstrip("0") not in wanted:
            left.setdefault(f"not in section {section}", []).append(sid)
            continue
        if on is not None and sid not in on:
            left.setdefault(f"not on {PLATFORM_LABEL[platform]}", []).append(sid)
            continue
        if r["status"] == "graded":
            score = r["score"]
        elif r["status"] == "not submitted" and missing == "zero":
            score = "0"
        elif r["status"] == "not submitted":
            left.setdefault("not submitted (no grade; MISSING=zero gives them 0)", []).append(sid)
            continue
        else:
            left.setdefault("not graded: a grade you type in the platform stays (an empty cell would clear it)",
                            []).append(f"{sid} ({r['note'] or 'see make autograde'})")
            continue
        if platform == "simple":
            table.append([s.id, score])
        elif platform == "moodle":
            table.append([s.id, s.full_name, s.email, score])
        else:
            number = s.canvas_id or _canvas_number(seen.get(s.id, {}).get("prefix", ""))
            table.append([s.full_name, number, s.id, s.canvas_login, s.section, score])
    if on is None and platform in roster.PLATFORMS and not wanted:
        warnings.append(f"nothing says which students are on {PLATFORM_LABEL[platform]} (no {PLATFORM_LABEL[platform]} "
                        "export in students.csv, no download of it collected): every student is written. "
                        + ("Moodle stops the whole import at the first ID number it does not know: " if platform ==
                           "moodle" else "") + "add the platform's class list (make roster FILE=<export> ADD=1) or "
                        "give SECTION=")
    elif on is not None:
        warnings.append(f"the students of {PLATFORM_LABEL[platform]}: {how}")
    if not students:
        warnings.append("there is no students.csv: the ids are those of submitted/ (make roster FILE=<the platform's "
                        "class list> first, so that they are the platform's)")
    if platform == "canvas" and "(" not in column:
        warnings.append(f"the column {column!r} has no Canvas assignment number: Canvas will create a new assignment "
                        "of that name; to fill an existing one, name it as Canvas's export does: "
                        "COLUMN=\"<assignment name> (<number>)\"")
    return table, left, warnings


def write_grades(course: Path, platform: str, assignment: str, missing: str = "empty",
                 column: str | None = None, section: str | None = None) -> Path:
    table, left, warnings = _grades(course, platform, assignment, missing, column, section)
    counted = "0" if missing == "zero" else "empty"
    where = f"_section-{'-'.join(sorted(_sections(section)))}" if section else ""
    path = course / "export" / f"{assignment}_{platform}{where}_grades_not-submitted-{counted}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = io.StringIO()
    csv.writer(text, lineterminator="\r\n").writerows(table)
    path.write_bytes(("\ufeff" if platform == "simple" else "").encode() + text.getvalue().encode("utf-8"))
    target = "a two-column upload (" + ",".join(table[0]) + ")" if platform == "simple" else PLATFORM_LABEL[platform]
    count = sum(len(ids) for ids in left.values())
    print(f"{collect.shown(path)}: {len(table) - 1} students, for {target}; "
          + ("not submitted counted as 0" if missing == "zero" else "not submitted left out (no grade)")
          + (f"; {count} rows left out:" if count else ""))
    for why, ids in left.items():
        print(f"  left out, {why} ({len(ids)}): {', '.join(ids)}")
    for line in warnings:
        print(f"  note: {line}")
    return path


def feedback_zip(course: Path, platform: str, assignment: str, write_pages: bool = False) -> Path:
    """One zip of the feedback pages, each named with the student's platform prefix; with
    ``write_pages``, the pages are written first where they are missing or out of date."""
    if platform not in FEEDBACK_PLATFORMS:
        raise _problem(f"no feedback format for {platform!r}", f"name one of: {', '.join(FEEDBACK_PLATFORMS)}")
    if write_pages:             # what make feedback does: pages for the students graded since, the others kept
        classroom.feedback(course, [assignment])
    pages = sorted((course / "feedback").glob(f"*/{assignment}/*.html"))
    if not pages:
        raise _problem(f"no feedback page of {assignment} in {collect.shown(course / 'feedback')}/",
                       f"write them first: make feedback ASSIGNMENTS={assignment}")
    seen = collect.manifest(course, assignment)
    path = course / "export" / f"{assignment}_{platform}_feedback.zip"
    path.parent.mkdir(parents=True, exist_ok=True)
    skipped = []
    names = []
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for page in pages:
            student = page.parent.parent.name
            row = seen.get(student)
            if platform == "simple":
                prefix = f"{student}_"
            elif row and row["platform"] == PLATFORM_LABEL[platform] and row["prefix"]:
                prefix = row["prefix"]
            else:
                skipped.append(student)
                continue
            info = zipfile.ZipInfo(prefix + page.name, ZIP_TIME)
            info.compress_type, info.flag_bits = zipfile.ZIP_DEFLATED, 0x800
            archive.writestr(info, page.read_bytes())
            names.append((student, info.filename, page.stat().st_size))
    size = path.stat().st_size
    largest = max((n[2] for n in names), default=0)
    print(f"{collect.shown(path)}: {len(names)} pages, {size / 1e6:.2f} MB (largest page {largest / 1e3:.0f} kB)")
    for student, name, _ in names:
        print(f"  {student}: {name}")
    elsewhere = [s for s in skipped if seen.get(s, {}).get("platform")]
    unknown = [s for s in skipped if s not in elsewhere]
    if elsewhere:
        print(f"  not in the zip, collected from another platform ({len(elsewhere)}): "
              + ", ".join(f"{s} ({seen[s]['platform']})" for s in elsewhere))
    if unknown:
        print(f"  not in the zip ({len(unknown)}): {', '.join(unknown)}: their submissions did not come through "
              f"make collect from a {PLATFORM_LABEL[platform]} download, so their file prefix is unknown; "
              "upload their pages by hand (feedback/<student>/" + assignment + "/), or use PLATFORM=simple")
    for line in classroom.without_page(course, assignment):
        print(f"  {line}")
    return path


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Write grades or feedback in a learning platform's import format.")
    parser.add_argument("what", choices=("grades", "feedback"))
    parser.add_argument("platform", help=f"grades: {', '.join(GRADE_PLATFORMS)}; feedback: {', '.join(FEEDBACK_PLATFORMS)}")
    parser.add_argument("assignment", help="the assignment, e.g. 01_layernorm_ko")
    parser.add_argument("--course", type=Path, default=COURSE)
    parser.add_argument("--missing", default="empty", help="a student who handed nothing in: empty (default) or zero")
    parser.add_argument("--column", help="the grade column's name (Canvas: as its export names it, 'Name (12345)')")
    parser.add_argument("--section", help="grades: only the students of these sections of students.csv (01,02)")
    args = parser.parse_args(argv)
    course = args.course.resolve()
    if not (course / "nbgrader_config.py").exists():
        parser.error(f"{course} is not a course folder: it has no nbgrader_config.py")
    if args.what == "grades":
        write_grades(course, args.platform.lower(), args.assignment, args.missing.lower(), args.column, args.section)
    else:
        feedback_zip(course, args.platform.lower(), args.assignment, write_pages=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
