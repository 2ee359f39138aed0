"""Delegation does not score: while a student's code runs under a checker, a call to a reference
implementation of what the task asks (torch's normalization functions and modules, normlib's
library, torch's autograd in the backward task) fails the task, with a message in the student's
language that names the call (classroom/normlib_classroom/_guard.py).

For every task of the assignments (all five), in both languages, each one-line delegation below fails
and names what it called; the hand-written solutions here (as a student writes them, with torch's
helpers: mean, var, rsqrt, var_mean …) pass."""

from __future__ import annotations

import copy
import sys

import pytest
import torch
import torch.nn.functional as F
import torch.nn.utils.fusion
from torch import nn

import normlib
import normlib_classroom as ex
from helpers.exercises import init_batch_norm_state
from helpers.text import has_hangul

LANGS = ("ko", "en")


def _shape(normalized_shape) -> list:
    return [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)


def _dims(x, normalized_shape) -> tuple:
    return tuple(range(x.dim() - len(_shape(normalized_shape)), x.dim()))


def _affine(y, weight, bias, view=None):
    if weight is not None:
        y = y * (weight if view is None else weight.reshape(view))
    if bias is not None:
        y = y + (bias if view is None else bias.reshape(view))
    return y


def _view(x) -> tuple:
    return (1, -1) + (1,) * (x.dim() - 2)


# --------------------------------------------------------------------------- hand-written solutions

def layer_norm_stats(x, normalized_shape):
    var, mean = torch.var_mean(x, _dims(x, normalized_shape), correction=0, keepdim=True)
    return mean, var


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    dims = _dims(x, normalized_shape)
    mean = torch.mean(x, dims, keepdim=True)
    x_hat = (x - mean) * torch.rsqrt(x.var(dims, unbiased=False, keepdim=True) + eps)
    return _affine(x_hat, weight, bias)


def make_batch_norm(forward=None, base=nn.Module):
    """The assignment's class: its given __init__, and ``forward`` (a hand-written one by default)."""
    class BatchNorm(base):
        def __init__(self, num_features, eps=1e-5, momentum=0.1):
            if base is not nn.Module:
                super().__init__(num_features, eps=eps, momentum=momentum)
                return
            super().__init__()
            init_batch_norm_state(self, num_features, eps, momentum)

        def hand_written(self, x):
            dims, view = (0, *range(2, x.dim())), _view(x)
            if self.training:
                mean, var = x.mean(dims), x.var(dims, unbiased=False)
                with torch.no_grad():
                    self.num_batches_tracked += 1
                    m = 1 / float(self.num_batches_tracked) if self.momentum is None else self.momentum
                    self.running_mean.mul_(1 - m).add_(m * mean)
                    self.running_var.mul_(1 - m).add_(m * x.var(dims))
            else:
                mean, var = self.running_mean, self.running_var
            return _affine((x - mean.reshape(view)) / torch.sqrt(var.reshape(view) + self.eps), self.weight,
                           self.bias, view)

    if forward is not None:
        BatchNorm.forward = forward
    elif base is nn.Module:
        BatchNorm.forward = BatchNorm.hand_written
    return BatchNorm


def make_function(backward=None, forward=None):
    """A LayerNormFunction written by hand; ``backward``/``forward`` replace its own."""
    class LayerNormFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, normalized_shape, weight, bias, eps):
            dims = _dims(x, normalized_shape)
            mean = x.mean(dims, keepdim=True)
            rstd = torch.rsqrt(((x - mean) ** 2).mean(dims, keepdim=True) + eps)
            ctx.save_for_backward(x, weight, bias, mean, rstd)
            ctx.dims, ctx.normalized_shape, ctx.eps = dims, normalized_shape, eps
            return (x - mean) * rstd * weight + bias

        @staticmethod
        def backward(ctx, dy):
            x, weight, _, mean, rstd = ctx.saved_tensors
            x_hat, g, lead = (x - mean) * rstd, dy * weight, tuple(range(x.dim() - len(ctx.dims)))
            dx = rstd * (g - g.mean(ctx.dims, keepdim=True) - x_hat * (g * x_hat).mean(ctx.dims, keepdim=True))
            return dx, None, (dy * x_hat).sum(lead), dy.sum(lead), None

    if forward is not None:
        LayerNormFunction.forward = staticmethod(forward)
    if backward is not None:
        LayerNormFunction.backward = staticmethod(backward)
    return LayerNormFunction


class BatchNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, eps):
        dims, view = (0, *range(2, x.dim())), _view(x)
        mean = x.mean(dims, keepdim=True)
        rstd = torch.rsqrt(x.var(dims, unbiased=False, keepdim=True) + eps)
        ctx.save_for_backward(x, weight, mean, rstd)
        ctx.dims, ctx.view = dims, view
        return _affine((x - mean) * rstd, weight, bias, view)

    @staticmethod
    def backward(ctx, dy):
        x, weight, mean, rstd = ctx.saved_tensors
        x_hat, g = (x - mean) * rstd, dy * weight.reshape(ctx.view)
        dx = rstd * (g - g.mean(ctx.dims, keepdim=True) - x_hat * (g * x_hat).mean(ctx.dims, keepdim=True))
        return dx, (dy * x_hat).sum(ctx.dims), dy.sum(ctx.dims), None


def reduction_axes(method, layout):
    if layout == "BLD":
        if method not in ("batch", "layer", "rms"):
            raise ValueError(f"{method} has no meaning for (B, L, D)")
        return (0, 1) if method == "batch" else (2,)
    spatial = tuple(range(2, len(layout)))
    if method == "batch":
        return (0, *spatial)
    if method == "instance":
        if not spatial:
            raise ValueError("instance needs a spatial axis")
        return spatial
    return (1, *spatial)


def channel_groups(num_channels, num_groups):
    if num_channels % num_groups:
        raise ValueError("the channels do not split evenly")
    size = num_channels // num_groups
    return [tuple(range(g * size, (g + 1) * size)) for g in range(num_groups)]


def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5):
    g = x.reshape(x.shape[0], num_groups, -1)
    var, mean = torch.var_mean(g, -1, correction=0, keepdim=True)
    return _affine(((g - mean) / torch.sqrt(var + eps)).reshape(x.shape), weight, bias, _view(x))


# --------------------------------------------------------------------------- the delegations, task by task

def _autograd_backward(grads):
    """A backward that recomputes the hand-written forward with autograd on and asks ``grads`` for ∂L/∂(x, γ, β)."""
    def backward(ctx, dy):
        x, weight, bias, _, _ = ctx.saved_tensors
        with torch.enable_grad():
            leaves = [t.detach().requires_grad_() for t in (x, weight, bias)]
            y = layer_norm(leaves[0], ctx.normalized_shape, leaves[1], leaves[2], ctx.eps)
            dx, dw, db = grads(y, leaves, dy)
        return dx, None, dw, db, None
    return backward


def _with_dot_backward(y, leaves, dy):
    y.backward(dy)
    return [t.grad for t in leaves]


def _functional_vjp(y, leaves, dy):
    x, w, b = leaves
    return torch.autograd.functional.vjp(lambda x, w, b: layer_norm(x, x.shape[-w.dim():], w, b, 0.01), (x, w, b), dy)[1]


def _func_vjp(y, leaves, dy):
    x, w, b = leaves
    return torch.func.vjp(lambda x, w, b: layer_norm(x, x.shape[-w.dim():], w, b, 0.01), x, w, b)[1](dy)


def fold(conv, bn):
    if bn.training:
        raise ValueError("fold needs a BatchNorm in evaluation mode")
    scale = bn.weight * torch.rsqrt(bn.running_var + bn.eps)
    b = conv.bias if conv.bias is not None else torch.zeros_like(bn.running_mean)
    folded = copy.deepcopy(conv)
    folded.weight = nn.Parameter((conv.weight * scale.reshape((-1,) + (1,) * (conv.weight.dim() - 1))).detach())
    folded.bias = nn.Parameter((scale * (b - bn.running_mean) + bn.bias).detach())
    return folded


