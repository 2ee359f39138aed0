"""normlib.axes names exactly the elements that torch pools into one statistic.

The check does not trust normlib's arithmetic: it perturbs one element and looks at which
outputs of *torch's* layer change. Adding a constant to x[i] changes the mean of x[i]'s group,
so every output in that group moves, and no output outside it does.
"""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as TF

from normlib import axes

CASES = [
    ("batch", (4, 3), {}, lambda x: TF.batch_norm(x, None, None, training=True)),
    ("batch", (2, 3, 4), {}, lambda x: TF.batch_norm(x, None, None, training=True)),
    ("batch", (2, 3, 2, 2), {}, lambda x: TF.batch_norm(x, None, None, training=True)),
    ("instance", (2, 3, 4), {}, lambda x: TF.instance_norm(x)),
    ("instance", (2, 2, 2, 3), {}, lambda x: TF.instance_norm(x)),
    ("group", (2, 6, 3), {"num_groups": 3}, lambda x: TF.group_norm(x, 3)),
    ("group", (2, 4, 2, 2), {"num_groups": 2}, lambda x: TF.group_norm(x, 2)),
    ("group", (2, 4, 3), {"num_groups": 1}, lambda x: TF.group_norm(x, 1)),
    ("group", (2, 4, 3), {"num_groups": 4}, lambda x: TF.group_norm(x, 4)),
    ("layer", (4, 3), {"normalized_shape": 3}, lambda x: TF.layer_norm(x, (3,))),
    ("layer", (2, 5, 4), {"normalized_shape": 4}, lambda x: TF.layer_norm(x, (4,))),
    ("layer", (2, 3, 2, 2), {"normalized_shape": (3, 2, 2)}, lambda x: TF.layer_norm(x, (3, 2, 2))),
    ("rms", (2, 5, 4), {"normalized_shape": 4}, lambda x: TF.rms_norm(x, (4,))),
    ("rms", (3, 2, 2), {"normalized_shape": [2, 2]}, lambda x: TF.rms_norm(x, (2, 2))),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}{c[1]}{c[2]}" for c in CASES])
def test_mask_is_what_torch_pools(case):
    method, shape, kwargs, torch_fn = case
    s = axes.sharing(method, shape, **kwargs)
    torch.manual_seed(0)
    x = torch.randn(shape, dtype=torch.float64)
    base = torch_fn(x)
    for index in itertools.product(*[range(n) for n in shape]):
        bumped = x.clone()
        bumped[index] += 0.75
        changed = (torch_fn(bumped) - base).abs() > 1e-12
        assert torch.equal(changed, s.mask(index)), f"{method}{shape}: element {index}"


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}{c[1]}{c[2]}" for c in CASES])
def test_counts_and_labels_are_consistent(case):
    method, shape, kwargs, _ = case
    s = axes.sharing(method, shape, **kwargs)
    labels = s.labels()
    counts = torch.bincount(labels.flatten())
    assert len(counts) == s.num_statistics
    assert (counts == s.count).all()
    assert labels.shape == torch.Size(shape)


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


def test_group_norm_extremes_coincide_with_layer_and_instance():
    shape = (2, 4, 3, 3)
    g1 = axes.group_norm_axes(shape, 1).labels()
    layer = axes.layer_norm_axes(shape, shape[1:]).labels()
    assert torch.equal(g1, layer)
    gc = axes.group_norm_axes(shape, 4).labels()
    inst = axes.instance_norm_axes(shape).labels()
    assert torch.equal(gc, inst)


def test_sharing_rejects_bad_arguments():
    with pytest.raises(axes.NormInputError, match="needs normalized_shape"):
        axes.sharing("layer", (2, 3))
    with pytest.raises(axes.NormInputError, match="needs num_groups"):
        axes.sharing("group", (2, 4))
    with pytest.raises(axes.NormInputError, match="takes no num_groups"):
        axes.sharing("batch", (2, 4), num_groups=2)
    with pytest.raises(axes.NormInputError, match=r"index \(2, 0\) does not point into a tensor of shape \(2, 4\)"):
        axes.sharing("batch", (2, 4)).mask((2, 0))
