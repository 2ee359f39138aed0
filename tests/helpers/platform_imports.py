"""Grade files imported as the platforms import them, from their documented rules: what tests/classroom/test_collect.py and
tests/classroom/test_assignments.py feed the files grades-export writes (a parser of the platform's, not of this project's)."""

from __future__ import annotations

import csv
import io


class MoodleImportAborted(Exception):
    pass


def moodle_import(data: bytes, id_numbers: set[str], gradebook: dict[str, str | None], column: str) -> dict:
    """Moodle's Grades → Import → CSV file, from its documented rules: the file is UTF-8 (a BOM is taken off),
    comma-separated, the first row the headers; "ID number" is mapped to the user's ID number and ``column`` to
    the grade item. Each row's user is looked up by ID number: one Moodle does not know aborts the whole import,
    nothing imported. A cell that is empty or "-" is imported as no grade (a grade already there is cleared).
    Returns the gradebook after the import (ID number → grade)."""
    rows = list(csv.reader(io.StringIO(data.decode("utf-8").removeprefix("\ufeff"))))
    header, body = rows[0], rows[1:]
    user, grade = header.index("ID number"), header.index(column)
    imported = {}
    for row in body:
        if row[user] not in id_numbers:
            raise MoodleImportAborted(f"User not found: {row[user]}")
        value = row[grade].strip()
        imported[row[user]] = None if value in ("", "-") else value
    return {**gradebook, **imported}


def canvas_import(data: bytes, users: list[dict], gradebook: dict[str, str | None]) -> tuple[dict, list[list[str]]]:
    """Canvas's Grades → Import, from its documented rules: the first column is Student and the second ID; the
    student columns end with Section (SIS User ID, SIS Login ID between); every column after it is an assignment.
    A first data row whose Student is "Points Possible" is optional and not a student. Each row is matched to a
    student by ID, then SIS User ID, then SIS Login ID, then name; a row matched by none is an unknown student.
    Returns (the gradebook after it: Canvas user ID → grade, the rows of unknown students)."""
    rows = list(csv.reader(io.StringIO(data.decode("utf-8").removeprefix("\ufeff"))))
    header = rows[0]
    assert header[0] == "Student" and header[1] == "ID", header
    section = header.index("Section")
    assert set(header[2:section]) <= {"SIS User ID", "SIS Login ID", "Integration ID"}, header
    body = rows[1:]
    if body and body[0][0].strip() == "Points Possible":
        body = body[1:]
    after, unknown = dict(gradebook), []
    columns = {name: header.index(name) for name in header[:section] if name in ("SIS User ID", "SIS Login ID")}
    for row in body:
        match = [u for u in users if row[1] and u["id"] == row[1]]
        for name, key in (("SIS User ID", "sis_user_id"), ("SIS Login ID", "sis_login_id")):
            if not match and name in columns and row[columns[name]]:
                match = [u for u in users if u[key] == row[columns[name]]]
        match = match or [u for u in users if u["name"] == row[0]]
        if not match:
            unknown.append(row)
            continue
        after[match[0]["id"]] = row[section + 1] or None
    return after, unknown
