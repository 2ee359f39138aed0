"""normlib.autograd: hand-derived backward passes.

* gradcheck and gradgradcheck in float64;
* outputs and gradients equal torch's and the reference (normlib.functional, differentiated by
  autograd) on the same hypothesis-generated shapes, dtypes, eps and offsets as test_functional,
  with the same tolerances (1e-10 float64 / 1e-5 float32 base, conditioning-aware);
* only x, γ, μ and 1/σ are saved for backward, which is no more than torch's built-in keeps;
* the same errors as normlib.functional; the modules are drop-in.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn as tnn
import torch.nn.functional as TF
from hypothesis import assume, given
from hypothesis import strategies as st
from torch.autograd import gradcheck, gradgradcheck

import normlib
import normlib.autograd as A
import normlib.functional as NF
from helpers.library_cases import CASES, assert_raises_like_torch
from helpers.torch_compare import (
    MOMENTA,
    channel_shapes,
    common,
    compare,
    compare_running,
    exact_of,
    forward_and_grads,
    layer_shapes,
    make_inputs,
    running_stats,
)
from normlib import axes
from normlib_book.instruments import labels, saved_for_backward


def _d(*shape, gen, scale=1.0, offset=0.0):
    return (offset + scale * torch.randn(*shape, generator=gen, dtype=torch.float64)).requires_grad_(True)


def _cases():
    g = torch.Generator().manual_seed(7)
    return {
        "layer (3,4) affine": (lambda x, w, b: A.layer_norm(x, (3, 4), w, b),
                               (_d(2, 3, 4, gen=g), _d(3, 4, gen=g), _d(3, 4, gen=g))),
        "layer 1-D input": (lambda x, w: A.layer_norm(x, 5, w, eps=0.1), (_d(5, gen=g), _d(5, gen=g))),
        "layer no affine, offset": (lambda x: A.layer_norm(x, [6]), (_d(3, 6, gen=g, offset=40.0, scale=3.0),)),
        "layer bias only": (lambda x, b: A.layer_norm(x, 4, None, b), (_d(2, 2, 4, gen=g), _d(4, gen=g))),
        "rms affine": (lambda x, w: A.rms_norm(x, (4,), w, eps=1e-6), (_d(3, 5, 4, gen=g), _d(4, gen=g))),
        "rms eps=None, 2 dims": (lambda x, w: A.rms_norm(x, (2, 3), w), (_d(4, 2, 3, gen=g), _d(2, 3, gen=g))),
        "rms no weight": (lambda x: A.rms_norm(x, 3), (_d(5, 3, gen=g, offset=2.0),)),
        "batch (N,C)": (lambda x, w, b: A.batch_norm(x, None, None, w, b, training=True),
                        (_d(5, 3, gen=g), _d(3, gen=g), _d(3, gen=g))),
        "batch (N,C,L)": (lambda x, w, b: A.batch_norm(x, None, None, w, b, training=True, eps=1e-3),
                          (_d(4, 3, 2, gen=g), _d(3, gen=g), _d(3, gen=g))),
        "batch (N,C,H,W) running": (lambda x, w: A.batch_norm(x, torch.zeros(2, dtype=torch.float64),
                                                               torch.ones(2, dtype=torch.float64), w, None, True),
                                    (_d(2, 2, 2, 3, gen=g), _d(2, gen=g))),
        "batch (N,C,D,H,W) no affine": (lambda x: A.batch_norm(x, None, None, training=True),
                                        (_d(2, 2, 2, 1, 2, gen=g),)),
    }


@pytest.mark.parametrize("name", list(_cases()))
def test_gradcheck_and_gradgradcheck(name):
    fn, inputs = _cases()[name]
    assert gradcheck(fn, inputs, eps=1e-6, atol=1e-7)
    assert gradgradcheck(fn, inputs, eps=1e-6, atol=1e-7)


def test_gradcheck_can_fail():
    """The check above is not vacuous: a backward that forgets the mean(g) term is caught."""

    class Broken(A.LayerNormFunction):
        @staticmethod
        def backward(ctx, grad_output):
            grads = A.LayerNormFunction.backward(ctx, grad_output)
            return (grads[0] + grad_output.mean(dim=-1, keepdim=True) * ctx.saved_tensors[3],) + grads[1:]

    x = _d(3, 4, gen=torch.Generator().manual_seed(0))
    assert not gradcheck(lambda t: Broken.apply(t, None, None, 1, 1e-5), (x,), eps=1e-6, atol=1e-7, raise_exception=False)


# ------------------------------------------------------------------ forward mode (jvp)

@pytest.mark.parametrize("name", list(_cases()))
def test_forward_ad_gradcheck(name):
    """The hand-derived jvp against finite differences, and forward-over-reverse (the jvp of the
    hand-derived backward) against the double backward."""
    fn, inputs = _cases()[name]
    assert gradcheck(fn, inputs, eps=1e-6, atol=1e-7, check_forward_ad=True)
    assert gradgradcheck(fn, inputs, eps=1e-6, atol=1e-7, check_fwd_over_rev=True)


def test_forward_ad_gradcheck_can_fail():
    """The jvp check is not vacuous: a jvp that forgets the mean(ẋ) term is caught."""

    class Broken(A.LayerNormFunction):
        @staticmethod
        def jvp(ctx, input_t, weight_t, bias_t, k_t, eps_t):
            right = A.LayerNormFunction.jvp(ctx, input_t, weight_t, bias_t, k_t, eps_t)
            return right + input_t.mean(dim=-1, keepdim=True) * ctx.saved_tensors[3]

    x = _d(3, 4, gen=torch.Generator().manual_seed(0))
    fn = lambda t: Broken.apply(t, None, None, 1, 1e-5)
    assert gradcheck(fn, (x,), eps=1e-6, atol=1e-7)       # the backward is right ...
    assert not gradcheck(fn, (x,), eps=1e-6, atol=1e-7, check_forward_ad=True, check_backward_ad=False,
                         check_undefined_grad=False, raise_exception=False)   # ... the jvp is not


def _jvp_cases():
    # (name, normlib.autograd call, torch call, input shape, parameter shape)
    return [
        ("layer (2,3,4)/(3,4)", lambda F, x, w, b: F.layer_norm(x, (3, 4), w, b, 1e-5), (2, 3, 4), (3, 4)),
        ("layer 1-D", lambda F, x, w, b: F.layer_norm(x, (5,), w, b, 0.1), (5,), (5,)),
        ("rms (3,5,4)", lambda F, x, w, b: F.rms_norm(x, (4,), w, 1e-6), (3, 5, 4), (4,)),
        ("batch (5,3)", lambda F, x, w, b: F.batch_norm(x, None, None, w, b, True, 0.1, 1e-5), (5, 3), (3,)),
        ("batch (2,3,4,5)", lambda F, x, w, b: F.batch_norm(x, None, None, w, b, True, 0.1, 1e-3), (2, 3, 4, 5), (3,)),
        ("batch (2,2,2,3,2)", lambda F, x, w, b: F.batch_norm(x, None, None, w, b, True, 0.1, 1e-5), (2, 2, 2, 3, 2),
         (2,)),
    ]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("case", _jvp_cases(), ids=[c[0] for c in _jvp_cases()])
@pytest.mark.parametrize("which", ["input", "weight", "bias", "all"])
def test_jvp_matches_torch_func_jvp(case, which, dtype):
    """normlib.autograd's jvp (forward_ad) against torch.func.jvp of torch's own layer."""
    import torch.autograd.forward_ad as fwAD
    _, call, shape, pshape = case
    g = torch.Generator().manual_seed(11)
    x = (3.0 + 2.0 * torch.randn(shape, generator=g, dtype=torch.float64)).to(dtype)
    w = (0.5 + torch.rand(pshape, generator=g, dtype=torch.float64)).to(dtype)
    b = torch.randn(pshape, generator=g, dtype=torch.float64).to(dtype)
    primals = (x, w, b)
    tangents = tuple(torch.randn(t.shape, generator=g, dtype=torch.float64).to(dtype)
                     if which in (name, "all") else torch.zeros_like(t)
                     for name, t in zip(("input", "weight", "bias"), primals))
    _, expected = torch.func.jvp(lambda *a: call(TF, *a), primals, tangents)
    with fwAD.dual_level():
        out = call(A, *(fwAD.make_dual(p, t) for p, t in zip(primals, tangents)))
        got = fwAD.unpack_dual(out).tangent
    assert got is not None, "normlib.autograd gave the output no tangent"
    assert got.shape == expected.shape and got.dtype == expected.dtype
    tol = {torch.float64: 1e-10, torch.float32: 2e-5}[dtype]
    err = (got.double() - expected.double()).abs().max().item() if got.numel() else 0.0
    scale = 1 + expected.double().abs().max().item() if got.numel() else 1.0
    assert err <= tol * scale, f"jvp differs from torch.func.jvp by {err:.3e} (allowed {tol * scale:.3e})"


def test_jvp_keeps_half_precision_and_channels_last():
    """The tangent has the input's dtype (float16 computed in float32, as the output) and, for a
    channels_last input, its memory format, as torch's; so does the input gradient."""
    import torch.autograd.forward_ad as fwAD
    for shape, fmt in (((2, 3, 4, 5), torch.channels_last), ((2, 3, 2, 4, 5), torch.channels_last_3d)):
        x = torch.randn(shape).contiguous(memory_format=fmt)
        w, b = torch.rand(3) + 0.5, torch.randn(3)
        for F in (TF, A):
            with fwAD.dual_level():
                out = F.batch_norm(fwAD.make_dual(x, torch.randn(shape)), None, None, w, b, True)
                tangent = fwAD.unpack_dual(out).tangent
            assert tangent.is_contiguous(memory_format=fmt), f"{F.__name__}: tangent strides {tangent.stride()}"
            xg = x.clone().requires_grad_(True)
            (gx,) = torch.autograd.grad(F.batch_norm(xg, None, None, w, b, True), xg, torch.randn(shape))
            assert gx.is_contiguous(memory_format=fmt), f"{F.__name__}: input gradient strides {gx.stride()}"
    xh = torch.randn(4, 6, dtype=torch.float16)
    with fwAD.dual_level():
        out = A.layer_norm(fwAD.make_dual(xh, torch.randn(4, 6, dtype=torch.float16)), 6)
        assert fwAD.unpack_dual(out).tangent.dtype == torch.float16