def scale_shift(bn):
    s = bn.weight * torch.rsqrt(bn.running_var + bn.eps)
    return s, bn.bias - s * bn.running_mean


def _scale_shift_by_fold(bn):
    """s and t read off normlib's fold of an identity Linear: W' = s·I, b' = β − s·μ."""
    eye = nn.Linear(bn.num_features, bn.num_features, bias=False, dtype=bn.running_mean.dtype)
    with torch.no_grad():
        eye.weight.copy_(torch.eye(bn.num_features))
    folded = normlib.fold.fold_batch_norm(eye, bn)
    return folded.weight.diagonal(), folded.bias


def _scale_shift_by_fusion(bn):
    ones = torch.ones(bn.num_features, 1, dtype=bn.running_mean.dtype)
    w, b = torch.nn.utils.fusion.fuse_linear_bn_weights(ones, torch.zeros_like(bn.running_mean), bn.running_mean,
                                                        bn.running_var, bn.eps, bn.weight, bn.bias)
    return w.reshape(-1), b


def _fused_weights(conv, bn):
    folded = copy.deepcopy(conv)
    folded.weight, folded.bias = torch.nn.utils.fusion.fuse_conv_bn_weights(
        conv.weight, conv.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return folded


LN = normlib.autograd.LayerNormFunction
BNF = normlib.autograd.BatchNormFunction

DELEGATIONS = {
    "check_layer_norm_stats": [
        ("normlib.stats.moments", lambda x, s: normlib.stats.moments(x, _dims(x, s))),
        ("normlib.stats.two_pass", lambda x, s: (lambda m: (m.mean, m.var()))(normlib.stats.two_pass(x, _dims(x, s)))),
        ("torch.native_layer_norm", lambda x, s: (lambda o: (o[1], o[2] ** -2))(torch.native_layer_norm(x, _shape(s), None, None, 0.0))),
        ("torch.ops.aten.native_layer_norm", lambda x, s: torch.ops.aten.native_layer_norm(x, _shape(s), None, None, 0.0)[1:]),
    ],
    "check_layer_norm": [
        ("torch.nn.functional.layer_norm", lambda x, s, w=None, b=None, eps=1e-5: F.layer_norm(x, _shape(s), w, b, eps)),
        ("torch.nn.LayerNorm", lambda x, s, w=None, b=None, eps=1e-5: _affine(
            nn.LayerNorm(s, eps=eps, elementwise_affine=False, dtype=x.dtype)(x), w, b)),
        ("torch.layer_norm", lambda x, s, w=None, b=None, eps=1e-5: torch.layer_norm(x, _shape(s), w, b, eps)),
        ("torch.ops.aten.layer_norm", lambda x, s, w=None, b=None, eps=1e-5: torch.ops.aten.layer_norm(x, _shape(s), w, b, eps)),
        ("torch.ops.aten.native_layer_norm.default", lambda x, s, w=None, b=None, eps=1e-5:
            torch.ops.aten.native_layer_norm.default(x, _shape(s), w, b, eps)[0]),
        ("normlib.functional.layer_norm", lambda x, s, w=None, b=None, eps=1e-5: normlib.functional.layer_norm(x, s, w, b, eps)),
        ("normlib.modules.LayerNorm", lambda x, s, w=None, b=None, eps=1e-5: _affine(
            normlib.LayerNorm(s, eps=eps, elementwise_affine=False, dtype=x.dtype)(x), w, b)),
        ("normlib.autograd.layer_norm", lambda x, s, w=None, b=None, eps=1e-5: normlib.autograd.layer_norm(x, s, w, b, eps)),
        ("normlib.stats.moments", lambda x, s, w=None, b=None, eps=1e-5: (lambda m, v: _affine(
            (x - m) / torch.sqrt(v + eps), w, b))(*normlib.stats.moments(x, _dims(x, s)))),
    ],
    "check_batch_norm": [   # the three checkers of assignment 2 (training, running statistics, evaluation)
        ("torch.nn.BatchNorm1d", nn.BatchNorm1d),
        ("torch.nn.BatchNorm1d", make_batch_norm(base=nn.BatchNorm1d)),
        ("torch.nn.BatchNorm1d", make_batch_norm(lambda self, x: nn.BatchNorm1d.forward(self, x))),
        ("torch.nn.functional.batch_norm", make_batch_norm(lambda self, x: F.batch_norm(
            x, self.running_mean, self.running_var, self.weight, self.bias, self.training, self.momentum or 0.1, self.eps))),
        ("torch.batch_norm", make_batch_norm(lambda self, x: torch.batch_norm(
            x, self.weight, self.bias, self.running_mean, self.running_var, self.training, 0.1, self.eps, False))),
        ("torch.ops.aten.native_batch_norm", make_batch_norm(lambda self, x: torch.ops.aten.native_batch_norm(
            x, self.weight, self.bias, self.running_mean, self.running_var, self.training, 0.1, self.eps)[0])),
        ("normlib.functional.batch_norm", make_batch_norm(lambda self, x: normlib.functional.batch_norm(
            x, self.running_mean, self.running_var, self.weight, self.bias, self.training, self.momentum, self.eps))),
        ("normlib.autograd.batch_norm", make_batch_norm(lambda self, x: normlib.autograd.batch_norm(
            x, self.running_mean, self.running_var, self.weight, self.bias, self.training, self.momentum, self.eps))),
        ("normlib.modules.BatchNorm1d", make_batch_norm(base=normlib.BatchNorm1d)),
        ("normlib.autograd.BatchNorm1d", normlib.autograd.BatchNorm1d),
    ],
    "check_layer_norm_backward": [
        ("torch.nn.functional.layer_norm", lambda x, s, w, b, eps: F.layer_norm(x, _shape(s), w, b, eps)),
        ("normlib.autograd.layer_norm", lambda x, s, w, b, eps: normlib.autograd.layer_norm(x, s, w, b, eps)),
        ("normlib.autograd.LayerNormFunction", make_function(
            forward=lambda ctx, x, s, w, b, eps: LN.forward(ctx, x, w, b, len(_shape(s)), eps),
            backward=lambda ctx, dy: (lambda dx, dw, db, *_: (dx, None, dw, db, None))(*LN.backward(ctx, dy)))),
        ("normlib.autograd.LayerNormFunction.backward", make_function(
            forward=lambda ctx, x, s, w, b, eps: layer_norm(x, s, w, b, eps),
            backward=lambda ctx, dy: LN.backward(ctx, dy))),
        ("torch.autograd.grad", make_function(_autograd_backward(torch.autograd.grad))),
        ("torch.Tensor.backward", make_function(_autograd_backward(_with_dot_backward))),
        ("torch.autograd.functional.vjp", make_function(_autograd_backward(_functional_vjp))),
        ("torch.func.vjp", make_function(_autograd_backward(_func_vjp))),
    ],
    "check_batch_norm_backward": [
        ("torch.nn.functional.batch_norm", lambda x, w, b, eps: F.batch_norm(x, None, None, w, b, training=True, eps=eps)),
        ("torch.nn.BatchNorm1d", lambda x, w, b, eps: _affine(
            nn.BatchNorm1d(x.shape[1], eps=eps, affine=False, track_running_stats=False, dtype=x.dtype)(x), w, b, _view(x))),
        ("normlib.autograd.batch_norm", lambda x, w, b, eps: normlib.autograd.batch_norm(x, None, None, w, b, True, 0.1, eps)),
        ("normlib.autograd.BatchNormFunction", lambda x, w, b, eps: BNF.apply(x, w, b, eps)[0]),
    ],
    "check_axes": [
        ("normlib.axes.sharing", lambda m, layout: normlib.axes.sharing(m, ex.LAYOUTS[layout]).axes),
        ("normlib.axes.batch_norm_axes", lambda m, layout: normlib.axes.batch_norm_axes(ex.LAYOUTS[layout]).axes),
    ],
    "check_channel_groups": [
        ("normlib.axes.group_norm_axes", lambda c, g: list(normlib.axes.group_norm_axes((1, c), g).groups)),
        ("normlib.axes.sharing", lambda c, g: list(normlib.axes.sharing("group", (1, c), num_groups=g).groups)),
    ],
    "check_group_norm": [
        ("torch.nn.functional.group_norm", F.group_norm),
        ("torch.nn.GroupNorm", lambda x, g, w=None, b=None, eps=1e-5: _affine(
            nn.GroupNorm(g, x.shape[1], eps=eps, affine=False, dtype=x.dtype)(x), w, b, _view(x))),
        ("torch.group_norm", lambda x, g, w=None, b=None, eps=1e-5: torch.group_norm(x, g, w, b, eps)),
        ("torch.native_group_norm", lambda x, g, w=None, b=None, eps=1e-5: torch.native_group_norm(
            x, w, b, x.shape[0], x.shape[1], x[0, 0].numel(), g, eps)[0]),
        ("torch.ops.aten.native_group_norm", lambda x, g, w=None, b=None, eps=1e-5: torch.ops.aten.native_group_norm(
            x, w, b, x.shape[0], x.shape[1], x[0, 0].numel(), g, eps)[0]),
        ("torch.nn.functional.instance_norm", lambda x, g, w=None, b=None, eps=1e-5: _affine(
            F.instance_norm(x.reshape(x.shape[0], g, -1), eps=eps).reshape(x.shape), w, b, _view(x))),
        ("torch.nn.functional.layer_norm", lambda x, g, w=None, b=None, eps=1e-5: _affine(F.layer_norm(
            x.reshape(x.shape[0], g, -1), (x[0].numel() // g,), eps=eps).reshape(x.shape), w, b, _view(x))),
        ("normlib.functional.group_norm", lambda x, g, w=None, b=None, eps=1e-5: normlib.functional.group_norm(x, g, w, b, eps)),
        ("normlib.modules.GroupNorm", lambda x, g, w=None, b=None, eps=1e-5: _affine(
            normlib.GroupNorm(g, x.shape[1], eps=eps, affine=False, dtype=x.dtype)(x), w, b, _view(x))),
    ],
    "check_scale_shift": [
        ("normlib.fold.fold_batch_norm", _scale_shift_by_fold),
        ("torch.nn.utils.fusion.fuse_linear_bn_weights", _scale_shift_by_fusion),
    ],
    "check_fold_batch_norm": [
        ("normlib.fold.fold_batch_norm", lambda conv, bn: normlib.fold.fold_batch_norm(conv, bn)),
        ("normlib.fold.fold_conv_bn", normlib.fold.fold_conv_bn),
        ("torch.nn.utils.fusion.fuse_conv_bn_eval", lambda conv, bn: torch.nn.utils.fusion.fuse_conv_bn_eval(conv, bn)),
        ("torch.nn.utils.fusion.fuse_conv_bn_weights", _fused_weights),
    ],
}

CHECKERS = {
    "check_layer_norm_stats": [ex.check_layer_norm_stats],
    "check_layer_norm": [ex.check_layer_norm],
    "check_batch_norm": [ex.check_batch_norm_train, ex.check_batch_norm_running, ex.check_batch_norm_eval,
                         lambda cls, lang: ex.check_batch_norm_running(cls, lang, momentum=None)],
    "check_layer_norm_backward": [ex.check_layer_norm_backward],
    "check_batch_norm_backward": [ex.check_batch_norm_backward],
    "check_axes": [ex.check_axes],
    "check_channel_groups": [ex.check_channel_groups],
    "check_group_norm": [ex.check_group_norm],
    "check_scale_shift": [ex.check_scale_shift],
    "check_fold_batch_norm": [ex.check_fold_batch_norm, ex.check_fold_training],
}

SOLUTIONS = {
    "check_layer_norm_stats": layer_norm_stats, "check_layer_norm": layer_norm, "check_batch_norm": make_batch_norm(),
    "check_layer_norm_backward": make_function(), "check_batch_norm_backward": BatchNormFunction,
    "check_axes": reduction_axes, "check_channel_groups": channel_groups, "check_group_norm": group_norm,
    "check_scale_shift": scale_shift, "check_fold_batch_norm": fold,
}

CASES = [pytest.param(task, k, call, id=f"{task}-{call}-{k}")
         for task, delegations in DELEGATIONS.items() for k, (call, _) in enumerate(delegations)]


def _failure(check, submission, lang) -> ex.CheckFailed:
    with pytest.raises(ex.CheckFailed) as info:
        check(submission, lang)
    return info.value


# --------------------------------------------------------------------------- the tests

def test_every_task_of_every_assignment_has_delegations():
    names = {name for name in ex.__all__ if name.startswith("check_")}
    covered = {check.__name__ for checks in CHECKERS.values() for check in checks if check.__name__ != "<lambda>"}
    assert covered == names
    assert all(len(DELEGATIONS[task]) >= 2 for task in CHECKERS)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("task,index,call", CASES)
def test_a_one_line_delegation_fails_and_names_the_call(task, index, call, lang):
    submission = DELEGATIONS[task][index][1]
    for check in CHECKERS[task]:
        error = _failure(check, submission, lang)
        message = str(error)
        assert error.diagnoses == ("delegated",), message
        assert call in message, message
        assert has_hangul(message) == (lang == "ko"), message
        assert sys.getprofile() is None                       # the guard is gone once the checker is done


@pytest.mark.parametrize("lang", LANGS)
def test_hand_written_solutions_pass(lang, capsys):
    for task, checks in CHECKERS.items():
        for check in checks:
            check(SOLUTIONS[task], lang)
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == sum(len(checks) for checks in CHECKERS.values())
    assert all(has_hangul(line) == (lang == "ko") for line in printed)


def test_helpers_that_are_not_normalization_layers_stay_allowed(capsys):
    def uses_normalize(x, normalized_shape, weight=None, bias=None, eps=1e-5):
        # F.normalize divides by a norm: a helper, not a normalization layer
        dims = _dims(x, normalized_shape)
        centered = x - x.mean(dims, keepdim=True)
        unit = F.normalize(centered.flatten(len(x.shape) - len(dims)), dim=-1).reshape(x.shape)
        n = centered[(0,) * (x.dim() - len(dims))].numel()
        rms = centered.square().mean(dims, keepdim=True).sqrt()
        return _affine(unit * n ** 0.5 * rms / torch.sqrt(rms ** 2 + eps), weight, bias)
    ex.check_layer_norm(uses_normalize, "en")
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize("lang", LANGS)
def test_a_backward_left_to_torchs_autograd_fails(lang):
    # no autograd.Function at all: the gradients would be torch's, from the student's forward
    error = _failure(ex.check_layer_norm_backward, layer_norm, lang)
    assert error.diagnoses == ("no_backward",)
    assert ("autograd" in str(error)) and has_hangul(str(error)) == (lang == "ko")
    error = _failure(ex.check_batch_norm_backward, lambda x, w, b, eps: _affine(
        (x - x.mean(0)) / torch.sqrt(x.var(0, unbiased=False) + eps), w, b), lang)
    assert error.diagnoses == ("no_backward",)


def test_the_delegation_is_named_even_when_the_call_then_raises():
    error = _failure(ex.check_layer_norm, lambda x, s, w=None, b=None, eps=1e-5: F.layer_norm(x, "wrong"), "en")
    assert error.diagnoses == ("delegated",) and "torch.nn.functional.layer_norm" in str(error)


def test_the_guard_puts_back_a_profiler_that_was_there():
    seen = []

    def profiler(frame, event, arg):
        if event == "call":
            seen.append(frame.f_code.co_name)

    sys.setprofile(profiler)
    try:
        _failure(ex.check_layer_norm, DELEGATIONS["check_layer_norm"][0][1], "en")
        ex.check_layer_norm(layer_norm, "en")
        assert sys.getprofile() is profiler
    finally:
        sys.setprofile(None)
    assert "layer_norm" in seen            # the student's function was seen by the teacher's profiler too
