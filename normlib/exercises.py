"""Checkers for the classroom assignments: they tell a student what is wrong, in their language.

A test cell of an assignment (``assignments/source/``) calls one checker with the student's
function or class and ``LANG``::

    check_layer_norm(layer_norm, LANG)

The checker runs it on seeded random inputs (random γ and β: ones and zeros hide bugs),
compares with ``torch.nn.functional`` / ``torch.nn``, and prints one line when everything
agrees. Otherwise it raises :class:`CheckFailed`, an ``AssertionError`` (so nbgrader scores
the cell zero), whose message says in Korean (``"ko"``) or English (``"en"``):

* which shape (or dtype) was expected and which was received;
* which element differs most, and by how much;
* whether the mean or the variance per group (per row, per channel, per (sample, group)) is off;
* a diagnosis, when the result equals a known slip computed here on the same input: the
  unbiased variance (n − 1), eps left out or fixed at 1e-5, ``std + eps``, γ or β left out,
  statistics over other axes (naming them and the right ones), consecutive versus interleaved
  groups, the other momentum convention, a biased ``running_var``, ``momentum=None``, batch
  statistics in evaluation mode, a missing term of the backward pass;
* the chapter section to reread (its number and its title in that language).

``CheckFailed.diagnoses`` lists the recognised slips by name (``"unbiased"``, ``"no_eps"``,
``"axes"``, …), for tests and for teachers.

>>> import torch
>>> check_layer_norm(torch.nn.functional.layer_norm, "en")     # torch itself passes
passed: layer_norm (6 checks)
>>> def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
...     dims = tuple(range(x.dim() - len(normalized_shape), x.dim()))
...     mean = x.mean(dims, keepdim=True)
...     var = x.var(dims, keepdim=True)        # the default divides by n - 1
...     y = (x - mean) / torch.sqrt(var + eps)
...     return y if weight is None else y * weight + bias
>>> try:
...     check_layer_norm(layer_norm, "en")
... except AssertionError as failure:
...     print(failure.diagnoses)
...     print(str(failure).splitlines()[-1])
('unbiased',)
Reread: chapter 2, section “Population and sample variance”
"""

from __future__ import annotations

import inspect
import itertools
import math
import os
import traceback
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor

from . import axes as _axes
from .axes import _fmt
from .i18n import check_lang, text

__all__ = [
    "CheckFailed",
    "LAYOUTS",
    "check_layer_norm_stats",
    "check_layer_norm",
    "check_batch_norm_train",
    "check_batch_norm_running",
    "check_batch_norm_eval",
    "check_layer_norm_backward",
    "check_batch_norm_backward",
    "check_axes",
    "check_channel_groups",
    "check_group_norm",
]

DEFAULT_EPS = 1e-5
# |yours − expected| ≤ tol·(1 + |expected|): far below the size of any slip the checkers name
# (eps = 0.01 against variances of order 1 moves results by 1e-3 and more).
_TOL = {torch.float64: 1e-7, torch.float32: 1e-4}


class CheckFailed(AssertionError):
    """Raised by a checker when the student's result differs from torch's.

    The message is in the student's language; ``diagnoses`` names the slips recognised
    (empty when none explains the difference). An ``AssertionError``, so a failing test
    cell scores zero in nbgrader.
    """

    def __init__(self, message: str, diagnoses: Sequence[str] = ()):
        super().__init__(message)
        self.diagnoses = tuple(diagnoses)


# --------------------------------------------------------------------------- the report

class _Report:
    """Collects the lines of one failure message, then raises it."""

    def __init__(self, lang: str, name: str, case: str, section: str):
        self.lang, self.name, self.case = lang, name, case
        self.default_section = section          # reread this when no diagnosis names another
        self.lines: List[str] = []
        self.diagnoses: List[str] = []
        self.sections: List[str] = []
        self.values_differ = False              # numbers compared and found different: worth a diagnosis

    def t(self, key: str, **kwargs) -> str:
        return text(key, self.lang).format(**kwargs)

    def add(self, key: str, **kwargs) -> None:
        self.lines.append(self.t(key, **kwargs))

    def diagnose(self, name: str, key: str, section: str, **kwargs) -> None:
        self.diagnoses.append(name)
        self.lines.append(self.t("ex:diagnosis", text=self.t(key, **kwargs)))
        if section not in self.sections:
            self.sections.append(section)

    def fail(self, cause: Optional[BaseException] = None):
        if self.values_differ and not self.diagnoses:
            self.add("ex:no_diagnosis")
        sections = self.sections or [self.default_section]
        message = "\n".join(
            [self.t("ex:title", name=self.name, case=self.case)]
            + [f"  • {line}" for line in self.lines]
            + [self.t("ex:reread", chapter=int(s.split(":")[-1][:2]), section=text(s, self.lang)) for s in sections]
        )
        raise CheckFailed(message, self.diagnoses) from cause

    def call(self, fn: Callable, *args, **kwargs):
        """Run the student's code; an exception becomes a failure that names the inputs."""
        try:
            return fn(*args, **kwargs)
        except CheckFailed:
            raise
        except NotImplementedError as error:
            self.add("ex:not_implemented")
            self.fail(error)
        except Exception as error:   # noqa: BLE001 - any error in student code is reported, not hidden
            self.add("ex:raised", error=f"{type(error).__name__}: {error}")
            where = _student_line(error)
            if where is not None:
                self.add("ex:raised_at", line=where.lineno, code=where.line)
            self.fail(error)


_LIBRARIES = (os.path.dirname(os.path.abspath(__file__)), os.path.dirname(os.path.abspath(torch.__file__)))


