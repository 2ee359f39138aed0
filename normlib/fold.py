"""Folding a BatchNorm into the layer before it, for inference.

In evaluation mode a BatchNorm is a fixed affine map per channel: it normalizes with the running
statistics μ and σ², which no longer change, so for each output channel c of the layer before it

    BN(W·x + b) = γ · (W·x + b − μ) / √(σ² + ε) + β = W'·x + b'

with s = γ / √(σ² + ε) (one number per channel), W' = s · W (row c of W, or the c-th filter of a
convolution, times s_c) and b' = s · (b − μ) + β. One layer then does the work of two.

The functions return a new layer of the layer's own type (a copy: the inputs are not modified) and
refuse a BatchNorm in training mode, which normalizes with each batch's own statistics, a BatchNorm
without running statistics, and a channel count that does not match. The new weight and bias are
computed in float64 (float32 on a device without float64, such as MPS) and rounded once to the
layer's dtype, on the layer's device.

>>> import torch
>>> _ = torch.manual_seed(0)
>>> conv, bn = torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4)
>>> _ = bn.running_mean.uniform_(-1, 1), bn.running_var.uniform_(0.5, 2), bn.eval()
>>> x = torch.randn(2, 3, 5, 5)
>>> torch.allclose(fold_batch_norm(conv, bn)(x), bn(conv(x)), atol=1e-6)
True
"""

from __future__ import annotations

import copy
from typing import TypeVar

import torch
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm as _TorchBatchNorm

from . import modules
from .axes import NormInputError
from .messages import say

__all__ = ["fold_batch_norm", "fold_conv_bn", "fold_linear_bn"]

CONVS = (nn.Conv1d, nn.Conv2d, nn.Conv3d)
LAYERS = (*CONVS, nn.Linear)
BATCH_NORMS = (_TorchBatchNorm, modules._BatchNorm)   # torch.nn's BatchNorm1d/2d/3d (SyncBatchNorm too), normlib's

Layer = TypeVar("Layer", nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.Linear)


def fold_batch_norm(layer: Layer, bn: nn.Module) -> Layer:
    """A new ``layer`` that computes ``bn(layer(x))`` of an evaluation-mode BatchNorm in one step
    (chapter 10 derives it and checks it on the book's table).

    ``layer`` is a ``torch.nn.Conv1d``, ``Conv2d`` or ``Conv3d`` (any ``groups``, ``stride``,
    ``padding``, ``dilation``, with or without a bias) or a ``torch.nn.Linear`` (whose output
    ``(N, out_features)`` the ``BatchNorm1d`` normalizes); ``bn`` is the ``torch.nn`` or normlib
    BatchNorm that follows it, in evaluation mode (``bn.eval()``), with running statistics.

    .. math::

        W' = \\frac{\\gamma}{\\sqrt{\\sigma^2 + \\epsilon}} \\cdot W, \\qquad
        b' = \\frac{\\gamma \\, (b - \\mu)}{\\sqrt{\\sigma^2 + \\epsilon}} + \\beta

    per output channel, with the running μ and σ²; ``b = 0`` for a layer without a bias and
    ``γ = 1``, ``β = 0`` for a BatchNorm with ``affine=False``. The result always has a bias.
    The inputs are not modified; the result has the layer's dtype and
    device (computed in float64, rounded once).

    >>> lin, bn = torch.nn.Linear(3, 2, bias=False), torch.nn.BatchNorm1d(2, affine=False).eval()
    >>> with torch.no_grad():
    ...     _ = lin.weight.copy_(torch.tensor([[1., 2., 3.], [4., 5., 6.]]))
    ...     _ = bn.running_mean.copy_(torch.tensor([1., -1.])), bn.running_var.fill_(4 - 1e-5)   # σ² + ε = 4
    >>> folded = fold_batch_norm(lin, bn)
    >>> folded.weight.detach(), folded.bias.detach()   # W / 2 and (0 − μ) / 2
    (tensor([[0.5000, 1.0000, 1.5000],
            [2.0000, 2.5000, 3.0000]]), tensor([-0.5000,  0.5000]))
    """
    _check(layer, bn, LAYERS, "fold_batch_norm")
    return _fold(layer, bn)


def fold_conv_bn(conv: Layer, bn: nn.Module) -> Layer:
    """:func:`fold_batch_norm` for a ``Conv1d``, ``Conv2d`` or ``Conv3d`` only (the Linear is refused),
    as ``torch.nn.utils.fusion.fuse_conv_bn_eval`` is for convolutions.

    >>> conv, bn = torch.nn.Conv1d(2, 2, 1), torch.nn.BatchNorm1d(2).eval()
    >>> x = torch.randn(1, 2, 4)
    >>> torch.allclose(fold_conv_bn(conv, bn)(x), bn(conv(x)), atol=1e-6)
    True
    """
    _check(conv, bn, CONVS, "fold_conv_bn")
    return _fold(conv, bn)


def fold_linear_bn(linear: nn.Linear, bn: nn.Module) -> nn.Linear:
    """:func:`fold_batch_norm` for a ``Linear`` only, as ``torch.nn.utils.fusion.fuse_linear_bn_eval`` is.

    >>> lin, bn = torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2).eval()
    >>> x = torch.randn(4, 3)
    >>> torch.allclose(fold_linear_bn(lin, bn)(x), bn(lin(x)), atol=1e-6)
    True
    """
    _check(linear, bn, (nn.Linear,), "fold_linear_bn")
    return _fold(linear, bn)


# --------------------------------------------------------------------------- the arithmetic

