"""Where torch raises, normlib raises too — an exception torch code would catch, with a message
that names what was expected and what was received."""

from __future__ import annotations

import pytest
import torch
import torch.nn as tnn
import torch.nn.functional as TF

import normlib
import normlib.functional as NF

x24 = torch.randn(2, 4)
x253 = torch.randn(2, 5, 3)
x243 = torch.randn(2, 4, 3)
ints = torch.arange(24).reshape(2, 4, 3)

# (id, call taking the functional module or the nn module, strings the message must contain)
CASES = [
    # BatchNorm training with one value per channel
    ("bn-one-value-2d", lambda F: F.batch_norm(torch.randn(1, 3), torch.zeros(3), torch.ones(3), training=True),
     ["(1, 3)", "more than 1 value per channel"]),
    ("bn-one-value-3d", lambda F: F.batch_norm(torch.randn(1, 3, 1), None, None, training=True),
     ["(1, 3, 1)", "more than 1 value per channel"]),
    ("bn-one-value-4d", lambda F: F.batch_norm(torch.randn(1, 3, 1, 1), None, None, training=True),
     ["(1, 3, 1, 1)", "more than 1 value per channel"]),
    # channels not divisible by num_groups
    ("gn-not-divisible", lambda F: F.group_norm(x253, 2), ["(2, 5, 3)", "num_groups=2", "divisible"]),
    ("gn-one-value-per-group", lambda F: F.group_norm(torch.randn(1, 2), 2), ["(1, 2)", "num_groups=2"]),
    # normalized_shape that does not match the trailing dims
    ("ln-mismatch", lambda F: F.layer_norm(x24, (3,)), ["(2, 4)", "(*, 3)"]),
    ("ln-mismatch-2d", lambda F: F.layer_norm(x243, (4, 4)), ["(2, 4, 3)", "(*, 4, 4)"]),
    ("ln-too-few-dims", lambda F: F.layer_norm(torch.randn(4), (3, 4)), ["(4,)", "(*, 3, 4)"]),
    ("rms-mismatch", lambda F: F.rms_norm(x24, (3,)), ["(2, 4)", "(*, 3)"]),
    # weight / bias of the wrong shape
    ("ln-weight", lambda F: F.layer_norm(x24, (4,), torch.ones(3)), ["(4,)", "(3,)", "weight"]),
    ("ln-bias", lambda F: F.layer_norm(x24, (4,), None, torch.ones(5)), ["(4,)", "(5,)", "bias"]),
    ("rms-weight", lambda F: F.rms_norm(x24, (4,), torch.ones(2, 2)), ["(4,)", "(2, 2)", "weight"]),
    ("bn-weight", lambda F: F.batch_norm(x24, None, None, torch.ones(5), training=True), ["(4,)", "(5,)", "weight"]),
    ("bn-bias", lambda F: F.batch_norm(x24, None, None, None, torch.ones(3), training=True), ["(4,)", "(3,)", "bias"]),
    ("bn-running", lambda F: F.batch_norm(x24, torch.zeros(3), torch.ones(3), training=True),
     ["(4,)", "(3,)", "running_mean"]),
    ("gn-weight", lambda F: F.group_norm(x243, 2, torch.ones(3)), ["(4,)", "(3,)", "weight"]),
    ("in-weight", lambda F: F.instance_norm(x243, None, None, torch.ones(3)), ["(4,)", "(3,)", "weight"]),
    # integer inputs
    ("ln-int", lambda F: F.layer_norm(ints, (3,)), ["torch.int64", "floating-point"]),
    ("rms-int", lambda F: F.rms_norm(ints, (3,)), ["torch.int64", "floating-point"]),
    ("bn-int", lambda F: F.batch_norm(ints, None, None, training=True), ["torch.int64", "floating-point"]),
    ("gn-int", lambda F: F.group_norm(ints, 2), ["torch.int64", "floating-point"]),
    ("in-int", lambda F: F.instance_norm(ints), ["torch.int64", "floating-point"]),
    # inputs with too few dimensions
    ("bn-1d", lambda F: F.batch_norm(torch.randn(3), torch.zeros(3), torch.ones(3), training=True),
     ["(3,)", "(N, C, *)"]),
    ("gn-1d", lambda F: F.group_norm(torch.randn(5), 1), ["(5,)", "(N, C, *)"]),
    ("in-no-spatial", lambda F: F.instance_norm(torch.randn(2, 3)), ["(2, 3)", "spatial"]),
    ("in-one-spatial", lambda F: F.instance_norm(torch.randn(2, 3, 1)), ["(2, 3, 1)", "spatial"]),
    # evaluation without running statistics; eps torch refuses; momentum=None in the functional form
    ("bn-eval-no-stats", lambda F: F.batch_norm(x24, None, None, training=False), ["running_mean", "training=True"]),
    ("in-eval-no-stats", lambda F: F.instance_norm(x243, use_input_stats=False), ["running_mean", "use_input_stats"]),
    ("bn-eps-zero-training", lambda F: F.batch_norm(x24, None, None, training=True, eps=0.0), ["eps", "0.0"]),
    ("bn-eps-negative-eval", lambda F: F.batch_norm(x24, torch.zeros(4), torch.ones(4), eps=-1e-3), ["eps", "-0.001"]),
    ("bn-momentum-none", lambda F: F.batch_norm(x24, torch.zeros(4), torch.ones(4), training=True, momentum=None),
     ["momentum", "None"]),
]

