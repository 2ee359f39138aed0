"""normlib_classroom: correct implementations pass; wrong ones fail with feedback in the student's
language that names the shapes, the largest difference, the per-group statistics, the slip
(recognised from what the wrong code actually computes) and a chapter section that exists.

The wrong implementations below are written here, each with one deliberate slip; what a test
expects (the slip's name, the axes, the index of the largest difference) comes from that slip
and from torch, never from the checker's own output.

The last section is chapter 10's fold (check_fold_batch_norm, check_scale_shift, check_fold_training): a
hand-written fold passes in both languages; each slip written into an otherwise correct fold is named in
the student's language; a training-mode BatchNorm must be refused; bad checker arguments give clear errors."""

from __future__ import annotations

import copy
import re

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import normlib_classroom as ex
from helpers.exercises import init_batch_norm_state
from helpers.paths import ROOT
from helpers.text import has_hangul
from normlib_classroom import words as i18n  # the checkers' strings and the book helpers' words
from normlib_classroom._report import _generator, _input, _params
from normlib_classroom._slips import _layer_spec, _standardize
from normlib_classroom.axes_groupnorm import _group_spec

LANGS = ("ko", "en")


# --------------------------------------------------------------------------- implementations to check

def make_layer_norm(*, unbiased=False, eps_mode="given", std_eps=False, affine=True, axes=None, keepdim=True):
    """A hand-written layer_norm(x, normalized_shape, weight, bias, eps) with the slips asked for."""
    def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        dims = axes if axes is not None else tuple(range(x.dim() - len(shape), x.dim()))
        e = {"given": eps, "zero": 0.0, "fixed": 1e-5}[eps_mode]
        mean = x.mean(dims, keepdim=True)
        var = x.var(dims, keepdim=True, correction=int(unbiased))
        y = (x - mean) / (var.sqrt() + e if std_eps else torch.sqrt(var + e))
        if affine and weight is not None:
            y = y * weight
        if affine and bias is not None:
            y = y + bias
        return y
    return layer_norm


def make_stats(*, unbiased=False, keepdim=True):
    def layer_norm_stats(x, normalized_shape):
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        dims = tuple(range(x.dim() - len(shape), x.dim()))
        return x.mean(dims, keepdim=keepdim), x.var(dims, keepdim=keepdim, correction=int(unbiased))
    return layer_norm_stats


def make_batch_norm(*, unbiased_output=False, running_unbiased=True, swapped=False, none_weight="1/k",
                    eval_uses_batch=False, eval_updates=False):
    """A BatchNorm module with the constructor of torch.nn.BatchNorm1d and the slips asked for."""
    class BatchNorm(nn.Module):
        def __init__(self, num_features, eps=1e-5, momentum=0.1):
            super().__init__()
            init_batch_norm_state(self, num_features, eps, momentum)

        def forward(self, x):
            dims = (0, *range(2, x.dim()))
            view = (1, -1) + (1,) * (x.dim() - 2)
            if self.training or eval_uses_batch:
                mean, var = x.mean(dims), x.var(dims, correction=int(unbiased_output))
                if self.training or eval_updates:
                    with torch.no_grad():
                        self.num_batches_tracked += 1
                        k = float(self.num_batches_tracked)
                        m = self.momentum if self.momentum is not None else {"1/k": 1 / k, "0.1": 0.1}[none_weight]
                        old, new = (m, 1 - m) if swapped else (1 - m, m)
                        self.running_mean.copy_(old * self.running_mean + new * mean)
                        self.running_var.copy_(old * self.running_var + new * x.var(dims, correction=int(running_unbiased)))
            else:
                mean, var = self.running_mean, self.running_var
            x_hat = (x - mean.reshape(view)) / torch.sqrt(var.reshape(view) + self.eps)
            return x_hat * self.weight.reshape(view) + self.bias.reshape(view)
    return BatchNorm


