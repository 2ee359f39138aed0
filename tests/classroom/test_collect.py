"""From a learning platform to submitted/ and back, without a kernel (classroom/tools/roster.py, classroom/tools/collect.py,
classroom/tools/platform_export.py): rosters as platforms export them, every download format, what cannot be
placed, a second run and a late zip, and the files the platforms import. The class graded end to end
(Moodle and Canvas zips through autograde) is in tests/classroom/test_assignments.py."""

from __future__ import annotations

import csv
import io
import json
import re
import zipfile
from datetime import datetime
from pathlib import Path

import pytest

from classroom.tools import collect, platform_export, roster
from helpers.platform_imports import MoodleImportAborted, canvas_import, moodle_import

ASSIGNMENT = "01_layernorm_ko"
NOTEBOOK = "01_layernorm.ipynb"
# 학번, 이름, 이메일 주소, 학과: as a Korean platform exports its class list (CP949)
CLASS_LIST = ("학번,이름,이메일 주소,학과\r\n20231234,김수민,sumin@example.kr,컴퓨터공학\r\n"
              "20235678,송유나,yuna@example.kr,수학\r\n20230001,박지호,jiho@example.kr,물리\r\n"
              "20230002,이하늘,,물리\r\n20230003,김수민,sumin2@example.kr,화학\r\n")
UNIQUE = CLASS_LIST.replace("20230003,김수민", "20230003,김수진")      # no two students of the same name


def notebook(tag: str) -> bytes:
    return json.dumps({"cells": [], "metadata": {"tag": tag}, "nbformat": 4, "nbformat_minor": 5}).encode()


def make_zip(path: Path, files: dict[str, bytes], when=(2026, 3, 14, 9, 26, 52), utf8: bool = True) -> Path:
    """A zip of ``files``; with ``utf8=False`` the names are CP949 bytes without the UTF-8 flag, as
    Windows' own "Send to > Compressed folder" writes Korean names."""
    placeholders = {}
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            if not utf8 and not name.isascii():   # zipfile writes such a name as flagged UTF-8: a stand-in, swapped below
                raw = name.encode("cp949")
                stand_in = f"#{len(placeholders)}#".ljust(len(raw), "#").encode()
                placeholders[stand_in] = raw
                name = stand_in.decode()
            archive.writestr(zipfile.ZipInfo(name, when), data)
    data = path.read_bytes()
    for stand_in, raw in placeholders.items():
        data = data.replace(stand_in, raw)
    path.write_bytes(data)
    return path


@pytest.fixture
def course(tmp_path) -> Path:
    course = tmp_path / "assignments"
    (course / "source" / ASSIGNMENT).mkdir(parents=True)
    (course / "source" / ASSIGNMENT / NOTEBOOK).write_bytes(notebook("source"))
    (course / "nbgrader_config.py").write_text("", encoding="utf-8")
    return course


# --------------------------------------------------------------------------- rosters

@pytest.mark.parametrize("encoding", ["cp949", "euc-kr", "utf-8", "utf-8-sig", "utf-16"])
def test_a_korean_class_list_is_read_in_any_encoding_it_comes_in(tmp_path, encoding):
    path = tmp_path / "export.csv"
    text = CLASS_LIST.replace(",", "\t") if encoding == "utf-16" else CLASS_LIST     # Excel's "Unicode text"
    path.write_bytes(text.encode(encoding))
    students, found, used = roster.read(path)
    assert [s.id for s in students] == ["20231234", "20235678", "20230001", "20230002", "20230003"]
    assert students[0].name == "김수민" and students[0].full_name == "김수민" and students[0].email == "sumin@example.kr"
    assert used == {"id": "학번", "name": "이름", "email": "이메일 주소"}
    assert found.startswith({"cp949": "CP949", "euc-kr": "CP949", "utf-16": "UTF-16"}.get(encoding, "UTF-8"))


