"""Dynamic Tanh (Zhu, Chen, He, LeCun & Liu 2025): normlib.functional.dyt and normlib.DyT.

There is no torch.nn counterpart, so the reference is the formula itself, y = γ · tanh(α x) + β,
computed directly in float64 from the same (rounded) inputs; the gradients are checked against the
derivatives written by hand and by gradcheck / gradgradcheck. The layer holds α as a parameter of
shape (1,), as the authors' code does, so its state_dict loads theirs.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch.autograd import gradcheck, gradgradcheck

import normlib
import normlib.functional as NF
from helpers.library_cases import raised_in_english_and_korean
from helpers.text import has_hangul
from helpers.torch_compare import DTYPES, layer_shapes
from normlib import NormInputError

ALPHAS = st.sampled_from([0.5, 0.8, 0.2, 1.0, 2.5, -0.7, 0.0, 1e-3, 10.0])
FORMS = st.sampled_from(["float", "0-dim", "(1,)"])


def _alpha(value: float, form: str, dtype: torch.dtype, requires_grad: bool = False):
    if form == "float":
        return value
    shape = () if form == "0-dim" else (1,)
    return torch.full(shape, value, dtype=dtype, requires_grad=requires_grad)


def _inputs(shape, norm, dtype, seed, with_weight, with_bias):
    g = torch.Generator().manual_seed(seed)
    x = (3.0 * torch.randn(shape, generator=g, dtype=torch.float64)).to(dtype)
    weight = (0.5 + 1.5 * torch.rand(norm, generator=g, dtype=torch.float64)).to(dtype) if with_weight else None
    bias = torch.randn(norm, generator=g, dtype=torch.float64).to(dtype) if with_bias else None
    return x, weight, bias


def _direct(x, alpha, weight, bias):
    """γ · tanh(α x) + β, in float64, from the values the function was given."""
    a = torch.as_tensor(alpha, dtype=torch.float64).reshape(())
    y = torch.tanh(a * x.double())
    if weight is not None:
        y = weight.double() * y
    if bias is not None:
        y = y + bias.double()
    return y


# ------------------------------------------------------------------ the formula

@given(shapes=layer_shapes(), dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**31 - 1), alpha=ALPHAS,
       form=FORMS, with_weight=st.booleans(), with_bias=st.booleans())
def test_dyt_matches_the_direct_formula(shapes, dtype, seed, alpha, form, with_weight, with_bias):
    shape, _, norm = shapes
    x, weight, bias = _inputs(shape, norm, dtype, seed, with_weight, with_bias)
    a = _alpha(alpha, form, dtype)
    y = NF.dyt(x, a, weight, bias)
    assert y.shape == x.shape and y.dtype == x.dtype
    # |y| ≤ |γ| + |β|: one rounding to the output dtype and a few in the computation (float32 for
    # float16/bfloat16), each relative to that bound; float64 within 1e-12 of it.
    bound = (weight.double().abs() if weight is not None else 1.0) + (bias.double().abs() if bias is not None else 0.0)
    tol = 1e-12 if dtype == torch.float64 else 8 * torch.finfo(dtype).eps
    ref = _direct(x, a.detach().to(dtype) if torch.is_tensor(a) else alpha, weight, bias)
    err = (y.double() - ref).abs()
    assert torch.all(err <= tol * bound), f"{dtype} {shape}: max error {err.max() if err.numel() else 0}"


@given(shapes=layer_shapes(), seed=st.integers(0, 2**31 - 1), alpha=ALPHAS, form=st.sampled_from(["0-dim", "(1,)"]))
def test_dyt_gradients_are_the_derivatives_by_hand(shapes, seed, alpha, form):
    """∂y/∂x = γ α (1 − t²), ∂L/∂α = Σ g γ x (1 − t²), ∂L/∂γ = Σ g t, ∂L/∂β = Σ g, with t = tanh(α x)."""
    shape, _, norm = shapes
    x, weight, bias = _inputs(shape, norm, torch.float64, seed, True, True)
    g = torch.randn(shape, generator=torch.Generator().manual_seed(seed + 1), dtype=torch.float64)
    leaves = [x.requires_grad_(), weight.requires_grad_(), bias.requires_grad_(),
              _alpha(alpha, form, torch.float64, requires_grad=True)]
    gx, gw, gb, ga = torch.autograd.grad((NF.dyt(x, leaves[3], weight, bias) * g).sum(), leaves, allow_unused=True)
    x, weight = x.detach(), weight.detach()
    t = torch.tanh(alpha * x)
    lead = tuple(range(x.dim() - len(norm)))             # the axes γ and β are shared over
    shared = lambda v: v.sum(lead) if lead else v        # (sum(dim=()) would sum over every axis)
    zero = lambda v: torch.zeros_like(v) if v is None else v
    torch.testing.assert_close(zero(gx), g * weight * alpha * (1 - t * t), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(zero(gw), shared(g * t), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(zero(gb), shared(g), rtol=1e-12, atol=1e-12)
    expected_ga = (g * weight * x * (1 - t * t)).sum().reshape(() if form == "0-dim" else (1,))
    torch.testing.assert_close(zero(ga), expected_ga, rtol=1e-10, atol=1e-10)


def test_dyt_by_hand_on_the_books_table_row():
    x = torch.tensor([[2.0, 3.0, 4.0]], dtype=torch.float64)
    y = NF.dyt(x, 0.5, torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64), torch.tensor([0.0, 1.0, -1.0],
                                                                                          dtype=torch.float64))
    expected = [1 * math.tanh(1.0), 2 * math.tanh(1.5) + 1, 3 * math.tanh(2.0) - 1]   # α x = 1, 1.5, 2
    torch.testing.assert_close(y, torch.tensor([expected], dtype=torch.float64), rtol=1e-15, atol=1e-15)


def test_a_shape_1_alpha_adds_no_axis_and_half_precision_is_computed_in_float32():
    assert NF.dyt(torch.tensor(2.0), torch.ones(1)).shape == ()
    x = torch.randn(3, 5).half()
    torch.testing.assert_close(NF.dyt(x, 0.5), torch.tanh(0.5 * x.float()).half(), rtol=0, atol=0)


# ------------------------------------------------------------------ gradcheck and gradgradcheck (float64)

def _d(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64, requires_grad=True)


GRAD_CASES = {
    "x-alpha-weight-bias": (lambda x, a, w, b: NF.dyt(x, a, w, b), (_d(2, 3, 4), _d(()), _d(3, 4, seed=1), _d(3, 4, seed=2))),
    "alpha-shape-1": (lambda x, a, w, b: NF.dyt(x, a, w, b), (_d(5, 4), _d(1, seed=3), _d(4, seed=4), _d(4, seed=5))),
    "no-affine": (lambda x, a: NF.dyt(x, a), (_d(2, 3, 2), _d(1, seed=6))),
    "alpha-a-number": (lambda x, w, b: NF.dyt(x, 0.7, w, b), (_d(3, 4), _d(4, seed=7), _d(4, seed=8))),
}


@pytest.mark.parametrize("name", list(GRAD_CASES))
def test_gradcheck_and_gradgradcheck(name):
    fn, inputs = GRAD_CASES[name]
    assert gradcheck(fn, inputs, eps=1e-6, atol=1e-7)
    assert gradgradcheck(fn, inputs, eps=1e-6, atol=1e-7)


def test_gradcheck_through_the_layer_parameters():
    layer = normlib.DyT((3, 4), dtype=torch.float64)
    with torch.no_grad():
        layer.weight.uniform_(0.5, 2.0)
        layer.bias.normal_()
    params = (layer.alpha, layer.weight, layer.bias)
    fn = lambda x, a, w, b: torch.func.functional_call(layer, {"alpha": a, "weight": w, "bias": b}, (x,))
    inputs = (_d(2, 3, 4), *[p.detach().clone().requires_grad_() for p in params])
    assert gradcheck(fn, inputs, eps=1e-6, atol=1e-7)
    assert gradgradcheck(fn, inputs, eps=1e-6, atol=1e-7)


# ------------------------------------------------------------------ the layer

def test_the_layer_starts_at_the_papers_alpha_and_as_layer_norms_affine():
    layer = normlib.DyT(8)
    assert layer.alpha.shape == (1,) and layer.alpha.item() == 0.5 and layer.alpha_init == 0.5
    assert torch.equal(layer.weight, torch.ones(8)) and torch.equal(layer.bias, torch.zeros(8))
    assert all(p.requires_grad for p in layer.parameters())
    x = torch.randn(2, 5, 8)
    torch.testing.assert_close(layer(x), torch.tanh(0.5 * x), rtol=0, atol=0)
    assert normlib.DyT(8, alpha_init=0.8).alpha.item() == pytest.approx(0.8)


def test_reset_parameters_restores_alpha_init_gamma_and_beta():
    layer = normlib.DyT((2, 3), alpha_init=1.5)
    with torch.no_grad():
        for p in layer.parameters():
            p.add_(1.0)
    layer.reset_parameters()
    assert layer.alpha.item() == 1.5 and torch.equal(layer.weight, torch.ones(2, 3)) and torch.equal(layer.bias, torch.zeros(2, 3))


@pytest.mark.parametrize("kwargs,keys", [
    ({}, ["alpha", "bias", "weight"]),
    ({"bias": False}, ["alpha", "weight"]),
    ({"elementwise_affine": False}, ["alpha"]),
])
def test_parameters_and_state_dict_keys(kwargs, keys):
    layer = normlib.DyT([2, 4], **kwargs)
    assert sorted(layer.state_dict()) == keys and sorted(n for n, _ in layer.named_parameters()) == keys
    assert layer.state_dict()["alpha"].shape == (1,)
    for name in ("weight", "bias"):
        t = getattr(layer, name)
        assert (t is None) == (name not in keys) and (t is None or t.shape == (2, 4))
    x = torch.randn(3, 2, 4)
    assert layer(x).shape == x.shape


class _AuthorsLayout(torch.nn.Module):
    """The parameters as the authors' DynamicTanh holds them: alpha of shape (1,), weight, bias."""

    def __init__(self, c):
        super().__init__()
        self.alpha = torch.nn.Parameter(torch.full((1,), 0.5))
        self.weight = torch.nn.Parameter(torch.ones(c))
        self.bias = torch.nn.Parameter(torch.zeros(c))

    def forward(self, x):
        return torch.tanh(self.alpha * x) * self.weight + self.bias


