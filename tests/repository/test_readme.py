"""The README is the front door, CONTRIBUTING.md the map, ARCHITECTURE.md the tree, and each product
folder has a README of its own: every make target they name is a Makefile target, every path they
name is in the repository (from its root, or from the page's folder) or is one a command writes
(git-ignored), every link leads to a file, the README gives every kind of reader a section from its
first screen, and gives the published book's address as _config.yml sets it. (No line caps: the
README's length is a matter for its review, not a number echoed here.)

The book's address is not a key of its own: GitHub Pages publishes the repository
``https://github.com/OWNER/REPO`` of ``repository.url`` at ``https://OWNER.github.io/REPO/``
(.github/workflows/deploy-book.yml), so that is what the README must say. (The repository's own
address stays out of the README: tests/repository/test_repository.py allows it only where `make repository`
rewrites it.)
"""

from __future__ import annotations

import re

import pytest
import yaml

from helpers.docs import concrete_paths, local_links, make_commands, make_targets, unreal_paths
from helpers.paths import ROOT

FRONT = ("README.md", "CONTRIBUTING.md")
PRODUCTS = {"normlib": "library", "book": "book", "classroom": "classroom", "benchmarks": "benchmarks",
            "tests": None}
DOCS = (*FRONT, "ARCHITECTURE.md", *(f"{folder}/README.md" for folder in PRODUCTS), "classroom/GUIDE.md")
PAGES_ADDRESS = re.compile(r"https://[\w.-]+\.github\.io/[^\s)>`]*")


def text(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


def published_address(repository_url: str) -> str:
    """GitHub Pages' address of a repository's site: https://github.com/o/r -> https://o.github.io/r/."""
    match = re.fullmatch(r"https://github\.com/([\w.-]+)/([\w.-]+?)(?:\.git)?/?", repository_url)
    assert match, f"repository.url is not a GitHub repository: {repository_url}"
    owner, repo = match.groups()
    return f"https://{owner.lower()}.github.io/{repo}/"


def config() -> dict:
    return yaml.safe_load(text("_config.yml"))


@pytest.mark.parametrize("doc", DOCS)
def test_every_make_command_is_a_target(doc):
    named = make_commands(text(doc), code_only=True)
    if doc in FRONT:
        assert {"book", "test"} <= named
    assert named <= make_targets(), f"{doc} names make targets the Makefile lacks: {sorted(named - make_targets())}"


@pytest.mark.parametrize("doc", DOCS)
def test_every_path_exists_or_is_written_by_a_command(doc):
    folder = (ROOT / doc).parent
    unreal = [p for p in unreal_paths(text(doc)) if not all((folder / c).exists() for c in concrete_paths(p))]
    assert not unreal, f"{doc}: paths neither in the repository (from its root or {doc}'s folder) nor git-ignored: {unreal}"


@pytest.mark.parametrize("doc", DOCS)
def test_local_links_lead_to_files(doc):
    for link in local_links(text(doc)):
        if re.match(r"[a-z]+:", link):           # normlib:functional.layer_norm, the chapters' own scheme
            continue
        target = link.split("#")[0]
        assert not target or ((ROOT / doc).parent / target).exists(), f"{doc} links to {link}, which is not there"


@pytest.mark.parametrize("folder", PRODUCTS)
def test_each_product_folder_has_a_readme_that_says_how_to_test_it(folder):
    """What it may import, how to test it (its marker), and it is linked from CONTRIBUTING.md's map."""
    readme = text(f"{folder}/README.md")
    marker = PRODUCTS[folder]
    if marker:
        assert "May import" in readme, f"{folder}/README.md does not say what it may import"
        assert re.search(rf"pytest -m \"?{marker}\b", readme), f"{folder}/README.md does not give `pytest -m {marker}`"
    assert f"]({folder}/README.md)" in text("CONTRIBUTING.md"), f"CONTRIBUTING.md does not link {folder}/README.md"


def test_the_path_checks_see_what_is_wrong():
    assert concrete_paths("benchmarks/results/fold.{md,json}") == ["benchmarks/results/fold.md",
                                                                   "benchmarks/results/fold.json"]
    assert concrete_paths("tests/library/test_functional.py::test_zero_size_inputs[instance]") == ["tests/library/test_functional.py"]
    assert concrete_paths("classroom/course/submitted/<student id>/…") == ["classroom/course/submitted/"]
    assert unreal_paths("`benchmarks/results/fold.{md,txt}` and `book/site/website.py`") == [
        "benchmarks/results/fold.{md,txt}"]
    assert unreal_paths("`_build/html/ko/` `lab/assignments/x/`") == []          # written by commands, ignored
    assert make_commands("make the book with `make book`;\n```bash\nmake lab\n```\n", code_only=True) == {"book", "lab"}


def test_the_readme_is_a_front_door():
    readme = text("README.md")
    first_screen = "\n".join(readme.splitlines()[:40])
    # both languages, and every kind of reader finds their section from the first screen
    assert len(re.findall(r"[\uac00-\ud7a3]", first_screen)) >= 100 and "**English**" in first_screen
    for anchor in ("#readers", "#students", "#teachers", "#contributors"):
        assert f"]({anchor}" in first_screen, anchor
    headings = re.findall(r"^## (.+)$", readme, re.MULTILINE)
    for kind in ("Readers", "Students", "Teachers", "Contributors"):
        assert any(kind in h for h in headings), kind
    for link in ("CONTRIBUTING.md", "chapters/ko/students.md", "chapters/en/students.md",
                 "chapters/ko/teachers.md", "chapters/en/teachers.md", "ARCHITECTURE.md"):
        assert f"]({link}" in readme, link
    classroom = {"assignments-release", "roster", "collect", "autograde", "grades-export", "feedback",
                 "feedback-export"}
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", readme, re.MULTILINE | re.DOTALL)
    assert any(classroom <= make_commands(block) for block in blocks), "the classroom's commands in one block"


def test_architecture_links_contributing():
    assert "](CONTRIBUTING.md)" in text("ARCHITECTURE.md")


def test_the_readme_gives_the_address_config_sets():
    repository = config()["repository"]["url"]
    readme = text("README.md")
    addresses = PAGES_ADDRESS.findall(readme)
    home = published_address(repository)
    assert home in addresses, f"README.md does not give the published book's address {home}"
    assert all(a.startswith(home) for a in addresses), f"addresses of another site: {addresses}"
    assert published_address("https://github.com/Normlib-Book/normalization-layers") == \
        "https://normlib-book.github.io/normalization-layers/"


DATED = re.compile(r"\b\d{1,2} (?:January|February|March|April|May|June|July|August|September|October|November|"
                   r"December)\b|\b\d+ min \d+ s\b")      # (a timestamp's format, 2025-03-14 09:26:53 UTC, is no measurement)


@pytest.mark.parametrize("doc", DOCS)
def test_no_dated_numbers(doc):
    """A measurement with a date goes stale: the docs link to the table a tool writes (tests/TIMINGS.md,
    benchmarks/results/) instead of copying it."""
    assert not DATED.findall(text(doc)), f"{doc} quotes dated measurements: {DATED.findall(text(doc))}"


def test_the_dated_check_sees_a_date():
    assert DATED.findall("On 3 December, 3,047 passed in 11 min 16 s") == ["3 December", "11 min 16 s"]
    assert not DATED.findall("make test-fast: under a minute on 2 cores; torch 2.13, nbgrader 0.9.6")
