"""`make help` (and `make` alone) lists every target with its ``##`` comment, read from the Makefile's
own lines: every public target has one, and the list shows it. A target added without a comment
fails here, so the list cannot fall behind the Makefile."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from helpers.paths import ROOT

TARGET = re.compile(r"^([a-z][a-z0-9-]*)\s*:(?!=)")


def documented_targets(makefile: str) -> dict[str, str]:
    """Each public target (a lower-case name at the start of a line) and its ``##`` comment: the
    ``##`` lines above it, variable lines between them allowed, a blank line ending the comment."""
    found, comment = {}, []
    for line in makefile.splitlines():
        if line.startswith("## "):
            comment.append(line[3:])
        elif not line.strip():
            comment = []
        elif match := TARGET.match(line):
            found[match.group(1)] = " ".join(comment)
            comment = []
    return found


def make_help(makefile=None, goal: str = "help") -> str:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    command = ["make", "--no-print-directory", "-s"] + (["-f", str(makefile)] if makefile else []) + ([goal] if goal else [])
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60, check=True).stdout


def listed(output: str) -> set[str]:
    return {line.split()[0] for line in output.splitlines() if line and not line[0].isspace()}


def test_every_public_target_has_a_comment():
    targets = documented_targets((ROOT / "Makefile").read_text(encoding="utf-8"))
    assert {"book", "test", "test-fast", "help"} <= set(targets)
    missing = sorted(t for t, comment in targets.items() if not comment)
    assert not missing, f"targets without a ## comment above them: {missing}"


def test_make_help_lists_every_target_with_its_comment():
    targets = documented_targets((ROOT / "Makefile").read_text(encoding="utf-8"))
    output = make_help()
    assert listed(output) == set(targets), f"make help lists {sorted(listed(output))}, the Makefile has {sorted(targets)}"
    for target, comment in targets.items():
        line = next(line for line in output.splitlines() if line.split()[:1] == [target])
        assert comment.split()[0] in line, f"make help's line for {target} is not its comment: {line!r}"


def test_make_alone_prints_the_help():
    assert make_help(goal="") == make_help()


def test_the_checks_see_a_target_without_a_comment(tmp_path):
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8") + "\nundocumented:\n\t@true\n"
    assert documented_targets(makefile)["undocumented"] == ""
    sample = tmp_path / "Makefile"
    sample.write_text(makefile, encoding="utf-8")
    assert "undocumented" in listed(make_help(sample))      # listed, with no comment: the first test fails on it
    assert documented_targets("## one\nX ?= 1\nfirst:\n\nsecond:\n") == {"first": "one", "second": ""}


def test_make_timings_writes_the_table_and_a_plain_run_writes_nothing(tmp_path):
    """`make timings` is `make test` with --timings=tests/TIMINGS.md (tests/timings.py); the option
    writes each group's time in that run, and a run without it writes no file."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^timings:.*\n\t(.*)", makefile, re.MULTILINE).group(1)
    assert recipe == "$(PY) -m pytest $(TEST_ALL) --timings=tests/TIMINGS.md", recipe
    assert re.search(r"^test:.*\n\t\$\(PY\) -m pytest \$\(TEST_ALL\)\n", makefile, re.MULTILINE)
    test = "tests/repository/test_make_help.py::test_every_public_target_has_a_comment"
    committed = ROOT / "tests" / "TIMINGS.md"

    def stamp():
        return committed.stat().st_mtime_ns if committed.exists() else None

    def run(*extra: str) -> None:
        subprocess.run([sys.executable, "-m", "pytest", test, "-q", *extra], cwd=ROOT, capture_output=True,
                       text=True, timeout=300, check=True)

    before = stamp()
    run()
    assert stamp() == before, "a plain pytest run wrote tests/TIMINGS.md"
    table = tmp_path / "TIMINGS.md"
    run(f"--timings={table}")
    written = table.read_text(encoding="utf-8")
    assert "| group | tests | time in the run |" in written and "| `repository` | 1 |" in written, written
