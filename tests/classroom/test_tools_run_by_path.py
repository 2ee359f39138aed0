"""A classroom tool runs by its path as well as as a module: `make autograde` runs
``python classroom/tools/classroom.py`` (so that the command it prints can be pasted as it is), and
Python then puts classroom/tools/ first on the path, where classroom.py itself would pass for the
package ``classroom``. A fresh clone's make test failed on exactly that (the feedback pages' course
could not be graded); these start each tool the Makefile runs by path, from another folder."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from helpers.paths import ROOT

BY_PATH = re.compile(r"\$\(PY\) ((?:classroom|book)/\S+\.py)")


def run_by_path(script: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / script), "--help"], cwd=cwd, capture_output=True, text=True,
                          timeout=120, check=False)


def scripts() -> list[str]:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    return sorted(set(BY_PATH.findall(makefile)) | {"classroom/tools/platform_export.py"})


def test_the_makefile_runs_a_classroom_tool_by_its_path():
    assert "classroom/tools/classroom.py" in scripts()


@pytest.mark.parametrize("script", scripts())
def test_a_tool_run_by_its_path_starts(script, tmp_path):
    result = run_by_path(script, tmp_path)
    assert result.returncode == 0 and "usage:" in result.stdout, result.stderr[-2000:]


def test_the_check_sees_a_tool_that_takes_its_own_folder_for_the_package(tmp_path):
    """The same situation built by hand: a folder ``room/tools/`` holding ``room.py`` that imports
    ``room.tools``, run by its path without the fix, fails as classroom.py did."""
    tools = tmp_path / "room" / "tools"
    tools.mkdir(parents=True)
    (tools / "__init__.py").write_text("")
    (tools / "helper.py").write_text("")
    (tools / "room.py").write_text(f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\nfrom room.tools import helper\n")
    result = subprocess.run([sys.executable, str(tools / "room.py")], cwd=tmp_path, capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode != 0 and "'room' is not a package" in result.stderr, result.stderr
