"""PyTorch's own test databases for these layers, run against normlib (issue 14, point 6).

PyTorch describes how each operator and module must behave in two databases that ship with it:
``op_db`` (``torch.testing._internal.common_methods_invocations``: one ``OpInfo`` per functional,
with its sample inputs, its error inputs and what autograd it supports) and ``module_db``
(``torch.testing._internal.common_modules``: one ``ModuleInfo`` per layer, with constructor and
forward inputs and the errors it must raise). This file reads them **at run time** (nothing is
copied into the repository) and runs every entry for ``batch_norm``, ``instance_norm``,
``layer_norm``, ``group_norm``, ``rms_norm`` and their modules on the CPU, in float32 and
float64, against normlib:

* every sample input: normlib's output, updated running statistics and gradients equal torch's
  (``normlib.functional`` and, where the signature is the same, ``normlib.autograd``), and the
  forward-mode derivative (jvp) too where the OpInfo says torch supports it;
* every error input: normlib raises torch's exception type (or a subclass) with a message that
  matches torch's ``error_regex``;
* every module input: normlib's module, given torch's ``state_dict``, gives the same output,
  running statistics, ``num_batches_tracked`` and gradients, in training and evaluation mode,
  and the output and input gradient keep the input's memory format where torch's own
  ``test_memory_format`` runs; gradcheck, gradgradcheck and forward-mode AD in float64.

"Equal" is the project's tolerance (``tests/conftest.py``): the helpers of
``test_functional.py`` are reused, so the same conditioning-aware allowance applies.

Where normlib *deliberately* differs from torch 2.13 (:data:`DIFFERENCES`, each a row of the
table in normlib/README.md with the test that pins it), a case of torch's databases that runs into the
difference is an expected failure, named, with its reason; it must keep failing (if torch changes,
the test fails, and the difference is revisited).

Importing ``torch.testing._internal`` needs the test-only package ``expecttest`` (torch's own
test base class). Only its ``TestCase`` class and ``ACCEPT`` flag are touched at import time, so
when the package is missing a stand-in with those two names is installed for the import.
"""

from __future__ import annotations

import importlib.util
import inspect
import itertools
import re
import sys
import types
import unittest
from pathlib import Path
from typing import Dict, Optional

import pytest
import torch
import torch.autograd.forward_ad as fwAD
from torch import Tensor
from torch.autograd import gradcheck, gradgradcheck

import normlib
import normlib.autograd as A
import normlib.functional as NF
from helpers.torch_compare import (
    BASE_TOL,
    ROUNDING_FACTOR,
    Inputs,
    assert_close_elementwise,
    compare,
    compare_eval,
    compare_running,
    compute_dtype,
    group_scales,
    roundoff,
)
from normlib import axes
from normlib_book.instruments import labels

# --------------------------------------------------------------------------- torch's databases

def _torch_databases():
    stand_in = None
    if importlib.util.find_spec("expecttest") is None and "expecttest" not in sys.modules:
        stand_in = types.ModuleType("expecttest")
        stand_in.TestCase, stand_in.ACCEPT = unittest.TestCase, False
        sys.modules["expecttest"] = stand_in
    frozen = torch.backends.flags_frozen()
    try:
        from torch.testing._internal.common_methods_invocations import op_db
        from torch.testing._internal.common_modules import ModuleErrorEnum, module_db
    finally:
        if stand_in is not None:     # torch's modules keep their reference; nothing else sees it
            del sys.modules["expecttest"]
        if not frozen:
            # common_utils freezes torch.backends' flags (torch.backends.disable_global_flags) for
            # torch's own suite; leave this session's as they were (the flag lives in that module's
            # globals, which flags_frozen reads)
            torch.backends.flags_frozen.__globals__["__allow_nonbracketed_mutation_flag"] = True
    return op_db, module_db, ModuleErrorEnum


OP_DB, MODULE_DB, ModuleErrorEnum = _torch_databases()

# OpInfo name → normlib function name
OP_NAMES = {
    "nn.functional.batch_norm": "batch_norm",
    "nn.functional.instance_norm": "instance_norm",
    "nn.functional.layer_norm": "layer_norm",
    "nn.functional.group_norm": "group_norm",
    "nn.functional.rms_norm": "rms_norm",
}
MODULE_NAMES = ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
                "LayerNorm", "GroupNorm", "RMSNorm", "SyncBatchNorm")

OPS = [op for op in OP_DB if op.name in OP_NAMES]
MODULES = [m for m in MODULE_DB
           if m.module_cls.__name__ in MODULE_NAMES and m.module_cls.__module__.startswith("torch.nn")]
