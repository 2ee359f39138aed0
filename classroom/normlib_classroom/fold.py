"""Assignment 5 (folding BatchNorm into a convolution): ``check_scale_shift`` (part 1),
``check_fold_batch_norm`` and ``check_fold_training`` (part 2).

Part 1: ``scale_shift(bn)`` returns the evaluation-mode BatchNorm as one affine map per channel,
``bn(z) = s·z + t``: the pair ``(s, t)`` of shape ``(C,)``, s = γ / √(running_var + ε) and
t = β − s · running_mean, leaving ``bn`` unchanged.

Part 2:
the student writes ``fold(conv, bn)``, where ``conv`` is a ``torch.nn.Conv1d`` or
``Conv2d`` (with or without a bias) and ``bn`` the evaluation-mode BatchNorm after it, and returns
a **new layer of the conv's own type** (a ``Conv1d`` for a ``Conv1d``, same stride, padding, …),
always with a bias, that computes ``bn(conv(x))`` in one step, per output channel c::

    W'[c] = γ[c] · W[c] / √(running_var[c] + ε)
    b'[c] = γ[c] · (b[c] − running_mean[c]) / √(running_var[c] + ε) + β[c]     (b = 0 without a bias)

``conv`` and ``bn`` must be left unchanged. Given a BatchNorm in **training mode**, ``fold`` must
refuse it by raising a ``ValueError``, a ``RuntimeError`` (not ``NotImplementedError``) or an
``AssertionError`` (``assert not bn.training``): training mode normalizes with each batch's own
statistics, which no fixed weight and bias reproduce. The reference is
:func:`normlib.fold.fold_batch_norm`; calling it, or ``torch.nn.utils.fusion``'s
``fuse_conv_bn_eval`` / ``fuse_conv_bn_weights``, does not score (:mod:`._guard`).

>>> import copy
>>> def fold(conv, bn):
...     if bn.training:
...         raise ValueError("fold needs a BatchNorm in evaluation mode")
...     scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
...     b = conv.bias if conv.bias is not None else torch.zeros_like(bn.running_mean)
...     folded = copy.deepcopy(conv)
...     with torch.no_grad():
...         shape = (-1,) + (1,) * (conv.weight.dim() - 1)
...         folded.weight = torch.nn.Parameter(conv.weight * scale.reshape(shape))
...         folded.bias = torch.nn.Parameter(scale * (b - bn.running_mean) + bn.bias)
...     return folded
>>> check_fold_batch_norm(fold, "en")
passed: fold (5 checks)
>>> check_fold_batch_norm(fold, "ko")
통과: fold (검사 5개)
"""

from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

import torch
from torch import Tensor, nn

from normlib.axes import channel_view
from normlib.fold import fold_batch_norm
from normlib.stats import moments
from normlib_classroom.words import text

from ._report import CheckFailed, _case, _close, _compare, _input, _name, _params, _passed, _Report, _start, _tol

CONVS = {"Conv1d": nn.Conv1d, "Conv2d": nn.Conv2d}
SPATIAL = {"Conv1d": (9,), "Conv2d": (6, 5)}
# (layer, in_channels, out_channels, kernel_size, conv bias[, more Conv arguments such as stride, padding,
# groups]): Conv1d and Conv2d, with and without a bias
CASES = (("Conv1d", 3, 4, 3, True), ("Conv2d", 3, 4, 3, False), ("Conv2d", 2, 5, (3, 2), True), ("Conv1d", 4, 3, 1, False))
EPS = 0.01          # large enough that ε left out or put outside the square root is seen
REFUSALS = (ValueError, RuntimeError, AssertionError)   # what a fold may raise for a training-mode BatchNorm
SECTION = "ex:sec:10_fold"     # chapter 10: "Inference: folding BatchNorm into the layer before it"


def _section(slip: str) -> str:
    """The section a slip sends the student to: ε outside the root is chapter 4's pitfall, the rest the fold's."""
    return "ex:sec:04_std_eps" if slip == "fold_std_eps" else SECTION


