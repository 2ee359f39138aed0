"""Normalization as plain functions, argument for argument like ``torch.nn.functional``.

Each function is its chapter's formula, one line per step, with the formula beside it:

1. check the arguments, once (:mod:`normlib.checks`), which gives the axes a statistic pools;
2. the statistics: ``μ = E[x]`` and the population variance ``σ² = E[(x − μ)²]``, in two
   passes (:func:`normlib.stats.moments`);
3. ``x̂ = (x − μ) / √(σ² + ε)``;
4. scale and shift: ``y = γ · x̂ + β`` (γ and β per channel are viewed ``(1, C, 1, …)`` by
   :func:`normlib.axes.channel_view`).

RMSNorm skips the centring: ``y = γ · x / √(mean(x²) + ε)``. Dynamic Tanh (:func:`dyt`)
computes no statistic at all: ``x̂ = tanh(α x)``.

float16 and bfloat16 inputs are computed in float32 and the result is returned in the
input's dtype, as PyTorch does. Chapters 2–6 derive these formulas by hand.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from . import checks
from .axes import ShapeLike, channel_view
from .checks import NormDtypeError
from .stats import moments

__all__ = ["layer_norm", "batch_norm", "instance_norm", "group_norm", "rms_norm", "dyt", "NormDtypeError"]


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
    dims = checks.layer_norm(input, normalized_shape, weight, bias)   # the last len(normalized_shape) axes
    x = input.to(_opmath(input.dtype))
    mean, var = moments(x, dims)                  # μ = E[x],  σ² = E[(x − μ)²]   (two passes, chapter 2)
    centered = x - mean                           # x − μ
    x_hat = centered * torch.rsqrt(var + eps)     # x̂ = (x − μ) / √(σ² + ε)
    y = _affine(x_hat, weight, bias)              # y = γ · x̂ + β
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
    dims = checks.rms_norm(input, normalized_shape, weight)   # the last len(normalized_shape) axes
    x = input.to(_opmath(input.dtype))
    eps = _rms_eps(eps, x.dtype)
    mean_square = (x * x).mean(dim=dims, keepdim=True)   # mean(x²): no μ is subtracted
    x_hat = x * torch.rsqrt(mean_square + eps)           # x̂ = x / √(mean(x²) + ε)
    y = _affine(x_hat, weight, None)                     # y = γ · x̂   (no β)
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
    ``training=False`` the running statistics are used and nothing is updated. The running
    statistics are buffers, not inputs to differentiate: as in torch, they may not require grad,
    and in evaluation mode not carry a forward-mode tangent. A 1-D input with no elements (the one
    1-D input torch accepts) gives an empty output.

    >>> x = torch.tensor([[2.0], [4.0], [6.0], [8.0]])      # feature 1 of the book's table
    >>> rm, rv = torch.zeros(1), torch.ones(1)
    >>> batch_norm(x, rm, rv, training=True).flatten()
    tensor([-1.3416, -0.4472,  0.4472,  1.3416])
    >>> rm, rv                                              # 0.1·5 and 0.9·1 + 0.1·(20/3)
    (tensor([0.5000]), tensor([1.5667]))
    """
    s, momentum = checks.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    if s is None:   # the 1-D empty input: nothing to normalize
        return input.clone()
    x = _gradient_in_input_layout(input).to(_opmath(input.dtype))
    if training:
        mean, var = moments(x, s.axes)            # μ_c, σ²_c of each channel over the batch (and space)
        if s.count > 0:
            _update_running(running_mean, mean, momentum)
            _update_running(running_var, _unbiased(var, s.count), momentum)
    else:
        mean = channel_view(running_mean, x.dim()).to(x.dtype)   # evaluation: the running statistics
        var = channel_view(running_var, x.dim()).to(x.dtype)
    centered = x - mean                           # x − μ
    x_hat = centered * torch.rsqrt(var + eps)     # x̂ = (x − μ) / √(σ² + ε)
    y = _affine(x_hat, channel_view(weight, x.dim()), channel_view(bias, x.dim()))   # y = γ_c · x̂ + β_c
    return y.to(input.dtype)


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
    s, momentum = checks.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum)
    x = input.to(_opmath(input.dtype))
    if use_input_stats:
        mean, var = moments(x, s.axes)            # μ, σ² of each (sample, channel) over space
        if input.numel() > 0:                     # the running statistics get the average over the batch
            _update_running(running_mean, mean.mean(dim=0), momentum)
            _update_running(running_var, _unbiased(var, s.count).mean(dim=0), momentum)
    else:
        mean = channel_view(running_mean, x.dim()).to(x.dtype)
        var = channel_view(running_var, x.dim()).to(x.dtype)
    centered = x - mean                           # x − μ
    x_hat = centered * torch.rsqrt(var + eps)     # x̂ = (x − μ) / √(σ² + ε)
    y = _affine(x_hat, channel_view(weight, x.dim()), channel_view(bias, x.dim()))   # y = γ_c · x̂ + β_c
    return y.to(input.dtype)


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
    s = checks.group_norm(input, num_groups, weight, bias)
    x = _gradient_in_input_layout(input).to(_opmath(input.dtype))
    groups = x.reshape(s.view_shape)                      # (N, C, *) viewed as (N, G, C/G, *)
    mean, var = moments(groups, s.view_axes)              # μ, σ² of each (sample, group)
    centered = groups - mean                              # x − μ
    x_hat = centered * torch.rsqrt(var + eps)             # x̂ = (x − μ) / √(σ² + ε)
    x_hat = x_hat.reshape(input.shape)                    # back to (N, C, *)
    y = _affine(x_hat, channel_view(weight, x.dim()), channel_view(bias, x.dim()))   # y = γ_c · x̂ + β_c
    return y.to(input.dtype)


