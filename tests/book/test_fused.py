"""normlib_book.fused, chapter 12's compiled kernel: exact against torch, and each step of the chapter.

* gradcheck in float64 of layer_norm, rms_norm, add_layer_norm, add_rms_norm (x, residual, γ, β);
* outputs and gradients equal torch's F.layer_norm / F.rms_norm (and x + residual) within
  helpers.torch_compare's tolerances, on odd shapes (D = 1, 3, 769; rows 1, 7, 2049), in float32 with
  float32 and float64 accumulation, bfloat16 and float64, with a large offset (mean 1e4, std 1) where a
  one-pass sum of squares fails and Welford's update does not;
* the steps: row sums three ways, row moments two ways, column sums two ways agree;
* 1, 2 and more threads than rows agree; a non-contiguous input gives the contiguous result;
* bad input named, in English and Korean; a missing compiler named (in a subprocess);
* the build is cached outside the repository and a second process does not rebuild.

Marked slow: the first test of a machine compiles the kernel (seconds; then it is cached).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as TF
from torch.autograd import gradcheck

from helpers.paths import ROOT
from helpers.torch_compare import Inputs, compare, exact_of, forward_and_grads, make_inputs
from normlib.messages import speaking

pytestmark = pytest.mark.slow

fused = pytest.importorskip("normlib_book.fused")


@pytest.fixture(scope="module", autouse=True)
def built():
    """The kernel, built (or found in the cache) once for the module."""
    return fused.load()


def row_labels(shape) -> torch.Tensor:
    """Equal labels share one statistic: one per row (everything but the last axis)."""
    rows = int(torch.Size(shape[:-1]).numel())
    return torch.arange(rows).repeat_interleave(shape[-1]).reshape(shape)


# --- gradcheck ------------------------------------------------------------------------------------------

def _d(*shape, seed=0, offset=0.0):
    g = torch.Generator().manual_seed(seed)
    return (offset + torch.randn(*shape, generator=g, dtype=torch.float64)).requires_grad_(True)


@pytest.mark.parametrize("threads", [1, 3])
def test_gradcheck_float64(threads, monkeypatch):
    monkeypatch.setattr(fused, "GRAIN", 1)    # so that 3 threads really share the 6 rows
    x, r, w, b = _d(6, 5, seed=1), _d(6, 5, seed=2), _d(5, seed=3, offset=1.0), _d(5, seed=4)
    cases = {
        "layer_norm": (lambda x, w, b: fused.layer_norm(x, w, b, threads=threads), (x, w, b)),
        "rms_norm": (lambda x, w: fused.rms_norm(x, w, 1e-6, threads=threads), (x, w)),
        "add_layer_norm": (lambda x, r, w, b: fused.add_layer_norm(x, r, w, b, threads=threads), (x, r, w, b)),
        "add_rms_norm": (lambda x, r, w: fused.add_rms_norm(x, r, w, threads=threads), (x, r, w)),
        "layer_norm, no γ, β": (lambda x: fused.layer_norm(x, threads=threads), (x,)),
        "layer_norm 3-D": (lambda x: fused.layer_norm(x.reshape(2, 3, 5), threads=threads), (x,)),
    }
    for name, (fn, inputs) in cases.items():
        assert gradcheck(fn, inputs), name


# --- Agreement with torch ----------------------------------------------------------------------------

# (x dtype, accumulate): float32 accumulated in float32 and in float64, bfloat16, float64
CONFIGS = [(torch.float32, torch.float32), (torch.float32, torch.float64), (torch.bfloat16, torch.float32),
           (torch.float64, torch.float64)]
SHAPES = [(1, 1), (7, 3), (1, 769), (7, 769), (2049, 3), (2049, 769), (7, 1), (2049, 1)]


def _check(kind, shape, dtype, accumulate, offset=0.0, seed=0, residual=False, eps=1e-5):
    inp = make_inputs(shape, dtype, seed, offset, 1.0, (shape[-1],), True, kind == "layer")
    res = make_inputs(shape, dtype, seed + 1, 0.0, 1.0, (shape[-1],), False, False).x if residual else None
    d = (shape[-1],)
    if kind == "layer":
        def theirs(x, weight, bias):
            return TF.layer_norm(x if res is None else x + res.to(x.dtype), d, weight, bias, eps)

        def ours(x, weight, bias):
            if res is None:
                return fused.layer_norm(x, weight, bias, eps, accumulate=accumulate)
            return fused.add_layer_norm(x, res, weight, bias, eps, accumulate=accumulate)[0]
    else:
        def theirs(x, weight, bias):
            return TF.rms_norm(x if res is None else x + res.to(x.dtype), d, weight, eps)

        def ours(x, weight, bias):
            if res is None:
                return fused.rms_norm(x, weight, eps, accumulate=accumulate)
            return fused.add_rms_norm(x, res, weight, eps, accumulate=accumulate)[0]

    # the conditioning of the comparison is that of what is normalized: x, or h = x + residual
    judged = inp if res is None else Inputs(inp.x + res, inp.weight, inp.bias, inp.upstream)
    compare(forward_and_grads(ours, inp), forward_and_grads(theirs, inp), judged, row_labels(shape), eps,
            kind == "layer", what=f"{kind} {shape} {dtype} accumulate {accumulate} residual {residual}",
            exact=exact_of(theirs, inp))


@pytest.mark.parametrize("dtype, accumulate", CONFIGS, ids=lambda v: str(v).replace("torch.", ""))
@pytest.mark.parametrize("kind", ["layer", "rms"])
def test_agrees_with_torch(kind, dtype, accumulate):
    for shape in SHAPES:
        _check(kind, shape, dtype, accumulate)


@pytest.mark.parametrize("dtype, accumulate", CONFIGS, ids=lambda v: str(v).replace("torch.", ""))
@pytest.mark.parametrize("kind", ["layer", "rms"])
def test_residual_agrees_with_torch(kind, dtype, accumulate):
    for shape in [(1, 3), (7, 769), (2049, 3)]:
        _check(kind, shape, dtype, accumulate, residual=True, seed=5)


@pytest.mark.parametrize("accumulate", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_large_offset(accumulate):
    """Mean 1e4, std 1: torch and the kernel agree (the tolerance grows with the conditioning, as for
    torch itself), in both norms."""
    for kind in ("layer", "rms"):
        _check(kind, (7, 769), torch.float32, accumulate, offset=1e4, seed=3)


def test_the_residual_stream_gradient_reaches_x_and_residual():
    """(y, h) = add_layer_norm(x, r): a loss on both y and h; x and r get the gradient of h, which is the
    norm's gradient plus the stream's, as torch's x + r then layer_norm gives it."""
    for fn, ref in ((fused.add_layer_norm, lambda h, w, b: TF.layer_norm(h, (5,), w, b)),
                    (lambda x, r, w, b: fused.add_rms_norm(x, r, w), lambda h, w, b: TF.rms_norm(h, (5,), w))):
        x, r, w, b = _d(4, 5, seed=1), _d(4, 5, seed=2), _d(5, seed=3, offset=1.0), _d(5, seed=4)
        up_y, up_h = torch.randn(4, 5, dtype=torch.float64), torch.randn(4, 5, dtype=torch.float64)
        y, h = fn(x, r, w, b)
        assert torch.equal(h, x + r)
        ours = torch.autograd.grad((y * up_y).sum() + (h * up_h).sum(), [x, r])
        h_ref = x + r
        theirs = torch.autograd.grad((ref(h_ref, w, b) * up_y).sum() + (h_ref * up_h).sum(), [x, r])
        for o, t in zip(ours, theirs):
            torch.testing.assert_close(o, t, rtol=1e-10, atol=1e-10)