DTYPES = (torch.float32, torch.float64)


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """The inputs are tiny: one intra-op thread is faster than a pool (which, on a busy 2-core
    machine, waits for the other thread more than it computes). Restored afterwards."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _op_id(op) -> str:
    return op.name.replace("nn.functional.", "") + (f".{op.variant_test_name}" if op.variant_test_name else "")


def test_the_databases_hold_every_layer():
    """A torch upgrade that renames or drops an entry must fail here, not test nothing."""
    found_ops = {op.name for op in OPS}
    assert found_ops == set(OP_NAMES), f"expected OpInfos {sorted(OP_NAMES)}, torch has {sorted(found_ops)}"
    found = {m.module_cls.__name__ for m in MODULES}
    expected = set(MODULE_NAMES) - {"SyncBatchNorm"}          # torch 2.13 has no ModuleInfo for SyncBatchNorm
    assert expected <= found, f"expected ModuleInfos for {sorted(expected)}, torch has {sorted(found)}"
    assert sorted(_op_id(op) for op in OPS) == sorted(
        ["batch_norm", "batch_norm.without_cudnn", "instance_norm", "layer_norm", "group_norm", "rms_norm"])


# --------------------------------------------------------------------------- deliberate differences

# Every place where normlib does not do what torch 2.13 does, on purpose: what, and the test that
# pins it. Each is a row of normlib/README.md's table (test_the_librarys_readme_lists_every_difference). The ones
# torch's own databases run into are expected failures here (_check); the others are pinned by
# tests that assert both sides.
DIFFERENCES = {
    "instance-norm-empty-batch-running-stats": (
        "torch turns InstanceNorm's running statistics into NaN on an empty batch (its average of zero "
        "per-instance statistics is 0/0); normlib leaves them unchanged, as both do for BatchNorm",
        "tests/library/test_functional.py::test_zero_size_inputs[instance]"),
    "instance-norm-empty-batch-affine": (
        "torch raises an internal IndexError for instance_norm with weight or bias on an empty batch; "
        "normlib returns the empty output",
        "tests/library/test_functional.py::test_instance_norm_on_an_empty_batch_with_affine"),
    "group-norm-bias-without-weight-backward": (
        "torch's group_norm backward fails when bias is given without weight; normlib's works",
        "tests/library/test_functional.py::test_group_norm_backward_with_bias_and_no_weight"),
    "group-norm-forward-ad-channels-last": (
        "torch's group_norm forward-mode AD fails on a channels_last input (it views the strided tangent: "
        "'view size is not compatible with input tensor's size and stride'); normlib's gives the tangent",
        "tests/library/test_torch_suite.py::test_memory_format_forward_ad[GroupNorm-modules-train]"),
    "memory-format-not-tested-by-torch": (
        "torch's ModuleInfo skips test_memory_format for LayerNorm and InstanceNorm1d/2d/3d (torch returns a "
        "contiguous output, gradient and tangent for a channels_last input); normlib's output and tangent "
        "keep the input's memory format, as torch's BatchNorm and GroupNorm do",
        "tests/library/test_torch_suite.py::test_memory_format[LayerNorm-modules-train]"),
    "batch-norm-empty-input-checks": (
        "torch's batch_norm checks nothing on an input with no elements (an integer dtype and running "
        "statistics of the wrong size pass; a 1-D one with a weight of size 0 fails with an internal "
        "IndexError); normlib checks an empty input as any other",
        "tests/library/test_functional.py::test_batch_norm_checks_an_empty_input"),
    "error-words": (
        "two of torch's error messages are not copied at the start of normlib's: a 1-D input to batch_norm "
        "(torch: 'running_mean should contain 0 elements not 3') and a normalized_shape that is not ints "
        "(torch's argument parser's words); the exception types are torch's",
        "tests/library/test_errors.py::test_every_case_has_torch_words_or_a_reason"),
    "autograd-functions-under-torch-func": (
        "normlib.autograd's Functions keep the classic forward(ctx, ...) form of chapter 7, so torch.func's "
        "transforms (jvp, grad, vmap) refuse them; forward mode works through torch.autograd.forward_ad",
        "tests/library/test_autograd.py::test_hand_derived_functions_under_torch_func"),
}


HEADING = "## Where it differs from torch 2.13 on purpose"


def test_the_librarys_readme_lists_every_difference():
    """normlib/README.md's table of deliberate differences names the pinning test of each."""
    readme = (Path(__file__).resolve().parents[2] / "normlib" / "README.md").read_text(encoding="utf-8")
    assert HEADING in readme
    after = readme.split(HEADING, 1)[1].splitlines()
    start = next(i for i, line in enumerate(after) if line.startswith("|"))
    table = "\n".join(itertools.takewhile(lambda line: line.startswith("|"), after[start:]))
    missing = [key for key, (_, test_id) in DIFFERENCES.items() if f"`{test_id}`" not in table]
    assert not missing, f"normlib/README.md's table of differences has no row pinned by the test of {missing}"


def _check(check, difference: Optional[str]) -> None:
    """Run ``check()``. Where normlib differs from torch on purpose (``difference``, a key of
    :data:`DIFFERENCES`) the check must fail, and the test is an expected failure; should it pass
    (torch changed), the test fails, so that the difference and normlib/README.md's table are revisited."""
    if difference is None:
        check()
        return
    try:
        check()
    except (AssertionError, RuntimeError):
        differs = True
    else:
        differs = False
    # (outside the except block: the expected failure carries no traceback to format)
    if differs:
        pytest.xfail(f"{difference}: {DIFFERENCES[difference][0]}")
    pytest.fail(f"normlib and torch now agree where DIFFERENCES[{difference!r}] says they differ: update it and "
                f"normlib/README.md's table", pytrace=False)


