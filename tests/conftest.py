"""Shared settings and helpers for the normlib tests.

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
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("thorough", parent=settings.get_profile("default"), max_examples=600)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

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


@pytest.fixture
def seeded():
    torch.manual_seed(0)
    yield


# --- The HTML book (tests/test_book.py, test_offline_book.py, test_browser.py) ----------------

ROOT = Path(__file__).resolve().parent.parent


def toc_docnames() -> list[str]:
    """Every page of _toc.yml, root first, in the order of the table of contents."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [c["file"] for c in part.get("chapters", [])]
    return files


@pytest.fixture(scope="session")
def built_book(tmp_path_factory) -> Path:
    """The book built once per session with -W, as `make book` does, into a temporary folder.

    The build vendors the browser assets itself (tools/vendor_assets.py is a Sphinx extension of
    the book: npm ci when node_modules is missing or stale, then the copy into book_assets/)."""
    jb = Path(sys.executable).parent / "jupyter-book"
    if not jb.exists():
        pytest.fail(f"jupyter-book is not installed next to {sys.executable}; run the README's setup")
    out = tmp_path_factory.mktemp("book")
    result = subprocess.run(
        [str(jb), "build", str(ROOT), "--builder", "html", "-W", "--keep-going", "--path-output", str(out)],
        capture_output=True, text=True, timeout=600, check=False,
    )
    if result.returncode != 0:
        pytest.fail("jupyter-book build -W failed:\n" + result.stdout[-4000:] + result.stderr[-4000:])
    return out / "_build" / "html"


def running_in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


@pytest.fixture(scope="session")
def offline_book(built_book) -> Path:
    """The built book, provided its browser assets were vendored (npm was available).

    Without npm the book falls back to CDNs by design; then the offline tests skip on a
    developer's machine and fail on CI (CI=true), where npm is expected."""
    if not (built_book / "_static" / "offline" / "VENDORED.txt").exists():
        msg = ("the book's browser assets were not vendored (npm missing or npm ci failed; see the "
               "build output), so the book loads MathJax, require.js and the widget manager from CDNs")
        if running_in_ci():
            pytest.fail(msg)
        pytest.skip(msg)
    return built_book
