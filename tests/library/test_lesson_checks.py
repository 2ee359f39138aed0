"""The checks the source lessons made (../shared/seeds/README.md), as properties of normlib.LayerNorm."""

from __future__ import annotations

import pytest
import torch
import torch.nn as tnn

import normlib


def test_normalized_rows_have_mean_zero_and_variance_one():
    torch.manual_seed(0)
    x = torch.randn(4, 10, 512) * 3 + 2
    y = normlib.LayerNorm(512, elementwise_affine=False)(x)
    assert y.shape == x.shape
    mean, var = y.mean(dim=-1), y.var(dim=-1, correction=0)
    assert torch.allclose(mean, torch.zeros_like(mean), atol=1e-4, rtol=0)
    assert torch.allclose(var, torch.ones_like(var), atol=1e-3, rtol=0)


def test_equals_nn_layernorm_within_1e_6():
    torch.manual_seed(1)
    x = torch.randn(4, 10, 512)
    # as the lesson checked it: fresh layers (γ = 1, β = 0), absolute 1e-6
    assert torch.allclose(normlib.LayerNorm(512)(x), tnn.LayerNorm(512)(x), atol=1e-6, rtol=0)
    # with random γ and β the outputs reach |y| ≈ 7, where one float32 step is 4.8e-7: 1e-6 relative
    ours, theirs = normlib.LayerNorm(512), tnn.LayerNorm(512)
    with torch.no_grad():
        theirs.weight.copy_(torch.randn(512))
        theirs.bias.copy_(torch.randn(512))
    ours.load_state_dict(theirs.state_dict())
    assert torch.allclose(ours(x), theirs(x), atol=1e-6, rtol=1e-6)


def test_gamma_and_beta_receive_finite_gradients():
    torch.manual_seed(0)
    ln = normlib.LayerNorm(16)
    x = torch.randn(4, 5, 16, requires_grad=True)
    (ln(x) ** 2).mean().backward()
    for p in (ln.weight, ln.bias, x):
        assert p.grad is not None and torch.isfinite(p.grad).all()
    assert ln.weight.grad.abs().sum() > 0          # not finite by accident of being absent or zero


@pytest.mark.parametrize("normalized_shape", [4, [3, 4], (3, 4), torch.Size([2, 3, 4])])
def test_normalized_shape_forms(normalized_shape):
    torch.manual_seed(0)
    x = torch.randn(2, 2, 3, 4)
    ours, theirs = normlib.LayerNorm(normalized_shape), tnn.LayerNorm(normalized_shape)
    with torch.no_grad():
        theirs.weight.normal_()
        theirs.bias.normal_()
    ours.load_state_dict(theirs.state_dict(), strict=True)
    assert torch.allclose(ours(x), theirs(x), atol=1e-6, rtol=0)


def test_one_ten_hundred():
    """[1, 10, 100] with eps 1e-6 → [-0.8054, -0.6040, 1.4094] (mean 37, population variance 1998)."""
    x = torch.tensor([1.0, 10.0, 100.0])
    y = normlib.functional.layer_norm(x, 3, eps=1e-6)
    by_hand = [(v - 37.0) / (1998.0 + 1e-6) ** 0.5 for v in (1.0, 10.0, 100.0)]
    assert y.tolist() == pytest.approx(by_hand, abs=1e-6)
    assert [round(v, 4) for v in y.tolist()] == [-0.8054, -0.6040, 1.4094]
