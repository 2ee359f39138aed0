"""Mean and variance, four ways — and when each one can be trusted.

:func:`moments` is the one every layer of normlib uses: ``(μ, σ²)`` over given axes, kept as
size-1 axes so they broadcast. The functions of the table below return :class:`Moments`
``(count, mean, m2)`` where ``m2 = Σ (x − mean)²``;
``.var()`` divides by ``count`` (population variance, what normalization layers use) and
``.var(correction=1)`` by ``count − 1`` (the sample variance, what ``running_var`` stores).

=============  =========================================================================
function       exact when … / fails when …
=============  =========================================================================
two_pass       First the mean, then the mean of squared deviations. It subtracts large
               numbers too (x − mean), but exact data minus a mean that is only slightly
               wrong (by c ≈ u·|mean|, u = the dtype's rounding unit): the subtraction
               is exact and c enters the sum of squares only as n·c², because the
               deviations from the true mean sum to zero. Relative error ≈ a few u plus
               (u·|mean|/std)²: in float32 with std 1, about 4e-8 up to offset 1e3,
               3e-5 on average at offset 1e5 (chapter 2 measures it over 20 seeds).
               The default everywhere in normlib. Needs the data twice (not streamable).
naive          ``E[x²] − E[x]²`` in one pass. Exact in exact arithmetic, but both terms are
               ≈ offset², each rounded by ≈ u·offset², so their difference cancels
               catastrophically when ``|mean| ≫ std``: relative error ≈ u·(mean/std)². In
               float32 with offset 1e4 and std 1, E[x²] ≈ 1e8 is only resolved to ≈ 8, and
               the variance can come out 0, negative (then ``sqrt`` gives nan) or wildly
               off; in bfloat16 (u = 2⁻⁸) it breaks already at mean/std ≈ 16. Shown only
               to explain why nobody should use it. (Chapter 2.)
welford        One pass, one element at a time: ``mean += δ / n``, ``m2 += δ · (x − mean)``.
               It never forms offset², but the running mean is rounded anew at every
               step, and that error enters m2 to first order: as written (``shift=False``)
               its relative error grows like u·|mean|/std (u = the dtype's rounding
               unit), not like (|mean|/std)² as the naive one's does. In float32 with
               std 1, chapter 2 measures 1.9e-4 on average at offset 1e4 and 4.4e-3 at
               1e5 (20 seeds). Run on ``x − x₀`` (the first value: a stream knows it from
               the start, ``shift=True``, the default) it reads data whose offset is about
               std, and stays near 6e-7 at every offset up to 1e5.
               A Python loop over the reduced elements here: for teaching, not speed.
merge          Chan et al.'s parallel combination of two partial ``(count, mean, m2)``:
               ``δ = mean_b − mean_a``, ``mean = mean_a + δ · n_b / n``,
               ``m2 = m2_a + m2_b + δ² · n_a · n_b / n``. Exact in exact arithmetic and
               stable (no offset² terms); how statistics from several devices or chunks
               combine (chapter 9).
=============  =========================================================================

``dim`` works as in ``torch.mean``: ``None`` pools everything, an int or a tuple of ints
pools those axes (the result has the reduced axes removed).
"""

from __future__ import annotations

from typing import Iterable, NamedTuple, Optional, Sequence, Tuple, Union

import torch
from torch import Tensor

from .messages import errors

__all__ = ["moments", "Moments", "two_pass", "naive", "welford", "merge", "merge_all", "chunked"]

Dim = Optional[Union[int, Sequence[int]]]


def moments(x: Tensor, dims: Sequence[int]) -> Tuple[Tensor, Tensor]:
    """The mean μ and population variance σ² over ``dims``, in two passes (chapter 2).

    The one place normlib computes them: every layer (:mod:`normlib.functional`,
    :mod:`normlib.autograd`, :mod:`normlib.distributed`) and the classroom's checkers call it.
    Both keep the reduced axes (size 1), so they broadcast against ``x``.

    >>> mean, var = moments(torch.tensor([[2.0], [4.0], [6.0], [8.0]]), (0,))   # feature 1
    >>> mean, var
    (tensor([[5.]]), tensor([[5.]]))
    """
    mean = x.mean(dim=dims, keepdim=True)                      # pass 1: μ = Σ x / n
    centered = x - mean                                        #         x − μ
    var = (centered * centered).mean(dim=dims, keepdim=True)   # pass 2: σ² = Σ (x − μ)² / n
    return mean, var


class Moments(NamedTuple):
    """Partial statistics of a set of numbers: how many, their mean, and ``m2 = Σ (x − mean)²``.

    >>> Moments(count=4, mean=torch.tensor(5.0), m2=torch.tensor(20.0)).var()
    tensor(5.)
    """

    count: int
    mean: Tensor
    m2: Tensor

    def var(self, correction: int = 0) -> Tensor:
        """``m2 / (count − correction)``: ``correction=0`` population, ``1`` sample variance.

        >>> two_pass(torch.tensor([2.0, 4.0, 6.0, 8.0])).var()
        tensor(5.)
        >>> two_pass(torch.tensor([2.0, 4.0, 6.0, 8.0])).var(correction=1)
        tensor(6.6667)
        """
        return self.m2 / (self.count - correction)


