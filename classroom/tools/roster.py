"""The class list: what ``make roster FILE=<export>`` turns into the course's ``students.csv``,
and what ``make collect``, ``make autograde`` and ``make grades-export`` read back.

    python -m classroom.tools.roster EXPORT [--course DIR] [--add] [--platform moodle|canvas|list]

``students.csv`` is this tool's own file, read back by its own column names (never guessed):

    id,name,first_name,last_name,email,section,platform,canvas_id,canvas_login

one student per row, UTF-8 with a byte order mark (Excel opens it with Korean names intact), CRLF.
``id`` is the student's id (the 학번); ``name`` a whole name as one column gave it, ``first_name``
and ``last_name`` the parts when the export had two columns; ``platform`` the learning platforms
the student was exported from (``moodle``, ``canvas``, both separated by a space, or empty for a
university's list); ``canvas_id`` and ``canvas_login`` Canvas's own user number and SIS Login ID,
which Canvas's download names files with and its grade import matches. (A file written before
this layout, with ``platform_id`` and ``login``, is read as Canvas's.) Moodle's number in its
download is the participant number of one assignment, so it is not kept here: ``make collect``
keeps it per assignment (collected/<assignment>/platform.csv).

A platform's export is read as it is:

* the encoding is detected: UTF-8 with or without a byte order mark, UTF-16 (Excel's "Unicode
  text"), or CP949 / EUC-KR (Excel's plain "CSV" on a Korean Windows, most Korean university
  systems' "엑셀 다운로드"); the delimiter (comma, semicolon, tab) and the line ends too; a title line
  above the header (학사 exports) is passed over: the header is the first row naming an id column;
* the headers may be Korean or English, in any case (``HEADERS``): the id is the first of 학번 /
  ID number / SIS User ID / 아이디 / id … the file has; a column holding the whole name (이름, 성명,
  name, Canvas's ``Student``) is kept as one name, never split; with a family-name column too
  (Moodle: First name + Last name, 이름 + 성), both parts are kept;
* the platform is recognised from the headers (``platform_of``): Canvas's gradebook export
  (``SIS User ID`` with ``ID``), Moodle's participants export (``ID number`` / ``ID 번호``),
  anything else a list with no platform;
* rows that are not students are left out and named: Canvas's ``Points Possible`` row and its
  ``Test Student``, a row whose role column (Roles, 역할) is not a student's (instructor, TA), a
  row without an id (Moodle's instructor usually has no ID number).

``--add`` (``make roster FILE=… ADD=1``) merges the export into the list there: a student already
on it (same id) keeps what it had and gains what it lacked (Canvas's number, a platform), a new
one is added and named. Without ``--add``, a list that would replace a different one is replaced
only after the old one is kept as ``students.<time>.csv`` beside it, with a warning saying how many
students each had. What cannot be read is refused with what was expected and what was found.
"""

from __future__ import annotations

import argparse
import codecs
import csv
import io
import re
import shutil
import sys
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COURSE = ROOT / "classroom" / "course"
PLATFORMS = ("moodle", "canvas")
PLATFORM_LABEL = {"moodle": "Moodle", "canvas": "Canvas", "": "a list without a platform"}


@dataclass(frozen=True)
class Student:
    id: str
    name: str = ""              # the whole name, as one column gave it (김수민, Sumin Kim, "Kim, Sumin")
    first_name: str = ""
    last_name: str = ""
    email: str = ""
    section: str = ""
    platform: str = ""          # the platforms the student was exported from: "moodle", "canvas", "moodle canvas"
    canvas_id: str = ""         # Canvas's user number (its download's file names, its grade import's ID)
    canvas_login: str = ""      # Canvas's SIS Login ID

    @property
    def full_name(self) -> str:
        """The name to show: the whole name, or the parts put together (Korean: family name first, no space)."""
        if self.name:
            return self.name
        parts = [self.last_name, self.first_name] if _hangul(self.last_name + self.first_name) \
            else [self.first_name, self.last_name]
        return ("" if _hangul(self.last_name + self.first_name) else " ").join(p for p in parts if p)

    @property
    def platforms(self) -> set[str]:
        return set(self.platform.split())


COLUMNS = tuple(f.name for f in fields(Student))
LEGACY = {"platform_id": "canvas_id", "login": "canvas_login"}     # students.csv as written before this layout

