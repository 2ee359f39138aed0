"""Every message normlib raises or warns with, one function per error, in one catalogue.

A function is named for its error, takes the values the message names and returns the text in the
reader's language (:mod:`normlib.messages`: English, or Korean after ``normlib.set_language("ko")``).
Where torch refuses the same thing, the text starts with torch's own English words for it (torch's
tests, and code written against torch, look for them), then normlib's explanation follows; the
explanation is written here twice, ``say(en=..., ko=...)``.

The modules that compute keep only the condition and the exception class at each raise site:
``raise NormInputError(errors.eps_negative(name, eps))``. They reach this module through
``normlib.messages.errors``, which imports it the first time a message is needed: ``import normlib``
does not load it, and a reader of the maths does not read it.

>>> from normlib.messages import speaking
>>> eps_negative("batch_norm", -0.1)
'batch_norm eps must be non-negative, but got -0.1: batch_norm expects eps >= 0, it is added to the variance under a square root'
>>> with speaking("ko"):
...     chunks_not_positive(0)
'chunks는 양의 int여야 하는데, 받은 값은 0입니다.'
"""

from __future__ import annotations

from .axes import _fmt
from .messages import say


def _layouts_ko(dims, layouts: str) -> str:
    """Input layouts in Korean, each with its number of dimensions, for a Korean message.

    >>> _layouts_ko((2, 3), "(N, C) or (N, C, L)")
    '2차원 (N, C) 또는 3차원 (N, C, L)'
    """
    return " 또는 ".join(f"{d}차원 {layout}" for d, layout in zip(dims, layouts.split(" or ")))


def _dtype_name(input) -> str:
    """torch's name of a dtype in its messages: ``'Long'`` for int64, ``'Bool'``, ``'ComplexFloat'``, …"""
    return input.type().rsplit(".", 1)[-1].removesuffix("Tensor")


def _size_list(shape) -> str:
    return str([int(d) for d in shape])


def _given(t) -> str:
    """What was given for a running statistic, in the English messages."""
    return "None" if t is None else "a tensor"


def _received_ko(running_mean, running_var) -> str:
    """What was given for the two running statistics, as a Korean clause: no Korean word inside code."""
    def one(name: str, t) -> str:
        return f"{name}에는 " + ("None을" if t is None else "텐서를")
    return f"{one('running_mean', running_mean)}, {one('running_var', running_var)} 받았습니다."


# --------------------------------------------------------------------------- normlib.messages

def unknown_language(lang) -> str:
    return say(en=f"set_language expects 'en' or 'ko', but got {lang!r}",
               ko=f"set_language에는 'en'이나 'ko'를 주어야 하는데, 받은 값은 {lang!r}입니다.")


# --------------------------------------------------------------------------- normlib.axes

def normalized_shape_bool(normalized_shape) -> str:
    return say(en=f"normalized_shape must be an int or a sequence of ints, got {normalized_shape!r}",
               ko=f"normalized_shape는 int나 int의 시퀀스여야 하는데, 받은 값은 {normalized_shape!r}입니다.")


def normalized_shape_type(normalized_shape) -> str:
    return say(en=f"normalized_shape must be an int or a sequence of ints, got {type(normalized_shape).__name__}",
               ko=f"normalized_shape는 int나 int의 시퀀스여야 하는데, 받은 값은 {type(normalized_shape).__name__} 객체입니다.")


def normalized_shape_items(normalized_shape) -> str:
    return say(en=f"normalized_shape must contain only ints, got {normalized_shape!r}",
               ko=f"normalized_shape에는 int만 들어가야 하는데, 받은 값은 {normalized_shape!r}입니다.")


def normalized_shape_empty() -> str:
    return ("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, "
            "but got normalized_shape = (): " + say(
                en="normalized_shape must name at least one dimension to pool (for example 4 or (2, 4))",
                ko="normalized_shape는 통계를 낼 차원을 하나 이상 가리켜야 합니다(예: 4나 (2, 4))."))


def too_few_dimensions(method: str, shape, at_least: int, layout: str, torch_says: bool) -> str:
    # torch's group_norm says so in these words (its batch_norm and instance_norm fail elsewhere)
    words = f"Expected at least {at_least} dimensions for input tensor but received {len(shape)}: " if torch_says else ""
    return words + say(
        en=f"{method} expects an input of shape {layout} with at least {at_least} dimensions, "
           f"but got an input of shape {_fmt(shape)} ({len(shape)} dimensions)",
        ko=f"{method}의 입력은 차원이 {at_least}개 이상인 {layout} 모양이어야 하는데, "
           f"모양이 {_fmt(shape)}인 {len(shape)}차원 입력을 받았습니다.")