def _layers(case, gen: torch.Generator, eps: float = EPS) -> Tuple[nn.Module, nn.Module, Tensor]:
    """A seeded float64 conv and BatchNorm (random weights, bias, γ, β, running statistics) and an input."""
    kind, c_in, c_out, kernel, bias, *more = case
    conv = CONVS[kind](c_in, c_out, kernel, bias=bias, dtype=torch.float64, **(more[0] if more else {}))
    bn = getattr(nn, kind.replace("Conv", "BatchNorm"))(c_out, eps=eps, dtype=torch.float64)
    gamma, beta = _params((c_out,), gen, torch.float64)
    with torch.no_grad():
        conv.weight.copy_(torch.randn(conv.weight.shape, generator=gen, dtype=torch.float64) * 0.7)
        if bias:
            conv.bias.copy_(torch.randn(c_out, generator=gen, dtype=torch.float64) + 0.5)
        bn.weight.copy_(gamma)
        bn.bias.copy_(beta)
        bn.running_mean.copy_(2 * torch.randn(c_out, generator=gen, dtype=torch.float64) + 0.5)
        bn.running_var.copy_(0.5 + 2 * torch.rand(c_out, generator=gen, dtype=torch.float64))
    conv.eval()
    bn.eval()
    x = _input((4, c_in) + SPATIAL[kind], gen, torch.float64)
    return conv, bn, x


def _describe(conv: nn.Module) -> str:
    more = "".join(f", {key}={getattr(conv, key)}" for key, default in (("stride", 1), ("padding", 0), ("groups", 1))
                   if getattr(conv, key) not in (default, (default,) * len(conv.kernel_size)))
    return (f"{type(conv).__name__}({conv.in_channels}, {conv.out_channels}, kernel_size={tuple(conv.kernel_size)}"
            f"{more}, bias={conv.bias is not None})")


def _fold(conv, bn, *, conv_bias: bool = True, eps: Optional[float] = None, std_eps: bool = False,
          var_factor: float = 1.0, unscaled_mean: bool = False) -> Tuple[Tensor, Tensor]:
    """(W', b') by the formula, or with the named slips: the conv bias left out, another ε,
    ε outside the square root (√var + ε), the running variance times a factor, the shift
    t = β − μ (μ not scaled by s)."""
    eps = bn.eps if eps is None else eps
    var = bn.running_var.detach() * var_factor
    scale = bn.weight.detach() / (var.sqrt() + eps if std_eps else (var + eps).sqrt())
    b = conv.bias.detach() if conv_bias and conv.bias is not None else torch.zeros_like(scale)
    weight = conv.weight.detach() * scale.reshape((-1,) + (1,) * (conv.weight.dim() - 1))
    mean = bn.running_mean.detach()
    return weight, scale * b - (mean if unscaled_mean else scale * mean) + bn.bias.detach()


def _scale_factor(s: Tensor, bn) -> Optional[float]:
    """The factor k for which the scale ``s`` is γ/√(k·running_var + ε), if one seems to be:
    k_c = ((γ_c / s_c)² − ε) / var_c per channel, their mean (the caller then checks it)."""
    k = ((bn.weight.detach() / s.detach().double()) ** 2 - bn.eps) / bn.running_var.detach()
    factor = float(k.mean())
    return factor if torch.isfinite(k).all() and abs(factor - 1) > 1e-3 else None


def _implied_factor(got_weight, conv, bn) -> Optional[float]:
    """The one factor k for which the student's weight equals the fold with k·running_var, if any:
    per channel, s = ⟨W'_c, W_c⟩ / ⟨W_c, W_c⟩, then :func:`_scale_factor`."""
    if not isinstance(got_weight, Tensor) or got_weight.shape != conv.weight.shape:
        return None
    w, g = conv.weight.detach(), got_weight.detach().double()
    dims = tuple(range(1, w.dim()))
    return _scale_factor((g * w).sum(dims) / (w * w).sum(dims), bn)


