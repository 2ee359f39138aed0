"""`make lab` opens copies of the chapters (lab/) without nbgrader's teacher tools; `make lab-teacher`
opens the course with them (book/tools/lab.py). Each JupyterLab is started for real on a free port and asked
over HTTP. That running and saving the copies leaves the repository as it was: tests/book/test_lab_copies.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from book.tools import lab
from helpers.lab_server import Lab, get
from helpers.paths import ROOT


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
