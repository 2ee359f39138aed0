"""Inputs torch refuses, each case's call and the words normlib's message must hold, and how a
refusal is compared with torch's (tests/library: test_errors.py, test_autograd.py, test_messages.py)."""

from __future__ import annotations

import pytest
import torch

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
    ("in-momentum-none", lambda F: F.instance_norm(x243, torch.zeros(4), torch.ones(4), momentum=None),
     ["momentum", "None"]),
    # one running statistic without the other
    ("bn-train-running-var-missing", lambda F: F.batch_norm(x24, torch.zeros(4), None, training=True),
     ["running_mean", "running_var", "None"]),
    ("in-train-running-var-missing", lambda F: F.instance_norm(x243, torch.zeros(4), None),
     ["running_mean", "running_var", "None"]),
    ("bn-eval-running-var-missing", lambda F: F.batch_norm(x24, torch.zeros(4), None, training=False),
     ["running_var", "None", "training=True"]),
    # normalized_shape naming no dimension; num_groups that is no count of groups
    ("ln-empty-shape", lambda F: F.layer_norm(x24, ()), ["normalized_shape", "()"]),
    ("rms-empty-shape", lambda F: F.rms_norm(x24, ()), ["normalized_shape", "()"]),
    ("gn-zero-groups", lambda F: F.group_norm(x243, 0), ["num_groups=0"]),
    ("gn-negative-groups", lambda F: F.group_norm(x243, -2), ["-2", "num_groups"]),
    ("ln-shape-not-ints", lambda F: F.layer_norm(x24, "4"), ["normalized_shape", "'4'"]),
    # what torch's forward-mode and reverse-mode autograd refuse: the running statistics are not differentiable
    ("bn-running-mean-requires-grad", lambda F: F.batch_norm(x24, torch.zeros(4, requires_grad=True), torch.ones(4)),
     ["running_mean", "requires_grad"]),
    ("bn-running-var-requires-grad-training",
     lambda F: F.batch_norm(x24, torch.zeros(4), torch.ones(4, requires_grad=True), training=True),
     ["running_var", "requires_grad"]),
    ("in-running-mean-requires-grad",
     lambda F: F.instance_norm(x243, torch.zeros(4, requires_grad=True), torch.ones(4), use_input_stats=False),
     ["running_mean", "requires_grad"]),
    ("bn-eval-running-mean-tangent", lambda F: with_tangents(
        lambda d: F.batch_norm(d(x24), d(torch.zeros(4)), torch.ones(4), training=False)),
     ["running_mean", "forward"]),
    ("in-eval-running-var-tangent", lambda F: with_tangents(
        lambda d: F.instance_norm(d(x243), torch.zeros(4), d(torch.ones(4)), use_input_stats=False)),
     ["running_var", "forward"]),
]


# (id, call taking torch.nn or normlib, strings the message must contain): what the layers refuse
MODULE_CASES = [
    ("BatchNorm2d-3d-input", lambda nn: nn.BatchNorm2d(4)(x243), ["4D", "3D", "(2, 4, 3)"]),
    ("BatchNorm1d-4d-input", lambda nn: nn.BatchNorm1d(4)(torch.randn(2, 4, 3, 3)), ["2D or 3D", "4D"]),
    ("BatchNorm3d-4d-input", lambda nn: nn.BatchNorm3d(4)(torch.randn(2, 4, 3, 3)), ["5D", "4D"]),
    ("InstanceNorm2d-2d-input", lambda nn: nn.InstanceNorm2d(4)(x24), ["3D or 4D", "2D"]),
    ("InstanceNorm1d-channels", lambda nn: nn.InstanceNorm1d(5, affine=True)(x243), ["5", "(2, 4, 3)"]),
    ("GroupNorm-not-divisible", lambda nn: nn.GroupNorm(3, 5), ["num_channels=5", "num_groups=3", "divisible"]),
    ("LayerNorm-mismatch", lambda nn: nn.LayerNorm(3)(x24), ["(2, 4)", "(*, 3)"]),
    ("BatchNorm1d-batch-of-one", lambda nn: nn.BatchNorm1d(4)(torch.randn(1, 4)), ["(1, 4)", "more than 1 value"]),
    ("BatchNorm1d-eps-zero", lambda nn: nn.BatchNorm1d(4, eps=0.0)(x24), ["eps", "0.0"]),
    ("InstanceNorm1d-unbatched-channels", lambda nn: nn.InstanceNorm1d(5, affine=True)(torch.randn(4, 3)),
     ["5", "(4, 3)", "dim 0"]),
    ("GroupNorm-zero-groups", lambda nn: nn.GroupNorm(0, 4), ["num_groups=0"]),
    ("GroupNorm-negative-groups", lambda nn: nn.GroupNorm(-2, 4)(x24), ["-2", "num_groups"]),
    ("LayerNorm-empty-shape", lambda nn: nn.LayerNorm(())(x24), ["normalized_shape", "()"]),
    ("RMSNorm-empty-shape", lambda nn: nn.RMSNorm(())(x24), ["normalized_shape", "()"]),
]

def with_tangents(call):
    """Run ``call(d)`` under forward-mode AD, where ``d(t)`` gives ``t`` a random tangent."""
    import torch.autograd.forward_ad as fwAD
    with fwAD.dual_level():
        return call(lambda t: fwAD.make_dual(t, torch.randn_like(t)))


def raised(call):
    with pytest.raises(Exception) as info:
        call()
    return info.value


def raised_in_english_and_korean(call):
    """The exceptions ``call`` raises with normlib explaining in English, then in Korean."""
    import normlib

    english = raised(call)
    with normlib.speaking("ko"):
        korean = raised(call)
    return english, korean


def assert_raises_like_torch(torch_call, normlib_call, must_contain):
    theirs, ours = raised(torch_call), raised(normlib_call)
    # code written against torch catches normlib's exception
    assert isinstance(ours, type(theirs)), f"torch raised {type(theirs).__name__}, normlib {type(ours).__name__}: {ours}"
    for needle in must_contain:
        assert needle in str(ours), f"message lacks {needle!r}: {ours}"