def _dims(x: Tensor, dim: Dim) -> Tuple[int, ...]:
    if dim is None:
        return tuple(range(x.dim()))
    if isinstance(dim, int):
        dim = (dim,)
    return tuple(sorted(d % x.dim() for d in dim)) if x.dim() else ()


def _count(x: Tensor, dims: Tuple[int, ...]) -> int:
    n = 1
    for d in dims:
        n *= x.shape[d]
    return n


def two_pass(x: Tensor, dim: Dim = None) -> Moments:
    """Mean first, then the sum of squared deviations from it (:func:`moments`). Stable.

    >>> m = two_pass(torch.tensor([1.0, 10.0, 100.0]))
    >>> m.count, m.mean, m.var()
    (3, tensor(37.), tensor(1998.))
    """
    dims = _dims(x, dim)
    n = _count(x, dims)
    mean, var = moments(x, dims)
    kept = [s for d, s in enumerate(x.shape) if d not in dims]
    return Moments(n, mean.reshape(kept), var.reshape(kept) * n)


def naive(x: Tensor, dim: Dim = None) -> Moments:
    """``Var = E[x²] − E[x]²`` in one pass. Unstable when ``|mean| ≫ std`` — see the module docs.

    >>> naive(torch.tensor([2.0, 4.0, 6.0, 8.0])).var()      # fine without an offset
    tensor(5.)
    """
    dims = _dims(x, dim)
    n = _count(x, dims)
    mean = x.mean(dim=dims)
    mean_of_squares = (x * x).mean(dim=dims)
    return Moments(n, mean, (mean_of_squares - mean * mean) * n)


def welford(x: Tensor, dim: Dim = None, shift: bool = True) -> Moments:
    """Welford's streaming update, one element (per reduced position) at a time.

    With ``shift=True`` the stream is ``x − x₀`` (its first value), added back to the mean at
    the end: the variance is unchanged by a shift, and the running mean stays small.

    >>> welford(torch.tensor([2.0, 4.0, 6.0, 8.0])).var()
    tensor(5.)
    """
    dims = _dims(x, dim)
    kept = [d for d in range(x.dim()) if d not in dims]
    # Put the reduced axes last and flatten them: the stream to walk along.
    stream = x.permute(*kept, *dims).reshape(*[x.shape[d] for d in kept], -1)
    mean = torch.zeros(stream.shape[:-1], dtype=x.dtype, device=x.device)
    m2 = torch.zeros_like(mean)
    origin = stream[..., 0] if shift and stream.shape[-1] else torch.zeros_like(mean)
    stream = stream - origin.unsqueeze(-1)
    n = 0
    for i in range(stream.shape[-1]):
        value = stream[..., i]
        n += 1
        delta = value - mean
        mean = mean + delta / n
        m2 = m2 + delta * (value - mean)
    if n == 0:
        mean = torch.full_like(mean, float("nan"))
    return Moments(n, mean + origin, m2)


def merge(a: Moments, b: Moments) -> Moments:
    """Combine the statistics of two disjoint parts into those of their union (Chan et al.).

    >>> x = torch.tensor([2.0, 4.0, 6.0, 8.0])
    >>> both = merge(two_pass(x[:1]), two_pass(x[1:]))
    >>> both.count, both.mean, both.var()
    (4, tensor(5.), tensor(5.))
    """
    if a.count == 0:
        return b
    if b.count == 0:
        return a
    n = a.count + b.count
    delta = b.mean - a.mean
    mean = a.mean + delta * (b.count / n)
    m2 = a.m2 + b.m2 + delta * delta * (a.count * b.count / n)
    return Moments(n, mean, m2)


def merge_all(parts: Iterable[Moments]) -> Moments:
    """Merge any number of partial statistics, left to right.

    >>> x = torch.arange(10.0)
    >>> merge_all(two_pass(c) for c in x.split(3)).var() == two_pass(x).var()
    tensor(True)
    """
    total: Optional[Moments] = None
    for part in parts:
        total = part if total is None else merge(total, part)
    if total is None:
        raise ValueError(errors.merge_all_empty())
    return total


def chunked(x: Tensor, chunks: int, dim: int = 0) -> Moments:
    """Statistics over axis ``dim`` computed chunk by chunk (two-pass each) and merged.

    >>> chunked(torch.tensor([2.0, 4.0, 6.0, 8.0]), chunks=3).var()
    tensor(5.)
    """
    if chunks < 1:
        raise ValueError(errors.chunks_not_positive(chunks))
    return merge_all(two_pass(c, dim) for c in torch.tensor_split(x, chunks, dim=dim))
