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

from types import SimpleNamespace
from typing import Optional, Sequence, Tuple

import torch
from torch import Tensor

from . import modules
from .functional import (
    ShapeLike,
    _bessel,
    _checked_batch_axes,
    _checked_layer_axes,
    _compute_dtype,
    _memory_format,
    _rms_eps,
    _update_running,
)
from .functional import batch_norm as _batch_norm_eval

__all__ = [
    "layer_norm", "rms_norm", "batch_norm",
    "LayerNormFunction", "RMSNormFunction", "BatchNormFunction",
    "LayerNorm", "RMSNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
    "saved_for_backward", "SavedForBackward",
]

Dims = Tuple[int, ...]


# --------------------------------------------------------------------------- the shared algebra

def _statistics(x: Tensor, dims: Dims, eps: float, center: bool) -> Tuple[Optional[Tensor], Tensor, Tensor]:
    """μ (``None`` without centering), σ² (population) and r = 1/sqrt(σ² + ε) over ``dims``, keepdim."""
    mean = x.mean(dim=dims, keepdim=True) if center else None
    centered = x - mean if center else x
    var = (centered * centered).mean(dim=dims, keepdim=True)
    return mean, var, torch.rsqrt(var + eps)


def _normalized(x: Tensor, mean: Optional[Tensor], rstd: Tensor) -> Tensor:
    """x̂ = (x − μ)·r, or x·r without a mean (RMSNorm)."""
    return (x if mean is None else x - mean) * rstd