def make_layer_norm_function(*, mean_term=True, var_term=True, gamma_in_dx=True, dgamma_times_xhat=True):
    class LayerNormFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, normalized_shape, weight, bias, eps):
            shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
            dims = tuple(range(x.dim() - len(shape), x.dim()))
            mean = x.mean(dims, keepdim=True)
            rstd = torch.rsqrt(((x - mean) ** 2).mean(dims, keepdim=True) + eps)
            ctx.save_for_backward(x, weight, mean, rstd)
            ctx.dims = dims
            return (x - mean) * rstd * weight + bias

        @staticmethod
        def backward(ctx, dy):
            x, weight, mean, rstd = ctx.saved_tensors
            dims = ctx.dims
            x_hat = (x - mean) * rstd
            g = dy * weight if gamma_in_dx else dy
            dx = g
            if mean_term:
                dx = dx - g.mean(dims, keepdim=True)
            if var_term:
                dx = dx - x_hat * (g * x_hat).mean(dims, keepdim=True)
            lead = tuple(range(x.dim() - len(dims)))
            dgamma = (dy * x_hat).sum(lead) if dgamma_times_xhat else dy.sum(lead)
            return rstd * dx, None, dgamma, dy.sum(lead), None
    return LayerNormFunction


class BatchNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, eps):
        dims, view = (0, *range(2, x.dim())), (1, -1) + (1,) * (x.dim() - 2)
        mean = x.mean(dims, keepdim=True)
        rstd = torch.rsqrt(((x - mean) ** 2).mean(dims, keepdim=True) + eps)
        ctx.save_for_backward(x, weight, mean, rstd)
        ctx.dims, ctx.view = dims, view
        return (x - mean) * rstd * weight.reshape(view) + bias.reshape(view)

    @staticmethod
    def backward(ctx, dy):
        x, weight, mean, rstd = ctx.saved_tensors
        x_hat = (x - mean) * rstd
        g = dy * weight.reshape(ctx.view)
        dx = rstd * (g - g.mean(ctx.dims, keepdim=True) - x_hat * (g * x_hat).mean(ctx.dims, keepdim=True))
        return dx, (dy * x_hat).sum(ctx.dims), dy.sum(ctx.dims), None


