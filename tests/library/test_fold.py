"""normlib.fold: a BatchNorm folded into the Conv1d/2d/3d or Linear before it computes what the two
layers compute in evaluation mode, on hypothesis-generated shapes (groups, stride, padding, dilation,
with and without the layer's bias and the BatchNorm's affine), agrees with torch.nn.utils.fusion,
leaves its inputs untouched, and refuses what cannot be folded in English and in Korean.

Tolerance: float64 within 1e-10; float32 within helpers.BASE_TOL (1e-5, absolute and relative) plus
the rounding any float32 convolution makes, ROUNDING_FACTOR · u · M, where M is the size of the
terms summed (|s| · (|W| * |x| + |b| + |μ|) + |β|, computed in float64; s = γ / √(σ² + ε)).
The largest differences seen are kept in MEASURED.
"""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as TF
from hypothesis import given
from hypothesis import strategies as st
from torch import nn
from torch.nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_eval

import normlib
from helpers.library_cases import raised, raised_in_english_and_korean
from helpers.text import has_hangul
from helpers.torch_compare import BASE_TOL, ROUNDING_FACTOR, assert_close_elementwise
from normlib.fold import fold_batch_norm, fold_conv_bn, fold_linear_bn

CONV = {1: nn.Conv1d, 2: nn.Conv2d, 3: nn.Conv3d}
TORCH_BN = {1: nn.BatchNorm1d, 2: nn.BatchNorm2d, 3: nn.BatchNorm3d}
NORMLIB_BN = {1: normlib.BatchNorm1d, 2: normlib.BatchNorm2d, 3: normlib.BatchNorm3d}

MEASURED = {torch.float32: 0.0, torch.float64: 0.0}   # the largest |folded − layer→bn| seen, per dtype


# ------------------------------------------------------------------ the cases

@st.composite
def conv_cases(draw):
    """(layer, input) in float64: a Conv1d/2d/3d with groups, stride, padding and dilation drawn."""
    d = draw(st.sampled_from([1, 2, 3]))
    groups = draw(st.integers(1, 3))
    c_in, c_out = groups * draw(st.integers(1, 3)), groups * draw(st.integers(1, 3))
    kernel = [draw(st.integers(1, 3)) for _ in range(d)]
    dilation = [draw(st.integers(1, 2)) for _ in range(d)]
    padding = [draw(st.integers(0, 2)) for _ in range(d)]
    stride = [draw(st.integers(1, 2)) for _ in range(d)]
    padding_mode = draw(st.sampled_from(["zeros", "circular"]))
    # each spatial size at least the dilated kernel (and the circular padding), at most a few more
    size = [max(dl * (k - 1) + 1, p) + draw(st.integers(0, 3)) for k, dl, p in zip(kernel, dilation, padding)]
    layer = CONV[d](c_in, c_out, kernel, stride=stride, padding=padding, dilation=dilation, groups=groups,
                    bias=draw(st.booleans()), padding_mode=padding_mode, dtype=torch.float64)
    return layer, (draw(st.integers(1, 3)), c_in, *size), d


@st.composite
def linear_cases(draw):
    n_in, n_out = draw(st.integers(1, 8)), draw(st.integers(1, 8))
    layer = nn.Linear(n_in, n_out, bias=draw(st.booleans()), dtype=torch.float64)
    return layer, (draw(st.integers(1, 4)), n_in), 1


@st.composite
def batch_norms(draw, d: int, channels: int):
    """A torch.nn or normlib BatchNorm, affine or not, any eps and momentum (unused in eval mode)."""
    kind = draw(st.sampled_from([TORCH_BN, NORMLIB_BN]))
    affine = draw(st.booleans())
    bias = draw(st.booleans()) if affine else True
    return kind[d](channels, eps=draw(st.sampled_from([1e-5, 1e-3, 0.1])),
                   momentum=draw(st.sampled_from([0.1, None, 0.5])), affine=affine, bias=bias,
                   dtype=torch.float64)


