"""Fixtures, the hypothesis profiles and the test groups (markers) of the normlib tests.

Plain helpers shared by several modules (the tolerances of "equal to torch", ROOT, the table of
contents, has_hangul, text_outputs, ...) are in helpers.py: test modules import from there,
never from one another, nor from this file (tests/test_test_modules.py checks it).

Test groups
-----------
Every test that builds the book, opens a browser, runs nbgrader, starts processes or executes
notebooks carries a marker, given here by module (MODULE_MARKERS) and, for nbval, by file type:

    notebooks    nbval's items (each chapter notebook re-executed in a fresh kernel) and
                 test_perturbed_numerics.py (the notebooks re-executed under other numerics)
    book         test_book.py, test_site.py, test_offline_book.py, and any test taking the
                 built_site fixture (build the site with -W as make book does, read the HTML)
    browser      test_browser.py, test_search.py, test_accessibility.py, test_print.py,
                 test_explorer_lab.py (the explorer live in JupyterLab), and any test taking the
                 browser fixture (the built site in headless Chromium)
    classroom    test_assignments.py, test_classroom_shell.py (the nbgrader CLI: release,
                 validate, autograde, feedback; nbgrader from a plain shell)
    distributed  test_distributed.py (synchronized BatchNorm across real gloo processes)
    slow         all of the above, and the few library tests marked @pytest.mark.slow

`make test-fast` runs ``-m "not slow"``: the library tests, normlib's doctests and the
source/pair tests. The markers are registered in pyproject.toml (--strict-markers).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, settings

from helpers import PERTURBED_RUN, ROOT, chromium_browser, running_in_ci, start_early, start_perturbed

settings.register_profile(
    "default",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("thorough", parent=settings.get_profile("default"), max_examples=600)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


# --- Test groups ----------------------------------------------------------------------------------

MODULE_MARKERS = {
    "test_book": ("book",),
    "test_site": ("book",),
    "test_offline_book": ("book",),
    "test_browser": ("browser",),
    "test_search": ("browser",),
    "test_accessibility": ("browser",),
    "test_print": ("browser",),
    "test_explorer_lab": ("browser",),
    "test_assignments": ("classroom",),
    "test_classroom_shell": ("classroom",),
    "test_grading_execute": ("classroom",),
    "test_checker_output": ("classroom",),
    "test_distributed": ("distributed",),
    "test_perturbed_numerics": ("notebooks",),
}
# A test in one of these groups is also "slow": not part of `make test-fast`.
HEAVY = {"notebooks", "book", "browser", "classroom", "distributed"}


def groups_of(item) -> tuple[str, ...]:
    """The markers ``item`` gets from where it lives: its test module, or nbval's notebooks."""
    path = Path(str(item.path))
    if path.suffix == ".ipynb":      # nbval: a cell of a notebook re-executed in a fresh kernel
        return ("notebooks",)
    return MODULE_MARKERS.get(path.stem, ())


# A test that takes one of these fixtures is in that group wherever it lives.
FIXTURE_MARKERS = {"built_site": "book", "offline_site": "book", "browser": "browser"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        for name in groups_of(item):
            item.add_marker(name)
        for fixture, name in FIXTURE_MARKERS.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(name)
        if HEAVY & {m.name for m in item.iter_markers()}:
            item.add_marker("slow")


@pytest.fixture
def seeded():
    torch.manual_seed(0)
    yield


# --- The HTML site (tests/test_book.py, test_offline_book.py, test_browser.py, test_search.py, ...) ---

@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> Path:
    """The site built once per session as `make book` builds it (tools/website.py: one book per
    language with -W, index.html, ko/, en/), into a temporary folder.

    The builds vendor the browser assets themselves (tools/vendor_assets.py is a Sphinx extension
    of the book: npm ci when node_modules is missing or stale, then the copy into book_assets/)."""
    tmp = tmp_path_factory.mktemp("site")
    out, work = tmp / "html", tmp / "work"
    result = subprocess.run(
        [sys.executable, "-m", "tools.website", "--out", str(out), "--work", str(work)],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
    )
    if result.returncode != 0:
        pytest.fail("make book's build (tools/website.py, -W) failed:\n" + result.stdout[-6000:] + result.stderr[-4000:])
    return out


@pytest.fixture(scope="session")
def offline_site(built_site) -> Path:
    """The built site, provided its browser assets were vendored (npm was available).

    Without npm the book falls back to CDNs by design; then the offline tests skip on a
    developer's machine and fail on CI (CI=true), where npm is expected."""
    if not all((built_site / lang / "_static" / "offline" / "VENDORED.txt").exists() for lang in ("ko", "en")):
        msg = ("the book's browser assets were not vendored (npm missing or npm ci failed; see the "
               "build output), so the book loads MathJax from a CDN and Korean shows in the reader's own fonts")
        if running_in_ci():
            pytest.fail(msg)
        pytest.skip(msg)
    return built_site


@pytest.fixture(scope="session")
def book_url(offline_site):
    """The built book over HTTP on 127.0.0.1, a free port, for the whole session."""
    from tools.local_site import serve

    with serve(offline_site) as url:
        yield url


@pytest.fixture(scope="session")
def browser():
    """Headless Chromium for the whole session, shared by test_browser.py (the book),
    test_feedback.py (the feedback pages) and test_explorer_lab.py (the explorer in JupyterLab):
    Playwright's sync API allows one at a time."""
    yield from chromium_browser("run the browser tests (the book, the classroom's feedback pages, "
                                "the explorer in JupyterLab)")


def pytest_collection_finish(session):
    """Start the slow work that runs in other processes right away, so it runs on the second core
    while this session runs everything else (most of which uses one), instead of in line:

    - the selected test modules' EARLY set-up (helpers.start_early: nbgrader's release, autograde,
      feedback of a copied course);
    - when the perturbed-numerics tests are selected, their re-execution of every chapter, in a
      process of its own with one notebook at a time. test_perturbed_numerics.py waits for it;
      under pytest-xdist each worker runs its own.
    """
    if hasattr(session.config, "workerinput"):
        return
    for module in {item.module for item in session.items if getattr(item, "module", None) is not None}:
        for name, work in getattr(module, "EARLY", {}).items():
            start_early(name, work)
    if not any(
            item.path.name == "test_perturbed_numerics.py" and item.name.startswith("test_chapter_outputs")
            for item in session.items):
        return
    import tempfile

    out = Path(tempfile.mkdtemp(prefix="perturbed-")) / "results.json"
    chapters = sorted((ROOT / "chapters").glob("*/*.ipynb"))
    session.config.stash[PERTURBED_RUN] = (start_perturbed(chapters, out, jobs=1), out)


def pytest_sessionfinish(session):
    run = session.config.stash.get(PERTURBED_RUN, None)
    if run is not None and run[0].poll() is None:     # the session ended first (-x, Ctrl-C): stop it
        run[0].kill()
