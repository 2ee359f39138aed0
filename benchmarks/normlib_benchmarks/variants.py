"""What is compared: the ops, the four variants and the two modes, and how each is called.

Four versions of LayerNorm, RMSNorm and BatchNorm2d (training mode), float32 on the CPU:

========== =================================================================================
variant    what runs
========== =================================================================================
readable   :mod:`normlib.functional`: the formula step by step, autograd records every step
hand       :mod:`normlib.autograd`: the same forward, the hand-derived backward of chapter 7
compiled   ``torch.compile`` of the :mod:`normlib.functional` function (inductor, CPU)
torch      ``torch.nn.functional``'s built-in (one fused C++ kernel each way)
========== =================================================================================

Chapter 11 adds DyT (``"dyt"``, :func:`normlib.functional.dyt`, α = 0.5), which has neither a
hand-derived backward nor a torch built-in: its variants are readable and compiled only
(:data:`VARIANTS_OF`). It is not one of :data:`OPS`, chapter 8's suite (``make bench``);
``benchmarks/dyt.py`` times it against LayerNorm and RMSNorm with :func:`~normlib_benchmarks.suite.compare_ops`.

:data:`IMPLEMENTATIONS` maps each (op, variant) to the function it runs, all with the
arguments of ``torch.nn.functional``'s; :data:`ARGUMENTS` builds those arguments for each op,
and :func:`function` puts the two together. A :class:`Case` holds the seeded inputs.

>>> case = Case("rms_norm", (2, 4), "forward")
>>> hand, builtin = (case.forward(function("rms_norm", v)) for v in ("hand", "torch"))
>>> torch.allclose(hand, builtin)
True
"""

from __future__ import annotations

from typing import Callable, Dict, List, Sequence, Tuple, Union

import torch

from normlib import autograd, functional

__all__ = [
    "OPS", "ALL_OPS", "VARIANTS", "VARIANTS_OF", "MODES", "EPS", "SMALL_SIZES", "IMPLEMENTATIONS", "ARGUMENTS",
    "check_choice", "check_shape", "check", "function", "Case",
]

OPS = ("layer_norm", "rms_norm", "batch_norm2d")        # chapter 8's suite (make bench)
ALL_OPS = OPS + ("dyt",)                                # and chapter 11's DyT (make bench-dyt)
VARIANTS = ("readable", "hand", "compiled", "torch")
VARIANTS_OF = {**{op: VARIANTS for op in OPS}, "dyt": ("readable", "compiled")}
MODES = ("forward", "forward+backward")

EPS = {"layer_norm": 1e-5, "rms_norm": 1e-6, "batch_norm2d": 1e-5}

# Sizes small enough that every variant but "compiled" runs in well under a second (chapter 8).
SMALL_SIZES = {
    "layer_norm": [(256, 768), (256, 2048)],
    "rms_norm": [(256, 768), (256, 2048)],
    "batch_norm2d": [(8, 32, 16, 16)],
}

Shape = Tuple[int, ...]

_F = torch.nn.functional

# (op, variant) -> the function that variant runs. The "compiled" entry is the function given to
# torch.compile: function() compiles it afresh each time it is asked for.
IMPLEMENTATIONS: Dict[Tuple[str, str], Callable] = {
    ("layer_norm", "readable"): functional.layer_norm,
    ("layer_norm", "hand"): autograd.layer_norm,
    ("layer_norm", "compiled"): functional.layer_norm,
    ("layer_norm", "torch"): _F.layer_norm,
    ("rms_norm", "readable"): functional.rms_norm,
    ("rms_norm", "hand"): autograd.rms_norm,
    ("rms_norm", "compiled"): functional.rms_norm,
    ("rms_norm", "torch"): _F.rms_norm,
    ("batch_norm2d", "readable"): functional.batch_norm,
    ("batch_norm2d", "hand"): autograd.batch_norm,
    ("batch_norm2d", "compiled"): functional.batch_norm,
    ("batch_norm2d", "torch"): _F.batch_norm,
    ("dyt", "readable"): functional.dyt,
    ("dyt", "compiled"): functional.dyt,
}

# op -> its positional arguments, in torch.nn.functional's order, from a case's (x, weight, bias,
# state). LayerNorm and RMSNorm normalize over the last dim; BatchNorm runs in training mode
# (momentum 0.1) and updates the running statistics in state; DyT's α is the state of its case.
ARGUMENTS: Dict[str, Callable[..., tuple]] = {
    "layer_norm": lambda x, w, b, s: (x, x.shape[-1:], w, b, EPS["layer_norm"]),
    "rms_norm": lambda x, w, b, s: (x, x.shape[-1:], w, EPS["rms_norm"]),
    "batch_norm2d": lambda x, w, b, s: (x, s[0], s[1], w, b, True, 0.1, EPS["batch_norm2d"]),
    "dyt": lambda x, w, b, s: (x, s, w, b),
}