def _randomize(layer: nn.Module, bn: nn.Module, seed: int) -> None:
    """Values away from the trivial ones: μ ≠ 0, σ² ≠ 1, γ ≠ 1, β ≠ 0, a bias ≠ 0."""
    g = torch.Generator().manual_seed(seed)
    rand = lambda t: torch.randn(t.shape, generator=g, dtype=t.dtype)
    with torch.no_grad():
        for p in layer.parameters():
            p.copy_(rand(p))
        bn.running_mean.copy_(2 * rand(bn.running_mean) + 0.5)
        bn.running_var.copy_(0.2 + 3 * torch.rand(bn.running_var.shape, generator=g, dtype=torch.float64))
        bn.num_batches_tracked.fill_(7)
        if bn.weight is not None:
            bn.weight.copy_(0.5 * rand(bn.weight) + 1.2)
        if bn.bias is not None:
            bn.bias.copy_(rand(bn.bias))
    bn.eval()


def _terms(layer: nn.Module, bn: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """M = |s| · (|W| * |x| + |b| + |μ|) + |β|: the size of what the float32 computation sums, in float64."""
    w, x = layer.weight.detach().abs(), x.abs()
    summed = TF.linear(x, w) if isinstance(layer, nn.Linear) else layer._conv_forward(x, w, None)
    c = (1, -1) + (1,) * (summed.dim() - 2)
    b = layer.bias.detach().abs() if layer.bias is not None else 0
    gamma = bn.weight.detach().abs() if bn.weight is not None else 1
    beta = bn.bias.detach().abs() if bn.bias is not None else torch.zeros(1, dtype=torch.float64)
    s = gamma / torch.sqrt(bn.running_var + bn.eps)
    return s.reshape(c) * (summed + (b + bn.running_mean.abs()).reshape(c)) + beta.reshape(c)


def _config(layer: nn.Module) -> dict:
    """stride, padding, dilation, groups, padding_mode, in/out channels or features, training."""
    return {k: v for k, v in vars(layer).items() if not k.startswith("_")}


def _state(*modules: nn.Module) -> list:
    return [(m.training, {k: v.clone() for k, v in m.state_dict().items()}) for m in modules]


def _check_fold(layer64: nn.Module, bn64: nn.Module, shape, seed: int) -> None:
    _randomize(layer64, bn64, seed)
    x64 = torch.randn(shape, generator=torch.Generator().manual_seed(seed + 1), dtype=torch.float64)
    terms = _terms(layer64, bn64, x64)
    for dtype in (torch.float64, torch.float32):
        layer, bn, x = copy.deepcopy(layer64).to(dtype), copy.deepcopy(bn64).to(dtype), x64.to(dtype)
        before = _state(layer, bn)
        folded = fold_batch_norm(layer, bn)
        # a new layer of the same type and configuration, with a bias; the inputs untouched
        assert type(folded) is type(layer) and folded is not layer and folded.bias is not None
        assert _config(folded) == _config(layer)
        assert folded.weight.dtype == dtype and folded.weight.is_leaf and folded.weight.requires_grad
        for (t0, s0), (t1, s1) in zip(before, _state(layer, bn)):
            assert t0 == t1 and s0.keys() == s1.keys() and all(torch.equal(s0[k], s1[k]) for k in s0)
        with torch.no_grad():
            ours, ref = folded(x), bn(layer(x))
        if dtype == torch.float64:
            diff = (ours - ref).abs().max().item()
            assert diff <= 1e-10, f"float64: folded differs from layer→bn by {diff:.3e}"
        else:
            allowance = ROUNDING_FACTOR * torch.finfo(dtype).eps * terms
            diff = assert_close_elementwise(ours, ref, allowance, f"fold {type(layer).__name__} float32",
                                            BASE_TOL[dtype])
        MEASURED[dtype] = max(MEASURED[dtype], diff)
        _check_against_torch_fusion(folded, layer, bn)


def _check_against_torch_fusion(folded: nn.Module, layer: nn.Module, bn: nn.Module) -> None:
    """torch.nn.utils.fusion computes in the BatchNorm's dtype: the same W' and b' within its rounding."""
    if isinstance(layer, nn.Linear):
        if bn.weight is None or bn.bias is None:   # fuse_linear_bn_weights needs γ and β
            return
        theirs = fuse_linear_bn_eval(copy.deepcopy(layer).eval(), copy.deepcopy(bn))
    else:
        theirs = fuse_conv_bn_eval(copy.deepcopy(layer).eval(), copy.deepcopy(bn))
    base = BASE_TOL[layer.weight.dtype]
    for name in ("weight", "bias"):
        ours_p, theirs_p = getattr(folded, name).detach(), getattr(theirs, name).detach()
        assert_close_elementwise(ours_p, theirs_p, 0.0, f"{name} against torch's fusion", base)


# ------------------------------------------------------------------ folding is exact

@given(case=conv_cases(), data=st.data(), seed=st.integers(0, 2**31 - 1))
def test_folding_a_conv_equals_conv_then_eval_batch_norm(case, data, seed):
    layer, shape, d = case
    _check_fold(layer, data.draw(batch_norms(d, layer.out_channels)), shape, seed)


@given(case=linear_cases(), data=st.data(), seed=st.integers(0, 2**31 - 1))
def test_folding_a_linear_equals_linear_then_eval_batch_norm(case, data, seed):
    layer, shape, d = case
    _check_fold(layer, data.draw(batch_norms(d, layer.out_features)), shape, seed)


def test_the_named_entry_points_fold_their_own_kind():
    conv, lin = nn.Conv2d(2, 3, 3, groups=1), nn.Linear(4, 3)
    bn2, bn1 = nn.BatchNorm2d(3).eval(), nn.BatchNorm1d(3).eval()
    _randomize(nn.Linear(1, 1), bn2, 1)
    _randomize(nn.Linear(1, 1), bn1, 2)
    x2, x1 = torch.randn(2, 2, 5, 5), torch.randn(5, 4)
    torch.testing.assert_close(fold_conv_bn(conv, bn2)(x2), bn2(conv(x2)))
    torch.testing.assert_close(fold_linear_bn(lin, bn1)(x1), bn1(lin(x1)))


def test_the_folded_layer_follows_the_inputs_dtype_and_keeps_requires_grad():
    conv, bn = nn.Conv1d(2, 2, 1, bias=False, dtype=torch.float16), nn.BatchNorm1d(2).eval()
    conv.weight.requires_grad_(False)
    folded = fold_batch_norm(conv, bn)
    assert folded.weight.dtype == folded.bias.dtype == torch.float16
    assert not folded.weight.requires_grad and not folded.bias.requires_grad
    assert conv.bias is None   # the input keeps its own (absent) bias


def test_a_bias_before_batch_norm_is_cancelled_by_the_fold():
    """Chapter 10's point: b − μ; a layer's bias only shifts μ, so the folded layers are the same."""
    conv, bn = nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3).eval()
    _randomize(conv, bn, 3)
    shifted = copy.deepcopy(conv)
    shifted_bn = copy.deepcopy(bn)
    with torch.no_grad():
        shifted.bias.add_(5.0)
        shifted_bn.running_mean.add_(5.0)   # what training would have measured
    a, b = fold_batch_norm(conv, bn), fold_batch_norm(shifted, shifted_bn)
    torch.testing.assert_close(a.weight, b.weight)
    torch.testing.assert_close(a.bias, b.bias)