# --- The steps -------------------------------------------------------------------------------------------

def test_row_sums_three_ways_agree():
    """Small whole numbers add up exactly in float32 whatever the order: every way gives the exact sums,
    tail included; on random values each is within n·u·Σ|x| (twice) of the float64 sum."""
    g = torch.Generator().manual_seed(0)
    for d in (1, 3, 31, 32, 33, 95, 769):
        x = torch.randint(-8, 9, (4, d), generator=g).float()
        for how in fused.ROW_SUMS:
            assert torch.equal(fused.row_sums(x, how), x.sum(1)), (how, d)
    for shape in [(1, 1), (5, 3), (3, 31), (4, 33), (6, 769), (2, 4096)]:
        x = torch.randn(shape, generator=g) + 2.0
        exact = x.double().sum(1)
        bound = 2 * shape[1] * torch.finfo(torch.float32).eps * x.double().abs().sum(1)   # n·u·Σ|x|, twice
        for how in fused.ROW_SUMS:
            got = fused.row_sums(x, how).double()
            assert ((got - exact).abs() <= bound).all(), (how, shape)


def test_row_moments_two_ways_agree_and_the_sum_of_squares_fails_at_a_large_offset():
    g = torch.Generator().manual_seed(1)
    u = torch.finfo(torch.float32).eps
    for offset in (0.0, 3.0, 1e4):
        for d in (1, 3, 31, 32, 33, 769, 4096):
            x = (offset + torch.randn(5, d, generator=g, dtype=torch.float64)).float()
            mean64, var64 = x.double().mean(1), x.double().var(1, unbiased=False)
            kappa = (x.double().abs().amax(1) / var64.sqrt().clamp_min(1e-30)).clamp_min(1)
            for how in ("two_pass", "welford"):
                mean, var = fused.row_moments(x, how)
                assert ((mean.double() - mean64).abs() <= 32 * u * x.double().abs().amax(1)).all(), (how, offset, d)
                assert ((var.double() - var64).abs() <= 32 * u * kappa * var64 + 1e-12).all(), (how, offset, d)
    x = (1e4 + torch.randn(5, 769, generator=g, dtype=torch.float64)).float()
    _, naive = fused.row_moments(x, "sum_of_squares")
    assert ((naive.double() - x.double().var(1, unbiased=False)).abs() > 0.5).any(), \
        "the data no longer show the one-pass sum of squares failing: the test above would not catch it"