# header (casefolded, spaces and punctuation dropped) → field; the first id header found wins, in this order
HEADERS = {
    "id": ("학번", "idnumber", "id번호", "sisuserid", "studentid", "studentnumber", "학생번호", "아이디", "id",
           "사용자아이디", "username", "사용자이름", "userid"),
    "name": ("성명", "이름", "name", "fullname", "student", "학생", "학생이름", "학생명"),
    "last_name": ("성", "lastname", "surname", "familyname"),
    "first_name": ("firstname", "givenname"),
    "email": ("이메일주소", "이메일", "email", "emailaddress", "e메일", "메일"),
    "section": ("section", "분반", "반", "섹션"),
    "canvas_login": ("sisloginid", "loginid"),
    "role": ("roles", "role", "역할", "역할들"),
}
STUDENT_ROLES = ("student", "학생")
ID_PATTERN = r"[^\s/\\:*?\"<>|]+"            # an id names a folder of submitted/
TEST_STUDENT = ("teststudent", "studenttest")       # Canvas's student view user, "Test Student" / "Student, Test"


def _key(header: str) -> str:
    return re.sub(r"[\s_\-.()/]+", "", (header or "").strip().lstrip("\ufeff")).casefold()


def _hangul(text: str) -> bool:
    return re.search("[\uac00-\ud7a3]", text) is not None


class RosterError(ValueError):
    """A roster that cannot be read: the message says what was expected and what was found."""


@dataclass
class Roster:
    """What was read from one file: its students, and how."""
    students: list[Student]
    encoding: str
    used: dict[str, str]                    # field → the header it was read from
    platform: str = ""                      # "moodle", "canvas", "" (a list), "own" (students.csv itself)
    skipped: list[str] = field(default_factory=list)      # the rows left out, each with why
    header_row: int = 1


def decode(data: bytes, path: Path) -> tuple[str, str]:
    """(text, encoding name) of a CSV export: UTF-8 (± BOM), UTF-16 with a BOM, or CP949/EUC-KR."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16"), "UTF-16"
    try:
        return data.decode("utf-8-sig"), "UTF-8" + (" with a byte order mark" if data.startswith(codecs.BOM_UTF8) else "")
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("cp949"), "CP949 (EUC-KR)"
    except UnicodeDecodeError as error:
        raise RosterError(f"{path} is neither UTF-8, UTF-16 nor CP949/EUC-KR text (byte {error.start}: "
                          f"{data[error.start:error.start + 4]!r}): is it a spreadsheet (.xlsx) rather than a CSV "
                          "export? Save it as CSV (UTF-8) and run again") from None


def _dialect(text: str) -> str:
    lines = [line for line in text.splitlines()[:10] if line.strip()]
    counts = {d: max((line.count(d) for line in lines), default=0) for d in (",", "\t", ";")}
    return max(counts, key=counts.get) if any(counts.values()) else ","


def own_layout(headers: list[str]) -> bool:
    """Whether a header row is students.csv's own (written by this tool, now or before)."""
    keys = [h.strip().lstrip("\ufeff") for h in headers]
    return bool(keys) and keys[0] == "id" and set(keys) <= set(COLUMNS) | set(LEGACY)


def columns_of(headers: list[str]) -> dict[str, int]:
    """field → column index of the first header that names it (a platform's export: guessed)."""
    keys = [_key(h) for h in headers]
    found: dict[str, int] = {}
    for field_name, names in HEADERS.items():
        for name in names:
            if name in keys:
                found[field_name] = keys.index(name)
                break
    if "sisuserid" in keys and "id" in keys:       # Canvas: SIS User ID is the id, ID is Canvas's number
        found["canvas_id"] = keys.index("id")
    if "last_name" in found and "name" in found and keys[found["name"]] in ("이름", "name"):
        found["first_name"] = found.pop("name")  # 이름 + 성 (Moodle's Korean export): 이름 is the given name
    return found


def platform_of(headers: list[str]) -> str:
    """The platform an export comes from, by its headers: "canvas", "moodle", or "" (a list)."""
    keys = {_key(h) for h in headers}
    if "sisuserid" in keys and "id" in keys and "student" in keys:
        return "canvas"
    if keys & {"idnumber", "id번호"}:
        return "moodle"
    return ""


def _id_error(path: Path, first: list[str]) -> RosterError:
    return RosterError(f"{path} has no column for the student's id: expected one of 학번, 아이디, ID number, "
                       f"SIS User ID, id (in any case) in its first row; its first row is: {', '.join(first)}")