def num_groups_type(num_groups) -> str:
    return say(en=f"num_groups must be a positive int, got {num_groups!r}",
               ko=f"num_groups는 양의 int여야 하는데, 받은 값은 {num_groups!r}입니다.")


def num_groups_zero() -> str:
    return "integer division or modulo by zero: " + say(
        en="group_norm splits the channels into num_groups groups of equal size, so it needs num_groups >= 1, "
           "but got num_groups=0",
        ko="group_norm은 채널을 같은 크기의 그룹 num_groups개로 나누므로 num_groups >= 1이어야 하는데, "
           "num_groups=0을 받았습니다.")


def num_groups_negative(num_groups: int) -> str:
    return f"Expected num groups to be greater than 0, got {num_groups}: " + say(
        en="num_groups is the number of channel groups, a positive int",
        ko="num_groups는 채널 그룹의 개수라 양의 int여야 합니다.")


def channels_not_divisible(shape, num_groups: int) -> str:
    channels = shape[1]
    return (f"Expected number of channels in input to be divisible by num_groups, but got input of shape "
            f"{list(shape)} and num_groups={num_groups}: " + say(
                en=f"group_norm splits the {channels} channels of an input of shape {_fmt(shape)} into "
                   f"num_groups={num_groups} groups of equal size",
                ko=f"group_norm은 채널 {channels}개(입력 모양 {_fmt(shape)})를 같은 크기의 그룹 "
                   f"{num_groups}개로 나누어야 하는데, 나누어떨어지지 않습니다(num_groups={num_groups})."))


def normalized_shape_mismatch(shape, dims, method: str) -> str:
    k = len(dims)
    return (f"Given normalized_shape={list(dims)}, expected input with shape [*, {', '.join(map(str, dims))}], "
            f"but got input of size{list(shape)}: " + say(
                en=f"{method}_norm pools the last {k} dimension(s), whose sizes must equal normalized_shape={_fmt(dims)}, "
                   f"so it expects an input of shape (*, {', '.join(map(str, dims))}); an input of shape "
                   f"{_fmt(shape)} does not end in {_fmt(dims)}.",
                ko=f"{method}_norm은 마지막 차원 {k}개로 통계를 내므로 입력의 끝 차원들이 normalized_shape와 같아야 "
                   f"합니다. normalized_shape={_fmt(dims)}, 곧 (*, {', '.join(map(str, dims))}) 모양의 입력이 "
                   f"필요한데, 모양 {_fmt(shape)}인 입력을 받았습니다. 필요한 끝 차원: {_fmt(dims)}."))


def unknown_method(method, methods) -> str:
    return say(en=f"method must be one of {methods}, got {method!r}",
               ko=f"method는 {methods} 중 하나여야 하는데, 받은 값은 {method!r}입니다.")


def method_needs_normalized_shape(method: str) -> str:
    return say(en=f"method {method!r} needs normalized_shape (for example the last dimension's size)",
               ko=f"method {method!r}에는 normalized_shape가 필요합니다(예: 마지막 차원의 크기).")


def method_takes_no_normalized_shape(method: str, normalized_shape) -> str:
    return say(en=f"method {method!r} takes no normalized_shape, got {normalized_shape!r}",
               ko=f"method {method!r}에는 normalized_shape를 주지 않아야 하는데, 받은 값은 normalized_shape={normalized_shape!r}입니다.")


def group_needs_num_groups() -> str:
    return say(en="method 'group' needs num_groups", ko="method 'group'에는 num_groups가 필요합니다.")


def method_takes_no_num_groups(method: str, num_groups) -> str:
    return say(en=f"method {method!r} takes no num_groups, got {num_groups!r}",
               ko=f"method {method!r}에는 num_groups를 주지 않아야 하는데, 받은 값은 num_groups={num_groups!r}입니다.")


# --------------------------------------------------------------------------- normlib.checks

