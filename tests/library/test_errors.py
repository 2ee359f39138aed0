"""Where torch raises, normlib raises too — an exception torch code would catch, with a message
that starts with torch's own words for the error (TORCH_WORDS, checked against torch's message
at run time) and then names what was expected and what was received."""

from __future__ import annotations

import re

import pytest
import torch.nn as tnn
import torch.nn.functional as TF

import normlib
import normlib.functional as NF
from helpers.library_cases import CASES, MODULE_CASES, assert_raises_like_torch, raised, x24

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


def _assert_starts_with_torch_words(case_id, torch_call, normlib_call):
    words = TORCH_WORDS[case_id]
    theirs, ours = raised(torch_call), raised(normlib_call)
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
    assert_raises_like_torch(lambda: call(TF), lambda: call(NF), must_contain)


@pytest.mark.parametrize("case", MODULE_CASES, ids=[c[0] for c in MODULE_CASES])
def test_modules_raise_like_torch(case):
    _, call, must_contain = case
    assert_raises_like_torch(lambda: call(tnn), lambda: call(normlib), must_contain)


def test_normalized_shape_must_be_ints():
    for bad in ((), "4", (2.0,), None):
        with pytest.raises(normlib.NormInputError, match="normalized_shape"):
            NF.layer_norm(x24, bad)
