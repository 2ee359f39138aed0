"""`make lab` opens the chapters without nbgrader's teacher tools; `make lab-teacher` opens the course
with them (tools/lab.py). Each JupyterLab is started for real on a free port and asked over HTTP."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tools import lab

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        return error.code, ""


class Lab:
    def __init__(self, role: str, tmp: Path):
        self.port = free_port()
        self.log = tmp / f"{role}.log"
        args = [sys.executable, "-m", "tools.lab", role, "--no-browser", f"--port={self.port}",
                "--ServerApp.token=", "--ServerApp.password=", "--ServerApp.ip=127.0.0.1"]
        env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp / "runtime"), HOME=str(tmp))
        self.process = subprocess.Popen(args, cwd=ROOT, stdout=self.log.open("w"), stderr=subprocess.STDOUT,
                                        env=env, start_new_session=True)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"{role} JupyterLab exited:\n{self.log.read_text()}")
            try:
                status, _ = get(self.url("/api"))
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise AssertionError(f"{role} JupyterLab did not start in 60 s:\n{self.log.read_text()}")

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def page_config(self) -> dict:
        status, html = get(self.url("/lab"))
        assert status == 200, status
        data = re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', html, re.S)
        assert data, html[:500]
        return json.loads(data.group(1))

    def stop(self) -> str:
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
        return self.log.read_text()


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
