"""normlib.stats: stable methods agree with float64 truth where the naive formula fails;
merging the statistics of chunks equals the statistics of the whole."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from normlib import stats

F32_EPS = torch.finfo(torch.float32).eps


def _offset_data(offset: float, n: int = 4096, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (offset + torch.randn(n, generator=g, dtype=torch.float64)).float()


def _rel_err(moments: stats.Moments, x: torch.Tensor) -> float:
    truth = x.double().var(correction=0).item()      # float64 on the very same float32 values
    return abs(moments.var().double().item() - truth) / truth


@pytest.mark.parametrize("offset", [1e3, 1e4, 1e5])
def test_stable_methods_hold_float32_precision_where_naive_fails(offset):
    x = _offset_data(offset)
    errors = {name: _rel_err(getattr(stats, name)(x), x) for name in ("two_pass", "welford", "naive")}
    unshifted = _rel_err(stats.welford(x, shift=False), x)
    merged = _rel_err(stats.chunked(x, 7), x)
    print(f"offset {offset:g}: relative error of the variance " +
          ", ".join(f"{k} {v:.1e}" for k, v in errors.items()) +
          f", welford unshifted {unshifted:.1e}, chunked+merge {merged:.1e}")
    # float32 precision: a few hundred units of roundoff at most, for n = 4096 elements
    assert errors["two_pass"] < 256 * F32_EPS
    assert errors["welford"] < 256 * F32_EPS
    # the naive formula visibly fails: off by more than 1% of the variance (measured, printed)
    assert errors["naive"] > 1e-2
    # errors that grow linearly with κ = |offset|/std, not like κ² as the naive one's
    kappa = offset
    assert unshifted < 8 * F32_EPS * kappa
    assert merged < 8 * F32_EPS * kappa


def test_naive_is_fine_without_offset():
    x = _offset_data(0.0)
    assert _rel_err(stats.naive(x), x) < 256 * F32_EPS


@given(
    n=st.integers(1, 60),
    cuts=st.lists(st.integers(0, 60), max_size=6),
    offset=st.sampled_from([0.0, 5.0, -1e3]),
    seed=st.integers(0, 2**31 - 1),
)
def test_merging_chunks_equals_the_whole(n, cuts, offset, seed):
    g = torch.Generator().manual_seed(seed)
    x = offset + torch.randn(n, 3, generator=g, dtype=torch.float64)
    bounds = sorted({0, n, *[min(c, n) for c in cuts]})
    parts = [stats.two_pass(x[a:b], dim=0) for a, b in zip(bounds, bounds[1:])]
    # empty chunks are allowed too: merging with them changes nothing
    parts.insert(len(parts) // 2, stats.two_pass(x[:0], dim=0))
    merged = stats.merge_all(parts)
    whole = stats.two_pass(x, dim=0)
    assert merged.count == whole.count == n
    torch.testing.assert_close(merged.mean, whole.mean, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(merged.m2, whole.m2, rtol=1e-10, atol=1e-10)


def test_methods_agree_with_torch_on_dims():
    torch.manual_seed(0)
    x = torch.randn(3, 4, 5, dtype=torch.float64)
    for dim in [None, 0, -1, (0, 2), (1,)]:
        var, mean = torch.var_mean(x, dim=dim, correction=1)
        for fn in (stats.two_pass, stats.welford, stats.naive):
            m = fn(x, dim)
            torch.testing.assert_close(m.mean, mean, rtol=1e-12, atol=1e-12)
            torch.testing.assert_close(m.var(correction=1), var, rtol=1e-10, atol=1e-10)


def test_running_table_example():
    """Feature 1 of the book's table: 2, 4, 6, 8 → mean 5, population variance 5, sample variance 20/3."""
    x = torch.tensor([2.0, 4.0, 6.0, 8.0], dtype=torch.float64)
    for fn in (stats.two_pass, stats.welford, stats.naive, lambda t: stats.chunked(t, 2)):
        m = fn(x)
        assert m.mean.item() == pytest.approx(5.0)
        assert m.var().item() == pytest.approx(5.0)
        assert m.var(correction=1).item() == pytest.approx(20.0 / 3.0)


def test_merge_all_needs_parts():
    with pytest.raises(ValueError, match="at least one"):
        stats.merge_all([])
