"""normlib.functional against torch.nn.functional on hypothesis-generated inputs.

Each test compares the output, the updated running statistics (where there are any) and the
gradients of input, weight and bias, for float64, float32, float16 and bfloat16. The
tolerance is explained in helpers/torch_compare.py: the issue's base tolerance, plus the rounding that the
conditioning of the input forces on every implementation.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as TF
from hypothesis import assume, given
from hypothesis import strategies as st

import normlib.functional as NF
from helpers.torch_compare import (
    BASE_TOL,
    DTYPES,
    MOMENTA,
    channel_shapes,
    common,
    compare,
    compare_eval,
    compare_running,
    compute_dtype,
    exact_of,
    forward_and_grads,
    layer_shapes,
    make_inputs,
    running_stats,
)
from normlib import axes
from normlib_book.instruments import labels

# ------------------------------------------------------------------ strategies


# ------------------------------------------------------------------ LayerNorm and RMSNorm

@given(shapes=layer_shapes(), **common)
def test_layer_norm_matches_torch(shapes, dtype, seed, offset, scale, eps, with_weight, with_bias):
    shape, ns, norm = shapes
    inp = make_inputs(shape, dtype, seed, offset, scale, norm, with_weight, with_bias)
    ours = forward_and_grads(lambda x, **kw: NF.layer_norm(x, ns, eps=eps, **kw), inp)
    torch_fn = lambda x, **kw: TF.layer_norm(x, norm, eps=eps, **kw)
    theirs = forward_and_grads(torch_fn, inp)
    cells = labels(axes.layer_norm_axes(shape, norm))
    compare(ours, theirs, inp, cells, eps, centered=True, what=f"layer_norm{shape} {dtype}",
            exact=exact_of(torch_fn, inp))


@given(shapes=layer_shapes(), eps_default=st.booleans(), **common)
def test_rms_norm_matches_torch(shapes, eps_default, dtype, seed, offset, scale, eps, with_weight, with_bias):
    shape, ns, norm = shapes
    eps_arg = None if eps_default else eps
    inp = make_inputs(shape, dtype, seed, offset, scale, norm, with_weight, False)
    ours = forward_and_grads(lambda x, weight, bias: NF.rms_norm(x, ns, weight, eps=eps_arg), inp)
    eff_eps = torch.finfo(compute_dtype(dtype)).eps if eps_default else eps
    torch_fn = lambda x, weight, bias: TF.rms_norm(x, norm, weight, eps=eff_eps)
    theirs = forward_and_grads(lambda x, weight, bias: TF.rms_norm(x, norm, weight, eps=eps_arg), inp)
    cells = labels(axes.rms_norm_axes(shape, norm))
    compare(ours, theirs, inp, cells, eff_eps, centered=False, what=f"rms_norm{shape} {dtype}",
            exact=exact_of(torch_fn, inp))


# ------------------------------------------------------------------ GroupNorm

@given(data=st.data(), **common)
def test_group_norm_matches_torch(data, dtype, seed, offset, scale, eps, with_weight, with_bias):
    ndim = data.draw(st.integers(2, 5))
    groups = data.draw(st.integers(1, 3))
    per_group = data.draw(st.integers(1, 3))
    n = data.draw(st.integers(0, 3))
    shape = (n, groups * per_group, *[data.draw(st.integers(1, 3)) for _ in range(ndim - 2)])
    assume(n * per_group * math.prod(shape[2:]) != 1)   # torch raises there: see test_errors.py
    inp = make_inputs(shape, dtype, seed, offset, scale, shape[1], with_weight, with_bias)
    ours = forward_and_grads(lambda x, **kw: NF.group_norm(x, groups, eps=eps, **kw), inp)
    def torch_fn(x, weight, bias):
        # torch 2.13's group_norm *backward* raises "tensor does not have a device" when bias is
        # given without weight; γ = 1 is the same function, so the reference uses it there.
        if weight is None and bias is not None:
            weight = torch.ones(shape[1], dtype=x.dtype)
        return TF.group_norm(x, groups, weight, bias, eps=eps)
    theirs = forward_and_grads(torch_fn, inp)
    cells = labels(axes.group_norm_axes(shape, groups))
    compare(ours, theirs, inp, cells, eps, centered=True, channel_of=1, what=f"group_norm{shape}/G={groups} {dtype}",
            exact=exact_of(torch_fn, inp))


# ------------------------------------------------------------------ BatchNorm and InstanceNorm


@given(shape=channel_shapes(), training=st.booleans(), momentum=st.sampled_from(MOMENTA),
       with_running=st.booleans(), **common)
def test_batch_norm_matches_torch(shape, training, momentum, with_running, dtype, seed, offset, scale, eps,
                                  with_weight, with_bias):
    s = axes.batch_norm_axes(shape)
    assume(not (training and s.count == 1))          # torch raises there: see test_errors.py
    assume(training or with_running)                 # eval needs running statistics
    assume(eps > 0 if training else eps >= 0)        # torch 2.13 refuses other eps: see test_errors.py
    inp = make_inputs(shape, dtype, seed, offset, scale, shape[1], with_weight, with_bias)
    rm_o, rv_o = running_stats(shape[1], dtype, seed) if with_running else (None, None)
    rm_t, rv_t = (rm_o.clone(), rv_o.clone()) if with_running else (None, None)
    # the float64 answer for the running statistics (torch on the same values, upcast)
    rm_e, rv_e = (rm_o.double(), rv_o.double()) if with_running else (None, None)
    if training and with_running:
        TF.batch_norm(inp.x.double(), rm_e, rv_e, training=True, momentum=momentum, eps=eps)
    ours = forward_and_grads(lambda x, **kw: NF.batch_norm(x, rm_o, rv_o, training=training, momentum=momentum,
                                                           eps=eps, **kw), inp)
    theirs = forward_and_grads(lambda x, **kw: TF.batch_norm(x, rm_t, rv_t, training=training, momentum=momentum,
                                                             eps=eps, **kw), inp)
    what = f"batch_norm{shape} training={training} {dtype}"
    if training:
        exact = exact_of(lambda x, **kw: TF.batch_norm(x, None, None, training=True, eps=eps, **kw), inp)
        compare(ours, theirs, inp, labels(s), eps, centered=True, channel_of=1, what=what, exact=exact)
        if with_running:
            # forward_and_grads ran the forward once each, so each updated its running stats once
            compare_running((rm_o, rv_o), (rm_t, rv_t), inp, labels(s), eps, momentum, s.count, what,
                             (rm_e, rv_e))
    else:
        compare_eval(ours, theirs, inp, rm_t, rv_t, eps, what)
        assert torch.equal(rm_o, rm_t) and torch.equal(rv_o, rv_t), "eval mode must not touch running stats"


@given(shape=channel_shapes(min_ndim=3), use_input_stats=st.booleans(), momentum=st.sampled_from(MOMENTA),
       with_running=st.booleans(), **common)
def test_instance_norm_matches_torch(shape, use_input_stats, momentum, with_running, dtype, seed, offset, scale,
                                     eps, with_weight, with_bias):
    s = axes.instance_norm_axes(shape)
    assume(not (use_input_stats and s.count == 1))   # torch raises there: see test_errors.py
    assume(use_input_stats or with_running)
    inp = make_inputs(shape, dtype, seed, offset, scale, shape[1], with_weight, with_bias)
    rm_o, rv_o = running_stats(shape[1], dtype, seed) if with_running else (None, None)
    rm_t, rv_t = (rm_o.clone(), rv_o.clone()) if with_running else (None, None)
    rm_e, rv_e = (rm_o.double(), rv_o.double()) if with_running else (None, None)
    if use_input_stats and with_running and shape[0] > 0:
        TF.instance_norm(inp.x.double(), rm_e, rv_e, momentum=momentum, eps=eps)
    kw_common = dict(use_input_stats=use_input_stats, momentum=momentum, eps=eps)
    ours = forward_and_grads(lambda x, **kw: NF.instance_norm(x, rm_o, rv_o, **kw_common, **kw), inp)
    if shape[0] == 0 and (with_weight or with_bias):
        # torch 2.13 raises an internal IndexError here (it indexes weight.repeat(0)[0]); an empty
        # batch has an empty output, zero gradients and unchanged running statistics.
        assert ours[0].shape == shape and all(not g.any() for g in ours[1].values())
        if with_running:
            assert torch.equal(rm_o, rm_t) and torch.equal(rv_o, rv_t)
        return
    theirs = forward_and_grads(lambda x, **kw: TF.instance_norm(x, rm_t, rv_t, **kw_common, **kw), inp)
    what = f"instance_norm{shape} use_input_stats={use_input_stats} {dtype}"
    if use_input_stats:
        exact = exact_of(lambda x, **kw: TF.instance_norm(x, eps=eps, **kw), inp)
        compare(ours, theirs, inp, labels(s), eps, centered=True, channel_of=1, what=what, exact=exact)
        if with_running and inp.x.numel():
            compare_running((rm_o, rv_o), (rm_t, rv_t), inp, labels(s), eps, momentum, s.count, what,
                             (rm_e, rv_e))
    else:
        compare_eval(ours, theirs, inp, rm_t, rv_t, eps, what)


# ------------------------------------------------------------------ fixed cases the issue names

@pytest.mark.parametrize("name", ["layer", "rms", "group", "batch", "instance"])
def test_large_offset_float32(name):
    """Values around 1e4 with spread 1, in float32.

    float32 resolves 1e4 only to ~1e-3, so after normalization (divide by σ ≈ 1) no float32
    implementation can be closer than ~1e-3 to the exact answer. The test measures how far
    torch and normlib each are from the float64 answer computed on the same float32 inputs,
    and requires normlib to be within the rounding bound — and no more than 4× torch's
    own error (plus one unit of the bound, for draws where torch happens to be very close).
    """
    torch.manual_seed(0)
    shape = {"layer": (16, 64), "rms": (16, 64), "group": (4, 8, 16), "batch": (64, 8), "instance": (4, 8, 32)}[name]
    x = 1e4 + torch.randn(shape)
    fns = {
        "layer": (lambda f, t: f.layer_norm(t, (shape[-1],))),
        "rms": (lambda f, t: f.rms_norm(t, (shape[-1],))),
        "group": (lambda f, t: f.group_norm(t, 2)),
        "batch": (lambda f, t: f.batch_norm(t, None, None, training=True)),
        "instance": (lambda f, t: f.instance_norm(t)),
    }
    fn = fns[name]
    truth = fn(TF, x.double())
    err_torch = (fn(TF, x).double() - truth).abs().max().item()
    err_ours = (fn(NF, x).double() - truth).abs().max().item()
    bound = 8 * torch.finfo(torch.float32).eps * 1e4   # u · κ with κ = max|x| / σ ≈ 1e4
    print(f"{name}: |torch − exact| = {err_torch:.2e}, |normlib − exact| = {err_ours:.2e}, bound {bound:.2e}")
    assert err_ours <= bound
    assert err_ours <= 4 * err_torch + torch.finfo(torch.float32).eps * 1e4
    # and in float64 the same data agree to the 1e-10
    assert (fn(NF, x.double()) - truth).abs().max().item() < 1e-10


def test_half_precision_is_computed_in_float32_and_returned_in_input_dtype():
    torch.manual_seed(0)
    x = torch.randn(4, 3, 5)
    for dtype in (torch.float16, torch.bfloat16):
        xh = x.to(dtype)
        for out, ref in [
            (NF.layer_norm(xh, (5,)), NF.layer_norm(xh.float(), (5,))),
            (NF.group_norm(xh, 3), NF.group_norm(xh.float(), 3)),
            (NF.batch_norm(xh, None, None, training=True), NF.batch_norm(xh.float(), None, None, training=True)),
            (NF.rms_norm(xh, (5,)), NF.rms_norm(xh.float(), (5,))),
        ]:
            assert out.dtype == dtype
            # computed in float32, then rounded once: exactly the float32 result rounded to dtype
            assert torch.equal(out, ref.to(dtype))


def test_rms_norm_default_eps_is_the_compute_dtype_epsilon():
    """torch.nn.RMSNorm's eps=None is finfo of the float32 computation for half inputs."""
    for dtype in DTYPES:
        x = torch.full((4,), 1e-3, dtype=dtype)
        ours, theirs = NF.rms_norm(x, (4,)), TF.rms_norm(x, (4,))
        assert torch.allclose(ours.double(), theirs.double(), rtol=BASE_TOL[dtype], atol=0), (dtype, ours, theirs)
        eps = torch.finfo(compute_dtype(dtype)).eps
        expected = (x.double() / torch.sqrt((x.double() ** 2).mean() + eps)).to(dtype)
        assert torch.allclose(ours.double(), expected.double(), rtol=BASE_TOL[dtype]), dtype


