"""Fixtures, the hypothesis profiles and the test groups (markers) of the normlib tests.

Plain helpers shared by several modules (the tolerances of "equal to torch", ROOT, the table of
contents, has_hangul, text_outputs, ...) are in the package helpers/, one module per thing they
serve (its __init__.py lists them): test modules import from there, never from one another, nor
from this file (tests/repository/test_test_modules.py checks it).

Test groups
-----------
Each test carries its product's marker, from its folder: ``library`` (tests/library/ and normlib's
doctests), ``book`` (tests/book/ and nbval's notebook items), ``classroom``, ``benchmarks``,
``repository``. A test that needs more than Python also carries what it needs, declared by its
module (``pytestmark = pytest.mark.nbgrader``) or given by the fixture it takes (FIXTURE_MARKERS):

    notebooks    nbval's items (each chapter notebook re-executed in a fresh kernel; each
                 chapter in one language under other numerics: PerturbedKernels) and
                 test_perturbed_numerics.py (the perturbation's own checks)
    site         builds the site with -W as make book does and reads the HTML (built_site)
    browser      the built site, JupyterLab or feedback pages in headless Chromium (browser)
    nbgrader     the nbgrader CLI: release, validate, autograde, feedback
    distributed  synchronized BatchNorm across real gloo processes
    slow         all of the above, and the few library tests marked @pytest.mark.slow

`make test-fast` runs ``-m "not slow"``: the library tests, normlib's doctests and the
source/pair tests. The markers are registered in pyproject.toml (--strict-markers).

Two processes
-------------
`make test` runs in two pytest-xdist workers (``-n 2 --dist loadscope``, with this file's
scheduler). What must stay in one worker is one unit (``unit_of``): a notebook's cells (nbval runs
them in order in one kernel), a page of the site (its one load in the browser: test_browser.py's
checks and its axe audit), a test module (its module-scoped set-up: a graded course, a server). The
units go out longest first (``UNITS_FIRST``, ``schedule``), the many short library tests last, so that
the two workers end together. The site is built once for both (``built_site``: a lock in the run's
shared temporary folder).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# OpenMP threads that wait by sleeping, not spinning: set before torch loads libgomp, inherited by the
# pytest-xdist workers, the notebooks' kernels and every process the tests start. Two workers on two
# cores each running torch on 2 threads spin against each other: chapter 10 re-executed with 2 threads
# in two processes at once took 317 s each spinning, 36 s each sleeping (30 s alone).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest  # noqa: E402
import torch  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

from helpers.background import start_early  # noqa: E402
from helpers.browser import chromium_browser  # noqa: E402
from helpers.page_visit import load_page  # noqa: E402
from helpers.paths import ROOT, running_in_ci  # noqa: E402
from helpers.perturbed import PerturbedKernels, perturbed_chapters  # noqa: E402
from helpers.scheduling import UNITS_FIRST, unit_of  # noqa: E402

settings.register_profile(
    "default",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("thorough", parent=settings.get_profile("default"), max_examples=600)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


# --- Test groups ----------------------------------------------------------------------------------

# The product a test belongs to is its folder (tests/library, tests/book, tests/classroom,
# tests/benchmarks, tests/repository); nbval's notebook items belong to the book, normlib's doctests
# to the library. What a test needs beyond Python (a built site, a browser, nbgrader, processes)
# it declares itself: `pytestmark = pytest.mark.nbgrader` in its module, or the fixture it takes.
PRODUCTS = ("library", "book", "classroom", "benchmarks", "repository")
# A test in one of these groups is also "slow": not part of `make test-fast`.
HEAVY = {"notebooks", "site", "browser", "nbgrader", "distributed"}


def groups_of(item) -> tuple[str, ...]:
    """The markers ``item`` gets from where it lives: its product's folder, or nbval's notebooks."""
    path = Path(str(item.path)).resolve()
    if path.suffix == ".ipynb":      # nbval: a cell of a notebook re-executed in a fresh kernel
        return ("book", "notebooks")
    try:
        folder = path.relative_to(ROOT / "tests").parts[0]
    except ValueError:               # a doctest of the library (normlib/...)
        return ("library",) if path.is_relative_to(ROOT / "normlib") else ()
    return (folder,) if folder in PRODUCTS else ()


# A test that takes one of these fixtures is in that group wherever it lives.
FIXTURE_MARKERS = {"built_site": "site", "offline_site": "site", "browser": "browser"}


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadscope`` (make test) with the book's units (unit_of) instead of xdist's modules and
    classes, sent in the order collected (``schedule``), not by their number of tests."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Units(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    config.option.loadscopereorder = False
    return Units(config, log)


def schedule(items: list) -> None:
    """Order the items: the units of UNITS_FIRST in that order, the other slow tests, the fast ones,
    each keeping the order collected (and so each unit its order)."""
    first = {name: rank for rank, name in enumerate(UNITS_FIRST)}

    def rank(item) -> tuple[int, int]:
        file = item.nodeid.partition("::")[0]
        if file in first:
            return 0, first[file]
        return (1 if item.get_closest_marker("slow") else 2), 0

    items.sort(key=rank)   # stable: equal ranks keep the order collected


def pytest_collection_modifyitems(config, items):
    for item in items:
        for name in groups_of(item):
            item.add_marker(name)
        for fixture, name in FIXTURE_MARKERS.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(name)
        if HEAVY & {m.name for m in item.iter_markers()}:
            item.add_marker("slow")
    schedule(items)


# --- Perturbed numerics: half of nbval's kernels run as on another CPU ---------------------------------

def pytest_configure(config):
    if config.getoption("nbval", default=False):
        import tempfile

        folder = Path(tempfile.mkdtemp(prefix="perturbed-kernels-"))
        config._perturbed_folder = folder
        config.pluginmanager.register(PerturbedKernels(folder, perturbed_chapters()), "perturbed-kernels")


def pytest_unconfigure(config):
    import shutil

    folder = getattr(config, "_perturbed_folder", None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def pytest_report_header(config):
    plugin = config.pluginmanager.get_plugin("perturbed-kernels")
    return plugin.describe() if plugin else None


@pytest.fixture
def seeded():
    torch.manual_seed(0)
    yield


def shared_folder(tmp_path_factory) -> Path:
    """A temporary folder of this run that every pytest-xdist worker sees (without xdist: the
    session's own)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


# --- The HTML site (tests/book/test_book.py, test_offline_book.py, test_browser.py, test_search.py, ...) ---

@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> Path:
    """The site built once per run as `make book` builds it (book/site/website.py: one book per
    language with -W, index.html, ko/, en/), into a temporary folder all workers share.

    The builds vendor the browser assets themselves (book/site/vendor_assets.py is a Sphinx extension
    of the book: npm ci when node_modules is missing or stale, then the copy into book_assets/)."""
    from filelock import FileLock

    tmp = shared_folder(tmp_path_factory) / "site"
    tmp.mkdir(exist_ok=True)
    out, work, failed = tmp / "html", tmp / "work", tmp / "FAILED"
    with FileLock(tmp / ".lock"):      # pytest-xdist: the first worker builds, the other waits and reads
        if not failed.exists() and not (tmp / "BUILT").exists():
            result = subprocess.run(
                [sys.executable, "-m", "book.site.website", "--out", str(out), "--work", str(work)],
                cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
            )
            if result.returncode != 0:
                failed.write_text(result.stdout[-6000:] + result.stderr[-4000:], encoding="utf-8")
            else:
                (tmp / "BUILT").touch()
    if failed.exists():
        pytest.fail("make book's build (book/site/website.py, -W) failed:\n" + failed.read_text(encoding="utf-8"))
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
    from book.site.local_site import serve

    with serve(offline_site) as url:
        yield url


@pytest.fixture(scope="session")
def browser():
    """Headless Chromium for the whole session, shared by test_browser.py (the book),
    test_feedback_pages.py (the feedback pages) and test_explorer_lab.py (the explorer in JupyterLab):
    Playwright's sync API allows one at a time."""
    yield from chromium_browser("run the browser tests (the book, the classroom's feedback pages, "
                                "the explorer in JupyterLab)")


@pytest.fixture(scope="session")
def visit(browser, book_url, offline_site):
    """visit(docname) -> helpers.page_visit.Visit: each page of the built site loaded once per worker
    (helpers.page_visit.load_page: test_browser.py's checks, its axe audit, test_page_weight.py's weights)."""
    cache: dict = {}

    def load(docname: str):
        if docname not in cache:
            cache[docname] = load_page(browser, book_url, offline_site, docname)
        return cache[docname]

    return load


def pytest_collection_finish(session):
    """Start the selected test modules' EARLY set-up (helpers.background.start_early: nbgrader's release,
    autograde, feedback of a copied course) right away, in background threads, so that it runs on the
    second core while a single-process session (WORKERS=0, one module run alone) runs everything
    else. Under pytest-xdist both cores are busy already: each module does its set-up when it starts."""
    if hasattr(session.config, "workerinput"):     # (pytest-xdist's controller collects nothing)
        return
    if session.config.option.collectonly:          # --collect-only runs nothing: nothing to set up
        return
    for module in {item.module for item in session.items if getattr(item, "module", None) is not None}:
        for name, work in getattr(module, "EARLY", {}).items():
            start_early(name, work)


# --- Timings: `pytest --timings=FILE` (make timings) writes each group's time in this run (tests/timings.py) ---

from timings import pytest_addoption, pytest_sessionstart  # noqa: E402, F401