def _fold(layer: Layer, bn: nn.Module) -> Layer:
    out = layer.weight.shape[0]                   # C: output channels (Conv) or output features (Linear)
    device = layer.weight.device
    compute = torch.float32 if device.type == "mps" else torch.float64
    as_compute = lambda t: t.detach().to(device=device, dtype=compute)
    ones, zeros = torch.ones(out, device=device, dtype=compute), torch.zeros(out, device=device, dtype=compute)
    with torch.no_grad():
        w = as_compute(layer.weight)              # W: (C, C_in / groups, k, …) or (C, in_features)
        b = as_compute(layer.bias) if layer.bias is not None else zeros           # b = 0 without a bias
        mean, var = as_compute(bn.running_mean), as_compute(bn.running_var)       # μ, σ²: the running statistics
        gamma = as_compute(bn.weight) if bn.weight is not None else ones          # γ = 1 without affine
        beta = as_compute(bn.bias) if bn.bias is not None else zeros              # β = 0 without affine (or bias)
        scale = gamma / torch.sqrt(var + bn.eps)  # s = γ / √(σ² + ε), one per output channel
        weight = w * scale.reshape(out, *[1] * (w.dim() - 1))   # W' = s · W   (row or filter c times s_c)
        bias = scale * (b - mean) + beta          # b' = s · (b − μ) + β  =  γ · (b − μ) / √(σ² + ε) + β
    folded = copy.deepcopy(layer)                 # the same type, stride, padding, groups, …: a new layer
    bias_like = layer.bias if layer.bias is not None else layer.weight
    folded.weight = nn.Parameter(weight.to(layer.weight.dtype), requires_grad=layer.weight.requires_grad)
    folded.bias = nn.Parameter(bias.to(bias_like.dtype), requires_grad=bias_like.requires_grad)
    return folded


# --------------------------------------------------------------------------- the checks

def _kinds(kinds: tuple) -> str:
    return ", ".join(f"torch.nn.{k.__name__}" for k in kinds)


def _channels(layer: nn.Module) -> int:
    return layer.out_features if isinstance(layer, nn.Linear) else layer.out_channels


def _check(layer: nn.Module, bn: nn.Module, kinds: tuple, fn: str) -> None:
    """Everything the fold needs, before any arithmetic: each refusal says what was expected and received."""
    if not isinstance(layer, kinds):
        raise TypeError(f"{fn}: " + say(
            en=f"the layer before the BatchNorm should be one of {_kinds(kinds)}, but got {type(layer).__name__}",
            ko=f"BatchNorm 앞의 층은 {_kinds(kinds)} 중 하나여야 하는데, 받은 층은 {type(layer).__name__}입니다."))
    if isinstance(layer.weight, nn.parameter.UninitializedParameter):
        raise NormInputError(f"{fn}: " + say(
            en=f"the {type(layer).__name__} has no weight yet (a lazy layer before its first call); "
               f"expected a layer with its weight, run one batch through it first",
            ko=f"{type(layer).__name__}에 아직 가중치가 없습니다(첫 호출 전의 lazy 층). 가중치가 있는 층이 "
               f"필요하니 먼저 배치 하나를 통과시키세요."))
    if not isinstance(bn, BATCH_NORMS):
        raise TypeError(f"{fn}: " + say(
            en=f"expected a BatchNorm (torch.nn.BatchNorm1d/2d/3d or normlib's) after the layer, but got "
               f"{type(bn).__name__}; only BatchNorm in evaluation mode is a fixed affine map per channel",
            ko=f"층 뒤에는 BatchNorm(torch.nn.BatchNorm1d/2d/3d나 normlib의 것)이 와야 하는데, 받은 층은 "
               f"{type(bn).__name__}입니다. 평가 모드의 BatchNorm만 채널마다 고정된 아핀 변환입니다."))
    if bn.training:
        raise NormInputError(f"{fn}: " + say(
            en="expected a BatchNorm in evaluation mode, but got one in training mode: training mode "
               "normalizes with each batch's own mean and variance, which no fixed weight and bias can "
               "reproduce. Call bn.eval() first; the fold uses the running statistics",
            ko="평가 모드의 BatchNorm이 필요한데 학습 모드인 것을 받았습니다. 학습 모드는 배치마다 그 배치의 "
               "평균과 분산으로 정규화하므로, 고정된 가중치와 편향으로는 재현할 수 없습니다. 먼저 bn.eval()을 "
               "부르세요. 접기는 이동 통계를 씁니다."))
    if bn.running_mean is None or bn.running_var is None:
        raise NormInputError(f"{fn}: " + say(
            en=f"expected a BatchNorm with running statistics, but got {type(bn).__name__} with "
               f"track_running_stats=False, which normalizes every batch with its own statistics even in "
               f"evaluation mode; build it with track_running_stats=True and train it",
            ko=f"이동 통계가 있는 BatchNorm이 필요한데, 받은 층은 track_running_stats=False인 {type(bn).__name__}"
               f"입니다. 이 층은 평가 모드에서도 배치마다 그 배치의 통계로 정규화합니다. "
               f"track_running_stats=True로 만들어 학습시키세요."))
    what = "out_features" if isinstance(layer, nn.Linear) else "out_channels"
    channels = _channels(layer)
    if channels != bn.num_features or bn.running_mean.numel() != channels:
        raise NormInputError(f"{fn}: " + say(
            en=f"the BatchNorm should normalize the layer's {channels} output channels ({what}={channels}), "
               f"but got a {type(bn).__name__} with num_features={bn.num_features}",
            ko=f"BatchNorm은 층의 출력 채널 {channels}개({what}={channels})를 정규화해야 하는데, "
               f"받은 층은 {type(bn).__name__}(num_features={bn.num_features})입니다."))

