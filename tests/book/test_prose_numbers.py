"""Every number quoted in a chapter's prose was printed (or written in code) by a cell before it.

(A parameter the prose announces, such as "eps = 1e-6", may instead be set in the source of the
very next code cell; a *result* must come from an earlier cell's output.)

A quoted number is any decimal or scientific number in a Markdown cell (0.67, −1.34, 7e-5,
2.2×10⁻⁸ is not used in the prose). It counts as printed when some earlier code cell's source
or text output holds a number that rounds to it at the precision quoted: "0.67" is backed by a
printed 0.6667, "−1.34" by −1.3416. Integers are not checked (chapter numbers, sample counts).
"""

from __future__ import annotations

import math
import re

import nbformat
import pytest

from helpers.paths import ROOT
from helpers.text import text_outputs

CHAPTERS = sorted((ROOT / "chapters").glob("[a-z][a-z]/*.ipynb"))
# ASCII boundaries only: Korean particles attach straight to numbers ("0.693은"), and a
# sentence may end right after one ("… 0.58.").
NUMBER = re.compile(r"(?<![0-9A-Za-z_.])[-−]?(?:\d+\.\d+(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+)(?![0-9A-Za-z_]|\.\d)")
ANY_NUMBER = re.compile(r"[-−]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def quoted(markdown: str) -> list[str]:
    # links and image targets are not prose
    markdown = re.sub(r"\]\([^)]*\)", "]", markdown)
    return NUMBER.findall(markdown)


def half_ulp(token: str) -> tuple[float, float]:
    """The value of a quoted token and half a unit in its last written digit."""
    token = token.replace("−", "-")
    mantissa, _, exponent = token.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    scale = 10.0 ** (int(exponent) if exponent else 0)
    return float(token), 0.5 * 10.0 ** (-decimals) * scale


def backed(token: str, seen: list[float]) -> bool:
    value, tol = half_ulp(token)
    # by magnitude: the prose may quote |−1.34| as "differs by 1.34"
    return any(abs(abs(v) - abs(value)) <= tol * (1 + 1e-9) for v in seen)


def numbers_in(text: str) -> list[float]:
    out = []
    for t in ANY_NUMBER.findall(text.replace("−", "-")):
        try:
            v = float(t)
        except ValueError:
            continue
        if math.isfinite(v):
            out.append(v)
    return out


def unchecked(cell) -> bool:
    """A cell whose output nbval does not compare (tag nbval-ignore-output or nbval-skip)."""
    return bool({"nbval-ignore-output", "nbval-skip"} & set(cell.metadata.get("tags", [])))


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_quoted_number_was_computed_before(path):
    nb = nbformat.read(path, as_version=4)
    seen: list[float] = []
    missing = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            seen += numbers_in(cell.source)
            # only outputs that reproduce back the prose: nbval (and the perturbed re-execution)
            # compare them; a timing's or a training run's raw print is different on every machine
            if not unchecked(cell):
                for text in text_outputs(cell):
                    seen += numbers_in(text)
            mystnb = cell.metadata.get("mystnb", {})
            words = [mystnb.get("figure", {}).get("caption", ""), mystnb.get("image", {}).get("alt", "")]
            missing += [f"caption/alt of cell {index}: {t}" for w in words for t in quoted(w) if not backed(t, seen)]
        elif cell.cell_type == "markdown":
            # a parameter the prose announces may be set by the very next code cell
            following = next((c for c in nb.cells[index + 1:] if c.cell_type == "code"), None)
            upcoming = numbers_in(following.source) if following is not None else []
            missing += [f"cell {index}: {t}" for t in quoted(cell.source) if not backed(t, seen + upcoming)]
    assert not missing, f"{path.parent.name}/{path.name}: numbers in the prose that no earlier cell printed: {missing}"


def test_an_unchecked_output_backs_nothing(tmp_path):
    nb = nbformat.v4.new_notebook()
    timing = nbformat.v4.new_code_cell("print(t)", metadata={"tags": ["nbval-ignore-output"]})
    timing.outputs = [nbformat.v4.new_output("stream", name="stdout", text="ratio 2.35\n")]
    nb.cells = [timing, nbformat.v4.new_markdown_cell("It is 2.35 times slower.")]
    path = tmp_path / "timing.ipynb"
    nbformat.write(nb, path)
    with pytest.raises(AssertionError, match="2.35"):
        test_every_quoted_number_was_computed_before(path)
    timing.metadata["tags"] = []
    nbformat.write(nb, path)
    test_every_quoted_number_was_computed_before(path)


def test_the_check_can_fail():
    assert backed("0.67", [0.6667]) and backed("-1.34", [-1.3416]) and backed("7e-5", [6.8e-5])
    assert not backed("0.0116", [0.00486])
    assert not backed("0.460", [0.473])
    assert quoted("손실은 0.693은, 끝 0.58.") == ["0.693", "0.58"]
    assert quoted("mean 5, var 0.67 and −1.34; eps 1e-6; see [x](../en/01.ipynb)") == ["0.67", "−1.34", "1e-6"]