# ------------------------------------------------------------------ what it refuses, in both languages

REFUSALS = [
    ("training-mode", lambda: fold_batch_norm(nn.Conv2d(3, 4, 1), nn.BatchNorm2d(4)),
     ValueError, ["bn.eval()"]),
    ("training-mode-normlib", lambda: fold_batch_norm(nn.Linear(3, 4), normlib.BatchNorm1d(4)),
     ValueError, ["bn.eval()"]),
    ("no-running-stats", lambda: fold_batch_norm(nn.Conv1d(3, 4, 1),
                                                 nn.BatchNorm1d(4, track_running_stats=False).eval()),
     ValueError, ["track_running_stats=False", "BatchNorm1d"]),
    ("conv-channels", lambda: fold_batch_norm(nn.Conv2d(3, 4, 1), nn.BatchNorm2d(5).eval()),
     ValueError, ["out_channels=4", "num_features=5"]),
    ("linear-features", lambda: fold_linear_bn(nn.Linear(3, 4), normlib.BatchNorm1d(2).eval()),
     ValueError, ["out_features=4", "num_features=2"]),
    ("transposed-conv", lambda: fold_batch_norm(nn.ConvTranspose2d(3, 4, 1), nn.BatchNorm2d(4).eval()),
     TypeError, ["ConvTranspose2d", "torch.nn.Conv2d", "torch.nn.Linear"]),
    ("linear-to-fold_conv_bn", lambda: fold_conv_bn(nn.Linear(3, 4), nn.BatchNorm1d(4).eval()),
     TypeError, ["Linear", "torch.nn.Conv3d"]),
    ("conv-to-fold_linear_bn", lambda: fold_linear_bn(nn.Conv1d(3, 4, 1), nn.BatchNorm1d(4).eval()),
     TypeError, ["Conv1d", "torch.nn.Linear"]),
    ("not-a-batch-norm", lambda: fold_batch_norm(nn.Conv2d(3, 4, 1),
                                                 nn.InstanceNorm2d(4, track_running_stats=True).eval()),
     TypeError, ["InstanceNorm2d", "BatchNorm"]),
    ("lazy-layer", lambda: fold_batch_norm(nn.LazyConv2d(4, 1), nn.BatchNorm2d(4).eval()),
     ValueError, ["LazyConv2d", "lazy"]),
]


