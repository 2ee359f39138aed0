"""Assignment 1 (LayerNorm): the statistics, then the whole layer.

>>> import torch
>>> try:
...     check_layer_norm(torch.nn.functional.layer_norm, "en")     # torch's own: delegating does not score
... except AssertionError as failure:
...     print(failure.diagnoses)
('delegated',)
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

import itertools
from typing import Callable, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor

from normlib.axes import _fmt, as_normalized_shape
from normlib.stats import moments
from normlib_classroom.words import text

from ._report import _case, _close, _compare, _input, _name, _params, _passed, _Report, _start, _tol
from ._slips import _check_normalized, _layer_spec, _moments, _subsets, _trailing

LAYER_CASES = (((4, 3), (3,)), ((2, 5, 8), (8,)), ((2, 3, 4, 5), (4, 5)))


def check_layer_norm_stats(fn: Callable, lang: str = "en", *, cases=LAYER_CASES, seed: int = 0,
                           dtype: torch.dtype = torch.float64) -> None:
    """Check ``fn(x, normalized_shape) -> (mean, var)``: LayerNorm's statistics over the trailing
    ``normalized_shape`` dims, population variance, ``keepdim=True`` shapes.

    Expected values come from :func:`normlib.stats.moments` (two passes, population variance).

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
            length = f" (len={len(result)})" if isinstance(result, (tuple, list)) else ""
            report.add("ex:not_pair", got=type(result).__name__ + length)
            report.fail()
        dims = _trailing(x.dim(), normalized_shape)
        mean, var = moments(x, dims)
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
        candidate = _moments(x, d, unbiased)[0 if is_mean else 1]
        if not _close(got, candidate if keepdim else candidate.squeeze(d), _tol(x.dtype)):
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

    >>> def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    ...     x_hat = (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + eps)
    ...     return x_hat if weight is None else x_hat * weight + bias
    >>> check_layer_norm(layer_norm, "ko", cases=[((2, 4), (4,))])
    통과: layer_norm (검사 2개)
    """
    gen = _start(lang, fn, seed)
    name = _name(fn, "layer_norm")
    for shape, normalized_shape in cases:
        x = _input(shape, gen, dtype)
        dims = as_normalized_shape(normalized_shape)
        for affine in (True, False):
            weight, bias = _params(dims, gen, dtype) if affine else (None, None)
            report = _Report(lang, name, _case(lang, shape, affine, normalized_shape=normalized_shape, eps=eps),
                             "ex:sec:04_formula")
            got = report.call(fn, x.clone(), normalized_shape, weight, bias, eps)
            expected = F.layer_norm(x, dims, weight, bias, eps)
            _check_normalized(report, got, expected, x, _layer_spec(x, dims, eps), weight, bias)
    _passed(lang, name, 2 * len(cases))
