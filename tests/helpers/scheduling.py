"""make test's two pytest-xdist workers: what must stay in one worker (unit_of) and what goes out
first (UNITS_FIRST) (conftest.py's scheduler and order; tests/repository/test_test_modules.py)."""

from __future__ import annotations

import functools

# The units that take longest, first (measured on 2 cores); then the other slow tests and the fast
# ones, each in the order collected (tests/repository/test_test_modules.py checks that each names a real file).
UNITS_FIRST = (
    "tests/classroom/test_assignments.py",     # release, validate and autograde a class, a late zip, Canvas (≈ 3 min)
    "tests/classroom/test_feedback_pages.py",  # a second class graded, its feedback pages in Chromium
    "chapters/en/10_placement.ipynb", "chapters/ko/10_placement.ipynb",   # English 10 runs perturbed: longer
    "chapters/ko/11_without_norm.ipynb", "chapters/ko/01_why_normalize.ipynb", "chapters/ko/09_distributed.ipynb",
    "tests/library/test_distributed.py",
    "tests/benchmarks/test_page_weight.py", "tests/book/test_search.py", "tests/book/test_print.py",
    "chapters/en/11_without_norm.ipynb",
    "tests/book/test_explorer.py", "tests/classroom/test_classroom_shell.py", "tests/book/test_explorer_lab.py",
)
# The tests of one page of the site (parametrized by it: docname, page) share that page's one load
# (visit): test_browser.py's checks and axe audit, test_page_weight.py's weights.
PAGE_TESTS = {"tests/book/test_browser.py", "tests/benchmarks/test_page_weight.py"}


def unit_of(nodeid: str) -> str:
    """What must run in the same pytest-xdist worker as the test ``nodeid``: its notebook (nbval's
    cells, in order, in one kernel), its page of the site (PAGE_TESTS), or its file (module-scoped
    set-up: a graded course, a server, PyTorch's test database)."""
    file, _, rest = nodeid.partition("::")
    if file in PAGE_TESTS and rest.endswith("]"):
        param = rest[rest.index("[") + 1:-1]
        if param in _site_pages():
            return f"page {param}"
    return file


@functools.cache
def _site_pages() -> set[str]:
    """The books' pages, their search and index pages, and the landing page."""
    from benchmarks.tools.page_weight import site_pages
    return set(site_pages())
