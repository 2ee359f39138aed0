"""JupyterLab started for real, as make lab runs it (tests/book/test_lab.py,
test_explorer_lab.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers.paths import ROOT


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str) -> tuple[int, str]:
    """(status, body) of a GET on ``url``; an HTTP error's body is ''."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        return error.code, ""


class Lab:
    """``python -m book.tools.lab ROLE`` (what make lab / make lab-teacher run) on a free port of
    127.0.0.1 with no token, its HOME and runtime files in ``tmp``, its log in ``tmp/ROLE.log``;
    ``extra`` are more JupyterLab options (``--notebook-dir=…``). Waits until /api answers."""

    def __init__(self, role: str, tmp: Path, extra: tuple[str, ...] = ()):
        import time

        self.port = free_port()
        self.log = tmp / f"{role}.log"
        args = [sys.executable, "-m", "book.tools.lab", role, "--no-browser", f"--port={self.port}",
                "--ServerApp.token=", "--ServerApp.password=", "--ServerApp.ip=127.0.0.1", *extra]
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
        self.stop()
        raise AssertionError(f"{role} JupyterLab did not start in 60 s:\n{self.log.read_text()}")

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def page_config(self) -> dict:
        import json
        import re

        status, html = get(self.url("/lab"))
        assert status == 200, status
        data = re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', html, re.S)
        assert data, html[:500]
        return json.loads(data.group(1))

    def stop(self) -> str:
        """Stop the server and its kernels (the whole process group); return its log."""
        import signal

        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        except ProcessLookupError:
            pass
        return self.log.read_text()