def test_state_dict_loads_the_authors_layout_both_ways():
    theirs = _AuthorsLayout(6)
    with torch.no_grad():
        for p in theirs.parameters():
            p.uniform_(0.2, 1.5)
    ours = normlib.DyT(6)
    ours.load_state_dict(theirs.state_dict(), strict=True)
    x = torch.randn(4, 3, 6)
    torch.testing.assert_close(ours(x), theirs(x))
    back = _AuthorsLayout(6)
    back.load_state_dict(ours.state_dict(), strict=True)
    torch.testing.assert_close(back(x), ours(x))


def test_every_parameter_gets_a_gradient_of_its_own_shape():
    layer = normlib.DyT(4)
    layer(torch.randn(3, 4)).pow(2).sum().backward()
    for name, p in layer.named_parameters():
        assert p.grad is not None and p.grad.shape == p.shape, name


def test_factory_kwargs_and_repr():
    layer = normlib.DyT(4, alpha_init=0.25, dtype=torch.float64, device="cpu")
    assert {p.dtype for p in layer.parameters()} == {torch.float64}
    assert repr(layer) == "DyT((4,), alpha_init=0.25, elementwise_affine=True, bias=True)"
    assert "bias=False" in repr(normlib.DyT(4, bias=False))
    assert "elementwise_affine=False" in repr(normlib.DyT(4, elementwise_affine=False))


