"""Every argument check of the normalization functions, in one place (the shape rules themselves are
:mod:`normlib.axes`', which the checks call).

:mod:`normlib.functional`, :mod:`normlib.autograd` and :mod:`normlib.distributed` call one check
per function, once, before any arithmetic: ``checks.layer_norm(...)`` for ``layer_norm`` and so on.
Each check raises or returns what the arithmetic needs (the axes to pool), so the functions
themselves read as their formulas.

Error messages start with the words torch 2.13 uses for the same error (torch's own tests, and code
written against torch, look for them); normlib's fuller explanation follows.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence, Tuple

import torch
import torch.autograd.forward_ad as fwAD
from torch import Tensor

from . import axes
from .axes import NormInputError, ShapeLike, Sharing, _fmt

__all__ = ["NormDtypeError", "layer_norm", "rms_norm", "batch_norm", "batch_norm_eval", "instance_norm",
           "group_norm"]


class NormDtypeError(TypeError, NotImplementedError):
    """An input whose dtype a normalization cannot compute with (integers, booleans, complex).

    Both a ``TypeError`` and the ``NotImplementedError`` that PyTorch raises for these dtypes.
    """


# --------------------------------------------------------------------------- one check per function

def layer_norm(input: Tensor, normalized_shape: ShapeLike, weight: Optional[Tensor],
               bias: Optional[Tensor]) -> Tuple[int, ...]:
    """The checks of ``layer_norm``; returns the axes pooled, a tuple (the last ``len(normalized_shape)``)."""
    return _trailing("layer_norm", "layer", "LayerNormKernelImpl", input, normalized_shape, weight=weight, bias=bias)


def rms_norm(input: Tensor, normalized_shape: ShapeLike, weight: Optional[Tensor]) -> Tuple[int, ...]:
    """The checks of ``rms_norm``; returns the axes pooled, a tuple (the last ``len(normalized_shape)``)."""
    return _trailing("rms_norm", "rms", "rms_norm", input, normalized_shape, weight=weight)


def batch_norm(input: Tensor, running_mean: Optional[Tensor], running_var: Optional[Tensor],
               weight: Optional[Tensor], bias: Optional[Tensor], training: bool, momentum, eps: float, *,
               name: str = "batch_norm", local_count: bool = True) -> Tuple[Optional[Sharing], float]:
    """The checks of ``batch_norm``; returns the :class:`~normlib.axes.Sharing` (``.axes`` pooled,
    ``.count`` values per statistic) and ``momentum`` as a float.

    ``name`` is the function the messages name. ``local_count=False`` leaves the "more than 1 value
    per channel" check to the caller (synchronized BatchNorm counts the values of every process).
    For the 1-D empty input torch accepts the axes are ``None``: there are no channels to check the
    parameters against, and the caller returns an empty output. (Not with ``local_count=False``:
    synchronized BatchNorm needs a channel axis with at least one channel.)
    """
    _floating(name, input, name)
    if training:
        _running_pair(name, running_mean, running_var)
    _running_not_differentiated(name, input, weight, bias, running_mean, running_var, not training)
    momentum = _momentum(name, momentum)
    # PyTorch (2.13) refuses these eps values; so does normlib.
    if training and eps <= 0:
        raise NormInputError(f"{name} eps must be positive during training, but got {eps}: {name} in training "
                             f"mode expects eps > 0 (a batch whose values are all equal has variance 0)")
    if eps < 0:
        raise NormInputError(f"{name} eps must be non-negative, but got {eps}: {name} expects eps >= 0, "
                             f"it is added to the variance under a square root")
    if local_count and input.dim() == 1 and input.numel() == 0:
        return None, momentum
    s = axes.batch_norm_axes(input.shape)
    if not local_count and input.shape[1] == 0:
        raise NormInputError(f"{name} needs at least one channel, but got an input of shape {_fmt(input.shape)}")
    _channel_params(name, input, True, _channel_words, running_mean=running_mean, running_var=running_var,
                    weight=weight, bias=bias)
    if training and local_count and s.count == 1:
        raise NormInputError(
            f"Expected more than 1 value per channel when training, got input size {input.shape}: "
            f"in training mode batch_norm computes each channel's variance over its N × spatial values, "
            f"and an input of shape {_fmt(input.shape)} has 1. Use a larger batch, or evaluation mode, "
            f"which uses the running statistics."
        )
    if not training:
        batch_norm_eval(running_mean, running_var)
    return s, momentum


def batch_norm_eval(running_mean: Optional[Tensor], running_var: Optional[Tensor]) -> None:
    """Evaluation mode normalizes with the running statistics: both must be given."""
    for name, t in (("running_mean", running_mean), ("running_var", running_var)):
        if t is None:
            raise NormInputError(
                f"{name} must be defined in evaluation mode: batch_norm with training=False normalizes with "
                f"running_mean and running_var, but got running_mean={_given(running_mean)} and "
                f"running_var={_given(running_var)}; pass both, or training=True"
            )


def instance_norm(input: Tensor, running_mean: Optional[Tensor], running_var: Optional[Tensor],
                  weight: Optional[Tensor], bias: Optional[Tensor], use_input_stats: bool,
                  momentum) -> Tuple[Sharing, float]:
    """The checks of ``instance_norm``; returns the :class:`~normlib.axes.Sharing` and ``momentum`` as a float."""
    _floating("instance_norm", input, "batch_norm")
    if use_input_stats:
        _running_pair("instance_norm", running_mean, running_var)
        if math.prod(input.shape[2:]) == 1:
            raise NormInputError(
                f"Expected more than 1 spatial element when training, got input size {input.shape}: "
                f"with use_input_stats=True instance_norm computes each channel's variance over the "
                f"spatial elements of one sample, and an input of shape {_fmt(input.shape)} has 1; "
                f"expected (N, C, L) or (N, C, H, W, …) with L (or H·W·…) > 1"
            )
    s = axes.instance_norm_axes(input.shape)
    _channel_params("instance_norm", input, True, _channel_words, running_mean=running_mean, running_var=running_var,
                    weight=weight, bias=bias)
    _running_not_differentiated("instance_norm", input, weight, bias, running_mean, running_var,
                                not use_input_stats)
    momentum = _momentum("instance_norm", momentum)
    if not use_input_stats and (running_mean is None or running_var is None):
        raise NormInputError(
            "Expected running_mean and running_var to be defined when use_input_stats is false: "
            "instance_norm with use_input_stats=False normalizes with running_mean and running_var, "
            f"but got running_mean={_given(running_mean)} and running_var={_given(running_var)}; pass "
            "both, or use_input_stats=True"
        )
    return s, momentum


def group_norm(input: Tensor, num_groups: int, weight: Optional[Tensor], bias: Optional[Tensor]) -> Sharing:
    """The checks of ``group_norm``; returns the sharing (its ``view_shape`` splits the channels into groups)."""
    _floating("group_norm", input, "GroupNormKernelImpl")
    s = axes.group_norm_axes(input.shape, num_groups)
    _channel_params("group_norm", input, False, _group_words, weight=weight, bias=bias)
    if input.shape[0] * s.view_shape[2] * math.prod(input.shape[2:]) == 1:
        # PyTorch refuses a single sample whose groups hold one value each (its variance is 0/0 … or 0).
        raise NormInputError(
            f"Expected more than 1 value per channel when training, got input size {_size_list(input.shape)}: "
            f"group_norm needs more than one value per group for a batch of one sample, but got an "
            f"input of shape {_fmt(input.shape)} with num_groups={num_groups}: each group holds 1 value"
        )
    return s


# --------------------------------------------------------------------------- the pieces

def _dtype_name(input: Tensor) -> str:
    """torch's name of a dtype in its messages: ``'Long'`` for int64, ``'Bool'``, ``'ComplexFloat'``, …"""
    return input.type().rsplit(".", 1)[-1].removesuffix("Tensor")