def _student_line(error: BaseException) -> Optional[traceback.FrameSummary]:
    """The last line of the traceback outside normlib and torch: where the student's code failed."""
    theirs = [frame for frame in traceback.extract_tb(error.__traceback__)
              if not os.path.abspath(frame.filename).startswith(_LIBRARIES)]
    return theirs[-1] if theirs and theirs[-1].line else None


def _num(v: float) -> str:
    return f"{v:.6g}"


def _name(obj, default: str) -> str:
    return getattr(obj, "__name__", None) or default


def _tol(dtype: torch.dtype) -> float:
    return _TOL.get(dtype, 1e-4)


def _close(got: Tensor, expected: Tensor, tol: float) -> bool:
    return got.shape == expected.shape and bool(
        ((got.detach().double() - expected.detach().double()).abs() <= tol * (1 + expected.detach().double().abs())).all())


def _compare(report: _Report, what: str, got, expected: Tensor, tol: float, check_dtype: bool = True) -> str:
    """Add what differs between ``got`` and ``expected`` to the report.

    Returns ``"ok"``, ``"values"`` (same shape, different numbers) or ``"shape"`` (not a tensor
    of the right shape and dtype: nothing more to compare)."""
    if not isinstance(got, Tensor):
        hint = report.t("ex:return_missing") if got is None else ""
        report.add("ex:not_tensor", what=what, got=type(got).__name__ + hint)
        return "shape"
    if tuple(got.shape) != tuple(expected.shape):
        report.add("ex:shape", what=what, expected=_fmt(expected.shape), got=_fmt(got.shape))
        return "shape"
    if check_dtype and got.dtype != expected.dtype:
        report.add("ex:dtype", what=what, expected=str(expected.dtype), got=str(got.dtype))
        return "shape"
    g, e = got.detach().double(), expected.detach().double()
    diff = (g - e).abs()
    over = ~(diff <= tol * (1 + e.abs()))          # NaN counts as over
    if not over.any():
        return "ok"
    worst = torch.where(over, torch.nan_to_num(diff, nan=math.inf), torch.zeros_like(diff))
    idx = tuple(int(i) for i in torch.unravel_index(worst.argmax(), g.shape)) if g.dim() else ()
    report.values_differ = True
    report.add("ex:max_diff", what=what, index=_fmt(idx), diff=_num(float(diff[idx])), got=_num(float(g[idx])),
               expected=_num(float(e[idx])), count=int(over.sum()), total=g.numel(), tol=f"{tol:g}")
    return "values"


# --------------------------------------------------------------------------- which elements share a statistic

@dataclass(frozen=True)
class _Pool:
    """One choice of the elements that share a statistic: view the input as ``view`` (None: as
    it is) and reduce ``dims``. ``key`` describes it in words (GroupNorm), else by its axes."""

    dims: Tuple[int, ...]
    view: Optional[Tuple[int, ...]] = None
    key: Optional[str] = None

    def viewed(self, x: Tensor) -> Tensor:
        return x if self.view is None else x.reshape(self.view)

    def moments(self, x: Tensor, unbiased: bool = False) -> Tuple[Tensor, Tensor]:
        v = self.viewed(x)
        return v.mean(self.dims, keepdim=True), v.var(self.dims, keepdim=True, correction=int(unbiased))

    def describe(self, report: _Report) -> str:
        return report.t(self.key) if self.key else _fmt(self.dims)


def _standardize(x: Tensor, pool: _Pool, unbiased: bool, eps: float, std_eps: bool) -> Tensor:
    """x̂ over ``pool`` — right (population variance, sqrt(var + eps)) or with the named slips."""
    mean, var = pool.moments(x, unbiased)
    scale = var.sqrt() + eps if std_eps else (var + eps).sqrt()
    return ((pool.viewed(x) - mean) / scale).reshape(x.shape)


def _subsets(ndim: int) -> List[Tuple[int, ...]]:
    return [c for r in range(1, ndim + 1) for c in itertools.combinations(range(ndim), r)]


def _group_lines(report: _Report, got: Tensor, expected: Tensor, pool: _Pool, group: str, tol: float) -> None:
    """Is the mean / the variance per group of the student's output off (beyond ``tol``, as the
    elements are judged)? Name the worst group."""
    kept = [d for d in range(len(pool.view or got.shape)) if d not in pool.dims]
    for stat_key, index in (("mean", 0), ("variance", 1)):
        g = pool.moments(got.detach().double())[index]
        e = pool.moments(expected.detach().double())[index]
        diff = torch.nan_to_num((g - e).abs(), nan=math.inf)
        stat, word = text(stat_key, report.lang), report.t(group)
        if bool((diff <= tol * (1 + e.abs())).all()):
            report.add("ex:group_ok", group=word, stat=stat)
            continue
        idx = tuple(int(i) for i in torch.unravel_index(diff.argmax(), diff.shape))
        report.add("ex:group_off", group=word, stat=stat, index=_fmt([idx[d] for d in kept]),
                   got=_num(float(g[idx])), expected=_num(float(e[idx])))


@dataclass
class _Norm:
    """What a normalization check needs to recognise slips: the right pooling and the wrong ones
    worth naming, eps, how γ and β apply, and which sections explain which part."""

    pool: _Pool
    others: List[_Pool]
    eps: float
    affine: Callable[[Tensor, Optional[Tensor], Optional[Tensor]], Tensor]
    group: str                      # i18n key: row / channel / (sample, group)
    formula: str                    # section keys
    pooling_section: str