def eps_not_positive(name: str, eps) -> str:
    return f"{name} eps must be positive during training, but got {eps}: " + say(
        en=f"{name} in training mode expects eps > 0 (a batch whose values are all equal has variance 0)",
        ko=f"학습 모드의 {name}에는 eps > 0이 필요합니다(값이 모두 같은 배치는 분산이 0입니다).")


def eps_negative(name: str, eps) -> str:
    return f"{name} eps must be non-negative, but got {eps}: " + say(
        en=f"{name} expects eps >= 0, it is added to the variance under a square root",
        ko=f"{name}의 eps는 제곱근 안에서 분산에 더해지므로 0 이상이어야 합니다.")


def no_channels(name: str, shape) -> str:
    return say(en=f"{name} needs at least one channel, but got an input of shape {_fmt(shape)}",
               ko=f"{name}에는 채널이 하나 이상 필요한데, 모양 {_fmt(shape)}인 입력을 받았습니다.")


def one_value_per_channel(shape) -> str:
    return (f"Expected more than 1 value per channel when training, got input size {shape}: " + say(
        en=f"in training mode batch_norm computes each channel's variance over its N × spatial values, "
           f"and an input of shape {_fmt(shape)} has 1. Use a larger batch, or evaluation mode, "
           f"which uses the running statistics.",
        ko=f"학습 모드의 batch_norm은 채널마다 N × (공간 위치 수)개의 값으로 분산을 구하는데, 모양 {_fmt(shape)}인 "
           f"입력에는 채널마다 값이 1개뿐입니다. 배치를 키우거나, 이동 통계를 쓰는 평가 모드로 바꾸세요."))


def running_stat_missing_in_eval(name: str, running_mean, running_var) -> str:
    return f"{name} must be defined in evaluation mode: " + say(
        en=f"batch_norm with training=False normalizes with running_mean and running_var, but got "
           f"running_mean={_given(running_mean)} and running_var={_given(running_var)}; pass both, "
           f"or training=True",
        ko=f"training=False인 batch_norm은 running_mean과 running_var로 정규화하는데, "
           f"{_received_ko(running_mean, running_var)} 둘 다 주거나 training=True로 부르세요.")


def one_spatial_element(shape) -> str:
    return f"Expected more than 1 spatial element when training, got input size {shape}: " + say(
        en=f"with use_input_stats=True instance_norm computes each channel's variance over the "
           f"spatial elements of one sample, and an input of shape {_fmt(shape)} has 1; "
           f"expected (N, C, L) or (N, C, H, W, …) with L (or H·W·…) > 1",
        ko=f"use_input_stats=True인 instance_norm은 샘플 하나의 채널마다 공간 원소들로 분산을 구하는데, "
           f"모양 {_fmt(shape)}인 입력에는 채널마다 공간 원소가 1개뿐입니다. L(또는 H·W·…)이 1보다 큰 "
           f"(N, C, L)이나 (N, C, H, W, …)를 주세요.")


def instance_running_stats_missing(running_mean, running_var) -> str:
    return "Expected running_mean and running_var to be defined when use_input_stats is false: " + say(
        en=f"instance_norm with use_input_stats=False normalizes with running_mean and running_var, "
           f"but got running_mean={_given(running_mean)} and running_var={_given(running_var)}; pass "
           f"both, or use_input_stats=True",
        ko=f"use_input_stats=False인 instance_norm은 running_mean과 running_var로 정규화하는데, "
           f"{_received_ko(running_mean, running_var)} 둘 다 주거나 use_input_stats=True로 부르세요.")


def one_value_per_group(shape, num_groups: int) -> str:
    return f"Expected more than 1 value per channel when training, got input size {_size_list(shape)}: " + say(
        en=f"group_norm needs more than one value per group for a batch of one sample, but got an "
           f"input of shape {_fmt(shape)} with num_groups={num_groups}: each group holds 1 value",
        ko=f"샘플이 하나뿐인 배치에서 group_norm은 그룹마다 값이 둘 이상 필요한데, 모양 {_fmt(shape)}인 "
           f"입력과 num_groups={num_groups}에서는 그룹마다 값이 1개뿐입니다.")


def alpha_dtype(alpha) -> str:
    return say(en=f"dyt expects alpha to be a real number or a floating-point tensor, but got a tensor "
                  f"of dtype {alpha.dtype}",
               ko=f"dyt의 alpha는 실수나 부동소수점 텐서여야 하는데 dtype이 {alpha.dtype}인 텐서를 받았습니다.")