def _size_list(shape) -> str:
    return str([int(d) for d in shape])


def _given(t: Optional[Tensor]) -> str:
    return "None" if t is None else "a tensor"


def _floating(name: str, input: Tensor, kernel: str) -> None:
    """A tensor of a floating dtype; ``kernel`` is the name torch's message gives the refusing kernel."""
    if not isinstance(input, Tensor):
        raise NormDtypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}: "
                             f"{name} expects a torch.Tensor as input, got {type(input).__name__}")
    if not input.is_floating_point():
        raise NormDtypeError(
            f'"{kernel}" not implemented for \'{_dtype_name(input)}\': '
            f"{name} expects a floating-point input (float16, bfloat16, float32 or float64), "
            f"but got an input of dtype {input.dtype}; convert it first, e.g. x.float()"
        )


def _trailing(name: str, method: str, kernel: str, input: Tensor, normalized_shape: ShapeLike,
              **params: Optional[Tensor]) -> Tuple[int, ...]:
    _floating(name, input, kernel)
    s = axes.layer_norm_axes(input.shape, normalized_shape, method=method)
    pooled = tuple(input.shape[a] for a in s.axes)   # = normalized_shape
    for param, t in params.items():
        _param(name, param, t, pooled, "the normalized_shape", input.shape, _trailing_words)
    return s.axes


