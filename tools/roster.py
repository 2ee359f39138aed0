"""The class list as a learning platform exports it: what ``make roster FILE=<export>`` turns into
the course's ``students.csv``, and what ``make autograde`` and ``make collect`` read.

    python -m tools.roster EXPORT [--course DIR]

A platform's export is read as it is:

* the encoding is detected: UTF-8 with or without a byte order mark (Excel's "CSV UTF-8", Google
  Sheets, LibreOffice), UTF-16 (Excel's "Unicode text"), or CP949 / EUC-KR (Excel's plain "CSV" on
  a Korean Windows, most Korean platforms' "엑셀 다운로드"); the delimiter (comma, semicolon, tab) too;
* the headers may be Korean or English, in any case (see ``HEADERS``): the student's id is the
  first of 학번 / ID number / SIS User ID / 아이디 / id … the file has; a name column holding the
  whole name (이름, 성명, name, Canvas's ``Student``) is kept as one name, never split; a file with
  a family-name column too (Moodle's export: 이름 + 성, First name + Last name) keeps both parts;
* Canvas's gradebook export works as a roster: its ``SIS User ID`` is the id, its ``ID`` the
  platform's own number (which Canvas puts in its download's file names), ``SIS Login ID`` and
  ``Section`` are kept for the grade file Canvas imports back.

What cannot be read is refused with what was expected and what was found. ``students.csv`` is
written as UTF-8 with a byte order mark (Excel opens it with Korean names intact), one student per
row: ``id,name,first_name,last_name,email,platform_id,login,section``.
"""

from __future__ import annotations

import argparse
import codecs
import csv
import io
import re
import sys
from dataclasses import asdict, dataclass, fields
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COURSE = ROOT / "assignments"


@dataclass(frozen=True)
class Student:
    id: str
    name: str = ""              # the whole name, as the platform shows it (김수민, Sumin Kim, "Kim, Sumin")
    first_name: str = ""
    last_name: str = ""
    email: str = ""
    platform_id: str = ""       # the platform's own number for the student (Canvas's ID)
    login: str = ""             # Canvas's SIS Login ID, Moodle's username
    section: str = ""

    @property
    def full_name(self) -> str:
        """The name to show: the whole name, or the parts put together (Korean: family name first, no space)."""
        if self.name:
            return self.name
        parts = [self.last_name, self.first_name] if _hangul(self.last_name + self.first_name) \
            else [self.first_name, self.last_name]
        return ("" if _hangul(self.last_name + self.first_name) else " ").join(p for p in parts if p)


COLUMNS = tuple(f.name for f in fields(Student))

# header (casefolded, spaces and punctuation dropped) → field; the first id header found wins, in this order
HEADERS = {
    "id": ("학번", "idnumber", "id번호", "sisuserid", "studentid", "studentnumber", "학생번호", "아이디", "id",
           "사용자아이디", "username", "사용자이름", "userid"),
    "name": ("성명", "이름", "name", "fullname", "student", "학생", "학생이름", "학생명"),
    "last_name": ("성", "lastname", "surname", "familyname"),
    "first_name": ("firstname", "givenname"),
    "email": ("이메일주소", "이메일", "email", "emailaddress", "e메일", "메일"),
    "section": ("section", "분반", "반", "섹션"),
    "login": ("sisloginid", "loginid"),
}


def _key(header: str) -> str:
    return re.sub(r"[\s_\-.()/]+", "", (header or "").strip().lstrip("\ufeff")).casefold()


def _hangul(text: str) -> bool:
    return re.search("[\uac00-\ud7a3]", text) is not None


class RosterError(ValueError):
    """A roster that cannot be read: the message says what was expected and what was found."""


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
    first = text.splitlines()[0] if text.strip() else ""
    counts = {d: first.count(d) for d in (",", "\t", ";")}
    return max(counts, key=counts.get) if any(counts.values()) else ","


def columns_of(headers: list[str]) -> dict[str, int]:
    """field → column index of the first header that names it."""
    keys = [_key(h) for h in headers]
    found: dict[str, int] = {}
    for field_name, names in HEADERS.items():
        for name in names:
            if name in keys:
                found[field_name] = keys.index(name)
                break
    if "sisuserid" in keys and "id" in keys:       # Canvas: SIS User ID is the id, ID is Canvas's number
        found["platform_id"] = keys.index("id")
    if "last_name" in found and "name" in found and keys[found["name"]] in ("이름", "name"):
        found["first_name"] = found.pop("name")  # 이름 + 성 (Moodle's Korean export): 이름 is the given name
    return found


def parse(text: str, path: Path) -> tuple[list[Student], dict[str, str]]:
    """The students of a CSV text (see the module's docstring), and the header each field was read from."""
    rows = [r for r in csv.reader(io.StringIO(text), delimiter=_dialect(text)) if any(c.strip() for c in r)]
    if not rows:
        raise RosterError(f"{path} is empty: expected a first row of column names (학번,이름,이메일 or id,name,email) "
                          "and one student per row")
    headers = rows[0]
    found = columns_of(headers)
    if "id" not in found:
        raise RosterError(f"{path} has no column for the student's id: expected one of 학번, 아이디, ID number, "
                          f"SIS User ID, id (in any case) in its first row; its first row is: {', '.join(headers)}")
    students: dict[str, Student] = {}
    for number, row in enumerate(rows[1:], start=2):
        cell = {f: (row[i].strip() if i < len(row) else "") for f, i in found.items()}
        if not cell["id"] or _key(cell.get("name", "")) == "pointspossible":   # Canvas's second row
            continue
        if not re.fullmatch(r"[^\s/\\:*?\"<>|]+", cell["id"]):
            raise RosterError(f"{path}, row {number}: the id {cell['id']!r} cannot name a folder (expected no spaces "
                              "and none of / \\ : * ? \" < > |)")
        if cell["id"] in students:
            raise RosterError(f"{path}, rows with the same id {cell['id']!r}: expected one row per student")
        students[cell["id"]] = Student(**cell)
    return list(students.values()), {f: headers[i].strip().lstrip("\ufeff") for f, i in found.items()}


def read(path: Path) -> tuple[list[Student], str, dict[str, str]]:
    """(students, the encoding found, field → header read) of a roster file; RosterError when it cannot be read."""
    text, encoding = decode(path.read_bytes(), path)
    students, used = parse(text, path)
    return students, encoding, used


def write(students: list[Student], path: Path) -> None:
    """students.csv: UTF-8 with a byte order mark, CRLF line ends, the columns of COLUMNS."""
    with path.open("w", newline="", encoding="utf-8-sig") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(asdict(s) for s in students)


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


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Turn a learning platform's class list into students.csv.")
    parser.add_argument("export", type=Path, help="the platform's export (CSV in UTF-8, UTF-16 or CP949)")
    parser.add_argument("--course", type=Path, default=COURSE, help="the course folder (default: assignments/)")
    args = parser.parse_args(argv)
    if not args.export.is_file():
        parser.error(f"{args.export}: no such file (expected the platform's class list, exported as CSV)")
    try:
        students, encoding, used = read(args.export)
    except RosterError as error:
        print(f"PROBLEM {error}", file=sys.stderr)
        return 1
    target = args.course.resolve() / "students.csv"
    write(students, target)
    print(f"{args.export}: {encoding}, {len(students)} students; "
          + ", ".join(f"{field} from column {header!r}" for field, header in used.items()))
    for student in students[:3]:
        print(f"  {student.id}  {student.full_name}  {student.email}")
    if len(students) > 3:
        print(f"  … and {len(students) - 3} more")
    print(f"written: {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