def alpha_shape(alpha) -> str:
    return say(en=f"dyt expects alpha to be one scalar (a tensor of shape () or (1,)), but got alpha of shape "
                  f"{_fmt(alpha.shape)}",
               ko=f"dyt의 alpha는 스칼라 하나(모양 ()이나 (1,)인 텐서)여야 하는데 모양 {_fmt(alpha.shape)}인 "
                  f"alpha를 받았습니다.")


def alpha_type(alpha) -> str:
    return say(en=f"dyt expects alpha to be a real number or a one-element tensor, but got "
                  f"{type(alpha).__name__} {alpha!r}",
               ko=f"dyt의 alpha는 실수나 원소가 하나인 텐서여야 하는데, 받은 값은 "
                  f"{type(alpha).__name__} {alpha!r}입니다.")


def weight_bias_shapes(weight, bias) -> str:
    return say(en=f"dyt expects weight and bias of the same shape, but got weight of shape {_fmt(weight.shape)} and "
                  f"bias of shape {_fmt(bias.shape)}",
               ko=f"dyt의 weight와 bias는 모양이 같아야 하는데 모양 {_fmt(weight.shape)}인 weight와 "
                  f"모양 {_fmt(bias.shape)}인 bias를 받았습니다.")


def input_not_tensor(name: str, input) -> str:
    return f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}: " + say(
        en=f"{name} expects a torch.Tensor as input, got {type(input).__name__}",
        ko=f"{name}의 입력은 torch.Tensor여야 하는데, 받은 값은 {type(input).__name__} 객체입니다.")


def input_not_floating(name: str, kernel: str, input) -> str:
    return f'"{kernel}" not implemented for \'{_dtype_name(input)}\': ' + say(
        en=f"{name} expects a floating-point input (float16, bfloat16, float32 or float64), "
           f"but got an input of dtype {input.dtype}; convert it first, e.g. x.float()",
        ko=f"{name}의 입력은 부동소수점(floating-point: float16, bfloat16, float32, float64)이어야 하는데 "
           f"dtype이 {input.dtype}인 입력을 받았습니다. x.float()처럼 먼저 바꾸세요.")


def param_not_tensor(name: str, param: str, t) -> str:
    return f"{name}(): argument '{param}' must be Tensor, not {type(t).__name__}: " + say(
        en=f"{name} expects {param} to be a torch.Tensor or None, but got a {type(t).__name__}; "
           f"convert it first, e.g. torch.tensor(...)",
        ko=f"{name}의 {param}에는 torch.Tensor나 None을 주어야 하는데, 받은 값은 {type(t).__name__} 객체입니다. "
           f"torch.tensor(…)로 먼저 바꾸세요.")


# torch's words for a weight, bias or running statistic of the wrong shape, by the kind of parameter
_TORCH_WORDS = {
    "trailing": lambda name, t, expected, input_shape: (
        f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
        f"{_size_list(t.shape)} and normalized_shape = {_size_list(expected)}"),
    "group": lambda name, t, expected, input_shape: (
        f"Expected {name} to be a vector of size equal to the number of channels in input, but got "
        f"{name} of shape {_size_list(t.shape)} and input of shape {_size_list(input_shape)}"),
    "channel": lambda name, t, expected, input_shape: f"{name} should contain {expected[0]} elements not {t.numel()}",
}


def param_shape(fn: str, name: str, t, expected, input_shape, kind: str) -> str:
    """``kind``: ``"trailing"`` (γ, β of LayerNorm and RMSNorm), ``"group"`` (GroupNorm's, per channel)
    or ``"channel"`` (BatchNorm's and InstanceNorm's γ, β and running statistics)."""
    why = (say(en="the normalized_shape", ko="normalized_shape와 같은 끝 차원들") if kind == "trailing"
           else say(en="one value per channel", ko="채널마다 값 하나"))
    return f"{_TORCH_WORDS[kind](name, t, expected, input_shape)}. {fn}: " + say(
        en=f"{name} should have shape {_fmt(expected)} ({why} of an input of shape {_fmt(input_shape)}), "
           f"but got {name} of shape {_fmt(t.shape)}",
        ko=f"{name}의 모양이 맞지 않습니다. 필요한 모양은 {_fmt(expected)}입니다({why}, 모양 {_fmt(input_shape)}인 "
           f"입력 기준). 받은 {name}의 모양은 {_fmt(t.shape)}입니다.")


