"""Which elements of a tensor share one mean and one variance.

This module is the single source of truth for that question. ``normlib.functional``
reduces over the axes named here, and the drawings and widgets of the book colour the
cells named here, so a picture can never disagree with the arithmetic.

Every normalization method in the book computes ``x̂ = (x − μ) / sqrt(σ² + ε)`` (or, for
RMSNorm, ``x / sqrt(mean(x²) + ε)``); they differ only in *which* elements are pooled
to compute one μ and one σ². For an input of shape ``(N, C, *spatial)``:

============  ==========================================  =============================
method        elements pooled for one statistic            axes reduced
============  ==========================================  =============================
batch         one channel, across the batch and space      ``(0, 2, 3, …)``
instance      one channel of one sample, across space      ``(2, 3, …)``
group         G channels of one sample, and their space    channels of a group + ``(2, …)``
layer / rms   the trailing ``normalized_shape`` dims       the last ``len(normalized_shape)``
============  ==========================================  =============================

Chapters 3–6 of the book derive each row.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple, Union

import torch

from .messages import errors

__all__ = [
    "METHODS",
    "NormInputError",
    "Sharing",
    "sharing",
    "batch_norm_axes",
    "instance_norm_axes",
    "group_norm_axes",
    "layer_norm_axes",
    "rms_norm_axes",
    "as_normalized_shape",
    "channel_view",
]

METHODS = ("batch", "layer", "instance", "group", "rms")

ShapeLike = Union[int, Sequence[int], torch.Size]


class NormInputError(ValueError, RuntimeError):
    """A shape or value that a normalization cannot accept.

    It is both a ``ValueError`` and a ``RuntimeError`` so that code written against
    ``torch.nn.functional`` (which raises either, depending on the check) catches it.
    """


def _fmt(shape) -> str:
    return "(" + ", ".join(str(int(s)) for s in shape) + ("," if len(shape) == 1 else "") + ")"


class _NormalizedShapeTypeError(NormInputError, TypeError):
    """A ``normalized_shape`` that is not an int or a sequence of ints: torch raises ``TypeError``."""


def as_normalized_shape(normalized_shape: ShapeLike, allow_empty: bool = False) -> Tuple[int, ...]:
    """Turn an ``int``, list, tuple or ``torch.Size`` into a tuple of ints.

    ``()`` pools nothing and is refused, unless ``allow_empty``: the modules accept it when they
    are built and fail at the forward pass, as ``torch.nn.LayerNorm(())`` does.

    >>> as_normalized_shape(4), as_normalized_shape([2, 3]), as_normalized_shape(torch.Size([5]))
    ((4,), (2, 3), (5,))
    """
    if isinstance(normalized_shape, bool):
        raise _NormalizedShapeTypeError(errors.normalized_shape_bool(normalized_shape))
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    try:
        dims = tuple(normalized_shape)
    except TypeError:
        raise _NormalizedShapeTypeError(errors.normalized_shape_type(normalized_shape)) from None
    if isinstance(normalized_shape, str) or not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
        raise _NormalizedShapeTypeError(errors.normalized_shape_items(normalized_shape))
    if len(dims) == 0 and not allow_empty:
        raise NormInputError(errors.normalized_shape_empty())
    return dims


@dataclass(frozen=True)
class Sharing:
    """The answer to "which elements share one mean and variance?" for one input shape.

    Attributes:
        method: one of :data:`METHODS`.
        shape: the input shape.
        axes: the input axes a statistic pools over (non-negative, increasing). For
            ``group`` the channel axis 1 is pooled only *within* a group: see ``groups``.
        groups: for ``group`` only, the channel indices of each group; otherwise ``None``.

    The statistics have shape :attr:`stat_shape` (the input shape with reduced axes set
    to 1, as ``keepdim=True`` gives). ``group`` is computed on the view
    :attr:`view_shape` ``= (N, G, C/G, *spatial)``, reducing :attr:`view_axes`. (The book turns a
    sharing into cells to colour with ``normlib_book.instruments.labels`` and ``mask``.)

    >>> s = sharing("batch", (4, 3))
    >>> s.axes, s.count, s.num_statistics
    ((0,), 4, 3)
    >>> sharing("group", (2, 6, 5), num_groups=3).groups
    ((0, 1), (2, 3), (4, 5))
    """

    method: str
    shape: Tuple[int, ...]
    axes: Tuple[int, ...]
    groups: Optional[Tuple[Tuple[int, ...], ...]] = None

    @property
    def view_shape(self) -> Tuple[int, ...]:
        """The shape the input is viewed as before reducing (differs from ``shape`` only for ``group``)."""
        if self.groups is None:
            return self.shape
        n, c, *spatial = self.shape
        g = len(self.groups)
        return (n, g, c // g, *spatial)

    @property
    def view_axes(self) -> Tuple[int, ...]:
        """The axes of :attr:`view_shape` that are reduced."""
        if self.groups is None:
            return self.axes
        return tuple(range(2, len(self.view_shape)))

    @property
    def stat_shape(self) -> Tuple[int, ...]:
        """Shape of the mean and variance with ``keepdim=True`` (on :attr:`view_shape`)."""
        return tuple(1 if i in self.view_axes else s for i, s in enumerate(self.view_shape))

    @property
    def count(self) -> int:
        """How many elements each statistic pools."""
        return math.prod([self.view_shape[i] for i in self.view_axes])   # a list: torch.compile cannot trace a generator here

    @property
    def num_statistics(self) -> int:
        """How many separate means (and variances) the input gets."""
        return math.prod(self.stat_shape)


def _check_ndim(method: str, shape: Tuple[int, ...], at_least: int, layout: str, torch_says: bool = False) -> None:
    if len(shape) < at_least:
        raise NormInputError(errors.too_few_dimensions(method, shape, at_least, layout, torch_says))


def batch_norm_axes(shape: Sequence[int]) -> Sharing:
    """BatchNorm: one statistic per channel, pooled over the batch and every spatial position.

    ``(N, C)`` → axes ``(0,)``; ``(N, C, L)`` → ``(0, 2)``; ``(N, C, H, W)`` → ``(0, 2, 3)``.

    >>> batch_norm_axes((8, 3, 32, 32)).axes
    (0, 2, 3)
    """
    shape = tuple(int(s) for s in shape)
    _check_ndim("batch_norm", shape, 2, "(N, C, *)")
    return Sharing("batch", shape, (0, *range(2, len(shape))))


def instance_norm_axes(shape: Sequence[int]) -> Sharing:
    """InstanceNorm: one statistic per (sample, channel), pooled over the spatial positions.

    ``(N, C, L)`` → axes ``(2,)``; ``(N, C, H, W)`` → ``(2, 3)``. An ``(N, C)`` input has no
    spatial axis, so every statistic would pool a single element.

    >>> instance_norm_axes((8, 3, 32, 32)).axes
    (2, 3)
    """
    shape = tuple(int(s) for s in shape)
    _check_ndim("instance_norm", shape, 2, "(N, C, *)")
    return Sharing("instance", shape, tuple(range(2, len(shape))))


def group_norm_axes(shape: Sequence[int], num_groups: int) -> Sharing:
    """GroupNorm: channels split into ``num_groups`` consecutive groups; one statistic per
    (sample, group), pooled over the group's channels and every spatial position.

    ``num_groups == 1`` pools like LayerNorm over ``(C, *spatial)``; ``num_groups == C``
    pools like InstanceNorm.

    >>> s = group_norm_axes((2, 4, 5), num_groups=2)
    >>> s.axes, s.groups, s.view_shape, s.view_axes
    ((1, 2), ((0, 1), (2, 3)), (2, 2, 2, 5), (2, 3))
    """
    shape = tuple(int(s) for s in shape)
    _check_ndim("group_norm", shape, 2, "(N, C, *)", torch_says=True)
    if isinstance(num_groups, bool) or not isinstance(num_groups, int):
        raise NormInputError(errors.num_groups_type(num_groups))
    if num_groups == 0:   # torch: the channel count divided by zero groups
        raise ZeroDivisionError(errors.num_groups_zero())
    if num_groups < 0:
        raise NormInputError(errors.num_groups_negative(num_groups))
    channels = shape[1]
    if channels % num_groups != 0:
        raise NormInputError(errors.channels_not_divisible(shape, num_groups))
    size = channels // num_groups
    groups = tuple(tuple(range(g * size, (g + 1) * size)) for g in range(num_groups))
    return Sharing("group", shape, tuple(range(1, len(shape))), groups)


def layer_norm_axes(shape: Sequence[int], normalized_shape: ShapeLike, method: str = "layer") -> Sharing:
    """LayerNorm: one statistic per leading index, pooled over the trailing ``normalized_shape``.

    ``(B, L, D)`` with ``normalized_shape=D`` → axes ``(2,)`` (one statistic per token);
    ``(N, C, H, W)`` with ``normalized_shape=(C, H, W)`` → ``(1, 2, 3)`` (one per sample).

    >>> layer_norm_axes((4, 10, 512), 512).axes
    (2,)
    >>> layer_norm_axes((2, 3, 4, 5), (3, 4, 5)).axes
    (1, 2, 3)
    """
    shape = tuple(int(s) for s in shape)
    dims = as_normalized_shape(normalized_shape)
    k = len(dims)
    if len(shape) < k or shape[len(shape) - k:] != dims:
        raise NormInputError(errors.normalized_shape_mismatch(shape, dims, method))
    return Sharing(method, shape, tuple(range(len(shape) - k, len(shape))))


def rms_norm_axes(shape: Sequence[int], normalized_shape: ShapeLike) -> Sharing:
    """RMSNorm pools exactly like LayerNorm (the trailing ``normalized_shape``), but only
    the mean of squares is computed there: no mean is subtracted.

    >>> rms_norm_axes((4, 10, 512), 512).axes
    (2,)
    """
    return layer_norm_axes(shape, normalized_shape, method="rms")


def sharing(
    method: str,
    shape: Sequence[int],
    *,
    normalized_shape: Optional[ShapeLike] = None,
    num_groups: Optional[int] = None,
) -> Sharing:
    """One entry point for every method: ``method`` is one of :data:`METHODS`.

    ``normalized_shape`` is required for ``layer`` and ``rms`` and ``num_groups`` for
    ``group``; the others take neither.

    >>> sharing("layer", (4, 3), normalized_shape=3).axes
    (1,)
    >>> sharing("weight", (4, 3))
    Traceback (most recent call last):
    ...
    normlib.axes.NormInputError: method must be one of ('batch', 'layer', 'instance', 'group', 'rms'), got 'weight'
    """
    if method not in METHODS:
        raise NormInputError(errors.unknown_method(method, METHODS))
    if method in ("layer", "rms"):
        if normalized_shape is None:
            raise NormInputError(errors.method_needs_normalized_shape(method))
        return layer_norm_axes(shape, normalized_shape, method=method)
    if normalized_shape is not None:
        raise NormInputError(errors.method_takes_no_normalized_shape(method, normalized_shape))
    if method == "group":
        if num_groups is None:
            raise NormInputError(errors.group_needs_num_groups())
        return group_norm_axes(shape, num_groups)
    if num_groups is not None:
        raise NormInputError(errors.method_takes_no_num_groups(method, num_groups))
    return batch_norm_axes(shape) if method == "batch" else instance_norm_axes(shape)


def channel_view(t: Optional[torch.Tensor], ndim: int) -> Optional[torch.Tensor]:
    """A per-channel vector (length C: γ, β, a running statistic) viewed as ``(1, C, 1, …, 1)``,
    so it broadcasts against an ``(N, C, *spatial)`` input of ``ndim`` dimensions. ``None`` stays
    ``None`` (no γ, no β).

    >>> channel_view(torch.tensor([1.0, 2.0, 3.0]), 4).shape
    torch.Size([1, 3, 1, 1])
    """
    return None if t is None else t.reshape(1, -1, *([1] * (ndim - 2)))
