"""The students' way in: the page for students in each language's book (chapters/ko/students.md,
chapters/en/students.md) and `make student A=<assignment>` (classroom/tools/student.py), which writes the
student version of an assignment where the student's JupyterLab opens it.

The page's commands are Makefile targets, its paths are in the repository or written by a command,
its links stay in its own book, its example message is what the checker prints for that slip, and
the messages it quotes are the checkers'. The student version holds no line of a solution or of a
hidden test (compared with classroom/course/source, the answer key), and a copy already there is the
student's work: it is kept, byte for byte, and nothing is written.
"""

from __future__ import annotations

import json
import re

import pytest

from classroom.tools import student
from helpers.docs import (
    FENCED,
    git_ignored,
    lines_without_hangul,
    links_out_of_the_book,
    local_links,
    make_commands,
    make_targets,
    unreal_paths,
)
from helpers.paths import ROOT
from normlib_classroom.words import PAIRS

LANGS = ("ko", "en")
PAGES = {lang: ROOT / "chapters" / lang / "students.md" for lang in LANGS}
SOURCE = ROOT / "classroom" / "course" / "source"
QUOTED = re.compile(r'\*\*"([^"]+)"\*\*')        # a checker's words, quoted in bold


def text(lang: str) -> str:
    return PAGES[lang].read_text(encoding="utf-8")


def assignment_names() -> list[str]:
    return sorted(p.name for p in SOURCE.iterdir() if p.is_dir())


# --------------------------------------------------------------------------- the page

@pytest.mark.parametrize("lang", LANGS)
def test_the_page_is_in_its_books_table_of_contents(lang):
    assert f"- file: chapters/{lang}/students\n" in (ROOT / "_toc.yml").read_text(encoding="utf-8")


@pytest.mark.parametrize("lang", LANGS)
def test_every_make_command_is_a_target_and_every_path_is_real(lang):
    named = make_commands(text(lang), code_only=True)
    assert {"lab", "student"} <= named, f"the page does not say how to run: {sorted({'lab', 'student'} - named)}"
    assert named <= make_targets(), f"not Makefile targets: {sorted(named - make_targets())}"
    assert not unreal_paths(text(lang)), "paths neither in the repository nor written by a command"
    # the example names an assignment that exists, in the page's language
    examples = re.findall(r"make student A=(\S+)", text(lang))
    assert examples and all(name in assignment_names() and name.endswith(f"_{lang}") for name in examples), examples


@pytest.mark.parametrize("lang", LANGS)
def test_links_stay_in_the_same_language_book(lang):
    assert local_links(text(lang)), "the page links no chapter"
    assert not links_out_of_the_book(text(lang), PAGES[lang].parent)


def test_both_pages_name_the_same_commands_chapters_and_folders():
    ko, en = text("ko"), text("en")
    assert make_commands(ko, code_only=True) == make_commands(en, code_only=True)
    assert sorted(local_links(ko)) == sorted(local_links(en))
    for lang in LANGS:
        # the answer key is named, to be left alone; the launch buttons and the working folder too
        for needed in ("classroom/course/source/", "lab/assignments/", "Colab", "Binder"):
            assert needed in text(lang), (lang, needed)


def test_the_korean_page_is_written_in_korean():
    assert not lines_without_hangul(text("ko"))
    assert lines_without_hangul("## Heading\n한국어 `code`\n```\nx = 1\n```\n") == ["## Heading"]


@pytest.mark.parametrize("lang", LANGS)
def test_the_example_message_is_what_the_checker_prints(lang):
    """The page shows the message of assignment 1's first check for a variance taken with x.var()
    (n − 1): the checker, run on that slip, must print exactly those lines."""
    from normlib_classroom import check_layer_norm_stats

    def layer_norm_stats(x, normalized_shape):
        dims = tuple(range(x.dim() - len(normalized_shape), x.dim()))
        return x.mean(dims, keepdim=True), x.var(dims, keepdim=True)

    shown = [block for block in FENCED.findall(text(lang)) if "layer_norm_stats" in block]
    assert len(shown) == 1, "the page shows one example message"
    with pytest.raises(AssertionError) as failure:
        check_layer_norm_stats(layer_norm_stats, lang)
    assert shown[0].strip() == str(failure.value).strip()


@pytest.mark.parametrize("lang", LANGS)
def test_the_messages_quoted_are_the_checkers(lang):
    words = [pair[LANGS.index(lang)] for key, pair in PAIRS.items() if key.startswith("ex:")]
    quoted = QUOTED.findall(text(lang))
    assert len(quoted) >= 3
    assert [q for q in quoted if not any(q in w for w in words)] == []


