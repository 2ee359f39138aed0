"""Normalization layers as ``nn.Module``s, drop-in replacements for ``torch.nn``'s.

A module here owns state: parameters (γ = ``weight``, β = ``bias``) and, for
BatchNorm/InstanceNorm, the buffers ``running_mean``, ``running_var`` and
``num_batches_tracked`` (which the module counts). Its ``forward`` checks what only the module
knows (the input's number of dimensions, its channels against ``num_features``) and calls one
function of :mod:`normlib.functional`, where the arithmetic is. Constructor
arguments, attribute names and ``state_dict`` keys are those of ``torch.nn``, so a
``torch.nn`` layer's ``state_dict`` loads here with ``strict=True`` and back.

Training versus evaluation follows ``self.training`` (``model.train()`` / ``model.eval()``),
never whether gradients are enabled.
"""

from __future__ import annotations

import warnings
from typing import Optional

import torch
from torch import Tensor, nn

from . import functional as F
from .axes import NormInputError, ShapeLike, as_normalized_shape
from .messages import errors

__all__ = [
    "LayerNorm", "RMSNorm", "GroupNorm",
    "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
    "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
]


def _affine_parameters(module: nn.Module, shape, affine: bool, bias: bool, device, dtype) -> None:
    """Register γ (``weight``) and β (``bias``) of ``shape``, or ``None`` where switched off."""
    if affine:
        module.weight = nn.Parameter(torch.empty(shape, device=device, dtype=dtype))
    else:
        module.register_parameter("weight", None)
    if affine and bias:
        module.bias = nn.Parameter(torch.empty(shape, device=device, dtype=dtype))
    else:
        module.register_parameter("bias", None)


def _reset_affine(module: nn.Module) -> None:
    """γ ← 1, β ← 0: the layer starts as a pure normalization."""
    if module.weight is not None:
        nn.init.ones_(module.weight)
    if module.bias is not None:
        nn.init.zeros_(module.bias)