def parse(text: str, path: Path, platform: str | None = None) -> Roster:
    """The students of a CSV text (see the module's docstring)."""
    rows = [r for r in csv.reader(io.StringIO(text), delimiter=_dialect(text)) if any(c.strip() for c in r)]
    if not rows:
        raise RosterError(f"{path} is empty: expected a first row of column names (학번,이름,이메일 or id,name,email) "
                          "and one student per row")
    if own_layout(rows[0]):
        return _parse_own(rows, path)
    at = next((i for i, row in enumerate(rows[:10]) if "id" in columns_of(row)), None)
    if at is None:
        raise _id_error(path, rows[0])
    headers = rows[at]
    found = columns_of(headers)
    kind = platform_of(headers) if platform is None else platform
    students: dict[str, Student] = {}
    skipped = [f"row {i + 1} (above the header: {' '.join(c for c in rows[i] if c.strip())[:60]})" for i in range(at)]
    for number, row in enumerate(rows[at + 1:], start=at + 2):
        cell = {f: (row[i].strip() if i < len(row) else "") for f, i in found.items()}
        role = cell.pop("role", "")
        person = Student(**{k: v for k, v in cell.items() if k != "id"}, id="x").full_name
        if _key(cell.get("name", "")) == "pointspossible":           # Canvas's second row
            skipped.append(f"row {number} (Canvas's Points Possible row)")
            continue
        if normal_name(person) in TEST_STUDENT:
            skipped.append(f"row {number} ({person}: Canvas's test student)")
            continue
        if "role" in found and not any(r in role.casefold() for r in STUDENT_ROLES):
            skipped.append(f"row {number} ({person}: role {role or 'none'}, not a student)")
            continue
        if not cell["id"]:
            skipped.append(f"row {number} ({person or 'no name'}: no {headers[found['id']].strip()}; "
                           "an instructor's row? a student without one cannot be graded)")
            continue
        if not re.fullmatch(ID_PATTERN, cell["id"]):
            raise RosterError(f"{path}, row {number}: the id {cell['id']!r} cannot name a folder (expected no spaces "
                              "and none of / \\ : * ? \" < > |)")
        if cell["id"] in students:
            raise RosterError(f"{path}, rows with the same id {cell['id']!r}: expected one row per student")
        students[cell["id"]] = Student(**cell, platform=kind if kind in PLATFORMS else "")
    used = {f: headers[i].strip().lstrip("\ufeff") for f, i in found.items()}
    return Roster(list(students.values()), "", used, kind, skipped, at + 1)


def _parse_own(rows: list[list[str]], path: Path) -> Roster:
    headers = [h.strip().lstrip("\ufeff") for h in rows[0]]
    index = {LEGACY.get(h, h): i for i, h in enumerate(headers)}
    students: dict[str, Student] = {}
    for number, row in enumerate(rows[1:], start=2):
        cell = {f: (row[i].strip() if i < len(row) else "") for f, i in index.items()}
        if not cell["id"]:
            raise RosterError(f"{path}, row {number}: no id (expected every row of students.csv to have one)")
        if not re.fullmatch(ID_PATTERN, cell["id"]):
            raise RosterError(f"{path}, row {number}: the id {cell['id']!r} cannot name a folder (expected no spaces "
                              "and none of / \\ : * ? \" < > |)")
        if cell["id"] in students:
            raise RosterError(f"{path}, rows with the same id {cell['id']!r}: expected one row per student")
        if "platform_id" in headers and cell.get("canvas_id") and not cell.get("platform"):
            cell["platform"] = "canvas"                      # the layout before: platform_id was Canvas's number
        students[cell["id"]] = Student(**cell)
    return Roster(list(students.values()), "", {h: h for h in headers}, "own")


def read_roster(path: Path, platform: str | None = None) -> Roster:
    """Everything read from a roster file; RosterError when it cannot be read."""
    text, encoding = decode(path.read_bytes(), path)
    found = parse(text, path, platform)
    found.encoding = encoding
    return found


def read(path: Path) -> tuple[list[Student], str, dict[str, str]]:
    """(students, the encoding found, field → header read) of a roster file; RosterError when it cannot be read."""
    found = read_roster(path)
    return found.students, found.encoding, found.used


def encode(students: list[Student]) -> bytes:
    """students.csv's bytes: UTF-8 with a byte order mark, CRLF line ends, the columns of COLUMNS."""
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=COLUMNS, lineterminator="\r\n")
    writer.writeheader()
    writer.writerows(asdict(s) for s in students)
    return ("\ufeff" + text.getvalue()).encode("utf-8")


def write(students: list[Student], path: Path) -> None:
    path.write_bytes(encode(students))


def merge(old: list[Student], new: list[Student]) -> tuple[list[Student], list[Student], list[Student]]:
    """(the merged list, the students added, the students updated): a student of ``new`` already in
    ``old`` (same id) keeps every field it had and gains those it lacked; platforms are joined."""
    by_id = {s.id: s for s in old}
    added, updated = [], []
    for s in new:
        if s.id not in by_id:
            by_id[s.id] = s
            added.append(s)
            continue
        before = by_id[s.id]
        gains = {f: getattr(s, f) for f in COLUMNS if f not in ("id", "platform") and getattr(s, f)
                 and not getattr(before, f)}
        if before.name and (gains.get("first_name") or gains.get("last_name")):
            gains.pop("first_name", None), gains.pop("last_name", None)     # one way of naming a student, not two
        platform = " ".join(p for p in PLATFORMS if p in before.platforms | s.platforms)
        after = replace(before, **gains, platform=platform)
        if after != before:
            by_id[s.id] = after
            updated.append(after)
    return list(by_id.values()), added, updated