MODULE_CASES = [
    ("BatchNorm2d-3d-input", lambda nn: nn.BatchNorm2d(4)(x243), ["4D", "3D", "(2, 4, 3)"]),
    ("BatchNorm1d-4d-input", lambda nn: nn.BatchNorm1d(4)(torch.randn(2, 4, 3, 3)), ["2D or 3D", "4D"]),
    ("BatchNorm3d-4d-input", lambda nn: nn.BatchNorm3d(4)(torch.randn(2, 4, 3, 3)), ["5D", "4D"]),
    ("InstanceNorm2d-2d-input", lambda nn: nn.InstanceNorm2d(4)(x24), ["3D or 4D", "2D"]),
    ("InstanceNorm1d-channels", lambda nn: nn.InstanceNorm1d(5, affine=True)(x243), ["5", "(2, 4, 3)"]),
    ("GroupNorm-not-divisible", lambda nn: nn.GroupNorm(3, 5), ["num_channels=5", "num_groups=3", "divisible"]),
    ("LayerNorm-mismatch", lambda nn: nn.LayerNorm(3)(x24), ["(2, 4)", "(*, 3)"]),
    ("BatchNorm1d-batch-of-one", lambda nn: nn.BatchNorm1d(4)(torch.randn(1, 4)), ["(1, 4)", "more than 1 value"]),
]


def _raised(call):
    with pytest.raises(Exception) as info:
        call()
    return info.value


def _assert_raises_like_torch(torch_call, normlib_call, must_contain):
    theirs, ours = _raised(torch_call), _raised(normlib_call)
    # code written against torch catches normlib's exception
    assert isinstance(ours, type(theirs)), f"torch raised {type(theirs).__name__}, normlib {type(ours).__name__}: {ours}"
    for needle in must_contain:
        assert needle in str(ours), f"message lacks {needle!r}: {ours}"


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_functional_raises_like_torch(case):
    _, call, must_contain = case
    _assert_raises_like_torch(lambda: call(TF), lambda: call(NF), must_contain)


@pytest.mark.parametrize("case", MODULE_CASES, ids=[c[0] for c in MODULE_CASES])
def test_modules_raise_like_torch(case):
    _, call, must_contain = case
    _assert_raises_like_torch(lambda: call(tnn), lambda: call(normlib), must_contain)


def test_normalized_shape_must_be_ints():
    for bad in ((), "4", (2.0,), None):
        with pytest.raises(normlib.NormInputError, match="normalized_shape"):
            NF.layer_norm(x24, bad)
