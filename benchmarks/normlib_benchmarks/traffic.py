"""Counting memory passes: how many input-sized tensors a call reads and writes, operation by
operation (chapter 8 derives this counter in its notebook; chapter 11 counts DyT with it).

A **pass** is one read or one write of a tensor the size of the input. :class:`Traffic` is a
``TorchDispatchMode``: it sees every aten operation PyTorch runs and adds up, for each, the
tensors of at least ``size`` elements among its arguments (reads) and its results (writes).
Views (``expand``, ``detach``, ``view`` …) move no memory and are not counted. :func:`passes`
counts a function's forward and then its backward (``torch.autograd.grad``, so no gradient
accumulation is mixed in).

What it cannot see is the inside of a kernel: a fused kernel counts as its arguments and its
results (torch's ``native_layer_norm`` reads x and writes y: 2 passes), however many times it
sweeps its input inside (chapter 8: BatchNorm2d's training kernel sweeps it at least twice), and
code that ``torch.compile`` generates runs outside the dispatcher, unseen.

>>> x = torch.randn(64, 32, requires_grad=True)
>>> forward, backward = passes(lambda: torch.tanh(0.5 * x), [x])
>>> (forward.reads, forward.writes, forward.kernels), (backward.reads, backward.writes)
((2, 2, 2), (3, 2))
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence, Tuple

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

__all__ = ["Traffic", "passes", "variant_passes"]


class Traffic(TorchDispatchMode):
    """Counts, while active, the input-sized tensors each aten operation reads and writes.

    ``reads``, ``writes``: passes over a tensor of ``size`` elements (or more); ``kernels``: the
    operations that read or wrote one; ``ops``: their names, in order.
    """

    def __init__(self, size: int) -> None:
        super().__init__()
        if size < 1:
            raise ValueError(f"size must be a positive number of elements; got {size}")
        self.size, self.reads, self.writes, self.kernels = size, 0, 0, 0
        self.ops: list = []

    @property
    def total(self) -> int:
        """Reads plus writes: the passes over memory."""
        return self.reads + self.writes

    def _big(self, tree) -> int:
        # each distinct tensor once: ``c * c`` is given one tensor twice but reads it from memory once
        return len({id(t) for t in tree_flatten(tree)[0] if isinstance(t, torch.Tensor) and t.numel() >= self.size})

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func.is_view:
            return out
        reads, writes = self._big((args, kwargs)), self._big(out)
        if reads + writes:
            self.reads, self.writes, self.kernels = self.reads + reads, self.writes + writes, self.kernels + 1
            self.ops.append(func.__name__)
        return out


def passes(fn: Callable[[], torch.Tensor], wrt: Sequence[torch.Tensor],
           size: Optional[int] = None) -> Tuple[Traffic, Traffic]:
    """The :class:`Traffic` of ``y = fn()`` and of its backward, the gradients of ``wrt`` for an
    upstream gradient of ones (made before counting); chapter 11 counts DyT, LayerNorm and RMSNorm. ``size``: the elements of a pass, by default
    those of ``wrt[0]`` (the input)."""
    if not wrt:
        raise ValueError("wrt must name the tensors to differentiate, the input first; got none")
    size = wrt[0].numel() if size is None else size
    with Traffic(size) as forward:
        y = fn()
    dy = torch.ones_like(y)
    with Traffic(size) as backward:
        torch.autograd.grad(y, list(wrt), dy)
    return forward, backward


def variant_passes(op: str, variant: str, shape: Optional[Sequence[int]] = None) -> Tuple[int, int]:
    """(forward, forward+backward): the passes one benchmark call of ``variant`` of ``op`` makes,
    counted on a small seeded input (the count does not depend on the size), with γ and β. The
    predicted time of a call is these passes × the input's bytes ÷ the copy bandwidth (chapter 8;
    ``make bench`` writes it beside each measured time). The compiled variant runs outside the
    dispatcher and cannot be counted.

    >>> variant_passes("layer_norm", "torch")
    (2, 5)
    """
    from .variants import SMALL_SIZES, Case, check, function

    if variant == "compiled":
        raise ValueError("variant must be one that runs aten operations ('readable', 'hand', 'torch'); got 'compiled'")
    shape = check(op, (variant,), "forward+backward", shape or SMALL_SIZES[op][0])
    case = Case(op, shape, "forward+backward")
    fn = function(op, variant)
    forward, backward = passes(lambda: case.forward(fn), case.leaves)
    return forward.total, forward.total + backward.total