def backup_name(path: Path, when: datetime) -> Path:
    """``students.<time>.csv`` beside ``path``, a name no file has yet."""
    stem = f"{path.stem}.{when.strftime('%Y%m%d-%H%M%S')}"
    candidate, n = path.with_name(f"{stem}{path.suffix}"), 2
    while candidate.exists():
        candidate, n = path.with_name(f"{stem}-{n}{path.suffix}"), n + 1
    return candidate


def normal_name(name: str) -> str:
    """A name as file names and rosters can both give it: letters and digits only, lower case
    (``Kim, Sumin`` → ``kimsumin``, ``김 수민`` → ``김수민``)."""
    return re.sub(r"[\W_]+", "", name).casefold()


def name_keys(student: Student) -> set[str]:
    """The spellings of a student's name a platform may put in a file name: the whole name, and the
    parts in either order (Moodle: "Sumin Kim" or "김수민"; Canvas: "kimsumin")."""
    keys = {normal_name(student.full_name)}
    if student.first_name or student.last_name:
        keys |= {normal_name(student.last_name + student.first_name), normal_name(student.first_name + student.last_name)}
    words = re.split(r"[\s,]+", student.name.strip())
    if len(words) == 2:
        keys.add(normal_name(words[1] + words[0]))
    return {k for k in keys if k}


def _show(students: list[Student], limit: int = 3) -> None:
    for student in students[:limit]:
        print(f"  {student.id}  {student.full_name}  {student.email}".rstrip())
    if len(students) > limit:
        print(f"  … and {len(students) - limit} more")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Turn a learning platform's class list into students.csv.")
    parser.add_argument("export", type=Path, help="the platform's export (CSV in UTF-8, UTF-16 or CP949)")
    parser.add_argument("--course", type=Path, default=COURSE, help="the course folder (default: classroom/course/)")
    parser.add_argument("--add", action="store_true", help="merge into the students.csv there (by id) instead of "
                        "replacing it")
    parser.add_argument("--platform", choices=("moodle", "canvas", "list"),
                        help="the platform the export comes from, when its headers do not say it")
    args = parser.parse_args(argv)
    if not args.export.is_file():
        parser.error(f"{args.export}: no such file (expected the platform's class list, exported as CSV)")
    target = args.course.resolve() / "students.csv"
    try:
        found = read_roster(args.export, None if args.platform is None else args.platform.replace("list", ""))
        old = read(target)[0] if target.exists() else None
    except RosterError as error:
        print(f"PROBLEM {error}", file=sys.stderr)
        return 1
    if found.platform == "own":
        found.platform = ""
    print(f"{args.export}: {found.encoding}, {PLATFORM_LABEL[found.platform]}"
          + (f" (header on row {found.header_row})" if found.header_row > 1 else "")
          + f", {len(found.students)} students; "
          + ", ".join(f"{f} from column {header!r}" for f, header in found.used.items()))
    if found.skipped:
        print(f"left out, not students ({len(found.skipped)}):")
        for line in found.skipped:
            print(f"  {line}")
    if args.add and old is not None:
        merged, added, updated = merge(old, found.students)
        data = encode(merged)
        print(f"merged by id into {target} ({len(old)} students): {len(updated)} updated, {len(added)} added, "
              f"{len(merged) - len(updated) - len(added)} as they were; now {len(merged)} students")
        if added:
            print("  added (not on the list before; if one of them is not a student, a TA for instance, delete that row):")
            _show(added, 12)
    else:
        data = encode(found.students)
        _show(found.students)
        if old is not None and target.read_bytes() != data:
            kept = backup_name(target, datetime.now())
            shutil.copy2(target, kept)
            gone = len({s.id for s in old} - {s.id for s in found.students})
            print(f"WARNING {target} had {len(old)} students; this list has {len(found.students)}"
                  + (f" ({gone} of them are not in it)" if gone else "")
                  + f": the old list is kept as {kept.name}. To merge the two instead, put the old one back "
                  f"(copy {kept.name} to students.csv) and run: make roster FILE={args.export} ADD=1")
    if target.exists() and target.read_bytes() == data:
        print(f"unchanged: {target}")
        return 0
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    print(f"written: {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
