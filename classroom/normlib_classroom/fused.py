"""Chapter 12's graded exercise: ∂L/∂γ and ∂L/∂β as a two-stage reduction.

The student writes ``grad_gamma_beta(x_hat, dy, rows_per_block) -> (dgamma, dbeta, partials)``.
Stage 1 splits the rows of ``x_hat`` and ``dy`` (both ``(rows, D)``) into blocks of ``rows_per_block``
consecutive rows, the last one possibly shorter, and sums each block on its own:
``partials[k, 0] = Σ dy·x̂`` and ``partials[k, 1] = Σ dy`` over block k's rows, so ``partials`` has
shape ``(ceil(rows / rows_per_block), 2, D)``. Stage 2 adds the partial sums: ``dgamma``, ``dbeta``
of shape ``(D,)``. This is what a kernel's threads do (chapter 12, "The fused backward"): each
adds its own rows into its own partial vector, and one sum ends it.

The checker runs the function on seeded float64 inputs whose rows do and do not divide into blocks,
and checks, in order: three tensors come back; ``partials`` has one row per block (a one-stage
answer, or the short last block dropped, is named); each block's partial sums; then ``dgamma`` and
``dbeta``. A wrong value is explained when it equals a known slip computed on the same input:
the short last block left out, ∂L/∂γ and ∂L/∂β swapped, a block's mean instead of its sum, x̂ left out
of ∂L/∂γ, x̂ put into ∂L/∂β. Failures raise :class:`CheckFailed` in the student's language.

>>> def grad_gamma_beta(x_hat, dy, rows_per_block):
...     partials = torch.stack([torch.stack([(dy[i:i + rows_per_block] * x_hat[i:i + rows_per_block]).sum(0),
...                                          dy[i:i + rows_per_block].sum(0)])
...                             for i in range(0, x_hat.shape[0], rows_per_block)])
...     return partials[:, 0].sum(0), partials[:, 1].sum(0), partials
>>> check_grad_gamma_beta(grad_gamma_beta, "en")
passed: grad_gamma_beta (3 checks)
"""

from __future__ import annotations

from typing import Callable, List, Tuple

import torch
from torch import Tensor

from normlib.axes import _fmt
from normlib_classroom.words import text

from ._report import CheckFailed, _close, _compare, _name, _passed, _Report, _start

__all__ = ["CheckFailed", "check_grad_gamma_beta", "CASES"]

# (rows, D, rows_per_block): a short last block, blocks that divide the rows, one block longer than the rows
CASES: Tuple[Tuple[int, int, int], ...] = ((10, 6, 4), (12, 5, 3), (3, 4, 8))
SECTION = "ex:sec:12_backward"
TOL = 1e-9          # float64 sums of a dozen terms of order 1: rounding stays far below this


def _inputs(rows: int, d: int, gen: torch.Generator) -> Tuple[Tensor, Tensor]:
    """x̂ with each row of mean 0 and mean square 1 (as a LayerNorm makes it), and a random ∂L/∂y
    with a different centre in every column, so that sums, means and swaps all differ."""
    x = torch.randn(rows, d, generator=gen, dtype=torch.float64) * (0.5 + 2 * torch.rand(rows, 1, generator=gen, dtype=torch.float64))
    centred = x - x.mean(1, keepdim=True)
    x_hat = centred / centred.pow(2).mean(1, keepdim=True).clamp_min(1e-12).sqrt()
    dy = torch.randn(rows, d, generator=gen, dtype=torch.float64) + 1.5 * torch.randn(d, generator=gen, dtype=torch.float64)
    return x_hat, dy


def _blocks(rows: int, block: int) -> List[Tuple[int, int]]:
    """(first row, end) of each block: ceil(rows / block) of them, the last possibly shorter."""
    return [(start, min(start + block, rows)) for start in range(0, rows, block)]


def _partials(x_hat: Tensor, dy: Tensor, spans, mean: bool = False, swap: bool = False,
              no_xhat: bool = False, xhat_in_beta: bool = False) -> Tensor:
    """The right partial sums over ``spans`` (blocks of rows), or with the slips named."""
    out = []
    for start, end in spans:
        g = dy[start:end] if no_xhat else dy[start:end] * x_hat[start:end]
        b = dy[start:end] * x_hat[start:end] if xhat_in_beta else dy[start:end]
        pair = torch.stack([g.mean(0), b.mean(0)] if mean else [g.sum(0), b.sum(0)])
        out.append(pair.flip(0) if swap else pair)
    return torch.stack(out)


