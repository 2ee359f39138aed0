"""Helpers shared by the test modules (plain functions and constants; the fixtures are in
conftest.py). Test modules import from here, never from one another:

    from helpers import ROOT, has_hangul, text_outputs

How "equal to torch" is judged
------------------------------
The issue's tolerances are the *base* tolerances: 1e-10 (float64), 1e-5 (float32),
1e-3 (float16), 1e-2 (bfloat16), used as both absolute and relative tolerance.

On top of the base, every comparison allows the rounding error that *no* implementation in
that precision can avoid: normalizing computes ``x − μ`` from numbers of size ``max|x|``,
so a rounding of ``u · max|x|`` (``u`` = the compute dtype's machine epsilon) is divided by
``σ = sqrt(var + ε)``. The condition number ``κ = max|x| / σ`` of each group of elements
that share a statistic measures it. For well-conditioned data (κ of order 1–10) the
allowance is ~1e-6 in float32 and the base tolerance is what decides; for data around 1e4
with spread 1 (κ ≈ 1e4) it is ~1e-3 in float32, and torch itself is that far from the
float64 truth (``test_functional.py::test_large_offset_float32`` measures both).
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
import yaml

ROOT = Path(__file__).resolve().parent.parent


# --- Comparing with torch ------------------------------------------------------------------------

BASE_TOL = {
    torch.float64: 1e-10,
    torch.float32: 1e-5,
    torch.float16: 1e-3,
    torch.bfloat16: 1e-2,
}

# Multiples of u·κ allowed: a handful of roundings in the mean, the subtraction and the
# variance, in either implementation.
ROUNDING_FACTOR = 32.0


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def roundoff(dtype: torch.dtype) -> float:
    return torch.finfo(compute_dtype(dtype)).eps


def assert_close_elementwise(ours: torch.Tensor, ref: torch.Tensor, allowance, what: str,
                             base: float, valid: torch.Tensor | None = None,
                             exact: torch.Tensor | None = None) -> float:
    """|ours − ref| ≤ base·(1 + |ref|) + allowance, elementwise, over the ``valid`` elements.

    ``exact`` (optional) is the same computation in float64. Where torch itself is farther
    than that limit from it (torch's float16/bfloat16 backward can be), an element also
    passes when normlib is at least as close to ``exact`` as torch is, within the limit.

    Returns the largest |ours − ref| seen (so tests can report it). Non-finite reference
    values must be matched by non-finite values of ours, unless ``exact`` is finite there.
    """
    assert ours.shape == ref.shape, f"{what}: shape {tuple(ours.shape)} != torch's {tuple(ref.shape)}"
    assert ours.dtype == ref.dtype, f"{what}: dtype {ours.dtype} != torch's {ref.dtype}"
    o, r = ours.detach().double(), ref.detach().double()
    if valid is None:
        valid = torch.ones_like(r, dtype=torch.bool)
    valid = valid.expand_as(r)
    finite_ref = torch.isfinite(r)
    bad_nonfinite = valid & ~finite_ref & torch.isfinite(o)
    if exact is not None:
        # torch's own rounding can break down (eps = 0, values that differ in the last bit):
        # a finite answer where the float64 answer is finite too is not a mismatch.
        bad_nonfinite &= ~torch.isfinite(exact.detach().double())
    assert not bad_nonfinite.any(), f"{what}: torch gives inf/nan where normlib gives a finite value"
    check = valid & finite_ref
    if not check.any():
        return 0.0
    allowance = torch.as_tensor(allowance, dtype=torch.float64).expand_as(r)
    diff = (o - r).abs()
    limit = base * (1 + r.abs()) + allowance
    over = check & ~(diff <= limit)
    if exact is not None and over.any():
        e = exact.detach().double()
        closer = (o - e).abs() <= (r - e).abs() + limit
        over = over & ~closer
    if over.any():
        idx = tuple(int(i) for i in over.nonzero()[0])
        raise AssertionError(
            f"{what}: normlib differs from torch by {diff[idx].item():.3e} at index {idx} "
            f"(normlib {o[idx].item():.10g}, torch {r[idx].item():.10g}, allowed {limit[idx].item():.3e}); "
            f"{int(over.sum())} of {int(check.sum())} elements out of tolerance"
        )
    return float(diff[check].max()) if check.any() else 0.0


# --- The book ------------------------------------------------------------------------------------

def toc_docnames() -> list[str]:
    """Every page of _toc.yml, root first, in the order of the table of contents."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [c["file"] for c in part.get("chapters", [])]
    return files


def running_in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


# --- Text of the chapters ------------------------------------------------------------------------

def has_hangul(text: str) -> bool:
    return any("\uac00" <= ch <= "\ud7a3" for ch in text)


def text_outputs(cell) -> list[str]:
    """The cell's text outputs; consecutive chunks of one stream are joined (a kernel may flush
    one print in several pieces, differently from run to run)."""
    out: list[str] = []
    previous = None
    for o in cell.get("outputs", []):
        if o.output_type == "stream":
            if previous == o.name:
                out[-1] += o.text
            else:
                out.append(o.text)
            previous = o.name
            continue
        previous = None
        if o.output_type in ("execute_result", "display_data") and "text/plain" in o.get("data", {}):
            out.append(o.data["text/plain"])
        elif o.output_type == "error":
            out.append(f"{o.ename}: {o.evalue}")
    return out