def test_headers_in_english_moodle_s_and_canvas_s_exports(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("Name,ID,Email\nSumin Kim,s1,s@x.org\n", encoding="utf-8")
    assert roster.read(path)[0] == [roster.Student("s1", name="Sumin Kim", email="s@x.org")]
    # Moodle's Korean export: 이름 (given name) and 성 (family name) apart; kept as two parts
    path.write_text("이름,성,ID 번호,이메일 주소\n수민,김,20231234,s@x.kr\n", encoding="utf-8")
    (student,) = roster.read(path)[0]
    assert (student.id, student.first_name, student.last_name, student.full_name) == ("20231234", "수민", "김", "김수민")
    # Canvas's gradebook export: SIS User ID is the id, ID is Canvas's own number; the Points Possible row is not a student
    path.write_text("Student,ID,SIS User ID,SIS Login ID,Section,Assignment 1 (777)\n    Points Possible,,,,,6.00\n"
                    "\"Kim, Sumin\",12345,20231234,sumin,A,\n", encoding="utf-8")
    (student,) = roster.read(path)[0]
    assert (student.id, student.canvas_id, student.canvas_login, student.section, student.name) == \
        ("20231234", "12345", "sumin", "A", "Kim, Sumin")
    assert "kimsumin" in roster.name_keys(student) and "suminkim" in roster.name_keys(student)


def test_a_roster_that_cannot_be_read_says_what_was_expected_and_found(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("student,mail\nkim,k@x\n", encoding="utf-8")
    with pytest.raises(roster.RosterError, match=r"expected one of 학번, 아이디, .*its first row is: student, mail"):
        roster.read(path)
    path.write_bytes(b"PK\x03\x04\xff\xfe\xfa\x00")
    with pytest.raises(roster.RosterError, match="neither UTF-8, UTF-16 nor CP949"):
        roster.read(path)
    path.write_text("id,name\nkim lee,x\n", encoding="utf-8")
    with pytest.raises(roster.RosterError, match="row 2: the id 'kim lee' cannot name a folder"):
        roster.read(path)


def test_make_roster_writes_students_csv_that_excel_opens(tmp_path, course, capsys):
    export = tmp_path / "class.csv"
    export.write_bytes(CLASS_LIST.encode("cp949"))
    assert roster.main([str(export), "--course", str(course)]) == 0
    raw = (course / "students.csv").read_bytes()
    assert raw.startswith(b"\xef\xbb\xbfid,name,first_name,last_name,email,")
    assert "20231234,김수민,,,sumin@example.kr" in raw.decode("utf-8-sig")
    out = capsys.readouterr().out
    assert "CP949 (EUC-KR), a list without a platform, 5 students" in out and "id from column '학번'" in out


# --------------------------------------------------------------------------- collect

def _moodle(tmp_path: Path) -> Path:
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as z:                   # a student's own zip of her folder, from a Mac
        z.writestr("과제/01_layernorm.ipynb", notebook("jiho"))
        z.writestr("과제/.ipynb_checkpoints/01_layernorm-checkpoint.ipynb", notebook("checkpoint"))
        z.writestr("__MACOSX/과제/._01_layernorm.ipynb", b"\x00\x05\x16\x07")
    return make_zip(tmp_path / "moodle.zip", {
        "김수민_12345_assignsubmission_file_01_layernorm.ipynb": notebook("sumin"),
        "송유나_12346_assignsubmission_file_과제1_송유나.ipynb": notebook("yuna"),
        "박지호_12347_assignsubmission_file_과제1.zip": inner.getvalue(),
        "이하늘_12348_assignsubmission_file_01_layernorm (1).ipynb": notebook("haneul"),
        "이하늘_12348_assignsubmission_file_report.pdf": b"%PDF-1.4",
        "홍길동_12349_assignsubmission_file_01_layernorm.ipynb": notebook("gildong"),
    })


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_moodle_download_is_filed_by_name_with_nothing_lost(tmp_path, course, capsys):
    (course / "students.csv").write_bytes(UNIQUE.encode("cp949"))
    report = collect.collect(_moodle(tmp_path), ASSIGNMENT, course)
    assert report.platform == "Moodle" and report.ignored == 2
    assert _files(course / "submitted") == {
        f"20231234/{ASSIGNMENT}/{NOTEBOOK}": notebook("sumin"),        # named as released
        f"20235678/{ASSIGNMENT}/{NOTEBOOK}": notebook("yuna"),         # renamed: her only notebook
        f"20230001/{ASSIGNMENT}/{NOTEBOOK}": notebook("jiho"),         # inside a zip, checkpoints ignored
        f"20230002/{ASSIGNMENT}/{NOTEBOOK}": notebook("haneul"),       # a browser's second download "(1)"
    }
    kept = _files(course / "collected" / ASSIGNMENT / "unplaced")
    assert kept == {"_unknown/홍길동_12349_assignsubmission_file_01_layernorm.ipynb": notebook("gildong"),
                    "20230002/이하늘_12348_assignsubmission_file_report.pdf": b"%PDF-1.4"}
    assert [s.id for s in report.missing] == ["20230003"]
    collect.print_report(report, tmp_path / "moodle.zip", ASSIGNMENT, course, "make autograde")
    out = capsys.readouterr().out
    assert "홍길동 is not in students.csv" in out
    assert "what to do: if the student is on students.csv under another name, place it: " in out
    assert "if not on it, add them (make roster FILE=<the platform's class list> ADD=1)" in out
    assert "4 new, 0 replaced, 0 unchanged; 2 not placed" in out
    rows = collect.manifest(course, ASSIGNMENT)
    assert rows["20231234"]["prefix"] == "김수민_12345_assignsubmission_file_"
    assert rows["20235678"]["how"] == "the student's only notebook (named 과제1_송유나.ipynb)"


def test_the_same_zip_twice_changes_nothing_and_a_late_zip_only_its_students(tmp_path, course):
    (course / "students.csv").write_bytes(UNIQUE.encode("cp949"))
    zip_path = _moodle(tmp_path)
    collect.collect(zip_path, ASSIGNMENT, course)
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in course.rglob("*") if p.is_file()}
    again = collect.collect(zip_path, ASSIGNMENT, course)
    assert {p.result for p in again.placed} == {"unchanged"}
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in course.rglob("*") if p.is_file()} == before
    for student in ("20231234", "20235678"):            # as make autograde leaves them
        (course / "autograded" / student / ASSIGNMENT).mkdir(parents=True)
        (course / "autograded" / student / ASSIGNMENT / NOTEBOOK).write_bytes(notebook("graded"))
    late = make_zip(tmp_path / "late.zip", {
        "김수민_12345_assignsubmission_file_01_layernorm.ipynb": notebook("sumin, second try"),
        "송유나_12346_assignsubmission_file_과제1_송유나.ipynb": notebook("yuna"),
    }, when=(2026, 3, 20, 23, 59, 0))
    report = collect.collect(late, ASSIGNMENT, course)
    assert sorted((p.student.id, p.result) for p in report.placed) == [("20231234", "replaced"), ("20235678", "unchanged")]
    submitted = _files(course / "submitted")
    assert submitted[f"20231234/{ASSIGNMENT}/{NOTEBOOK}"] == notebook("sumin, second try")
    assert submitted[f"20230001/{ASSIGNMENT}/{NOTEBOOK}"] == notebook("jiho")       # not in the late zip: kept
    replaced = _files(course / "collected" / ASSIGNMENT / "replaced" / "20231234")
    assert list(replaced.values()) == [notebook("sumin")], "the first notebook is kept, not lost"
    when = (course / "submitted" / "20231234" / ASSIGNMENT / NOTEBOOK).stat().st_mtime
    assert datetime.fromtimestamp(when) == datetime(2026, 3, 20, 23, 59, 0), "the platform's time, for timestamp.txt"
    assert set(collect.manifest(course, ASSIGNMENT)) == {"20231234", "20235678", "20230001", "20230002"}
    # a replaced submission is graded again whatever its time; an unchanged one keeps its grading
    assert not (course / "autograded" / "20231234" / ASSIGNMENT).exists()
    assert (course / "autograded" / "20235678" / ASSIGNMENT / NOTEBOOK).exists()


