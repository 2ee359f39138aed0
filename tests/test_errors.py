"""Where torch raises, normlib raises too — an exception torch code would catch, with a message
that starts with torch's own words for the error (TORCH_WORDS, checked against torch's message
at run time) and then names what was expected and what was received."""

from __future__ import annotations

import re

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
    ("in-momentum-none", lambda F: F.instance_norm(x243, torch.zeros(4), torch.ones(4), momentum=None),
     ["momentum", "None"]),
    # one running statistic without the other
    ("bn-train-running-var-missing", lambda F: F.batch_norm(x24, torch.zeros(4), None, training=True),
     ["running_mean", "running_var", "None"]),
    ("in-train-running-var-missing", lambda F: F.instance_norm(x243, torch.zeros(4), None),
     ["running_mean", "running_var", "None"]),
    ("bn-eval-running-var-missing", lambda F: F.batch_norm(x24, torch.zeros(4), None, training=False),
     ["running_var=None", "training=True"]),
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
    ("bn-eval-running-mean-tangent", lambda F: _with_tangents(
        lambda d: F.batch_norm(d(x24), d(torch.zeros(4)), torch.ones(4), training=False)),
     ["running_mean", "forward"]),
    ("in-eval-running-var-tangent", lambda F: _with_tangents(
        lambda d: F.instance_norm(d(x243), torch.zeros(4), d(torch.ones(4)), use_input_stats=False)),
     ["running_var", "forward"]),
]

def _with_tangents(call):
    """Run ``call(d)`` under forward-mode AD, where ``d(t)`` gives ``t`` a random tangent."""
    import torch.autograd.forward_ad as fwAD
    with fwAD.dual_level():
        return call(lambda t: fwAD.make_dual(t, torch.randn_like(t)))


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

# The words each of torch's messages starts with (torch's tests, and code written against torch,
# look for these): normlib's message starts with them too, then says more. Each pattern is checked
# against torch's own message at run time as well, so it cannot drift from what torch says.
TORCH_WORDS = {
    "bn-one-value-2d": r"Expected more than 1 value per channel when training, got input size torch\.Size\(\[1, 3\]\)",
    "bn-one-value-3d": r"Expected more than 1 value per channel when training, got input size torch\.Size\(\[1, 3, 1\]\)",
    "bn-one-value-4d": r"Expected more than 1 value per channel when training, got input size",
    "gn-not-divisible": r"Expected number of channels in input to be divisible by num_groups, but got input of shape "
                        r"\[2, 5, 3\] and num_groups=2",
    "gn-one-value-per-group": r"Expected more than 1 value per channel when training, got input size \[1, 2\]",
    "ln-mismatch": r"Given normalized_shape=\[3\], expected input with shape \[\*, 3\], but got input of size ?\[2, 4\]",
    "ln-mismatch-2d": r"Given normalized_shape=\[4, 4\], expected input with shape \[\*, 4, 4\], but got input of size",
    "ln-too-few-dims": r"Given normalized_shape=\[3, 4\], expected input with shape",
    "rms-mismatch": r"Given normalized_shape=\[3\], expected input with shape",
    "ln-weight": r"Expected weight to be of same shape as normalized_shape, but got weight of shape \[3\] and "
                 r"normalized_shape = \[4\]",
    "ln-bias": r"Expected bias to be of same shape as normalized_shape, but got bias of shape \[5\]",
    "rms-weight": r"Expected weight to be of same shape as normalized_shape, but got weight of shape \[2, 2\]",
    "bn-weight": r"weight should contain 4 elements not 5",
    "bn-bias": r"bias should contain 4 elements not 3",
    "bn-running": r"running_mean should contain 4 elements not 3",
    "gn-weight": r"Expected weight to be a vector of size equal to the number of channels in input, but got "
                 r"weight of shape \[3\] and input of shape \[2, 4, 3\]",
    "in-weight": r"weight should contain \d+ elements not \d+",        # torch counts N·C, normlib C
    "ln-int": r'"\w+" not implemented for \'Long\'',
    "rms-int": r'"rms_norm" not implemented for \'Long\'',
    "bn-int": r'"batch_norm" not implemented for \'Long\'',
    "gn-int": r'"\w+" not implemented for \'Long\'',
    "in-int": r'"\w+" not implemented for \'Long\'',
    "gn-1d": r"Expected at least 2 dimensions for input tensor but received 1",
    "in-no-spatial": r"Expected more than 1 spatial element when training, got input size torch\.Size\(\[2, 3\]\)",
    "in-one-spatial": r"Expected more than 1 spatial element when training, got input size",
    "bn-eval-no-stats": r"running_mean must be defined in evaluation mode",
    "in-eval-no-stats": r"Expected running_mean and running_var to be defined when use_input_stats is false",
    "bn-eps-zero-training": r"batch_norm eps must be positive during training, but got 0\.0",
    "bn-eps-negative-eval": r"batch_norm eps must be non-negative, but got -0\.001",
    "bn-momentum-none": r"batch_norm\(\): argument 'momentum' \(position 7\) must be float, not NoneType",
    "in-momentum-none": r"instance_norm\(\): argument 'momentum' \(position 7\) must be float, not NoneType",
    "bn-train-running-var-missing": r"running_mean and running_var must either both be None or neither be None",
    "in-train-running-var-missing": r"running_mean and running_var must either both be None or neither be None",
    "bn-eval-running-var-missing": r"running_var must be defined in evaluation mode",
    "ln-empty-shape": r"Expected normalized_shape to be at least 1-dimensional",
    "rms-empty-shape": r"Expected normalized_shape to be at least 1-dimensional",
    "gn-zero-groups": r"integer division or modulo by zero",
    "gn-negative-groups": r"Expected num groups to be greater than 0, got -2",
    "bn-running-mean-requires-grad": r"The function '\w+' is not differentiable with respect to argument 'running_mean'",
    "bn-running-var-requires-grad-training":
        r"The function '\w+' is not differentiable with respect to argument 'running_var'",
    "in-running-mean-requires-grad": r"The function '\w+' is not differentiable with respect to argument 'running_mean'",
    "bn-eval-running-mean-tangent": r"batch_norm is not differentiable wrt running_mean and running_var",
    "in-eval-running-var-tangent": r"batch_norm is not differentiable wrt running_mean and running_var",
    "BatchNorm2d-3d-input": r"expected 4D input \(got 3D input\)",
    "BatchNorm1d-4d-input": r"expected 2D or 3D input \(got 4D input\)",
    "BatchNorm3d-4d-input": r"expected 5D input \(got 4D input\)",
    "InstanceNorm2d-2d-input": r"expected 3D or 4D input \(got 2D input\)",
    "InstanceNorm1d-channels": r"expected input's size at dim=1 to match num_features \(5\), but got: 4",
    "InstanceNorm1d-unbatched-channels": r"expected input's size at dim=0 to match num_features \(5\), but got: 4",
    "GroupNorm-not-divisible": r"num_channels \(5\) must be divisible by num_groups \(3\)",
    "GroupNorm-zero-groups": r"integer modulo by zero",
    "GroupNorm-negative-groups": r"Expected num groups to be greater than 0, got -2",
    "LayerNorm-mismatch": r"Given normalized_shape=\[3\], expected input with shape \[\*, 3\]",
    "LayerNorm-empty-shape": r"Expected normalized_shape to be at least 1-dimensional",
    "RMSNorm-empty-shape": r"Expected normalized_shape to be at least 1-dimensional",
    "BatchNorm1d-batch-of-one": r"Expected more than 1 value per channel when training, got input size torch\.Size\(\[1, 4\]\)",
    "BatchNorm1d-eps-zero": r"batch_norm eps must be positive during training, but got 0\.0",
}


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


