"""Assignment 2 (BatchNorm): training mode, the running statistics, evaluation mode.

Each checker takes the student's class, built as ``cls(num_features, eps=…, momentum=…)`` like
``torch.nn.BatchNorm1d``, with ``weight``, ``bias``, ``running_mean`` and ``running_var``.

>>> class BatchNorm(torch.nn.Module):
...     def __init__(self, num_features, eps=1e-5, momentum=0.1):
...         super().__init__()
...         self.eps, self.momentum = eps, momentum
...         self.weight = torch.nn.Parameter(torch.ones(num_features))
...         self.bias = torch.nn.Parameter(torch.zeros(num_features))
...         self.register_buffer("running_mean", torch.zeros(num_features))
...         self.register_buffer("running_var", torch.ones(num_features))
...         self.register_buffer("num_batches_tracked", torch.tensor(0))
...     def forward(self, x):
...         dims, view = (0, *range(2, x.dim())), (1, -1) + (1,) * (x.dim() - 2)
...         if self.training:
...             mean, var = x.mean(dims), x.var(dims, unbiased=False)
...             with torch.no_grad():
...                 self.num_batches_tracked += 1
...                 m = 1 / float(self.num_batches_tracked) if self.momentum is None else self.momentum
...                 self.running_mean.mul_(1 - m).add_(m * mean)
...                 self.running_var.mul_(1 - m).add_(m * x.var(dims))
...         else:
...             mean, var = self.running_mean, self.running_var
...         x_hat = (x - mean.reshape(view)) / torch.sqrt(var.reshape(view) + self.eps)
...         return x_hat * self.weight.reshape(view) + self.bias.reshape(view)
>>> check_batch_norm_train(BatchNorm, "en")
passed: BatchNorm (2 checks)
>>> check_batch_norm_running(BatchNorm, "en", momentum=None)
passed: BatchNorm (4 checks)
>>> check_batch_norm_eval(BatchNorm, "ko")
통과: BatchNorm (검사 2개)
"""

from __future__ import annotations

import itertools
from typing import List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor

from normlib.axes import _fmt, channel_view
from normlib_classroom.words import text

from ._report import _case, _close, _compare, _input, _params, _passed, _Report, _start, _tol
from ._slips import _batch_spec, _channel_affine, _check_normalized, _group_lines, _moments


def _module(report: _Report, cls, channels: int, eps: float, momentum: Optional[float], gen: torch.Generator):
    """Build the student's BatchNorm in float64 with random γ and β; check its attributes."""
    module = report.call(cls, channels, eps=eps, momentum=momentum)
    if not isinstance(module, torch.nn.Module):
        report.add("ex:not_module", got=type(module).__name__)
        report.fail()
    module.double()
    weight, bias = _params((channels,), gen, torch.float64)
    for attr, value in (("weight", weight), ("bias", bias), ("running_mean", None), ("running_var", None)):
        t = getattr(module, attr, None)
        if not isinstance(t, Tensor) or tuple(t.shape) != (channels,):
            report.add("ex:missing_attr", attr=attr, expected=f"torch.Tensor {_fmt((channels,))}")
            report.fail()
        if value is not None:
            with torch.no_grad():
                t.copy_(value)
    return module, weight, bias


def _check_running_unchanged(report: _Report, module, running_mean: Tensor, running_var: Tensor) -> None:
    """Evaluation mode must leave the running statistics as they were."""
    if not (torch.equal(module.running_mean, running_mean) and torch.equal(module.running_var, running_var)):
        report.diagnose("eval_updated", "ex:diag:eval_updated", "ex:sec:03_train_eval")
        report.fail()


def check_batch_norm_train(cls, lang: str = "en", *, shapes=((8, 3), (6, 3, 4)), eps: float = 0.01,
                           seed: int = 0) -> None:
    """Check the training-mode output of ``cls(num_features, eps=…, momentum=…)``, a
    ``torch.nn.Module`` with ``weight``, ``bias``, ``running_mean``, ``running_var``, on inputs
    ``(N, C)`` and ``(N, C, L)``, against ``torch.nn.functional.batch_norm(training=True)``.

    >>> try:
    ...     check_batch_norm_train(torch.nn.BatchNorm1d, "en")      # torch's own: delegating does not score
    ... except AssertionError as failure:
    ...     print(str(failure).splitlines()[1][:42])
      • your code called torch.nn.BatchNorm1d,
    """
    gen = _start(lang, cls, seed, module=True)
    for shape in shapes:
        x = _input(shape, gen, torch.float64)
        report = _Report(lang, cls.__name__, _case(lang, shape, True, eps=eps), "ex:sec:03_formula")
        module, weight, bias = _module(report, cls, shape[1], eps, 0.1, gen)
        module.train()
        got = report.call(module, x.clone())
        expected = F.batch_norm(x, None, None, weight, bias, training=True, eps=eps)
        _check_normalized(report, got, expected, x, _batch_spec(x, eps), weight, bias)
    _passed(lang, cls.__name__, len(shapes))


