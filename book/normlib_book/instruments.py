"""The chapters' measuring instruments: they look at the library from outside and are no part of it.

``import normlib`` computes normalizations; the book also *shows* what they do, and these tools
serve that showing (the library loads none of them):

=========================  ================================================================
:func:`labels`, :func:`mask`   which cells of a tensor share one statistic, as a tensor to colour
                           (chapters 3 and 6, the drawings and the explorer): from the
                           :class:`normlib.axes.Sharing` the layers themselves use
:func:`sequence_sharing`   the same for a ``(B, L, D)`` token tensor, with the teaching slip
                           ``batch_dim0`` (chapters 3 and 6, the transformer comparisons)
:func:`saved_for_backward` the tensors a forward pass leaves in the autograd graph (chapter 7)
:func:`traffic`            the collectives synchronized BatchNorm makes (chapter 9)
=========================  ================================================================
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, List, Sequence

import torch
from torch import Tensor

from normlib import distributed
from normlib.axes import NormInputError, Sharing, _fmt
from normlib.messages import say

__all__ = ["labels", "mask", "SEQUENCE_METHODS", "sequence_sharing",
           "saved_for_backward", "SavedForBackward", "traffic", "Collective"]


# --------------------------------------------------------------------------- which cells share a statistic

def labels(share: Sharing) -> Tensor:
    """An integer tensor of the input's shape: equal labels share one statistic.

    >>> from normlib.axes import sharing
    >>> labels(sharing("layer", (2, 3), normalized_shape=3))
    tensor([[0, 0, 0],
            [1, 1, 1]])
    >>> labels(sharing("batch", (2, 3)))
    tensor([[0, 1, 2],
            [0, 1, 2]])
    """
    ids = torch.arange(share.num_statistics).reshape(share.stat_shape)
    return ids.expand(share.view_shape).reshape(share.shape).clone()


def mask(share: Sharing, index: Sequence[int]) -> Tensor:
    """A boolean tensor of the input's shape: the elements pooled with the element at ``index``.

    >>> from normlib.axes import sharing
    >>> mask(sharing("instance", (2, 2, 3)), (1, 0, 2)).long()
    tensor([[[0, 0, 0],
             [0, 0, 0]],
    <BLANKLINE>
            [[1, 1, 1],
             [0, 0, 0]]])
    """
    index = tuple(index)
    if len(index) != len(share.shape) or any(not 0 <= i < s for i, s in zip(index, share.shape)):
        raise NormInputError(say(en=f"index {index} does not point into a tensor of shape {_fmt(share.shape)}",
                                 ko=f"인덱스 {index}: 모양 {_fmt(share.shape)}인 텐서의 범위를 벗어납니다."))
    cells = labels(share)
    return cells == cells[index]


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


# --------------------------------------------------------------------------- memory saved for backward

class SavedForBackward:
    """What a forward pass leaves in the autograd graph for its backward (see :func:`saved_for_backward`).

    ``tensors`` lists each distinct saved storage once as ``(shape, dtype, nbytes)``; ``nbytes``
    is their total: the memory the graph keeps alive until backward runs (or the graph is freed).
    """

    def __init__(self, resident=()) -> None:
        self.tensors = []
        self._seen = set()
        self._resident = {t.untyped_storage().data_ptr() for t in resident}

    def _pack(self, t: Tensor) -> Tensor:
        storage = t.untyped_storage()
        key = (storage.data_ptr(), storage.nbytes())
        if key not in self._seen and storage.data_ptr() not in self._resident:
            self._seen.add(key)
            self.tensors.append((tuple(t.shape), t.dtype, storage.nbytes()))
        return t

    @property
    def nbytes(self) -> int:
        return sum(n for _, _, n in self.tensors)

    def __repr__(self) -> str:
        return f"SavedForBackward({len(self.tensors)} tensors, {self.nbytes} bytes)"


def saved_for_backward(fn, *args, resident=(), **kwargs) -> SavedForBackward:
    """Run ``fn(*args, **kwargs)`` and record every tensor autograd saves for the backward pass.

    A tensor saved twice (or two views of one storage) is counted once, with its whole storage.
    Tensors in ``resident`` (a model's parameters, say γ and β) are not counted: they stay in memory
    whether or not a backward needs them, so saving them costs nothing.

    >>> from normlib import autograd
    >>> x = torch.randn(4, 8, requires_grad=True)
    >>> saved_for_backward(autograd.layer_norm, x, 8).tensors      # x, the 4 means, the 4 reciprocal stds
    [((4, 8), torch.float32, 128), ((4, 1), torch.float32, 16), ((4, 1), torch.float32, 16)]
    """
    record = SavedForBackward(resident)
    with torch.autograd.graph.saved_tensors_hooks(record._pack, lambda t: t):
        fn(*args, **kwargs)
    return record


# --------------------------------------------------------------------------- collectives, recorded

@dataclass(frozen=True)
class Collective:
    """One collective call: which, how many numbers this process sent, their dtype, the group's size."""

    op: str
    numel: int
    dtype: torch.dtype
    world_size: int

    @property
    def nbytes(self) -> int:
        """Bytes this process contributes (an ``all_gather`` then receives ``world_size`` times as many)."""
        return self.numel * torch.empty((), dtype=self.dtype).element_size()


class _Recording:
    """``torch.distributed`` as :mod:`normlib.distributed` sees it inside :func:`traffic`: the same
    module, except that ``all_gather`` and ``all_reduce`` note each call before making it."""

    def __init__(self, dist, calls: List[Collective]) -> None:
        self._dist, self._calls = dist, calls

    def __getattr__(self, name: str):
        return getattr(self._dist, name)

    def _note(self, op: str, t: Tensor, group) -> None:
        self._calls.append(Collective(op, t.numel(), t.dtype, self._dist.get_world_size(group)))

    def all_gather(self, tensor_list, tensor, group=None, **kwargs):
        self._note("all_gather", tensor, group)
        return self._dist.all_gather(tensor_list, tensor, group=group, **kwargs)

    def all_reduce(self, tensor, *args, group=None, **kwargs):
        self._note("all_reduce", tensor, group)
        return self._dist.all_reduce(tensor, *args, group=group, **kwargs)


@contextmanager
def traffic() -> Iterator[List[Collective]]:
    """Record the collectives normlib's synchronized BatchNorm makes inside the ``with`` block.

    :mod:`normlib.distributed` reaches ``torch.distributed`` through its name ``dist``; inside the
    block that name holds a recording stand-in (blocks nest: each records what the inner ones do).

    >>> with traffic() as calls:
    ...     pass
    >>> calls
    []
    """
    calls: List[Collective] = []
    before = distributed.dist
    distributed.dist = _Recording(before, calls)
    try:
        yield calls
    finally:
        distributed.dist = before