def test_batch_norm_running_statistics_are_not_differentiated():
    """As normlib.functional (and torch): running statistics get no tangent in training mode, and
    a 1-D empty input (the one 1-D input torch accepts) gives an empty output."""
    import torch.autograd.forward_ad as fwAD
    x = torch.randn(6, 3, dtype=torch.float64)
    rm, rv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    with fwAD.dual_level():
        A.batch_norm(fwAD.make_dual(x, torch.randn_like(x)), rm, rv, training=True)
        assert fwAD.unpack_dual(rm).tangent is None and fwAD.unpack_dual(rv).tangent is None
    for training in (True, False):
        y = A.batch_norm(torch.empty(0, requires_grad=True), torch.zeros(0), torch.ones(0), training=training)
        assert y.shape == (0,) and y.requires_grad


# ------------------------------------------------------------------ against torch and the reference

def _both(ours_fn, ref_fn, torch_fn, inp, labels, eps, centered, channel_of=None, what="", exact_fn=None):
    """Compare ours with torch and with the reference; ``exact_fn`` (default torch_fn) is run in float64."""
    ours = forward_and_grads(ours_fn, inp)
    exact = exact_of(exact_fn or torch_fn, inp)
    compare(ours, forward_and_grads(torch_fn, inp), inp, labels, eps, centered, channel_of, f"{what} vs torch", exact)
    compare(ours, forward_and_grads(ref_fn, inp), inp, labels, eps, centered, channel_of, f"{what} vs reference", exact)


