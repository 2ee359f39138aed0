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
from .messages import errors

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

def _channels(layer: nn.Module) -> int:
    return layer.out_features if isinstance(layer, nn.Linear) else layer.out_channels


def _check(layer: nn.Module, bn: nn.Module, kinds: tuple, fn: str) -> None:
    """Everything the fold needs, before any arithmetic: each refusal says what was expected and received."""
    if not isinstance(layer, kinds):
        raise TypeError(errors.fold_layer_type(fn, layer, kinds))
    if isinstance(layer.weight, nn.parameter.UninitializedParameter):
        raise NormInputError(errors.fold_lazy_layer(fn, layer))
    if not isinstance(bn, BATCH_NORMS):
        raise TypeError(errors.fold_not_batch_norm(fn, bn))
    if bn.training:
        raise NormInputError(errors.fold_training(fn))
    if bn.running_mean is None or bn.running_var is None:
        raise NormInputError(errors.fold_no_running_stats(fn, bn))
    what = "out_features" if isinstance(layer, nn.Linear) else "out_channels"
    channels = _channels(layer)
    if channels != bn.num_features or bn.running_mean.numel() != channels:
        raise NormInputError(errors.fold_channels(fn, channels, what, bn))
