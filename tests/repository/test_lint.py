"""`make lint` passes: ruff, with the settings in pyproject.toml, finds nothing in the sources."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUFF = Path(sys.executable).parent / "ruff"


def test_ruff_finds_nothing():
    if not RUFF.exists():
        pytest.fail(f"ruff is not installed next to {sys.executable}: it is pinned in requirements.txt (make venv)")
    result = subprocess.run([str(RUFF), "check", "--no-cache", "--output-format", "concise", "."], cwd=ROOT,
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, "make lint fails:\n" + result.stdout[-4000:] + result.stderr[-2000:]


def test_ruff_reports_a_real_problem(tmp_path):
    """The same command fails on an unused import, so the check above can fail."""
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "bad.py").write_text("import os\n", encoding="utf-8")
    result = subprocess.run([str(RUFF), "check", "--no-cache", "."], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 1 and "F401" in result.stdout, result.stdout


def test_chapter_code_has_no_unused_import_or_undefined_name():
    """The chapters' code, as readers run it (one language's notebooks: the code is the same in both):
    pyflakes' checks only, since notebook code is written to be read one cell at a time."""
    if not RUFF.exists():
        pytest.fail(f"ruff is not installed next to {sys.executable}: it is pinned in requirements.txt (make venv)")
    notebooks = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "chapters" / "en").glob("*.ipynb"))
    assert notebooks, "no chapter notebooks in chapters/en"
    result = subprocess.run([str(RUFF), "check", "--no-cache", "--isolated", "--select", "F", "--output-format",
                             "concise", *notebooks], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, "fix chapters/src (then make chapters):\n" + result.stdout[-4000:] + result.stderr