# (diagnosis, what the slip changes): each candidate computed on the same input as the answer
_SLIPS = {"last_block": {}, "swapped": {"swap": True}, "partial_mean": {"mean": True},
          "dgamma_no_xhat": {"no_xhat": True}, "dbeta_xhat": {"xhat_in_beta": True}}


def _explain(report: _Report, got, x_hat: Tensor, dy: Tensor, rows: int, block: int) -> None:
    """Name the slip whose result equals the student's partial sums, or their ∂L/∂γ and ∂L/∂β."""
    full = _blocks(rows, block)
    for name, slip in _SLIPS.items():
        spans = full[:-1] if name == "last_block" else full
        if not spans or (name == "last_block" and rows % block == 0):
            continue
        candidate = _partials(x_hat, dy, spans, **slip)
        total = candidate.sum(0)
        partials_match = isinstance(got[2], Tensor) and _close(got[2], candidate, TOL)
        totals_match = all(isinstance(g, Tensor) for g in got[:2]) and _close(got[0], total[0], TOL) \
            and _close(got[1], total[1], TOL)
        if partials_match or totals_match:
            start = full[-1][0]
            report.diagnose(name, f"ex:diag:{name}", SECTION, rows=rows, block=block, blocks=len(full),
                            first=start, last=rows - 1)
            return


def _check_case(report: _Report, function: Callable, rows: int, d: int, block: int, gen: torch.Generator) -> None:
    x_hat, dy = _inputs(rows, d, gen)
    got = report.call(function, x_hat.clone(), dy.clone(), block)
    if not (isinstance(got, (tuple, list)) and len(got) == 3):
        report.add("ex:not_triple", got=type(got).__name__ if not isinstance(got, (tuple, list))
                   else f"{type(got).__name__} ({len(got)})")
        report.fail()
    spans = _blocks(rows, block)
    partials = _partials(x_hat, dy, spans)
    dgamma, dbeta = partials.sum(0)
    got_partials = got[2]
    if isinstance(got_partials, Tensor) and tuple(got_partials.shape) != tuple(partials.shape):
        shape = tuple(got_partials.shape)
        report.add("ex:shape", what=report.t("ex:partials"), expected=_fmt(partials.shape), got=_fmt(shape))
        if shape in ((d,), (2, d), (1, 2, d)) and len(spans) > 1:
            report.diagnose("one_stage", "ex:diag:one_stage", SECTION, blocks=len(spans), rows=rows, block=block)
        elif shape == (len(spans) - 1, 2, d) and rows % block:
            _explain(report, got, x_hat, dy, rows, block)
        report.fail()
    ok = _compare(report, report.t("ex:partials"), got_partials, partials, TOL) == "ok"
    for what, value, expected in (("γ", got[0], dgamma), ("β", got[1], dbeta)):
        ok = _compare(report, report.t("ex:grad", name=what), value, expected, TOL) == "ok" and ok
    if not ok:
        _explain(report, got, x_hat, dy, rows, block)
        report.fail()


def check_grad_gamma_beta(function, lang: str = "en", *, cases=CASES, seed: int = 0) -> None:
    """Check ``function(x_hat, dy, rows_per_block) -> (dgamma, dbeta, partials)``, ∂L/∂γ and ∂L/∂β of a
    LayerNorm as a two-stage reduction over blocks of rows (the module's docstring says what each
    is), on each ``(rows, D, rows_per_block)`` of ``cases``; print one line when all agree, else raise
    :class:`CheckFailed` in ``lang`` ("ko" or "en").

    >>> def one_stage(x_hat, dy, rows_per_block):        # right sums, but no partial sums per block
    ...     dgamma, dbeta = (dy * x_hat).sum(0), dy.sum(0)
    ...     return dgamma, dbeta, torch.stack([dgamma, dbeta])
    >>> try:
    ...     check_grad_gamma_beta(one_stage, "en")
    ... except CheckFailed as failure:
    ...     print(failure.diagnoses)
    ('one_stage',)
    """
    gen = _start(lang, function, seed)
    name = _name(function, "grad_gamma_beta")
    for rows, d, block in cases:
        report = _Report(lang, name, text("ex:case_two_stage", lang).format(rows=rows, d=d, block=block), SECTION)
        _check_case(report, function, rows, d, block, gen)
    _passed(lang, name, len(cases))

