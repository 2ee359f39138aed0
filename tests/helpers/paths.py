"""Where the repository is, and what a test does when something it needs is missing: skip on a
laptop, fail under CI=true (every folder's tests)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def running_in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def unavailable(msg: str, what: str = "the browser tests must run"):
    """Skip with ``msg`` on a laptop that lacks something; under CI=true, fail instead."""
    if running_in_ci():
        pytest.fail(f"{msg} (CI=true: {what})")
    pytest.skip(msg)