def test_two_students_of_the_same_name_are_not_guessed(tmp_path, course):
    (course / "students.csv").write_bytes(CLASS_LIST.encode("cp949"))      # two 김수민
    report = collect.collect(_moodle(tmp_path), ASSIGNMENT, course)
    (sumin,) = [p for p in report.unplaced if p.entry.path.startswith("김수민")]
    assert sumin.why == "2 students of students.csv are called 김수민 (20231234, 20230003)"
    assert not (course / "submitted" / "20231234").exists()


def test_canvas_google_and_a_plain_folder(tmp_path, course):
    (course / "students.csv").write_text("Student,ID,SIS User ID,SIS Login ID,Section\n\"Kim, Sumin\",12345,20231234,"
                                         "sumin,A\n\"Song, Yuna\",12346,20235678,yuna,A\n", encoding="utf-8")
    canvas = make_zip(tmp_path / "canvas.zip", {"kimsumin_12345_67890_01_layernorm.ipynb": notebook("sumin"),
                                                "songyuna_LATE_12346_67891_01_layernorm-1.ipynb": notebook("yuna")})
    report = collect.collect(canvas, ASSIGNMENT, course)
    assert report.platform == "Canvas" and not report.unplaced
    assert sorted((p.student.id, p.owner.prefix) for p in report.placed) == [
        ("20231234", "kimsumin_12345_67890_"), ("20235678", "songyuna_LATE_12346_67891_")]
    google = make_zip(tmp_path / "google.zip", {"Sumin Kim - 01_layernorm.ipynb": notebook("g")})
    assert collect.collect(google, ASSIGNMENT, course).placed[0].student.id == "20231234"
    # a folder of <id>.ipynb, as a teacher gathers them by e-mail; Korean names as Windows zips them
    plain = make_zip(tmp_path / "plain.zip", {"20231234.ipynb": notebook("p1"), "20235678_과제.ipynb": notebook("p2")},
                     utf8=False)
    report = collect.collect(plain, ASSIGNMENT, course)
    assert report.platform == "a plain folder" and sorted(p.student.id for p in report.placed) == ["20231234", "20235678"]
    assert {p.student.id: p.why for p in report.placed}["20235678"] == \
        "id on the roster; the student's only notebook (named 과제.ipynb)"


def test_one_students_folder_is_not_taken_for_a_wrapper(tmp_path, course):
    (course / "students.csv").write_bytes(UNIQUE.encode("cp949"))
    alone = make_zip(tmp_path / "one.zip", {"20231234/01_layernorm.ipynb": notebook("one")})
    assert [p.student.id for p in collect.collect(alone, ASSIGNMENT, course).placed] == ["20231234"]
    wrapped = make_zip(tmp_path / "wrapped.zip", {"download/20235678.ipynb": notebook("two")})
    assert [p.student.id for p in collect.collect(wrapped, ASSIGNMENT, course).placed] == ["20235678"]


def test_an_unknown_format_is_refused_with_the_names_seen(tmp_path, course):
    odd = make_zip(tmp_path / "odd.zip", {"submission one.ipynb": notebook("a"), "submission two.ipynb": notebook("b")})
    with pytest.raises(SystemExit, match=r"not a download this command knows: its names are submission one\.ipynb, "
                                         r"submission two\.ipynb\n  what to do: expected one of Moodle"):
        collect.collect(odd, ASSIGNMENT, course)
    with pytest.raises(SystemExit, match="no assignment '02_nope' in"):
        collect.collect(odd, "02_nope", course)


def test_nbgraders_zip_collect_can_use_the_same_patterns():
    moodle = collect.Moodle()
    found = moodle.collect("/x/김수민_12345_assignsubmission_file_01_layernorm.ipynb")
    assert found["student_id"] == "12345" and found["file_id"] == "01_layernorm.ipynb"
    assert moodle.collect("/x/notes.pdf") is None


# --------------------------------------------------------------------------- the files the platforms import

GRADES = ("assignment,student_id,last_name,first_name,email,status,score,max_score,timestamp,note\r\n"
          f"{ASSIGNMENT},20231234,김수민,,sumin@example.kr,graded,4,5,2026-03-14 09:26:52,\r\n"
          f"{ASSIGNMENT},20235678,송유나,,yuna@example.kr,not submitted,,5,,\r\n"
          f"{ASSIGNMENT},20230001,박지호,,jiho@example.kr,not graded,,5,,the file is empty\r\n")