def _explain(report: _Report, got: Tensor, x: Tensor, spec: _Norm, weight, bias, tol: float) -> None:
    """Find the fewest slips (at most three) whose result equals ``got`` and add them as diagnoses."""
    eps_kinds = ["given", "zero"] + (["default"] if spec.eps != DEFAULT_EPS else [])
    affines = ["both", "none"] + (["no_weight", "no_bias"] if weight is not None and bias is not None else [])
    if weight is None and bias is None:
        affines = ["both"]
    combos = itertools.product([spec.pool] + spec.others, (False, True), eps_kinds, (False, True), affines)

    def slips(combo) -> int:
        pool, unbiased, eps_kind, std_eps, affine = combo
        return (pool != spec.pool) + unbiased + (eps_kind != "given") + std_eps + (affine != "both")

    for combo in sorted((c for c in combos if 0 < slips(c) <= 3), key=slips):
        pool, unbiased, eps_kind, std_eps, affine = combo
        eps = {"given": spec.eps, "zero": 0.0, "default": DEFAULT_EPS}[eps_kind]
        w = weight if affine in ("both", "no_bias") else None
        b = bias if affine in ("both", "no_weight") else None
        with torch.no_grad():
            candidate = spec.affine(_standardize(x.detach(), pool, unbiased, eps, std_eps), w, b)
        if not _close(got, candidate, tol):
            continue
        if pool != spec.pool:
            if pool.key:
                report.diagnose("interleaved" if pool.key == "ex:pool:interleaved" else "axes", "ex:diag:pooling",
                                spec.pooling_section,
                                got=pool.describe(report), expected=spec.pool.describe(report))
            else:
                report.diagnose("axes", "ex:diag:axes", spec.pooling_section, got=_fmt(pool.dims),
                                expected=_fmt(spec.pool.dims))
        if unbiased:
            report.diagnose("unbiased", "ex:diag:unbiased", "ex:sec:02_variance")
        if std_eps:
            report.diagnose("std_eps", "ex:diag:std_eps", "ex:sec:04_std_eps")
        if eps_kind == "zero":
            report.diagnose("no_eps", "ex:diag:no_eps", spec.formula)
        if eps_kind == "default":
            report.diagnose("fixed_eps", "ex:diag:default_eps", spec.formula, eps=f"{spec.eps:g}")
        if affine != "both":
            name = "no_affine" if affine == "none" else affine
            report.diagnose(name, f"ex:diag:{name}", spec.formula)
        return


def _check_normalized(report: _Report, got, expected: Tensor, x: Tensor, spec: _Norm, weight, bias,
                      what: Optional[str] = None) -> None:
    """Compare a normalization's output; on a difference, say what and why, and raise."""
    tol = _tol(expected.dtype)
    status = _compare(report, what or report.t("ex:output"), got, expected, tol)
    if status == "ok":
        return
    if status == "values":
        _group_lines(report, got, expected, spec.pool, spec.group, tol)
        _explain(report, got, x, spec, weight, bias, tol)
    report.fail()


# --------------------------------------------------------------------------- inputs

def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _input(shape: Sequence[int], gen: torch.Generator, dtype: torch.dtype, offset: float = 0.0) -> Tensor:
    """Values with a different spread and centre in every region, so that no two poolings agree."""
    shape = tuple(shape)
    spread = 0.5 + 2 * torch.rand(shape, generator=gen, dtype=torch.float64)
    centre = 3 * torch.randn(shape[:1] + (1,) * (len(shape) - 1), generator=gen, dtype=torch.float64)
    x = torch.randn(shape, generator=gen, dtype=torch.float64) * spread + centre + offset
    return x.to(dtype)


def _params(shape: Sequence[int], gen: torch.Generator, dtype: torch.dtype) -> Tuple[Tensor, Tensor]:
    """Random γ (kept away from 0 and 1) and β (kept away from 0)."""
    weight = (1.5 + torch.rand(tuple(shape), generator=gen, dtype=torch.float64)) * \
        torch.where(torch.rand(tuple(shape), generator=gen) < 0.3, -1.0, 1.0).double()
    bias = torch.randn(tuple(shape), generator=gen, dtype=torch.float64) + 0.5
    return weight.to(dtype), bias.to(dtype)


def _start(lang: str, target, seed: int = 0, module: bool = False) -> torch.Generator:
    """Check the checker's arguments (a clear error naming what was received) and seed the inputs."""
    check_lang(lang)
    if module and not (inspect.isclass(target) and issubclass(target, torch.nn.Module)):
        raise TypeError(text("ex:not_module", lang).format(got=f"{type(target).__name__} {target!r}"))
    if not callable(target):
        raise TypeError(text("ex:not_callable", lang).format(got=f"{type(target).__name__} {target!r}"))
    return _generator(seed)


def _passed(lang: str, name: str, count: int) -> None:
    print(text("ex:passed", lang).format(name=name, count=count))


def _case(lang: str, shape, affine: Optional[bool] = None, **more) -> str:
    parts = [text("ex:case_input", lang).format(shape=_fmt(shape))]
    parts += [f"{key}={value}" for key, value in more.items()]
    if affine is not None:
        parts.append(text("ex:case_random_affine" if affine else "ex:case_no_affine", lang))
    return ", ".join(parts)


# --------------------------------------------------------------------------- LayerNorm (assignment 1)

LAYER_CASES = (((4, 3), (3,)), ((2, 5, 8), (8,)), ((2, 3, 4, 5), (4, 5)))


def _trailing(x_dim: int, normalized_shape) -> Tuple[int, ...]:
    k = len(_axes.as_normalized_shape(normalized_shape))
    return tuple(range(x_dim - k, x_dim))