@given(shapes=layer_shapes(), **common)
def test_layer_norm_matches_torch_and_reference(shapes, dtype, seed, offset, scale, eps, with_weight, with_bias):
    shape, ns, norm = shapes
    inp = make_inputs(shape, dtype, seed, offset, scale, norm, with_weight, with_bias)
    _both(lambda x, **kw: A.layer_norm(x, ns, eps=eps, **kw), lambda x, **kw: NF.layer_norm(x, ns, eps=eps, **kw),
          lambda x, **kw: TF.layer_norm(x, norm, eps=eps, **kw), inp,
          labels(axes.layer_norm_axes(shape, norm)), eps, True, what=f"layer_norm{shape} {dtype}")


@given(shapes=layer_shapes(), eps_default=st.booleans(), **common)
def test_rms_norm_matches_torch_and_reference(shapes, eps_default, dtype, seed, offset, scale, eps, with_weight,
                                              with_bias):
    shape, ns, norm = shapes
    eps_arg = None if eps_default else eps
    eff_eps = torch.finfo(torch.float64 if dtype == torch.float64 else torch.float32).eps if eps_default else eps
    inp = make_inputs(shape, dtype, seed, offset, scale, norm, with_weight, False)
    _both(lambda x, weight, bias: A.rms_norm(x, ns, weight, eps=eps_arg),
          lambda x, weight, bias: NF.rms_norm(x, ns, weight, eps=eps_arg),
          lambda x, weight, bias: TF.rms_norm(x, norm, weight, eps=eff_eps), inp,
          labels(axes.rms_norm_axes(shape, norm)), eff_eps, False, what=f"rms_norm{shape} {dtype}")


