"""The book's running example: one table of 4 samples (A–D) × 3 features.

Every chapter normalizes this same table, so a reader can compare methods number by number.
Feature 1 is 2, 4, 6, 8 and sample A is 2, 3, 4 (the worked numbers of the source lessons);
the other cells were chosen so that normalizing by column (BatchNorm) and by row (LayerNorm)
give visibly different tables: the three features live on different scales.

>>> table()
tensor([[ 2.,  3.,  4.],
        [ 4., 10., 20.],
        [ 6.,  5., 12.],
        [ 8.,  2., 36.]])
>>> SAMPLES, FEATURES
(('A', 'B', 'C', 'D'), ('x1', 'x2', 'x3'))
"""

from __future__ import annotations

import torch

__all__ = ["SAMPLES", "FEATURES", "TABLE", "table"]

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
