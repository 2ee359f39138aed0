"""normlib_classroom.check_fold_batch_norm: a hand-written fold passes in both languages; each
slip (written here into an otherwise correct fold) is named, with the message in the student's
language; a training-mode BatchNorm must be refused; bad checker arguments give clear errors."""

from __future__ import annotations

import copy
import re

import pytest
import torch

import normlib_classroom as ex
from helpers.text import has_hangul

LANGS = ("ko", "en")


def make_fold(*, conv_bias=True, batch_stats=False, unbiased=False, var_factor=1.0, std_eps=False, no_eps=False,
              refuse_training=True, error=ValueError):
    """A hand-written fold(conv, bn) returning a new conv layer, with the slips asked for."""
    def fold(conv, bn):
        if refuse_training and bn.training:
            raise error("fold needs a BatchNorm in evaluation mode (bn.eval())")
        if batch_stats:
            class Folded(torch.nn.Module):          # normalizes with the statistics of its own input
                def forward(self, x):
                    y = conv(x)
                    dims = (0, *range(2, y.dim()))
                    view = (1, -1) + (1,) * (y.dim() - 2)
                    mean, var = y.mean(dims), y.var(dims, unbiased=unbiased)
                    return ((y - mean.reshape(view)) / torch.sqrt(var.reshape(view) + bn.eps)
                            * bn.weight.reshape(view) + bn.bias.reshape(view))
            return Folded()
        eps = 0.0 if no_eps else bn.eps
        var = bn.running_var * var_factor
        scale = bn.weight / (var.sqrt() + eps if std_eps else torch.sqrt(var + eps))
        b = conv.bias if conv_bias and conv.bias is not None else torch.zeros_like(bn.running_mean)
        folded = copy.deepcopy(conv)
        with torch.no_grad():
            folded.weight = torch.nn.Parameter(conv.weight * scale.reshape((-1,) + (1,) * (conv.weight.dim() - 1)))
            folded.bias = torch.nn.Parameter(scale * (b - bn.running_mean) + bn.bias)
        return folded
    return fold


def _failure(fold, lang) -> ex.CheckFailed:
    with pytest.raises(ex.CheckFailed) as info:
        ex.check_fold_batch_norm(fold, lang)
    return info.value


@pytest.mark.parametrize("lang", LANGS)
def test_a_hand_written_fold_passes(lang, capsys):
    ex.check_fold_batch_norm(make_fold(), lang)
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 1 and "fold" in printed[0]
    assert has_hangul(printed[0]) == (lang == "ko")


@pytest.mark.parametrize("error", [ValueError, RuntimeError, AssertionError])
def test_any_documented_refusal_of_training_mode_passes(error, capsys):
    ex.check_fold_batch_norm(make_fold(error=error), "en")
    assert capsys.readouterr().out.startswith("passed")


SLIPS = [
    (dict(conv_bias=False), "fold_no_conv_bias"),
    (dict(batch_stats=True), "fold_batch_stats"),
    (dict(batch_stats=True, unbiased=True), "fold_batch_stats"),     # y.var(dims): torch's default, n − 1
    (dict(var_factor=8 / 7), "fold_var_scaled"),          # n/(n − 1) with n = 8
    (dict(var_factor=7 / 8), "fold_var_scaled"),
    (dict(std_eps=True), "fold_std_eps"),
    (dict(no_eps=True), "fold_no_eps"),
    (dict(refuse_training=False), "fold_training"),
]


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("slip,name", SLIPS, ids=[f"{name}-{i}" for i, (_, name) in enumerate(SLIPS)])
def test_each_slip_is_named_in_the_students_language(slip, name, lang):
    error = _failure(make_fold(**slip), lang)
    message = str(error)
    assert error.diagnoses == (name,), message
    assert has_hangul(message) == (lang == "ko"), message
    reread = "다시 읽어 볼 곳" if lang == "ko" else "Reread"
    assert reread in message.splitlines()[-1], message
    # the fold is chapter 10's; ε outside the root is chapter 4's pitfall
    chapter, heading = (4, "함정: std + eps로 나누기" if lang == "ko" else "Pitfall: dividing by std + eps") \
        if name == "fold_std_eps" else (10, "추론: BatchNorm을 앞 층에 접기" if lang == "ko"
                                        else "Inference: folding BatchNorm into the layer before it")
    assert f"{chapter}" in message.splitlines()[-1] and heading in message.splitlines()[-1], message


