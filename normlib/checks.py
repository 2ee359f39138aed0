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
from .messages import say

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
        raise NormInputError(f"{name} eps must be positive during training, but got {eps}: " + say(
            en=f"{name} in training mode expects eps > 0 (a batch whose values are all equal has variance 0)",
            ko=f"학습 모드의 {name}에는 eps > 0이 필요합니다(값이 모두 같은 배치는 분산이 0입니다)."))
    if eps < 0:
        raise NormInputError(f"{name} eps must be non-negative, but got {eps}: " + say(
            en=f"{name} expects eps >= 0, it is added to the variance under a square root",
            ko=f"{name}의 eps는 제곱근 안에서 분산에 더해지므로 0 이상이어야 합니다."))
    if local_count and input.dim() == 1 and input.numel() == 0:
        return None, momentum
    s = axes.batch_norm_axes(input.shape)
    if not local_count and input.shape[1] == 0:
        raise NormInputError(say(en=f"{name} needs at least one channel, but got an input of shape {_fmt(input.shape)}",
                                 ko=f"{name}에는 채널이 하나 이상 필요한데, 모양 {_fmt(input.shape)}인 입력을 받았습니다."))
    _channel_params(name, input, True, _channel_words, running_mean=running_mean, running_var=running_var,
                    weight=weight, bias=bias)
    if training and local_count and s.count == 1:
        raise NormInputError(
            f"Expected more than 1 value per channel when training, got input size {input.shape}: " + say(
                en=f"in training mode batch_norm computes each channel's variance over its N × spatial values, "
                   f"and an input of shape {_fmt(input.shape)} has 1. Use a larger batch, or evaluation mode, "
                   f"which uses the running statistics.",
                ko=f"학습 모드의 batch_norm은 채널마다 N × (공간 위치 수)개의 값으로 분산을 구하는데, 모양 {_fmt(input.shape)}인 "
                   f"입력에는 채널마다 값이 1개뿐입니다. 배치를 키우거나, 이동 통계를 쓰는 평가 모드로 바꾸세요."))
    if not training:
        batch_norm_eval(running_mean, running_var)
    return s, momentum


def batch_norm_eval(running_mean: Optional[Tensor], running_var: Optional[Tensor]) -> None:
    """Evaluation mode normalizes with the running statistics: both must be given."""
    for name, t in (("running_mean", running_mean), ("running_var", running_var)):
        if t is None:
            raise NormInputError(
                f"{name} must be defined in evaluation mode: " + say(
                    en=f"batch_norm with training=False normalizes with running_mean and running_var, but got "
                       f"running_mean={_given(running_mean)} and running_var={_given(running_var)}; pass both, "
                       f"or training=True",
                    ko=f"training=False인 batch_norm은 running_mean과 running_var로 정규화하는데, 받은 값은 "
                       f"running_mean={_given(running_mean)}, running_var={_given(running_var)}입니다. "
                       f"둘 다 주거나 training=True로 부르세요."))


def instance_norm(input: Tensor, running_mean: Optional[Tensor], running_var: Optional[Tensor],
                  weight: Optional[Tensor], bias: Optional[Tensor], use_input_stats: bool,
                  momentum) -> Tuple[Sharing, float]:
    """The checks of ``instance_norm``; returns the :class:`~normlib.axes.Sharing` and ``momentum`` as a float."""
    _floating("instance_norm", input, "batch_norm", running_mean=running_mean, running_var=running_var,
              weight=weight, bias=bias)
    if use_input_stats:
        _running_pair("instance_norm", running_mean, running_var)
        if math.prod(input.shape[2:]) == 1:
            raise NormInputError(
                f"Expected more than 1 spatial element when training, got input size {input.shape}: " + say(
                    en=f"with use_input_stats=True instance_norm computes each channel's variance over the "
                       f"spatial elements of one sample, and an input of shape {_fmt(input.shape)} has 1; "
                       f"expected (N, C, L) or (N, C, H, W, …) with L (or H·W·…) > 1",
                    ko=f"use_input_stats=True인 instance_norm은 샘플 하나의 채널마다 공간 원소들로 분산을 구하는데, "
                       f"모양 {_fmt(input.shape)}인 입력에는 1개뿐입니다. L(또는 H·W·…)이 1보다 큰 "
                       f"(N, C, L)이나 (N, C, H, W, …)를 주세요."))
    s = axes.instance_norm_axes(input.shape)
    _channel_params("instance_norm", input, True, _channel_words, running_mean=running_mean, running_var=running_var,
                    weight=weight, bias=bias)
    _running_not_differentiated("instance_norm", input, weight, bias, running_mean, running_var,
                                not use_input_stats)
    momentum = _momentum("instance_norm", momentum)
    if not use_input_stats and (running_mean is None or running_var is None):
        raise NormInputError(
            "Expected running_mean and running_var to be defined when use_input_stats is false: " + say(
                en=f"instance_norm with use_input_stats=False normalizes with running_mean and running_var, "
                   f"but got running_mean={_given(running_mean)} and running_var={_given(running_var)}; pass "
                   f"both, or use_input_stats=True",
                ko=f"use_input_stats=False인 instance_norm은 running_mean과 running_var로 정규화하는데, 받은 값은 "
                   f"running_mean={_given(running_mean)}, running_var={_given(running_var)}입니다. "
                   f"둘 다 주거나 use_input_stats=True로 부르세요."))
    return s, momentum