@pytest.fixture
def graded_course(course) -> Path:
    (course / "grades.csv").write_text("\ufeff" + GRADES, encoding="utf-8")
    (course / "students.csv").write_bytes(UNIQUE.encode("cp949"))
    return course


def _csv(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_bytes().decode("utf-8-sig"))))


def test_grades_for_moodle_canvas_and_a_two_column_upload(graded_course):
    path = platform_export.write_grades(graded_course, "moodle", ASSIGNMENT)
    assert path.name == f"{ASSIGNMENT}_moodle_grades_not-submitted-empty.csv"
    # Moodle's grade import: a header row, a user column mapped to "ID number", a column per grade item; the
    # not graded (20230001) and the not submitted (20235678) are left out: an empty cell would clear a grade
    assert _csv(path) == [["ID number", "Full name", "Email address", ASSIGNMENT],
                          ["20231234", "김수민", "sumin@example.kr", "4"]]
    path = platform_export.write_grades(graded_course, "simple", ASSIGNMENT, missing="zero")
    assert path.name.endswith("not-submitted-0.csv") and path.read_bytes().startswith(b"\xef\xbb\xbf")
    assert _csv(path) == [["학번", "점수"], ["20231234", "4"], ["20235678", "0"]]
    # Canvas's gradebook import takes its export's layout: Student, ID, SIS User ID, SIS Login ID, Section, then
    # one column per assignment named "<name> (<Canvas's number>)"
    path = platform_export.write_grades(graded_course, "canvas", ASSIGNMENT, column="과제 1 (4321)")
    table = _csv(path)
    assert table[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "과제 1 (4321)"]
    assert table[1:] == [["김수민", "", "20231234", "", "", "4"]]


def test_grades_export_refuses_what_it_cannot_do(graded_course):
    with pytest.raises(SystemExit, match="no grade format for 'blackboard'"):
        platform_export.write_grades(graded_course, "blackboard", ASSIGNMENT)
    with pytest.raises(SystemExit, match="has no grades of 02_batchnorm_ko"):
        platform_export.write_grades(graded_course, "moodle", "02_batchnorm_ko")
    with pytest.raises(SystemExit, match="--missing must be empty or zero, not 'none'"):
        platform_export.write_grades(graded_course, "moodle", ASSIGNMENT, missing="none")


def test_feedback_pages_are_zipped_under_the_platforms_prefixes(tmp_path, graded_course):
    collect.collect(_moodle(tmp_path), ASSIGNMENT, graded_course)
    for student in ("20231234", "20235678", "99999999"):
        page = graded_course / "feedback" / student / ASSIGNMENT / "01_layernorm.html"
        page.parent.mkdir(parents=True)
        page.write_text(f"<html>{student}</html>", encoding="utf-8")
    path = platform_export.feedback_zip(graded_course, "moodle", ASSIGNMENT)
    with zipfile.ZipFile(path) as archive:
        assert sorted(archive.namelist()) == ["김수민_12345_assignsubmission_file_01_layernorm.html",
                                              "송유나_12346_assignsubmission_file_01_layernorm.html"]
        assert archive.read("김수민_12345_assignsubmission_file_01_layernorm.html") == b"<html>20231234</html>"
    first = path.read_bytes()
    assert platform_export.feedback_zip(graded_course, "moodle", ASSIGNMENT).read_bytes() == first, "the same zip again"
    with zipfile.ZipFile(platform_export.feedback_zip(graded_course, "simple", ASSIGNMENT)) as archive:
        assert sorted(archive.namelist()) == [f"{s}_01_layernorm.html" for s in ("20231234", "20235678", "99999999")]


# The platforms' own layouts, as their documentation shows an export (the import takes the same layout back):
# Canvas, "How do I import grades in the Gradebook?" (Instructor Guide): the gradebook export's first row;
# Moodle, "Grade export" / "Grade import" (docs.moodle.org): the plain-text export's first row, whose user
# columns an import maps ("ID number" to the user's ID number).
CANVAS_EXPORT = "Student,ID,SIS User ID,SIS Login ID,Section,Assignment 1 (12345),Current Score,Final Score"
MOODLE_EXPORT = "First name,Last name,ID number,Institution,Department,Email address,Assignment: 과제 1 (Real)"


def test_each_grade_file_follows_the_platforms_documented_layout(graded_course):
    canvas = _csv(platform_export.write_grades(graded_course, "canvas", ASSIGNMENT, column="Assignment 1 (12345)"))
    documented = CANVAS_EXPORT.split(",")
    assert canvas[0] == documented[:6], "Canvas: its five student columns, then the assignment named as it exports it"
    moodle = _csv(platform_export.write_grades(graded_course, "moodle", ASSIGNMENT))
    user_columns = [c for c in moodle[0][:-1] if c != "Full name"]       # Full name: for the teacher, not mapped
    assert set(user_columns) <= set(MOODLE_EXPORT.split(",")) and "ID number" in user_columns
    assert all(re.fullmatch(r"\d*(\.\d+)?", row[-1]) for row in moodle[1:] + canvas[1:]), "a grade is a number or empty"


# --------------------------------------------------------------------------- one course on Moodle, Canvas and a 학사 list

PLATFORMS = Path(__file__).parent / "data" / "platforms"
HAKSA, MOODLE_EN, MOODLE_KO, CANVAS = (PLATFORMS / name for name in (
    "haksa_CSE4032_cp949.csv", "moodle_participants_en.csv", "moodle_participants_ko.csv", "canvas_gradebook_export.csv"))