def test_running_stats_formula_pytorch_convention():
    """running ← (1 − m)·running + m·batch, with the unbiased batch variance; forward uses the biased one."""
    x = torch.tensor([[2.0], [4.0], [6.0], [8.0]], dtype=torch.float64)
    rm, rv = torch.tensor([1.0], dtype=torch.float64), torch.tensor([2.0], dtype=torch.float64)
    y = NF.batch_norm(x, rm, rv, training=True, momentum=0.25, eps=1e-300)
    assert torch.allclose(rm, torch.tensor([0.75 * 1.0 + 0.25 * 5.0], dtype=torch.float64))
    assert torch.allclose(rv, torch.tensor([0.75 * 2.0 + 0.25 * (20.0 / 3.0)], dtype=torch.float64))
    assert torch.allclose(y.flatten(), (x.flatten() - 5.0) / math.sqrt(5.0))


@pytest.mark.parametrize("fn", ["batch", "instance", "group", "layer", "rms"])
def test_zero_size_inputs(fn):
    """Empty batches (and empty normalized dims) give empty outputs and leave running stats alone."""
    running = {"normlib": (torch.zeros(3), torch.ones(3)), "torch": (torch.zeros(3), torch.ones(3))}
    cases = {
        "batch": lambda f, x, r: f.batch_norm(x, *r, training=True),
        "instance": lambda f, x, r: f.instance_norm(x, *r),
        "group": lambda f, x, r: f.group_norm(x, 3),
        "layer": lambda f, x, r: f.layer_norm(x, x.shape[-1:]),
        "rms": lambda f, x, r: f.rms_norm(x, x.shape[-1:]),
    }
    for shape in [(0, 3, 4), (0, 3, 2, 2)] + ([(2, 3, 0)] if fn in ("layer", "rms") else []):
        x = torch.randn(shape, requires_grad=True)
        out = cases[fn](NF, x, running["normlib"])
        ref = cases[fn](TF, x.detach(), running["torch"])
        assert out.shape == ref.shape == x.shape
        out.sum().backward()
        assert x.grad.shape == x.shape
        assert torch.equal(running["normlib"][0], torch.zeros(3)) and torch.equal(running["normlib"][1], torch.ones(3))
    if fn == "instance":
        # A deliberate difference: torch 2.13 averages the per-instance statistics of an empty
        # batch (0/0) into its running statistics, which become NaN. normlib leaves them alone,
        # as both libraries do for BatchNorm. If torch changes, this line tells us.
        assert torch.isnan(running["torch"][0]).all()
    else:
        assert torch.equal(running["torch"][0], running["normlib"][0])


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_accepts_the_1d_empty_input_torch_accepts(training):
    """torch's OpInfo samples call batch_norm on a 1-D input of size 0 with running statistics of
    size 0: torch returns an empty tensor of that shape and dtype, differentiable (an empty
    gradient), and leaves the running statistics alone. A 1-D input with elements is still refused."""
    for dtype in (torch.float32, torch.float64):
        results = {}
        for name, F in (("torch", TF), ("normlib", NF)):
            x = torch.empty(0, dtype=dtype, requires_grad=True)
            rm, rv = torch.zeros(0, dtype=dtype), torch.ones(0, dtype=dtype)
            y = F.batch_norm(x, rm, rv, training=training)
            (gx,) = torch.autograd.grad(y.sum(), x, allow_unused=True, materialize_grads=True)
            results[name] = (tuple(y.shape), y.dtype, y.requires_grad, tuple(gx.shape), rm.numel(), rv.numel())
        assert results["normlib"] == results["torch"], f"normlib {results['normlib']}, torch {results['torch']}"
    y = NF.batch_norm(torch.empty(0), None, None, training=training)
    assert y.shape == (0,)
    with pytest.raises(ValueError, match="2 dimensions"):
        NF.batch_norm(torch.randn(3), torch.zeros(3), torch.ones(3), training=training)


