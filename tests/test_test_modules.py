"""The test suite's own rule: test modules share code through tests/helpers.py (plain helpers)
and tests/conftest.py (fixtures, which pytest injects), never by importing one another."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_no_test_module_imports_another_test_module_or_conftest():
    offenders = []
    for path in sorted(TESTS.glob("*.py")):
        for name in imported_modules(path):
            top = name.split(".")[-1] if name.startswith("tests.") else name.split(".")[0]
            if top.startswith("test_") or top == "conftest":
                offenders.append(f"{path.name} imports {name}")
    assert not offenders, "move what is shared into tests/helpers.py: " + "; ".join(offenders)


def test_the_check_sees_such_an_import(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("from test_functional import compare\nimport conftest\nfrom helpers import ROOT\n")
    assert imported_modules(sample) == {"test_functional", "conftest", "helpers"}