def _layer_spec(x: Tensor, normalized_shape, eps: float) -> _Norm:
    dims = _trailing(x.dim(), normalized_shape)
    return _Norm(
        pool=_Pool(dims),
        others=[_Pool(d) for d in _subsets(x.dim()) if d != dims],
        eps=eps,
        affine=lambda t, w, b: t * (1 if w is None else w) + (0 if b is None else b),
        group="ex:group:row",
        formula="ex:sec:04_formula",
        pooling_section="ex:sec:04_sequences",
    )


def check_layer_norm_stats(fn: Callable, lang: str = "en", *, cases=LAYER_CASES, seed: int = 0,
                           dtype: torch.dtype = torch.float64) -> None:
    """Check ``fn(x, normalized_shape) -> (mean, var)``: LayerNorm's statistics over the trailing
    ``normalized_shape`` dims, population variance, ``keepdim=True`` shapes.

    Expected values come from ``torch.var_mean(x, dims, correction=0, keepdim=True)``.

    >>> stats = lambda x, s: (x.mean(-1, keepdim=True), x.var(-1, unbiased=False, keepdim=True))
    >>> check_layer_norm_stats(stats, "en", cases=[((4, 3), (3,))])
    passed: <lambda> (1 checks)
    """
    gen = _start(lang, fn, seed)
    name = _name(fn, "layer_norm_stats")
    for shape, normalized_shape in cases:
        x = _input(shape, gen, dtype)
        report = _Report(lang, name, _case(lang, shape, normalized_shape=normalized_shape), "ex:sec:04_formula")
        result = report.call(fn, x.clone(), normalized_shape)
        if not (isinstance(result, (tuple, list)) and len(result) == 2):
            length = f"(len={len(result)})" if isinstance(result, (tuple, list)) else ""
            report.add("ex:not_pair", got=type(result).__name__ + length)
            report.fail()
        dims = _trailing(x.dim(), normalized_shape)
        var, mean = torch.var_mean(x, dims, correction=0, keepdim=True)
        for is_mean, got, expected in ((True, result[0], mean), (False, result[1], var)):
            what = text("mean" if is_mean else "variance", lang)
            if _compare(report, what, got, expected, _tol(dtype)) == "ok":
                continue
            if isinstance(got, Tensor):
                _explain_reduction(report, got, x, dims, is_mean)
            report.fail()
    _passed(lang, name, len(cases))


def _explain_reduction(report: _Report, got: Tensor, x: Tensor, dims: Tuple[int, ...], is_mean: bool) -> None:
    """Which axes (and keepdim, and n − 1 for a variance) give the student's mean or variance?"""
    for d, keepdim, unbiased in itertools.product(_subsets(x.dim()), (True, False), (False, True)):
        if is_mean and unbiased:
            continue
        candidate = x.mean(d, keepdim=keepdim) if is_mean else x.var(d, keepdim=keepdim, correction=int(unbiased))
        if not _close(got, candidate, _tol(x.dtype)):
            continue
        if d != dims:
            report.diagnose("axes", "ex:diag:axes", "ex:sec:04_sequences", got=_fmt(d), expected=_fmt(dims))
        if not keepdim:
            report.diagnose("keepdim", "ex:diag:keepdim", "ex:sec:04_formula")
        if unbiased:
            report.diagnose("unbiased", "ex:diag:unbiased", "ex:sec:02_variance")
        return


def check_layer_norm(fn: Callable, lang: str = "en", *, cases=LAYER_CASES, eps: float = 0.01, seed: int = 0,
                     dtype: torch.dtype = torch.float64) -> None:
    """Check ``fn(x, normalized_shape, weight, bias, eps)`` against ``torch.nn.functional.layer_norm``.

    Each case ``(input shape, normalized_shape)`` is run with random γ, β and with
    ``weight=None, bias=None``; ``normalized_shape`` is passed as given (int, tuple, list or
    ``torch.Size``).

    >>> check_layer_norm(torch.nn.functional.layer_norm, "ko", cases=[((2, 4), (4,))])
    통과: layer_norm (검사 2개)
    """
    gen = _start(lang, fn, seed)
    name = _name(fn, "layer_norm")
    for shape, normalized_shape in cases:
        x = _input(shape, gen, dtype)
        dims = _axes.as_normalized_shape(normalized_shape)
        for affine in (True, False):
            weight, bias = _params(dims, gen, dtype) if affine else (None, None)
            report = _Report(lang, name, _case(lang, shape, affine, normalized_shape=normalized_shape, eps=eps),
                             "ex:sec:04_formula")
            got = report.call(fn, x.clone(), normalized_shape, weight, bias, eps)
            expected = F.layer_norm(x, dims, weight, bias, eps)
            _check_normalized(report, got, expected, x, _layer_spec(x, dims, eps), weight, bias)
    _passed(lang, name, 2 * len(cases))


# --------------------------------------------------------------------------- BatchNorm (assignment 2)

def _per_channel(t: Optional[Tensor], ndim: int) -> Optional[Tensor]:
    return None if t is None else t.reshape(1, -1, *([1] * (ndim - 2)))


def _channel_affine(t: Tensor, w: Optional[Tensor], b: Optional[Tensor]) -> Tensor:
    w, b = _per_channel(w, t.dim()), _per_channel(b, t.dim())
    return t * (1 if w is None else w) + (0 if b is None else b)


def _batch_spec(x: Tensor, eps: float) -> _Norm:
    dims = (0, *range(2, x.dim()))
    return _Norm(pool=_Pool(dims), others=[_Pool(d) for d in _subsets(x.dim()) if d != dims], eps=eps,
                 affine=_channel_affine, group="ex:group:channel", formula="ex:sec:03_formula",
                 pooling_section="ex:sec:03_axes")


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


