"""LayerNorm, RMSNorm and BatchNorm with backward passes derived by hand (chapter 7).

:mod:`normlib.functional` lets autograd record every elementwise step of the forward pass,
and autograd keeps, for its backward, whatever each step needs: the centered input, its
square, x̂, … each as large as the input. The ``torch.autograd.Function``\\ s here compute
the same forward and save only what the derivation of chapter 7 needs:

* the **input** ``x`` (in its own dtype),
* the **mean** μ (one per group of shared elements; RMSNorm has none),
* the **reciprocal standard deviation** ``r = 1/sqrt(σ² + ε)`` (one per group),
* the weight γ, if there is one (β is not needed: ``∂y/∂β = 1``).

From these, with ``x̂ = (x − μ)·r`` and ``g = γ · ∂L/∂y``, the backward pass is

.. math::
    \\frac{\\partial L}{\\partial x} = r \\cdot \\bigl(g - \\mathrm{mean}(g) - \\hat{x}\\,\\mathrm{mean}(g\\,\\hat{x})\\bigr)

with both means over the elements that share a statistic (RMSNorm: no ``mean(g)`` term, and
``x̂ = x·r``); ``∂L/∂γ = Σ ∂L/∂y · x̂`` and ``∂L/∂β = Σ ∂L/∂y`` over the other axes.

Forward mode (``jvp``, for ``torch.autograd.forward_ad`` and ``gradcheck(check_forward_ad=True)``)
pushes tangents ẋ, γ̇, β̇ through the same derivation. Differentiating ``x̂ = (x − μ)·r`` with
``μ̇ = mean(ẋ)`` and ``ṙ = −r³·mean((x − μ)·ẋ) = −r²·mean(x̂·ẋ)`` gives

.. math::
    \\dot{\\hat{x}} = r \\cdot \\bigl(\\dot{x} - \\mathrm{mean}(\\dot{x}) - \\hat{x}\\,\\mathrm{mean}(\\hat{x}\\,\\dot{x})\\bigr),
    \\qquad \\dot{y} = \\gamma\\,\\dot{\\hat{x}} + \\dot{\\gamma}\\,\\hat{x} + \\dot{\\beta}

— the backward's formula applied to ẋ instead of g: the Jacobian of x ↦ x̂ is symmetric, so the
same projection serves both directions (RMSNorm: ``ṙ = −r²·mean(x̂·ẋ)`` with ``x̂ = x·r``, and
no ``mean(ẋ)`` term).

The functions have the signatures of :mod:`normlib.functional` (and run the same input
checks); the modules ``LayerNorm``, ``RMSNorm``, ``BatchNorm1d/2d/3d`` here are the
:mod:`normlib.modules` layers calling them. BatchNorm in evaluation mode has no batch
statistics to differentiate through, so it is :func:`normlib.functional.batch_norm`.

Second derivatives (``create_graph=True``, ``gradgradcheck``) work: when the backward pass
itself is recorded, it recomputes μ and r from ``x`` so that they depend on ``x`` again.
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch
from torch import Tensor

from . import checks, modules
from . import functional as F
from .axes import ShapeLike, channel_view
from .functional import _affine, _memory_format, _opmath, _rms_eps, _unbiased, _update_running
from .stats import moments

__all__ = [
    "layer_norm", "rms_norm", "batch_norm",
    "LayerNormFunction", "RMSNormFunction", "BatchNormFunction",
    "LayerNorm", "RMSNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
]

Dims = Tuple[int, ...]


# --------------------------------------------------------------------------- the shared algebra

def _statistics(x: Tensor, dims: Dims, eps: float, center: bool) -> Tuple[Optional[Tensor], Tensor, Tensor]:
    """μ, σ² and r = 1/√(σ² + ε) over ``dims`` (keepdim). RMSNorm (``center=False``): no μ, and
    mean(x²) in place of σ²."""
    if center:
        mean, var = moments(x, dims)                          # μ = E[x],  σ² = E[(x − μ)²]
    else:
        mean, var = None, (x * x).mean(dim=dims, keepdim=True)   # mean(x²)
    return mean, var, torch.rsqrt(var + eps)                  # r = 1 / √(σ² + ε)


def _normalized(x: Tensor, mean: Optional[Tensor], rstd: Tensor) -> Tensor:
    """x̂ = (x − μ)·r, or x·r without a mean (RMSNorm)."""
    return (x if mean is None else x - mean) * rstd


def _input_grad(g: Tensor, x_hat: Tensor, rstd: Tensor, dims: Dims, center: bool) -> Tensor:
    """∂L/∂x = r·(g − mean(g) − x̂·mean(g·x̂)), where g = γ·∂L/∂y: chapter 7 derives it.

    ``g`` alone is the gradient if μ and σ were constants. Moving every x of a group by the same
    amount moves μ by that amount and changes no x̂: the part of g along "all ones", mean(g), is
    taken out. Scaling the group's deviations changes σ by the same factor and again no x̂: the
    part of g along x̂, mean(g·x̂)·x̂, is taken out too (x̂ has mean 0 and mean square ≈ 1, so
    these two directions are orthogonal). RMSNorm has no μ, so only the x̂ part goes.
    """
    dx = g - x_hat * (g * x_hat).mean(dim=dims, keepdim=True)
    if center:
        dx = dx - g.mean(dim=dims, keepdim=True)
    return rstd * dx


def _param(ctx, t: Optional[Tensor], dtype: torch.dtype) -> Optional[Tensor]:
    """γ, β (or their tangents) shaped to broadcast against the input: per channel for BatchNorm
    (:func:`normlib.axes.channel_view`), as they are for LayerNorm and RMSNorm (the trailing dims)."""
    if t is None:
        return None
    return channel_view(t, ctx.ndim).to(dtype) if ctx.per_channel else t.to(dtype)


def _backward(ctx, grad_output: Tensor):
    """(∂L/∂x, ∂L/∂γ, ∂L/∂β) from what the forward saved: x, γ, μ, r."""
    input, weight, mean, rstd = ctx.saved_tensors
    dims, center = ctx.dims, ctx.center
    x = input.to(_opmath(input.dtype))
    if torch.is_grad_enabled():
        # This backward is being recorded (create_graph=True): μ and r must depend on x again,
        # so recompute them with tracked operations instead of using the saved constants.
        mean, _, rstd = _statistics(x, dims, ctx.eps, center)
    dy = grad_output.to(x.dtype)
    x_hat = _normalized(x, mean, rstd)
    grad_input = grad_weight = grad_bias = None
    if ctx.needs_input_grad[0]:
        g = dy if weight is None else dy * _param(ctx, weight, x.dtype)
        grad_input = _input_grad(g, x_hat, rstd, dims, center).to(input.dtype)
    # γ and β are shared over the axes a statistic pools for BatchNorm (one per channel), over the
    # leading axes for LayerNorm and RMSNorm (one per element of normalized_shape)
    other = dims if ctx.per_channel else tuple(d for d in range(x.dim()) if d not in dims)
    total = lambda t: t.sum(dim=other) if other else t     # (sum over no dims: nothing to add up)
    if weight is not None and ctx.needs_input_grad[1]:
        grad_weight = total(dy * x_hat).reshape(weight.shape).to(weight.dtype)
    if ctx.has_bias and ctx.needs_input_grad[2]:
        grad_bias = total(dy).reshape(ctx.bias_shape).to(ctx.bias_dtype)
    return _in_layout_of(ctx, input, grad_input), grad_weight, grad_bias


def _in_layout_of(ctx, input: Tensor, t: Optional[Tensor]) -> Optional[Tensor]:
    """For BatchNorm, ``t`` in ``input``'s memory format: a channels_last input gets a channels_last
    gradient and tangent, as from torch's BatchNorm, whatever the layout of the gradient or tangent
    given. (torch's LayerNorm and RMSNorm make no such promise; their gradients follow autograd's.)"""
    fmt = _memory_format(input) if ctx.per_channel else None
    return t if t is None or fmt is None else t.contiguous(memory_format=fmt)


def _tangent(ctx, input_t: Optional[Tensor], weight_t: Optional[Tensor], bias_t: Optional[Tensor]) -> Tensor:
    """ẏ = γ·r·(ẋ − mean(ẋ) − x̂·mean(x̂·ẋ)) + γ̇·x̂ + β̇, from what the forward saved (x, γ, μ, r).

    A tangent that is ``None`` is zero (that input has no forward-mode derivative)."""
    input, weight, mean, rstd = ctx.saved_tensors
    x_hat = _normalized(input.to(_opmath(input.dtype)), mean, rstd)
    out = torch.zeros_like(x_hat)
    if input_t is not None:
        out = _input_grad(input_t.to(x_hat.dtype), x_hat, rstd, ctx.dims, ctx.center)
        if weight is not None:
            out = out * _param(ctx, weight, x_hat.dtype)
    if weight_t is not None:
        out = out + x_hat * _param(ctx, weight_t, x_hat.dtype)
    if bias_t is not None:
        out = out + _param(ctx, bias_t, x_hat.dtype)
    return _in_layout_of(ctx, input, out.to(input.dtype))


def _remember(ctx, input: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], mean: Optional[Tensor],
              rstd: Tensor, dims: Dims, eps: float, center: bool, per_channel: bool = False) -> None:
    """Save x, γ, μ, r (tensors) and the few numbers the backward needs — nothing else.

    ``per_channel``: γ and β have one value per channel, viewed with ``channel_view`` (BatchNorm;
    the input gradient and tangent then keep the input's memory format, as torch's)."""
    ctx.save_for_backward(input, weight, mean, rstd)
    ctx.save_for_forward(input, weight, mean, rstd)      # the same four serve the jvp
    ctx.dims, ctx.eps, ctx.center, ctx.per_channel, ctx.ndim = dims, eps, center, per_channel, input.dim()
    ctx.has_bias = bias is not None
    if bias is not None:
        ctx.bias_shape, ctx.bias_dtype = bias.shape, bias.dtype


# --------------------------------------------------------------------------- the Functions

class LayerNormFunction(torch.autograd.Function):
    """LayerNorm over the last ``k`` dims with the backward chapter 7 derives (see the module docstring).

    ``LayerNormFunction.apply(input, weight, bias, k, eps)``; weight and bias have the shape of
    the last ``k`` dims, or are ``None``. Use :func:`layer_norm`, which checks the arguments.
    """

    @staticmethod
    def forward(ctx, input, weight, bias, k, eps):
        dims = tuple(range(input.dim() - k, input.dim()))
        x = input.to(_opmath(input.dtype))
        mean, _, rstd = _statistics(x, dims, eps, center=True)   # μ, r = 1/√(σ² + ε)
        y = _affine(_normalized(x, mean, rstd), weight, bias)      # y = γ · (x − μ)·r + β
        _remember(ctx, input, weight, bias, mean, rstd, dims, eps, center=True)
        return y.to(input.dtype)

    @staticmethod
    def backward(ctx, grad_output):
        return (*_backward(ctx, grad_output), None, None)

    @staticmethod
    def jvp(ctx, input_t, weight_t, bias_t, _k_t, _eps_t):
        return _tangent(ctx, input_t, weight_t, bias_t)


class RMSNormFunction(torch.autograd.Function):
    """RMSNorm over the last ``k`` dims with the hand-derived backward: x̂ = x·r, no mean.

    ``RMSNormFunction.apply(input, weight, k, eps)``. Use :func:`rms_norm`.
    """

    @staticmethod
    def forward(ctx, input, weight, k, eps):
        dims = tuple(range(input.dim() - k, input.dim()))
        x = input.to(_opmath(input.dtype))
        _, _, rstd = _statistics(x, dims, eps, center=False)       # r = 1/√(mean(x²) + ε)
        y = _affine(_normalized(x, None, rstd), weight, None)      # y = γ · x·r
        _remember(ctx, input, weight, None, None, rstd, dims, eps, center=False)
        return y.to(input.dtype)

    @staticmethod
    def backward(ctx, grad_output):
        grad_input, grad_weight, _ = _backward(ctx, grad_output)
        return grad_input, grad_weight, None, None

    @staticmethod
    def jvp(ctx, input_t, weight_t, _k_t, _eps_t):
        return _tangent(ctx, input_t, weight_t, None)


class BatchNormFunction(torch.autograd.Function):
    """BatchNorm in training mode with the hand-derived backward: statistics per channel (dim 1).

    ``BatchNormFunction.apply(input, weight, bias, eps)`` returns ``(y, mean, var)``; the batch
    mean and (population) variance, shape ``(C,)``, are for the running statistics and carry no
    gradient. Use :func:`batch_norm`, which also updates the running statistics.
    """

    @staticmethod
    def forward(ctx, input, weight, bias, eps):
        dims = tuple(d for d in range(input.dim()) if d != 1)
        x = input.to(_opmath(input.dtype))
        mean, var, rstd = _statistics(x, dims, eps, center=True)   # per channel: μ_c, σ²_c, r_c
        y = _affine(_normalized(x, mean, rstd), channel_view(weight, x.dim()), channel_view(bias, x.dim()))
        _remember(ctx, input, weight, bias, mean, rstd, dims, eps, center=True, per_channel=True)
        mean, var = mean.reshape(-1), var.reshape(-1)
        ctx.mark_non_differentiable(mean, var)
        return y.to(input.dtype), mean, var

    @staticmethod
    def backward(ctx, grad_output, _grad_mean, _grad_var):
        return (*_backward(ctx, grad_output), None)

    @staticmethod
    def jvp(ctx, input_t, weight_t, bias_t, _eps_t):
        # the batch mean and variance are marked non-differentiable: no tangent
        return _tangent(ctx, input_t, weight_t, bias_t), None, None


# --------------------------------------------------------------------------- functional interface

def layer_norm(input: Tensor, normalized_shape: ShapeLike, weight: Optional[Tensor] = None,
               bias: Optional[Tensor] = None, eps: float = 1e-5) -> Tensor:
    """:func:`normlib.functional.layer_norm` with the backward chapter 7 derives.

    >>> x = torch.tensor([[2.0, 3.0, 4.0]], requires_grad=True)
    >>> y = layer_norm(x, 3)
    >>> y.grad_fn.name()
    'LayerNormFunctionBackward'
    """
    dims = checks.layer_norm(input, normalized_shape, weight, bias)
    return LayerNormFunction.apply(input, weight, bias, len(dims), eps)


def rms_norm(input: Tensor, normalized_shape: ShapeLike, weight: Optional[Tensor] = None,
             eps: Optional[float] = None) -> Tensor:
    """:func:`normlib.functional.rms_norm` with the backward chapter 7 derives (``eps=None`` as there).

    >>> rms_norm(torch.tensor([[3.0, 4.0]]), 2)
    tensor([[0.8485, 1.1314]])
    """
    dims = checks.rms_norm(input, normalized_shape, weight)
    return RMSNormFunction.apply(input, weight, len(dims), _rms_eps(eps, _opmath(input.dtype)))


def batch_norm(input: Tensor, running_mean: Optional[Tensor], running_var: Optional[Tensor],
               weight: Optional[Tensor] = None, bias: Optional[Tensor] = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """:func:`normlib.functional.batch_norm` with the backward chapter 7 derives, in training mode.

    The running statistics are updated exactly as there (unbiased variance, PyTorch's momentum).
    With ``training=False`` this *is* :func:`normlib.functional.batch_norm`: the running
    statistics are constants, and the layer is an elementwise affine map.

    >>> x = torch.tensor([[2.0], [4.0], [6.0], [8.0]])
    >>> rm, rv = torch.zeros(1), torch.ones(1)
    >>> batch_norm(x, rm, rv, training=True).flatten(), rm, rv
    (tensor([-1.3416, -0.4472,  0.4472,  1.3416]), tensor([0.5000]), tensor([1.5667]))
    """
    if not training:
        return F.batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    s, momentum = checks.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    if s is None:   # the 1-D empty input torch accepts: nothing to normalize
        return input.clone()
    y, mean, var = BatchNormFunction.apply(input, weight, bias, eps)
    if s.count > 0:
        _update_running(running_mean, mean, momentum)
        _update_running(running_var, _unbiased(var, s.count), momentum)
    return y


# --------------------------------------------------------------------------- modules

class LayerNorm(modules.LayerNorm):
    """:class:`normlib.LayerNorm` (same arguments, parameters and state_dict) with the hand-derived backward.

    >>> LayerNorm(3)(torch.tensor([[2.0, 3.0, 4.0]])).grad_fn.name()
    'LayerNormFunctionBackward'
    """

    def forward(self, input: Tensor) -> Tensor:
        return layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)


class RMSNorm(modules.RMSNorm):
    """:class:`normlib.RMSNorm` with the hand-derived backward."""

    def forward(self, input: Tensor) -> Tensor:
        return rms_norm(input, self.normalized_shape, self.weight, self.eps)


class _BatchNorm(modules._BatchNorm):
    """:class:`normlib.BatchNorm1d/2d/3d` with the hand-derived backward in training mode."""

    def forward(self, input: Tensor) -> Tensor:
        return batch_norm(*self._count_batch_and_arguments(input))


class BatchNorm1d(_BatchNorm, modules.BatchNorm1d):
    """:class:`normlib.BatchNorm1d` with the hand-derived backward in training mode."""


class BatchNorm2d(_BatchNorm, modules.BatchNorm2d):
    """:class:`normlib.BatchNorm2d` with the hand-derived backward in training mode."""


class BatchNorm3d(_BatchNorm, modules.BatchNorm3d):
    """:class:`normlib.BatchNorm3d` with the hand-derived backward in training mode."""