def test_running_statistics_get_no_tangent_under_forward_ad():
    """In training mode the running statistics are updated from the batch, but they are not a
    differentiable output: under forward-mode AD they stay plain tensors, as torch's do."""
    import torch.autograd.forward_ad as fwAD
    x = torch.randn(5, 3, 4, dtype=torch.float64)
    for name, call in (("batch_norm", lambda F, d, rm, rv: F.batch_norm(d, rm, rv, training=True)),
                       ("instance_norm", lambda F, d, rm, rv: F.instance_norm(d, rm, rv))):
        for F in (TF, NF):
            rm, rv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
            with fwAD.dual_level():
                y = call(F, fwAD.make_dual(x, torch.randn_like(x)), rm, rv)
                assert fwAD.unpack_dual(y).tangent is not None
                for stat, t in (("running_mean", rm), ("running_var", rv)):
                    assert fwAD.unpack_dual(t).tangent is None, f"{F.__name__}.{name}: {stat} got a tangent"


@pytest.mark.parametrize("fn", ["batch_training", "batch_eval", "group"])
def test_channels_last_input_gets_a_channels_last_gradient(fn):
    """A channels_last input's gradient (and forward-mode tangent) is channels_last, as torch's,
    whatever the memory format of the gradient that arrives from above."""
    import torch.autograd.forward_ad as fwAD
    calls = {
        "batch_training": lambda F, x: F.batch_norm(x, None, None, torch.ones(3), torch.zeros(3), training=True),
        "batch_eval": lambda F, x: F.batch_norm(x, torch.zeros(3), torch.ones(3), torch.ones(3), torch.zeros(3)),
        "group": lambda F, x: F.group_norm(x, 3, torch.ones(3), torch.zeros(3)),
    }
    for shape, fmt in (((2, 3, 4, 5), torch.channels_last), ((2, 3, 2, 4, 5), torch.channels_last_3d)):
        x0 = torch.randn(shape).contiguous(memory_format=fmt)
        for F in (TF, NF):
            x = x0.clone().requires_grad_(True)
            y = calls[fn](F, x)
            (gx,) = torch.autograd.grad(y, x, torch.randn(shape))          # a contiguous upstream gradient
            with fwAD.dual_level():
                dual = fwAD.make_dual(x0, torch.randn(shape))
                if fn == "group" and F is TF:
                    # A deliberate difference: torch 2.13's group_norm forward-mode AD fails on a
                    # channels_last input (it views the strided tangent). If torch changes, this tells us.
                    with pytest.raises(RuntimeError, match="view size is not compatible"):
                        calls[fn](F, dual)
                    tangent = None
                else:
                    tangent = fwAD.unpack_dual(calls[fn](F, dual)).tangent
            for what, t in (("output", y), ("input gradient", gx), ("tangent", tangent)):
                assert t is None or t.is_contiguous(memory_format=fmt), (
                    f"{F.__name__}.{fn} {what} for a {fmt} input of shape {shape}: strides {t.stride()}")