def check_batch_norm_train(cls, lang: str = "en", *, shapes=((8, 3), (6, 3, 4)), eps: float = 0.01,
                           seed: int = 0) -> None:
    """Check the training-mode output of ``cls(num_features, eps=…, momentum=…)``, a
    ``torch.nn.Module`` with ``weight``, ``bias``, ``running_mean``, ``running_var``, on inputs
    ``(N, C)`` and ``(N, C, L)``, against ``torch.nn.functional.batch_norm(training=True)``.

    >>> check_batch_norm_train(torch.nn.BatchNorm1d, "en")
    passed: BatchNorm1d (2 checks)
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
        dims = (0, *range(2, x.dim()))
        m = {"right": momentum if momentum is not None else 1 / k, "fixed": 0.1, "shifted": 1 / (k + 1),
             "frozen": 0.0}[schedule]
        old, new = (m, 1 - m) if swapped else (1 - m, m)
        rm = old * rm + new * x.mean(dims)
        rv = old * rv + new * x.var(dims, correction=int(unbiased))
        means.append(rm)
        variances.append(rv)
    return torch.stack(means), torch.stack(variances)


def _explain_running(report: _Report, got: Tuple[Tensor, Tensor], batches, momentum) -> None:
    schedules = ["right", "frozen"] + (["fixed", "shifted"] if momentum is None else [])
    found = set()
    for which, got_stat in enumerate(got):             # running_mean, then running_var
        for unbiased, schedule, swapped in itertools.product((True, False), schedules, (False, True)):
            if (which == 0 and not unbiased) or (momentum is None and swapped):
                continue
            candidate = _running_trajectory(batches, momentum, unbiased, schedule, swapped)[which]
            if _close(got_stat, candidate, 1e-6):
                if schedule != "right":
                    found.add({"frozen": "not_updated", "fixed": "momentum_none_fixed",
                               "shifted": "momentum_none_shifted"}[schedule])
                if swapped:
                    found.add("momentum_swapped")
                if not unbiased:
                    found.add("running_biased")
                break
    for name in ("not_updated", "momentum_swapped", "momentum_none_fixed", "momentum_none_shifted", "running_biased"):
        if name in found:
            report.diagnose(name, f"ex:diag:{name}", "ex:sec:03_train_eval")


def check_batch_norm_running(cls, lang: str = "en", *, momentum: Optional[float] = 0.1, shape=(6, 3, 4),
                             batches: int = 3, eps: float = 0.01, seed: int = 0) -> None:
    """Check ``running_mean`` and ``running_var`` of ``cls(C, eps=…, momentum=…)`` after each of
    a few training batches against ``torch.nn.BatchNorm1d`` (PyTorch's convention
    ``running ← (1 − momentum)·running + momentum·batch``, the unbiased batch variance in
    ``running_var``, ``momentum=None`` for the cumulative average), and that evaluation mode
    leaves them alone.

    >>> check_batch_norm_running(torch.nn.BatchNorm1d, "en", momentum=None)
    passed: BatchNorm1d (4 checks)
    """
    gen = _start(lang, cls, seed, module=True)
    data = [_input(shape, gen, torch.float64, offset=2.0 * k) for k in range(batches)]
    report = _Report(lang, cls.__name__, ", ".join([
        text("ex:case_batches", lang).format(count=batches, shape=_fmt(shape)), f"momentum={momentum}", f"eps={eps}"]),
        "ex:sec:03_train_eval")
    module, _, _ = _module(report, cls, shape[1], eps, momentum, gen)
    reference = torch.nn.BatchNorm1d(shape[1], eps=eps, momentum=momentum, dtype=torch.float64)
    module.train()
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
    before = (module.running_mean.detach().clone(), module.running_var.detach().clone())
    report.call(module, data[0].clone())
    if not (torch.equal(before[0], module.running_mean) and torch.equal(before[1], module.running_var)):
        report.diagnose("eval_updated", "ex:diag:eval_updated", "ex:sec:03_train_eval")
        report.fail()
    _passed(lang, cls.__name__, batches + 1)


def check_batch_norm_eval(cls, lang: str = "en", *, shapes=((8, 3), (6, 3, 4)), eps: float = 0.01,
                          seed: int = 0) -> None:
    """Check evaluation mode (``module.eval()``): the output normalizes with ``running_mean`` and
    ``running_var`` (set here to random values) and changes neither; against
    ``torch.nn.functional.batch_norm(training=False)``.

    >>> check_batch_norm_eval(torch.nn.BatchNorm1d, "en")
    passed: BatchNorm1d (2 checks)
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
            _group_lines(report, got, expected, _batch_spec(x, eps).pool, "ex:group:channel", _tol(x.dtype))
            slips = {
                "eval_batch": F.batch_norm(x, None, None, weight, bias, training=True, eps=eps),
                "no_eps": F.batch_norm(x, running_mean, running_var, weight, bias, training=False, eps=0.0),
                "no_affine": F.batch_norm(x, running_mean, running_var, None, None, training=False, eps=eps),
                "std_eps": _channel_affine((x - _per_channel(running_mean, x.dim()))
                                           / (_per_channel(running_var, x.dim()).sqrt() + eps), weight, bias),
            }
            sections = {"eval_batch": "ex:sec:03_train_eval", "std_eps": "ex:sec:04_std_eps"}
            for slip, candidate in slips.items():
                if _close(got, candidate, _tol(x.dtype)):
                    report.diagnose(slip, f"ex:diag:{slip}", sections.get(slip, "ex:sec:03_formula"))
                    break
        if status != "ok":
            report.fail()
        if not (torch.equal(module.running_mean, running_mean) and torch.equal(module.running_var, running_var)):
            report.diagnose("eval_updated", "ex:diag:eval_updated", "ex:sec:03_train_eval")
            report.fail()
    _passed(lang, cls.__name__, len(shapes))