# --------------------------------------------------------------------------- helpers

def _fresh(t):
    """A new leaf with the same values (and requires_grad) as ``t``; anything else as it is."""
    if isinstance(t, Tensor):
        return t.detach().clone().requires_grad_(t.requires_grad)
    if isinstance(t, (list, tuple)):
        return type(t)(_fresh(v) for v in t)
    return t


def _bind(fn_name: str, sample) -> Dict[str, object]:
    """The sample's arguments by name, as normlib's (and torch's) signature names them."""
    bound = inspect.signature(getattr(NF, fn_name)).bind(sample.input, *sample.args, **sample.kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def raised(call):
    try:
        return None, call()
    except Exception as error:   # noqa: BLE001 - the test compares what each library raises
        return error, None


GRAD_NAMES = ("input", "weight", "bias")


def _forward_and_grads(fn, args: Dict[str, object], upstream: Optional[Tensor]):
    """Call ``fn(**args)`` and, when ``upstream`` is given, differentiate Σ out·upstream with
    respect to input, weight and bias (those that require grad)."""
    out = fn(**args)
    leaves = {k: args[k] for k in GRAD_NAMES if isinstance(args.get(k), Tensor) and args[k].requires_grad}
    if upstream is None or not leaves or not out.requires_grad:
        return out, {}
    grads = torch.autograd.grad((out * upstream).sum(), list(leaves.values()), allow_unused=True)
    return out, {k: (torch.zeros_like(v) if g is None else g) for (k, v), g in zip(leaves.items(), grads)}


class _Scales:
    """Which statistic normalizes each element, for the tolerance: labels of the groups (batch
    statistics) or the running statistics (evaluation)."""

    def __init__(self, labels=None, eps=0.0, centered=True, channel_of=None, running=None, count=None):
        self.labels, self.eps, self.centered, self.channel_of = labels, eps, centered, channel_of
        self.running, self.count = running, count


def _op_scales(fn_name: str, args) -> _Scales:
    x = args["input"]
    if fn_name in ("layer_norm", "rms_norm"):
        shape = axes.as_normalized_shape(args["normalized_shape"])
        s = axes.layer_norm_axes(x.shape, shape)
        eps = args["eps"] if args["eps"] is not None else torch.finfo(compute_dtype(x.dtype)).eps
        return _Scales(labels(s), eps, fn_name == "layer_norm")
    if fn_name == "group_norm":
        return _Scales(labels(axes.group_norm_axes(x.shape, args["num_groups"])), args["eps"], True, 1)
    uses_batch = args["training"] if fn_name == "batch_norm" else args["use_input_stats"]
    if not uses_batch:
        return _Scales(running=(args["running_mean"], args["running_var"]), eps=args["eps"])
    s = axes.batch_norm_axes(x.shape) if fn_name == "batch_norm" else axes.instance_norm_axes(x.shape)
    return _Scales(labels(s), args["eps"], True, 1, count=s.count)


def _compare(ours, theirs, x, weight, bias, upstream, scales: _Scales, what: str):
    inp = Inputs(x.detach(), None if weight is None else weight.detach(), None if bias is None else bias.detach(),
                 upstream)
    if scales.running is not None:
        rm, rv = scales.running
        grads_o, grads_t = dict(ours[1]), dict(theirs[1])
        grads_o.setdefault("input", torch.zeros_like(x)), grads_t.setdefault("input", torch.zeros_like(x))
        compare_eval((ours[0], grads_o), (theirs[0], grads_t), inp, rm, rv, scales.eps, what)
    else:
        compare(ours, theirs, inp, scales.labels, scales.eps, scales.centered, scales.channel_of, what)
    assert set(ours[1]) == set(theirs[1]), f"{what}: gradients for {sorted(ours[1])}, torch's for {sorted(theirs[1])}"


def _tangent_allowance(x: Tensor, weight, tangents: Dict[str, Tensor], scales: _Scales) -> Tensor:
    """How far two forward-mode derivatives may differ. ẏ = γ·r·(ẋ − mean ẋ − x̂·mean(x̂ẋ)) + γ̇·x̂ + β̇:
    each term with the rounding of x̂ (u·κ) on top of the base tolerance."""
    dtype = x.dtype
    base, u, K = BASE_TOL[dtype], roundoff(dtype), ROUNDING_FACTOR
    if scales.running is not None:
        rm, rv = scales.running
        view = (1, -1) + (1,) * (x.dim() - 2)
        sigma = (rv.double() + scales.eps).sqrt().reshape(view).expand(x.shape)
        mu = rm.double().reshape(view).expand(x.shape)
        big = x.detach().double().abs()
    else:
        big, mu, sigma, _ = group_scales(x, scales.labels, scales.eps, scales.centered)
    valid = torch.isfinite(sigma) & (sigma > 0)
    safe = torch.where(valid, sigma, torch.ones_like(sigma))
    kappa = torch.where(valid, (big + mu.abs()) / safe, torch.zeros_like(sigma))
    top = lambda t: float(t.detach().double().abs().max()) if t is not None and t.numel() else 0.0
    gamma = top(weight) if weight is not None else 1.0
    allowance = (base + K * u * kappa) * (4 * gamma * top(tangents.get("input")) / safe
                                         + top(tangents.get("weight")) * (1 + kappa) + top(tangents.get("bias")))
    return torch.where(valid, allowance, torch.full_like(allowance, float("inf")))


def _jvp(fn, args: Dict[str, object], tangents: Dict[str, Tensor]):
    """Forward-mode derivative of ``fn(**args)`` along ``tangents`` (input, weight, bias): the
    output, its tangent, and which running statistics came out with a tangent (none should)."""
    with fwAD.dual_level():
        dual = dict(args)
        for k, t in tangents.items():
            dual[k] = fwAD.make_dual(args[k].detach(), t)
        out = fn(**dual)
        primal, tangent = fwAD.unpack_dual(out)
        with_tangent = [k for k in ("running_mean", "running_var")
                        if isinstance(args.get(k), Tensor) and fwAD.unpack_dual(args[k]).tangent is not None]
        return primal.detach(), (torch.zeros_like(primal) if tangent is None else tangent.detach()), with_tangent


def _each(items, check) -> None:
    """``check(name, item)`` for every ``(name, item)``; every failure is collected, then all are
    reported together (one test runs all the samples of one OpInfo or ModuleInfo)."""
    failures, count = [], 0
    for name, item in items:
        count += 1
        try:
            check(name, item)
        except Exception as error:   # noqa: BLE001 - reported below, with the sample's name
            failures.append(f"- {name}: {type(error).__name__}: {error}")
    assert count, "torch's database gave no inputs here"
    if failures:
        raise AssertionError(f"{len(failures)} of {count} differ from torch:\n" + "\n".join(failures))


# --------------------------------------------------------------------------- OpInfo sample inputs

def _with_hand_derived(label: str, library, name: str) -> list:
    """(label, ``library.name``), then ("autograd", ``normlib.autograd.name``) where chapter 7's
    hand-derived backward has one."""
    return [(label, getattr(library, name))] + ([("autograd", getattr(A, name))] if hasattr(A, name) else [])


def _implementations(fn_name: str):
    return _with_hand_derived("functional", NF, fn_name)


_SAMPLE_CACHE: Dict[tuple, list] = {}


def _samples(op, dtype) -> list:
    """The OpInfo's sample inputs, then its further reference inputs (which begin with the samples).

    The generator functions are called directly: ``op.sample_inputs`` wraps them in torch's
    input tracker, which inspects the whole call stack for every call (seconds under pytest)."""
    key = (op.name, op.variant_test_name, dtype)
    if key not in _SAMPLE_CACHE:
        torch.manual_seed(0)
        samples = list(op.sample_inputs_func(op, "cpu", dtype, op.supports_autograd))
        if op.reference_inputs_func is not None:
            samples += list(op.reference_inputs_func(op, "cpu", dtype, op.supports_autograd))[len(samples):]
        _SAMPLE_CACHE[key] = samples
    return _SAMPLE_CACHE[key]


def _op_cases(only_forward_ad: bool = False):
    return [pytest.param(op, impl, dtype, id=f"{_op_id(op)}-{impl}-{str(dtype)[6:]}")
            for op in OPS if op.supports_forward_ad or not only_forward_ad
            for impl, _ in _implementations(OP_NAMES[op.name]) for dtype in DTYPES]


def _named_samples(op, dtype):
    return [(f"sample {i} {tuple(s.input.shape)}", s) for i, s in enumerate(_samples(op, dtype))]


@pytest.mark.parametrize("op, impl, dtype", _op_cases())
def test_sample_inputs(op, impl, dtype):
    """Output, gradients and updated running statistics of every sample, as torch's."""
    fn_name = OP_NAMES[op.name]
    ours_fn = dict(_implementations(fn_name))[impl]

    def check(what, sample):
        args = _bind(fn_name, sample)
        x = args["input"]
        theirs_args = _fresh(args)
        theirs_error, theirs = raised(lambda: _forward_and_grads(op.op, theirs_args, None))
        upstream = None
        if theirs_error is None and op.supports_autograd:
            # the upstream gradient has the output's shape, known once torch has run
            gen = torch.Generator().manual_seed(x.numel())
            upstream = torch.randn(theirs[0].shape, generator=gen, dtype=torch.float64).to(dtype)
            theirs_args = _fresh(args)
            theirs = _forward_and_grads(op.op, theirs_args, upstream)
        ours_args = _fresh(args)
        ours_error, ours = raised(lambda: _forward_and_grads(ours_fn, ours_args, upstream))
        if theirs_error is not None:
            assert ours_error is not None, f"torch raises {theirs_error!r}, normlib returns a result"
            assert isinstance(ours_error, type(theirs_error)), (
                f"torch raises {type(theirs_error).__name__}, normlib {type(ours_error).__name__}: {ours_error}")
            return
        assert ours_error is None, f"torch returns a result, normlib raises {ours_error!r}"
        if x.dim() < 2:
            # batch_norm's 1-D empty input: torch returns an empty tensor of the input's shape and dtype
            assert (ours[0].shape, ours[0].dtype) == (theirs[0].shape, theirs[0].dtype), (
                f"normlib gives {tuple(ours[0].shape)} {ours[0].dtype}, torch {tuple(theirs[0].shape)} "
                f"{theirs[0].dtype}")
            assert set(ours[1]) == set(theirs[1])
            return
        scales = _op_scales(fn_name, args)
        _compare(ours, theirs, x, args.get("weight"), args.get("bias"),
                 upstream if upstream is not None else torch.zeros(theirs[0].shape, dtype=dtype), scales, what)
        if not isinstance(args.get("running_mean"), Tensor):
            return
        if scales.running is None and x.numel():      # updated from the batch
            compare_running((ours_args["running_mean"], ours_args["running_var"]),
                             (theirs_args["running_mean"], theirs_args["running_var"]),
                             Inputs(x.detach(), None, None, torch.zeros_like(x)), scales.labels, scales.eps,
                             args["momentum"], scales.count, f"{what} running statistics")
        else:                                         # evaluation, or an empty batch: untouched
            for name in ("running_mean", "running_var"):
                assert torch.equal(ours_args[name], theirs_args[name]), f"{name} differs from torch's"

    _each(_named_samples(op, dtype), check)


@pytest.mark.parametrize("op, impl, dtype", _op_cases(only_forward_ad=True))
def test_forward_ad(op, impl, dtype):
    """jvp of every sample along random tangents of input, weight and bias (running statistics carry
    none, and get none), as torch's."""
    fn_name = OP_NAMES[op.name]
    ours_fn = dict(_implementations(fn_name))[impl]

    def check(what, sample):
        args = _bind(fn_name, sample)
        x = args["input"]
        gen = torch.Generator().manual_seed(x.numel())
        tangents = {k: torch.randn(args[k].shape, generator=gen, dtype=torch.float64).to(args[k].dtype)
                    for k in GRAD_NAMES if isinstance(args.get(k), Tensor) and args[k].is_floating_point()}
        ours_args, theirs_args = _fresh(args), _fresh(args)
        theirs_error, theirs = raised(lambda: _jvp(op.op, theirs_args, tangents))
        ours_error, ours = raised(lambda: _jvp(ours_fn, ours_args, tangents))
        if theirs_error is not None:
            assert ours_error is not None and isinstance(ours_error, type(theirs_error)), (
                f"torch raises {theirs_error!r}, normlib {ours_error!r}")
            return
        assert ours_error is None, f"torch returns a result, normlib raises {ours_error!r}"
        assert (ours[1].shape, ours[1].dtype) == (theirs[1].shape, theirs[1].dtype)
        assert ours[2] == theirs[2] == [], f"running statistics with a tangent: normlib {ours[2]}, torch {theirs[2]}"
        if x.dim() >= 2:
            allowance = _tangent_allowance(x, args.get("weight"), tangents, _op_scales(fn_name, args))
            assert_close_elementwise(ours[1], theirs[1], allowance, f"{what} tangent", BASE_TOL[dtype])

    _each(_named_samples(op, dtype), check)


# --------------------------------------------------------------------------- OpInfo error inputs

_ERROR_CACHE: Dict[tuple, list] = {}


def _errors(op) -> list:
    key = (op.name, op.variant_test_name)
    if key not in _ERROR_CACHE:
        _ERROR_CACHE[key] = list(op.error_inputs_func(op, "cpu")) if op.error_inputs_func is not None else []
    return _ERROR_CACHE[key]


def _assert_raises_as_torch(call, error_type, error_regex) -> None:
    try:
        call()
    except Exception as error:   # noqa: BLE001 - compared with what torch raises
        assert isinstance(error, error_type), (
            f"torch raises {error_type.__name__} here, normlib {type(error).__name__}: {error}")
        assert error_regex is None or re.search(error_regex, str(error)), (
            f"normlib's message does not match torch's {error_regex!r}: {error}")
        return
    raise AssertionError(f"torch raises {error_type.__name__} ({error_regex!r}) here, normlib raises nothing")


@pytest.mark.parametrize("op, impl", [pytest.param(op, impl, id=f"{_op_id(op)}-{impl}")
                                      for op in OPS if _errors(op)
                                      for impl, _ in _implementations(OP_NAMES[op.name])])
def test_error_inputs(op, impl):
    """Every error input: torch's exception type (or a subclass), a message matching torch's regex."""
    fn = dict(_implementations(OP_NAMES[op.name]))[impl]

    def check(_, error):
        s = error.sample_input
        _assert_raises_as_torch(lambda: fn(s.input, *s.args, **s.kwargs), error.error_type, error.error_regex)

    _each([(f"error input {i} ({e.error_regex!r})", e) for i, e in enumerate(_errors(op))], check)


# --------------------------------------------------------------------------- ModuleInfo inputs

def _normlib_modules(cls_name: str):
    return _with_hand_derived("modules", normlib, cls_name)


_MODULE_INPUT_CACHE: Dict[tuple, list] = {}


def _module_inputs(info, dtype, training) -> list:
    key = (info.name, dtype, training)
    if key not in _MODULE_INPUT_CACHE:
        torch.manual_seed(0)
        _MODULE_INPUT_CACHE[key] = list(info.module_inputs_func(info, device="cpu", dtype=dtype,
                                                                requires_grad=True, training=training))
    return _MODULE_INPUT_CACHE[key]


def _named_module_inputs(info, dtype, training, keep=lambda x: True):
    named = []
    for i, mi in enumerate(_module_inputs(info, dtype, training)):
        (x,) = mi.forward_input.args
        if keep(x):
            named.append((f"{mi.desc or i} {tuple(x.shape)}", (i, mi)))
    return named


def _module_cases(dtypes=DTYPES):
    return [pytest.param(info, impl, dtype, training,
                         id=f"{info.module_cls.__name__}-{impl}-{str(dtype)[6:]}-{'train' if training else 'eval'}")
            for info in MODULES for impl, _ in _normlib_modules(info.module_cls.__name__)
            for dtype in dtypes for training in (True, False)]


def _randomize(module, gen):
    """Random γ, β, running statistics and batch count: ones and zeros hide bugs."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            p.copy_(torch.rand(p.shape, generator=gen, dtype=torch.float64) + 0.5 if name == "weight"
                    else torch.randn(p.shape, generator=gen, dtype=torch.float64))
        for name, b in module.named_buffers():
            if name == "running_mean":
                b.copy_(torch.randn(b.shape, generator=gen, dtype=torch.float64))
            elif name == "running_var":
                b.copy_(torch.rand(b.shape, generator=gen, dtype=torch.float64) + 0.5)
            elif name == "num_batches_tracked":
                b.fill_(3)


def _build(info, impl_cls, mi, dtype, training, gen):
    """torch's module (random state) and normlib's, built with the same arguments, given torch's state_dict."""
    args, kwargs = mi.constructor_input.args, mi.constructor_input.kwargs
    theirs = info.module_cls(*args, **kwargs).to(dtype)
    _randomize(theirs, gen)
    ours = impl_cls(*args, **kwargs).to(dtype)
    ours.load_state_dict(theirs.state_dict(), strict=True)
    return ours.train(training), theirs.train(training)


def _module_scales(module, x: Tensor, training: bool) -> _Scales:
    """The statistics each element is normalized with (x batched: InstanceNorm's (C, …) unsqueezed)."""
    name = type(module).__name__
    if name in ("LayerNorm", "RMSNorm"):
        eps = module.eps if module.eps is not None else torch.finfo(compute_dtype(x.dtype)).eps
        return _Scales(labels(axes.layer_norm_axes(x.shape, module.normalized_shape)), eps, name == "LayerNorm")
    if name == "GroupNorm":
        return _Scales(labels(axes.group_norm_axes(x.shape, module.num_groups)), module.eps, True, 1)
    if training or not module.track_running_stats:
        s = axes.batch_norm_axes(x.shape) if name.startswith("BatchNorm") else axes.instance_norm_axes(x.shape)
        return _Scales(labels(s), module.eps, True, 1, count=s.count)
    return _Scales(running=(module.running_mean.detach().clone(), module.running_var.detach().clone()),
                   eps=module.eps)


def _run_module(module, x: Tensor, upstream: Tensor):
    """Output, and the gradients of Σ output·upstream for the input and every parameter."""
    x = x.detach().clone().requires_grad_(True)
    out = module(x)
    params = dict(module.named_parameters())
    leaves = [x] + list(params.values())
    grads = (torch.autograd.grad((out * upstream).sum(), leaves, allow_unused=True) if out.requires_grad
             else [None] * len(leaves))
    names = ["input"] + list(params)
    return out.detach(), {n: (torch.zeros_like(t) if g is None else g) for n, t, g in zip(names, leaves, grads)}


@pytest.mark.parametrize("info, impl, dtype, training", _module_cases())
def test_module_inputs(info, impl, dtype, training):
    """Every module input: normlib's module with torch's constructor arguments and state_dict gives
    torch's output, gradients (input and parameters), running statistics and num_batches_tracked.
    In training mode twice, so that the first step's running statistics feed the second."""
    name = info.module_cls.__name__
    impl_cls = dict(_normlib_modules(name))[impl]

    def check(what, item):
        index, mi = item
        gen = torch.Generator().manual_seed(index)
        ours, theirs = _build(info, impl_cls, mi, dtype, training, gen)
        (x,) = mi.forward_input.args
        before = {k: v.clone() for k, v in theirs.state_dict().items()}
        unbatched = name.startswith("InstanceNorm") and x.dim() == ours._allowed_dims[0]
        batched = (lambda t: t.unsqueeze(0)) if unbatched else (lambda t: t)
        for step in range(2 if training else 1):
            upstream = torch.randn(x.shape, generator=gen, dtype=torch.float64).to(dtype)
            xs = x.detach() * (1 + step)
            scales = _module_scales(theirs, batched(xs), training)
            o, t = _run_module(ours, xs, upstream), _run_module(theirs, xs, upstream)
            as_batch = lambda r: (batched(r[0]), {k: (batched(v) if k == "input" else v) for k, v in r[1].items()})
            params = dict(theirs.named_parameters())
            _compare(as_batch(o), as_batch(t), batched(xs), params.get("weight"), params.get("bias"),
                     batched(upstream), scales, f"step {step}")
            sd_o, sd_t = ours.state_dict(), theirs.state_dict()
            assert list(sd_o) == list(sd_t), f"state_dict keys {list(sd_o)}, torch's {list(sd_t)}"
            if "num_batches_tracked" in sd_t:
                assert torch.equal(sd_o["num_batches_tracked"], sd_t["num_batches_tracked"]), (
                    f"step {step}: num_batches_tracked {int(sd_o['num_batches_tracked'])}, "
                    f"torch's {int(sd_t['num_batches_tracked'])}")
            if "running_mean" not in sd_t:
                continue
            if training and xs.numel():
                momentum = theirs.momentum
                if momentum is None:      # BatchNorm's cumulative average; InstanceNorm takes it as 0
                    momentum = 1.0 / float(sd_t["num_batches_tracked"]) if name.startswith("BatchNorm") else 0.0
                compare_running((sd_o["running_mean"], sd_o["running_var"]),
                                 (sd_t["running_mean"], sd_t["running_var"]), Inputs(batched(xs), None, None, upstream),
                                 scales.labels, scales.eps, momentum, scales.count, f"step {step} running statistics")
            else:
                for k in ("running_mean", "running_var"):
                    assert torch.equal(sd_o[k], sd_t[k]), f"{k} differs from torch's"
                    assert torch.equal(sd_t[k], before[k]), f"torch changed {k} (eval mode or an empty batch)"

    _each(_named_module_inputs(info, dtype, training), check)


# --------------------------------------------------------------------------- memory format

def _memory_format_skipped(info) -> bool:
    """Whether torch's ModuleInfo skips its own test_memory_format on the CPU."""
    for d in info.decorators:
        if getattr(d, "test_name", None) != "test_memory_format" or getattr(d, "cls_name", None) != "TestModule":
            continue
        if getattr(d, "device_type", None) not in (None, "cpu") or getattr(d, "active_if", True) is not True:
            continue
        if any("skip" in getattr(f, "__qualname__", "") for f in d.decorators):
            return True
    return False


def _memory_format_cases(forward_ad: bool):
    cases = []
    for info in MODULES:
        name = info.module_cls.__name__
        difference = None
        if _memory_format_skipped(info):
            difference = "memory-format-not-tested-by-torch"
        elif forward_ad and name == "GroupNorm":
            difference = "group-norm-forward-ad-channels-last"
        if not _named_module_inputs(info, torch.float32, True, _is_spatial):
            continue
        for impl, _ in _normlib_modules(name):
            for training in (True, False):
                cases.append(pytest.param(info, impl, training, difference,
                                          id=f"{name}-{impl}-{'train' if training else 'eval'}"))
    return cases


def _is_spatial(x: Tensor) -> bool:
    return x.dim() in (4, 5) and x.numel() > 0


def _channels_last_modules(info, impl, training, index, mi):
    gen = torch.Generator().manual_seed(index)
    ours, theirs = _build(info, dict(_normlib_modules(info.module_cls.__name__))[impl], mi, torch.float32,
                          training, gen)
    (x,) = mi.forward_input.args
    fmt = torch.channels_last if x.dim() == 4 else torch.channels_last_3d
    return ours, theirs, x.detach().contiguous(memory_format=fmt), fmt, gen


@pytest.mark.parametrize("info, impl, training, difference", _memory_format_cases(forward_ad=False))
def test_memory_format(info, impl, training, difference):
    """A channels_last input gives a channels_last output and input gradient, as in torch, whatever
    the memory format of the gradient from above."""

    def check(what, item):
        ours, theirs, x, fmt, gen = _channels_last_modules(info, impl, training, *item)
        for up_fmt in (torch.contiguous_format, fmt):
            upstream = torch.randn(x.shape, generator=gen).contiguous(memory_format=up_fmt)
            (yo, go), (yt, gt) = _run_module(ours, x, upstream), _run_module(theirs, x, upstream)
            for part, o, t in (("output", yo, yt), ("input gradient", go["input"], gt["input"])):
                assert o.is_contiguous(memory_format=fmt) == t.is_contiguous(memory_format=fmt), (
                    f"{part} for a {fmt} input (upstream {up_fmt}): normlib's strides {o.stride()}, "
                    f"torch's {t.stride()}")

    _check(lambda: _each(_named_module_inputs(info, torch.float32, training, _is_spatial), check), difference)


@pytest.mark.parametrize("info, impl, training, difference", _memory_format_cases(forward_ad=True))
def test_memory_format_forward_ad(info, impl, training, difference):
    """A channels_last input's forward-mode tangent is channels_last, as in torch."""

    def check(what, item):
        ours, theirs, x, fmt, gen = _channels_last_modules(info, impl, training, *item)
        for tangent_fmt in (torch.contiguous_format, fmt):
            tangent = torch.randn(x.shape, generator=gen).contiguous(memory_format=tangent_fmt)
            with fwAD.dual_level():
                to = fwAD.unpack_dual(ours(fwAD.make_dual(x, tangent))).tangent
                tt = fwAD.unpack_dual(theirs(fwAD.make_dual(x, tangent))).tangent
            assert to.is_contiguous(memory_format=fmt) == tt.is_contiguous(memory_format=fmt), (
                f"tangent for a {fmt} input (tangent {tangent_fmt}): normlib's strides {to.stride()}, "
                f"torch's {tt.stride()}")

    _check(lambda: _each(_named_module_inputs(info, torch.float32, training, _is_spatial), check), difference)


# --------------------------------------------------------------------------- gradcheck, gradgradcheck, forward AD

_MODULE_OP = {"BatchNorm": "batch_norm", "InstanceNorm": "instance_norm", "LayerNorm": "layer_norm",
              "GroupNorm": "group_norm", "RMSNorm": "rms_norm"}


def _op_of(info):
    """The OpInfo of the functional a module calls: what forward-mode AD torch supports there."""
    fn_name = next(v for k, v in _MODULE_OP.items() if info.module_cls.__name__.startswith(k))
    return next(op for op in OPS if OP_NAMES[op.name] == fn_name)


def _functional_of(module):
    names = [n for n, _ in module.named_parameters()]

    def f(x, *params):
        return torch.func.functional_call(module, dict(zip(names, params)), (x,))
    return f, [p.detach().clone().requires_grad_(True) for _, p in module.named_parameters()]


@pytest.mark.parametrize("info, impl, dtype, training", _module_cases(dtypes=(torch.float64,)))
def test_module_gradcheck(info, impl, dtype, training):
    """gradcheck (with forward-mode AD where torch's OpInfo supports it) and gradgradcheck (with
    forward-over-reverse where supported) on every module input of up to 400 elements, float64."""
    op = _op_of(info)
    impl_cls = dict(_normlib_modules(info.module_cls.__name__))[impl]

    def check(what, item):
        index, mi = item
        ours, _ = _build(info, impl_cls, mi, dtype, training, torch.Generator().manual_seed(index))
        f, params = _functional_of(ours)
        (x,) = mi.forward_input.args
        inputs = (x.detach().clone().requires_grad_(True), *params)
        assert gradcheck(f, inputs, fast_mode=True, check_forward_ad=op.supports_forward_ad,
                         check_batched_grad=False, check_undefined_grad=False)
        if info.supports_gradgrad and op.supports_gradgrad:
            assert gradgradcheck(f, inputs, fast_mode=True, check_fwd_over_rev=op.supports_fwgrad_bwgrad,
                                 check_batched_grad=False, check_undefined_grad=False)

    # the large-batch inputs are left out: their numerical Jacobians cost seconds and test nothing new
    _each(_named_module_inputs(info, dtype, training, lambda x: x.numel() <= 400), check)


# --------------------------------------------------------------------------- ModuleInfo error inputs

def _module_errors(info, training) -> list:
    if info.module_error_inputs_func is None:
        return []
    return list(info.module_error_inputs_func(info, device="cpu", dtype=torch.float32, requires_grad=False,
                                              training=training))


@pytest.mark.parametrize("info, impl, training",
                         [pytest.param(info, impl, training,
                                       id=f"{info.module_cls.__name__}-{impl}-{'train' if training else 'eval'}")
                          for info in MODULES if _module_errors(info, True)
                          for impl, _ in _normlib_modules(info.module_cls.__name__) for training in (True, False)])
def test_module_error_inputs(info, impl, training):
    """Every module error input, raised where torch raises it: when the module is built, or at its
    forward pass (built and called in training mode, as torch's own test does)."""
    cls = dict(_normlib_modules(info.module_cls.__name__))[impl]

    def check(_, error):
        mi = error.module_error_input
        args, kwargs = mi.constructor_input.args, mi.constructor_input.kwargs
        if error.error_on == ModuleErrorEnum.CONSTRUCTION_ERROR:
            _assert_raises_as_torch(lambda: cls(*args, **kwargs), error.error_type, error.error_regex)
        else:
            module = cls(*args, **kwargs)
            _assert_raises_as_torch(lambda: module(*mi.forward_input.args, **mi.forward_input.kwargs),
                                    error.error_type, error.error_regex)

    _each([(f"error input {i} ({e.error_regex!r}, {e.error_on})", e)
           for i, e in enumerate(_module_errors(info, training))], check)