def _running_trajectory(batches: Sequence[Tensor], momentum: Optional[float], unbiased: bool, schedule: str,
                        swapped: bool) -> Tuple[Tensor, Tensor]:
    """Running mean and variance after each batch, for PyTorch's rule or one of the named slips."""
    channels = batches[0].shape[1]
    rm, rv = torch.zeros(channels, dtype=torch.float64), torch.ones(channels, dtype=torch.float64)
    means, variances = [], []
    for k, x in enumerate(batches, 1):
        mean, var = _moments(x, (0, *range(2, x.dim())), unbiased)
        m = {"right": momentum if momentum is not None else 1 / k, "fixed": 0.1, "shifted": 1 / (k + 1),
             "frozen": 0.0}[schedule]
        old, new = (m, 1 - m) if swapped else (1 - m, m)
        rm = old * rm + new * mean.reshape(channels)
        rv = old * rv + new * var.reshape(channels)
        means.append(rm)
        variances.append(rv)
    return torch.stack(means), torch.stack(variances)


# What each way of getting the running statistics wrong is called: (schedule, swapped) -> diagnosis.
# "frozen" is m = 0: not swapped, the statistics never move; swapped, (1 − 0)·batch, they are
# overwritten by each batch's (the momentum left out). "fixed" is m = 0.1 whatever was passed.
_RUNNING_SLIPS = {("frozen", False): "not_updated", ("frozen", True): "running_overwritten",
                  ("right", True): "momentum_swapped", ("fixed", False): "momentum_fixed",
                  ("shifted", False): "momentum_none_shifted"}
_RUNNING_ORDER = ("running_overwritten", "not_updated", "momentum_swapped", "momentum_fixed", "momentum_none_fixed",
                  "momentum_none_shifted", "running_biased")


def _explain_running(report: _Report, got: Tuple[Tensor, Tensor], batches, momentum) -> None:
    """Name the slips whose running statistics equal the student's after every batch."""
    schedules = ["right", "frozen"] + (["fixed"] if momentum != 0.1 else []) + (["shifted"] if momentum is None else [])
    found = set()
    for which, got_stat in enumerate(got):             # running_mean, then running_var
        for unbiased, schedule, swapped in itertools.product((True, False), schedules, (False, True)):
            if (which == 0 and not unbiased) or (swapped and schedule in ("fixed", "shifted")):
                continue
            candidate = _running_trajectory(batches, momentum, unbiased, schedule, swapped)[which]
            if _close(got_stat, candidate, 1e-6):
                name = _RUNNING_SLIPS.get((schedule, swapped))
                if name == "momentum_fixed" and momentum is None:
                    name = "momentum_none_fixed"
                if name is not None:
                    found.add(name)
                if not unbiased:
                    found.add("running_biased")
                break
    for name in _RUNNING_ORDER:
        if name in found:
            report.diagnose(name, f"ex:diag:{name}", "ex:sec:03_train_eval", momentum=momentum)