def _assert_starts_with_torch_words(case_id, torch_call, normlib_call):
    words = TORCH_WORDS[case_id]
    theirs, ours = _raised(torch_call), _raised(normlib_call)
    assert re.match(words, str(theirs)), f"torch no longer says {words!r}: {theirs}"
    assert re.match(words, str(ours)), f"normlib's message should start with torch's words {words!r}, got: {ours}"
    assert len(str(ours)) > len(re.match(words, str(ours)).group(0)) + 20, f"normlib's explanation is missing: {ours}"


# Cases where normlib's message does not start with torch's words, and why:
NO_TORCH_WORDS = {
    "bn-1d": "torch says 'running_mean should contain 0 elements not 3': it takes a 1-D input to have 0 "
             "channels, which would mislead; normlib says the input needs 2 dimensions",
    "ln-shape-not-ints": "torch's words come from its argument parser (\"layer_norm(): argument 'normalized_shape' "
                         "(position 2) must be tuple of ints\"); normlib raises the same TypeError from the shape check "
                         "that layer_norm, rms_norm and the modules share",
}


def test_every_case_has_torch_words_or_a_reason():
    ids = [c[0] for c in CASES + MODULE_CASES]
    missing = [i for i in ids if i not in TORCH_WORDS and i not in NO_TORCH_WORDS]
    assert not missing, f"cases with neither torch's words nor a reason: {missing}"
    assert not set(TORCH_WORDS) - set(ids), f"words for unknown cases: {sorted(set(TORCH_WORDS) - set(ids))}"


WORDED_CASES = [c for c in CASES if c[0] in TORCH_WORDS]


@pytest.mark.parametrize("case", WORDED_CASES, ids=[c[0] for c in WORDED_CASES])
def test_functional_message_starts_with_torch_words(case):
    case_id, call, _ = case
    _assert_starts_with_torch_words(case_id, lambda: call(TF), lambda: call(NF))


@pytest.mark.parametrize("case", MODULE_CASES, ids=[c[0] for c in MODULE_CASES])
def test_module_message_starts_with_torch_words(case):
    case_id, call, _ = case
    _assert_starts_with_torch_words(case_id, lambda: call(tnn), lambda: call(normlib))


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