def check_choice(name: str, value, allowed: Sequence[str]) -> None:
    """A ValueError naming the allowed values unless ``value`` is one of them."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(repr(a) for a in allowed)}; got {value!r}")


def check_shape(op: str, shape) -> Shape:
    """``shape`` as a tuple of ints, or a ValueError if ``op`` cannot take it."""
    try:
        shape = tuple(int(s) for s in shape)
    except TypeError:
        raise ValueError(f"shape must be a tuple of positive ints; got {shape!r}") from None
    if op == "batch_norm2d" and len(shape) != 4:
        raise ValueError(f"batch_norm2d expects a shape (N, C, H, W); got {shape} ({len(shape)} dims)")
    if op != "batch_norm2d" and len(shape) < 2:
        raise ValueError(f"{op} expects a shape (rows, D) (normalized over D, the last dim); got {shape}")
    if any(s < 1 for s in shape):
        raise ValueError(f"shape must have positive sizes; got {shape}")
    return shape


def check(op: str, variants: Sequence[str], mode: str, shape) -> Shape:
    """Check an op, its variants, a mode and a shape; return the shape as a tuple of ints."""
    check_choice("op", op, ALL_OPS)
    for v in variants:
        check_choice("variant", v, VARIANTS_OF[op])
    check_choice("mode", mode, MODES)
    return check_shape(op, shape)


def function(op: str, variant: str) -> Callable:
    """``variant`` of ``op`` as ``f(x, weight, bias, state)``, the way :class:`Case` calls it.

    The compiled variant is ``torch.compile`` of the :mod:`normlib.functional` function itself
    (not of a wrapper), for one shape (``dynamic=False``); it compiles on its first call.
    """
    check_choice("op", op, ALL_OPS)
    check_choice("variant", variant, VARIANTS_OF[op])
    fn = IMPLEMENTATIONS[op, variant]
    if variant == "compiled":
        fn = torch.compile(fn, dynamic=False)
    arguments = ARGUMENTS[op]
    return lambda x, w, b, s: fn(*arguments(x, w, b, s))


class Case:
    """Seeded inputs of one (op, shape, mode), and how to call a variant on them.

    γ and β are random, not ones and zeros; ``dy`` is the fixed upstream gradient of
    forward+backward. ``affine=False`` leaves out γ and β; ``affine="frozen"`` keeps them with
    ``requires_grad=False``: the multiply and the add stay, their gradients (two sums down the
    columns) go. ``state`` is BatchNorm's running
    statistics, or DyT's α (0.5, the paper's α₀, a leaf with a gradient in forward+backward).
    """

    def __init__(self, op: str, shape: Shape, mode: str, seed: int = 0, affine: Union[bool, str] = True) -> None:
        if affine not in (True, False, "frozen"):
            raise ValueError(f"affine must be True, False or 'frozen'; got {affine!r}")
        gen = torch.Generator().manual_seed(seed)
        features = shape[1] if op == "batch_norm2d" else shape[-1]
        grad = mode == "forward+backward"
        self.x = torch.randn(shape, generator=gen).requires_grad_(grad)
        learned = grad and affine is True
        weight = (1 + 0.5 * torch.randn(features, generator=gen)).requires_grad_(learned)
        bias = None if op == "rms_norm" else (0.5 * torch.randn(features, generator=gen)).requires_grad_(learned)
        self.weight, self.bias = (weight, bias) if affine else (None, None)
        self.state = (torch.zeros(features), torch.ones(features)) if op == "batch_norm2d" else None
        if op == "dyt":
            self.state = torch.full((1,), 0.5).requires_grad_(grad)
        self.dy = torch.randn(shape, generator=gen) if grad else None
        self.mode = mode

    @property
    def leaves(self) -> List[torch.Tensor]:
        alpha = self.state if isinstance(self.state, torch.Tensor) else None     # DyT's α
        return [t for t in (self.x, self.weight, self.bias, alpha) if t is not None]

    def clear(self) -> None:
        """Drop the previous call's gradients, so that the next call writes fresh ones."""
        for t in self.leaves:
            t.grad = None

    def forward(self, fn: Callable) -> torch.Tensor:
        return fn(self.x, self.weight, self.bias, self.state)

    def call(self, fn: Callable) -> None:
        """One benchmark call: the forward under ``torch.no_grad()``, or the forward and
        ``y.backward(dy)``."""
        if self.mode == "forward":
            with torch.no_grad():
                self.forward(fn)
        else:
            self.forward(fn).backward(self.dy)
