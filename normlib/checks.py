"""Every argument check of the normalization functions, in one place (the shape rules themselves are
:mod:`normlib.axes`', which the checks call).

:mod:`normlib.functional`, :mod:`normlib.autograd` and :mod:`normlib.distributed` call one check
per function, once, before any arithmetic: ``checks.layer_norm(...)`` for ``layer_norm`` and so on.
Each check raises or returns what the arithmetic needs (the axes to pool), so the functions
themselves read as their formulas.

Error messages start with the words torch 2.13 uses for the same error (torch's own tests, and code
written against torch, look for them); normlib's fuller explanation follows. Their texts are in
:mod:`normlib.errors`: here, each check is a condition and the exception it raises.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence, Tuple

import torch
import torch.autograd.forward_ad as fwAD
from torch import Tensor

from . import axes
from .axes import NormInputError, ShapeLike, Sharing
from .messages import errors

__all__ = ["NormDtypeError", "layer_norm", "rms_norm", "batch_norm", "batch_norm_eval", "instance_norm",
           "group_norm", "dyt"]


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
    _floating(name, input, name, running_mean=running_mean, running_var=running_var, weight=weight, bias=bias)
    if training:
        _running_pair(name, running_mean, running_var)
    _running_not_differentiated(name, input, weight, bias, running_mean, running_var, not training)
    momentum = _momentum(name, momentum)
    # PyTorch (2.13) refuses these eps values; so does normlib.
    if training and eps <= 0:
        raise NormInputError(errors.eps_not_positive(name, eps))
    if eps < 0:
        raise NormInputError(errors.eps_negative(name, eps))
    if local_count and input.dim() == 1 and input.numel() == 0:
        return None, momentum
    s = axes.batch_norm_axes(input.shape)
    if not local_count and input.shape[1] == 0:
        raise NormInputError(errors.no_channels(name, input.shape))
    _channel_params(name, input, True, "channel", running_mean=running_mean, running_var=running_var,
                    weight=weight, bias=bias)
    if training and local_count and s.count == 1:
        raise NormInputError(errors.one_value_per_channel(input.shape))
    if not training:
        batch_norm_eval(running_mean, running_var)
    return s, momentum


def batch_norm_eval(running_mean: Optional[Tensor], running_var: Optional[Tensor]) -> None:
    """Evaluation mode normalizes with the running statistics: both must be given."""
    for name, t in (("running_mean", running_mean), ("running_var", running_var)):
        if t is None:
            raise NormInputError(errors.running_stat_missing_in_eval(name, running_mean, running_var))


def instance_norm(input: Tensor, running_mean: Optional[Tensor], running_var: Optional[Tensor],
                  weight: Optional[Tensor], bias: Optional[Tensor], use_input_stats: bool,
                  momentum) -> Tuple[Sharing, float]:
    """The checks of ``instance_norm``; returns the :class:`~normlib.axes.Sharing` and ``momentum`` as a float."""
    _floating("instance_norm", input, "batch_norm", running_mean=running_mean, running_var=running_var,
              weight=weight, bias=bias)
    if use_input_stats:
        _running_pair("instance_norm", running_mean, running_var)
        if math.prod(input.shape[2:]) == 1:
            raise NormInputError(errors.one_spatial_element(input.shape))
    s = axes.instance_norm_axes(input.shape)
    _channel_params("instance_norm", input, True, "channel", running_mean=running_mean, running_var=running_var,
                    weight=weight, bias=bias)
    _running_not_differentiated("instance_norm", input, weight, bias, running_mean, running_var,
                                not use_input_stats)
    momentum = _momentum("instance_norm", momentum)
    if not use_input_stats and (running_mean is None or running_var is None):
        raise NormInputError(errors.instance_running_stats_missing(running_mean, running_var))
    return s, momentum


def group_norm(input: Tensor, num_groups: int, weight: Optional[Tensor], bias: Optional[Tensor]) -> Sharing:
    """The checks of ``group_norm``; returns the sharing (its ``view_shape`` splits the channels into groups)."""
    _floating("group_norm", input, "GroupNormKernelImpl", weight=weight, bias=bias)
    s = axes.group_norm_axes(input.shape, num_groups)
    _channel_params("group_norm", input, False, "group", weight=weight, bias=bias)
    if input.shape[0] * s.view_shape[2] * math.prod(input.shape[2:]) == 1:
        # PyTorch refuses a single sample whose groups hold one value each (its variance is 0/0 … or 0).
        raise NormInputError(errors.one_value_per_group(input.shape, num_groups))
    return s


def dyt(input: Tensor, alpha, weight: Optional[Tensor], bias: Optional[Tensor]):
    """The checks of ``dyt``; returns α as the scalar the formula multiplies by: a float, or a 0-dim view
    of a one-element tensor (a shape-``(1,)`` α, as the layer holds it, must not add an axis to the output).

    γ and β must each have the shape of the input's last dimensions, and the same shape as each other.
    """
    _floating("dyt", input, "dyt", weight=weight, bias=bias)
    if isinstance(alpha, Tensor):
        if not alpha.is_floating_point():
            raise TypeError(errors.alpha_dtype(alpha))
        if alpha.dim() > 1 or alpha.numel() != 1:
            raise NormInputError(errors.alpha_shape(alpha))
        alpha = alpha.reshape(())
    elif isinstance(alpha, (int, float)) and not isinstance(alpha, bool):
        alpha = float(alpha)
    else:
        raise TypeError(errors.alpha_type(alpha))
    for name, t in (("weight", weight), ("bias", bias)):
        _trailing_dims_param("dyt", name, t, input.shape)
    if weight is not None and bias is not None and weight.shape != bias.shape:
        raise NormInputError(errors.weight_bias_shapes(weight, bias))
    return alpha


# --------------------------------------------------------------------------- the pieces

def _floating(name: str, input: Tensor, kernel: str, **params) -> None:
    """A tensor of a floating dtype; ``kernel`` is the name torch's message gives the refusing kernel.
    Each of ``params`` (γ, β, running statistics) is a tensor or ``None``: a list, say, is refused here
    with torch's words, before any check reads its ``.shape``."""
    if not isinstance(input, Tensor):
        raise NormDtypeError(errors.input_not_tensor(name, input))
    if not input.is_floating_point():
        raise NormDtypeError(errors.input_not_floating(name, kernel, input))
    for param, t in params.items():
        if t is not None and not isinstance(t, Tensor):
            raise TypeError(errors.param_not_tensor(name, param, t))

