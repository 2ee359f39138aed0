"""The test suite's own rules: test modules share code through the package tests/helpers/ (plain
helpers, one module per thing they serve, imported from that module) and tests/conftest.py (fixtures,
which pytest injects), never by importing one another; and what make test's two pytest-xdist workers
keep together (helpers.scheduling.unit_of)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
HELPERS = TESTS / "helpers"


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
    for path in sorted(TESTS.rglob("*.py")):
        for name in imported_modules(path):
            top = name.split(".")[-1] if name.startswith("tests.") else name.split(".")[0]
            if top.startswith("test_") or top == "conftest":
                offenders.append(f"{path.name} imports {name}")
    assert not offenders, "move what is shared into a module of tests/helpers/: " + "; ".join(offenders)


def test_the_check_sees_such_an_import(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("from test_functional import compare\nimport conftest\nfrom helpers.paths import ROOT\n"
                      "import tests.book.test_explorer\n")
    assert imported_modules(sample) == {"test_functional", "conftest", "helpers.paths", "tests.book.test_explorer"}


def helpers_package_problems(package: Path) -> list[str]:
    """What is wrong with a helpers package: code in its __init__.py (it holds only a docstring: a name is
    imported from the module that serves it), a module its docstring does not list, or one it lists that is gone."""
    init = package / "__init__.py"
    tree = ast.parse(init.read_text(encoding="utf-8"))
    problems = [f"__init__.py line {node.lineno}: {type(node).__name__}, not only a docstring"
                for node in tree.body[1 if ast.get_docstring(tree) else 0:]]
    docstring = ast.get_docstring(tree, clean=False) or ""
    listed = set(re.findall(r"^    (\w+) {2,}\S", docstring, re.MULTILINE))     # "    name   what it serves"
    modules = {p.stem for p in package.glob("*.py")} - {"__init__"}
    problems += [f"{name}.py is not listed in __init__.py's docstring" for name in sorted(modules - listed)]
    problems += [f"__init__.py lists {name}, which is not a module" for name in sorted(listed - modules)]
    return problems


def test_the_helpers_package_holds_modules_only_and_lists_them():
    assert not helpers_package_problems(HELPERS)


def test_the_helpers_check_sees_a_re_export_and_an_unlisted_module(tmp_path):
    (tmp_path / "__init__.py").write_text('"""Helpers:\n\n    paths   ROOT\n    gone    was here\n"""\n'
                                          "from helpers.paths import ROOT\n")
    (tmp_path / "paths.py").write_text("ROOT = 1\n")
    (tmp_path / "browser.py").write_text("")
    assert helpers_package_problems(tmp_path) == [
        "__init__.py line 6: ImportFrom, not only a docstring",
        "browser.py is not listed in __init__.py's docstring",
        "__init__.py lists gone, which is not a module"]


# --- make test's two workers: what stays together (helpers.scheduling.unit_of) -----------------------

def test_a_notebooks_cells_stay_together_and_apart_from_other_notebooks():
    from helpers.scheduling import unit_of

    cells = [unit_of(f"chapters/ko/03_batchnorm.ipynb::Cell {i}") for i in range(5)]
    assert len(set(cells)) == 1
    assert unit_of("chapters/en/03_batchnorm.ipynb::Cell 0") != cells[0]


def test_a_pages_tests_share_its_one_load_across_modules():
    from helpers.scheduling import unit_of

    page = "ko/chapters/ko/06_family"
    together = {unit_of(f"tests/book/test_browser.py::test_page_fits_a_phone[{page}]"),
                unit_of(f"tests/book/test_browser.py::test_no_critical_or_serious_violation_in_either_colour_mode[{page}]"),
                unit_of(f"tests/benchmarks/test_page_weight.py::test_the_first_load_of_each_page_is_within_its_budget[{page}]")}
    assert len(together) == 1
    assert unit_of("tests/book/test_browser.py::test_page_fits_a_phone[en/chapters/en/06_family]") not in together
    # a parameter that is not a page (a language) keeps the test with its module's fixtures
    assert unit_of("tests/book/test_browser.py::test_the_headers_sidebar_buttons_open_the_tables_of_contents[ko]") \
        == "tests/book/test_browser.py"
    assert unit_of("tests/benchmarks/test_page_weight.py::test_chapter_6s_html_is_small[ko]") == "tests/benchmarks/test_page_weight.py"


def test_a_module_stays_together():
    from helpers.scheduling import unit_of

    assert unit_of("tests/classroom/test_assignments.py::test_a[1]") == unit_of("tests/classroom/test_assignments.py::test_b") \
        == "tests/classroom/test_assignments.py"
    assert unit_of("tests/book/test_perturbed_numerics.py::test_a") == unit_of("tests/book/test_perturbed_numerics.py::test_b[x]")
    assert unit_of("normlib/stats.py::normlib.stats.moments") == "normlib/stats.py"


def test_the_units_sent_first_are_real_files():
    from helpers.paths import ROOT
    from helpers.scheduling import UNITS_FIRST

    missing = [unit for unit in UNITS_FIRST if not (ROOT / unit).is_file()]
    assert not missing, f"helpers.scheduling.UNITS_FIRST names files that are gone: {missing}"