def _explain(report: _Report, result, conv, bn, x: Tensor, got_output: Optional[Tensor]) -> None:
    """Name the slip whose fold equals the student's: by the output when it differs
    (``got_output``), else by the weight and the bias."""
    tol = _tol(torch.float64)
    candidates: Dict[str, Tuple[Tensor, Tensor]] = {}
    if conv.bias is not None:
        candidates["fold_no_conv_bias"] = _fold(conv, bn, conv_bias=False)
    candidates["fold_std_eps"] = _fold(conv, bn, std_eps=True)
    candidates["fold_no_eps"] = _fold(conv, bn, eps=0.0)
    candidates["shift_unscaled_mean"] = _fold(conv, bn, unscaled_mean=True)
    factor = _implied_factor(getattr(result, "weight", None), conv, bn)
    if factor is not None:
        candidates["fold_var_scaled"] = _fold(conv, bn, var_factor=factor)
    with torch.no_grad():
        for name, (weight, bias) in candidates.items():
            if got_output is not None:
                same = _close(got_output, conv._conv_forward(x, weight, bias), tol)
            else:
                same = _close(result.weight, weight, tol) and _close(result.bias, bias, tol)
            if same:
                kwargs = {"factor": f"{factor:.6g}"} if name == "fold_var_scaled" else {}
                report.diagnose(name, f"ex:diag:{name}", _section(name), **kwargs)
                return
        if got_output is not None:
            y = conv(x)
            mean, var = moments(y, (0, *range(2, y.dim())))
            n = y.numel() // y.shape[1]
            for unbiased in (False, True):      # y.var(dims) divides by n − 1 unless told otherwise
                v = var * n / (n - 1) if unbiased else var
                batch = (y - mean) / torch.sqrt(v + bn.eps) * channel_view(bn.weight, y.dim()) \
                    + channel_view(bn.bias, y.dim())
                if _close(got_output, batch, tol):
                    key = "ex:diag:fold_batch_stats_unbiased" if unbiased else "ex:diag:fold_batch_stats"
                    report.diagnose("fold_batch_stats", key, SECTION)
                    return


def _state(*layers: nn.Module):
    return [(layer.training, {k: v.detach().clone() for k, v in layer.state_dict().items()}) for layer in layers]


def _unchanged(before, after) -> bool:
    return all(tb == ta and sb.keys() == sa.keys() and all(torch.equal(sb[k], sa[k]) for k in sb)
               for (tb, sb), (ta, sa) in zip(before, after))


def _check_case(report: _Report, fold, conv, bn, x: Tensor) -> None:
    expected = fold_batch_norm(conv, bn)                      # the reference, outside the guard
    with torch.no_grad():
        wanted = expected(x)
    before = _state(conv, bn)
    result = report.call(fold, conv, bn)
    if not _unchanged(before, _state(conv, bn)):
        report.add("ex:fold_modified")
        report.fail()
    layer = type(conv).__name__
    if not isinstance(result, nn.Module):
        hint = report.t("ex:return_missing") if result is None else ""
        report.add("ex:fold_not_layer", expected=f"torch.nn.{layer}", got=type(result).__name__)
        report.lines[-1] += hint
        report.fail()
    with torch.no_grad():
        got = report.call(result, x.clone())
    status = _compare(report, report.t("ex:output"), got, wanted, _tol(x.dtype))
    if status == "values":
        _explain(report, result, conv, bn, x, got)
    if status != "ok":
        report.fail()
    if not isinstance(result, type(conv)):
        report.add("ex:fold_not_layer", expected=f"torch.nn.{layer}", got=type(result).__name__)
        report.fail()
    for attr, reference in (("weight", expected.weight), ("bias", expected.bias)):
        status = _compare(report, report.t(f"ex:fold_{attr}"), getattr(result, attr, None), reference.detach(),
                          _tol(x.dtype))
        if status == "values":
            _explain(report, result, conv, bn, x, None)
        if status != "ok":
            report.fail()


def _check_training(report: _Report, fold, conv, bn) -> None:
    """A training-mode BatchNorm must be refused with one of :data:`REFUSALS`."""
    bn.train()
    try:
        with report.guarded():
            fold(conv, bn)
    except CheckFailed:
        raise
    except NotImplementedError as error:
        report.add("ex:not_implemented")
        report.fail(error)
    except REFUSALS:
        return
    except Exception as error:    # noqa: BLE001 - any other error in student code is reported
        report.add("ex:fold_wrong_error", error=f"{type(error).__name__}: {error}")
        report.fail(error)
    report.diagnose("fold_training", "ex:diag:fold_training", SECTION)
    report.fail()