@pytest.mark.parametrize("case", REFUSALS, ids=[c[0] for c in REFUSALS])
def test_every_refusal_explains_itself_in_english_and_korean(case):
    _, call, kind, must_contain = case
    english, korean = raised_in_english_and_korean(call)
    assert isinstance(english, kind) and type(korean) is type(english)
    assert not has_hangul(str(english)) and has_hangul(str(korean)), f"{english!s} / {korean!s}"
    assert str(english).split(": ")[0] == str(korean).split(": ")[0]   # the function's name first, in both
    for needle in must_contain:
        assert needle in str(english) and needle in str(korean), f"{needle!r} missing: {english!s} / {korean!s}"


def test_a_refusal_leaves_the_inputs_as_they_were():
    conv, bn = nn.Conv2d(3, 4, 1), nn.BatchNorm2d(4)
    before = _state(conv, bn)
    raised(lambda: fold_batch_norm(conv, bn))
    for (t0, s0), (t1, s1) in zip(before, _state(conv, bn)):
        assert t0 == t1 and all(torch.equal(s0[k], s1[k]) for k in s0)


def test_the_tolerance_catches_a_slip():
    """ε outside the square root (one of the classroom's slips) is far outside the float32 tolerance."""
    conv, bn = nn.Conv2d(2, 3, 3, dtype=torch.float64), nn.BatchNorm2d(3, eps=0.1, dtype=torch.float64)
    _randomize(conv, bn, 4)
    x = torch.randn(2, 2, 5, 5, dtype=torch.float64)
    slipped = fold_batch_norm(conv, bn)
    s_right = bn.weight / torch.sqrt(bn.running_var + bn.eps)
    s_wrong = bn.weight / (torch.sqrt(bn.running_var) + bn.eps)
    with torch.no_grad():
        slipped.weight.mul_((s_wrong / s_right).reshape(-1, 1, 1, 1))
        slipped.bias.copy_(s_wrong * (conv.bias - bn.running_mean) + bn.bias)
        f32 = lambda m: copy.deepcopy(m).float()
        ours, ref = f32(slipped)(x.float()), f32(bn)(f32(conv)(x.float()))
    allowance = ROUNDING_FACTOR * torch.finfo(torch.float32).eps * _terms(conv, bn, x)
    with pytest.raises(AssertionError, match="out of tolerance"):
        assert_close_elementwise(ours, ref, allowance, "slip", BASE_TOL[torch.float32])