def _input_grad(g: Tensor, x_hat: Tensor, rstd: Tensor, dims: Dims, center: bool) -> Tensor:
    """∂L/∂x = r·(g − mean(g) − x̂·mean(g·x̂)), where g = γ·∂L/∂y.

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


def _backward(ctx, grad_output: Tensor):
    """(∂L/∂x, ∂L/∂γ, ∂L/∂β) from what the forward saved: x, γ, μ, r."""
    input, weight, mean, rstd = ctx.saved_tensors
    dims, center = ctx.dims, ctx.center
    dtype = _compute_dtype(input.dtype)
    x = input.to(dtype)
    if torch.is_grad_enabled():
        # This backward is being recorded (create_graph=True): μ and r must depend on x again,
        # so recompute them with tracked operations instead of using the saved constants.
        mean, _, rstd = _statistics(x, dims, ctx.eps, center)
    dy = grad_output.to(dtype)
    x_hat = _normalized(x, mean, rstd)
    grad_input = grad_weight = grad_bias = None
    if ctx.needs_input_grad[0]:
        g = dy if weight is None else dy * weight.to(dtype).reshape(ctx.param_view)
        grad_input = _input_grad(g, x_hat, rstd, dims, center).to(input.dtype)
    other = tuple(d for d in range(x.dim()) if d not in ctx.param_dims)   # the axes γ and β are shared over
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
    fmt = _memory_format(input) if ctx.keep_layout else None
    return t if t is None or fmt is None else t.contiguous(memory_format=fmt)


def _tangent(ctx, input_t: Optional[Tensor], weight_t: Optional[Tensor], bias_t: Optional[Tensor]) -> Tensor:
    """ẏ = γ·r·(ẋ − mean(ẋ) − x̂·mean(x̂·ẋ)) + γ̇·x̂ + β̇, from what the forward saved (x, γ, μ, r).

    A tangent that is ``None`` is zero (that input has no forward-mode derivative)."""
    input, weight, mean, rstd = ctx.saved_tensors
    dtype = _compute_dtype(input.dtype)
    x_hat = _normalized(input.to(dtype), mean, rstd)
    view = lambda t: t.to(dtype).reshape(ctx.param_view)
    out = torch.zeros_like(x_hat)
    if input_t is not None:
        out = _input_grad(input_t.to(dtype), x_hat, rstd, ctx.dims, ctx.center)
        if weight is not None:
            out = out * view(weight)
    if weight_t is not None:
        out = out + x_hat * view(weight_t)
    if bias_t is not None:
        out = out + view(bias_t)
    return _in_layout_of(ctx, input, out.to(input.dtype))


def _remember(ctx, input: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], mean: Optional[Tensor],
              rstd: Tensor, dims: Dims, param_dims: Dims, param_view: Sequence[int], eps: float,
              center: bool, keep_layout: bool = False) -> None:
    """Save x, γ, μ, r (tensors) and the few numbers the backward needs — nothing else.

    ``param_dims`` are the input axes γ and β run along; ``param_view`` is how γ is viewed to
    broadcast against the input (the forward used the same view); ``keep_layout`` gives the input
    gradient and tangent the input's memory format (BatchNorm, as torch's)."""
    ctx.save_for_backward(input, weight, mean, rstd)
    ctx.save_for_forward(input, weight, mean, rstd)      # the same four serve the jvp
    ctx.dims, ctx.param_dims, ctx.param_view, ctx.eps, ctx.center = dims, param_dims, param_view, eps, center
    ctx.has_bias, ctx.keep_layout = bias is not None, keep_layout
    if bias is not None:
        ctx.bias_shape, ctx.bias_dtype = bias.shape, bias.dtype


def _affine(x_hat: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], view: Sequence[int]) -> Tensor:
    y = x_hat
    if weight is not None:
        y = y * weight.to(x_hat.dtype).reshape(view)
    if bias is not None:
        y = y + bias.to(x_hat.dtype).reshape(view)
    return y


# --------------------------------------------------------------------------- the Functions

class LayerNormFunction(torch.autograd.Function):
    """LayerNorm over the last ``k`` dims with the hand-derived backward (see the module docstring).

    ``LayerNormFunction.apply(input, weight, bias, k, eps)``; weight and bias have the shape of
    the last ``k`` dims, or are ``None``. Use :func:`layer_norm`, which checks the arguments.
    """

    @staticmethod
    def forward(ctx, input, weight, bias, k, eps):
        dims = tuple(range(input.dim() - k, input.dim()))
        x = input.to(_compute_dtype(input.dtype))
        mean, _, rstd = _statistics(x, dims, eps, center=True)
        view = input.shape[input.dim() - k:]
        y = _affine(_normalized(x, mean, rstd), weight, bias, view)
        _remember(ctx, input, weight, bias, mean, rstd, dims, dims, view, eps, center=True)
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
        x = input.to(_compute_dtype(input.dtype))
        _, _, rstd = _statistics(x, dims, eps, center=False)
        view = input.shape[input.dim() - k:]
        y = _affine(_normalized(x, None, rstd), weight, None, view)
        _remember(ctx, input, weight, None, None, rstd, dims, dims, view, eps, center=False)
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
        view = (1, -1) + (1,) * (input.dim() - 2)
        x = input.to(_compute_dtype(input.dtype))
        mean, var, rstd = _statistics(x, dims, eps, center=True)
        y = _affine(_normalized(x, mean, rstd), weight, bias, view)
        _remember(ctx, input, weight, bias, mean, rstd, dims, (1,), view, eps, center=True, keep_layout=True)
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
    """:func:`normlib.functional.layer_norm` with the hand-derived backward.

    >>> x = torch.tensor([[2.0, 3.0, 4.0]], requires_grad=True)
    >>> y = layer_norm(x, 3)
    >>> y.grad_fn.name()
    'LayerNormFunctionBackward'
    """
    s = _checked_layer_axes("layer_norm", input, normalized_shape, weight=weight, bias=bias)
    return LayerNormFunction.apply(input, weight, bias, len(s.axes), eps)


def rms_norm(input: Tensor, normalized_shape: ShapeLike, weight: Optional[Tensor] = None,
             eps: Optional[float] = None) -> Tensor:
    """:func:`normlib.functional.rms_norm` with the hand-derived backward (``eps=None`` as there).

    >>> rms_norm(torch.tensor([[3.0, 4.0]]), 2)
    tensor([[0.8485, 1.1314]])
    """
    s = _checked_layer_axes("rms_norm", input, normalized_shape, weight=weight)
    return RMSNormFunction.apply(input, weight, len(s.axes), _rms_eps(eps, _compute_dtype(input.dtype)))


def batch_norm(input: Tensor, running_mean: Optional[Tensor], running_var: Optional[Tensor],
               weight: Optional[Tensor] = None, bias: Optional[Tensor] = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """:func:`normlib.functional.batch_norm` with the hand-derived backward in training mode.

    The running statistics are updated exactly as there (unbiased variance, PyTorch's momentum).
    With ``training=False`` this *is* :func:`normlib.functional.batch_norm`: the running
    statistics are constants, and the layer is an elementwise affine map.

    >>> x = torch.tensor([[2.0], [4.0], [6.0], [8.0]])
    >>> rm, rv = torch.zeros(1), torch.ones(1)
    >>> batch_norm(x, rm, rv, training=True).flatten(), rm, rv
    (tensor([-1.3416, -0.4472,  0.4472,  1.3416]), tensor([0.5000]), tensor([1.5667]))
    """
    if not training:
        return _batch_norm_eval(input, running_mean, running_var, weight, bias, False, momentum, eps)
    s, momentum = _checked_batch_axes(input, running_mean, running_var, weight, bias, training, momentum, eps)
    if s is None:   # the 1-D empty input torch accepts: nothing to normalize
        return input.clone()
    y, mean, var = BatchNormFunction.apply(input, weight, bias, eps)
    if s.count > 0:
        _update_running(running_mean, mean, momentum)
        _update_running(running_var, _bessel(var, s.count), momentum)
    return y


# --------------------------------------------------------------------------- modules

_FUNCTIONS = SimpleNamespace(layer_norm=layer_norm, rms_norm=rms_norm, batch_norm=batch_norm)


class LayerNorm(modules.LayerNorm):
    """:class:`normlib.LayerNorm` (same arguments, parameters and state_dict) with the hand-derived backward.

    >>> LayerNorm(3)(torch.tensor([[2.0, 3.0, 4.0]])).grad_fn.name()
    'LayerNormFunctionBackward'
    """

    _functional = _FUNCTIONS


class RMSNorm(modules.RMSNorm):
    """:class:`normlib.RMSNorm` with the hand-derived backward."""

    _functional = _FUNCTIONS


class BatchNorm1d(modules.BatchNorm1d):
    """:class:`normlib.BatchNorm1d` with the hand-derived backward in training mode."""

    _functional = _FUNCTIONS


class BatchNorm2d(modules.BatchNorm2d):
    """:class:`normlib.BatchNorm2d` with the hand-derived backward in training mode."""

    _functional = _FUNCTIONS


class BatchNorm3d(modules.BatchNorm3d):
    """:class:`normlib.BatchNorm3d` with the hand-derived backward in training mode."""

    _functional = _FUNCTIONS


# --------------------------------------------------------------------------- memory saved for backward

class SavedForBackward:
    """What a forward pass leaves in the autograd graph for its backward (see :func:`saved_for_backward`).

    ``tensors`` lists each distinct saved storage once as ``(shape, dtype, nbytes)``; ``nbytes``
    is their total: the memory the graph keeps alive until backward runs (or the graph is freed).
    """

    def __init__(self) -> None:
        self.tensors = []
        self._seen = set()

    def _pack(self, t: Tensor) -> Tensor:
        storage = t.untyped_storage()
        key = (storage.data_ptr(), storage.nbytes())
        if key not in self._seen:
            self._seen.add(key)
            self.tensors.append((tuple(t.shape), t.dtype, storage.nbytes()))
        return t

    @property
    def nbytes(self) -> int:
        return sum(n for _, _, n in self.tensors)

    def __repr__(self) -> str:
        return f"SavedForBackward({len(self.tensors)} tensors, {self.nbytes} bytes)"


def saved_for_backward(fn, *args, **kwargs) -> SavedForBackward:
    """Run ``fn(*args, **kwargs)`` and record every tensor autograd saves for the backward pass.

    A tensor saved twice (or two views of one storage) is counted once, with its whole storage.

    >>> x = torch.randn(4, 8, requires_grad=True)
    >>> saved_for_backward(layer_norm, x, 8).tensors      # x, the 4 means, the 4 reciprocal stds
    [((4, 8), torch.float32, 128), ((4, 1), torch.float32, 16), ((4, 1), torch.float32, 16)]
    """
    record = SavedForBackward()
    with torch.autograd.graph.saved_tensors_hooks(record._pack, lambda t: t):
        fn(*args, **kwargs)
    return record