def check_fold_batch_norm(fold, lang: str = "en", *, cases: Sequence[tuple] = CASES, seed: int = 0,
                          eps: float = EPS, training: bool = True) -> None:
    """Check ``fold(conv, bn)`` (the contract is in the module's docstring) on each case
    ``(layer, in_channels, out_channels, kernel_size, conv bias)`` — ``layer`` is ``"Conv1d"`` or
    ``"Conv2d"``; a sixth item, a dict such as ``{"stride": 2, "padding": 1, "groups": 2}``, is passed
    on to the conv — with seeded float64 weights, γ, β and running statistics (the BatchNorm's
    ``eps``, 0.01 unless given), then
    (unless ``training=False``: the assignment grades it apart, :func:`check_fold_training`) with a
    training-mode BatchNorm, which ``fold`` must refuse. Each folded layer's output on a seeded
    input, its weight and its bias are compared with :func:`normlib.fold.fold_batch_norm`'s.

    On a difference the report names the slip (``CheckFailed.diagnoses``), recognised from what the
    student's fold computed on the same conv and BatchNorm:

    * ``fold_no_conv_bias``: the conv's bias treated as 0, b' = γ·(0 − μ)/√(σ² + ε) + β;
    * ``fold_batch_stats``: the folded layer's output equals the BatchNorm applied with the mean and
      variance of the checker's batch ``conv(x)``, as in training mode, instead of the running
      statistics; the population variance or the unbiased one (n − 1, what ``y.var(dims)`` gives),
      and the message says which;
    * ``fold_var_scaled``: the fold with the running variance multiplied by one factor k ≠ 1 for
      every channel (a "correction" such as n/(n − 1) or (n − 1)/n): k is read off the student's
      weight (per channel, the scale s = ⟨W', W⟩/⟨W, W⟩ gives k = ((γ/s)² − ε)/σ², averaged) and
      the fold with k·σ² must then equal the student's weight and bias (or output);
    * ``fold_std_eps``: ε outside the square root, γ/(√σ² + ε);
    * ``fold_no_eps``: ε left out, γ/√σ²;
    * ``fold_training``: a training-mode BatchNorm folded without complaint.

    >>> import normlib
    >>> try:
    ...     check_fold_batch_norm(normlib.fold.fold_batch_norm, "en")   # the library's own: does not score
    ... except AssertionError as failure:
    ...     print(str(failure).splitlines()[1][:49])
      • your code called normlib.fold.fold_batch_norm
    """
    gen = _start(lang, fold, seed)
    name = _name(fold, "fold")
    cases = tuple(cases)
    for case in cases:
        conv, bn, x = _layers(case, gen, eps)
        report = _Report(lang, name, ", ".join([_describe(conv), _case(lang, x.shape, eps=eps),
                                                text("ex:case_eval", lang)]), SECTION)
        _check_case(report, fold, conv, bn, x)
    if training:
        conv, bn, x = _layers(cases[0] if cases else CASES[0], gen, eps)
        report = _Report(lang, name, ", ".join([_describe(conv), text("ex:case_fold_training", lang)]), SECTION)
        _check_training(report, fold, conv, bn)
    _passed(lang, name, len(cases) + training)


def check_fold_training(fold, lang: str = "en", *, case: tuple = CASES[0], seed: int = 0) -> None:
    """Check that ``fold(conv, bn)`` tells the modes apart: it accepts an evaluation-mode BatchNorm
    (returns without raising; what it returns is :func:`check_fold_batch_norm`'s to check) and
    refuses a training-mode one with a ``ValueError``, ``RuntimeError`` or ``AssertionError``
    (diagnosis ``fold_training`` when it folds it without complaint).

    >>> def fold(conv, bn):          # folds whatever it is given
    ...     return conv
    >>> try:
    ...     check_fold_training(fold, "en")
    ... except AssertionError as failure:
    ...     print(failure.diagnoses)
    ('fold_training',)
    """
    gen = _start(lang, fold, seed)
    name = _name(fold, "fold")
    conv, bn, _ = _layers(case, gen)
    report = _Report(lang, name, ", ".join([_describe(conv), text("ex:case_eval", lang)]), SECTION)
    try:
        with report.guarded():
            fold(conv, bn)
    except CheckFailed:
        raise
    except NotImplementedError as error:
        report.add("ex:not_implemented")
        report.fail(error)
    except Exception as error:    # noqa: BLE001 - refusing every BatchNorm is not telling the modes apart
        report.add("ex:fold_refused_eval", error=f"{type(error).__name__}: {error}")
        report.fail(error)
    report = _Report(lang, name, ", ".join([_describe(conv), text("ex:case_fold_training", lang)]), SECTION)
    _check_training(report, fold, conv, bn)
    _passed(lang, name, 2)


