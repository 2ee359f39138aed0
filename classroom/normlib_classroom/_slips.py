"""Recognising a slip from what the student's normalization actually computed.

Each candidate is computed here on the same input: the right pooling or another one (other
axes, GroupNorm's interleaved or per-channel groups …), the population or the unbiased (n − 1)
variance, eps as given, left out or fixed at 1e-5, ``std + eps``, γ or β left out. The fewest
slips whose result equals the student's are named in the report (``CheckFailed.diagnoses``:
``"unbiased"``, ``"no_eps"``, ``"axes"``, …), with the chapter section that explains them.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple

import torch
from torch import Tensor

from normlib.axes import _fmt, as_normalized_shape, channel_view
from normlib.stats import moments
from normlib_classroom.words import text

from ._report import _close, _compare, _num, _Report, _tol

DEFAULT_EPS = 1e-5


def _moments(x: Tensor, dims: Sequence[int], unbiased: bool = False) -> Tuple[Tensor, Tensor]:
    """:func:`normlib.stats.moments` (keepdim), or with the slip of the unbiased variance (n − 1)."""
    mean, var = moments(x, tuple(dims))
    if unbiased:
        n = math.prod(x.shape[d] for d in dims)
        var = var * n / (n - 1)          # a tensor divided by 0 when n = 1: nan, as x.var(correction=1)
    return mean, var


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
        return _moments(self.viewed(x), self.dims, unbiased)

    def describe(self, report: _Report) -> str:
        return report.t(self.key) if self.key else _fmt(self.dims)


def _standardize(x: Tensor, pool: _Pool, unbiased: bool, eps: float, std_eps: bool) -> Tensor:
    """x̂ over ``pool`` — right (population variance, sqrt(var + eps)) or with the named slips."""
    mean, var = pool.moments(x, unbiased)
    scale = var.sqrt() + eps if std_eps else (var + eps).sqrt()
    return ((pool.viewed(x) - mean) / scale).reshape(x.shape)


def _subsets(ndim: int) -> List[Tuple[int, ...]]:
    return [c for r in range(1, ndim + 1) for c in itertools.combinations(range(ndim), r)]


def _group_lines(report: _Report, got: Tensor, expected: Tensor, pool: _Pool, group: str, tol: float,
                 what: str) -> None:
    """Is the mean / the variance per group of ``what`` (the student's output) off (beyond ``tol``,
    as the elements are judged)? Name the worst group."""
    kept = [d for d in range(len(pool.view or got.shape)) if d not in pool.dims]
    for stat_key, index in (("mean", 0), ("variance", 1)):
        g = pool.moments(got.detach().double())[index]
        e = pool.moments(expected.detach().double())[index]
        diff = torch.nan_to_num((g - e).abs(), nan=math.inf)
        stat, word = text(stat_key, report.lang), report.t(group)
        if bool((diff <= tol * (1 + e.abs())).all()):
            report.add("ex:group_ok", what=what, group=word, stat=stat)
            continue
        idx = tuple(int(i) for i in torch.unravel_index(diff.argmax(), diff.shape))
        where = [idx[d] for d in kept]              # one index: "row 1", not "row (1,)"
        report.add("ex:group_off", what=what, group=word, stat=stat, index=str(where[0]) if len(where) == 1 else _fmt(where),
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
    what = what or report.t("ex:output")
    status = _compare(report, what, got, expected, tol)
    if status == "ok":
        return
    if status == "values":
        _group_lines(report, got, expected, spec.pool, spec.group, tol, what)
        _explain(report, got, x, spec, weight, bias, tol)
    report.fail()


# --------------------------------------------------------------------------- LayerNorm's and BatchNorm's poolings

def _affine(t: Tensor, w: Optional[Tensor], b: Optional[Tensor]) -> Tensor:
    """γ·t + β; a missing γ or β is left out."""
    return t * (1 if w is None else w) + (0 if b is None else b)


def _channel_affine(t: Tensor, w: Optional[Tensor], b: Optional[Tensor]) -> Tensor:
    """γ·t + β with one γ and one β per channel (axis 1)."""
    return _affine(t, channel_view(w, t.dim()), channel_view(b, t.dim()))


def _axes_norm(x: Tensor, dims: Tuple[int, ...], eps: float, **rest) -> _Norm:
    """Statistics over the axes ``dims``; any other set of axes is a slip worth naming."""
    return _Norm(pool=_Pool(dims), others=[_Pool(d) for d in _subsets(x.dim()) if d != dims], eps=eps, **rest)


def _trailing(x_dim: int, normalized_shape) -> Tuple[int, ...]:
    k = len(as_normalized_shape(normalized_shape))
    return tuple(range(x_dim - k, x_dim))


def _layer_spec(x: Tensor, normalized_shape, eps: float) -> _Norm:
    return _axes_norm(x, _trailing(x.dim(), normalized_shape), eps, affine=_affine, group="ex:group:row",
                      formula="ex:sec:04_formula", pooling_section="ex:sec:04_sequences")


def _batch_spec(x: Tensor, eps: float) -> _Norm:
    return _axes_norm(x, (0, *range(2, x.dim())), eps, affine=_channel_affine, group="ex:group:channel",
                      formula="ex:sec:03_formula", pooling_section="ex:sec:03_axes")
