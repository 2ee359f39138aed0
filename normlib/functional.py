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
from typing import Optional, Sequence, Tuple

import torch
import torch.autograd.forward_ad as fwAD
from torch import Tensor

from . import axes
from .axes import NormInputError, ShapeLike, Sharing, _fmt

__all__ = ["layer_norm", "batch_norm", "instance_norm", "group_norm", "rms_norm", "NormDtypeError"]



class NormDtypeError(TypeError, NotImplementedError):
    """An input whose dtype a normalization cannot compute with (integers, booleans, complex).

    Both a ``TypeError`` and the ``NotImplementedError`` that PyTorch raises for these dtypes.
    """


# Error messages start with the words torch 2.13 uses for the same error (torch's tests, and code
# written against torch, look for them); normlib's fuller explanation follows.

# The kernel torch names when it refuses a dtype.
_TORCH_KERNEL = {"layer_norm": "LayerNormKernelImpl", "group_norm": "GroupNormKernelImpl",
                 "instance_norm": "batch_norm"}


def _dtype_name(input: Tensor) -> str:
    """torch's name of a dtype in its messages: ``'Long'`` for int64, ``'Bool'``, ``'ComplexFloat'``, …"""
    return input.type().rsplit(".", 1)[-1].removesuffix("Tensor")


def _size_list(shape) -> str:
    return str([int(d) for d in shape])


# --------------------------------------------------------------------------- helpers

def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """float16/bfloat16 are accumulated in float32 (PyTorch's "opmath" type); others in themselves."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def _check_floating(name: str, input: Tensor) -> None:
    if not isinstance(input, Tensor):
        raise NormDtypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}: "
                             f"{name} expects a torch.Tensor as input, got {type(input).__name__}")
    if not input.is_floating_point():
        raise NormDtypeError(
            f'"{_TORCH_KERNEL.get(name, name)}" not implemented for \'{_dtype_name(input)}\': '
            f"{name} expects a floating-point input (float16, bfloat16, float32 or float64), "
            f"but got an input of dtype {input.dtype}; convert it first, e.g. x.float()"
        )


def _param_words(fn: str, name: str, t: Tensor, expected: Tuple[int, ...], input_shape: Sequence[int]) -> str:
    """torch's words for a weight, bias or running statistic of the wrong shape."""
    if fn in ("layer_norm", "rms_norm"):
        return (f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                f"{_size_list(t.shape)} and normalized_shape = {_size_list(expected)}")
    if fn == "group_norm":
        return (f"Expected {name} to be a vector of size equal to the number of channels in input, but got "
                f"{name} of shape {_size_list(t.shape)} and input of shape {_size_list(input_shape)}")
    return f"{name} should contain {expected[0]} elements not {t.numel()}"


def _check_param(fn: str, name: str, t: Optional[Tensor], expected: Tuple[int, ...], why: str,
                 input_shape: Sequence[int], by_numel: bool = False) -> None:
    """Check that weight/bias/running statistics have the shape the input asks for."""
    if t is None:
        return
    ok = t.numel() == expected[0] if by_numel else tuple(t.shape) == expected
    if not ok:
        raise NormInputError(
            f"{_param_words(fn, name, t, expected, input_shape)}. {fn}: {name} should have shape "
            f"{_fmt(expected)} ({why} of an input of shape {_fmt(input_shape)}), but got {name} of shape "
            f"{_fmt(t.shape)}"
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
            f"{fn}(): argument 'momentum' (position 7) must be float, not {type(momentum).__name__}: "
            f"{fn}: momentum must be a float, got {momentum!r}. (momentum=None, the cumulative "
            f"average, is a module option: the module passes 1/num_batches_tracked here.)"
        )
    return float(momentum)


def _check_running_pair(fn: str, running_mean: Optional[Tensor], running_var: Optional[Tensor]) -> None:
    """Normalizing with the batch's statistics updates both running statistics or neither."""
    if (running_mean is None) != (running_var is None):
        raise NormInputError(
            f"running_mean and running_var must either both be None or neither be None: {fn} updates both "
            f"running statistics from the batch, but got running_mean={_given(running_mean)} and "
            f"running_var={_given(running_var)}"
        )


def _given(t: Optional[Tensor]) -> str:
    return "None" if t is None else "a tensor"


def _check_running_not_differentiated(fn: str, input: Tensor, weight: Optional[Tensor], bias: Optional[Tensor],
                                      running_mean: Optional[Tensor], running_var: Optional[Tensor],
                                      uses_running: bool) -> None:
    """The running statistics are buffers, not inputs to differentiate, as in torch.

    torch refuses them with ``requires_grad`` (when gradients are recorded) and, when they
    normalize (evaluation) and the output has a forward-mode derivative, with a tangent.
    """
    stats = (("running_mean", running_mean), ("running_var", running_var))
    if torch.is_grad_enabled():
        for name, t in stats:
            if t is not None and t.requires_grad:
                raise NormInputError(
                    f"The function '{fn}' is not differentiable with respect to argument '{name}'. This input "
                    f"cannot have requires_grad True: the running statistics are buffers that training "
                    f"updates, not parameters; pass {name}.detach()"
                )
    if uses_running:
        # (unpack_dual gives no tangent outside forward-mode AD)
        has_tangent = lambda t: t is not None and fwAD.unpack_dual(t).tangent is not None
        tangents = [name for name, t in stats if has_tangent(t)]
        if tangents and any(has_tangent(t) for t in (input, weight, bias)):
            raise NormInputError(
                f"batch_norm is not differentiable wrt running_mean and running_var, they cannot have forward "
                f"grad defined: {fn} normalizes with the running statistics here, but got a tangent "
                f"(forward-mode derivative) on {' and '.join(tangents)}"
            )


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


