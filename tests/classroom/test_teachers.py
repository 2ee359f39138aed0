"""The guide for teachers, a page in each language's book (chapters/ko/teachers.md,
chapters/en/teachers.md): every command it names exists, every path it names is in the repository
or is one the classroom writes (git-ignored), its links stay inside its own language's book, and
the two pages name the same commands and link the same chapters."""

from __future__ import annotations

import pytest

from helpers.docs import MD_LINK as LINK
from helpers.docs import git_ignored as ignored
from helpers.docs import lines_without_hangul, links_out_of_the_book, local_links, make_targets
from helpers.docs import make_commands as commands
from helpers.docs import named_paths as paths
from helpers.paths import ROOT

LANGS = ("ko", "en")
PAGES = {lang: ROOT / "chapters" / lang / "teachers.md" for lang in LANGS}
# What the brief of issue 19 asks the guide to cover, by command
COURSE_COMMANDS = {"assignments-release", "autograde", "feedback", "lab-teacher", "assignments", "repository", "book"}


def text(lang: str) -> str:
    return PAGES[lang].read_text(encoding="utf-8")


@pytest.mark.parametrize("lang", LANGS)
def test_every_make_command_is_a_target(lang):
    named = commands(text(lang))
    assert named, "the guide names no make command"
    assert named - make_targets() == set(), f"not Makefile targets: {sorted(named - make_targets())}"
    assert COURSE_COMMANDS <= named, f"the guide does not say how to run: {sorted(COURSE_COMMANDS - named)}"


@pytest.mark.parametrize("lang", LANGS)
def test_every_path_exists_or_is_written_by_the_classroom(lang):
    missing = []
    for path in sorted(paths(text(lang))):
        concrete = path.split("<")[0]          # classroom/course/submitted/<student id>/… : the folder before
        if not (ROOT / concrete).exists() and not ignored(concrete):
            missing.append(path)
    assert not missing, f"paths that are neither in the repository nor written by the classroom: {missing}"


def test_the_path_check_sees_a_wrong_path():
    assert paths("see `classroom/course/sources/`, `classroom/tools/classroom.py`, `grades.csv`, `.github/x.yml`, `a/<b c>/`, "
                 "not `x y/z`, `.ipynb`") == {
        "classroom/course/sources/", "classroom/tools/classroom.py", "grades.csv", ".github/x.yml", "a/<b c>/"}
    assert not (ROOT / "classroom/course/sources/").exists() and not ignored("classroom/course/sources")
    assert ignored("classroom/course/grades.csv") and ignored("classroom/course/submitted/")
    assert commands("`make autograde FORCE=1`와 make assignments-release로") == {"autograde", "assignments-release"}


@pytest.mark.parametrize("lang", LANGS)
def test_links_stay_in_the_same_language_book(lang):
    page = text(lang)
    assert local_links(page), "the guide links no chapter"
    bad = links_out_of_the_book(page, PAGES[lang].parent)
    assert not bad, f"link a page of chapters/{lang}/ by its file name: {bad}"
    assert "README" not in " ".join(LINK.findall(page))


def test_both_pages_name_the_same_commands_and_chapters():
    ko, en = text("ko"), text("en")
    assert commands(ko) == commands(en)
    assert sorted(link for link in LINK.findall(ko) if "://" not in link) == \
        sorted(link for link in LINK.findall(en) if "://" not in link)
    for lang in LANGS:
        assert "_config.yml" in text(lang) and "launch_buttons.jupyterhub_url" in text(lang)
        assert "repository.url" in text(lang) and ".github/workflows/deploy-book.yml" in text(lang)


def test_the_korean_page_is_written_in_korean():
    """Every paragraph, list item and table row outside code has Hangul."""
    english = lines_without_hangul(text("ko"))
    assert not english, english