def test_the_layer_is_exported():
    # its forward's one jump to functional.dyt is checked with the other layers in test_architecture.py
    assert normlib.DyT is normlib.dyt.DyT and "DyT" in normlib.__all__ and "dyt" in NF.__all__


# ------------------------------------------------------------------ errors, in both languages

x24 = torch.randn(2, 4)
ERRORS = [
    ("int-input", lambda: NF.dyt(torch.arange(4), 0.5), TypeError, ["torch.int64"]),
    ("alpha-vector", lambda: NF.dyt(x24, torch.ones(3)), NormInputError, ["alpha", "(3,)", "(1,)"]),
    ("alpha-matrix", lambda: NF.dyt(x24, torch.ones(1, 1)), NormInputError, ["alpha", "(1, 1)"]),
    ("alpha-int-tensor", lambda: NF.dyt(x24, torch.tensor(1)), TypeError, ["alpha", "torch.int64"]),
    ("alpha-string", lambda: NF.dyt(x24, "0.5"), TypeError, ["alpha", "str", "'0.5'"]),
    ("alpha-none", lambda: NF.dyt(x24, None), TypeError, ["alpha", "NoneType"]),
    ("weight-shape", lambda: NF.dyt(x24, 0.5, torch.ones(3)), NormInputError, ["weight", "(3,)", "(4,)", "(2, 4)"]),
    ("bias-shape", lambda: NF.dyt(x24, 0.5, None, torch.ones(2)), NormInputError, ["bias", "(2,)", "(4,)"]),
    ("weight-too-many-dims", lambda: NF.dyt(x24, 0.5, torch.ones(1, 2, 4)), NormInputError, ["(1, 2, 4)", "(2, 4)"]),
    ("weight-0-dim", lambda: NF.dyt(x24, 0.5, torch.tensor(2.0)), NormInputError, ["weight", "()"]),
    ("weight-on-0-dim-input", lambda: NF.dyt(torch.tensor(1.0), 0.5, torch.ones(1)), NormInputError, ["weight", "(1,)"]),
    ("weight-not-a-tensor", lambda: NF.dyt(x24, 0.5, [1.0] * 4), TypeError, ["weight", "list"]),
    ("weight-bias-differ", lambda: NF.dyt(torch.randn(2, 3, 4), 0.5, torch.ones(4), torch.ones(3, 4)), NormInputError,
     ["weight", "bias", "(4,)", "(3, 4)"]),
    ("layer-input", lambda: normlib.DyT(3)(x24), NormInputError, ["(3,)", "(2, 4)"]),
    ("layer-alpha-init", lambda: normlib.DyT(3, alpha_init="0.5"), TypeError, ["alpha_init", "'0.5'"]),
    ("layer-empty-shape", lambda: normlib.DyT(()), NormInputError, ["normalized_shape"]),
]


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors_name_what_was_expected_and_received_in_english_and_korean(case):
    _, call, kind, must_contain = case
    english, korean = raised_in_english_and_korean(call)
    for err in (english, korean):
        assert isinstance(err, kind), f"{type(err).__name__}: {err}"
        for needle in must_contain:
            assert needle in str(err), f"the message lacks {needle!r}: {err}"
    assert not has_hangul(str(english)) and has_hangul(str(korean)), f"{english} / {korean}"
    if ": " in str(english):   # words in English first, the same in both languages
        assert str(korean).split(": ")[0] == str(english).split(": ")[0]
