"""The book's running example: one table of 4 samples (A–D) × 3 features.

Every chapter normalizes this same table, so a reader can compare methods number by number.
Feature 1 is 2, 4, 6, 8 and sample A is 2, 3, 4 (the numbers introductory lessons work by hand);
the other cells were chosen so that normalizing by column (BatchNorm) and by row (LayerNorm)
give visibly different tables: the three features live on different scales.

>>> table()
tensor([[ 2.,  3.,  4.],
        [ 4., 10., 20.],
        [ 6.,  5., 12.],
        [ 8.,  2., 36.]])
>>> SAMPLES, FEATURES
(('A', 'B', 'C', 'D'), ('x1', 'x2', 'x3'))

Differences that are only rounding are printed as a bound, not as digits (see :func:`within`).
"""

from __future__ import annotations

import math
from typing import Callable

import torch
from torch import nn

from . import i18n

__all__ = ["SAMPLES", "FEATURES", "TABLE", "TOLERANCE", "table", "within", "compare_with_torch"]

SAMPLES = ("A", "B", "C", "D")
FEATURES = ("x1", "x2", "x3")
TABLE = (
    (2.0, 3.0, 4.0),
    (4.0, 10.0, 20.0),
    (6.0, 5.0, 12.0),
    (8.0, 2.0, 36.0),
)


def table(dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """A fresh ``(4, 3)`` tensor of the running example (rows = samples A–D, columns = features)."""
    return torch.tensor(TABLE, dtype=dtype)


# The book's tolerance for "equal up to rounding" (README, "How equal is measured").
TOLERANCE = {torch.float64: 1e-10, torch.float32: 1e-5}


def within(difference, dtype: torch.dtype = torch.float32) -> str:
    """Print a difference that should be rounding alone, the same way on every machine.

    Two implementations of one formula in float32 differ by about 1e-7, but the exact digits
    depend on the CPU (its vector width, its math library) and the thread count, because
    they change the order in which sums are accumulated. So a chapter does not print
    ``2.4e-07``: it prints the bound it promises, ``< 1e-5`` (float32) or ``< 1e-10``
    (float64), and the difference itself when it is larger (then the stored output no
    longer matches, and nbval fails).

    >>> within(2.4e-7)
    '< 1e-5'
    >>> within(torch.tensor(3.3e-16, dtype=torch.float64), torch.float64)
    '< 1e-10'
    >>> within(0.25)
    '2.5e-01 (more than 1e-5)'
    >>> within(2.4e-7, torch.float16)
    Traceback (most recent call last):
    ...
    ValueError: within() knows the tolerance of torch.float64 and torch.float32, but got torch.float16
    """
    if dtype not in TOLERANCE:
        raise ValueError(f"within() knows the tolerance of {' and '.join(map(str, TOLERANCE))}, but got {dtype}")
    value = float(difference.detach().max()) if isinstance(difference, torch.Tensor) else float(difference)
    bound = TOLERANCE[dtype]
    exponent = round(math.log10(bound))
    if abs(value) < bound:  # NaN fails this test and is printed
        return f"< 1e{exponent}"
    return f"{value:.1e} (more than 1e{exponent})"


def compare_with_torch(ours: nn.Module, theirs: nn.Module, make_batch: Callable[[int], torch.Tensor], lang: str,
                       steps: int = 5) -> None:
    """Print how far a normlib BatchNorm is from torch.nn's through training, evaluation and ``state_dict``.

    Both layers get the same random γ and β; ``steps`` training batches ``make_batch(0)`` …
    go through both (the differences printed are those of the last), then one batch in
    evaluation mode. Then their ``state_dict`` keys and values are compared, and torch's
    ``state_dict`` is loaded into a fresh normlib layer. Differences print with :func:`within`;
    the words are in ``lang``.

    >>> gen = torch.Generator().manual_seed(0)
    >>> from normlib import BatchNorm1d
    >>> compare_with_torch(BatchNorm1d(2), nn.BatchNorm1d(2), lambda s: torch.randn(8, 2, generator=gen), "en")
    BatchNorm1d: train < 1e-5 | eval < 1e-5 | state_dict keys equal True | values < 1e-5 | loads torch's: True
      keys: ['weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked']
    """
    theirs.load_state_dict(ours.state_dict())
    with torch.no_grad():
        ours.weight.normal_()
        ours.bias.normal_()
        theirs.weight.copy_(ours.weight)
        theirs.bias.copy_(ours.bias)
    for step in range(steps):
        batch = make_batch(step)
        train = (ours(batch) - theirs(batch)).abs().max()
    ours.eval(), theirs.eval()
    batch = make_batch(steps)
    evaluation = (ours(batch) - theirs(batch)).abs().max()
    a, b = ours.state_dict(), theirs.state_dict()
    values = max((a[k].double() - b[k].double()).abs().max().item() for k in a)
    fresh = type(ours)(ours.num_features)
    fresh.load_state_dict(theirs.state_dict())
    loads = all(torch.equal(t, b[k]) for k, t in fresh.state_dict().items())
    print(i18n.text("cmp:summary", lang).format(
        name=type(ours).__name__, train=within(train.detach()), eval=within(evaluation.detach()),
        keys=list(a) == list(b), values=within(values), loads=loads))
    print(i18n.text("cmp:keys", lang), list(a))
