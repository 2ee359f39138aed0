"""`make lab` opens the chapters without nbgrader's teacher tools; `make lab-teacher` opens the course
with them (tools/lab.py). Each JupyterLab is started for real on a free port and asked over HTTP."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import ROOT, Lab, get
from tools import lab


@pytest.mark.slow
def test_a_reader_gets_the_chapters_without_teacher_tools(tmp_path):
    reader = Lab("reader", tmp_path)
    try:
        config = reader.page_config()
        assert "@jupyter/nbgrader" in config["disabledExtensions"], config["disabledExtensions"]
        assert reader.page_config()["serverRoot"].rstrip("/").endswith("chapters")
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
        assert config["serverRoot"].rstrip("/").endswith("assignments")
        assert get(teacher.url("/formgrader"))[0] == 200
    finally:
        teacher.stop()


def test_root_gets_allow_root_and_a_note_instead_of_a_refusal():
    argv, _, notes = lab.command("reader", [], is_root=True)
    assert "--allow-root" in argv and any("root" in note for note in notes)
    argv, _, notes = lab.command("teacher", [], is_root=False)
    assert "--allow-root" not in argv and not any("--allow-root" in note for note in notes)
    with pytest.raises(ValueError, match="got 'student'"):
        lab.command("student", [], is_root=False)


def test_a_folder_given_replaces_the_default_and_the_readers_lab_writes_outside_the_repository(tmp_path):
    argv, env, _ = lab.command("reader", [], is_root=False)
    assert str(ROOT / "chapters") in argv
    for name in ("JUPYTERLAB_WORKSPACES_DIR", "JUPYTERLAB_SETTINGS_DIR"):   # else under tools/lab_reader/lab/
        if name in env:
            assert not Path(env[name]).resolve().is_relative_to(ROOT), (name, env[name])
    for option in (f"--notebook-dir={tmp_path}", f"--ServerApp.root_dir={tmp_path}"):
        for role, folder in (("reader", "chapters"), ("teacher", "assignments")):
            argv, _, _ = lab.command(role, [option], is_root=False)
            assert str(ROOT / folder) not in argv and argv[-1] == option, argv