def check_batch_norm_running(cls, lang: str = "en", *, momentum: Optional[float] = 0.1, shape=(6, 3, 4),
                             batches: int = 3, eps: float = 0.01, seed: int = 0) -> None:
    """Check ``running_mean`` and ``running_var`` of ``cls(C, eps=…, momentum=…)`` after each of
    a few training batches against ``torch.nn.BatchNorm1d`` (PyTorch's convention
    ``running ← (1 − momentum)·running + momentum·batch``, the unbiased batch variance in
    ``running_var``, ``momentum=None`` for the cumulative average), and that evaluation mode
    leaves them alone (the module's docstring shows a class that passes).
    """
    gen = _start(lang, cls, seed, module=True)
    data = [_input(shape, gen, torch.float64, offset=2.0 * k) for k in range(batches)]
    report = _Report(lang, cls.__name__, ", ".join([
        text("ex:case_batches", lang).format(count=batches, shape=_fmt(shape)), f"momentum={momentum}", f"eps={eps}"]),
        "ex:sec:03_train_eval")
    module, _, _ = _module(report, cls, shape[1], eps, momentum, gen)
    reference = torch.nn.BatchNorm1d(shape[1], eps=eps, momentum=momentum, dtype=torch.float64)
    module.train()
    report.during = "ex:during_train"               # a delegation says which call made it (training …
    got: List[list] = [[], []]
    wanted: List[list] = [[], []]
    for x in data:
        report.call(module, x.clone())
        reference(x)
        for which, attr in enumerate(("running_mean", "running_var")):
            value = getattr(module, attr, None)
            got[which].append(value.detach().double().clone() if isinstance(value, Tensor) else value)
            wanted[which].append(getattr(reference, attr).clone())
    for k in range(batches):
        statuses = [_compare(report, report.t("ex:after_batch", name=attr, k=k + 1), got[which][k], wanted[which][k],
                             1e-6, check_dtype=False)
                    for which, attr in enumerate(("running_mean", "running_var"))]
        if "shape" in statuses:
            report.fail()
        if "values" in statuses:
            _explain_running(report, (torch.stack(got[0]), torch.stack(got[1])), data, momentum)
            report.fail()
    module.eval()
    report.during = "ex:during_eval"                # … or this one evaluation call after them)
    before = (module.running_mean.detach().clone(), module.running_var.detach().clone())
    report.call(module, data[0].clone())
    _check_running_unchanged(report, module, *before)
    _passed(lang, cls.__name__, batches + 1)


def check_batch_norm_eval(cls, lang: str = "en", *, shapes=((8, 3), (6, 3, 4)), eps: float = 0.01,
                          seed: int = 0) -> None:
    """Check evaluation mode (``module.eval()``): the output normalizes with ``running_mean`` and
    ``running_var`` (set here to random values) and changes neither; against
    ``torch.nn.functional.batch_norm(training=False)`` (the module's docstring shows a class that passes).
    """
    gen = _start(lang, cls, seed, module=True)
    for shape in shapes:
        x = _input(shape, gen, torch.float64)
        channels = shape[1]
        report = _Report(lang, cls.__name__, _case(lang, shape, True, eps=eps) + ", " + text("ex:case_eval", lang),
                         "ex:sec:03_train_eval")
        module, weight, bias = _module(report, cls, channels, eps, 0.1, gen)
        running_mean = torch.randn(channels, generator=gen, dtype=torch.float64)
        running_var = 0.5 + 2 * torch.rand(channels, generator=gen, dtype=torch.float64)
        with torch.no_grad():
            module.running_mean.copy_(running_mean)
            module.running_var.copy_(running_var)
        module.eval()
        got = report.call(module, x.clone())
        expected = F.batch_norm(x, running_mean, running_var, weight, bias, training=False, eps=eps)
        status = _compare(report, report.t("ex:output"), got, expected, _tol(x.dtype))
        if status == "values":
            _group_lines(report, got, expected, _batch_spec(x, eps).pool, "ex:group:channel", _tol(x.dtype),
                         report.t("ex:output"))
            slips = {
                "eval_batch": F.batch_norm(x, None, None, weight, bias, training=True, eps=eps),
                "no_eps": F.batch_norm(x, running_mean, running_var, weight, bias, training=False, eps=0.0),
                "no_affine": F.batch_norm(x, running_mean, running_var, None, None, training=False, eps=eps),
                "std_eps": _channel_affine((x - channel_view(running_mean, x.dim()))
                                           / (channel_view(running_var, x.dim()).sqrt() + eps), weight, bias),
            }
            sections = {"eval_batch": "ex:sec:03_train_eval", "std_eps": "ex:sec:04_std_eps"}
            for slip, candidate in slips.items():
                if _close(got, candidate, _tol(x.dtype)):
                    report.diagnose(slip, f"ex:diag:{slip}", sections.get(slip, "ex:sec:03_formula"))
                    break
        if status != "ok":
            report.fail()
        _check_running_unchanged(report, module, running_mean, running_var)
    _passed(lang, cls.__name__, len(shapes))