def momentum_type(fn: str, momentum) -> str:
    return f"{fn}(): argument 'momentum' (position 7) must be float, not {type(momentum).__name__}: " + say(
        en=f"{fn}: momentum must be a float, got {momentum!r}. (momentum=None, the cumulative "
           f"average, is a module option: the module passes 1/num_batches_tracked here.)",
        ko=f"{fn}의 momentum은 실수여야 하는데, 받은 값은 {momentum!r}입니다. (momentum=None, 곧 누적 평균은 "
           f"모듈의 옵션입니다. 모듈이 여기에 1/num_batches_tracked를 넘깁니다.)")


def running_pair(fn: str, running_mean, running_var) -> str:
    return "running_mean and running_var must either both be None or neither be None: " + say(
        en=f"{fn} updates both running statistics from the batch, but got running_mean={_given(running_mean)} "
           f"and running_var={_given(running_var)}",
        ko=f"{fn}에서는 배치로 이동 통계 둘을 함께 갱신하므로 둘 다 주거나 둘 다 None이어야 하는데, "
           f"{_received_ko(running_mean, running_var)}")


def running_requires_grad(fn: str, name: str) -> str:
    return (f"The function '{fn}' is not differentiable with respect to argument '{name}'. This input "
            f"cannot have requires_grad True: " + say(
                en=f"the running statistics are buffers that training updates, not parameters; "
                   f"pass {name}.detach()",
                ko=f"이동 통계는 학습이 갱신하는 버퍼이지 매개변수가 아닙니다. {name}.detach()를 넘기세요."))


def running_tangent(fn: str, tangents) -> str:
    return ("batch_norm is not differentiable wrt running_mean and running_var, they cannot have forward "
            "grad defined: " + say(
                en=f"{fn} normalizes with the running statistics here, but got a tangent "
                   f"(forward-mode derivative) on {' and '.join(tangents)}",
                ko=f"여기서 {fn}의 정규화에는 이동 통계를 쓰는데, {', '.join(tangents)}에 "
                   f"탄젠트(forward-mode 도함수)가 붙어 있습니다."))


def trailing_dims_param(fn: str, name: str, t, input_shape) -> str:
    n = len(input_shape)
    choices = [_fmt(input_shape[n - j:]) for j in range(1, n + 1)]
    expected = ", ".join(choices) if choices else "none, a 0-dim input has no dimension to scale"
    en = (f"{fn} applies {name} to the trailing dimensions of the input, so {name} should have the shape of the "
          f"last dimensions of an input of shape {_fmt(input_shape)} ({expected}), but got {name} of shape "
          f"{_fmt(t.shape)}")
    if not choices:
        return say(en=en, ko=f"{fn}에서 {name}의 값은 입력의 끝 차원들에 원소별로 적용되는데, 0차원 입력에는 곱할 "
                             f"차원이 없으므로 이 매개변수를 줄 수 없습니다. 받은 {name}의 모양은 {_fmt(t.shape)}입니다.")
    return say(en=en, ko=f"{fn}에서 {name}의 값은 입력의 끝 차원들에 원소별로 적용되므로, {name}의 모양은 입력(모양 "
                         f"{_fmt(input_shape)})의 끝 차원 가운데 하나({' 또는 '.join(choices)})와 같아야 합니다. "
                         f"받은 {name}의 모양은 {_fmt(t.shape)}입니다.")


# --------------------------------------------------------------------------- normlib.modules, normlib.dyt

def group_norm_zero_groups(num_channels: int) -> str:
    return "integer modulo by zero: " + say(
        en=f"GroupNorm splits num_channels={num_channels} into num_groups groups of equal size, so it "
           f"needs num_groups >= 1, but got num_groups=0",
        ko=f"GroupNorm은 채널(num_channels={num_channels})을 같은 크기의 그룹 num_groups개로 나누므로 "
           f"num_groups >= 1이어야 하는데 num_groups=0을 받았습니다.")


def group_norm_not_divisible(num_channels: int, num_groups: int) -> str:
    return f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups}): " + say(
        en=f"GroupNorm splits the channels into groups of equal size, but got num_channels={num_channels} "
           f"and num_groups={num_groups}",
        ko=f"GroupNorm은 채널을 같은 크기의 그룹으로 나누는데, 채널 수가 그룹 수로 나누어떨어지지 않습니다"
           f"(num_channels={num_channels}, num_groups={num_groups}).")