@pytest.mark.parametrize("lang", LANGS)
def test_batch_statistics_with_the_unbiased_variance_say_so(lang):
    """x.var() divides by n − 1 by default: the batch-statistics diagnosis says which variance it saw."""
    unbiased = str(_failure(make_fold(batch_stats=True, unbiased=True), lang))
    population = str(_failure(make_fold(batch_stats=True), lang))
    assert "n − 1" in unbiased and "n − 1" not in population
    assert ("표본분산" if lang == "ko" else "unbiased variance") in unbiased


def test_the_scaled_variance_names_its_factor():
    assert "1.14286" in str(_failure(make_fold(var_factor=8 / 7), "en"))


@pytest.mark.parametrize("lang", LANGS)
def test_a_training_mode_batch_norm_must_be_refused(lang):
    error = _failure(make_fold(refuse_training=False), lang)
    assert error.diagnoses == ("fold_training",)
    assert ("학습 모드" if lang == "ko" else "training mode") in str(error)
    error = _failure(make_fold(error=TypeError), lang)            # not one of the documented refusals
    assert "TypeError" in str(error) and error.diagnoses == ()


def test_a_fold_not_written_yet_or_modifying_its_inputs_fails():
    def skeleton(conv, bn):
        raise NotImplementedError
    assert "NotImplementedError" in str(_failure(skeleton, "en"))

    def in_place(conv, bn):
        folded = make_fold()(conv, bn)
        with torch.no_grad():
            conv.weight.copy_(folded.weight)
            conv.bias = folded.bias
        return conv
    assert "changed the conv" in str(_failure(in_place, "en"))
    assert "torch.nn.Conv" in str(_failure(lambda conv, bn: None, "en"))


@pytest.mark.parametrize("lang", LANGS)
def test_bad_checker_arguments_give_clear_errors(lang):
    with pytest.raises(TypeError, match="int 3"):
        ex.check_fold_batch_norm(3, lang)
    with pytest.raises(ValueError, match="fr"):
        ex.check_fold_batch_norm(make_fold(), "fr")


# --------------------------------------------------------------------------- part 1 (scale_shift) and the refusal apart

def make_scale_shift(*, var_factor=1.0, std_eps=False, no_eps=False, unscaled_mean=False, in_place=False):
    """A hand-written scale_shift(bn) -> (s, t), s = γ/√(σ² + ε), t = β − s·μ, with the slips asked for."""
    def scale_shift(bn):
        eps = 0.0 if no_eps else bn.eps
        var = bn.running_var * var_factor
        s = bn.weight / (var.sqrt() + eps if std_eps else torch.sqrt(var + eps))
        t = bn.bias - (bn.running_mean if unscaled_mean else s * bn.running_mean)
        if in_place:
            with torch.no_grad():
                bn.running_var.add_(bn.eps)
        return s, t
    return scale_shift


@pytest.mark.parametrize("lang", LANGS)
def test_a_hand_written_scale_shift_passes(lang, capsys):
    ex.check_scale_shift(make_scale_shift(), lang)
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 1 and "scale_shift" in printed[0] and "4" in printed[0]
    assert has_hangul(printed[0]) == (lang == "ko")


