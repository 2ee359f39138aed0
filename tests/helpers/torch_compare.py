"""How "equal to torch" is judged, and the generated inputs normlib is compared with torch on
(tests/library: test_functional.py, test_autograd.py, test_fold.py, test_torch_suite.py, ...).

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

import math
from dataclasses import dataclass
from typing import Callable, Optional

import torch
from hypothesis import strategies as st

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


# --- Comparing normlib's functions with torch's on generated inputs (test_functional.py,
# test_autograd.py, test_torch_suite.py) -----------------------------------------------------------

DTYPES = [torch.float64, torch.float32, torch.float16, torch.bfloat16]


EPS = [1e-5, 1e-3, 0.5, 0.0, -1e-7]          # zero and negative eps included


MOMENTA = [0.1, 0.0, 1.0, 0.3, -0.5]         # momentum 0 and negative included


OFFSETS = [0.0, 0.0, 3.0, -250.0, 1e4]       # 1e4: the "large offset" of the issue


SCALES = [1.0, 1.0, 1e-2, 30.0]


@dataclass
class Inputs:
    x: torch.Tensor
    weight: Optional[torch.Tensor]
    bias: Optional[torch.Tensor]
    upstream: torch.Tensor


def make_inputs(shape, dtype, seed, offset, scale, param_shape, with_weight, with_bias) -> Inputs:
    g = torch.Generator().manual_seed(seed)
    x = (offset + scale * torch.randn(shape, generator=g, dtype=torch.float64)).to(dtype)
    # γ and β random, not ones and zeros: those hide bugs.
    weight = (0.5 + torch.rand(param_shape, generator=g, dtype=torch.float64) * 1.5).to(dtype) if with_weight else None
    bias = torch.randn(param_shape, generator=g, dtype=torch.float64).to(dtype) if with_bias else None
    upstream = torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)
    return Inputs(x, weight, bias, upstream)


def forward_and_grads(fn: Callable, inp: Inputs, **kwargs):
    x = inp.x.clone().requires_grad_(True)
    w = None if inp.weight is None else inp.weight.clone().requires_grad_(True)
    b = None if inp.bias is None else inp.bias.clone().requires_grad_(True)
    out = fn(x, weight=w, bias=b, **kwargs)
    leaves = [t for t in (x, w, b) if t is not None]
    grads = torch.autograd.grad((out * inp.upstream).sum(), leaves, allow_unused=True)
    grads = [torch.zeros_like(t) if gr is None else gr for t, gr in zip(leaves, grads)]
    names = ["input"] + (["weight"] if w is not None else []) + (["bias"] if b is not None else [])
    return out, dict(zip(names, grads))


def group_scales(x: torch.Tensor, labels: torch.Tensor, eps: float, centered: bool):
    """Per element, in float64: M = largest |x| of its group, μ, σ = sqrt(var + eps) of its group."""
    x64 = x.detach().double().reshape(-1)
    lab = labels.reshape(-1)
    n_groups = int(lab.max()) + 1 if lab.numel() else 0
    count = torch.zeros(n_groups, dtype=torch.float64).index_add_(0, lab, torch.ones_like(x64))
    mean = torch.zeros(n_groups, dtype=torch.float64).index_add_(0, lab, x64) / count
    if not centered:
        mean = torch.zeros_like(mean)
    sq = torch.zeros(n_groups, dtype=torch.float64).index_add_(0, lab, (x64 - mean[lab]) ** 2) / count
    big = torch.zeros(n_groups, dtype=torch.float64).scatter_reduce_(0, lab, x64.abs(), "amax")
    var_eps = sq + eps
    sigma = torch.where(var_eps > 0, var_eps.clamp_min(0).sqrt(), torch.full_like(var_eps, float("nan")))
    shape = labels.shape
    return big[lab].reshape(shape), mean[lab].reshape(shape), sigma[lab].reshape(shape), sq[lab].reshape(shape)


def exact_of(fn: Callable, inp: Inputs, **kwargs):
    """The same torch computation in float64 on the same (already rounded) inputs."""
    up = lambda t: None if t is None else t.double()
    return forward_and_grads(fn, Inputs(inp.x.double(), up(inp.weight), up(inp.bias), inp.upstream.double()), **kwargs)


def compare(ours, theirs, inp: Inputs, labels, eps, centered, channel_of=None, what="", exact=None):
    """Compare outputs and gradients of two (forward, grads) results with conditioning-aware tolerance."""
    (out_o, grads_o), (out_t, grads_t) = ours, theirs
    out_e, grads_e = exact if exact is not None else (None, {})
    dtype = inp.x.dtype
    base, u, K = BASE_TOL[dtype], roundoff(dtype), ROUNDING_FACTOR
    big, mu, sigma, _ = group_scales(inp.x, labels, eps, centered)
    valid = torch.isfinite(sigma) & (sigma > 0)
    kappa = torch.where(valid, (big + mu.abs()) / sigma, torch.zeros_like(sigma))
    gamma = 1.0 if inp.weight is None else float(inp.weight.double().abs().max()) if inp.weight.numel() else 1.0
    assert_close_elementwise(out_o, out_t, K * u * kappa * gamma, f"{what} output", base, valid,
                                                 out_e)

    gmax = float(inp.upstream.double().abs().max()) if inp.upstream.numel() else 0.0
    inv_sigma = torch.where(valid, 1.0 / sigma, torch.zeros_like(sigma))
    # dx = γ/σ · (g − mean(g) − x̂·mean(g·x̂)): every term is of size γ·|g|/σ.
    term = gamma * gmax * inv_sigma
    assert_close_elementwise(
        grads_o["input"], grads_t["input"], (base + K * u * kappa) * term * 4, f"{what} grad input", base, valid,
        grads_e.get("input"))
    all_valid = bool(valid.all())
    if all_valid:  # parameter gradients sum over groups: only meaningful when every group is regular
        x_hat = torch.where(valid, (inp.x.double() - mu) * inv_sigma, torch.zeros_like(sigma))
        k_max = float(kappa.max()) if kappa.numel() else 0.0
        g_abs = inp.upstream.double().abs()
        for name, weighting in (("weight", g_abs * x_hat.abs().clamp_min(1)), ("bias", g_abs)):
            if name not in grads_t:
                continue
            total = _per_param(weighting, grads_t[name].shape, channel_of)
            assert_close_elementwise(
                grads_o[name], grads_t[name], (base + K * u * k_max) * total, f"{what} grad {name}", base,
                exact=grads_e.get(name))


def _per_param(values: torch.Tensor, param_shape, channel_of) -> torch.Tensor:
    """Sum |…| over the elements that feed each parameter entry."""
    if channel_of is None:  # layer/rms: parameters have the trailing shape
        return values.reshape(-1, *param_shape).sum(0) if values.numel() else torch.zeros(param_shape, dtype=values.dtype)
    dims = [d for d in range(values.dim()) if d != 1]
    return values.sum(dim=dims) if dims else values


common = dict(
    dtype=st.sampled_from(DTYPES),
    seed=st.integers(0, 2**31 - 1),
    offset=st.sampled_from(OFFSETS),
    scale=st.sampled_from(SCALES),
    eps=st.sampled_from(EPS),
    with_weight=st.booleans(),
    with_bias=st.booleans(),
)


@st.composite
def layer_shapes(draw):
    ndim = draw(st.integers(1, 5))
    shape = [draw(st.integers(0 if i == 0 else 1, 4)) for i in range(ndim)]
    k = draw(st.integers(1, ndim))
    norm = tuple(shape[ndim - k:])
    kind = draw(st.sampled_from(["int", "list", "tuple", "size"]))
    if kind == "int" and k == 1:
        ns = norm[0]
    elif kind == "list":
        ns = list(norm)
    elif kind == "size":
        ns = torch.Size(norm)
    else:
        ns = norm
    return tuple(shape), ns, norm


@st.composite
def channel_shapes(draw, min_ndim=2, batch_min=0):
    ndim = draw(st.integers(min_ndim, 5))
    n = draw(st.integers(batch_min, 4))
    c = draw(st.integers(1, 4))
    spatial = [draw(st.integers(1, 3)) for _ in range(ndim - 2)]
    return (n, c, *spatial)


def running_stats(c, dtype, seed):
    g = torch.Generator().manual_seed(seed + 1)
    rdtype = dtype   # torch's CPU kernels want running stats in the input dtype (or all params in float32)
    return (torch.randn(c, generator=g, dtype=torch.float64).to(rdtype),
            (0.5 + torch.rand(c, generator=g, dtype=torch.float64)).to(rdtype))


def compare_running(ours, theirs, inp, labels, eps, momentum, count, what, exact=(None, None)):
    dtype = inp.x.dtype
    base, u, K = BASE_TOL[dtype], roundoff(dtype), ROUNDING_FACTOR
    big, mu, sigma, var = group_scales(inp.x, labels, 0.0, True)
    m = abs(momentum)
    big_max = float(big.max()) if big.numel() else 0.0
    var_max = float(var.max()) if var.numel() else 0.0
    bessel = count / (count - 1) if count > 1 else 1.0
    # running_mean gets m·mean: rounding of the mean is u·max|x|. running_var gets m·var·n/(n-1):
    # the variance's rounding is u·κ·var, with κ = max|x|/sqrt(var).
    assert_close_elementwise(ours[0], theirs[0], K * u * big_max * m, f"{what} running_mean", base,
                             exact=exact[0])
    kappa_var = big_max * math.sqrt(var_max) if var_max > 0 else big_max ** 2
    assert_close_elementwise(ours[1], theirs[1], K * u * (kappa_var + var_max) * bessel * m,
                             f"{what} running_var", base, exact=exact[1])


def compare_eval(ours, theirs, inp, rm, rv, eps, what):
    """Eval mode: x̂ = (x − running_mean)/sqrt(running_var + eps), an elementwise affine map."""
    dtype = inp.x.dtype
    base, u, K = BASE_TOL[dtype], roundoff(dtype), ROUNDING_FACTOR
    view = (1, -1) + (1,) * (inp.x.dim() - 2)
    sigma = (rv.double() + eps).sqrt().reshape(view)
    kappa = (inp.x.double().abs() + rm.double().abs().reshape(view)) / sigma
    gamma = 1.0 if inp.weight is None else float(inp.weight.double().abs().max())
    assert_close_elementwise(ours[0], theirs[0], K * u * kappa * gamma, f"{what} output", base)
    gmax = float(inp.upstream.double().abs().max()) if inp.upstream.numel() else 0.0
    assert_close_elementwise(ours[1]["input"], theirs[1]["input"], K * u * gamma * gmax / sigma,
                             f"{what} grad input", base)
    for name in ("weight", "bias"):
        if name in theirs[1]:
            total = inp.upstream.double().abs().mul(1 + kappa).sum(dim=[d for d in range(inp.x.dim()) if d != 1])
            assert_close_elementwise(ours[1][name], theirs[1][name], (base + K * u) * total, f"{what} grad {name}", base)