def input_dims(layer: str, allowed, layouts: str, input) -> str:
    expected = " or ".join(f"{d}D" for d in allowed)
    return f"expected {expected} input (got {input.dim()}D input): " + say(
        en=f"{layer} expects a {expected} input {layouts}, but got a "
           f"{input.dim()}D input of shape {tuple(input.shape)}",
        ko=f"{layer}에는 {_layouts_ko(allowed, layouts)} 입력이 필요한데, "
           f"{input.dim()}차원 입력(모양 {tuple(input.shape)})을 받았습니다.")


def instance_channels(layer: str, num_features: int, layouts: str, dim: int, input) -> str:
    layout = layouts.split(" or ")[0 if dim == 0 else -1]     # the layout the input was taken as: channels at dim
    return (f"expected input's size at dim={dim} to match num_features ({num_features}), but "
            f"got: {input.size(dim)}. " + say(
                en=f"{layer}({num_features}) has one γ and β per channel: it expects "
                   f"{num_features} channels at dim {dim} of a {layout} input, but got an "
                   f"input of shape {tuple(input.shape)}",
                ko=f"{layer}({num_features})에는 채널마다 γ와 β가 하나씩 있으므로 채널 "
                   f"{num_features}개가 {layout} 입력의 dim {dim}에 "
                   f"있어야 하는데, 모양 {tuple(input.shape)}인 입력을 받았습니다."))


def instance_channels_warning(layer: str, num_features: int, dim: int, input) -> str:
    return (f"input's size at dim={dim} does not match num_features. You can silence this warning by "
            f"not passing in num_features, which is not used because affine=False. " + say(
                en=f"{layer}({num_features}) got an input of shape {tuple(input.shape)}. With "
                   f"affine=False num_features sizes no γ or β (only the running statistics, if tracked), so every "
                   f"channel is normalized; set num_features={input.size(dim)} to silence this warning",
                ko=f"{layer}({num_features})의 num_features와 입력(모양 {tuple(input.shape)})의 "
                   f"채널 수가 다릅니다. affine=False에서 num_features는 γ, β의 크기를 정하지 않으므로(이동 통계를 "
                   f"둘 때 그 크기만 정합니다) 모든 채널이 정규화됩니다. 이 경고를 없애려면 "
                   f"num_features를 채널 수와 같게 만드세요(num_features={input.size(dim)})."))


def alpha_init_type(alpha_init) -> str:
    return say(en=f"DyT expects alpha_init to be a real number (the paper uses 0.5), but got "
                  f"{type(alpha_init).__name__} {alpha_init!r}",
               ko=f"DyT의 alpha_init은 실수여야 하는데(논문은 0.5), 받은 값은 {type(alpha_init).__name__} "
                  f"{alpha_init!r}입니다.")


# --------------------------------------------------------------------------- normlib.fold

def _kinds(kinds: tuple) -> str:
    return ", ".join(f"torch.nn.{k.__name__}" for k in kinds)


def fold_layer_type(fn: str, layer, kinds: tuple) -> str:
    return f"{fn}: " + say(
        en=f"the layer before the BatchNorm should be one of {_kinds(kinds)}, but got {type(layer).__name__}",
        ko=f"BatchNorm 앞의 층은 {_kinds(kinds)} 중 하나여야 하는데, 받은 층은 {type(layer).__name__}입니다.")


def fold_lazy_layer(fn: str, layer) -> str:
    return f"{fn}: " + say(
        en=f"the {type(layer).__name__} has no weight yet (a lazy layer before its first call); "
           f"expected a layer with its weight, run one batch through it first",
        ko=f"{type(layer).__name__}에 아직 가중치가 없습니다(첫 호출 전의 lazy 층). 가중치가 있는 층이 "
           f"필요하니 먼저 배치 하나를 통과시키세요.")