SCALE_SLIPS = [
    (dict(std_eps=True), "fold_std_eps"),
    (dict(no_eps=True), "fold_no_eps"),
    (dict(var_factor=8 / 7), "fold_var_scaled"),
    (dict(unscaled_mean=True), "shift_unscaled_mean"),
]


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("slip,name", SCALE_SLIPS, ids=[name for _, name in SCALE_SLIPS])
def test_each_scale_shift_slip_is_named_in_the_students_language(slip, name, lang):
    with pytest.raises(ex.CheckFailed) as info:
        ex.check_scale_shift(make_scale_shift(**slip), lang)
    message = str(info.value)
    assert info.value.diagnoses == (name,), message
    assert has_hangul(message) == (lang == "ko"), message
    assert ("스케일 s" if lang == "ko" else "scale s") in message or name == "shift_unscaled_mean", message


def test_scale_shift_must_return_a_pair_and_leave_bn_alone():
    for wrong, words in ((lambda bn: bn.weight, "pair of tensors (s, t), received Parameter"),
                         (lambda bn: None, "is a return statement missing?"),
                         (make_scale_shift(in_place=True), "changed the bn")):
        with pytest.raises(ex.CheckFailed, match=re.escape(words)):
            ex.check_scale_shift(wrong, "en")


@pytest.mark.parametrize("lang", LANGS)
def test_the_refusal_is_checked_apart_and_the_fold_check_can_leave_it_out(lang, capsys):
    ex.check_fold_batch_norm(make_fold(refuse_training=False), lang, training=False)
    ex.check_fold_training(make_fold(conv_bias=False), lang)          # a wrong fold that refuses: this part passes
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 2 and all(has_hangul(line) == (lang == "ko") for line in printed)
    with pytest.raises(ex.CheckFailed) as info:
        ex.check_fold_training(make_fold(refuse_training=False), lang)
    assert info.value.diagnoses == ("fold_training",)


def test_refusing_every_batch_norm_is_not_telling_the_modes_apart():
    def refuses_all(conv, bn):
        raise ValueError("no")
    with pytest.raises(ex.CheckFailed) as info:
        ex.check_fold_training(refuses_all, "en")
    assert "an evaluation-mode BatchNorm must be folded" in str(info.value) and "ValueError: no" in str(info.value)

    def skeleton(conv, bn):
        raise NotImplementedError
    with pytest.raises(ex.CheckFailed, match="not written yet"):
        ex.check_fold_training(skeleton, "en")


def test_a_fresh_conv_loses_stride_padding_and_groups():
    """The cases may pass stride, padding and groups to the conv: a fold that builds a new conv from
    the channel counts and kernel alone passes the plain cases and fails those."""
    def fresh(conv, bn):
        if bn.training:
            raise ValueError("eval mode only")
        copied = make_fold()(conv, bn)
        new = type(conv)(conv.in_channels, conv.out_channels, conv.kernel_size, dtype=conv.weight.dtype)
        new.weight, new.bias = copied.weight, copied.bias
        return new
    plain = [("Conv1d", 3, 4, 3, True), ("Conv2d", 2, 3, 3, False)]
    ex.check_fold_batch_norm(fresh, "en", cases=plain, eps=1e-3, seed=3)
    for options in ({"stride": 2}, {"padding": 1}, {"groups": 2, "padding": 1}):
        cases = [("Conv2d", 4, 6, 3, True, options)]
        ex.check_fold_batch_norm(make_fold(), "en", cases=cases, eps=1e-3)
        with pytest.raises(ex.CheckFailed) as info:
            ex.check_fold_batch_norm(fresh, "en", cases=cases, eps=1e-3)
        assert all(f"{key}=" in str(info.value).splitlines()[0] for key in options), str(info.value)


@pytest.mark.parametrize("eps", [1e-3, 0.1])
def test_slips_are_named_with_another_eps(eps):
    for slip, name in SLIPS[:-1]:
        with pytest.raises(ex.CheckFailed) as info:
            ex.check_fold_batch_norm(make_fold(**slip), "en", eps=eps, seed=4)
        assert info.value.diagnoses == (name,), str(info.value)
    for slip, name in SCALE_SLIPS:
        with pytest.raises(ex.CheckFailed) as info:
            ex.check_scale_shift(make_scale_shift(**slip), "en", eps=eps, seed=4)
        assert info.value.diagnoses == (name,), str(info.value)
