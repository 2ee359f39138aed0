"""The book's repository address comes from one place, _config.yml's repository.url (and .branch):
every copy the notebooks embed follows it, and `make repository` (book/tools/repository.py) rewrites
those copies, and nothing else, without executing a notebook."""

from __future__ import annotations

import io
import re
import shutil
import subprocess

import nbformat
import pytest
import yaml

from book.tools import bilingual, build_chapters, repository
from classroom.tools import build_assignments
from helpers.paths import ROOT

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["repository"]
OLD_URL, OLD_BRANCH = CONFIG["url"], CONFIG.get("branch", "main")
NEW_URL, NEW_BRANCH = "https://github.com/seoul-ml-course/norm-layers-2027", "spring-2027"
# Files that may hold the address besides _config.yml and the notebooks the tool keeps, and why.
# where the chapters' library links point (book/tools/build_chapters.py's LIBRARY_LINK)
LIBRARY_PATHS = "normlib/|book/normlib_book/|classroom/normlib_classroom/|benchmarks/normlib_benchmarks/"

ELSEWHERE = {
    "tests/classroom/test_feedback_parts.py": "a sample URL in a traceback the feedback pages must keep",
}


def run(root, check=False) -> tuple[int, str]:
    out = io.StringIO()
    status = repository.run(root, check=check, out=out)
    return status, out.getvalue()


def copy_of_the_book(tmp_path):
    """The files the tool reads and writes (and a few it must leave alone), in tmp_path."""
    root = tmp_path / "book"
    (root / "chapters").mkdir(parents=True)
    (root / "classroom" / "course").mkdir(parents=True)
    for name in ("_config.yml", "_toc.yml", "glossary.md"):
        shutil.copy2(ROOT / name, root / name)
    for lang in ("ko", "en"):
        shutil.copytree(ROOT / "chapters" / lang, root / "chapters" / lang)
    shutil.copytree(ROOT / "classroom" / "course" / "source", root / "classroom" / "course" / "source")
    shutil.copytree(ROOT / "classroom" / "course" / "src", root / "classroom" / "course" / "src")
    return root


def move_the_book(root):
    config = root / "_config.yml"
    text = config.read_text(encoding="utf-8")
    assert text.count(f"url: {OLD_URL}\n") == 1 and text.count(f"branch: {OLD_BRANCH}\n") == 1
    config.write_text(text.replace(f"url: {OLD_URL}\n", f"url: {NEW_URL}\n")
                      .replace(f"branch: {OLD_BRANCH}\n", f"branch: {NEW_BRANCH}\n"), encoding="utf-8")


def snapshot(root) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_committed_notebooks_follow_config():
    status, out = run(ROOT, check=True)
    assert status == 0, f"run `make repository`:\n{out}"
    assert len(repository.notebooks(ROOT)) == 2 * len(build_chapters.stems()) + 2 * len(build_assignments.stems())


def test_no_other_committed_file_holds_the_address():
    try:
        files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as error:
        pytest.skip(f"not a git checkout: {error}")
    kept = {p.relative_to(ROOT).as_posix() for p in repository.notebooks(ROOT)} | {"_config.yml"}
    holders = set()
    for name in files.decode().split("\0"):
        path = ROOT / name
        if name and path.is_file() and OLD_URL.encode() in path.read_bytes():
            holders.add(name)
    assert holders - kept - set(ELSEWHERE) == set(), (
        "these files hold a copy of repository.url that `make repository` does not rewrite: make them "
        "read _config.yml, or teach book/tools/repository.py to rewrite them")
    assert kept <= holders | {"_config.yml"}