def _trailing(name: str, method: str, kernel: str, input: Tensor, normalized_shape: ShapeLike,
              **params: Optional[Tensor]) -> Tuple[int, ...]:
    _floating(name, input, kernel, **params)
    s = axes.layer_norm_axes(input.shape, normalized_shape, method=method)
    pooled = tuple(input.shape[a] for a in s.axes)   # = normalized_shape
    for param, t in params.items():
        _param(name, param, t, pooled, input.shape, "trailing")
    return s.axes


def _param(fn: str, name: str, t: Optional[Tensor], expected: Tuple[int, ...], input_shape: Sequence[int],
           kind: str, by_numel: bool = False) -> None:
    """Check that a weight, bias or running statistic has the shape the input asks for; ``kind``
    (``"trailing"``, ``"group"``, ``"channel"``) picks torch's words for the error."""
    if t is None:
        return
    ok = t.numel() == expected[0] if by_numel else tuple(t.shape) == expected
    if not ok:
        raise NormInputError(errors.param_shape(fn, name, t, expected, input_shape, kind))


def _channel_params(fn: str, input: Tensor, by_numel: bool, kind: str, **params: Optional[Tensor]) -> None:
    for name, t in params.items():
        _param(fn, name, t, (input.shape[1],), input.shape, kind, by_numel)


def _momentum(fn: str, momentum) -> float:
    if momentum is None or isinstance(momentum, bool) or not isinstance(momentum, (int, float)):
        raise TypeError(errors.momentum_type(fn, momentum))
    return float(momentum)


def _running_pair(fn: str, running_mean: Optional[Tensor], running_var: Optional[Tensor]) -> None:
    """Normalizing with the batch's statistics updates both running statistics or neither."""
    if (running_mean is None) != (running_var is None):
        raise NormInputError(errors.running_pair(fn, running_mean, running_var))

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
                raise NormInputError(errors.running_requires_grad(fn, name))
    if uses_running:
        # (unpack_dual gives no tangent outside forward-mode AD)
        has_tangent = lambda t: t is not None and fwAD.unpack_dual(t).tangent is not None
        tangents = [name for name, t in stats if has_tangent(t)]
        if tangents and any(has_tangent(t) for t in (input, weight, bias)):
            raise NormInputError(errors.running_tangent(fn, tangents))

def _trailing_dims_param(fn: str, name: str, t: Optional[Tensor], input_shape: Sequence[int]) -> None:
    """γ or β of an elementwise layer: ``None``, or a tensor (:func:`_floating` refused anything else)
    with the shape of the input's last dims."""
    if t is None:
        return
    n, k = len(input_shape), t.dim()
    if 0 < k <= n and tuple(input_shape[n - k:]) == tuple(t.shape):
        return
    raise NormInputError(errors.trailing_dims_param(fn, name, t, input_shape))