# --------------------------------------------------------------------------- backward (assignment 3)

def _apply(function) -> Callable:
    """``Function.apply`` for an ``autograd.Function`` subclass; any other callable as it is."""
    if inspect.isclass(function) and issubclass(function, torch.autograd.Function):
        return function.apply
    return function


def _leaf(t: Optional[Tensor]) -> Optional[Tensor]:
    return None if t is None else t.detach().clone().requires_grad_()


def _explain_grads(report: _Report, got, x: Tensor, weight: Tensor, dy: Tensor, spec: _Norm,
                   param_dims: Tuple[int, ...]) -> None:
    """Name the missing term of ∂L/∂x, or the slip in ∂L/∂γ or ∂L/∂β, when one explains the result."""
    dims = spec.pool.dims
    r = torch.rsqrt(x.var(dims, keepdim=True, correction=0) + spec.eps)
    x_hat = (x - x.mean(dims, keepdim=True)) * r
    other = tuple(d for d in range(x.dim()) if d not in param_dims)       # the axes γ and β are shared over
    total = lambda t: t.sum(other).reshape(weight.shape)                   # noqa: E731
    g_right = dy * weight.reshape([s if d in param_dims else 1 for d, s in enumerate(x.shape)])
    tol = _tol(x.dtype)
    missing = {(True, True): None, (False, True): "dx_no_mean", (True, False): "dx_no_var", (False, False): "dx_direct"}
    if isinstance(got[0], Tensor):
        for use_gamma, (mean_term, var_term) in itertools.product((True, False), missing):
            g = g_right if use_gamma else dy
            dx = g - (g.mean(dims, keepdim=True) if mean_term else 0) \
                - (x_hat * (g * x_hat).mean(dims, keepdim=True) if var_term else 0)
            if (use_gamma, mean_term, var_term) == (True, True, True) or not _close(got[0], r * dx, tol):
                continue
            for name in ([] if use_gamma else ["dx_no_gamma"]) + ([missing[mean_term, var_term]] if not (mean_term and var_term) else []):
                report.diagnose(name, f"ex:diag:{name}", "ex:sec:07_derive")
            break
    for position, name, candidate in ((1, "dgamma_no_xhat", total(dy)), (1, "dgamma_x", total(dy * x)),
                                      (2, "dbeta_xhat", total(dy * x_hat))):
        if isinstance(got[position], Tensor) and _close(got[position], candidate, tol):
            report.diagnose(name, f"ex:diag:{name}", "ex:sec:07_derive")


def _check_backward(report: _Report, call: Callable, x: Tensor, weight: Tensor, bias: Tensor,
                    reference: Callable, spec: _Norm, param_dims: Tuple[int, ...]) -> None:
    """``call(x, γ, β)`` runs the student's Function. Its output against ``reference`` (torch),
    then ∂L/∂x, ∂L/∂γ, ∂L/∂β against torch's autograd for a random ∂L/∂y, then gradcheck."""
    leaves = (_leaf(x), _leaf(weight), _leaf(bias))
    y = report.call(call, *leaves)
    _check_normalized(report, y.detach() if isinstance(y, Tensor) else y, reference(x, weight, bias), x, spec,
                      weight, bias)
    dy = torch.randn(x.shape, generator=_generator(x.numel()), dtype=x.dtype)
    got = report.call(torch.autograd.grad, y, leaves, dy, allow_unused=True)
    torch_leaves = (_leaf(x), _leaf(weight), _leaf(bias))
    wanted = torch.autograd.grad(reference(*torch_leaves), torch_leaves, dy)
    ok = True
    for name, g, e in zip(("x", "γ", "β"), got, wanted):
        if g is None:
            report.add("ex:grad_none", name=name, shape=_fmt(e.shape))
            ok = False
        elif _compare(report, report.t("ex:grad", name=name), g, e, _tol(x.dtype)) != "ok":
            ok = False
    if not ok:
        _explain_grads(report, got, x, weight, dy, spec, param_dims)
        report.fail()
    small = (_leaf(x[:2]), _leaf(weight), _leaf(bias))
    if not torch.autograd.gradcheck(call, small, raise_exception=False):
        report.add("ex:gradcheck_failed")
        report.sections.append("ex:sec:07_function")
        report.fail()


def check_layer_norm_backward(function, lang: str = "en", *, cases=((((4, 6), (6,))), ((2, 3, 4), (3, 4))),
                              eps: float = 0.01, seed: int = 0) -> None:
    """Check an ``autograd.Function`` ``apply(x, normalized_shape, weight, bias, eps)`` (or any
    callable with those arguments): its output against ``torch.nn.functional.layer_norm``, its
    ∂L/∂x, ∂L/∂γ, ∂L/∂β against torch's autograd for a random ∂L/∂y, then ``gradcheck``.

    >>> check_layer_norm_backward(lambda x, s, w, b, eps: torch.nn.functional.layer_norm(x, s, w, b, eps), "en")
    passed: <lambda> (2 checks)
    """
    gen = _start(lang, function, seed)
    name, apply = _name(function, "LayerNormFunction"), _apply(function)
    for shape, normalized_shape in cases:
        dims = _axes.as_normalized_shape(normalized_shape)
        x = _input(shape, gen, torch.float64)
        weight, bias = _params(dims, gen, torch.float64)
        report = _Report(lang, name, _case(lang, shape, True, normalized_shape=normalized_shape, eps=eps) + ", "
                         + text("ex:case_grad", lang), "ex:sec:07_derive")
        spec = _layer_spec(x, dims, eps)
        _check_backward(report, lambda a, w, b, shape=normalized_shape: apply(a, shape, w, b, eps), x, weight, bias,
                        lambda a, w, b, dims=dims: F.layer_norm(a, dims, w, b, eps), spec, spec.pool.dims)
    _passed(lang, name, len(cases))