# torch's words for a weight, bias or running statistic of the wrong shape, by the kind of parameter
def _trailing_words(name: str, t: Tensor, expected: Tuple[int, ...], input_shape: Sequence[int]) -> str:
    return (f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
            f"{_size_list(t.shape)} and normalized_shape = {_size_list(expected)}")


def _group_words(name: str, t: Tensor, expected: Tuple[int, ...], input_shape: Sequence[int]) -> str:
    return (f"Expected {name} to be a vector of size equal to the number of channels in input, but got "
            f"{name} of shape {_size_list(t.shape)} and input of shape {_size_list(input_shape)}")


def _channel_words(name: str, t: Tensor, expected: Tuple[int, ...], input_shape: Sequence[int]) -> str:
    return f"{name} should contain {expected[0]} elements not {t.numel()}"


def _param(fn: str, name: str, t: Optional[Tensor], expected: Tuple[int, ...], why: str,
           input_shape: Sequence[int], torch_words, by_numel: bool = False) -> None:
    """Check that a weight, bias or running statistic has the shape the input asks for."""
    if t is None:
        return
    ok = t.numel() == expected[0] if by_numel else tuple(t.shape) == expected
    if not ok:
        raise NormInputError(
            f"{torch_words(name, t, expected, input_shape)}. {fn}: {name} should have shape "
            f"{_fmt(expected)} ({why} of an input of shape {_fmt(input_shape)}), but got {name} of shape "
            f"{_fmt(t.shape)}"
        )


def _channel_params(fn: str, input: Tensor, by_numel: bool, torch_words, **params: Optional[Tensor]) -> None:
    c = input.shape[1]
    for name, t in params.items():
        _param(fn, name, t, (c,), "one value per channel", input.shape, torch_words, by_numel)


def _momentum(fn: str, momentum) -> float:
    if momentum is None or isinstance(momentum, bool) or not isinstance(momentum, (int, float)):
        raise TypeError(
            f"{fn}(): argument 'momentum' (position 7) must be float, not {type(momentum).__name__}: "
            f"{fn}: momentum must be a float, got {momentum!r}. (momentum=None, the cumulative "
            f"average, is a module option: the module passes 1/num_batches_tracked here.)"
        )
    return float(momentum)


def _running_pair(fn: str, running_mean: Optional[Tensor], running_var: Optional[Tensor]) -> None:
    """Normalizing with the batch's statistics updates both running statistics or neither."""
    if (running_mean is None) != (running_var is None):
        raise NormInputError(
            f"running_mean and running_var must either both be None or neither be None: {fn} updates both "
            f"running statistics from the batch, but got running_mean={_given(running_mean)} and "
            f"running_var={_given(running_var)}"
        )


def _running_not_differentiated(fn: str, input: Tensor, weight: Optional[Tensor], bias: Optional[Tensor],
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