def group_norm(input: Tensor, num_groups: int, weight: Optional[Tensor], bias: Optional[Tensor]) -> Sharing:
    """The checks of ``group_norm``; returns the sharing (its ``view_shape`` splits the channels into groups)."""
    _floating("group_norm", input, "GroupNormKernelImpl", weight=weight, bias=bias)
    s = axes.group_norm_axes(input.shape, num_groups)
    _channel_params("group_norm", input, False, _group_words, weight=weight, bias=bias)
    if input.shape[0] * s.view_shape[2] * math.prod(input.shape[2:]) == 1:
        # PyTorch refuses a single sample whose groups hold one value each (its variance is 0/0 … or 0).
        raise NormInputError(
            f"Expected more than 1 value per channel when training, got input size {_size_list(input.shape)}: " + say(
                en=f"group_norm needs more than one value per group for a batch of one sample, but got an "
                   f"input of shape {_fmt(input.shape)} with num_groups={num_groups}: each group holds 1 value",
                ko=f"샘플이 하나뿐인 배치에서 group_norm은 그룹마다 값이 둘 이상 필요한데, 모양 {_fmt(input.shape)}인 "
                   f"입력과 num_groups={num_groups}에서는 그룹마다 값이 1개뿐입니다."))
    return s


def dyt(input: Tensor, alpha, weight: Optional[Tensor], bias: Optional[Tensor]):
    """The checks of ``dyt``; returns α as the scalar the formula multiplies by: a float, or a 0-dim view
    of a one-element tensor (a shape-``(1,)`` α, as the layer holds it, must not add an axis to the output).

    γ and β must each have the shape of the input's last dimensions, and the same shape as each other.
    """
    _floating("dyt", input, "dyt", weight=weight, bias=bias)
    if isinstance(alpha, Tensor):
        if not alpha.is_floating_point():
            raise TypeError(say(en=f"dyt expects alpha to be a real number or a floating-point tensor, but got a tensor "
                                   f"of dtype {alpha.dtype}",
                                ko=f"dyt의 alpha는 실수나 부동소수점 텐서여야 하는데 dtype이 {alpha.dtype}인 텐서를 받았습니다."))
        if alpha.dim() > 1 or alpha.numel() != 1:
            raise NormInputError(say(
                en=f"dyt expects alpha to be one scalar (a tensor of shape () or (1,)), but got alpha of shape "
                   f"{_fmt(alpha.shape)}",
                ko=f"dyt의 alpha는 스칼라 하나(모양 ()이나 (1,)인 텐서)여야 하는데 모양 {_fmt(alpha.shape)}인 "
                   f"alpha를 받았습니다."))
        alpha = alpha.reshape(())
    elif isinstance(alpha, (int, float)) and not isinstance(alpha, bool):
        alpha = float(alpha)
    else:
        raise TypeError(say(en=f"dyt expects alpha to be a real number or a one-element tensor, but got "
                               f"{type(alpha).__name__} {alpha!r}",
                            ko=f"dyt의 alpha는 실수나 원소가 하나인 텐서여야 하는데, 받은 값은 "
                               f"{type(alpha).__name__} {alpha!r}입니다."))
    for name, t in (("weight", weight), ("bias", bias)):
        _trailing_dims_param("dyt", name, t, input.shape)
    if weight is not None and bias is not None and weight.shape != bias.shape:
        raise NormInputError(say(
            en=f"dyt expects weight and bias of the same shape, but got weight of shape {_fmt(weight.shape)} and "
               f"bias of shape {_fmt(bias.shape)}",
            ko=f"dyt의 weight와 bias는 모양이 같아야 하는데 모양 {_fmt(weight.shape)}인 weight와 "
               f"모양 {_fmt(bias.shape)}인 bias를 받았습니다."))
    return alpha