@pytest.mark.parametrize("threads", [1, 2, 9])
def test_column_sums_two_ways_agree(threads):
    g = torch.Generator().manual_seed(2)
    for shape in [(1, 3), (7, 769), (513, 5)]:
        x = torch.randn(shape, generator=g)
        exact = x.double().sum(0)
        bound = 2 * shape[0] * torch.finfo(torch.float32).eps * x.double().abs().sum(0)
        for how in fused.COLUMN_SUMS:
            got = fused.column_sums(x, how, threads=threads).double()
            assert ((got - exact).abs() <= bound).all(), (how, shape, threads)


def test_threads_agree(monkeypatch):
    """1 thread, 2, and more than there are rows give the same outputs and gradients within float32's
    rounding (not to the bit: the rows of dγ, dβ are added in another order)."""
    monkeypatch.setattr(fused, "GRAIN", 1)
    inp = make_inputs((7, 769), torch.float32, 4, 0.5, 1.0, (769,), True, True)
    results = {}
    for threads in (1, 2, 16):
        assert fused.threads_for(7, 769, threads) == min(threads, 7)
        for name, fn in (("layer", lambda x, weight, bias, t=threads: fused.layer_norm(x, weight, bias, threads=t)),
                         ("rms", lambda x, weight, bias, t=threads: fused.rms_norm(x, weight, threads=t))):
            results[name, threads] = forward_and_grads(fn, inp)
    for name in ("layer", "rms"):
        one = results[name, 1]
        for threads in (2, 16):
            out, grads = results[name, threads]
            torch.testing.assert_close(out, one[0], rtol=1e-5, atol=1e-5)
            for key in one[1]:
                torch.testing.assert_close(grads[key], one[1][key], rtol=1e-5, atol=1e-5)


def test_threads_for_small_inputs():
    assert fused.threads_for(8, 768, 4) == 1                      # 6144 elements: under one GRAIN
    assert fused.threads_for(1, 10**7, 4) == 1                     # one row: one thread
    assert fused.threads_for(4 * fused.GRAIN, 1, 4) == 4
    assert fused.threads_for(4 * fused.GRAIN, 1, None) == min(4, torch.get_num_threads())


def test_non_contiguous_input_is_copied_first():
    g = torch.Generator().manual_seed(5)
    base = torch.randn(769, 7, generator=g, requires_grad=True)
    w = torch.rand(7, generator=g) + 0.5
    x = base.t()                                   # (7, 769) with strides (1, 7)
    w7, b7 = torch.rand(769, generator=g) + 0.5, torch.randn(769, generator=g)
    assert not x.is_contiguous()
    y = fused.layer_norm(x, w7, b7)
    assert torch.equal(y, fused.layer_norm(x.contiguous(), w7, b7))
    y.sum().backward()
    assert base.grad is not None and base.grad.shape == base.shape
    strided = torch.randn(7, 20, generator=g)[:, ::3]    # every third column: a strided view
    assert torch.equal(fused.rms_norm(strided, w), fused.rms_norm(strided.contiguous(), w))


# --- Errors -----------------------------------------------------------------------------------------------

def _message(fn) -> tuple[type, str, str]:
    with pytest.raises((TypeError, ValueError)) as en:
        fn()
    with speaking("ko"), pytest.raises((TypeError, ValueError)) as ko:
        fn()
    return en.type, str(en.value), str(ko.value)


