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

from .messages import say

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
    "SEQUENCE_METHODS",
    "sequence_sharing",
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
        raise _NormalizedShapeTypeError(say(en=f"normalized_shape must be an int or a sequence of ints, got {normalized_shape!r}",
                                            ko=f"normalized_shape는 int나 int의 시퀀스여야 하는데, 받은 값은 {normalized_shape!r}입니다."))
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    try:
        dims = tuple(normalized_shape)
    except TypeError:
        raise _NormalizedShapeTypeError(say(
            en=f"normalized_shape must be an int or a sequence of ints, got {type(normalized_shape).__name__}",
            ko=f"normalized_shape는 int나 int의 시퀀스여야 하는데, 받은 값은 {type(normalized_shape).__name__} 객체입니다.",
        )) from None
    if isinstance(normalized_shape, str) or not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
        raise _NormalizedShapeTypeError(say(en=f"normalized_shape must contain only ints, got {normalized_shape!r}",
                                            ko=f"normalized_shape에는 int만 들어가야 하는데, 받은 값은 {normalized_shape!r}입니다."))
    if len(dims) == 0 and not allow_empty:
        raise NormInputError(
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, "
            "but got normalized_shape = (): " + say(
                en="normalized_shape must name at least one dimension to pool (for example 4 or (2, 4))",
                ko="normalized_shape는 통계를 낼 차원을 하나 이상 가리켜야 합니다(예: 4나 (2, 4))."))
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
    :attr:`view_shape` ``= (N, G, C/G, *spatial)``, reducing :attr:`view_axes`.

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

    def labels(self) -> torch.Tensor:
        """An integer tensor of the input's shape: equal labels share one statistic.

        >>> sharing("layer", (2, 3), normalized_shape=3).labels()
        tensor([[0, 0, 0],
                [1, 1, 1]])
        >>> sharing("batch", (2, 3)).labels()
        tensor([[0, 1, 2],
                [0, 1, 2]])
        """
        ids = torch.arange(self.num_statistics).reshape(self.stat_shape)
        return ids.expand(self.view_shape).reshape(self.shape).clone()

    def mask(self, index: Sequence[int]) -> torch.Tensor:
        """A boolean tensor of the input's shape: the elements pooled with the element at ``index``.

        >>> sharing("instance", (2, 2, 3)).mask((1, 0, 2)).long()
        tensor([[[0, 0, 0],
                 [0, 0, 0]],
        <BLANKLINE>
                [[1, 1, 1],
                 [0, 0, 0]]])
        """
        index = tuple(index)
        if len(index) != len(self.shape) or any(not 0 <= i < s for i, s in zip(index, self.shape)):
            raise NormInputError(say(en=f"index {index} does not point into a tensor of shape {_fmt(self.shape)}",
                                     ko=f"인덱스 {index}: 모양 {_fmt(self.shape)}인 텐서의 범위를 벗어납니다."))
        labels = self.labels()
        return labels == labels[index]