HEADER = "\ufeffid,name,first_name,last_name,email,section,platform,canvas_id,canvas_login\r\n"
# students.csv as make roster writes it from each export alone, written out by hand from the exports
WRITTEN = {
    HAKSA: ["2024103117,김서준,,,seojun@univ.ac.kr,01,,,", "2024103814,김민준,,,minjun.a@univ.ac.kr,01,,,",
            "2024104107,김민준,,,minjun.b@univ.ac.kr,02,,,", "2024205101,전하린,,,harin@univ.ac.kr,03,,,",
            "2024205145,CLARK EMILY,,,emily@univ.ac.kr,03,,,", "2024306201,허민재,,,minjae@univ.ac.kr,04,,,"],
    MOODLE_EN: ["2024103117,,서준,김,seojun@univ.ac.kr,,moodle,,", "2024103814,,민준,김,minjun.a@univ.ac.kr,,moodle,,",
                "2024104107,,민준,김,minjun.b@univ.ac.kr,,moodle,,", "2023100001,,도현,이,ta.lee@univ.ac.kr,,moodle,,"],
    MOODLE_KO: ["2024103117,,서준,김,seojun@univ.ac.kr,,moodle,,", "2024103814,,민준,김,minjun.a@univ.ac.kr,,moodle,,",
                "2024104107,,민준,김,minjun.b@univ.ac.kr,,moodle,,"],
    CANVAS: ['2024205101,"Jeon, Harin",,,,CSE4032-03,canvas,48211,harin03',
             '2024205145,"Clark, Emily",,,,CSE4032-03,canvas,48215,emily03'],
}
SKIPPED = {     # what make roster names as left out, row by row
    HAKSA: ["row 1 (above the header: 2026학년도 2학기 수강생 명단 (CSE4032 딥러닝))"],
    MOODLE_EN: ["row 2 (박교수: no ID number; an instructor's row? a student without one cannot be graded)"],
    MOODLE_KO: ["row 2 (박교수: role 교수, not a student)", "row 6 (이도현: role 조교, not a student)"],
    CANVAS: ["row 2 (Canvas's Points Possible row)", "row 5 (Student, Test: Canvas's test student)"],
}
# the three lists merged (make roster FILE=<학사 list>, then FILE=<Moodle> ADD=1, then FILE=<Canvas> ADD=1)
MERGED = HEADER + "".join(line + "\r\n" for line in [
    "2024103117,김서준,,,seojun@univ.ac.kr,01,moodle,,", "2024103814,김민준,,,minjun.a@univ.ac.kr,01,moodle,,",
    "2024104107,김민준,,,minjun.b@univ.ac.kr,02,moodle,,", "2024205101,전하린,,,harin@univ.ac.kr,03,canvas,48211,harin03",
    "2024205145,CLARK EMILY,,,emily@univ.ac.kr,03,canvas,48215,emily03", "2024306201,허민재,,,minjae@univ.ac.kr,04,,,",
    "2023100001,,도현,이,ta.lee@univ.ac.kr,,moodle,,"])