def make_group_norm(*, interleaved=False, per_channel=False):
    def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5):
        n, c = x.shape[:2]
        if per_channel:
            v, dims = x.reshape(n, c, -1), (2,)
        elif interleaved:
            v, dims = x.reshape(n, c // num_groups, num_groups, -1), (1, 3)
        else:
            v, dims = x.reshape(n, num_groups, -1), (2,)
        mean, var = v.mean(dims, keepdim=True), v.var(dims, keepdim=True, correction=0)
        y = ((v - mean) / torch.sqrt(var + eps)).reshape(x.shape)
        view = (1, -1) + (1,) * (x.dim() - 2)
        return y if weight is None else y * weight.reshape(view) + bias.reshape(view)
    return group_norm


AXES = {  # chapter 6's table, written out by hand
    ("batch", "NC"): (0,), ("batch", "NCL"): (0, 2), ("batch", "NCHW"): (0, 2, 3), ("batch", "BLD"): (0, 1),
    ("layer", "NC"): (1,), ("layer", "NCL"): (1, 2), ("layer", "NCHW"): (1, 2, 3), ("layer", "BLD"): (2,),
    ("rms", "NC"): (1,), ("rms", "NCL"): (1, 2), ("rms", "NCHW"): (1, 2, 3), ("rms", "BLD"): (2,),
    ("instance", "NCL"): (2,), ("instance", "NCHW"): (2, 3),
    ("group", "NC"): (1,), ("group", "NCL"): (1, 2), ("group", "NCHW"): (1, 2, 3),
}


def make_reduction_axes(changes=None):
    def reduction_axes(method, layout):
        if changes and (method, layout) in changes:
            return changes[(method, layout)]
        if (method, layout) not in AXES:
            raise ValueError(f"{method} on {layout} has no meaning")
        return AXES[(method, layout)]
    return reduction_axes


def failure(check, *args, **kwargs) -> ex.CheckFailed:
    with pytest.raises(ex.CheckFailed) as info:
        check(*args, **kwargs)
    return info.value


def assert_language(message: str, lang: str) -> None:
    """The whole message is in the student's language (English has no Hangul at all)."""
    assert has_hangul(message) == (lang == "ko"), message


def reread_lines(message: str, lang: str) -> list[str]:
    marker = "다시 읽어 볼 곳" if lang == "ko" else "Reread"
    return [line for line in message.splitlines() if line.startswith(marker)]


def diagnosis_lines(message: str, lang: str) -> list[str]:
    marker = "진단:" if lang == "ko" else "Diagnosis:"
    return [line for line in message.splitlines() if marker in line]


def section(key: str, lang: str) -> str:
    """A section's title as the reread line prints it: plain text, without the markdown backticks."""
    return i18n.text(key, lang).replace("`", "")


# --------------------------------------------------------------------------- correct implementations pass

def test_correct_implementations_pass_every_checker(capsys):
    # every submission here is written by hand: calling torch's or normlib's own implementation
    # would fail as a delegation (tests/classroom/test_delegation.py)
    for lang in LANGS:
        ex.check_layer_norm_stats(make_stats(), lang)
        ex.check_layer_norm(make_layer_norm(), lang)
        ex.check_layer_norm(make_layer_norm(), lang, cases=[((3, 7), 7), ((2, 2, 6), torch.Size([2, 6]))],
                            dtype=torch.float32, eps=1e-5)
        ex.check_batch_norm_train(make_batch_norm(), lang)
        ex.check_batch_norm_running(make_batch_norm(), lang)
        ex.check_batch_norm_running(make_batch_norm(), lang, momentum=None, batches=5)
        ex.check_batch_norm_running(make_batch_norm(), lang, momentum=0.3, shape=(4, 5))
        ex.check_batch_norm_eval(make_batch_norm(), lang)
        ex.check_layer_norm_backward(make_layer_norm_function(), lang, cases=[((3, 5), 5), ((2, 2, 3), (2, 3))])
        ex.check_batch_norm_backward(BatchNormFunction, lang, shapes=[(4, 3), (3, 2, 2, 3)])
        ex.check_axes(make_reduction_axes(), lang)
        ex.check_axes(make_reduction_axes(), lang, cases=ex.AXES_INVALID)
        ex.check_channel_groups(lambda c, g: [tuple(range(i * c // g, (i + 1) * c // g)) for i in range(g)], lang,
                                cases=[(6, 3), (12, 4), (5, 5)])
        ex.check_group_norm(make_group_norm(), lang)
        ex.check_group_norm(make_group_norm(), lang, cases=[((2, 4, 3), 1), ((2, 4, 3), 4)])
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 2 * 15
    assert all(has_hangul(line) for line in printed[:15]) and not any(has_hangul(line) for line in printed[15:])


def test_the_slip_engine_agrees_with_torch_when_there_is_no_slip():
    # the candidates the diagnoses come from are computed on the same footing as torch's reference
    x = _input((3, 4, 5), _generator(0), torch.float64)
    spec = _layer_spec(x, (5,), 0.01)
    ours = _standardize(x, spec.pool, unbiased=False, eps=0.01, std_eps=False)
    assert torch.allclose(ours, F.layer_norm(x, (5,), eps=0.01), atol=1e-12)
    group = _group_spec(x, 2, 0.01)
    assert torch.allclose(_standardize(x, group.pool, False, 0.01, False), F.group_norm(x, 2, eps=0.01), atol=1e-12)


# --------------------------------------------------------------------------- the five the issue names, both languages

@pytest.mark.parametrize("lang", LANGS)
def test_wrong_shape_names_expected_and_received(lang):
    error = failure(ex.check_layer_norm, lambda x, s, w=None, b=None, eps=1e-5: x.mean(-1, keepdim=True), lang)
    message = str(error)
    assert_language(message, lang)
    shape_line = next(line for line in message.splitlines() if "(4, 1)" in line)
    assert "(4, 3)" in shape_line                     # the first case's input shape, which the output must keep
    assert ("모양" if lang == "ko" else "shape") in shape_line
    assert error.diagnoses == ()


@pytest.mark.parametrize("lang", LANGS)
def test_keepdim_forgotten_in_the_statistics(lang):
    error = failure(ex.check_layer_norm_stats, make_stats(keepdim=False), lang)
    message = str(error)
    assert "(4, 1)" in message and "(4,)" in message
    assert error.diagnoses == ("keepdim",)
    assert "keepdim=True" in message
    assert_language(message, lang)


@pytest.mark.parametrize("lang", LANGS)
def test_wrong_axes_names_the_axes_used_and_the_right_ones(lang):
    # statistics over the batch axis of a (4, 3) input: one per column instead of one per row
    error = failure(ex.check_layer_norm, make_layer_norm(axes=(0,)), lang)
    message = str(error)
    assert error.diagnoses == ("axes",)
    [diagnosis] = diagnosis_lines(message, lang)
    assert "(0,)" in diagnosis and "(1,)" in diagnosis and ("축" if lang == "ko" else "axes") in diagnosis
    assert reread_lines(message, lang) and section("ex:sec:04_sequences", lang) in reread_lines(message, lang)[0]
    assert_language(message, lang)


@pytest.mark.parametrize("lang", LANGS)
def test_wrong_axes_on_a_multi_dimensional_normalized_shape(lang):
    # normalized_shape (4, 5) of a (2, 3, 4, 5) input, but the statistics over the last axis only
    cases = [((2, 3, 4, 5), (4, 5))]
    error = failure(ex.check_layer_norm, make_layer_norm(axes=(3,)), lang, cases=cases)
    [diagnosis] = diagnosis_lines(str(error), lang)
    assert "(3,)" in diagnosis and "(2, 3)" in diagnosis
    assert error.diagnoses == ("axes",)


@pytest.mark.parametrize("lang", LANGS)
def test_unbiased_variance_is_told_apart_from_the_population_variance(lang):
    error = failure(ex.check_layer_norm, make_layer_norm(unbiased=True), lang)
    message = str(error)
    assert error.diagnoses == ("unbiased",)
    assert "n − 1" in message and "unbiased=False" in message
    assert ("표본분산" if lang == "ko" else "unbiased variance") in message
    assert ("2장" if lang == "ko" else "chapter 2") in reread_lines(message, lang)[0]
    assert section("ex:sec:02_variance", lang) in reread_lines(message, lang)[0]
    assert_language(message, lang)


@pytest.mark.parametrize("lang", LANGS)
def test_unbiased_statistics_function(lang):
    error = failure(ex.check_layer_norm_stats, make_stats(unbiased=True), lang)
    assert error.diagnoses == ("unbiased",)
    assert ("분산" if lang == "ko" else "variance") in str(error).splitlines()[1]


@pytest.mark.parametrize("lang", LANGS)
def test_forgotten_eps(lang):
    error = failure(ex.check_layer_norm, make_layer_norm(eps_mode="zero"), lang)
    message = str(error)
    assert error.diagnoses == ("no_eps",)
    assert "eps = 0" in message and "sqrt(var + eps)" in message
    assert ("4장" if lang == "ko" else "chapter 4") in reread_lines(message, lang)[0]
    assert_language(message, lang)


@pytest.mark.parametrize("lang", LANGS)
def test_forgotten_affine(lang):
    error = failure(ex.check_layer_norm, make_layer_norm(affine=False), lang)
    message = str(error)
    assert error.diagnoses == ("no_affine",)
    assert "γ" in message and "β" in message and "y = γ·x̂ + β" in message
    assert ("빠졌" if lang == "ko" else "missing") in message
    assert_language(message, lang)


# --------------------------------------------------------------------------- what else a failure message carries

def test_largest_difference_is_the_one_torch_shows():
    student = make_layer_norm(unbiased=True)
    # recompute the checker's first case independently: same seed, same draws, torch as reference
    gen = _generator(0)
    x = _input((4, 3), gen, torch.float64)
    weight, bias = _params((3,), gen, torch.float64)
    diff = (student(x, (3,), weight, bias, 0.01) - F.layer_norm(x, (3,), weight, bias, 0.01)).abs()
    index = tuple(int(i) for i in torch.unravel_index(diff.argmax(), diff.shape))
    message = str(failure(ex.check_layer_norm, student, "en"))
    line = next(line for line in message.splitlines() if "largest difference" in line)
    assert f"index {index}" in line
    assert f"{diff.max().item():.6g}" in line
    assert "12 of 12" in line


@pytest.mark.parametrize("lang", LANGS)
def test_per_channel_mean_right_and_variance_off(lang):
    # BatchNorm normalized with x.var()'s default: every channel's mean is still right, its variance is not
    error = failure(ex.check_batch_norm_train, make_batch_norm(unbiased_output=True), lang)
    lines = str(error).splitlines()
    channel = i18n.text("ex:group:channel", lang)
    mean_line = next(line for line in lines if channel in line and i18n.text("mean", lang) in line)
    var_line = next(line for line in lines if channel in line and i18n.text("variance", lang) in line)
    assert ("맞습니다" if lang == "ko" else "is right") in mean_line
    assert ("다릅니다" if lang == "ko" else "is off") in var_line
    assert error.diagnoses == ("unbiased",)


def test_per_row_statistics_name_the_worst_row():
    student = make_layer_norm(eps_mode="zero")
    gen = _generator(0)
    x = _input((4, 3), gen, torch.float64)
    weight, bias = _params((3,), gen, torch.float64)
    ours, torch_y = student(x, (3,), weight, bias, 0.01), F.layer_norm(x, (3,), weight, bias, 0.01)
    worst_row = int((ours.var(1, correction=0) - torch_y.var(1, correction=0)).abs().argmax())
    message = str(failure(ex.check_layer_norm, student, "en"))
    var_line = next(line for line in message.splitlines() if "variance of the output per row" in line)
    assert f"row {worst_row}:" in var_line, var_line          # one index, not a tuple "(1,)"


@pytest.mark.parametrize("slip,expected,section_key", [
    (dict(std_eps=True), ("std_eps",), "ex:sec:04_std_eps"),
    (dict(eps_mode="fixed"), ("fixed_eps",), "ex:sec:04_formula"),
    (dict(unbiased=True, std_eps=True), ("unbiased", "std_eps"), "ex:sec:02_variance"),
])
def test_more_layer_norm_slips(slip, expected, section_key):
    error = failure(ex.check_layer_norm, make_layer_norm(**slip), "en")
    assert error.diagnoses == expected
    assert any(section(section_key, "en") in line for line in reread_lines(str(error), "en"))


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("slip,kwargs,expected", [
    (dict(running_unbiased=False), {}, "running_biased"),
    (dict(swapped=True), {}, "momentum_swapped"),
    (dict(none_weight="0.1"), dict(momentum=None), "momentum_none_fixed"),
    (dict(eval_updates=True, eval_uses_batch=True), {}, "eval_updated"),
])
def test_running_statistics_slips(lang, slip, kwargs, expected):
    error = failure(ex.check_batch_norm_running, make_batch_norm(**slip), lang, **kwargs)
    assert expected in error.diagnoses
    assert section("ex:sec:03_train_eval", lang) in reread_lines(str(error), lang)[0]
    assert_language(str(error), lang)


def test_running_statistics_report_the_first_batch_that_drifts():
    message = str(failure(ex.check_batch_norm_running, make_batch_norm(swapped=True), "en"))
    assert "running_mean after batch 1" in message


def test_the_swapped_convention_is_what_the_message_writes_out():
    message = str(failure(ex.check_batch_norm_running, make_batch_norm(swapped=True), "en"))
    assert "momentum·running + (1 − momentum)·batch" in message


@pytest.mark.parametrize("lang", LANGS)
def test_evaluation_with_batch_statistics(lang):
    error = failure(ex.check_batch_norm_eval, make_batch_norm(eval_uses_batch=True), lang)
    assert error.diagnoses == ("eval_batch",)
    assert "running_mean" in str(error)


@pytest.mark.parametrize("slip,expected", [
    (dict(mean_term=False), ("dx_no_mean",)),
    (dict(var_term=False), ("dx_no_var",)),
    (dict(mean_term=False, var_term=False), ("dx_direct",)),
    (dict(gamma_in_dx=False), ("dx_no_gamma",)),
    (dict(dgamma_times_xhat=False), ("dgamma_no_xhat",)),
])
def test_backward_slips(slip, expected):
    error = failure(ex.check_layer_norm_backward, make_layer_norm_function(**slip), "ko")
    assert error.diagnoses == expected
    assert section("ex:sec:07_derive", "ko") in reread_lines(str(error), "ko")[0]
    assert "∂L/∂" in str(error)


def test_backward_that_returns_none_for_a_gradient():
    class NoWeightGrad(make_layer_norm_function()):
        @staticmethod
        def backward(ctx, dy):
            grads = list(make_layer_norm_function().backward(ctx, dy))
            grads[2] = None
            return tuple(grads)
    message = str(failure(ex.check_layer_norm_backward, NoWeightGrad, "en"))
    assert "None for ∂L/∂γ" in message and "(6,)" in message


def test_backward_with_a_wrong_forward_is_caught_at_the_forward():
    class Unbiased(make_layer_norm_function()):
        @staticmethod
        def forward(ctx, x, normalized_shape, weight, bias, eps):
            y = make_layer_norm(unbiased=True)(x.detach(), normalized_shape, weight.detach(), bias.detach(), eps)
            ctx.save_for_backward(x)
            return y

        @staticmethod
        def backward(ctx, dy):
            return dy, None, None, None, None
    error = failure(ex.check_layer_norm_backward, Unbiased, "en")
    assert error.diagnoses == ("unbiased",)


@pytest.mark.parametrize("lang", LANGS)
def test_axes_feedback(lang):
    student = make_reduction_axes({("batch", "BLD"): (0,), ("batch", "NCHW"): (0,), ("layer", "NCL"): (0, 1, 2)})
    error = failure(ex.check_axes, student, lang)
    message = str(error)
    assert set(error.diagnoses) == {"dim0", "batch_spatial", "layer_sample"}
    wrong = [line for line in message.splitlines() if ("정답" if lang == "ko" else "expected") in line]
    assert len(wrong) == 3
    assert any("(B, L, D)" in line and "(0, 1)" in line for line in wrong)
    assert any("(N, C, H, W)" in line and "(0, 2, 3)" in line for line in wrong)
    assert any(section("ex:sec:03_dim0", lang) in line for line in reread_lines(message, lang))
    assert ("17개 중 3개" if lang == "ko" else "3 of 17") in message


def test_axes_in_any_order_or_negative_are_accepted():
    ex.check_axes(make_reduction_axes({("batch", "NCHW"): [3, 0, -2], ("layer", "BLD"): (-1,)}), "en")


def test_a_combination_without_meaning_must_raise():
    error = failure(ex.check_axes, make_reduction_axes({("instance", "NC"): ()}), "en", cases=ex.AXES_INVALID)
    assert "should_raise" in error.diagnoses
    assert "ValueError" in str(error)


@pytest.mark.parametrize("lang", LANGS)
def test_interleaved_groups(lang):
    error = failure(ex.check_channel_groups, lambda c, g: [tuple(range(i, c, g)) for i in range(g)], lang)
    assert error.diagnoses == ("interleaved",)
    assert "c % G" in str(error) and "[(0, 1, 2), (3, 4, 5)]" in str(error)
    error = failure(ex.check_group_norm, make_group_norm(interleaved=True), lang)
    assert error.diagnoses == ("interleaved",)


def test_group_norm_per_channel_is_recognised_as_instance_norm():
    error = failure(ex.check_group_norm, make_group_norm(per_channel=True), "en")
    assert error.diagnoses == ("axes",)
    assert "InstanceNorm" in str(error)


def test_channel_groups_must_refuse_uneven_splits():
    error = failure(ex.check_channel_groups, lambda c, g: [tuple(range(i * (c // g), (i + 1) * (c // g)))
                                                           for i in range(g)], "en", cases=[(6, 4)])
    assert "ValueError" in str(error) and "6, 4" in str(error)


# --------------------------------------------------------------------------- student code that breaks, and bad input

@pytest.mark.parametrize("lang", LANGS)
def test_not_written_yet(lang):
    def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
        raise NotImplementedError()
    error = failure(ex.check_layer_norm, layer_norm, lang)
    assert "NotImplementedError" in str(error)
    assert isinstance(error.__cause__, NotImplementedError)
    assert_language(str(error), lang)


def test_an_exception_in_student_code_names_it_and_the_input():
    def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
        return x.view(-1, 7)
    error = failure(ex.check_layer_norm, layer_norm, "en")
    assert "RuntimeError" in str(error) and "(4, 3)" in str(error)
    assert isinstance(error.__cause__, RuntimeError)
    # the student's own line, not a line of normlib or torch
    assert "of your code: return x.view(-1, 7)" in str(error)


def test_missing_return_and_wrong_dtype():
    message = str(failure(ex.check_layer_norm, lambda x, s, w=None, b=None, eps=1e-5: None, "en"))
    assert "NoneType" in message and "return" in message
    message = str(failure(ex.check_layer_norm, lambda x, s, w=None, b=None, eps=1e-5: make_layer_norm()(
        x.float(), s, None if w is None else w.float(), None if b is None else b.float(), eps), "en"))
    assert "torch.float64" in message and "torch.float32" in message


def test_a_batch_norm_without_running_statistics_is_named():
    class NoBuffers(nn.Module):
        def __init__(self, num_features, eps=1e-5, momentum=0.1):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(num_features))
            self.bias = nn.Parameter(torch.zeros(num_features))

        def forward(self, x):
            return x
    message = str(failure(ex.check_batch_norm_eval, NoBuffers, "en"))
    assert "running_mean" in message and "(3,)" in message


def test_bad_arguments_to_a_checker_say_what_was_expected_and_received():
    with pytest.raises(ValueError, match="got 'fr'"):
        ex.check_layer_norm(make_layer_norm(), "fr")
    with pytest.raises(TypeError, match="received int 3"):
        ex.check_layer_norm(3, "en")
    with pytest.raises(TypeError, match="torch.nn.Module"):
        ex.check_batch_norm_train(make_layer_norm(), "en")


def test_a_failure_is_an_assertion_error():
    assert issubclass(ex.CheckFailed, AssertionError)


# --------------------------------------------------------------------------- the hints point at real sections

def _headings(lang: str) -> dict[int, set[str]]:
    """The '## ' headings of every chapter source, per chapter, in ``lang``'s blocks, as a reader sees them."""
    found: dict[int, set[str]] = {}
    for path in sorted((ROOT / "chapters" / "src").glob("*.md")):
        current = None
        for line in path.read_text(encoding="utf-8").splitlines():
            marker = re.match(r"<!--\s*(\w+)", line)
            if marker:
                current = marker.group(1)
            elif current == lang and line.startswith("## "):
                title = re.sub(r"\$([^$]*)\$", lambda m: m.group(1).replace("\\partial ", "∂").replace("\\partial", "∂"),
                               line[3:].strip())
                found.setdefault(int(path.name[:2]), set()).add(title)
    return found


@pytest.mark.parametrize("lang", LANGS)
def test_every_section_a_hint_names_is_a_heading_of_that_chapter(lang):
    headings = _headings(lang)
    keys = [k for k in i18n.STRINGS[lang] if k.startswith("ex:sec:")]
    assert len(keys) >= 10
    for key in keys:
        chapter = int(key.split(":")[-1][:2])
        assert i18n.text(key, lang) in headings.get(chapter, set()), (key, lang, sorted(headings.get(chapter, ())))


@pytest.mark.parametrize("lang", LANGS)
def test_the_per_channel_lines_of_the_evaluation_test_are_about_the_output(lang):
    # evaluation mode normalized without eps: the lines about each channel's mean and variance name
    # the output, so they do not read as if they were about running_mean and running_var
    class NoEpsInEval(make_batch_norm()):
        def forward(self, x):
            if self.training:
                return super().forward(x)
            view = (1, -1) + (1,) * (x.dim() - 2)
            x_hat = (x - self.running_mean.reshape(view)) / self.running_var.reshape(view).sqrt()
            return x_hat * self.weight.reshape(view) + self.bias.reshape(view)

    error = failure(ex.check_batch_norm_eval, NoEpsInEval, lang)
    assert error.diagnoses == ("no_eps",)
    channel = i18n.text("ex:group:channel", lang)
    lines = [line for line in str(error).splitlines() if channel in line and "running" not in line]
    assert len(lines) == 2, str(error)
    for line in lines:
        assert ("출력의 채널별" if lang == "ko" else "of the output per channel") in line, line


# --------------------------------------------------------------------------- chapter 10's fold: the fold, its scale and shift, the refusal

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
