"""The guard: while a student's code runs under a checker, a call to a reference implementation of
what the task asks is recorded, and the task fails with a message that names the call.

The reference implementations:

* torch's normalization functions: ``torch.nn.functional.layer_norm``, ``batch_norm``,
  ``group_norm``, ``instance_norm``, ``rms_norm``; every builtin of torch with one of those names
  in its own (``torch.layer_norm``, ``torch.native_layer_norm``, ``torch.batch_norm_stats``, …);
  the operators ``torch.ops.aten.*`` of those names; torch's Python references of them
  (``torch._refs``, ``torch._decomp``);
* torch's normalization modules: the ``forward`` of ``torch.nn.LayerNorm``, ``RMSNorm``,
  ``GroupNorm``, ``BatchNorm1d/2d/3d``, ``InstanceNorm1d/2d/3d`` (and their ``Lazy`` forms),
  ``SyncBatchNorm``, also when inherited or reached through ``super()``;
* the book's library: any function of the modules directly in ``normlib/``
  (``normlib.functional``, ``modules``, ``autograd``, ``stats``, ``axes``, ``fold``, …);
* torch's BatchNorm folding: ``torch.nn.utils.fusion.fuse_conv_bn_eval``, ``fuse_conv_bn_weights``,
  ``fuse_linear_bn_eval``, ``fuse_linear_bn_weights`` (the fold task, :mod:`.fold`);
* in the backward task only (``Watch(autograd=True)``): torch's autograd called from the
  student's code (``torch.autograd.grad``, ``torch.autograd.backward``, ``Tensor.backward``,
  ``torch.autograd.functional``, ``torch.autograd.forward_ad``, ``torch.func``'s transforms).
  The checker's own ``torch.autograd.grad`` on the student's output stays allowed: a call is
  the student's when the nearest caller outside torch is not this package.

How: :func:`sys.setprofile` for the duration of the student's call. The start of a Python
function (``"call"``) is classified by its code object (once; the verdict is cached); a
builtin's call (``"c_call"``) is looked up in a table. The first forbidden call is recorded and
the profiler removed at once; the previous one is restored on exit. Helpers such as
``torch.mean``, ``x.var(unbiased=False)``, ``torch.rsqrt`` or ``torch.nn.functional.normalize``
are not normalization layers and stay allowed.

What it cannot see: code that never passes through Python's call events (a torch builtin called
from C, e.g. through ``functools.partial`` or ``map``; TorchScript or compiled code; a C++
extension), other threads and processes, and code copied from the book or from torch's sources:
that is for the course's honour code.
"""

from __future__ import annotations

import inspect
import os
import sys
from typing import Dict, Optional, Tuple

import torch
import torch._ops
import torch.autograd.forward_ad
import torch.autograd.functional
import torch.autograd.graph
import torch.func
import torch.nn.utils.fusion
from torch.autograd.function import BackwardCFunction

import normlib

STEMS = ("layer_norm", "batch_norm", "group_norm", "instance_norm", "rms_norm")
_TORCH = os.path.dirname(torch.__file__) + os.sep                  # as torch's code objects name their files
_HERE = os.path.dirname(__file__)                          # classroom/normlib_classroom: the checkers
_LIBRARY = os.path.dirname(normlib.__file__)              # normlib: the core library's modules
_NORM_MODULES = ("torch.nn.modules.batchnorm", "torch.nn.modules.normalization", "torch.nn.modules.instancenorm")

Verdict = Optional[Tuple[str, object]]   # (kind, detail) or None: allowed


def _is_norm(name: str) -> bool:
    return any(stem in name for stem in STEMS)


def _code(fn):
    return getattr(inspect.unwrap(fn), "__code__", None)


def _special() -> Dict[int, Tuple[object, Tuple[str, object]]]:
    """id(code) → (code, verdict) for the code objects that are not judged by their file."""
    table = {}

    def add(fn, verdict):
        code = _code(fn)
        if code is not None and id(code) not in table:
            table[id(code)] = (code, verdict)

    modules = tuple(getattr(torch.nn, n) for n in dir(torch.nn)
                    if n.endswith(("Norm", "Norm1d", "Norm2d", "Norm3d")) and n != "LocalResponseNorm")
    for cls in modules:
        for owner in cls.__mro__:
            if owner.__module__ in _NORM_MODULES and "forward" in vars(owner):
                add(vars(owner)["forward"], ("module", (modules, cls)))      # cls: the first public user
    for cls in (torch._ops.OpOverload, torch._ops.OpOverloadPacket, getattr(torch._ops, "TorchBindOpOverload", None)):
        if cls is not None and "__call__" in vars(cls):
            add(vars(cls)["__call__"], ("op", None))
    autograd = {"torch.autograd.grad": torch.autograd.grad, "torch.autograd.backward": torch.autograd.backward,
                "torch.Tensor.backward": torch.Tensor.backward,
                "torch.autograd": getattr(torch.autograd.graph, "_engine_run_backward", None)}
    for space, names in ((torch.autograd.functional, ("vjp", "jvp", "jacobian", "hessian", "vhp", "hvp")),
                         (torch.autograd.forward_ad, ("make_dual", "unpack_dual", "enter_dual_level")),
                         (torch.func, ("grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian",
                                       "linearize"))):
        autograd.update({f"{space.__name__}.{n}": getattr(space, n, None) for n in names})
    for name, fn in autograd.items():
        if fn is not None:
            add(fn, ("autograd", name))
    for name in ("fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"):
        fn = getattr(torch.nn.utils.fusion, name, None)
        if fn is not None:
            add(fn, ("torch", None))             # named like torch's normalization functions: module.function
    for fn in (BackwardCFunction.apply, getattr(BackwardCFunction, "apply_boxed", None)):
        if fn is not None:
            add(fn, ("backward", None))          # the engine runs a custom Function's backward
    return table