# --------------------------------------------------------------------------- the pieces

def _dtype_name(input: Tensor) -> str:
    """torch's name of a dtype in its messages: ``'Long'`` for int64, ``'Bool'``, ``'ComplexFloat'``, …"""
    return input.type().rsplit(".", 1)[-1].removesuffix("Tensor")


def _size_list(shape) -> str:
    return str([int(d) for d in shape])


def _given(t: Optional[Tensor]) -> str:
    return "None" if t is None else say(en="a tensor", ko="텐서")


def _floating(name: str, input: Tensor, kernel: str, **params) -> None:
    """A tensor of a floating dtype; ``kernel`` is the name torch's message gives the refusing kernel.
    Each of ``params`` (γ, β, running statistics) is a tensor or ``None``: a list, say, is refused here
    with torch's words, before any check reads its ``.shape``."""
    if not isinstance(input, Tensor):
        raise NormDtypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}: " + say(
            en=f"{name} expects a torch.Tensor as input, got {type(input).__name__}",
            ko=f"{name}의 입력은 torch.Tensor여야 하는데, 받은 값은 {type(input).__name__} 객체입니다."))
    if not input.is_floating_point():
        raise NormDtypeError(
            f'"{kernel}" not implemented for \'{_dtype_name(input)}\': ' + say(
                en=f"{name} expects a floating-point input (float16, bfloat16, float32 or float64), "
                   f"but got an input of dtype {input.dtype}; convert it first, e.g. x.float()",
                ko=f"{name}의 입력은 부동소수점(floating-point: float16, bfloat16, float32, float64)이어야 하는데 "
                   f"dtype이 {input.dtype}인 입력을 받았습니다. x.float()처럼 먼저 바꾸세요."))
    for param, t in params.items():
        if t is not None and not isinstance(t, Tensor):
            raise TypeError(f"{name}(): argument '{param}' must be Tensor, not {type(t).__name__}: " + say(
                en=f"{name} expects {param} to be a torch.Tensor or None, but got a {type(t).__name__}; "
                   f"convert it first, e.g. torch.tensor(...)",
                ko=f"{name}의 {param}에는 torch.Tensor나 None을 주어야 하는데, 받은 값은 {type(t).__name__} 객체입니다. "
                   f"torch.tensor(…)로 먼저 바꾸세요."))


def _trailing(name: str, method: str, kernel: str, input: Tensor, normalized_shape: ShapeLike,
              **params: Optional[Tensor]) -> Tuple[int, ...]:
    _floating(name, input, kernel, **params)
    s = axes.layer_norm_axes(input.shape, normalized_shape, method=method)
    pooled = tuple(input.shape[a] for a in s.axes)   # = normalized_shape
    for param, t in params.items():
        _param(name, param, t, pooled, say(en="the normalized_shape", ko="normalized_shape와 같은 끝 차원들"), input.shape,
               _trailing_words)
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
            f"{torch_words(name, t, expected, input_shape)}. {fn}: " + say(
                en=f"{name} should have shape {_fmt(expected)} ({why} of an input of shape {_fmt(input_shape)}), "
                   f"but got {name} of shape {_fmt(t.shape)}",
                ko=f"{name}의 모양이 맞지 않습니다. 필요한 모양은 {_fmt(expected)}입니다({why}, 모양 {_fmt(input_shape)}인 "
                   f"입력 기준). 받은 {name}의 모양은 {_fmt(t.shape)}입니다."))