def _check_ndim(method: str, shape: Tuple[int, ...], at_least: int, layout: str, torch_says: bool = False) -> None:
    if len(shape) < at_least:
        # torch's group_norm says so in these words (its batch_norm and instance_norm fail elsewhere)
        words = f"Expected at least {at_least} dimensions for input tensor but received {len(shape)}: " if torch_says else ""
        raise NormInputError(words + say(
            en=f"{method} expects an input of shape {layout} with at least {at_least} dimensions, "
               f"but got an input of shape {_fmt(shape)} ({len(shape)} dimensions)",
            ko=f"{method}의 입력은 차원이 {at_least}개 이상인 {layout} 모양이어야 하는데, "
               f"모양 {_fmt(shape)}(차원 {len(shape)}개)인 입력을 받았습니다."))


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
        raise NormInputError(say(en=f"num_groups must be a positive int, got {num_groups!r}",
                                 ko=f"num_groups는 양의 int여야 하는데, 받은 값은 {num_groups!r}입니다."))
    if num_groups == 0:   # torch: the channel count divided by zero groups
        raise ZeroDivisionError("integer division or modulo by zero: " + say(
            en="group_norm splits the channels into num_groups groups of equal size, so it needs num_groups >= 1, "
               "but got num_groups=0",
            ko="group_norm은 채널을 같은 크기의 그룹 num_groups개로 나누므로 num_groups >= 1이어야 하는데, "
               "num_groups=0을 받았습니다."))
    if num_groups < 0:
        raise NormInputError(f"Expected num groups to be greater than 0, got {num_groups}: " + say(
            en="num_groups is the number of channel groups, a positive int",
            ko="num_groups는 채널 그룹의 개수라 양의 int여야 합니다."))
    channels = shape[1]
    if channels % num_groups != 0:
        raise NormInputError(
            f"Expected number of channels in input to be divisible by num_groups, but got input of shape "
            f"{list(shape)} and num_groups={num_groups}: " + say(
                en=f"group_norm splits the {channels} channels of an input of shape {_fmt(shape)} into "
                   f"num_groups={num_groups} groups of equal size",
                ko=f"group_norm은 채널 {channels}개(입력 모양 {_fmt(shape)})를 같은 크기의 그룹 "
                   f"{num_groups}개로 나누어야 하는데, 나누어떨어지지 않습니다(num_groups={num_groups})."))
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
        raise NormInputError(
            f"Given normalized_shape={list(dims)}, expected input with shape [*, {', '.join(map(str, dims))}], "
            f"but got input of size{list(shape)}: " + say(
                en=f"{method}_norm pools the last {k} dimension(s), whose sizes must equal normalized_shape={_fmt(dims)}, "
                   f"so it expects an input of shape (*, {', '.join(map(str, dims))}); an input of shape "
                   f"{_fmt(shape)} does not end in {_fmt(dims)}.",
                ko=f"{method}_norm은 마지막 차원 {k}개로 통계를 내므로 입력의 끝 차원들이 normalized_shape와 같아야 "
                   f"합니다. normalized_shape={_fmt(dims)}, 곧 (*, {', '.join(map(str, dims))}) 모양의 입력이 "
                   f"필요한데, 모양 {_fmt(shape)}인 입력을 받았습니다. 필요한 끝 차원: {_fmt(dims)}."))
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
        raise NormInputError(say(en=f"method must be one of {METHODS}, got {method!r}",
                                 ko=f"method는 {METHODS} 중 하나여야 하는데, 받은 값은 {method!r}입니다."))
    if method in ("layer", "rms"):
        if normalized_shape is None:
            raise NormInputError(say(en=f"method {method!r} needs normalized_shape (for example the last dimension's size)",
                                     ko=f"method {method!r}에는 normalized_shape가 필요합니다(예: 마지막 차원의 크기)."))
        return layer_norm_axes(shape, normalized_shape, method=method)
    if normalized_shape is not None:
        raise NormInputError(say(en=f"method {method!r} takes no normalized_shape, got {normalized_shape!r}",
                                 ko=f"method {method!r}에는 normalized_shape를 주지 않아야 하는데, 받은 값은 normalized_shape={normalized_shape!r}입니다."))
    if method == "group":
        if num_groups is None:
            raise NormInputError(say(en="method 'group' needs num_groups", ko="method 'group'에는 num_groups가 필요합니다."))
        return group_norm_axes(shape, num_groups)
    if num_groups is not None:
        raise NormInputError(say(en=f"method {method!r} takes no num_groups, got {num_groups!r}",
                                 ko=f"method {method!r}에는 num_groups를 주지 않아야 하는데, 받은 값은 num_groups={num_groups!r}입니다."))
    return batch_norm_axes(shape) if method == "batch" else instance_norm_axes(shape)


# For a sequence of token vectors ``(B, L, D)``: what the transformer chapter compares.
SEQUENCE_METHODS = ("batch", "layer", "rms", "batch_dim0")


def sequence_sharing(method: str, shape: Sequence[int]) -> Sharing:
    """Which elements of a ``(B, L, D)`` token tensor share one statistic.

    ``batch``: one statistic per feature ``d``, pooled over every sample and token ``(B, L)``
    (what ``nn.BatchNorm1d`` does to ``x.transpose(1, 2)``). ``layer`` and ``rms``: one per
    token, pooled over its ``D`` features. ``batch_dim0``: the slip of reducing over dim 0
    only (``x.mean(dim=0)``), one statistic per (token position, feature), each pooling only
    ``B`` numbers.

    >>> [sequence_sharing(m, (2, 5, 8)).num_statistics for m in SEQUENCE_METHODS]
    [8, 10, 10, 40]
    """
    shape = tuple(int(s) for s in shape)
    if method not in SEQUENCE_METHODS:
        raise NormInputError(say(en=f"method must be one of {SEQUENCE_METHODS} for a (B, L, D) tensor, got {method!r}",
                                 ko=f"(B, L, D) 텐서의 method는 {SEQUENCE_METHODS} 중 하나여야 하는데, 받은 값은 {method!r}입니다."))
    if len(shape) != 3 or min(shape) < 1:
        raise NormInputError(say(en=f"a sequence tensor has shape (B, L, D) with every size >= 1, got {_fmt(shape)}",
                                 ko=f"시퀀스 텐서는 크기가 모두 1 이상인 (B, L, D) 모양이어야 하는데, 받은 모양은 {_fmt(shape)}입니다."))
    reduced = {"batch": (0, 1), "layer": (2,), "rms": (2,), "batch_dim0": (0,)}[method]
    return Sharing("batch" if method == "batch_dim0" else method, shape, reduced)


def channel_view(t: Optional[torch.Tensor], ndim: int) -> Optional[torch.Tensor]:
    """A per-channel vector (length C: γ, β, a running statistic) viewed as ``(1, C, 1, …, 1)``,
    so it broadcasts against an ``(N, C, *spatial)`` input of ``ndim`` dimensions. ``None`` stays
    ``None`` (no γ, no β).

    >>> channel_view(torch.tensor([1.0, 2.0, 3.0]), 4).shape
    torch.Size([1, 3, 1, 1])
    """
    return None if t is None else t.reshape(1, -1, *([1] * (ndim - 2)))