class LayerNorm(nn.Module):
    """Layer normalization over the trailing ``normalized_shape`` dims (see :func:`normlib.functional.layer_norm`).

    ``y = (x − E[x]) / sqrt(Var[x] + ε) · γ + β``, statistics per leading index:
    ``(B, L, D)`` with ``normalized_shape=D`` reduces axis 2 (one mean per token).

    Args: like ``torch.nn.LayerNorm``: ``normalized_shape`` (int, list, tuple or
    ``torch.Size``), ``eps=1e-5``, ``elementwise_affine=True``, ``bias=True``, ``device``, ``dtype``.

    >>> ln = LayerNorm(3)
    >>> ln(torch.tensor([[2.0, 3.0, 4.0]]))         # sample A of the book's table
    tensor([[-1.2247,  0.0000,  1.2247]], grad_fn=<AddBackward0>)
    >>> sorted(ln.state_dict())
    ['bias', 'weight']
    """

    def __init__(self, normalized_shape: ShapeLike, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        # () builds, and fails at the forward pass, as in torch.nn
        self.normalized_shape = as_normalized_shape(normalized_shape, allow_empty=True)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _affine_parameters(self, self.normalized_shape, elementwise_affine, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """γ ← 1, β ← 0: the layer starts as a pure normalization."""
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(nn.Module):
    """Root-mean-square normalization (see :func:`normlib.functional.rms_norm`).

    ``y = x · rsqrt(mean(x²) + ε) · γ`` over the trailing ``normalized_shape`` dims; no β.
    ``eps=None`` uses ``torch.finfo`` of the computation dtype, as ``torch.nn.RMSNorm`` does.

    >>> RMSNorm(2)(torch.tensor([[3.0, 4.0]]))
    tensor([[0.8485, 1.1314]], grad_fn=<MulBackward0>)
    """

    def __init__(self, normalized_shape: ShapeLike, eps: Optional[float] = None, elementwise_affine: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        # () builds, and fails at the forward pass, as in torch.nn
        self.normalized_shape = as_normalized_shape(normalized_shape, allow_empty=True)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _affine_parameters(self, self.normalized_shape, elementwise_affine, False, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """γ ← 1."""
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class GroupNorm(nn.Module):
    """Group normalization (see :func:`normlib.functional.group_norm`).

    ``num_channels`` split into ``num_groups`` groups; one statistic per (sample, group) over
    the group's channels and all spatial positions. γ and β have one value per channel.

    >>> gn = GroupNorm(2, 4)
    >>> gn(torch.tensor([[1.0, 3.0, 10.0, 30.0]])).detach()
    tensor([[-1.0000,  1.0000, -1.0000,  1.0000]])
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        # As torch.nn: divisibility is checked here (num_groups=0 divides by zero), a negative
        # num_groups when the layer runs (normlib.axes.group_norm_axes, through normlib.checks).
        if num_groups == 0:
            raise ZeroDivisionError(errors.group_norm_zero_groups(num_channels))
        if num_channels % num_groups != 0:
            raise NormInputError(errors.group_norm_not_divisible(num_channels, num_groups))
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _affine_parameters(self, (num_channels,), affine, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """γ ← 1, β ← 0."""
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class _NormBase(nn.Module):
    """Parameters and running-statistics buffers shared by BatchNorm and InstanceNorm."""

    _version = 2  # the state_dict format of torch.nn's _NormBase (num_batches_tracked included)

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: Optional[float] = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device=None, dtype=None, *,
                 bias: bool = True) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        factory = {"device": device, "dtype": dtype}
        _affine_parameters(self, (num_features,), affine, bias, device, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", torch.zeros(num_features, **factory))
            self.register_buffer("running_var", torch.ones(num_features, **factory))
            self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """running_mean ← 0, running_var ← 1, num_batches_tracked ← 0."""
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        """Reset the running statistics, and γ ← 1, β ← 0."""
        self.reset_running_stats()
        _reset_affine(self)

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() not in self._allowed_dims:
            raise NormInputError(errors.input_dims(type(self).__name__, self._allowed_dims, self._layouts, input))

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        # state_dicts saved before num_batches_tracked existed (version < 2, or a plain dict with no
        # version) lack the key: the module keeps its own count, as in torch.nn. (Filling in 0 would
        # restart momentum=None's cumulative average after a partial load.) A current-version
        # state_dict without the key reports it missing, and strict=False leaves the count alone.
        version = local_metadata.get("version", None)
        key = prefix + "num_batches_tracked"
        if (version is None or version < 2) and self.track_running_stats and key not in state_dict:
            own = self.num_batches_tracked
            state_dict[key] = (own if own is not None and own.device.type != "meta"
                               else torch.tensor(0, dtype=torch.long))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    """BatchNorm: statistics per channel over the batch and spatial axes.

    In training mode (``self.training``) the batch's statistics normalize and, with
    ``track_running_stats``, update the running ones: ``running ← (1 − m)·running + m·batch``
    with ``m = momentum``, or ``m = 1 / num_batches_tracked`` (the cumulative average of all
    batches so far) when ``momentum=None``. ``running_var`` stores the unbiased variance.
    In eval mode the running statistics normalize (or the batch's, if not tracked).
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.batch_norm(*self._count_batch_and_arguments(input))

    def _count_batch_and_arguments(self, input: Tensor) -> tuple:
        """Check ``input``'s dimensions, count the batch (training: ``num_batches_tracked += 1``) and
        return ``batch_norm``'s arguments for this call:
        ``(input, running_mean, running_var, weight, bias, training, momentum, eps)``."""
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked)
        use_batch_stats = self.training or self.running_mean is None
        # The running statistics are passed where they are read (eval) or updated (training, tracked).
        keep = self.track_running_stats or not self.training
        return (input, self.running_mean if keep else None, self.running_var if keep else None,
                self.weight, self.bias, use_batch_stats, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """BatchNorm over ``(N, C)`` (reduces axis 0) or ``(N, C, L)`` (reduces axes 0 and 2).

    Args like ``torch.nn.BatchNorm1d``: ``num_features`` (= C), ``eps=1e-5``,
    ``momentum=0.1`` (``None``: cumulative average), ``affine=True``,
    ``track_running_stats=True``, ``device``, ``dtype``.

    >>> bn = BatchNorm1d(1)
    >>> bn(torch.tensor([[2.0], [4.0], [6.0], [8.0]])).flatten().detach()
    tensor([-1.3416, -0.4472,  0.4472,  1.3416])
    >>> bn.running_mean, bn.running_var, bn.num_batches_tracked
    (tensor([0.5000]), tensor([1.5667]), tensor(1))
    """

    _allowed_dims = (2, 3)
    _layouts = "(N, C) or (N, C, L)"


class BatchNorm2d(_BatchNorm):
    """BatchNorm over ``(N, C, H, W)``: one statistic per channel, reducing axes ``(0, 2, 3)``.

    >>> BatchNorm2d(3)(torch.randn(2, 3, 4, 4)).shape
    torch.Size([2, 3, 4, 4])
    """

    _allowed_dims = (4,)
    _layouts = "(N, C, H, W)"


class BatchNorm3d(_BatchNorm):
    """BatchNorm over ``(N, C, D, H, W)``: one statistic per channel, reducing axes ``(0, 2, 3, 4)``.

    >>> BatchNorm3d(2)(torch.randn(2, 2, 3, 3, 3)).shape
    torch.Size([2, 2, 3, 3, 3])
    """

    _allowed_dims = (5,)
    _layouts = "(N, C, D, H, W)"


class _InstanceNorm(_NormBase):
    """InstanceNorm: statistics per (sample, channel) over the spatial axes.

    Defaults differ from BatchNorm, as in ``torch.nn``: ``affine=False`` and
    ``track_running_stats=False``. An input without the batch axis (``(C, L)`` for 1d) is
    treated as a batch of one. With running statistics tracked, eval mode normalizes with
    them; ``momentum=None`` means 0 here (torch does the same) and ``num_batches_tracked``
    is kept but not incremented, again as in ``torch.nn``. An input whose channel count is not
    ``num_features`` is an error with ``affine=True`` and a ``UserWarning`` without (then
    ``num_features`` sizes nothing but the running statistics), as in ``torch.nn``.
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: Optional[float] = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device=None, dtype=None, *,
                 bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def forward(self, input: Tensor) -> Tensor:
        unbatched = self._check_instance_input(input)
        out = F.instance_norm(
            input.unsqueeze(0) if unbatched else input, self.running_mean, self.running_var, self.weight, self.bias,
            self.training or not self.track_running_stats,
            self.momentum if self.momentum is not None else 0.0, self.eps,
        )
        return out.squeeze(0) if unbatched else out

    def _check_instance_input(self, input: Tensor) -> bool:
        """Check the input's dimensions and channels; return whether it lacks the batch axis."""
        self._check_input_dim(input)
        unbatched = input.dim() == self._allowed_dims[0]
        dim = 0 if unbatched else 1                     # where the channels are
        if input.size(dim) != self.num_features:
            if self.affine:
                raise NormInputError(errors.instance_channels(type(self).__name__, self.num_features, self._layouts,
                                                              dim, input))
            # Without γ and β, num_features only sizes the running statistics (if any): as torch.nn,
            # a warning (and an error from instance_norm if running statistics are tracked).
            warnings.warn(errors.instance_channels_warning(type(self).__name__, self.num_features, dim, input),
                          UserWarning, stacklevel=3)
        return unbatched


class InstanceNorm1d(_InstanceNorm):
    """InstanceNorm over ``(N, C, L)`` (reduces axis 2) or unbatched ``(C, L)``.

    >>> InstanceNorm1d(1)(torch.tensor([[[2.0, 3.0, 4.0]]]))
    tensor([[[-1.2247,  0.0000,  1.2247]]])
    """

    _allowed_dims = (2, 3)
    _layouts = "(C, L) or (N, C, L)"


class InstanceNorm2d(_InstanceNorm):
    """InstanceNorm over ``(N, C, H, W)`` (reduces axes 2 and 3) or unbatched ``(C, H, W)``.

    >>> InstanceNorm2d(3)(torch.randn(2, 3, 4, 4)).shape
    torch.Size([2, 3, 4, 4])
    """

    _allowed_dims = (3, 4)
    _layouts = "(C, H, W) or (N, C, H, W)"


class InstanceNorm3d(_InstanceNorm):
    """InstanceNorm over ``(N, C, D, H, W)`` (reduces axes 2, 3 and 4) or unbatched ``(C, D, H, W)``.

    >>> InstanceNorm3d(2)(torch.randn(2, 2, 3, 3, 3)).shape
    torch.Size([2, 2, 3, 3, 3])
    """

    _allowed_dims = (4, 5)
    _layouts = "(C, D, H, W) or (N, C, D, H, W)"