def make_roster(course: Path, export: Path, capsys, *flags: str) -> str:
    assert roster.main([str(export), "--course", str(course), *flags]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("export", [HAKSA, MOODLE_EN, MOODLE_KO, CANVAS], ids=lambda p: p.stem)
def test_make_roster_on_each_platforms_export_reads_back_the_same_students(course, export, capsys):
    out = make_roster(course, export, capsys)
    written = (course / "students.csv").read_bytes()
    assert written == (HEADER + "".join(line + "\r\n" for line in WRITTEN[export])).encode()
    # every command reads it back by its own columns: the same students, every field, as the export gave them
    from_export = roster.read(export)[0]
    assert roster.read(course / "students.csv")[0] == from_export
    assert len(from_export) == len(WRITTEN[export])
    for line in SKIPPED[export]:
        assert f"  {line}\n" in out, out
    assert f"left out, not students ({len(SKIPPED[export])}):" in out
    # and written again from what was read, byte for byte
    assert roster.encode(roster.read(course / "students.csv")[0]) == written
    assert make_roster(course, course / "students.csv", capsys).endswith(f"unchanged: {course / 'students.csv'}\n")


def test_the_three_lists_merge_by_id_and_a_plain_make_roster_warns_and_keeps_the_list(course, capsys):
    make_roster(course, HAKSA, capsys)
    out = make_roster(course, MOODLE_EN, capsys, "--add")
    assert "merged by id into" in out and "(6 students): 3 updated, 1 added, 3 as they were; now 7 students" in out
    assert "2023100001  이도현  ta.lee@univ.ac.kr" in out, "the TA, not on the 학사 list, is named"
    out = make_roster(course, CANVAS, capsys, "--add")
    assert "(7 students): 2 updated, 0 added, 5 as they were; now 7 students" in out
    assert (course / "students.csv").read_bytes() == MERGED.encode()
    # the same list merged again changes nothing
    assert make_roster(course, CANVAS, capsys, "--add").endswith("unchanged: " + str(course / "students.csv") + "\n")
    # a plain make roster would replace the merged list: warned, the old one kept, twice in one second
    first = make_roster(course, CANVAS, capsys)
    assert re.search(r"WARNING .*students\.csv had 7 students; this list has 2 \(5 of them are not in it\): the old "
                     r"list is kept as students\.\d{8}-\d{6}\.csv\. To merge the two instead, .* ADD=1", first), first
    second = make_roster(course, MOODLE_EN, capsys)
    assert "had 2 students; this list has 4 (2 of them are not in it)" in second
    kept = sorted(course.glob("students.*.csv"))
    assert len(kept) == 2 and {p.read_bytes() for p in kept} == {MERGED.encode(), (HEADER + "".join(
        line + "\r\n" for line in WRITTEN[CANVAS])).encode()}, "two backups, neither overwritten"


def _course_zips(tmp_path: Path) -> dict[str, Path]:
    moodle = make_zip(tmp_path / "CSE4032-과제 1-51234.zip", {
        "김서준_2318401_assignsubmission_file_01_layernorm.ipynb": notebook("seojun"),
        "김민준_2318408_assignsubmission_file_01_layernorm.ipynb": notebook("minjun a"),
        "김민준_2318411_assignsubmission_file_01_layernorm.ipynb": notebook("minjun b"),
    })
    canvas = make_zip(tmp_path / "submissions.zip", {
        "jeonharin_48211_1593801_01_layernorm.ipynb": notebook("harin"),
        "clarkemily_late_48215_1593805_01_layernorm-1.ipynb": notebook("emily"),      # Canvas before: _late_
    })
    return {"moodle": moodle, "canvas": canvas}


def test_a_moodle_only_course_places_every_notebook_from_the_participants_export(tmp_path, course, capsys):
    make_roster(course, MOODLE_KO, capsys)
    report = collect.collect(_course_zips(tmp_path)["moodle"], ASSIGNMENT, course)
    assert sorted(p.student.id for p in report.placed) == ["2024103117"]
    assert [p.why for p in report.unplaced] == ["2 students of students.csv are called 김민준 (2024103814, 2024104107)"] * 2


def test_two_platforms_and_a_list_collect_by_canvas_number_and_assign_places_the_same_names(tmp_path, course, capsys,
                                                                                           monkeypatch):
    import shlex
    import subprocess
    import sys
    monkeypatch.delenv("MAKELEVEL", raising=False)
    (course / "students.csv").write_bytes(MERGED.encode())
    zips = _course_zips(tmp_path)
    report = collect.collect(zips["canvas"], ASSIGNMENT, course)
    assert sorted((p.student.id, p.why.split(";")[0], p.owner.prefix) for p in report.placed) == [
        ("2024205101", "Canvas number on the roster", "jeonharin_48211_1593801_"),
        ("2024205145", "Canvas number on the roster", "clarkemily_late_48215_1593805_")]
    # Moodle: the two 김민준 are left, each with the command that places it
    assert collect.main([str(zips["moodle"]), ASSIGNMENT, "--course", str(course)]) == 1
    out = capsys.readouterr().out
    assert "\nexit status 1: 2 files left to place (above, each with what to do); not a crash: everything else " \
           "is in place\n" in out
    remedies = re.findall(r"what to do: open it to see whose it is, then place it: (.*) \(or …:(\d+)\)\n", out)
    assert [other for _, other in remedies] == ["2024104107", "2024104107"]
    assert "make roster" not in out, "never a make roster for students already on the list"
    first = shlex.split(remedies[0][0])
    assert first[1:] == ["-m", "classroom.tools.collect", str(zips["moodle"]), ASSIGNMENT, "--course", collect.shown(course),
                         "--assign", "김민준_2318408_assignsubmission_file_01_layernorm.ipynb:2024103814"]
    assert (course / "collected" / ASSIGNMENT / "unplaced" / "_unknown").is_dir()
    # run as printed, then the other one with its id
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, *first[1:]], cwd=root, capture_output=True, text=True, check=False)
    assert result.returncode == 1 and "exit status 1: 1 file left to place" in result.stdout, result.stdout
    assert "placed by ASSIGN" in result.stdout and "1 of them had been left in unplaced/ before" in result.stdout
    # the other one's remedy now names the student who has nothing yet
    (second,) = re.findall(r"then place it: (.*) \(or …:2024103814\)\n", result.stdout)
    assert shlex.split(second)[-1] == "김민준_2318411_assignsubmission_file_01_layernorm.ipynb:2024104107"
    result = subprocess.run([sys.executable, *shlex.split(second)[1:]], cwd=root, capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0 and "not placed" not in result.stdout, result.stdout + result.stderr
    assert not (course / "collected" / ASSIGNMENT / "unplaced").exists() or \
        not list((course / "collected" / ASSIGNMENT / "unplaced").rglob("*.ipynb")), "placed files leave unplaced/"
    assert _files(course / "submitted") == {
        f"{sid}/{ASSIGNMENT}/{NOTEBOOK}": notebook(tag) for sid, tag in (
            ("2024103117", "seojun"), ("2024103814", "minjun a"), ("2024104107", "minjun b"),
            ("2024205101", "harin"), ("2024205145", "emily"))}
    prefixes = {sid: row["prefix"] for sid, row in collect.manifest(course, ASSIGNMENT).items()}
    assert prefixes["2024103814"] == "김민준_2318408_assignsubmission_file_"
    assert prefixes["2024104107"] == "김민준_2318411_assignsubmission_file_"
    # the feedback zip for Moodle names both pages for Moodle, and says who came from Canvas
    for sid in prefixes:
        page = course / "feedback" / sid / ASSIGNMENT / "01_layernorm.html"
        page.parent.mkdir(parents=True)
        page.write_text(sid, encoding="utf-8")
    with zipfile.ZipFile(platform_export.feedback_zip(course, "moodle", ASSIGNMENT)) as archive:
        assert sorted(archive.namelist()) == sorted(f"{prefixes[s]}01_layernorm.html"
                                                    for s in ("2024103117", "2024103814", "2024104107"))
    out = capsys.readouterr().out
    assert "not in the zip, collected from another platform (2): 2024205101 (Canvas), 2024205145 (Canvas)" in out


def test_canvas_late_in_any_case():
    for late in ("_LATE", "_late", "_Late", ""):
        m = collect.Canvas()._match(f"kimsumin{late}_12345_67890_01_layernorm.ipynb")
        assert m and m["student_id"] == "12345" and (m["late"] or "") == late


def test_collect_never_goes_back_in_time_and_keeps_every_version(tmp_path, course, capsys):
    (course / "students.csv").write_bytes(MERGED.encode())
    name = "김서준_2318401_assignsubmission_file_01_layernorm.ipynb"
    at = {1: (2026, 9, 10, 9, 0, 0), 2: (2026, 9, 12, 23, 58, 0), 3: (2026, 9, 13, 8, 0, 0)}
    zips = {tag: make_zip(tmp_path / f"{tag}.zip", {name: notebook(tag)}, when=at[when])
            for tag, when in (("v1", 1), ("v2", 2), ("v3", 3), ("v4", 3), ("v5", 3))}
    submitted = course / "submitted" / "2024103117" / ASSIGNMENT / NOTEBOOK
    results = []
    for tag in ("v1", "v2", "v1", "v3", "v4", "v5"):
        report = collect.collect(zips[tag], ASSIGNMENT, course)
        results.append((tag, report.placed[0].result, json.loads(submitted.read_bytes())["metadata"]["tag"]))
        if tag == "v1" and len(results) == 3:
            collect.print_report(report, zips[tag], ASSIGNMENT, course, "make autograde")
    assert results == [("v1", "new", "v1"), ("v2", "replaced", "v2"), ("v1", "older", "v2"), ("v3", "replaced", "v3"),
                       ("v4", "replaced", "v4"), ("v5", "replaced", "v5")]
    out = capsys.readouterr().out
    assert "[older]" in out and "older than the one there (2026-09-12 23:58:00), which is kept and graded" in out
    assert "0 new, 0 replaced, 0 unchanged, 1 older (older than the one there: not placed)" in out
    kept = _files(course / "collected" / ASSIGNMENT / "replaced" / "2024103117")
    assert sorted(kept) == ["01_layernorm.20260910-090000.ipynb", "01_layernorm.20260912-235800.ipynb",
                            "01_layernorm.20260913-080000-2.ipynb", "01_layernorm.20260913-080000.ipynb"]
    assert sorted(kept.values()) == sorted(notebook(t) for t in ("v1", "v2", "v3", "v4")), "every version, once"
    # FORCE=1 puts the older one in place, the newer kept
    assert collect.collect(zips["v1"], ASSIGNMENT, course, force=True).placed[0].result == "replaced"
    assert json.loads(submitted.read_bytes())["metadata"]["tag"] == "v1"


def test_assign_refuses_a_file_or_an_id_it_does_not_know(tmp_path, course):
    (course / "students.csv").write_bytes(MERGED.encode())
    download = _course_zips(tmp_path)["moodle"]
    with pytest.raises(SystemExit, match=r"has no file 'nope\.ipynb'; its names are 김민준_2318408_"):
        collect.collect(download, ASSIGNMENT, course, assign=["nope.ipynb:2024103814"])
    with pytest.raises(SystemExit, match=r"9999 is not an id of students\.csv"):
        collect.collect(download, ASSIGNMENT, course, assign=["김민준_2318408_assignsubmission_file_01_layernorm.ipynb:9999"])
    with pytest.raises(SystemExit, match=r"expected <file>:<student id>"):
        collect.collect(download, ASSIGNMENT, course, assign=["2024103814"])


# --------------------------------------------------------------------------- the grade files, imported as the platforms do

MERGED_GRADES = ("assignment,student_id,last_name,first_name,email,status,score,max_score,timestamp,note\r\n"
                 f"{ASSIGNMENT},2023100001,이,도현,ta.lee@univ.ac.kr,not submitted,,5,,\r\n"
                 f"{ASSIGNMENT},2024103117,김서준,,seojun@univ.ac.kr,graded,5,5,2026-09-12 10:00:00,\r\n"
                 f"{ASSIGNMENT},2024103814,김민준,,minjun.a@univ.ac.kr,graded,3,5,2026-09-12 10:00:00,\r\n"
                 f"{ASSIGNMENT},2024104107,김민준,,minjun.b@univ.ac.kr,not graded,,5,,the notebook's code did not stop\r\n"
                 f"{ASSIGNMENT},2024205101,전하린,,harin@univ.ac.kr,graded,4,5,2026-09-12 10:00:00,\r\n"
                 f"{ASSIGNMENT},2024205145,CLARK EMILY,,emily@univ.ac.kr,not submitted,,5,,\r\n"
                 f"{ASSIGNMENT},2024306201,허민재,,minjae@univ.ac.kr,graded,2.5,5,2026-09-12 10:00:00,\r\n")


# Moodle's course (its participants export's ID numbers), Canvas's course (its gradebook export's students)
MOODLE_ID_NUMBERS = {"2024103117", "2024103814", "2024104107", "2023100001"}
CANVAS_USERS = [{"id": "48211", "sis_user_id": "2024205101", "sis_login_id": "harin03", "name": "Jeon, Harin"},
                {"id": "48215", "sis_user_id": "2024205145", "sis_login_id": "emily03", "name": "Clark, Emily"}]


@pytest.fixture
def merged_course(course) -> Path:
    (course / "students.csv").write_bytes(MERGED.encode())
    (course / "grades.csv").write_bytes(("\ufeff" + MERGED_GRADES).encode())
    return course


def test_grades_export_writes_each_platforms_own_students_and_leaves_out_who_would_lose_a_grade(merged_course, capsys):
    moodle = platform_export.write_grades(merged_course, "moodle", ASSIGNMENT)
    # written by hand from the rules: Moodle's students of students.csv, graded ones only
    assert moodle.read_bytes() == ("ID number,Full name,Email address,01_layernorm_ko\r\n"
                                   "2024103117,김서준,seojun@univ.ac.kr,5\r\n"
                                   "2024103814,김민준,minjun.a@univ.ac.kr,3\r\n").encode()
    out = capsys.readouterr().out
    assert ": 2 students, for Moodle; not submitted left out (no grade); 5 rows left out:" in out
    assert "  left out, not on Moodle (3): 2024205101, 2024205145, 2024306201\n" in out
    assert "  left out, not graded: a grade you type in the platform stays (an empty cell would clear it) (1): " \
           "2024104107 (the notebook's code did not stop)\n" in out
    assert "  left out, not submitted (no grade; MISSING=zero gives them 0) (1): 2023100001\n" in out
    # imported as Moodle does: nothing aborts, and the grade typed by hand for the not-graded student stays
    typed = {"2024104107": "4"}
    assert moodle_import(moodle.read_bytes(), MOODLE_ID_NUMBERS, typed, ASSIGNMENT) == \
        {"2024103117": "5", "2024103814": "3", "2024104107": "4"}
    canvas = platform_export.write_grades(merged_course, "canvas", ASSIGNMENT, column="과제 1 (318203)", missing="zero")
    assert canvas.read_bytes() == ("Student,ID,SIS User ID,SIS Login ID,Section,과제 1 (318203)\r\n"
                                   "전하린,48211,2024205101,harin03,03,4\r\n"
                                   "CLARK EMILY,48215,2024205145,emily03,03,0\r\n").encode()
    assert canvas_import(canvas.read_bytes(), CANVAS_USERS, {}) == ({"48211": "4", "48215": "0"}, [])
    simple = platform_export.write_grades(merged_course, "simple", ASSIGNMENT, section="4")
    assert simple.name == f"{ASSIGNMENT}_simple_section-4_grades_not-submitted-empty.csv"
    assert simple.read_bytes() == "\ufeff학번,점수\r\n2024306201,2.5\r\n".encode()
    with pytest.raises(SystemExit, match=r"no student of students.csv is in section 05: its sections are 01, 02, 03, 04"):
        platform_export.write_grades(merged_course, "simple", ASSIGNMENT, section="05")


def test_the_import_parsers_catch_what_the_old_files_did(merged_course):
    """The file written before: every student for every platform, blank for the not graded. Moodle aborts on the
    first Canvas student; a blank would clear the hand grade. The parsers can fail."""
    old = ("ID number,Full name,Email address,01_layernorm_ko\r\n2023100001,이도현,,\r\n2024103117,김서준,,5\r\n"
           "2024104107,김민준,,\r\n2024205101,전하린,,4\r\n").encode()
    with pytest.raises(MoodleImportAborted, match="2024205101"):
        moodle_import(old, MOODLE_ID_NUMBERS, {}, ASSIGNMENT)
    cleared = moodle_import(old.replace(b"2024205101,\xec\xa0\x84\xed\x95\x98\xeb\xa6\xb0,,4\r\n", b""),
                            MOODLE_ID_NUMBERS, {"2024104107": "4"}, ASSIGNMENT)
    assert cleared["2024104107"] is None, "the hand grade is lost"
    _, unknown = canvas_import("Student,ID,SIS User ID,SIS Login ID,Section,A (1)\r\n"
                               "허민재,,2024306201,,04,2.5\r\n".encode(), CANVAS_USERS, {})
    assert unknown == [["허민재", "", "2024306201", "", "04", "2.5"]]
    with pytest.raises(AssertionError):
        canvas_import(b"ID,Student,Section,A (1)\r\n", CANVAS_USERS, {})


def test_canvas_export_takes_canvas_numbers_from_the_roster_not_only_from_a_download(merged_course):
    table, notes = platform_export.grades_table(merged_course, "canvas", ASSIGNMENT, "empty", "과제 1 (318203)")
    assert table[1][:5] == ["전하린", "48211", "2024205101", "harin03", "03"]
    assert "the students of Canvas: 2 on Canvas in students.csv" in notes


def test_the_rows_left_out_are_counted_as_students_even_when_a_note_has_commas(merged_course, capsys):
    """The count on the console is of students left out (3 not on Moodle, 1 not graded, 1 not submitted),
    whatever the not-graded student's note says: autograde's notes hold commas and colons."""
    grades = (merged_course / "grades.csv").read_text(encoding="utf-8-sig")
    (merged_course / "grades.csv").write_bytes(("\ufeff" + grades.replace(
        "the notebook's code did not stop", "\"the notebook's code did not stop: a loop, e.g. inside except:, was killed\""
    )).encode())
    platform_export.write_grades(merged_course, "moodle", ASSIGNMENT)
    out = capsys.readouterr().out
    assert ": 2 students, for Moodle; not submitted left out (no grade); 5 rows left out:" in out
    assert "(1): 2024104107 (the notebook's code did not stop: a loop, e.g. inside except:, was killed)\n" in out