def fold_not_batch_norm(fn: str, bn) -> str:
    return f"{fn}: " + say(
        en=f"expected a BatchNorm (torch.nn.BatchNorm1d/2d/3d or normlib's) after the layer, but got "
           f"{type(bn).__name__}; only BatchNorm in evaluation mode is a fixed affine map per channel",
        ko=f"층 뒤에는 BatchNorm(torch.nn.BatchNorm1d/2d/3d나 normlib의 것)이 와야 하는데, 받은 층은 "
           f"{type(bn).__name__}입니다. 평가 모드의 BatchNorm만 채널마다 고정된 아핀 변환입니다.")


def fold_training(fn: str) -> str:
    return f"{fn}: " + say(
        en="expected a BatchNorm in evaluation mode, but got one in training mode: training mode "
           "normalizes with each batch's own mean and variance, which no fixed weight and bias can "
           "reproduce. Call bn.eval() first; the fold uses the running statistics",
        ko="평가 모드의 BatchNorm이 필요한데 학습 모드인 것을 받았습니다. 학습 모드는 배치마다 그 배치의 "
           "평균과 분산으로 정규화하므로, 고정된 가중치와 편향으로는 재현할 수 없습니다. 먼저 bn.eval()을 "
           "부르세요. 접기는 이동 통계를 씁니다.")


def fold_no_running_stats(fn: str, bn) -> str:
    return f"{fn}: " + say(
        en=f"expected a BatchNorm with running statistics, but got {type(bn).__name__} with "
           f"track_running_stats=False, which normalizes every batch with its own statistics even in "
           f"evaluation mode; build it with track_running_stats=True and train it",
        ko=f"이동 통계가 있는 BatchNorm이 필요한데, 받은 층은 track_running_stats=False인 {type(bn).__name__}"
           f"입니다. 이 층은 평가 모드에서도 배치마다 그 배치의 통계로 정규화합니다. "
           f"track_running_stats=True로 만들어 학습시키세요.")


def fold_channels(fn: str, channels: int, what: str, bn) -> str:
    return f"{fn}: " + say(
        en=f"the BatchNorm should normalize the layer's {channels} output channels ({what}={channels}), "
           f"but got a {type(bn).__name__} with num_features={bn.num_features}",
        ko=f"BatchNorm은 층의 출력 채널 {channels}개({what}={channels})를 정규화해야 하는데, "
           f"받은 층은 {type(bn).__name__}(num_features={bn.num_features})입니다.")


# --------------------------------------------------------------------------- normlib.distributed

def sync_one_value(world: int, shape) -> str:
    return say(
        en=f"sync_batch_norm in training mode needs more than 1 value per channel over all {world} processes, "
           f"but they hold 1 in all (this process's input has shape {_fmt(shape)})",
        ko=f"학습 모드의 sync_batch_norm에는 채널마다 값이 2개 이상 필요한데(프로세스 {world}개를 통틀어), "
           f"모두 합쳐 1개뿐입니다(이 프로세스의 입력 모양은 {_fmt(shape)}).")


def sync_input_dims(input) -> str:
    return say(
        en=f"SyncBatchNorm expects an input of at least 2 dimensions (N, C, *), but got a {input.dim()}D "
           f"input of shape {_fmt(input.shape)}",
        ko=f"SyncBatchNorm의 입력은 차원이 2개 이상인 (N, C, *) 모양이어야 하는데, {input.dim()}차원 입력(모양 "
           f"{_fmt(input.shape)})을 받았습니다.")


def sync_no_channels(shape) -> str:
    return say(
        en=f"SyncBatchNorm needs at least one channel (dim 1), but got an input of shape {_fmt(shape)}",
        ko=f"SyncBatchNorm에는 채널(dim 1)이 하나 이상 필요한데, 모양 {_fmt(shape)}인 입력을 받았습니다.")


def convert_not_module(module) -> str:
    return say(en=f"convert_sync_batchnorm expects a torch.nn.Module, got {type(module).__name__}",
               ko=f"convert_sync_batchnorm에는 torch.nn.Module을 주어야 하는데, 받은 값은 "
                  f"{type(module).__name__} 객체입니다.")


# --------------------------------------------------------------------------- normlib.stats

def merge_all_empty() -> str:
    return say(en="merge_all needs at least one Moments, got an empty iterable",
               ko="merge_all에는 Moments가 하나 이상 필요한데 빈 iterable을 받았습니다.")


def chunks_not_positive(chunks) -> str:
    return say(en=f"chunks must be a positive int, got {chunks}",
               ko=f"chunks는 양의 int여야 하는데, 받은 값은 {chunks}입니다.")