def check_batch_norm_backward(function, lang: str = "en", *, shapes=((8, 3), (4, 3, 5)), eps: float = 0.01,
                              seed: int = 0) -> None:
    """Check an ``autograd.Function`` ``apply(x, weight, bias, eps)`` for BatchNorm in training
    mode over ``(N, C)`` or ``(N, C, L)``: output against ``torch.nn.functional.batch_norm``,
    gradients against torch's autograd, then ``gradcheck``.

    >>> bn = lambda x, w, b, eps: torch.nn.functional.batch_norm(x, None, None, w, b, training=True, eps=eps)
    >>> check_batch_norm_backward(bn, "en")
    passed: <lambda> (2 checks)
    """
    gen = _start(lang, function, seed)
    name, apply = _name(function, "BatchNormFunction"), _apply(function)
    for shape in shapes:
        x = _input(shape, gen, torch.float64)
        weight, bias = _params((shape[1],), gen, torch.float64)
        report = _Report(lang, name, _case(lang, shape, True, eps=eps) + ", " + text("ex:case_grad", lang),
                         "ex:sec:07_derive")
        _check_backward(report, lambda a, w, b: apply(a, w, b, eps), x, weight, bias,
                        lambda a, w, b: F.batch_norm(a, None, None, w, b, training=True, eps=eps),
                        _batch_spec(x, eps), (1,))
    _passed(lang, name, len(shapes))


# --------------------------------------------------------------------------- axes and GroupNorm (assignment 4)

# The layouts of chapter 6, with the sizes used to ask normlib.axes for the answer.
LAYOUTS = {"NC": (4, 6), "NCL": (4, 6, 5), "NCHW": (4, 6, 5, 3), "BLD": (4, 5, 6)}
LAYOUT_NAMES = {"NC": "(N, C)", "NCL": "(N, C, L)", "NCHW": "(N, C, H, W)", "BLD": "(B, L, D)"}
AXES_CASES = tuple((m, layout) for layout in LAYOUTS for m in _axes.METHODS
                   if not (m == "instance" and layout in ("NC", "BLD")) and not (m == "group" and layout == "BLD"))
AXES_INVALID = (("instance", "NC"), ("instance", "BLD"), ("group", "BLD"))


def _expected_axes(method: str, layout: str) -> Optional[Tuple[int, ...]]:
    """The reduction axes from normlib.axes (tested against what torch pools); None = no meaning."""
    if (method, layout) in AXES_INVALID:
        return None
    shape = LAYOUTS[layout]
    if layout == "BLD":
        return _axes.sequence_sharing(method, shape).axes
    if method in ("layer", "rms"):
        return _axes.sharing(method, shape, normalized_shape=shape[1:]).axes
    return _axes.sharing(method, shape, num_groups=2 if method == "group" else None).axes


def _as_axes(answer, ndim: int) -> Optional[Tuple[int, ...]]:
    """A sequence of ints, in any order, negative allowed → sorted non-negative tuple; else None."""
    try:
        items = list(answer)
    except TypeError:
        return None
    if not all(isinstance(a, int) and not isinstance(a, bool) and -ndim <= a < ndim for a in items):
        return None
    return tuple(sorted(a % ndim for a in items))


def check_axes(fn: Callable, lang: str = "en", *, cases=AXES_CASES) -> None:
    """Check ``fn(method, layout) -> axes`` for methods ``batch``, ``layer``, ``instance``,
    ``group``, ``rms`` and layouts ``"NC"``, ``"NCL"``, ``"NCHW"``, ``"BLD"``: the axes one
    statistic pools (``layer``/``rms``: one statistic per sample, or per token for ``BLD``;
    ``group``: the channel axis within a group and the spatial axes). A combination without
    meaning (:data:`AXES_INVALID`) must raise ``ValueError``. Any order and negative axes are
    accepted. The answers come from :mod:`normlib.axes`.

    >>> def reduction_axes(method, layout):
    ...     if method == "batch" and layout == "BLD":
    ...         return (0,)                              # the dim=0 slip
    ...     return _expected_axes(method, layout)        # the right answer, from normlib.axes
    >>> try:
    ...     check_axes(reduction_axes, "en", cases=[("batch", "BLD"), ("layer", "BLD")])
    ... except AssertionError as failure:
    ...     print(failure.diagnoses)
    ('dim0',)
    """
    _start(lang, fn)
    name = _name(fn, "reduction_axes")
    report = _Report(lang, name, ", ".join(sorted({LAYOUT_NAMES[layout] for _, layout in cases})), "ex:sec:06_frame")
    wrong = 0
    sections = {"batch": ("batch_spatial", "ex:sec:03_axes"), "layer": ("layer_sample", "ex:sec:04_sequences"),
                "rms": ("layer_sample", "ex:sec:04_sequences"), "instance": ("instance_spatial", "ex:sec:06_frame"),
                "group": ("group_axes", "ex:sec:06_group")}
    for method, layout in cases:
        expected = _expected_axes(method, layout)
        where = dict(method=method, layout=LAYOUT_NAMES[layout])
        try:
            answer = fn(method, layout)
        except ValueError as error:
            if expected is None:
                continue
            report.add("ex:axes_raised", expected=_fmt(expected), error=f"ValueError: {error}", **where)
            wrong += 1
            continue
        except NotImplementedError as error:
            report.add("ex:not_implemented")
            report.fail(error)
        except Exception as error:   # noqa: BLE001
            report.add("ex:axes_raised", expected=_fmt(expected) if expected else "ValueError",
                       error=f"{type(error).__name__}: {error}", **where)
            wrong += 1
            continue
        if expected is None:
            report.add("ex:axes_should_raise", got=repr(answer), **where)
            report.diagnoses.append("should_raise")
            wrong += 1
            continue
        got = _as_axes(answer, len(LAYOUTS[layout]))
        if got == expected:
            continue
        wrong += 1
        report.add("ex:axes_wrong", got=repr(answer), expected=_fmt(expected), **where)
        if method == "batch" and layout == "BLD" and got == (0,):
            report.diagnose("dim0", "ex:diag:dim0", "ex:sec:03_dim0")
        elif sections[method][0] not in report.diagnoses:
            slip, section = sections[method]
            report.diagnose(slip, f"ex:diag:{slip}", section)
    if wrong:
        report.lines.insert(0, report.t("ex:axes_title", count=wrong, total=len(cases)))
        report.fail()
    _passed(lang, name, len(cases))


