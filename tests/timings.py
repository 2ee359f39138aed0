"""`pytest --timings=FILE`: write each test group's share of this run to FILE (Markdown), from the run's
own durations. `make timings` runs the whole suite as `make test` does with
``--timings=tests/TIMINGS.md``; without the option nothing is measured and nothing is written, so an
ordinary run never changes a tracked file.

A group is a marker (tests/conftest.py gives them: the product's folder, what a test needs beyond
Python, ``slow``); a test's time is its set-up, call and tear-down, in whichever worker ran it. A test in
two groups counts in both, and two workers run at once, so the groups add up to more than the run.
tests/conftest.py imports the hooks below (``pytest_addoption``, ``pytest_sessionstart``).
"""

from __future__ import annotations

import platform
import shlex
import subprocess
import time
from collections import defaultdict
from pathlib import Path

import pytest

PRODUCTS = ("library", "book", "classroom", "benchmarks", "repository")
RESOURCES = ("notebooks", "site", "browser", "nbgrader", "distributed")
SLOWEST = 12


def pytest_addoption(parser):
    parser.addoption("--timings", metavar="FILE", default=None,
                     help="write each test group's time in this run to FILE (make timings: tests/TIMINGS.md)")


def pytest_sessionstart(session):
    path = session.config.getoption("timings", default=None)
    if path and not hasattr(session.config, "workerinput"):      # the controller of a pytest-xdist run, or the one process
        session.config.pluginmanager.register(Timings(Path(path), session.config), "timings-writer")


def duration(seconds: float) -> str:
    """``3 min 27 s``, ``44 s``, ``0.4 s``."""
    if seconds >= 60:
        return f"{int(seconds // 60)} min {round(seconds % 60):d} s"
    return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"


def groups_of(keywords) -> list[str]:
    names = [name for name in (*PRODUCTS, *RESOURCES) if name in keywords]
    return ["fast (not slow)" if "slow" not in keywords else "slow", *names]


class Timings:
    def __init__(self, path: Path, config):
        self.path, self.config = path, config
        self.start = time.monotonic()
        self.seconds: dict[str, float] = defaultdict(float)      # nodeid: set-up + call + tear-down
        self.keywords: dict[str, set[str]] = {}
        self.outcomes: dict[str, str] = {}

    def pytest_runtest_logreport(self, report):
        self.seconds[report.nodeid] += report.duration
        self.keywords.setdefault(report.nodeid, set(report.keywords))
        if report.when == "call" or report.outcome != "passed":
            self.outcomes.setdefault(report.nodeid, "xfailed" if hasattr(report, "wasxfail") else report.outcome)

    def table(self) -> list[str]:
        count, total = defaultdict(int), defaultdict(float)
        for nodeid, seconds in self.seconds.items():
            for group in ["all", *groups_of(self.keywords[nodeid])]:
                count[group] += 1
                total[group] += seconds
        order = ["all", "fast (not slow)", "slow", *PRODUCTS, *RESOURCES]
        rows = ["| group | tests | time in the run |", "|---|---:|---:|"]
        rows += [f"| {'`' + g + '`' if g in PRODUCTS + RESOURCES else g} | {count[g]:,} | {duration(total[g])} |"
                 for g in order if count[g]]
        return rows

    def slowest(self) -> list[str]:
        units = defaultdict(float)
        for nodeid, seconds in self.seconds.items():
            units[nodeid.partition("::")[0]] += seconds
        rows = ["| file | time in the run |", "|---|---:|"]
        rows += [f"| `{name}` | {duration(s)} |" for name, s in sorted(units.items(), key=lambda u: -u[1])[:SLOWEST]]
        return rows

    def whole(self) -> bool:
        """Whether this run is make timings' own: every path of make test, no -m, no -k."""
        option = self.config.option
        paths = [a for a in self.config.invocation_params.args if not a.startswith("-")]
        return {"tests", "normlib", "chapters"} <= set(paths) and not option.markexpr and not option.keyword

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session, exitstatus):
        wall = time.monotonic() - self.start
        outcomes = defaultdict(int)
        for outcome in self.outcomes.values():
            outcomes[outcome] += 1
        try:
            commit = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True,
                                    cwd=self.config.rootpath, check=False).stdout.strip()
        except OSError:
            commit = "?"
        workers = getattr(self.config.option, "numprocesses", None) or 0
        args = shlex.join(self.config.invocation_params.args)
        lines = [
            "# Test timings",
            "",
            "Written by `make timings` (tests/timings.py) from the run's own durations: do not edit, run it again.",
            "A group is a marker (tests/conftest.py); a test's time is its set-up, call and tear-down. A test in two",
            "groups counts in both, and the workers run at once, so the groups add up to more than the run.",
            "",
            f"- run: `pytest {args}` at `{commit}` (pytest-xdist workers: {workers or 'none'}),"
            f" {platform.machine()} with {_cores()} cores",
            f"- {', '.join(f'{n:,} {o}' for o, n in sorted(outcomes.items()))} in {duration(wall)}",
            *([] if self.whole() else ["- **a partial run**, not the suite: `make timings` runs every test"]),
            "",
            *self.table(),
            "",
            f"The {SLOWEST} slowest test files (a notebook: all its cells):",
            "",
            *self.slowest(),
            "",
        ]
        self.path.write_text("\n".join(lines), encoding="utf-8")


def _cores() -> int:
    import os
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 0
