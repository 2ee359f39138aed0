"""normlib_book.instruments, the chapters' measuring tools: which cells share a statistic (labels,
mask, sequence_sharing), what autograd saves (saved_for_backward), which collectives synchronized
BatchNorm makes (traffic).

The cells are checked against torch, not against normlib's arithmetic: perturb one element and see
which outputs of *torch's* layer change. Adding a constant to x[i] changes the mean of x[i]'s group,
so every output in that group moves, and no output outside it does.
"""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as TF

import normlib.autograd as A
from normlib import axes, distributed
from normlib_book import instruments
from normlib_book.instruments import labels, mask, saved_for_backward, sequence_sharing, traffic
from normlib_book.launch import launch

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

# (B, L, D) token tensors: torch's layers as the transformer chapters apply them, and the slip
SEQUENCE_TORCH = {
    "batch": lambda x: TF.batch_norm(x.transpose(1, 2), None, None, training=True).transpose(1, 2),
    "layer": lambda x: TF.layer_norm(x, (x.shape[-1],)),
    "rms": lambda x: TF.rms_norm(x, (x.shape[-1],)),
    "batch_dim0": lambda x: (x - x.mean(0)) / torch.sqrt(x.var(0, unbiased=False) + 1e-5),
}


def _pooled_by_torch(torch_fn, shape, index):
    torch.manual_seed(0)
    x = torch.randn(shape, dtype=torch.float64)
    bumped = x.clone()
    bumped[index] += 0.75
    return (torch_fn(bumped) - torch_fn(x)).abs() > 1e-12


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}{c[1]}{c[2]}" for c in CASES])
def test_mask_is_what_torch_pools(case):
    method, shape, kwargs, torch_fn = case
    s = axes.sharing(method, shape, **kwargs)
    for index in itertools.product(*[range(n) for n in shape]):
        assert torch.equal(_pooled_by_torch(torch_fn, shape, index), mask(s, index)), f"{method}{shape}: element {index}"


@pytest.mark.parametrize("method", instruments.SEQUENCE_METHODS)
def test_sequence_sharing_is_what_torch_pools(method):
    shape = (3, 2, 4)
    s = sequence_sharing(method, shape)
    for index in itertools.product(*[range(n) for n in shape]):
        assert torch.equal(_pooled_by_torch(SEQUENCE_TORCH[method], shape, index), mask(s, index)), (method, index)


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}{c[1]}{c[2]}" for c in CASES])
def test_counts_and_labels_are_consistent(case):
    method, shape, kwargs, _ = case
    s = axes.sharing(method, shape, **kwargs)
    cells = labels(s)
    counts = torch.bincount(cells.flatten())
    assert len(counts) == s.num_statistics
    assert (counts == s.count).all()
    assert cells.shape == torch.Size(shape)


def test_group_norm_extremes_coincide_with_layer_and_instance():
    shape = (2, 4, 3, 3)
    assert torch.equal(labels(axes.group_norm_axes(shape, 1)), labels(axes.layer_norm_axes(shape, shape[1:])))
    assert torch.equal(labels(axes.group_norm_axes(shape, 4)), labels(axes.instance_norm_axes(shape)))


def test_the_cells_refuse_what_does_not_fit():
    with pytest.raises(axes.NormInputError, match=r"index \(2, 0\) does not point into a tensor of shape \(2, 4\)"):
        mask(axes.sharing("batch", (2, 4)), (2, 0))
    with pytest.raises(axes.NormInputError, match="method must be one of"):
        sequence_sharing("group", (2, 3, 4))
    with pytest.raises(axes.NormInputError, match=r"\(B, L, D\) with every size >= 1"):
        sequence_sharing("layer", (2, 3))


# ------------------------------------------------------------------ memory saved for backward

def test_saved_for_backward_counts_a_storage_once():
    x = torch.randn(10, 10, requires_grad=True)
    record = saved_for_backward(lambda: (x * x).sum())       # mul saves x twice: one storage
    assert record.nbytes == 400 and len(record.tensors) == 1


def test_saved_for_backward_leaves_resident_parameters_out():
    # γ and β live with the model whether or not a backward saves them (chapter 7 counts without them)
    x = torch.randn(4, 8, requires_grad=True)
    w, b = torch.ones(8, requires_grad=True), torch.zeros(8, requires_grad=True)
    everything = saved_for_backward(A.layer_norm, x, 8, w, b)
    without = saved_for_backward(A.layer_norm, x, 8, w, b, resident=(w, b))
    assert everything.nbytes - without.nbytes == w.nbytes, (everything.tensors, without.tensors)
    assert (8,) not in [shape for shape, _, _ in without.tensors]


# ------------------------------------------------------------------ collectives

def test_traffic_puts_torch_distributed_back_and_nests():
    before = distributed.dist
    with traffic() as outer:
        with traffic() as inner:
            assert distributed.dist.is_available is torch.distributed.is_available   # the rest passes through
        assert distributed.dist is not before
    assert distributed.dist is before and outer == [] and inner == []


def _two_steps(rank, world_size):
    layer = distributed.SyncBatchNorm(3)
    x = torch.randn(4, 3, 2, generator=torch.Generator().manual_seed(rank)).requires_grad_()
    with traffic() as outer:
        with traffic() as inner:
            layer(x).sum().backward()
    return outer, inner


@pytest.mark.distributed
def test_traffic_records_synchronized_batchnorms_collectives():
    for outer, inner in launch(_two_steps, 2, timeout=120):
        assert outer == inner
        assert [(c.op, c.numel, c.dtype, c.world_size) for c in inner] == [
            ("all_gather", 2 * 3 + 1, torch.float64, 2), ("all_reduce", 2 * 3, torch.float32, 2)]
        assert inner[0].nbytes == 7 * 8
