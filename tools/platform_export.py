"""Grades and feedback back onto the learning platform: what ``make grades-export`` and
``make feedback-export`` run.

    python -m tools.platform_export grades   PLATFORM ASSIGNMENT [--missing empty|zero] [--column NAME]
    python -m tools.platform_export feedback PLATFORM ASSIGNMENT

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

"Not graded" submissions (a problem of ``make autograde``) are left empty and named, never 0.
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from tools import classroom, collect, roster  # noqa: E402
from tools.bilingual import assignment_language  # noqa: E402

COURSE = ROOT / "assignments"
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


def grades_table(course: Path, platform: str, assignment: str, missing: str = "empty",
                 column: str | None = None) -> tuple[list[list[str]], list[str]]:
    """(the rows of the file, header first; warnings) for ``platform``."""
    if platform not in GRADE_PLATFORMS:
        raise _problem(f"no grade format for {platform!r}", f"name one of: {', '.join(GRADE_PLATFORMS)}")
    if missing not in MISSING:
        raise _problem(f"--missing must be empty or zero, not {missing!r}", "say how a student who handed nothing "
                       "in is counted: empty (the platform shows no grade) or zero")
    rows, students, seen = grade_rows(course, assignment), _roster(course), collect.manifest(course, assignment)
    warnings = []
    column = column or assignment
    if platform == "simple":
        table = [["학번", "점수"] if assignment_language(assignment) == "ko" else ["id", "score"]]
    elif platform == "moodle":
        table = [["ID number", "Full name", "Email address", column]]
    else:
        table = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", column]]
    for r in sorted(rows, key=lambda r: r["student_id"]):
        if r["status"] == "graded":
            score = r["score"]
        elif r["status"] == "not submitted":
            score = MISSING[missing]
        else:
            score = ""
            warnings.append(f"{r['student_id']}: not graded ({r['note'] or 'see make autograde'}): left empty")
        s = students.get(r["student_id"]) or roster.Student(r["student_id"], last_name=r.get("last_name", ""),
                                                            first_name=r.get("first_name", ""), email=r.get("email", ""))
        if platform == "simple":
            table.append([s.id, score])
        elif platform == "moodle":
            table.append([s.id, s.full_name, s.email, score])
        else:
            number = s.platform_id or _canvas_number(seen.get(s.id, {}).get("prefix", ""))
            table.append([s.full_name, number, s.id, s.login, s.section, score])
    if not students:
        warnings.append("there is no students.csv: the ids are those of submitted/ (make roster FILE=<the platform's "
                        "class list> first, so that they are the platform's)")
    if platform == "canvas" and "(" not in column:
        warnings.append(f"the column {column!r} has no Canvas assignment number: Canvas will create a new assignment "
                        "of that name; to fill an existing one, name it as Canvas's export does: "
                        "COLUMN=\"<assignment name> (<number>)\"")
    return table, warnings


def write_grades(course: Path, platform: str, assignment: str, missing: str = "empty",
                 column: str | None = None) -> Path:
    table, warnings = grades_table(course, platform, assignment, missing, column)
    counted = "0" if missing == "zero" else "empty"
    path = course / "export" / f"{assignment}_{platform}_grades_not-submitted-{counted}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = io.StringIO()
    csv.writer(text, lineterminator="\r\n").writerows(table)
    path.write_bytes(("\ufeff" if platform == "simple" else "").encode() + text.getvalue().encode("utf-8"))
    target = "a two-column upload (" + ",".join(table[0]) + ")" if platform == "simple" else PLATFORM_LABEL[platform]
    print(f"{collect.shown(path)}: {len(table) - 1} students, for {target}; "
          f"not submitted counted as {'0' if missing == 'zero' else 'empty (no grade)'}")
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
    if skipped:
        print(f"  not in the zip ({len(skipped)}): {', '.join(skipped)}: their submissions did not come through "
              f"make collect from a {PLATFORM_LABEL[platform]} download, so their file prefix is unknown; "
              "upload their pages by hand (feedback/<student>/" + assignment + "/), or use PLATFORM=simple")
    return path


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Write grades or feedback in a learning platform's import format.")
    parser.add_argument("what", choices=("grades", "feedback"))
    parser.add_argument("platform", help=f"grades: {', '.join(GRADE_PLATFORMS)}; feedback: {', '.join(FEEDBACK_PLATFORMS)}")
    parser.add_argument("assignment", help="the assignment, e.g. 01_layernorm_ko")
    parser.add_argument("--course", type=Path, default=COURSE)
    parser.add_argument("--missing", default="empty", help="a student who handed nothing in: empty (default) or zero")
    parser.add_argument("--column", help="the grade column's name (Canvas: as its export names it, 'Name (12345)')")
    args = parser.parse_args(argv)
    course = args.course.resolve()
    if not (course / "nbgrader_config.py").exists():
        parser.error(f"{course} is not a course folder: it has no nbgrader_config.py")
    if args.what == "grades":
        write_grades(course, args.platform.lower(), args.assignment, args.missing.lower(), args.column)
    else:
        feedback_zip(course, args.platform.lower(), args.assignment, write_pages=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