def _empty_1d(input: Tensor) -> bool:
    """A 1-D input with no elements: the one 1-D input torch's batch_norm accepts (it returns it, empty)."""
    return input.dim() == 1 and input.numel() == 0


def _checked_batch_axes(input: Tensor, running_mean: Optional[Tensor], running_var: Optional[Tensor],
                        weight: Optional[Tensor], bias: Optional[Tensor], training: bool, momentum,
                        eps: float, *, fn: str = "batch_norm",
                        local_count: bool = True) -> Tuple[Optional[Sharing], float]:
    """The checks of batch_norm (also used by :mod:`normlib.autograd` and :mod:`normlib.distributed`);
    returns the axes and momentum. ``local_count=False`` leaves the "more than 1 value per channel"
    check to the caller (synchronized BatchNorm counts the values of every process).

    For the 1-D empty input torch accepts (:func:`_empty_1d`) the axes are ``None``: there are no
    channels to check the parameters against, and the caller returns an empty output. (Not with
    ``local_count=False``: synchronized BatchNorm needs the channel axis, as torch's does.)"""
    _check_floating(fn, input)
    if training:
        _check_running_pair(fn, running_mean, running_var)
    _check_running_not_differentiated(fn, input, weight, bias, running_mean, running_var, not training)
    momentum = _check_momentum(fn, momentum)
    # PyTorch (2.13) refuses these eps values; so does normlib.
    if training and eps <= 0:
        raise NormInputError(f"{fn} eps must be positive during training, but got {eps}: {fn} in training mode "
                             f"expects eps > 0 (a batch whose values are all equal has variance 0)")
    if eps < 0:
        raise NormInputError(f"{fn} eps must be non-negative, but got {eps}: {fn} expects eps >= 0, "
                             f"it is added to the variance under a square root")
    if local_count and _empty_1d(input):
        return None, momentum
    s = axes.batch_norm_axes(input.shape)
    _check_channel_params(fn, input, True, running_mean=running_mean, running_var=running_var,
                          weight=weight, bias=bias)
    if training and local_count and s.count == 1:
        raise NormInputError(
            f"Expected more than 1 value per channel when training, got input size {input.shape}: "
            f"in training mode batch_norm computes each channel's variance over its N × spatial values, "
            f"and an input of shape {_fmt(input.shape)} has 1. Use a larger batch, or evaluation mode, "
            f"which uses the running statistics."
        )
    return s, momentum


def _check_eval_running(running_mean: Optional[Tensor], running_var: Optional[Tensor]) -> None:
    for name, t in (("running_mean", running_mean), ("running_var", running_var)):
        if t is None:
            raise NormInputError(
                f"{name} must be defined in evaluation mode: batch_norm with training=False normalizes with "
                f"running_mean and running_var, but got running_mean={_given(running_mean)} and "
                f"running_var={_given(running_var)}; pass both, or training=True"
            )


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
    s, momentum = _checked_batch_axes(input, running_mean, running_var, weight, bias, training, momentum, eps)
    if s is None:   # the 1-D empty input: nothing to normalize
        return input.clone()
    dtype = _compute_dtype(input.dtype)
    x = _gradient_in_input_layout(input).to(dtype)
    if training:
        mean, var = _moments(x, s)
        if s.count > 0:
            _update_running(running_mean, mean, momentum)
            _update_running(running_var, _bessel(var, s.count), momentum)
    else:
        _check_eval_running(running_mean, running_var)
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
    if use_input_stats:
        _check_running_pair("instance_norm", running_mean, running_var)
        if math.prod(input.shape[2:]) == 1:
            raise NormInputError(
                f"Expected more than 1 spatial element when training, got input size {input.shape}: "
                f"with use_input_stats=True instance_norm computes each channel's variance over the "
                f"spatial elements of one sample, and an input of shape {_fmt(input.shape)} has 1; "
                f"expected (N, C, L) or (N, C, H, W, …) with L (or H·W·…) > 1"
            )
    s = axes.instance_norm_axes(input.shape)
    _check_channel_params("instance_norm", input, True, running_mean=running_mean, running_var=running_var,
                          weight=weight, bias=bias)
    _check_running_not_differentiated("instance_norm", input, weight, bias, running_mean, running_var,
                                      not use_input_stats)
    momentum = _check_momentum("instance_norm", momentum)
    dtype = _compute_dtype(input.dtype)
    x = input.to(dtype)
    if use_input_stats:
        mean, var = _moments(x, s)
        if input.numel() > 0:
            _update_running(running_mean, mean.mean(dim=0), momentum)
            _update_running(running_var, _bessel(var, s.count).mean(dim=0), momentum)
    else:
        if running_mean is None or running_var is None:
            raise NormInputError(
                "Expected running_mean and running_var to be defined when use_input_stats is false: "
                "instance_norm with use_input_stats=False normalizes with running_mean and running_var, "
                f"but got running_mean={_given(running_mean)} and running_var={_given(running_var)}; pass "
                "both, or use_input_stats=True"
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
            f"Expected more than 1 value per channel when training, got input size {_size_list(input.shape)}: "
            f"group_norm needs more than one value per group for a batch of one sample, but got an "
            f"input of shape {_fmt(input.shape)} with num_groups={num_groups}: each group holds 1 value"
        )
    dtype = _compute_dtype(input.dtype)
    x = _gradient_in_input_layout(input).to(dtype).reshape(s.view_shape)
    mean, var = _moments(x, s)
    x_hat = ((x - mean) * torch.rsqrt(var + eps)).reshape(input.shape)
    return _affine_per_channel(x_hat, weight, bias).to(input.dtype)
