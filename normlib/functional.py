"""Normalization as plain functions, argument for argument like ``torch.nn.functional``.

Every function here is the same three steps, written with ``mean`` and elementwise
tensor operations so the formula stays visible:

1. pool the elements that share a statistic (the axes come from :mod:`normlib.axes`),
2. ``x̂ = (x − μ) · 1/sqrt(σ² + ε)`` with the population (biased) variance
   ``σ² = mean((x − μ)²)``, computed in two passes (first μ, then the squares of ``x − μ``),
3. scale and shift: ``y = γ · x̂ + β``.

RMSNorm skips the centering: ``y = γ · x · 1/sqrt(mean(x²) + ε)``.

float16 and bfloat16 inputs are computed in float32 and the result is returned in the
input's dtype, as PyTorch does. Chapters 2–6 derive these formulas by hand.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence, Tuple, Union

import torch
from torch import Tensor

from . import axes
from .axes import NormInputError, Sharing, _fmt

__all__ = ["layer_norm", "batch_norm", "instance_norm", "group_norm", "rms_norm", "NormDtypeError"]

ShapeLike = Union[int, Sequence[int], torch.Size]


class NormDtypeError(TypeError, NotImplementedError):
    """An input whose dtype a normalization cannot compute with (integers, booleans, complex).

    Both a ``TypeError`` and the ``NotImplementedError`` that PyTorch raises for these dtypes.
    """


# --------------------------------------------------------------------------- helpers

def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """float16/bfloat16 are accumulated in float32 (PyTorch's "opmath" type); others in themselves."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def _check_floating(name: str, input: Tensor) -> None:
    if not isinstance(input, Tensor):
        raise NormDtypeError(f"{name} expects a torch.Tensor as input, got {type(input).__name__}")
    if not input.is_floating_point():
        raise NormDtypeError(
            f"{name} expects a floating-point input (float16, bfloat16, float32 or float64), "
            f"but got an input of dtype {input.dtype}; convert it first, e.g. x.float()"
        )


def _check_param(fn: str, name: str, t: Optional[Tensor], expected: Tuple[int, ...], why: str,
                 input_shape: Sequence[int], by_numel: bool = False) -> None:
    """Check that weight/bias/running statistics have the shape the input asks for."""
    if t is None:
        return
    ok = t.numel() == expected[0] if by_numel else tuple(t.shape) == expected
    if not ok:
        raise NormInputError(
            f"{fn}: {name} should have shape {_fmt(expected)} ({why} of an input of shape "
            f"{_fmt(input_shape)}), but got {name} of shape {_fmt(t.shape)}"
        )


def _check_channel_params(fn: str, input: Tensor, by_numel: bool, **params: Optional[Tensor]) -> None:
    c = input.shape[1]
    for name, t in params.items():
        _check_param(fn, name, t, (c,), "one value per channel", input.shape, by_numel)


def _per_channel(t: Tensor, ndim: int, dtype: torch.dtype) -> Tensor:
    """View a length-C vector as (1, C, 1, …, 1) so it broadcasts against (N, C, *spatial)."""
    return t.to(dtype).reshape(1, -1, *([1] * (ndim - 2)))


def _affine_per_channel(x_hat: Tensor, weight: Optional[Tensor], bias: Optional[Tensor]) -> Tensor:
    """γ and β with one value per channel (BatchNorm, InstanceNorm, GroupNorm), broadcast over (N, C, *)."""
    view = lambda t: None if t is None else _per_channel(t, x_hat.dim(), x_hat.dtype)
    return _affine(x_hat, view(weight), view(bias))


def _moments(x: Tensor, s: Sharing) -> Tuple[Tensor, Tensor]:
    """Mean and population variance over the elements ``s`` pools, in two passes.

    Returned with ``keepdim=True`` on ``s.view_shape``; ``x`` must already be viewed so.
    """
    mean = x.mean(dim=s.view_axes, keepdim=True)
    centered = x - mean
    var = (centered * centered).mean(dim=s.view_axes, keepdim=True)
    return mean, var


def _affine(x_hat: Tensor, weight: Optional[Tensor], bias: Optional[Tensor]) -> Tensor:
    y = x_hat
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def _check_momentum(fn: str, momentum) -> float:
    if momentum is None or isinstance(momentum, bool) or not isinstance(momentum, (int, float)):
        raise TypeError(
            f"{fn}: momentum must be a float, got {momentum!r}. (momentum=None, the cumulative "
            f"average, is a module option: the module passes 1/num_batches_tracked here.)"
        )
    return float(momentum)


@torch.no_grad()
def _update_running(running: Optional[Tensor], batch_stat: Tensor, momentum: float) -> None:
    """PyTorch's convention: ``running ← (1 − momentum) · running + momentum · batch_stat``."""
    if running is None:
        return
    new = (1 - momentum) * running.to(batch_stat.dtype) + momentum * batch_stat.reshape(running.shape)
    running.copy_(new)


def _bessel(var: Tensor, count: int) -> Tensor:
    """Population variance → unbiased (sample) variance: multiply by n / (n − 1)."""
    return var * (count / (count - 1))


def _checked_layer_axes(fn: str, input: Tensor, normalized_shape: ShapeLike, **params: Optional[Tensor]) -> Sharing:
    """The checks of layer_norm / rms_norm (also used by :mod:`normlib.autograd`); returns the axes pooled."""
    _check_floating(fn, input)
    s = axes.layer_norm_axes(input.shape, normalized_shape, method="rms" if fn.startswith("rms") else "layer")
    dims = axes.as_normalized_shape(normalized_shape)
    for name, t in params.items():
        _check_param(fn, name, t, dims, "the normalized_shape", input.shape)
    return s


def _rms_eps(eps: Optional[float], dtype: torch.dtype) -> float:
    """``eps=None`` → the machine epsilon of the computation dtype, as ``torch.nn.RMSNorm``."""
    return torch.finfo(dtype).eps if eps is None else eps


def _checked_batch_axes(input: Tensor, running_mean: Optional[Tensor], running_var: Optional[Tensor],
                        weight: Optional[Tensor], bias: Optional[Tensor], training: bool, momentum,
                        eps: float, *, fn: str = "batch_norm", local_count: bool = True) -> Tuple[Sharing, float]:
    """The checks of batch_norm (also used by :mod:`normlib.autograd` and :mod:`normlib.distributed`);
    returns the axes and momentum. ``local_count=False`` leaves the "more than 1 value per channel"
    check to the caller (synchronized BatchNorm counts the values of every process)."""
    _check_floating(fn, input)
    s = axes.batch_norm_axes(input.shape)
    _check_channel_params(fn, input, True, running_mean=running_mean, running_var=running_var,
                          weight=weight, bias=bias)
    momentum = _check_momentum(fn, momentum)
    if training and local_count and s.count == 1:
        raise NormInputError(
            f"batch_norm in training mode needs more than 1 value per channel to compute a "
            f"variance, but got an input of shape {_fmt(input.shape)} (N × spatial = 1). Use a "
            f"larger batch, or evaluation mode, which uses the running statistics."
        )
    # PyTorch (2.13) refuses these eps values; so does normlib.
    if training and eps <= 0:
        raise NormInputError(f"{fn} in training mode expects eps > 0, but got eps={eps}")
    if eps < 0:
        raise NormInputError(f"{fn} expects eps >= 0, but got eps={eps}")
    return s, momentum


# --------------------------------------------------------------------------- LayerNorm / RMSNorm

def layer_norm(input: Tensor, normalized_shape: ShapeLike, weight: Optional[Tensor] = None,
               bias: Optional[Tensor] = None, eps: float = 1e-5) -> Tensor:
    """Layer normalization: one mean and variance per leading index, over the trailing dims.

    .. math:: y = \\frac{x - \\mathrm{E}[x]}{\\sqrt{\\mathrm{Var}[x] + \\epsilon}} \\cdot \\gamma + \\beta

    where E and Var (population variance) pool the last ``len(normalized_shape)`` dimensions.

    Axes reduced, by layout: ``(N, D)`` with ``normalized_shape=D`` → ``(1,)``;
    ``(B, L, D)`` → ``(2,)`` (one statistic per token); ``(N, C, H, W)`` with
    ``normalized_shape=(C, H, W)`` → ``(1, 2, 3)`` (one per sample). Chapter 4 derives it.

    Args:
        input: ``(*, *normalized_shape)``, floating point.
        normalized_shape: int, list, tuple or ``torch.Size``: the trailing dims to pool.
        weight, bias: γ and β of shape ``normalized_shape``, or ``None``.
        eps: added to the variance before the square root.

    >>> layer_norm(torch.tensor([[1.0, 10.0, 100.0]]), 3, eps=1e-6)
    tensor([[-0.8054, -0.6040,  1.4094]])
    """
    s = _checked_layer_axes("layer_norm", input, normalized_shape, weight=weight, bias=bias)
    dtype = _compute_dtype(input.dtype)
    x = input.to(dtype)
    mean, var = _moments(x, s)
    x_hat = (x - mean) * torch.rsqrt(var + eps)
    y = _affine(x_hat, None if weight is None else weight.to(dtype), None if bias is None else bias.to(dtype))
    return y.to(input.dtype)


def rms_norm(input: Tensor, normalized_shape: ShapeLike, weight: Optional[Tensor] = None,
             eps: Optional[float] = None) -> Tensor:
    """Root-mean-square normalization: rescale by the RMS over the trailing dims, no centering.

    .. math:: y = \\frac{x}{\\sqrt{\\mathrm{mean}(x^2) + \\epsilon}} \\cdot \\gamma

    as ``torch.nn.RMSNorm`` defines it (``x · rsqrt(mean(x²) + ε)``; *not* ``x / (rms + ε)``).
    It pools the same axes as :func:`layer_norm`: ``(B, L, D)`` with ``normalized_shape=D``
    → ``(2,)``. There is no β. Chapter 5 derives it.

    ``eps=None`` uses the machine epsilon of the dtype the computation runs in, as PyTorch
    does: ``torch.finfo(torch.float32).eps`` for float16/bfloat16/float32 inputs (they are
    computed in float32) and ``torch.finfo(torch.float64).eps`` for float64.

    >>> rms_norm(torch.tensor([[3.0, 4.0]]), 2)   # rms = sqrt((9 + 16) / 2)
    tensor([[0.8485, 1.1314]])
    """
    s = _checked_layer_axes("rms_norm", input, normalized_shape, weight=weight)
    dtype = _compute_dtype(input.dtype)
    eps = _rms_eps(eps, dtype)
    x = input.to(dtype)
    mean_square = (x * x).mean(dim=s.axes, keepdim=True)
    y = x * torch.rsqrt(mean_square + eps)
    if weight is not None:
        y = y * weight.to(dtype)
    return y.to(input.dtype)


# --------------------------------------------------------------------------- BatchNorm / InstanceNorm

def batch_norm(input: Tensor, running_mean: Optional[Tensor], running_var: Optional[Tensor],
               weight: Optional[Tensor] = None, bias: Optional[Tensor] = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Batch normalization: one mean and variance per channel, over the batch and space.

    .. math:: y = \\frac{x - \\mathrm{E}[x]}{\\sqrt{\\mathrm{Var}[x] + \\epsilon}} \\cdot \\gamma + \\beta

    Axes reduced, by layout: ``(N, C)`` → ``(0,)``; ``(N, C, L)`` → ``(0, 2)``;
    ``(N, C, H, W)`` → ``(0, 2, 3)``. Chapter 3 derives it.

    With ``training=True`` the batch's statistics are used, and ``running_mean`` /
    ``running_var`` (when given) are updated in place with PyTorch's convention
    ``running ← (1 − momentum) · running + momentum · batch`` — ``running_var`` receives the
    *unbiased* batch variance (divided by n − 1) although the forward pass uses the
    biased one (divided by n). An empty batch leaves them untouched. With
    ``training=False`` the running statistics are used and nothing is updated.

    >>> x = torch.tensor([[2.0], [4.0], [6.0], [8.0]])      # feature 1 of the book's table
    >>> rm, rv = torch.zeros(1), torch.ones(1)
    >>> batch_norm(x, rm, rv, training=True).flatten()
    tensor([-1.3416, -0.4472,  0.4472,  1.3416])
    >>> rm, rv                                              # 0.1·5 and 0.9·1 + 0.1·(20/3)
    (tensor([0.5000]), tensor([1.5667]))
    """
    s, momentum = _checked_batch_axes(input, running_mean, running_var, weight, bias, training, momentum, eps)
    dtype = _compute_dtype(input.dtype)
    x = input.to(dtype)
    if training:
        mean, var = _moments(x, s)
        if s.count > 0:
            _update_running(running_mean, mean, momentum)
            _update_running(running_var, _bessel(var, s.count), momentum)
    else:
        if running_mean is None or running_var is None:
            raise NormInputError(
                "batch_norm with training=False normalizes with running_mean and running_var, but "
                f"got running_mean={'None' if running_mean is None else 'a tensor'} and "
                f"running_var={'None' if running_var is None else 'a tensor'}; pass both, or training=True"
            )
        mean = _per_channel(running_mean, x.dim(), dtype)
        var = _per_channel(running_var, x.dim(), dtype)
    x_hat = (x - mean) * torch.rsqrt(var + eps)
    return _affine_per_channel(x_hat, weight, bias).to(input.dtype)


def instance_norm(input: Tensor, running_mean: Optional[Tensor] = None, running_var: Optional[Tensor] = None,
                  weight: Optional[Tensor] = None, bias: Optional[Tensor] = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Instance normalization: one mean and variance per (sample, channel), over space.

    .. math:: y = \\frac{x - \\mathrm{E}[x]}{\\sqrt{\\mathrm{Var}[x] + \\epsilon}} \\cdot \\gamma + \\beta

    Axes reduced, by layout: ``(N, C, L)`` → ``(2,)``; ``(N, C, H, W)`` → ``(2, 3)``;
    ``(N, C, D, H, W)`` → ``(2, 3, 4)``. Chapter 6 compares it with the others.

    With ``use_input_stats=True`` (the default) each instance's own statistics are used; when
    ``running_mean``/``running_var`` are given they are updated in place with the *average over
    the batch* of the per-instance statistics (unbiased variance), as PyTorch does. With
    ``use_input_stats=False`` the running statistics normalize instead. An empty batch leaves
    the running statistics untouched (torch 2.13 turns them into NaN there: its average of
    zero per-instance statistics is 0/0).

    >>> x = torch.tensor([[[2.0, 3.0, 4.0]]])     # sample A of the book's table, as (1, 1, 3)
    >>> instance_norm(x, eps=0.0)
    tensor([[[-1.2247,  0.0000,  1.2247]]])
    """
    _check_floating("instance_norm", input)
    s = axes.instance_norm_axes(input.shape)
    _check_channel_params("instance_norm", input, True, running_mean=running_mean, running_var=running_var,
                          weight=weight, bias=bias)
    momentum = _check_momentum("instance_norm", momentum)
    dtype = _compute_dtype(input.dtype)
    x = input.to(dtype)
    if use_input_stats:
        if s.count == 1:
            raise NormInputError(
                f"instance_norm with use_input_stats=True needs more than 1 spatial element per "
                f"channel to compute a variance, but got an input of shape {_fmt(input.shape)}: "
                f"expected (N, C, L) or (N, C, H, W, …) with L (or H·W·…) > 1"
            )
        mean, var = _moments(x, s)
        if input.numel() > 0:
            _update_running(running_mean, mean.mean(dim=0), momentum)
            _update_running(running_var, _bessel(var, s.count).mean(dim=0), momentum)
    else:
        if running_mean is None or running_var is None:
            raise NormInputError(
                "instance_norm with use_input_stats=False normalizes with running_mean and "
                "running_var, but at least one of them is None; pass both, or use_input_stats=True"
            )
        mean = _per_channel(running_mean, x.dim(), dtype)
        var = _per_channel(running_var, x.dim(), dtype)
    x_hat = (x - mean) * torch.rsqrt(var + eps)
    return _affine_per_channel(x_hat, weight, bias).to(input.dtype)


# --------------------------------------------------------------------------- GroupNorm

def group_norm(input: Tensor, num_groups: int, weight: Optional[Tensor] = None,
               bias: Optional[Tensor] = None, eps: float = 1e-5) -> Tensor:
    """Group normalization: channels split into ``num_groups`` groups; one mean and variance
    per (sample, group), over the group's channels and all of space.

    .. math:: y = \\frac{x - \\mathrm{E}[x]}{\\sqrt{\\mathrm{Var}[x] + \\epsilon}} \\cdot \\gamma + \\beta

    Axes reduced, by layout (C channels in G groups): ``(N, C)`` → C/G channels;
    ``(N, C, L)`` → C/G channels × L; ``(N, C, H, W)`` → C/G channels × H × W. ``G = 1``
    pools like LayerNorm over ``(C, H, W)``, ``G = C`` like InstanceNorm. γ and β are per
    channel, not per group. Chapter 6 draws it.

    >>> x = torch.tensor([[1.0, 3.0, 10.0, 30.0]])          # (N=1, C=4), two groups
    >>> group_norm(x, 2, eps=0.0)
    tensor([[-1.,  1., -1.,  1.]])
    """
    _check_floating("group_norm", input)
    s = axes.group_norm_axes(input.shape, num_groups)
    _check_channel_params("group_norm", input, False, weight=weight, bias=bias)
    if input.shape[0] * s.view_shape[2] * math.prod(input.shape[2:]) == 1:
        # PyTorch refuses a single sample whose groups hold one value each (its variance is 0/0 … or 0).
        raise NormInputError(
            f"group_norm needs more than one value per group for a batch of one sample, but got an "
            f"input of shape {_fmt(input.shape)} with num_groups={num_groups}: each group holds 1 value"
        )
    dtype = _compute_dtype(input.dtype)
    x = input.to(dtype).reshape(s.view_shape)
    mean, var = _moments(x, s)
    x_hat = ((x - mean) * torch.rsqrt(var + eps)).reshape(input.shape)
    return _affine_per_channel(x_hat, weight, bias).to(input.dtype)