# ------------------------------------------------------------------ deliberate differences from torch 2.13
# Each is a row of normlib/README.md's table. Each test pins both sides: if torch changes, it says so.

def test_instance_norm_on_an_empty_batch_with_affine():
    """torch raises an internal IndexError for instance_norm with γ/β on an empty batch; normlib
    returns the empty output, with zero gradients for γ and β."""
    x = torch.randn(0, 3, 4, requires_grad=True)
    w, b = torch.rand(3, requires_grad=True), torch.randn(3, requires_grad=True)
    with pytest.raises(IndexError):
        TF.instance_norm(x, weight=w, bias=b)
    y = NF.instance_norm(x, weight=w, bias=b)
    assert y.shape == (0, 3, 4)
    gx, gw, gb = torch.autograd.grad(y.sum(), (x, w, b), allow_unused=True, materialize_grads=True)
    assert gx.shape == x.shape and not gw.any() and not gb.any()


def test_group_norm_backward_with_bias_and_no_weight():
    """torch's group_norm backward fails when bias is given without weight ("tensor does not have a
    device"); normlib's gives the gradients of γ = 1, which is the same function."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 4, 3, generator=g, dtype=torch.float64, requires_grad=True)
    b = torch.randn(4, generator=g, dtype=torch.float64, requires_grad=True)
    up = torch.randn(2, 4, 3, generator=g, dtype=torch.float64)
    with pytest.raises(RuntimeError, match="does not have a device"):
        torch.autograd.grad((TF.group_norm(x, 2, None, b) * up).sum(), (x, b))
    ours = torch.autograd.grad((NF.group_norm(x, 2, None, b) * up).sum(), (x, b))
    ones = torch.ones(4, dtype=torch.float64)
    theirs = torch.autograd.grad((TF.group_norm(x, 2, ones, b) * up).sum(), (x, b))
    for o, t in zip(ours, theirs):
        torch.testing.assert_close(o, t, rtol=1e-10, atol=1e-10)


def test_batch_norm_checks_an_empty_input():
    """torch's batch_norm skips its checks when the input has no elements: an integer input, and
    running statistics of the wrong size, pass (and a 1-D empty input with a weight of size 0
    fails inside with an IndexError). normlib checks an empty input as any other: an error found
    on the first, empty, batch rather than on the next one. (The 1-D empty input itself has no
    channel axis, so any weight passes there.)"""
    ints = torch.zeros(0, 3, dtype=torch.long)
    assert TF.batch_norm(ints, torch.zeros(3), torch.ones(3), training=True).dtype == torch.long
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        NF.batch_norm(ints, torch.zeros(3), torch.ones(3), training=True)
    x = torch.randn(0, 3)
    assert TF.batch_norm(x, torch.zeros(2), torch.ones(2), training=True).shape == (0, 3)
    with pytest.raises(RuntimeError, match="^running_mean should contain 3 elements not 2"):
        NF.batch_norm(x, torch.zeros(2), torch.ones(2), training=True)
    with pytest.raises(IndexError):
        TF.batch_norm(torch.randn(0), torch.zeros(0), torch.ones(0), torch.ones(0), training=True)
    assert NF.batch_norm(torch.randn(0), torch.zeros(0), torch.ones(0), torch.ones(0), training=True).shape == (0,)
