"""normlib.axes: the table of which axes each method pools, and the arguments it refuses.

That these axes are exactly what torch pools is checked in tests/book/test_instruments.py, through
the book's ``instruments.mask`` (perturb one element, see which of *torch's* outputs move), and
by every comparison with torch in this folder, whose tolerances are per statistic of normlib.axes.
"""

from __future__ import annotations

import pytest

from normlib import axes


def test_axes_by_layout():
    """The table the chapters teach, written out."""
    assert axes.batch_norm_axes((8, 3)).axes == (0,)
    assert axes.batch_norm_axes((8, 3, 10)).axes == (0, 2)
    assert axes.batch_norm_axes((8, 3, 5, 5)).axes == (0, 2, 3)
    assert axes.instance_norm_axes((8, 3, 5, 5)).axes == (2, 3)
    assert axes.layer_norm_axes((4, 10, 16), 16).axes == (2,)
    assert axes.layer_norm_axes((4, 10, 16), (10, 16)).axes == (1, 2)
    assert axes.rms_norm_axes((4, 10, 16), 16).axes == (2,)
    gn = axes.group_norm_axes((2, 6, 4, 4), 3)
    assert gn.groups == ((0, 1), (2, 3), (4, 5))
    assert gn.count == 2 * 4 * 4 and gn.num_statistics == 2 * 3


def test_sharing_rejects_bad_arguments():
    with pytest.raises(axes.NormInputError, match="needs normalized_shape"):
        axes.sharing("layer", (2, 3))
    with pytest.raises(axes.NormInputError, match="needs num_groups"):
        axes.sharing("group", (2, 4))
    with pytest.raises(axes.NormInputError, match="takes no num_groups"):
        axes.sharing("batch", (2, 4), num_groups=2)