# --------------------------------------------------------------------------- Dynamic Tanh (no statistics)

def dyt(input: Tensor, alpha, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None) -> Tensor:
    """Dynamic Tanh: a learnable scalar α and a tanh where a normalization would divide by statistics.

    .. math:: y = \\gamma \\cdot \\tanh(\\alpha x) + \\beta

    from Zhu, Chen, He, LeCun & Liu, "Transformers without Normalization" (CVPR 2025,
    arXiv 2503.10622), a drop-in replacement for a transformer's LayerNorm. Axes reduced: none; every
    element is mapped on its own (``(B, L, D)`` → ``(B, L, D)`` with no mean or variance), so a fused kernel
    reads the input once and writes once (written out as here it is four elementwise operations, and the
    tanh, not memory, sets its time on a CPU: chapter 11). Chapter 11 starts from the S-shaped curves of a
    trained LayerNorm.

    Args:
        input: any shape, floating point.
        alpha: α, one scalar for the whole tensor: a real number, or a tensor of shape ``()`` or ``(1,)``
            (the layer :class:`normlib.DyT` holds a ``(1,)`` parameter).
        weight, bias: γ and β of the shape of the input's last dimensions (``(D,)`` for ``(B, L, D)``,
            as LayerNorm's over ``normalized_shape``), or ``None``.

    >>> dyt(torch.tensor([[-4.0, 0.0, 1.0, 4.0]]), 0.5)        # tanh(x / 2): ±4 → tanh(±2) ≈ ±0.96
    tensor([[-0.9640,  0.0000,  0.4621,  0.9640]])
    """
    alpha = checks.dyt(input, alpha, weight, bias)   # α as one scalar (a (1,) parameter viewed as ())
    x = input.to(_opmath(input.dtype))
    x_hat = torch.tanh(alpha * x)                 # x̂ = tanh(α x): squashed, not (x − μ) / √(σ² + ε)
    y = _affine(x_hat, weight, bias)              # y = γ · x̂ + β   (γ, β over the trailing dims)
    return y.to(input.dtype)


# --------------------------------------------------------------------------- the shared steps

def _opmath(dtype: torch.dtype) -> torch.dtype:
    """float16/bfloat16 are computed in float32 (PyTorch's "opmath" type); other dtypes in themselves."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def _affine(x_hat: Tensor, weight: Optional[Tensor], bias: Optional[Tensor]) -> Tensor:
    """``y = γ · x̂ + β`` with γ and β already shaped to broadcast against x̂; either may be ``None``."""
    y = x_hat
    if weight is not None:
        y = y * weight.to(x_hat.dtype)
    if bias is not None:
        y = y + bias.to(x_hat.dtype)
    return y


@torch.no_grad()
def _update_running(running: Optional[Tensor], batch_stat: Tensor, momentum: float) -> None:
    """PyTorch's convention: ``running ← (1 − momentum) · running + momentum · batch_stat``.

    The running statistics are not a differentiable output: ``detach`` keeps a forward-mode
    tangent of the batch statistic out of them (``no_grad`` stops only the backward graph).
    """
    if running is None:
        return
    batch_stat = batch_stat.detach().reshape(running.shape)
    new = (1 - momentum) * running.detach().to(batch_stat.dtype) + momentum * batch_stat
    running.copy_(new)


def _unbiased(var: Tensor, count: int) -> Tensor:
    """Population variance → unbiased (sample) variance, what ``running_var`` stores: × n / (n − 1)."""
    return var * (count / (count - 1))


def _rms_eps(eps: Optional[float], dtype: torch.dtype) -> float:
    """``eps=None`` → the machine epsilon of the computation dtype, as ``torch.nn.RMSNorm``."""
    return torch.finfo(dtype).eps if eps is None else eps


def _memory_format(t: Tensor) -> Optional[torch.memory_format]:
    """channels_last (4-D) or channels_last_3d (5-D) when ``t`` is laid out so, else None."""
    if t.dim() == 4 and not t.is_contiguous() and t.is_contiguous(memory_format=torch.channels_last):
        return torch.channels_last
    if t.dim() == 5 and not t.is_contiguous() and t.is_contiguous(memory_format=torch.channels_last_3d):
        return torch.channels_last_3d
    return None


def _gradient_in_input_layout(input: Tensor) -> Tensor:
    """``input`` itself, or for a channels_last input that needs a gradient, a view of it whose
    gradient is turned into the input's memory format, as torch's BatchNorm and GroupNorm give it
    (autograd would otherwise follow the layout of the gradient arriving from above)."""
    fmt = _memory_format(input)
    if fmt is None or not (input.requires_grad and torch.is_grad_enabled()):
        return input
    alias = input.view_as(input)
    alias.register_hook(lambda grad: grad.contiguous(memory_format=fmt))
    return alias