@given(shape=channel_shapes(), momentum=st.sampled_from(MOMENTA), with_running=st.booleans(), **common)
def test_batch_norm_training_matches_torch_and_reference(shape, momentum, with_running, dtype, seed, offset, scale,
                                                         eps, with_weight, with_bias):
    s = axes.batch_norm_axes(shape)
    assume(s.count != 1 and eps > 0)     # torch and normlib refuse these: test_errors.py
    inp = make_inputs(shape, dtype, seed, offset, scale, shape[1], with_weight, with_bias)
    running = {k: (running_stats(shape[1], dtype, seed) if with_running else (None, None)) for k in ("hand", "torch", "ref")}
    what = f"batch_norm{shape} {dtype}"
    _both(lambda x, **kw: A.batch_norm(x, *running["hand"], training=True, momentum=momentum, eps=eps, **kw),
          lambda x, **kw: NF.batch_norm(x, *running["ref"], training=True, momentum=momentum, eps=eps, **kw),
          lambda x, **kw: TF.batch_norm(x, *running["torch"], training=True, momentum=momentum, eps=eps, **kw),
          inp, labels(s), eps, True, channel_of=1, what=what,
          exact_fn=lambda x, **kw: TF.batch_norm(x, None, None, training=True, eps=eps, **kw))
    if with_running:
        # each implementation ran its forward once on its own buffers; the float64 answer decides
        # where torch's half-precision running statistics are farther from it than ours
        exact = tuple(t.double() for t in running_stats(shape[1], dtype, seed))
        TF.batch_norm(inp.x.double(), *exact, training=True, momentum=momentum, eps=eps)
        for other in ("torch", "ref"):
            compare_running(running["hand"], running[other], inp, labels(s), eps, momentum, s.count,
                             f"{what} vs {other}", exact)


def test_forward_is_the_reference_bit_for_bit():
    """Same operations in the same order as normlib.functional: the outputs are identical."""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(6, 5, 7, generator=g)
    w, b = torch.rand(7, generator=g) + 0.5, torch.randn(7, generator=g)
    assert torch.equal(A.layer_norm(x, 7, w, b), NF.layer_norm(x, 7, w, b))
    assert torch.equal(A.rms_norm(x, 7, w), NF.rms_norm(x, 7, w))
    rm, rv = torch.zeros(5), torch.ones(5)
    rm2, rv2 = rm.clone(), rv.clone()
    assert torch.equal(A.batch_norm(x, rm, rv, w[:5], b[:5], True, 0.3), NF.batch_norm(x, rm2, rv2, w[:5], b[:5], True, 0.3))
    assert torch.equal(rm, rm2) and torch.equal(rv, rv2)


def test_eval_mode_batch_norm_is_the_reference():
    x = torch.randn(4, 3, 2, requires_grad=True)
    rm, rv = torch.randn(3), torch.rand(3) + 0.5
    y = A.batch_norm(x, rm, rv, training=False)
    assert torch.equal(y, NF.batch_norm(x, rm, rv, training=False))
    assert "Function" not in y.grad_fn.name()


def test_only_some_inputs_need_gradients():
    x = torch.randn(3, 4, dtype=torch.float64)
    w = torch.rand(4, dtype=torch.float64, requires_grad=True)
    b = torch.randn(4, dtype=torch.float64, requires_grad=True)
    (gw_ours,) = torch.autograd.grad(A.layer_norm(x, 4, w, b).pow(3).sum(), [w])
    (gw_ref,) = torch.autograd.grad(TF.layer_norm(x, (4,), w, b).pow(3).sum(), [w])
    assert torch.allclose(gw_ours, gw_ref, atol=1e-12)
    xg = x.clone().requires_grad_(True)
    (gx,) = torch.autograd.grad(A.rms_norm(xg, 4, w.detach()).pow(3).sum(), [xg])
    (gx_ref,) = torch.autograd.grad(TF.rms_norm(xg, (4,), w.detach()).pow(3).sum(), [xg])
    assert torch.allclose(gx, gx_ref, atol=1e-12)


# ------------------------------------------------------------------ memory saved for backward

