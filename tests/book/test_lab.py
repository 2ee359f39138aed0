"""book/tools/lab.py, what `make lab` and `make lab-teacher` run. `make lab` opens copies of the chapters
(lab/) without nbgrader's teacher tools; `make lab-teacher` opens the course with them: each JupyterLab is
started for real on a free port and asked over HTTP (first section). Running never changes the book: the
copies in lab/ (git-ignored) get what the book has new, keep what the reader changed, and FRESH=1 backs
the reader's copies up before copying afresh; the last test starts the reader's JupyterLab as `make lab`
does and saves every chapter through it, as JupyterLab's autosave does (second section). The tests that
start a JupyterLab are marked slow; the others are fast."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import urllib.request
from pathlib import Path

import pytest

from book.tools import lab
from helpers.lab_server import Lab, get
from helpers.paths import ROOT

# --------------------------------------------------------------------------- which JupyterLab, with which tools


@pytest.mark.slow
def test_a_reader_gets_the_chapters_without_teacher_tools(tmp_path):
    reader = Lab("reader", tmp_path, extra=(f"--workdir={tmp_path / 'copies'}",))    # make lab: lab/
    try:
        config = reader.page_config()
        assert "@jupyter/nbgrader" in config["disabledExtensions"], config["disabledExtensions"]
        assert config["serverRoot"].rstrip("/").endswith("copies")
        assert (tmp_path / "copies/ko/01_why_normalize.ipynb").read_bytes() == \
            (ROOT / "chapters/ko/01_why_normalize.ipynb").read_bytes()
        assert get(reader.url("/formgrader"))[0] == 404
        assert get(reader.url("/assignments"))[0] == 404
    finally:
        log = reader.stop()
    assert "nbgrader_config.py" not in log, log
    assert "01_why_normalize.ipynb" in log          # it says what to open first


@pytest.mark.slow
def test_a_teacher_gets_the_course_with_nbgrader(tmp_path):
    teacher = Lab("teacher", tmp_path)
    try:
        config = teacher.page_config()
        assert "@jupyter/nbgrader" not in config["disabledExtensions"], config["disabledExtensions"]
        assert config["serverRoot"].rstrip("/").endswith("classroom/course")
        assert get(teacher.url("/formgrader"))[0] == 200      # Manage Assignments, which looks for the exchange
        status, page = get(teacher.url("/formgrader/manage_students"))
        assert status == 200 and "Manage Students" in page
        # the student's Assignment List is off: it only ever said that the exchange is missing
        assert get(teacher.url("/assignments?course_id=normalization-layers"))[0] == 404
        assert get(teacher.url("/courses"))[0] == 404
        status, courses = get(teacher.url("/formgraders"))        # Course List: the local formgrader
        assert status == 200 and '"course_id": "normalization-layers"' in courses, courses
    finally:
        log = teacher.stop()
    # nbgrader's "[C] Unwritable directory, please contact your instructor: /usr/local/share/nbgrader/exchange"
    assert "Unwritable" not in log and "Traceback" not in log, log
    assert "not serializable" not in log, log
    problems = [line for line in log.splitlines() if line.startswith(("[C", "[E")) and "received signal" not in line]
    assert problems == [], log


def _environment_server_extensions() -> dict[str, bool]:
    """The server extensions the environment's Jupyter configuration enables (nbgrader's own file among them)."""
    import json

    from jupyter_core.paths import jupyter_config_path

    enabled: dict[str, bool] = {}
    for folder in reversed(jupyter_config_path()):
        for path in sorted(Path(folder, "jupyter_server_config.d").glob("*.json")):
            enabled.update(json.loads(path.read_text()).get("ServerApp", {}).get("jpserver_extensions", {}))
    return enabled


def _turned_off(argv: list[str]) -> set[str]:
    import ast

    [option] = [a for a in argv if a.startswith("--ServerApp.jpserver_extensions=")]
    extensions = ast.literal_eval(option.split("=", 1)[1])
    assert set(extensions.values()) == {False}, extensions
    return set(extensions)


def test_the_teacher_gets_nbgraders_tools_without_its_exchange():
    nbgrader = {name for name, on in _environment_server_extensions().items() if on and name.startswith("nbgrader.")}
    kept = {"nbgrader.server_extensions.formgrader", "nbgrader.server_extensions.validate_assignment",
            "nbgrader.server_extensions.course_list"}
    assert kept < nbgrader, nbgrader      # the environment enables them: what the teacher keeps
    argv, env, _ = lab.command("teacher", [], is_root=False)
    # what nbgrader enables beyond these serves the exchange (assignment_list: fetch and submit, in
    # nbgrader 0.9.6), which this course does not use: if it came back, so would its "[C]" lines
    assert _turned_off(argv) == nbgrader - kept == {"nbgrader.server_extensions.assignment_list"}
    assert "--FormgradeExtension.debug=False" in argv and env == {}
    reader, _, _ = lab.command("reader", [], is_root=False)
    assert _turned_off(reader) == nbgrader


def test_root_gets_allow_root_and_a_note_instead_of_a_refusal():
    argv, _, notes = lab.command("reader", [], is_root=True)
    assert "--allow-root" in argv and any("root" in note for note in notes)
    argv, _, notes = lab.command("teacher", [], is_root=False)
    assert "--allow-root" not in argv and not any("--allow-root" in note for note in notes)
    with pytest.raises(ValueError, match="got 'student'"):
        lab.command("student", [], is_root=False)


def test_a_folder_given_replaces_the_default_and_the_readers_lab_writes_outside_the_repository(tmp_path):
    argv, env, _ = lab.command("reader", [], is_root=False)
    assert str(ROOT / "lab") in argv and str(ROOT / "chapters") not in argv     # the copies, not the book
    # Jupyter writes into its configuration directory (workspaces, settings, "migrated"): the reader's
    # own ~/.jupyter; book/tools/lab_reader/ is only on the path it reads
    assert "JUPYTER_CONFIG_DIR" not in env and env["JUPYTER_CONFIG_PATH"].split(os.pathsep)[0] == str(lab.READER_CONFIG)
    for name in ("JUPYTERLAB_WORKSPACES_DIR", "JUPYTERLAB_SETTINGS_DIR"):
        if name in env:
            assert not Path(env[name]).resolve().is_relative_to(ROOT), (name, env[name])
    for option in (f"--notebook-dir={tmp_path}", f"--ServerApp.root_dir={tmp_path}"):
        for role, folder in (("reader", "lab"), ("teacher", "classroom/course")):
            argv, _, _ = lab.command(role, [option], is_root=False)
            assert str(ROOT / folder) not in argv and argv[-1] == option, argv


# --------------------------------------------------------------------------- the reader's copies (lab/)


def _book(folder: Path) -> Path:
    for rel, text in {"ko/01_a.ipynb": "ko one", "en/01_a.ipynb": "en one", "ko/index.md": "[1](01_a.ipynb)",
                      "src/01_a.md": "source", "ko/.ipynb_checkpoints/01_a-checkpoint.ipynb": "old"}.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


def _tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_first_run_copies_the_language_folders_and_later_runs_keep_the_readers_copies(tmp_path):
    book, work = _book(tmp_path / "book"), tmp_path / "lab"
    copied, backup = lab.copy_chapters(work, book)
    assert backup is None
    assert sorted(map(str, copied)) == ["en/01_a.ipynb", "ko/01_a.ipynb", "ko/index.md"]
    assert _tree(work) == {"en/01_a.ipynb": "en one", "ko/01_a.ipynb": "ko one", "ko/index.md": "[1](01_a.ipynb)"}
    notes = lab.copy_notes(work, copied, backup, 3)
    assert "chapters/" in notes[0] and "FRESH=1" in notes[-1] and "새로 받" in notes[-1]

    (work / "ko/01_a.ipynb").write_text("the reader's run")      # edited and saved
    (work / "en/01_a.ipynb").unlink()                             # deleted for a fresh copy
    (book / "ko/02_b.ipynb").write_text("ko two")                 # a chapter new in the book
    copied, backup = lab.copy_chapters(work, book)
    assert sorted(map(str, copied)) == ["en/01_a.ipynb", "ko/02_b.ipynb"] and backup is None
    assert (work / "ko/01_a.ipynb").read_text() == "the reader's run"
    assert (work / "en/01_a.ipynb").read_text() == "en one" and (work / "ko/02_b.ipynb").read_text() == "ko two"
    [new, fresh] = lab.copy_notes(work, copied, backup, 4)
    assert "ko/02_b.ipynb" in new and "lab/" in fresh or str(work) in fresh
    assert lab.copy_chapters(work, book) == ([], None)           # nothing missing: nothing copied


def test_fresh_moves_the_readers_copies_to_a_backup_and_copies_everything_again(tmp_path):
    book, work = _book(tmp_path / "book"), tmp_path / "lab"
    lab.copy_chapters(work, book)
    (work / "ko/01_a.ipynb").write_text("the reader's run")
    (work / "ko/mine.ipynb").write_text("the reader's own notebook")
    (work / "assignments").mkdir()                                # make student's folder is not the book's
    (work / "assignments/x.ipynb").write_text("homework")
    copied, backup = lab.copy_chapters(work, book, fresh=True)
    assert backup is not None and backup.parent == work / "backup"
    assert _tree(backup) == {"en/01_a.ipynb": "en one", "ko/01_a.ipynb": "the reader's run",
                             "ko/index.md": "[1](01_a.ipynb)", "ko/mine.ipynb": "the reader's own notebook"}
    assert (work / "ko/01_a.ipynb").read_text() == "ko one" and len(copied) == 3
    assert not (work / "ko/mine.ipynb").exists() and (work / "assignments/x.ipynb").read_text() == "homework"
    again, second = lab.copy_chapters(work, book, fresh=True)       # a second FRESH=1 keeps the first backup
    assert second != backup and _tree(backup)["ko/01_a.ipynb"] == "the reader's run" and len(again) == 3
    assert "backup" in lab.copy_notes(work, again, second, 3)[0]


def _relative_links(text: str) -> set[str]:
    """Markdown links and images (``[..](target)``), src="..." and href="..." that are not URLs or anchors."""
    found = re.findall(r"\]\(([^)\s]+)\)", text) + re.findall(r'(?:src|href)="([^"]+)"', text)
    return {t.split("#")[0] for t in found if not re.match(r"[a-z][a-z0-9+.-]*:|#", t) and t.split("#")[0]}


def test_the_notebooks_relative_links_lead_where_they_did_from_the_copies():
    """From lab/<language>/ a link reaches the same file of the repository, or its copy in lab/."""
    links = 0
    for rel in lab.book_files():
        text = (lab.BOOK / rel).read_text(encoding="utf-8", errors="replace")
        if rel.suffix == ".ipynb":
            text = "\n".join("".join(cell["source"]) for cell in json.loads(text)["cells"])
        for link in _relative_links(text):
            in_book = (lab.BOOK / rel.parent / link).resolve()
            in_copy = (lab.WORKDIR / rel.parent / link).resolve()
            expected = lab.WORKDIR / in_book.relative_to(lab.BOOK) if in_book.is_relative_to(lab.BOOK) else in_book
            assert in_copy == expected, (rel, link, in_copy, expected)
            links += 1
    assert links > 22, links          # every chapter links to its other language, index.md to the chapters
    # cells read committed results from the repository, looking upwards from the notebook's folder
    from normlib_benchmarks.report import results_file

    assert results_file("normalization", lab.WORKDIR / "ko") == ROOT / "benchmarks/results/normalization.json"
    ignored = subprocess.run(["git", "check-ignore", "-q", "lab/ko/01_why_normalize.ipynb"], cwd=ROOT, check=False)
    assert ignored.returncode == 0, "lab/ must be git-ignored"


class _Browser:
    """Requests as JupyterLab's page makes them: with the server's _xsrf cookie echoed in a header."""

    def __init__(self, reader: Lab):
        import http.cookiejar

        self.reader, jar = reader, http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        self.opener.open(reader.url("/lab"), timeout=30).read()
        self.xsrf = next(cookie.value for cookie in jar if cookie.name == "_xsrf")

    def __call__(self, path: str, method: str = "GET", body: dict | None = None) -> dict:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.reader.url(path), data=data, method=method,
                                         headers={"Content-Type": "application/json", "X-XSRFToken": self.xsrf})
        with self.opener.open(request, timeout=30) as response:
            return json.loads(response.read() or b"{}")


def _fingerprints(*folders: Path) -> dict[str, str]:
    """Every file of ``folders`` (ignored ones too) and its hash."""
    return {str(p.relative_to(ROOT)): hashlib.sha256(p.read_bytes()).hexdigest()
            for folder in folders for p in sorted(folder.rglob("*")) if p.is_file()}


def _git_status() -> list[str]:
    return subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.splitlines()


@pytest.mark.slow
def test_saving_every_chapter_in_make_labs_jupyterlab_leaves_the_repository_as_it_was(tmp_path):
    status, files = _git_status(), _fingerprints(lab.BOOK, lab.READER_CONFIG)
    work = tmp_path / "lab"
    (tmp_path / ".ipython").mkdir()       # the reader has used IPython: jupyter_core then writes its "migrated" mark
    reader = Lab("reader", tmp_path, extra=(f"--workdir={work}",))
    chapters = [rel for rel in lab.book_files() if rel.suffix == ".ipynb"]
    try:
        root = reader.page_config()["serverRoot"].rstrip("/")      # "~/lab": HOME is tmp_path here
        assert Path(root.replace("~", str(tmp_path), 1)) == work, root
        assert len(chapters) >= 22
        request = _Browser(reader)
        for rel in chapters:
            url = f"/api/contents/{rel.as_posix()}"
            notebook = request(url + "?content=1")["content"]
            code = next(cell for cell in notebook["cells"] if cell["cell_type"] == "code")
            code["outputs"], code["execution_count"] = [], None          # as a run on another machine
            code["source"] += "\n# run by the reader"
            notebook["metadata"]["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                                  "language": "python"}
            request(url, "PUT", {"type": "notebook", "format": "json", "content": notebook})    # the autosave
            request(url + "/checkpoints", "POST")                                            # and Ctrl+S
        # what JupyterLab's page stores as the reader works: the layout of the workspace, a setting
        request("/lab/api/workspaces/default", "PUT", {"data": {}, "metadata": {"id": "default"}})
        request("/lab/api/settings/@jupyterlab/apputils-extension:themes", "PUT",
                {"raw": '{"theme": "JupyterLab Dark"}'})
        saved = request(f"/api/contents/{chapters[0].as_posix()}?content=1")["content"]
        assert any("# run by the reader" in "".join(c["source"]) for c in saved["cells"])
    finally:
        log = reader.stop()
    assert all((work / rel).read_bytes() != (lab.BOOK / rel).read_bytes() for rel in chapters)   # saved: the copies
    assert "make lab FRESH=1" in log, log
    after = _fingerprints(lab.BOOK, lab.READER_CONFIG)       # chapters/ and book/tools/lab_reader/: byte for byte
    assert {name: after.get(name) for name in files} == files     # (a file others add meanwhile is theirs)
    assert not [name for name in set(after) - set(files) if "checkpoint" in name or "lab_reader" in name]
    now = _git_status()
    assert now == status, f"new: {sorted(set(now) - set(status))}, gone: {sorted(set(status) - set(now))}"
    # what Jupyter writes for itself went to the reader's own Jupyter folder (HOME is tmp_path here)
    own = tmp_path / ".jupyter"
    assert (own / "migrated").exists() and list((own / "lab/workspaces").iterdir()), sorted(own.rglob("*"))
    assert list((own / "lab/user-settings").rglob("themes.jupyterlab-settings")), sorted(own.rglob("*"))
    assert not (lab.READER_CONFIG / "migrated").exists() and not (lab.READER_CONFIG / "lab").exists()
