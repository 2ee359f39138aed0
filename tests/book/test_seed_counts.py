"""A random experiment says how many seeds it ran, and the prose quotes that number.

The convention (CONTRIBUTING and chapters/src): a code cell whose runs the text draws a conclusion
from names its seeds in a module-level constant ending in ``SEEDS`` (``SEEDS = range(20)``,
``DEPTHS, GRAD_SEEDS = (3, 6, 12, 24), range(20)``), written as a literal the test can count. A
cell that reads a sweep from ``benchmarks/results/`` declares the same constant and asserts that
the results hold exactly those seeds. The prose quotes the count as "20 seeds" (English) or
"시드 20개" (Korean).

Checked in every chapter notebook of both languages:
- every declaration holds at least 10 seeds;
- every declaration is quoted in the prose around it (between the declaring cells before and after);
- every quoted seed count is the count of the nearest declaration before or after the quote.
"""

from __future__ import annotations

import ast
import re

import nbformat
import pytest

from helpers.paths import ROOT

NOTEBOOKS = sorted((ROOT / "chapters").glob("[a-z][a-z]/*.ipynb"))
MINIMUM = 10
SEED_NAME = re.compile(r"(?:^|_)SEEDS$")
QUOTE = {
    "en": re.compile(r"\b(\d+)\s+(?:random\s+|generator\s+|different\s+)?seeds\b"),
    "ko": re.compile(r"시드\s*(\d+)\s*개|(\d+)\s*개의?\s*시드"),
}


class Unreadable(ValueError):
    pass


def declarations(source: str) -> dict[str, int]:
    """The seed constants a code cell assigns at module level, with how many seeds each holds."""
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    tree = ast.parse("\n".join(lines))
    found = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            pairs = []
            if isinstance(target, ast.Name):
                pairs = [(target, node.value)]
            elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple) \
                    and len(target.elts) == len(node.value.elts):
                pairs = list(zip(target.elts, node.value.elts))
            for name, value in pairs:
                if isinstance(name, ast.Name) and SEED_NAME.search(name.id):
                    try:
                        seeds = eval(compile(ast.Expression(value), "<seeds>", "eval"),
                                     {"__builtins__": {}, "range": range, "tuple": tuple, "list": list})
                        found[name.id] = len(seeds)
                    except Exception as error:  # noqa: BLE001 - any failure means "not a literal"
                        raise Unreadable(f"{name.id} = {ast.unparse(value)}: write the seeds as a literal "
                                         f"(range(20), a tuple) so the count can be checked ({error})") from error
    return found


def quotes(markdown: str, lang: str) -> list[int]:
    markdown = re.sub(r"\]\([^)]*\)", "]", markdown)   # link targets are not prose
    return [int(next(g for g in m.groups() if g)) for m in QUOTE[lang].finditer(markdown)]


def problems(nb: nbformat.NotebookNode, lang: str) -> list[str]:
    cells = nb.cells
    declared: dict[int, dict[str, int]] = {}
    out = []
    for index, cell in enumerate(cells):
        if cell.cell_type == "code":
            try:
                found = declarations(cell.source)
            except Unreadable as error:
                out.append(f"cell {index}: {error}")
                continue
            if found:
                declared[index] = found
    where = sorted(declared)
    for index in where:
        for name, count in declared[index].items():
            if count < MINIMUM:
                out.append(f"cell {index}: {name} holds {count} seeds; a conclusion needs at least {MINIMUM}")
    quoted_at: dict[int, list[int]] = {}
    for index, cell in enumerate(cells):
        if cell.cell_type == "markdown":
            found = quotes(cell.source, lang)
            if found:
                quoted_at[index] = found
    for index, counts in quoted_at.items():
        before = [i for i in where if i < index]
        after = [i for i in where if i > index]
        allowed = set()
        for near in ([before[-1]] if before else []) + ([after[0]] if after else []):
            allowed |= set(declared[near].values())
        for count in counts:
            if count not in allowed:
                out.append(f"cell {index}: the prose quotes {count} seeds, but the nearest experiments run "
                           f"{sorted(allowed) or 'no declared seeds'}")
    for k, index in enumerate(where):
        low = where[k - 1] if k else -1
        high = where[k + 1] if k + 1 < len(where) else len(cells)
        around = [c for i, counts in quoted_at.items() if low < i < high for c in counts]
        for name, count in declared[index].items():
            if count not in around:
                out.append(f"cell {index}: {name} holds {count} seeds, and the prose around it never says so "
                           f"(\"{count} seeds\" / \"시드 {count}개\")")
    return out


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_seeded_experiment_quotes_its_seed_count(path):
    nb = nbformat.read(path, as_version=4)
    found = problems(nb, path.parent.name)
    assert not found, f"{path.relative_to(ROOT)}:\n" + "\n".join(found)


# -- the checker itself --------------------------------------------------------------------------

def _nb(*cells):
    out = nbformat.v4.new_notebook()
    for kind, text in cells:
        out.cells.append(nbformat.v4.new_code_cell(text) if kind == "code" else nbformat.v4.new_markdown_cell(text))
    return out


def test_a_quoted_count_that_matches_passes_in_both_languages():
    assert problems(_nb(("md", "Over 20 seeds:"), ("code", "SEEDS = range(20)"), ("md", "all 20 seeds agree")), "en") == []
    assert problems(_nb(("code", "DEPTHS, GRAD_SEEDS = (3, 6), range(12)"), ("md", "시드 12개의 평균")), "ko") == []
    assert problems(_nb(("code", "S = 1\nSEEDS = tuple(range(10))"), ("md", "10개의 시드")), "ko") == []


def test_a_small_a_misquoted_or_an_unquoted_experiment_is_reported():
    few = problems(_nb(("code", "SEEDS = (0, 1, 2)"), ("md", "on 3 seeds")), "en")
    assert few == ["cell 0: SEEDS holds 3 seeds; a conclusion needs at least 10"]
    wrong = problems(_nb(("code", "SEEDS = range(20)"), ("md", "over 10 seeds")), "en")
    assert len(wrong) == 2 and "quotes 10 seeds" in wrong[0] and "never says so" in wrong[1]
    silent = problems(_nb(("code", "SEEDS = range(20)"), ("md", "the mean")), "ko")
    assert silent == ["cell 0: SEEDS holds 20 seeds, and the prose around it never says so (\"20 seeds\" / \"시드 20개\")"]
    # a quote belongs to the experiment next to it, not to one further away
    far = problems(_nb(("code", "SEEDS = range(10)"), ("md", "10 seeds"), ("code", "B_SEEDS = range(20)"),
                       ("md", "20 seeds"), ("code", "x = 1"), ("code", "C_SEEDS = range(30)"), ("md", "30 seeds, 10 seeds")), "en")
    assert far == ["cell 6: the prose quotes 10 seeds, but the nearest experiments run [30]"]


def test_seeds_that_are_not_a_literal_are_reported():
    found = problems(_nb(("code", "SEEDS = results['seeds']"), ("md", "20 seeds")), "en")
    assert len(found) == 2 and "write the seeds as a literal" in found[0]
