"""Chapter 12's graded exercise (normlib_classroom.fused.check_grad_gamma_beta): a two-stage ∂L/∂γ, ∂L/∂β
written here passes in both languages; each slip written into it is named, with the chapter's section;
what is not a slip fails without a diagnosis; bad arguments to the checker are refused.

Every implementation below is written here, each with one deliberate slip; what a test expects (the
slip's name, the block counts in the message) follows from that slip and the checker's documented
cases, never from the checker's own output."""

from __future__ import annotations

import math

import pytest
import torch

from normlib_classroom import words
from normlib_classroom.fused import CASES, CheckFailed, check_grad_gamma_beta

LANGS = ("ko", "en")


def blockwise(x_hat, dy, rows_per_block, *, blocks=None, mean=False, swap=False, no_xhat=False, xhat_in_beta=False):
    """Stage 1 with a Python loop over the blocks (``blocks`` of them: default ceil(rows / rows_per_block)),
    stage 2 a plain sum; the keyword arguments put one slip in."""
    rows = x_hat.shape[0]
    count = math.ceil(rows / rows_per_block) if blocks is None else blocks
    partials = torch.zeros(count, 2, x_hat.shape[1], dtype=x_hat.dtype)
    for k in range(count):
        xs, ds = x_hat[k * rows_per_block:(k + 1) * rows_per_block], dy[k * rows_per_block:(k + 1) * rows_per_block]
        gamma = ds if no_xhat else ds * xs
        beta = ds * xs if xhat_in_beta else ds
        reduce = (lambda t: t.mean(0)) if mean else (lambda t: t.sum(0))
        partials[k, 0], partials[k, 1] = reduce(gamma), reduce(beta)
    if swap:
        partials = partials[:, [1, 0]]
    return partials[:, 0].sum(0), partials[:, 1].sum(0), partials


def right(x_hat, dy, rows_per_block):
    return blockwise(x_hat, dy, rows_per_block)


def failure(function, lang) -> CheckFailed:
    with pytest.raises(CheckFailed) as info:
        check_grad_gamma_beta(function, lang)
    return info.value


@pytest.mark.parametrize("lang", LANGS)
def test_a_two_stage_reduction_passes(lang, capsys):
    check_grad_gamma_beta(right, lang)
    printed = capsys.readouterr().out
    assert "right" in printed and str(len(CASES)) in printed
    assert ("통과" in printed) == (lang == "ko")


def test_the_cases_include_a_short_last_block_and_a_block_longer_than_the_rows():
    assert any(rows % block for rows, _, block in CASES)
    assert any(block > rows for rows, _, block in CASES)


@pytest.mark.parametrize("lang", LANGS)
def test_the_short_last_block_dropped_is_named_with_its_rows(lang):
    rows, _, block = next(c for c in CASES if c[0] % c[2])
    error = failure(lambda x, d, b: blockwise(x, d, b, blocks=x.shape[0] // b), lang)
    assert error.diagnoses == ("last_block",)
    message = str(error)
    first = (rows // block) * block
    assert f"{first}–{rows - 1}" in message and str(math.ceil(rows / block)) in message
    assert words.text("ex:sec:12_backward", lang) in message.splitlines()[-1]


@pytest.mark.parametrize("slip, kwargs", [
    ("swapped", dict(swap=True)),
    ("partial_mean", dict(mean=True)),
    ("dgamma_no_xhat", dict(no_xhat=True)),
    ("dbeta_xhat", dict(xhat_in_beta=True)),
])
@pytest.mark.parametrize("lang", LANGS)
def test_each_slip_is_named(lang, slip, kwargs):
    error = failure(lambda x, d, b: blockwise(x, d, b, **kwargs), lang)
    assert error.diagnoses == (slip,)
    assert words.text(f"ex:diag:{slip}", lang).split("{")[0][:20] in str(error)


@pytest.mark.parametrize("lang", LANGS)
def test_one_sum_over_every_row_is_not_two_stage(lang):
    def one_stage(x_hat, dy, rows_per_block):
        dgamma, dbeta = (dy * x_hat).sum(0), dy.sum(0)
        return dgamma, dbeta, torch.stack([dgamma, dbeta])
    error = failure(one_stage, lang)
    assert error.diagnoses == ("one_stage",)


@pytest.mark.parametrize("lang", LANGS)
def test_a_difference_no_slip_explains_fails_without_a_diagnosis(lang):
    def off(x_hat, dy, rows_per_block):
        dgamma, dbeta, partials = right(x_hat, dy, rows_per_block)
        return dgamma + 1e-6, dbeta, partials          # far above float64 rounding, no known slip
    error = failure(off, lang)
    assert error.diagnoses == ()
    assert words.text("ex:no_diagnosis", lang)[:15] in str(error)


@pytest.mark.parametrize("lang", LANGS)
def test_two_values_instead_of_three_are_named(lang):
    error = failure(lambda x, d, b: right(x, d, b)[:2], lang)
    assert error.diagnoses == ()
    assert "tuple (2)" in str(error)


def test_float32_results_are_refused_naming_both_dtypes():
    def single(x_hat, dy, rows_per_block):
        return tuple(t.float() for t in right(x_hat, dy, rows_per_block))
    message = str(failure(single, "en"))
    assert "torch.float64" in message and "torch.float32" in message


def test_the_korean_messages_print_no_english_word():
    """What chapter 12 prints when its slip is caught, in Korean: no English label (test_output_language's rule)."""
    from helpers.text import has_hangul
    error = failure(lambda x, d, b: blockwise(x, d, b, blocks=x.shape[0] // b), "ko")
    assert has_hangul(str(error))
    for english in ("partials ", "rows //", " sum", "missing", "block "):
        assert english not in str(error), english


def test_bad_arguments_to_the_checker_are_refused():
    with pytest.raises(ValueError):
        check_grad_gamma_beta(right, "fr")
    with pytest.raises(TypeError, match="received int"):
        check_grad_gamma_beta(3, "en")