# --------------------------------------------------------------------------- make student

def test_a_bad_name_names_the_assignments_that_exist(capsys):
    for wrong in (["02_batchnorm"], []):           # the language left out; no name at all
        with pytest.raises(SystemExit) as refused:
            student.main(wrong)
        message = str(refused.value.code)
        assert all(name in message for name in assignment_names()), message
        assert "make student A=" in message
        # each language's line gives an example in that language: the Korean one a _ko assignment
        korean = [line for line in message.splitlines() if line.startswith("예:")]
        english = [line for line in message.splitlines() if line.startswith("Example:")]
        assert len(korean) == len(english) == 1, message
        assert re.fullmatch(r"예: make student A=\w+_ko", korean[0]), korean
        assert re.fullmatch(r"Example: make student A=\w+_en", english[0]), english


def test_the_working_copy_goes_where_make_lab_opens_and_git_ignores():
    from book.tools import lab

    assert student.WORKING == lab.WORKDIR / "assignments" == ROOT / "lab" / "assignments"
    assert git_ignored("lab/assignments/02_batchnorm_ko/02_batchnorm.ipynb")


def test_a_fresh_make_lab_keeps_the_students_assignments(tmp_path):
    """`make lab FRESH=1` backs up and recopies the chapters; the assignments beside them stay."""
    from book.tools import lab

    work = tmp_path / "assignments" / "02_batchnorm_ko" / "02_batchnorm.ipynb"
    work.parent.mkdir(parents=True)
    work.write_bytes(b'{"my": "answers"}')
    lab.copy_chapters(tmp_path)
    lab.copy_chapters(tmp_path, fresh=True)
    assert work.read_bytes() == b'{"my": "answers"}'


def test_an_existing_copy_is_kept(tmp_path, capsys):
    """The student's work: the command refuses (status 1), names the file, and writes nothing."""
    name = "02_batchnorm_ko"
    mine = tmp_path / name / "02_batchnorm.ipynb"
    mine.parent.mkdir()
    mine.write_bytes(b'{"my": "answers"}')
    (tmp_path / name / "notes.txt").write_text("mine too", encoding="utf-8")
    before = sorted(tmp_path.rglob("*"))
    assert student.main([name, "--out", str(tmp_path)]) == 1
    assert mine.read_bytes() == b'{"my": "answers"}'
    assert sorted(tmp_path.rglob("*")) == before
    assert "02_batchnorm.ipynb" in capsys.readouterr().err


def _cell_text(cell) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _answer_key_lines(notebook: dict) -> list[str]:
    """Every line between nbgrader's solution or hidden-test markers in the source notebook."""
    lines, inside = [], False
    for cell in notebook["cells"]:
        for line in _cell_text(cell).splitlines():
            if re.search(r"### (BEGIN|END) (SOLUTION|HIDDEN TESTS)", line):
                inside = "BEGIN" in line
            elif inside and len(line.strip()) >= 12:        # short lines (`return y`) are also in stubs
                lines.append(line.strip())
    return lines


@pytest.mark.nbgrader
@pytest.mark.parametrize("name", ["01_layernorm_ko", "05_fold_en"])
def test_the_student_copy_holds_no_solution_and_no_hidden_test(tmp_path, name):
    """Written by nbgrader's generate_assignment in a copy of the course (about 5 s)."""
    assert student.main([name, "--out", str(tmp_path)]) == 0
    stem = name.rsplit("_", 1)[0]
    written = tmp_path / name / f"{stem}.ipynb"
    raw = written.read_text(encoding="utf-8")
    source = json.loads((SOURCE / name / f"{stem}.ipynb").read_text(encoding="utf-8"))
    secret = _answer_key_lines(source)
    assert len(secret) >= 5
    released = "\n".join(_cell_text(c) for c in json.loads(raw)["cells"])
    leaked = [line for line in secret if line in released or json.dumps(line)[1:-1] in raw]
    assert not leaked, f"the student's copy holds lines of the answer key: {leaked}"
    assert not re.search(r"BEGIN SOLUTION|END SOLUTION|HIDDEN TESTS", raw)
    # what the student needs is there: every graded test cell, visible part only, and the stubs
    cells = {c["metadata"]["nbgrader"]["grade_id"]: c for c in json.loads(raw)["cells"]
             if "nbgrader" in c["metadata"]}
    for cell in source["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        if meta.get("grade"):
            visible = _cell_text(cell).split("### BEGIN HIDDEN TESTS")[0].strip()
            assert _cell_text(cells[meta["grade_id"]]).strip() == visible
        if meta.get("solution"):
            assert "raise NotImplementedError()" in _cell_text(cells[meta["grade_id"]])