def test_bad_input_is_named_in_both_languages():
    x, w = torch.randn(4, 3), torch.ones(3)
    cases = [
        (lambda: fused.layer_norm(x.half(), w.half()), TypeError, ["float16", "float32"]),
        (lambda: fused.layer_norm(x.long()), TypeError, ["int64"]),
        (lambda: fused.layer_norm([1.0, 2.0]), TypeError, ["Tensor", "list"]),
        (lambda: fused.layer_norm(x, torch.ones(4)), ValueError, ["(3,)", "(4,)"]),
        (lambda: fused.layer_norm(x, w.double()), TypeError, ["float64", "float32"]),
        (lambda: fused.layer_norm(x, w, torch.ones(2)), ValueError, ["(3,)", "(2,)"]),
        (lambda: fused.layer_norm(torch.tensor(1.0)), ValueError, ["()"]),
        (lambda: fused.layer_norm(torch.ones(4, 0)), ValueError, ["(4, 0)"]),
        (lambda: fused.layer_norm(x, w, eps=-1e-5), ValueError, ["-1e-05"]),
        (lambda: fused.rms_norm(x, w, eps=float("nan")), ValueError, ["nan"]),
        (lambda: fused.layer_norm(x, w, accumulate=torch.float16), TypeError, ["float16", "float64"]),
        (lambda: fused.layer_norm(x.bfloat16(), w.bfloat16(), accumulate=torch.float64), TypeError, ["bfloat16"]),
        (lambda: fused.layer_norm(x, w, threads=0), ValueError, ["0"]),
        (lambda: fused.add_layer_norm(x, torch.randn(4, 4), w), ValueError, ["(4, 3)", "(4, 4)"]),
        (lambda: fused.add_rms_norm(x, x.double(), w), TypeError, ["float64"]),
        (lambda: fused.row_sums(x, "parallel"), ValueError, ["serial", "parallel"]),
        (lambda: fused.row_sums(torch.randn(2, 3, 4), "serial"), ValueError, ["(rows, D)", "(2, 3, 4)"]),
        (lambda: fused.row_moments(x.double(), "welford"), ValueError, ["float32", "float64"]),
        (lambda: fused.column_sums(x, "atomic"), ValueError, ["two_stage", "atomic"]),
        (lambda: fused.source("no_such_step"), ValueError, ["row_sums", "no_such_step"]),
    ]
    for fn, kind, words in cases:
        got, en, ko = _message(fn)
        assert got is kind, (en, got, kind)
        for word in words:
            assert word in en and word in ko, (word, en, ko)
        assert any("\uac00" <= ch <= "\ud7a3" for ch in ko), ko


def test_a_missing_compiler_is_named():
    """In a fresh process whose compiler ($CXX) does not exist: CompilerMissing names it, in English and
    (normlib's language set to Korean) in Korean, and says torch.compile needs the same."""
    code = ("import normlib\nfrom normlib_book import fused\nnormlib.set_language({lang!r})\n"
            "try:\n    fused.load()\nexcept fused.CompilerMissing as e:\n    print('MISSING', e)\n")
    env = {**os.environ, "CXX": "/nonexistent/bin/c++"}
    for lang, words in (("en", ["No C++ compiler", "/nonexistent/bin/c++", "torch.compile", "apt-get install g++"]),
                        ("ko", ["컴파일러가 없습니다", "/nonexistent/bin/c++", "torch.compile"])):
        result = subprocess.run([sys.executable, "-c", code.format(lang=lang)], env=env, cwd=ROOT,
                                capture_output=True, text=True, timeout=120, check=False)
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("MISSING"), result.stdout + result.stderr
        for word in words:
            assert word in result.stdout, (word, result.stdout)


def test_a_compiler_without_openmp_is_named(tmp_path):
    """A 'compiler' that fails every build stands for one without OpenMP: the message says so."""
    fake = tmp_path / "c++"
    fake.write_text("#!/bin/sh\necho 'fatal error: omp.h: No such file or directory' >&2\nexit 1\n")
    fake.chmod(0o755)
    code = ("from normlib_book import fused\ntry:\n    fused.check_compiler()\n"
            "except fused.CompilerMissing as e:\n    print('MISSING', e)\n")
    result = subprocess.run([sys.executable, "-c", code], env={**os.environ, "CXX": str(fake)}, cwd=ROOT,
                            capture_output=True, text=True, timeout=120, check=False)
    assert "MISSING" in result.stdout and "OpenMP" in result.stdout and "omp.h" in result.stdout, \
        result.stdout + result.stderr


# --- The build ------------------------------------------------------------------------------------------

def test_the_build_is_cached_outside_the_repository_and_reused():
    folder = fused.build_directory()
    library = folder / f"{folder.name}.so"
    assert library.exists()
    assert not folder.resolve().is_relative_to(ROOT.resolve()), folder
    before = library.stat().st_mtime_ns
    code = "from normlib_book import fused\nfused.load()\nprint(fused.build_directory())\n"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                            timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(folder)
    assert library.stat().st_mtime_ns == before, "a second process rebuilt the kernel"


def test_every_step_has_its_source():
    assert fused.STEPS[:2] == ("dtypes", "row_sums")
    for step in fused.STEPS:
        text = fused.source(step)
        assert text.strip() and "// === step:" not in text, step
    assert "#pragma omp simd reduction" in fused.source("row_sums")
    assert "Chan" in fused.source("merge") and "welford_row" in fused.source("welford")
    assert fused.source().count("// === step:") == len(fused.STEPS)