def _channel_params(fn: str, input: Tensor, by_numel: bool, torch_words, **params: Optional[Tensor]) -> None:
    c = input.shape[1]
    for name, t in params.items():
        _param(fn, name, t, (c,), say(en="one value per channel", ko="채널마다 값 하나"), input.shape, torch_words,
               by_numel)


def _momentum(fn: str, momentum) -> float:
    if momentum is None or isinstance(momentum, bool) or not isinstance(momentum, (int, float)):
        raise TypeError(
            f"{fn}(): argument 'momentum' (position 7) must be float, not {type(momentum).__name__}: " + say(
                en=f"{fn}: momentum must be a float, got {momentum!r}. (momentum=None, the cumulative "
                   f"average, is a module option: the module passes 1/num_batches_tracked here.)",
                ko=f"{fn}의 momentum은 실수여야 하는데, 받은 값은 {momentum!r}입니다. (momentum=None, 곧 누적 평균은 "
                   f"모듈의 옵션입니다. 모듈이 여기에 1/num_batches_tracked를 넘깁니다.)"))
    return float(momentum)


def _running_pair(fn: str, running_mean: Optional[Tensor], running_var: Optional[Tensor]) -> None:
    """Normalizing with the batch's statistics updates both running statistics or neither."""
    if (running_mean is None) != (running_var is None):
        raise NormInputError(
            "running_mean and running_var must either both be None or neither be None: " + say(
                en=f"{fn} updates both running statistics from the batch, but got running_mean={_given(running_mean)} "
                   f"and running_var={_given(running_var)}",
                ko=f"{fn}에서는 배치로 이동 통계 둘을 함께 갱신하므로 둘 다 주거나 둘 다 None이어야 하는데, 받은 값은 "
                   f"running_mean={_given(running_mean)}, running_var={_given(running_var)}입니다."))


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
                    f"cannot have requires_grad True: " + say(
                        en=f"the running statistics are buffers that training updates, not parameters; "
                           f"pass {name}.detach()",
                        ko=f"이동 통계는 학습이 갱신하는 버퍼이지 매개변수가 아닙니다. {name}.detach()를 넘기세요."))
    if uses_running:
        # (unpack_dual gives no tangent outside forward-mode AD)
        has_tangent = lambda t: t is not None and fwAD.unpack_dual(t).tangent is not None
        tangents = [name for name, t in stats if has_tangent(t)]
        if tangents and any(has_tangent(t) for t in (input, weight, bias)):
            raise NormInputError(
                "batch_norm is not differentiable wrt running_mean and running_var, they cannot have forward "
                "grad defined: " + say(
                    en=f"{fn} normalizes with the running statistics here, but got a tangent "
                       f"(forward-mode derivative) on {' and '.join(tangents)}",
                    ko=f"여기서 {fn}의 정규화에는 이동 통계를 쓰는데, {', '.join(tangents)}에 "
                       f"탄젠트(forward-mode 도함수)가 붙어 있습니다."))


def _trailing_dims_param(fn: str, name: str, t: Optional[Tensor], input_shape: Sequence[int]) -> None:
    """γ or β of an elementwise layer: ``None``, or a tensor (:func:`_floating` refused anything else)
    with the shape of the input's last dims."""
    if t is None:
        return
    n, k = len(input_shape), t.dim()
    if 0 < k <= n and tuple(input_shape[n - k:]) == tuple(t.shape):
        return
    choices = [_fmt(input_shape[n - j:]) for j in range(1, n + 1)]
    expected = ", ".join(choices) if choices else say(en="none, a 0-dim input has no dimension to scale",
                                                      ko="없음(0차원 입력에는 곱할 차원이 없습니다)")
    raise NormInputError(say(
        en=f"{fn} applies {name} to the trailing dimensions of the input, so {name} should have the shape of the "
           f"last dimensions of an input of shape {_fmt(input_shape)} ({expected}), but got {name} of shape "
           f"{_fmt(t.shape)}",
        ko=f"{fn}에서 {name}의 값은 입력의 끝 차원들에 원소별로 적용되므로, {name}의 모양은 모양 {_fmt(input_shape)}인 "
           f"입력의 끝 차원들({expected}) 가운데 하나와 같아야 합니다. 받은 {name}의 모양은 {_fmt(t.shape)}입니다."))