@pytest.mark.parametrize("name", ["layer", "rms", "batch"])
def test_saves_only_input_weight_mean_and_rstd(name):
    shape = (8, 6, 5) if name == "batch" else (8, 6, 40)
    x = torch.randn(shape, requires_grad=True)
    groups = {"layer": 8 * 6, "rms": 8 * 6, "batch": 6}[name]
    params = shape[-1] if name != "batch" else 6
    w, b = torch.ones(params, requires_grad=True), torch.zeros(params, requires_grad=True)
    calls = {
        "layer": (lambda m: m.layer_norm(x, shape[-1], w, b), lambda: TF.layer_norm(x, (shape[-1],), w, b)),
        "rms": (lambda m: m.rms_norm(x, shape[-1], w), lambda: TF.rms_norm(x, (shape[-1],), w)),
        "batch": (lambda m: m.batch_norm(x, None, None, w, b, True), lambda: TF.batch_norm(x, None, None, w, b, True)),
    }[name]
    hand = saved_for_backward(calls[0], A)
    stats = 1 if name == "rms" else 2
    expected = 4 * (x.numel() + params + stats * groups)          # x, γ, (μ,) 1/σ in float32
    assert hand.nbytes == expected, hand.tensors
    assert sum(n == 4 * x.numel() for _, _, n in hand.tensors) == 1, "exactly one input-sized tensor"
    reference = saved_for_backward(calls[0], NF)
    builtin = saved_for_backward(calls[1])
    assert hand.nbytes <= builtin.nbytes, (hand, builtin)
    assert reference.nbytes >= hand.nbytes + 4 * x.numel(), (reference, hand)    # at least one more full copy


# ------------------------------------------------------------------ errors and modules

HAND_CASES = [c for c in CASES if c[0].split("-")[0] in ("ln", "rms", "bn")]


@pytest.mark.parametrize("case", HAND_CASES, ids=[c[0] for c in HAND_CASES])
def test_raises_like_torch(case):
    _, call, must_contain = case
    assert_raises_like_torch(lambda: call(TF), lambda: call(A), must_contain)


MODULES = [
    ("LayerNorm", dict(normalized_shape=[4, 6]), (3, 4, 6)),
    ("RMSNorm", dict(normalized_shape=6, eps=1e-6), (3, 5, 6)),
    ("BatchNorm1d", dict(num_features=4, momentum=None), (5, 4, 3)),
    ("BatchNorm2d", dict(num_features=3), (4, 3, 2, 2)),
    ("BatchNorm3d", dict(num_features=2, affine=False), (2, 2, 2, 3, 2)),
]


@pytest.mark.parametrize("cfg", MODULES, ids=[c[0] for c in MODULES])
def test_modules_are_drop_in_with_hand_backward(cfg):
    name, kwargs, shape = cfg
    g = torch.Generator().manual_seed(5)
    theirs = getattr(tnn, name)(**kwargs, dtype=torch.float64)
    ours = getattr(A, name)(**kwargs, dtype=torch.float64)
    assert isinstance(ours, getattr(normlib, name))
    with torch.no_grad():
        for p in theirs.parameters():
            p.copy_(torch.rand(p.shape, generator=g, dtype=p.dtype) + 0.5)
    ours.load_state_dict(theirs.state_dict(), strict=True)
    for _ in range(3):
        x = torch.randn(shape, generator=g, dtype=torch.float64)
        xo, xt = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
        yo, yt = ours(xo), theirs(xt)
        assert yo.grad_fn.name().endswith("FunctionBackward")
        up = torch.randn(shape, generator=g, dtype=torch.float64)
        (yo * up).sum().backward()
        (yt * up).sum().backward()
        assert torch.allclose(yo, yt, atol=1e-10) and torch.allclose(xo.grad, xt.grad, atol=1e-10)
    for (k, a), (_, b) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        assert torch.allclose(a.double(), b.double(), atol=1e-10), k
    for (k, a), (_, b) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert torch.allclose(a.grad, b.grad, atol=1e-10), k
    if name.startswith("BatchNorm"):
        ours.eval(), theirs.eval()
        x = torch.randn(shape, generator=g, dtype=torch.float64)
        assert torch.allclose(ours(x), theirs(x), atol=1e-10)


def test_hand_derived_functions_under_torch_func():
    """A deliberate difference (normlib/README.md): normlib.autograd's Functions keep the classic
    ``forward(ctx, …)`` form that chapter 7 teaches, so torch.func's transforms (jvp, grad, vmap),
    which need ``setup_context``, refuse them; torch's layers and normlib.functional work there.
    Forward mode works through torch.autograd.forward_ad (test_jvp_matches_torch_func_jvp)."""
    x, t = torch.randn(4, 3, dtype=torch.float64), torch.randn(4, 3, dtype=torch.float64)
    _, expected = torch.func.jvp(lambda v: TF.layer_norm(v, (3,)), (x,), (t,))
    _, reference = torch.func.jvp(lambda v: NF.layer_norm(v, 3), (x,), (t,))
    torch.testing.assert_close(reference, expected, rtol=1e-10, atol=1e-10)
    with pytest.raises(RuntimeError, match="setup_context"):
        torch.func.jvp(lambda v: A.layer_norm(v, 3), (x,), (t,))