def check_channel_groups(fn: Callable, lang: str = "en", *, cases=((6, 2), (6, 3), (4, 4), (8, 1))) -> None:
    """Check ``fn(num_channels, num_groups)`` → the channel indices of each group, in order:
    consecutive channels, as ``torch.nn.GroupNorm`` groups them (``(6, 2)`` → ``[(0, 1, 2), (3, 4, 5)]``).
    A case whose channels do not split evenly must raise ``ValueError``.

    >>> check_channel_groups(lambda c, g: [range(i * c // g, (i + 1) * c // g) for i in range(g)], "en")
    passed: <lambda> (4 checks)
    """
    _start(lang, fn)
    name = _name(fn, "channel_groups")
    for channels, groups in cases:
        report = _Report(lang, name, f"num_channels={channels}, num_groups={groups}", "ex:sec:06_group")
        where = dict(channels=channels, groups=groups)
        if channels % groups:
            try:
                answer = fn(channels, groups)
            except ValueError:
                continue
            except Exception as error:   # noqa: BLE001
                answer = f"{type(error).__name__}: {error}"
            report.add("ex:groups_should_raise", got=repr(answer) if not isinstance(answer, str) else answer, **where)
            report.diagnoses.append("should_raise")
            report.fail()
        size = channels // groups
        expected = [tuple(range(g * size, (g + 1) * size)) for g in range(groups)]
        answer = report.call(fn, channels, groups)
        try:
            got = [tuple(int(c) for c in group) for group in answer]
        except (TypeError, ValueError):
            got = None
        if got == expected:
            continue
        report.add("ex:groups_wrong", got=repr(got if got is not None else answer), expected=repr(expected), **where)
        if got == [tuple(range(g, channels, groups)) for g in range(groups)]:
            report.diagnose("interleaved", "ex:diag:interleaved", "ex:sec:06_group")
        report.fail()
    _passed(lang, name, len(cases))


def _group_spec(x: Tensor, groups: int, eps: float) -> _Norm:
    n, c, *spatial = x.shape
    space = tuple(range(3, 3 + len(spatial)))
    grouped = (n, groups, c // groups, *spatial)
    candidates = [
        _Pool((2, *space), grouped, "ex:pool:group"),
        _Pool(tuple(range(2, x.dim())), None, "ex:pool:instance"),
        _Pool(tuple(range(1, x.dim())), None, "ex:pool:layer"),
        _Pool((0, *range(2, x.dim())), None, "ex:pool:batch"),
        _Pool((1, *space), (n, c // groups, groups, *spatial), "ex:pool:interleaved"),
        _Pool((0, 2, *space), grouped, "ex:pool:group_batch"),
        _Pool((2,), grouped, "ex:pool:group_channels_only") if spatial else None,
    ]
    right, *others = [p for p in candidates if p is not None and p.dims]
    return _Norm(pool=right, others=others, eps=eps, affine=_channel_affine, group="ex:group:sample_group",
                 formula="ex:sec:06_group", pooling_section="ex:sec:06_group")


GROUP_CASES = (((4, 6, 5), 3), ((2, 6, 3, 4), 2), ((5, 4), 2))


def check_group_norm(fn: Callable, lang: str = "en", *, cases=GROUP_CASES, eps: float = 0.01, seed: int = 0) -> None:
    """Check ``fn(x, num_groups, weight, bias, eps)`` against ``torch.nn.functional.group_norm``
    on ``(N, C, *)`` inputs, with random γ, β (one per channel) and without.

    >>> check_group_norm(torch.nn.functional.group_norm, "en")
    passed: group_norm (6 checks)
    """
    gen = _start(lang, fn, seed)
    name = _name(fn, "group_norm")
    for shape, groups in cases:
        x = _input(shape, gen, torch.float64)
        for affine in (True, False):
            weight, bias = _params((shape[1],), gen, torch.float64) if affine else (None, None)
            report = _Report(lang, name, _case(lang, shape, affine, num_groups=groups, eps=eps), "ex:sec:06_group")
            got = report.call(fn, x.clone(), groups, weight, bias, eps)
            expected = F.group_norm(x, groups, weight, bias, eps)
            spec = _group_spec(x, groups, eps)
            _check_normalized(report, got, expected, x, spec, weight, bias)
    _passed(lang, name, 2 * len(cases))