# --------------------------------------------------------------------------- part 1: the BatchNorm as s·z + t

def _check_scale_shift_case(report: _Report, scale_shift, bn) -> None:
    gamma, beta, mean = bn.weight.detach(), bn.bias.detach(), bn.running_mean.detach()
    scale = gamma / torch.sqrt(bn.running_var.detach() + bn.eps)
    before = _state(bn)
    result = report.call(scale_shift, bn)
    if not _unchanged(before, _state(bn)):
        report.add("ex:scale_shift_modified")
        report.fail()
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        report.add("ex:not_scale_shift", got=type(result).__name__)
        report.lines[-1] += report.t("ex:return_missing") if result is None else ""
        report.fail()
    statuses = [_compare(report, report.t(what), got, wanted, _tol(torch.float64)) for what, got, wanted in
                (("ex:scale", result[0], scale), ("ex:shift", result[1], beta - scale * mean))]
    if "shape" in statuses:
        report.fail()
    if statuses == ["ok", "ok"]:
        return
    s, t, tol = result[0].detach().double(), result[1].detach().double(), _tol(torch.float64)
    factor = _scale_factor(s, bn)
    var = bn.running_var.detach()
    candidates = {"fold_std_eps": gamma / (var.sqrt() + bn.eps), "fold_no_eps": gamma / var.sqrt()}
    if factor is not None:
        candidates["fold_var_scaled"] = gamma / torch.sqrt(factor * var + bn.eps)
    for slip, candidate in candidates.items():
        if _close(s, candidate, tol):
            kwargs = {"factor": f"{factor:.6g}"} if slip == "fold_var_scaled" else {}
            report.diagnose(slip, f"ex:diag:{slip}", _section(slip), **kwargs)
            report.fail()
    if statuses[0] == "ok" and _close(t, beta - mean, tol):
        report.diagnose("shift_unscaled_mean", "ex:diag:shift_unscaled_mean", SECTION)
    report.fail()


def check_scale_shift(scale_shift, lang: str = "en", *, cases: Sequence[tuple] = CASES, seed: int = 0,
                      eps: float = EPS) -> None:
    """Check ``scale_shift(bn)`` (part 1; the contract is in the module's docstring) on the seeded
    evaluation-mode BatchNorm1d/2d of each case of :func:`check_fold_batch_norm` (``eps=0.01`` unless given):
    ``s`` and ``t`` are compared with γ/√(running_var + ε) and β − s·running_mean.

    Slips named: ``fold_std_eps``, ``fold_no_eps`` and ``fold_var_scaled`` (recognised from ``s``,
    as in :func:`check_fold_batch_norm`), and ``shift_unscaled_mean``: ``s`` right, t = β − μ.

    >>> def scale_shift(bn):
    ...     s = bn.weight / (bn.running_var.sqrt() + bn.eps)        # ε outside the square root
    ...     return s, bn.bias - s * bn.running_mean
    >>> try:
    ...     check_scale_shift(scale_shift, "en")
    ... except AssertionError as failure:
    ...     print(failure.diagnoses)
    ('fold_std_eps',)
    """
    gen = _start(lang, scale_shift, seed)
    name = _name(scale_shift, "scale_shift")
    cases = tuple(cases)
    for case in cases:
        _, bn, _ = _layers(case, gen, eps)
        report = _Report(lang, name, ", ".join([f"{type(bn).__name__}({bn.num_features}, eps={bn.eps})",
                                                text("ex:case_eval", lang)]), SECTION)
        _check_scale_shift_case(report, scale_shift, bn)
    _passed(lang, name, len(cases))