def test_moving_the_book_rewrites_every_copy_and_nothing_else(tmp_path):
    root = copy_of_the_book(tmp_path)
    move_the_book(root)
    before = snapshot(root)
    notebooks = {p.relative_to(root).as_posix() for p in repository.notebooks(root)}

    status, out = run(root, check=True)
    assert status == 1
    named = {line.split(":")[0] for line in out.splitlines() if ": out of date:" in line}
    assert named == notebooks, "--check names every notebook, each once"
    assert snapshot(root) == before, "--check changed a file"

    status, out = run(root)
    assert status == 0, out
    after = snapshot(root)
    assert after.keys() == before.keys()
    for name, old in before.items():
        expected = old
        if name in notebooks:   # the copies, and only them: the links first (they hold the branch too)
            expected = (re.sub(f"{re.escape(OLD_URL)}/blob/{re.escape(OLD_BRANCH)}/(?={LIBRARY_PATHS})",
                               f"{NEW_URL}/blob/{NEW_BRANCH}/", old.decode("utf-8"))
                        .replace(f"git+{OLD_URL}\\\"", f"git+{NEW_URL}\\\"").encode("utf-8"))
            assert expected != old, f"{name} holds no copy"
        assert after[name] == expected, f"{name} changed beyond the address"
    assert not any(OLD_URL.encode() in data for name, data in after.items() if name in notebooks)
    assert run(root, check=True)[0] == 0
    assert run(root)[0] == 0 and snapshot(root) == after, "a second run changes nothing"


def test_the_rewritten_notebooks_are_what_the_builders_write(tmp_path, monkeypatch):
    """What `make chapters` and `make assignments` would write from the moved _config.yml: the same
    code (so the chapters keep their outputs and need no execution) and the same bytes."""
    root = copy_of_the_book(tmp_path)
    move_the_book(root)
    assert run(root)[0] == 0
    for module in (bilingual, build_chapters):
        monkeypatch.setattr(module, "repository_url", lambda root=None: NEW_URL)
        monkeypatch.setattr(module, "repository_branch", lambda root=None: NEW_BRANCH)
    for stem in build_chapters.stems():
        blocks = build_chapters.parse((build_chapters.SRC / f"{stem}.md").read_text(encoding="utf-8"), stem)
        for lang in build_chapters.LANGS:
            path = root / "chapters" / lang / f"{stem}.ipynb"
            built = build_chapters.notebook(blocks, stem, lang)
            assert build_chapters.keep_outputs(built, nbformat.read(path, as_version=4)), f"{path}: code differs"
            assert nbformat.writes(built) + "\n" == path.read_text(encoding="utf-8"), path
    for stem in build_assignments.stems():
        blocks = build_assignments.parse((build_assignments.SRC / f"{stem}.md").read_text(encoding="utf-8"), stem)
        for lang in build_assignments.LANGS:
            path = root / "classroom" / "course" / "source" / f"{stem}_{lang}" / f"{stem}.ipynb"
            assert nbformat.writes(build_assignments.notebook(blocks, lang)) + "\n" == path.read_text(encoding="utf-8"), path


def test_a_release_is_named_not_rewritten_and_a_stray_copy_is_a_problem(tmp_path):
    root = copy_of_the_book(tmp_path)
    release = root / "classroom" / "course" / "release" / "01_layernorm_ko" / "01_layernorm.ipynb"
    release.parent.mkdir(parents=True)
    shutil.copy2(root / "classroom" / "course" / "source" / "01_layernorm_ko" / "01_layernorm.ipynb", release)
    chapter = root / "chapters" / "en" / "05_rmsnorm.ipynb"
    nb = nbformat.read(chapter, as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell(f"The code is at {OLD_URL}."))
    nbformat.write(nb, chapter)
    assert run(root, check=True)[0] == 0, "the same address everywhere: nothing to say"
    move_the_book(root)
    released = release.read_bytes()

    status, out = run(root)
    assert release.read_bytes() == released
    assert "classroom/course/release/01_layernorm_ko/01_layernorm.ipynb" in out and "make assignments-release" in out
    problems = [line for line in out.splitlines() if line.startswith("PROBLEM")]
    assert len(problems) == 1 and "chapters/en/05_rmsnorm.ipynb" in problems[0], out
    assert f"cell(s) {len(nb.cells) - 1} still hold {OLD_URL}" in problems[0]
    assert status == 1

    status, out = run(root, check=True)
    assert status == 1 and "classroom/course/release/01_layernorm_ko/01_layernorm.ipynb" in out


def test_the_makefile_runs_it():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "\nrepository: $(STAMP)\n\t$(PY) -m book.tools.repository" in makefile