def _builtins() -> Dict[object, Tuple[str, str]]:
    """The builtins whose call is judged at "c_call": torch's normalization kernels, the autograd engine."""
    table = {}
    for space, prefix in ((torch._C._VariableFunctions, "torch"), (torch._C._nn, "torch._C._nn")):
        for name in dir(space):
            if _is_norm(name) and callable(getattr(space, name, None)):
                table[getattr(space, name)] = ("builtin", f"{prefix}.{name}")
    table[torch.autograd.Variable._execution_engine.run_backward] = ("autograd", "torch.autograd")
    return table


_SPECIAL = _special()
_BUILTINS = _builtins()
_VERDICTS: Dict[int, Tuple[object, Verdict]] = {}      # id(code) → (code, verdict), the code kept alive


def _classify(code) -> Verdict:
    special = _SPECIAL.get(id(code))
    if special is not None and special[0] is code:
        return special[1]
    filename = code.co_filename
    if os.path.dirname(filename) == _LIBRARY:
        return ("library", None)
    if filename.startswith(_TORCH) and _is_norm(code.co_name):
        return ("torch", None)
    return None


def _function_name(frame) -> str:
    """``module.function`` or ``module.Class`` (``module.Class.method`` for other than forward/__init__);
    for a method, the class is the object's own (the first in its MRO from the method's package)."""
    code = frame.f_code
    module = frame.f_globals.get("__name__", "?")
    parts = getattr(code, "co_qualname", code.co_name).split(".<locals>")[0].split(".")
    if len(parts) > 1 and "self" in code.co_varnames[:1]:
        for cls in type(frame.f_locals.get("self")).__mro__:
            if cls.__module__.startswith(module.split(".")[0] + "."):
                module, parts = cls.__module__, [cls.__name__, parts[-1]]
                break
    if len(parts) > 1 and parts[-1] in ("forward", "__init__", "__call__", "__new__"):
        parts = parts[:-1]
    return ".".join([module] + parts)


def _module_name(frame, detail) -> str:
    """The public torch.nn class a normalization ``forward`` belongs to: ``torch.nn.BatchNorm1d``
    (the object's own; for ``nn.BatchNorm2d.forward(self, x)`` on another object, the first class
    that uses this ``forward``)."""
    modules, first = detail
    for cls in type(frame.f_locals.get("self")).__mro__:
        if cls in modules:
            return f"torch.nn.{cls.__name__}"
    return f"torch.nn.{first.__name__}"


def _op_name(frame) -> Optional[str]:
    """``torch.ops.aten.layer_norm`` (``.default``…) when the operator is a normalization, else None."""
    op = frame.f_locals.get("self")
    qualified = getattr(op, "_qualified_op_name", None) or getattr(op, "_name", None) or ""
    namespace, _, name = str(qualified).partition("::")
    if not _is_norm(name):
        return None
    overload = getattr(op, "_overloadname", None)
    return f"torch.ops.{namespace}.{name}" + (f".{overload}" if overload else "")


def _from_checker(frame) -> bool:
    """Is the nearest caller outside torch one of the checkers (this package)?"""
    while frame is not None and frame.f_code.co_filename.startswith(_TORCH):
        frame = frame.f_back
    return frame is not None and os.path.dirname(frame.f_code.co_filename) == _HERE


class Watch:
    """``with Watch(autograd) as watch: student(...)``; afterwards ``watch.found`` is ``None`` or
    ``(name of the first forbidden call, is it torch's autograd)``, and ``watch.backward_ran``
    tells whether the autograd engine ran a custom Function's backward meanwhile."""

    def __init__(self, autograd: bool = False):
        self.autograd = autograd
        self.found: Optional[Tuple[str, bool]] = None
        self.backward_ran = False
        self._previous = None
        self._hook = self._profile                 # one bound method: what is installed is what is removed

    def __enter__(self) -> "Watch":
        self._previous = sys.getprofile()
        if self._previous is None or callable(self._previous):
            sys.setprofile(self._hook)
        else:                                      # a C-level profiler (cProfile) runs: stand aside, claim nothing
            self.backward_ran = True
        return self

    def __exit__(self, *exc) -> bool:
        if sys.getprofile() is self._hook:
            sys.setprofile(self._previous)
        return False

    def _profile(self, frame, event, arg) -> None:
        try:
            if self._previous is not None:          # a Python profiler that was there still sees everything
                self._previous(frame, event, arg)
            if event == "call":
                code = frame.f_code
                entry = _VERDICTS.get(id(code))
                if entry is None or entry[0] is not code:
                    if len(_VERDICTS) > 100_000:    # a long session: forget, rather than keep every code object
                        _VERDICTS.clear()
                    entry = _VERDICTS[id(code)] = (code, _classify(code))
                if entry[1] is not None:
                    self._judge(entry[1], frame, frame.f_back)
            elif event == "c_call":
                verdict = _BUILTINS.get(arg)
                if verdict is not None:
                    self._judge(verdict, None, frame)
        except Exception:     # noqa: BLE001 - the guard must never break the student's code
            pass

    def _judge(self, verdict, frame, caller) -> None:
        kind, detail = verdict
        if kind == "backward":
            self.backward_ran = True
            return
        if kind == "autograd":
            if not self.autograd or _from_checker(caller):
                return
            name = detail
        elif kind == "builtin":
            name = detail
        elif kind == "module":
            name = _module_name(frame, detail)
        elif kind == "op":
            name = _op_name(frame)
            if name is None:
                return
        else:                  # a function of normlib's library, or one of torch's normalization functions
            name = _function_name(frame)
        self.found = (name, kind == "autograd")
        sys.setprofile(self._previous)
