"""How fast, and how close to the memory's speed, are the book's normalization layers? (chapter 8)

Four versions of LayerNorm, RMSNorm and BatchNorm2d (training mode) are compared with each
other, as ratios to PyTorch's built-in, forward and forward+backward, float32 on the CPU:

========== =================================================================================
variant    what runs
========== =================================================================================
readable   :mod:`normlib.functional`: the formula step by step, autograd records every step
hand       :mod:`normlib.autograd`: the same forward, the hand-derived backward of chapter 7
compiled   ``torch.compile`` of the :mod:`normlib.functional` function (inductor, CPU)
torch      ``torch.nn.functional``'s built-in (one fused C++ kernel each way)
========== =================================================================================

**What is timed.** The median of ``repeats`` calls after ``warmup`` calls. The variants of one
(op, shape, mode) are timed in turn, round after round (``readable, hand, compiled, torch``,
then ``hand, compiled, torch, readable``, …), so a slow spell of the machine (another process
on the same cores) slows all of them alike and the ratios stay fair. "forward" runs under
``torch.no_grad()``; "forward+backward" runs the forward with gradients and ``y.backward(dy)``
with a fixed upstream gradient ``dy``, computing the gradients of x, γ and β (the gradients
are set to ``None`` before each call, outside the timer, so each call writes fresh ones).
The compiled variant is compiled once per (op, shape, mode) before its warm-up; its first
call (tracing, code generation and the C++ compiler) is reported as ``compile_seconds`` and
is never part of the timings. Inputs are seeded; γ and β are random, not ones and zeros.

**Bytes and bandwidth.** A normalization does almost no arithmetic per element, so its speed
is set by how fast memory moves. The *minimal* traffic of each mode, counted in passes over
an input-sized float32 tensor (:func:`minimal_bytes`):

* forward: read x, write y → **2 passes**;
* forward+backward: the forward's 2, then the backward reads x and dy and writes dx → **5**.

γ, β, their gradients, the running statistics and the per-row (or per-channel) mean and
1/σ are left out: they are one value per feature or per row, at most 0.3 % of the input at
the sizes benchmarked here. ``gbps`` is these bytes over the median time, and ``fraction``
divides it by the copy bandwidth :func:`copy_bandwidth` measures (a large
``dst.copy_(src)``, counted as one read and one write). Both counts leave out the extra read
a cache line costs before it is written (write-allocate), so they are counted alike. The
copy is measured far beyond the caches; an input that fits in them (tens of MiB or less) can
show a fraction above 1. A
variant that moves more than the minimum (the readable one writes and reads back
x − μ, its square, x̂, …) shows it as a lower fraction.

**Memory.** ``peak_bytes``: the highest total of memory allocated during one call, above what
was allocated when the call began (:func:`peak_memory`; the output, the intermediates, the
graph saved for backward and the fresh gradients all count; the inputs, γ, β and dy were
allocated before). ``saved_bytes`` (forward+backward only): the bytes the forward leaves
in the autograd graph for the backward, by :func:`normlib.autograd.saved_for_backward`
(inputs saved count too: x is usually one of them). For the compiled variant these are the
tensors its compiled backward keeps, as torch.compile's partitioner chose them (its
autograd.Function saves them through the same hooks; measuring does not recompile).

**FLOPs and the roofline.** :data:`FLOPS_PER_ELEMENT` counts the useful floating-point
operations per input element of a fused implementation (documented there); over the minimal
bytes it gives the arithmetic intensity that :func:`roofline` plots against the achieved
GFLOP/s, under the copy bandwidth and the speed of a float32 matrix product
(:func:`matmul_gflops`).

Threads: whatever ``torch.get_num_threads()`` says; nothing here changes it. Memory: each
call allocates its output and gradients anew; with glibc's default ``malloc`` a large one
arrives as fresh pages from the operating system, which can cost more than the
normalization (:func:`keep_freed_memory`, which ``make bench`` calls, and which nothing here
calls on its own).

>>> row = measure("layer_norm", "torch", (64, 768), "forward", repeats=3, warmup=1)
>>> row.op, row.variant, row.shape, row.mode, row.seconds > 0
('layer_norm', 'torch', (64, 768), 'forward', True)
"""

from __future__ import annotations

import contextlib
import datetime
import json
import math
import os
import platform
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import torch

from . import autograd as _hand
from . import functional as _readable
from .i18n import text

__all__ = [
    "OPS", "VARIANTS", "MODES", "PASSES", "FLOPS_PER_ELEMENT", "SMALL_SIZES",
    "Row", "Results",
    "minimal_bytes", "copy_bandwidth", "keep_freed_memory", "matmul_gflops", "peak_memory", "machine_info", "graph_breaks",
    "measure", "compare", "run", "load",
    "markdown_table", "targets", "targets_markdown", "plot", "roofline",
]

OPS = ("layer_norm", "rms_norm", "batch_norm2d")
VARIANTS = ("readable", "hand", "compiled", "torch")
MODES = ("forward", "forward+backward")

# Minimal memory traffic of each mode, in passes over an input-sized tensor (module docstring).
PASSES = {"forward": 2, "forward+backward": 5}

# Useful float operations per input element of a fused implementation; the per-row (or
# per-channel) work — one rsqrt, a division by n — is left out, as its bytes are.
#   LayerNorm / BatchNorm forward (8): Σx (1 add); Σ(x − μ)² (sub, mul, add: 3);
#       y = (x − μ)·r·γ + β (sub, mul, mul, add: 4).
#   RMSNorm forward (4): Σx² (mul, add: 2); y = x·r·γ (2).
#   LayerNorm / BatchNorm backward (13): x̂ = (x − μ)·r (2); g = γ·dy (1); Σg (1); Σg·x̂ (2);
#       dx = r·(g − mean(g) − x̂·mean(g·x̂)) (sub, mul, sub, mul: 4); Σdy·x̂ for dγ (2); Σdy for dβ (1).
#   RMSNorm backward (9): x̂ = x·r (1); g = γ·dy (1); Σg·x̂ (2); dx = r·(g − x̂·mean(g·x̂)) (3); Σdy·x̂ (2).
FLOPS_PER_ELEMENT = {
    "layer_norm": {"forward": 8, "forward+backward": 8 + 13},
    "rms_norm": {"forward": 4, "forward+backward": 4 + 9},
    "batch_norm2d": {"forward": 8, "forward+backward": 8 + 13},
}

# Sizes small enough that every variant but "compiled" runs in well under a second (chapter 8).
SMALL_SIZES = {
    "layer_norm": [(256, 768), (256, 2048)],
    "rms_norm": [(256, 768), (256, 2048)],
    "batch_norm2d": [(8, 32, 16, 16)],
}

EPS = {"layer_norm": 1e-5, "rms_norm": 1e-6, "batch_norm2d": 1e-5}
GB = 1e9
MiB = 2 ** 20

Shape = Tuple[int, ...]


# --------------------------------------------------------------------------- checks

def _check_choice(name: str, value, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(repr(a) for a in allowed)}; got {value!r}")


def _check_shape(op: str, shape) -> Shape:
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


def _check(op: str, variants: Sequence[str], mode: str, shape) -> Shape:
    _check_choice("op", op, OPS)
    for v in variants:
        _check_choice("variant", v, VARIANTS)
    _check_choice("mode", mode, MODES)
    return _check_shape(op, shape)


# --------------------------------------------------------------------------- models of the work

def minimal_bytes(shape: Sequence[int], mode: str, element_size: int = 4) -> int:
    """The least memory traffic one call must cause: ``PASSES[mode]`` × the input's bytes.

    Forward reads x and writes y (2 passes); forward+backward also reads x and dy and writes
    dx (5). Parameters and statistics are left out (module docstring).

    >>> minimal_bytes((4, 8), "forward"), minimal_bytes((4, 8), "forward+backward")
    (256, 640)
    """
    _check_choice("mode", mode, MODES)
    return PASSES[mode] * math.prod(shape) * element_size


def _median_time(fn: Callable[[], object], repeats: int, warmup: int) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def copy_bandwidth(nbytes: int = 256 * MiB, repeats: int = 10, warmup: int = 2, fresh: bool = False) -> float:
    """This machine's memory bandwidth in GB/s (10⁹ bytes/s): the median of ``dst.copy_(src)``.

    ``src`` and ``dst`` are float32 tensors of ``nbytes`` each, far larger than the caches by
    default; one copy counts as ``2 · nbytes`` (read ``src``, write ``dst``). With
    ``fresh=True`` each copy goes to newly allocated memory (``src.clone()``), as every
    normalization's output does: the difference is what the allocator and the operating
    system cost (see :func:`keep_freed_memory`).

    >>> copy_bandwidth(nbytes=4 * MiB, repeats=3) > 0
    True
    """
    src = torch.rand(nbytes // 4)
    if fresh:
        seconds = _median_time(src.clone, repeats, warmup)
    else:
        dst = torch.empty_like(src)
        seconds = _median_time(lambda: dst.copy_(src), repeats, warmup)
    return 2 * src.nbytes / seconds / GB


def keep_freed_memory(threshold: int = 2 ** 30) -> bool:
    """Ask glibc's ``malloc`` to keep freed blocks of up to ``threshold`` bytes for reuse,
    instead of handing them back to the operating system; True if it agreed.

    By default glibc gives every large block (above 32 MiB at most) straight back when it is
    freed, so the next tensor of that size arrives as fresh pages that the kernel must map
    and zero on first touch: on the machine this was written on, writing a new 128 MiB
    tensor took three times as long as writing into an old one. Each call of a
    normalization allocates its output (and gradients) anew, so without this a benchmark of
    large sizes times the operating system more than the normalization. Caching allocators
    (jemalloc, tcmalloc, PyTorch's own on GPUs) reuse memory like this. It sets
    ``M_MMAP_THRESHOLD`` and ``M_TRIM_THRESHOLD`` with ``mallopt`` for the whole process, for
    the rest of its life (the process keeps its peak memory). Linux with glibc only; elsewhere
    it does nothing and returns False. ``benchmarks/normalization.py`` calls it unless given
    ``--fresh-memory``.
    """
    import ctypes
    import ctypes.util

    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3      # from glibc's <malloc.h>
    return bool(mallopt(M_MMAP_THRESHOLD, ctypes.c_int(threshold))) and \
        bool(mallopt(M_TRIM_THRESHOLD, ctypes.c_int(threshold)))


def matmul_gflops(n: int = 2048, repeats: int = 5, warmup: int = 1) -> float:
    """The compute roof in GFLOP/s: the median speed of a float32 ``n × n`` matrix product
    (``2n³`` floating-point operations).

    >>> matmul_gflops(n=128, repeats=3) > 0
    True
    """
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(n, n, generator=gen), torch.randn(n, n, generator=gen)
    out = torch.empty(n, n)
    seconds = _median_time(lambda: torch.mm(a, b, out=out), repeats, warmup)
    return 2 * n ** 3 / seconds / GB


def peak_memory(fn: Callable[[], object]) -> int:
    """Bytes: the highest total of CPU memory allocated while ``fn()`` runs, above the start.

    torch keeps no peak counter for CPU memory, so this runs ``fn`` once under
    ``torch.profiler`` with ``profile_memory=True``, takes every allocation (+) and free (−)
    it recorded, puts them in time order and keeps the highest running sum. Memory allocated
    before the call and freed during it makes the running sum go below zero, which can only
    hide a peak, so free what you can before. Only allocations through torch's allocator are
    seen (tensors, including those torch.compile's kernels allocate), not Python objects.
    The profiler's log lines are silenced by setting ``KINETO_LOG_LEVEL=6`` in the environment
    when it is not set.

    >>> peak_memory(lambda: torch.empty(MiB // 4)) / MiB      # one 1 MiB tensor, freed at once
    1.0
    """
    from torch.profiler import ProfilerActivity, profile

    # torch 2.13's profiler (kineto) prints "profiler_start"/"profiler_stop" on stderr each time;
    # level 6 silences its log unless the user chose a level (read when the profiler first starts).
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    # The raw records: each "[memory]" event is one allocation (nbytes > 0) or free (< 0).
    # (prof.events() attributes most of them to the operator that made them and loses their order.)
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    events.sort(key=lambda e: e.start_ns())
    live = peak = 0
    for e in events:
        live += e.nbytes()
        peak = max(peak, live)
    return peak


def machine_info() -> Dict[str, object]:
    """CPU model, core count, torch's thread count, versions and the date: what a result needs
    to be read later.

    >>> sorted(machine_info())
    ['cores', 'cpu', 'date', 'platform', 'python', 'threads', 'torch']
    """
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
    }


# --------------------------------------------------------------------------- the four variants

def _normlib_call(module, op: str) -> Callable:
    """The normlib function of ``op`` as ``f(x, weight, bias, state)``."""
    if op == "layer_norm":
        return lambda x, w, b, s: module.layer_norm(x, x.shape[-1:], w, b, EPS[op])
    if op == "rms_norm":
        return lambda x, w, b, s: module.rms_norm(x, x.shape[-1:], w, EPS[op])
    return lambda x, w, b, s: module.batch_norm(x, s[0], s[1], w, b, True, 0.1, EPS[op])


def _compiled_call(op: str) -> Callable:
    """``torch.compile`` of the :mod:`normlib.functional` function itself (not of a wrapper)."""
    fn = {"layer_norm": _readable.layer_norm, "rms_norm": _readable.rms_norm,
          "batch_norm2d": _readable.batch_norm}[op]
    compiled = torch.compile(fn, dynamic=False)
    if op == "layer_norm":
        return lambda x, w, b, s: compiled(x, x.shape[-1:], w, b, EPS[op])
    if op == "rms_norm":
        return lambda x, w, b, s: compiled(x, x.shape[-1:], w, EPS[op])
    return lambda x, w, b, s: compiled(x, s[0], s[1], w, b, True, 0.1, EPS[op])


def _torch_call(op: str) -> Callable:
    F = torch.nn.functional
    if op == "layer_norm":
        return lambda x, w, b, s: F.layer_norm(x, x.shape[-1:], w, b, EPS[op])
    if op == "rms_norm":
        return lambda x, w, b, s: F.rms_norm(x, x.shape[-1:], w, EPS[op])
    return lambda x, w, b, s: F.batch_norm(x, s[0], s[1], w, b, True, 0.1, EPS[op])


def _function(op: str, variant: str) -> Callable:
    if variant == "readable":
        return _normlib_call(_readable, op)
    if variant == "hand":
        return _normlib_call(_hand, op)
    if variant == "compiled":
        return _compiled_call(op)
    return _torch_call(op)


class _Case:
    """Seeded inputs of one (op, shape, mode), and how to call a variant on them."""

    def __init__(self, op: str, shape: Shape, mode: str, seed: int = 0, affine: bool = True) -> None:
        gen = torch.Generator().manual_seed(seed)
        features = shape[1] if op == "batch_norm2d" else shape[-1]
        grad = mode == "forward+backward"
        self.x = torch.randn(shape, generator=gen).requires_grad_(grad)
        weight = (1 + 0.5 * torch.randn(features, generator=gen)).requires_grad_(grad)
        bias = None if op == "rms_norm" else (0.5 * torch.randn(features, generator=gen)).requires_grad_(grad)
        self.weight, self.bias = (weight, bias) if affine else (None, None)
        self.state = (torch.zeros(features), torch.ones(features)) if op == "batch_norm2d" else None
        self.dy = torch.randn(shape, generator=gen) if grad else None
        self.mode = mode

    @property
    def leaves(self) -> List[torch.Tensor]:
        return [t for t in (self.x, self.weight, self.bias) if t is not None]

    def clear(self) -> None:
        """Drop the previous call's gradients, so that the next call writes fresh ones."""
        for t in self.leaves:
            t.grad = None

    def forward(self, fn: Callable) -> torch.Tensor:
        return fn(self.x, self.weight, self.bias, self.state)

    def call(self, fn: Callable) -> None:
        if self.mode == "forward":
            with torch.no_grad():
                self.forward(fn)
        else:
            self.forward(fn).backward(self.dy)


# --------------------------------------------------------------------------- measuring

@dataclass
class Row:
    """One measurement: a variant of an op at a shape, in a mode. Times in seconds, memory in bytes.

    ``seconds`` is the median of ``times``; ``gbps`` and ``gflops`` are per that median;
    ``fraction`` is ``gbps`` over the copy bandwidth (``None`` when none was given);
    ``saved_bytes`` is ``None`` in forward mode; ``compile_seconds``, ``graphs`` (how many
    graphs torch.compile made: 1 means no graph break) and ``compile_cached`` (inductor found
    every graph's code in its on-disk cache, from an earlier run: the compile time is then
    mostly tracing) are for the compiled variant only.
    """

    op: str
    variant: str
    shape: Shape
    mode: str
    seconds: float
    times: List[float]
    gbps: float
    gflops: float
    fraction: Optional[float]
    peak_bytes: int
    saved_bytes: Optional[int] = None
    compile_seconds: Optional[float] = None
    graphs: Optional[int] = None
    compile_cached: Optional[bool] = None

    @property
    def spread(self) -> float:
        """Interquartile range of the times over their median: how noisy this measurement was."""
        if len(self.times) < 4:
            return 0.0
        q1, _, q3 = statistics.quantiles(self.times, n=4)
        return (q3 - q1) / self.seconds


def _compile_counts() -> Tuple[int, int]:
    """(graphs dynamo has made, graphs inductor compiled anew) so far in this process: torch's
    own counters, private, so only informative (-1 when missing)."""
    try:
        from torch._dynamo.utils import counters
        return int(counters["stats"]["unique_graphs"]), int(counters["inductor"]["fxgraph_cache_miss"])
    except Exception:  # pragma: no cover
        return -1, -1


def compare(op: str, shape: Sequence[int], mode: str, variants: Sequence[str] = VARIANTS,
            repeats: int = 10, warmup: int = 2, bandwidth: Optional[float] = None,
            seed: int = 0, affine: bool = True) -> List[Row]:
    """Time ``variants`` of ``op`` on one input of ``shape``, interleaved; one :class:`Row` each.

    ``op``: ``"layer_norm"`` or ``"rms_norm"`` (shape ``(rows, D)``, normalized over D) or
    ``"batch_norm2d"`` (shape ``(N, C, H, W)``, training mode, with running statistics);
    ``mode``: ``"forward"`` or ``"forward+backward"``. ``bandwidth`` (GB/s, e.g. from
    :func:`copy_bandwidth`) gives each row its ``fraction``. ``affine=False`` leaves out γ and β
    (and so their gradients): ``make bench`` uses it to see what those two column sums cost.

    The compiled variant calls ``torch._dynamo.reset()`` first and compiles for this shape and
    mode only (``dynamic=False``): otherwise a run over many shapes would reach dynamo's
    recompile limit and silently fall back to eager code. Anything compiled before, elsewhere
    in the process, is forgotten too.

    >>> rows = compare("rms_norm", (32, 64), "forward+backward", variants=("hand", "torch"), repeats=3)
    >>> [(r.variant, r.saved_bytes) for r in rows]   # hand: x (32·64·4 bytes), γ, 1/σ per row
    [('hand', 8576), ('torch', 16768)]

    (torch 2.13's RMSNorm on the CPU is composed of elementwise operations, not one kernel:
    it also saves x·1/σ, another 8192 bytes.)
    """
    shape = _check(op, variants, mode, shape)
    if repeats < 1 or warmup < 0:
        raise ValueError(f"repeats must be >= 1 and warmup >= 0; got repeats={repeats}, warmup={warmup}")
    case = _Case(op, shape, mode, seed, affine)
    functions, compile_seconds, graphs, cached = {}, None, None, None
    for variant in variants:
        if variant == "compiled":
            torch._dynamo.reset()
            graphs_before, misses_before = _compile_counts()
            functions[variant] = _function(op, variant)
            case.clear()
            start = time.perf_counter()
            case.call(functions[variant])
            compile_seconds = time.perf_counter() - start
            graphs_after, misses_after = _compile_counts()
            graphs, cached = graphs_after - graphs_before, misses_after == misses_before
        else:
            functions[variant] = _function(op, variant)
        for _ in range(warmup):
            case.clear()
            case.call(functions[variant])

    times: Dict[str, List[float]] = {v: [] for v in variants}
    order = list(variants)
    for _ in range(repeats):
        for variant in order:
            case.clear()
            start = time.perf_counter()
            case.call(functions[variant])
            times[variant].append(time.perf_counter() - start)
        order = order[1:] + order[:1]       # next round starts with the next variant

    rows = []
    moved = minimal_bytes(shape, mode, case.x.element_size())
    flops = FLOPS_PER_ELEMENT[op][mode] * math.prod(shape)
    for variant in variants:
        fn = functions[variant]
        case.clear()
        peak = peak_memory(lambda fn=fn: case.call(fn))
        saved = None
        if mode == "forward+backward":
            saved = _hand.saved_for_backward(case.forward, fn).nbytes
        seconds = statistics.median(times[variant])
        rows.append(Row(
            op=op, variant=variant, shape=shape, mode=mode, seconds=seconds, times=times[variant],
            gbps=moved / seconds / GB, gflops=flops / seconds / GB,
            fraction=None if bandwidth is None else moved / seconds / GB / bandwidth,
            peak_bytes=peak, saved_bytes=saved,
            compile_seconds=compile_seconds if variant == "compiled" else None,
            graphs=graphs if variant == "compiled" else None,
            compile_cached=cached if variant == "compiled" else None,
        ))
    case.clear()
    return rows


def measure(op: str, variant: str, shape: Sequence[int], mode: str = "forward", repeats: int = 10,
            warmup: int = 2, bandwidth: Optional[float] = None, seed: int = 0) -> Row:
    """One variant alone: :func:`compare` with ``variants=(variant,)``.

    >>> row = measure("batch_norm2d", "hand", (4, 8, 6, 6), "forward+backward", repeats=3)
    >>> row.saved_bytes                      # x (4·8·6·6 floats), γ, μ and 1/σ per channel
    4704
    >>> measure("group_norm", "torch", (4, 8), "forward")
    Traceback (most recent call last):
        ...
    ValueError: op must be one of 'layer_norm', 'rms_norm', 'batch_norm2d'; got 'group_norm'
    """
    return compare(op, shape, mode, (variant,), repeats, warmup, bandwidth, seed)[0]


def graph_breaks(op: str, shape: Optional[Sequence[int]] = None) -> Dict[str, object]:
    """What ``torch._dynamo.explain`` says about compiling ``op``'s normlib.functional function
    (training mode, with gradients): how many graphs, and why each break happened.

    A graph break splits the compiled function into pieces with Python in between: each piece
    is fused on its own, so fewer passes over memory are saved.

    >>> graph_breaks("layer_norm")["graphs"]
    1
    """
    _check_choice("op", op, OPS)
    shape = _check_shape(op, shape or SMALL_SIZES[op][0])
    case = _Case(op, shape, "forward+backward")
    fn = {"layer_norm": _readable.layer_norm, "rms_norm": _readable.rms_norm,
          "batch_norm2d": _readable.batch_norm}[op]
    if op == "layer_norm":
        args = (case.x, shape[-1:], case.weight, case.bias, EPS[op])
    elif op == "rms_norm":
        args = (case.x, shape[-1:], case.weight, EPS[op])
    else:
        args = (case.x, *case.state, case.weight, case.bias, True, 0.1, EPS[op])
    torch._dynamo.reset()
    with _graph_break_log() as messages:
        explained = torch._dynamo.explain(fn)(*args)
    torch._dynamo.reset()
    reasons = []
    for message in messages:
        reason = _graph_break_reason(message)
        if reason not in reasons:
            reasons.append(reason)
    if not reasons:      # no log captured: explain's own (terser) reasons
        reasons = [str(br.reason).splitlines()[0] for br in explained.break_reasons]
    return {"op": op, "graphs": explained.graph_count, "breaks": explained.graph_break_count, "reasons": reasons}


@contextlib.contextmanager
def _graph_break_log():
    """Collect dynamo's graph-break messages (the ``graph_breaks`` log of ``TORCH_LOGS``), which
    name the line that broke the graph, without printing them; torch's log settings are reset
    to their defaults afterwards."""
    import logging

    import torch._dynamo.symbolic_convert  # creates the loggers

    messages: List[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    loggers = [logging.getLogger(name) for name in list(logging.root.manager.loggerDict)
               if name.startswith("torch._dynamo") and name.endswith("__graph_breaks")]
    handler = Collect()
    torch._logging.set_logs(graph_breaks=True)
    saved = [(lg, lg.propagate) for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.propagate = False          # to us only, not to torch's stderr handler
    try:
        yield messages
    finally:
        for lg, propagate in saved:
            lg.removeHandler(handler)
            lg.propagate = propagate
        torch._logging.set_logs()


def _graph_break_reason(message: str) -> str:
    """``"axes.py:139: Failed to convert args/kwargs to proxy (call_function args: …)"`` from
    one of dynamo's graph-break messages."""
    import re

    where = re.search(r"in user code at (\S+):(\d+)", message)
    lines = [line.strip() for line in message.splitlines()]
    what = next((lines[i - 1] for i, line in enumerate(lines) if line.startswith("Explanation:") and i > 0), "")
    what = what or next((line for line in lines if line), "")
    context = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("Developer debug context:")), "")
    place = f"{os.path.basename(where.group(1))}:{where.group(2)}: " if where else ""
    return place + what + (f" ({context})" if context else "")


# --------------------------------------------------------------------------- a whole run

@dataclass
class Results:
    """A run: its rows; the copy bandwidth (GB/s) the fractions divide by and the matmul speed
    (GFLOP/s) of the roofline; the machine (:func:`machine_info`); the conditions of the run
    (each bandwidth measurement, the load average before and after, whether freed memory was
    kept); how long it took (s); and the compile report of each op (:func:`graph_breaks`)."""

    rows: List[Row]
    bandwidth: float
    matmul_gflops: float
    machine: Dict[str, object]
    conditions: Dict[str, object] = field(default_factory=dict)
    seconds: float = 0.0
    compile_report: List[Dict[str, object]] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> "Results":
        data = json.loads(text)
        data["rows"] = [Row(**{**r, "shape": tuple(r["shape"])}) for r in data["rows"]]
        return cls(**data)


def load(path) -> Results:
    """Read a run written by ``benchmarks/normalization.py`` (its ``.json``): the chapter uses
    it to show the last full run and say when and where it was made."""
    with open(path, encoding="utf-8") as f:
        return Results.from_json(f.read())


ProgressArg = Union[bool, Callable[[int, int, str], None]]


def _progress_bar(progress: ProgressArg, total: int):
    """A function ``step(done, description)``, and one to close the bar at the end."""
    if callable(progress):
        return (lambda done, what: progress(done, total, what)), (lambda: None)
    if not progress:
        return (lambda done, what: None), (lambda: None)
    from tqdm.auto import tqdm  # a widget in a notebook, text on stderr in a terminal

    bar = tqdm(total=total, file=sys.stderr, leave=False, unit="case", dynamic_ncols=True)

    def step(done: int, what: str) -> None:
        bar.set_description_str(what, refresh=False)
        bar.update(done - bar.n)

    return step, bar.close


def _load_average() -> Optional[float]:
    try:
        return os.getloadavg()[0]
    except OSError:  # pragma: no cover - not on every platform
        return None


def run(sizes: Optional[Dict[str, Sequence[Sequence[int]]]] = None, variants: Sequence[str] = VARIANTS,
        modes: Sequence[str] = MODES, repeats: int = 10, warmup: int = 2,
        bandwidth: Optional[float] = None, gflops: Optional[float] = None,
        progress: ProgressArg = True) -> Results:
    """Compare ``variants`` for every op and shape in ``sizes`` (default :data:`SMALL_SIZES`) and
    every mode.

    Unless ``bandwidth`` is given, the copy bandwidth is measured before and after the
    comparisons; the fractions divide by the higher of the two,
    what the machine showed it can do, and both are kept in ``conditions``: when they differ
    much, something else was using the machine. ``gflops`` (the matmul roof) likewise.

    ``progress``: ``True`` shows a tqdm bar (on stderr in a terminal, a widget that disappears
    when done in a notebook), ``False`` nothing, or a function ``f(done, total, description)``.

    >>> res = run({"rms_norm": [(16, 32)]}, variants=("hand", "torch"), repeats=2, warmup=0,
    ...           bandwidth=10.0, gflops=100.0, progress=False)
    >>> [(r.variant, r.mode) for r in res.rows]
    [('hand', 'forward'), ('torch', 'forward'), ('hand', 'forward+backward'), ('torch', 'forward+backward')]
    """
    sizes = SMALL_SIZES if sizes is None else sizes
    for op, shapes in sizes.items():
        for shape in shapes:
            _check(op, variants, MODES[0], shape)
    for mode in modes:
        _check_choice("mode", mode, MODES)
    start = time.perf_counter()
    machine = machine_info()
    conditions: Dict[str, object] = {"load_average_before": _load_average()}
    cases = [(op, tuple(shape), mode) for op, shapes in sizes.items() for shape in shapes for mode in modes]
    measure_bandwidth = bandwidth is None
    step, close = _progress_bar(progress, len(cases) + 2)
    try:
        step(0, "copy bandwidth, matmul")
        if measure_bandwidth:
            conditions["copy_gbps_before"] = copy_bandwidth()
        gflops = matmul_gflops() if gflops is None else gflops
        rows: List[Row] = []
        for done, (op, shape, mode) in enumerate(cases, start=1):
            step(done, f"{op} {_shape_label(shape)} {mode}")
            rows += compare(op, shape, mode, variants, repeats, warmup, bandwidth)
        step(len(cases) + 1, "copy bandwidth")
        if measure_bandwidth:
            conditions["copy_gbps_after"] = copy_bandwidth()
            bandwidth = max(conditions["copy_gbps_before"], conditions["copy_gbps_after"])
            for row in rows:
                row.fraction = row.gbps / bandwidth
        step(len(cases) + 2, "done")
    finally:
        close()
    conditions["load_average_after"] = _load_average()
    return Results(rows=rows, bandwidth=bandwidth, matmul_gflops=gflops, machine=machine,
                   conditions=conditions, seconds=time.perf_counter() - start)


# --------------------------------------------------------------------------- reading a run

def _shape_label(shape: Sequence[int]) -> str:
    return "×".join(str(s) for s in shape)


def _reference(rows: Sequence[Row]) -> Dict[Tuple, Row]:
    """The torch row of each (op, shape, mode): what the ratios divide by."""
    return {(r.op, tuple(r.shape), r.mode): r for r in rows if r.variant == "torch"}


def _ratio(value: Optional[float], ref: Optional[float]) -> str:
    if value is None or ref is None or ref == 0:
        return "–"
    return f"{value / ref:.2f}"


def markdown_table(rows: Sequence[Row], bandwidth: Optional[float] = None,
                   machine: Optional[Dict[str, object]] = None) -> str:
    """The rows as a Markdown table, with time and memory as ratios to torch's built-in.

    Columns: median time, spread (interquartile range over median: noise), time ÷ torch,
    GB/s of minimal traffic and its share of the copy bandwidth, peak memory and ÷ torch,
    bytes saved for backward and ÷ torch, compile time (first call), graphs and whether
    inductor's cache had them. Preceded by a
    line on the machine when ``machine`` (:func:`machine_info`) is given.

    >>> rows = compare("layer_norm", (8, 16), "forward", variants=("hand", "torch"), repeats=2)
    >>> table = markdown_table(rows, bandwidth=10.0)
    >>> [line.split(" | ")[3] for line in table.splitlines()[2:]], table.splitlines()[-1].split(" | ")[6]
    (['hand', 'torch'], '1.00')
    """
    lines = []
    if machine:
        lines += [f"{machine['cpu']}, {machine['cores']} cores, torch {machine['torch']} with "
                  f"{machine['threads']} threads, {machine['date']}."
                  + (f" Copy bandwidth {bandwidth:.1f} GB/s." if bandwidth else ""), ""]
    lines += [
        "| op | shape | mode | variant | median ms | spread | time ÷ torch | GB/s | of copy | "
        "peak MiB | peak ÷ torch | saved MiB | saved ÷ torch | compile s (graphs) |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    ref = _reference(rows)
    for r in rows:
        t = ref.get((r.op, tuple(r.shape), r.mode))
        fraction = r.fraction if r.fraction is not None else (r.gbps / bandwidth if bandwidth else None)
        cells = [
            r.op, _shape_label(r.shape), r.mode, r.variant,
            f"{r.seconds * 1e3:.3g}", f"{100 * r.spread:.0f}%",
            _ratio(r.seconds, t and t.seconds), f"{r.gbps:.1f}",
            "–" if fraction is None else f"{100 * fraction:.0f}%",
            f"{r.peak_bytes / MiB:.1f}", _ratio(r.peak_bytes, t and t.peak_bytes),
            "–" if r.saved_bytes is None else f"{r.saved_bytes / MiB:.1f}",
            _ratio(r.saved_bytes, t and t.saved_bytes),
            "–" if r.compile_seconds is None else
            f"{r.compile_seconds:.1f} ({r.graphs}{', cached' if r.compile_cached else ''})",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def targets(rows: Sequence[Row], bandwidth: Optional[float] = None) -> List[Dict[str, object]]:
    """Read issue 5's three targets from a run. Each: its name, every value it was read from,
    the threshold, and whether all of them meet it.

    1. the hand-derived backward saves no more for backward than torch + 5 % (each op and shape);
    2. the compiled readable LayerNorm's forward+backward takes ≤ 1.3 × torch's time (each shape);
    3. torch's built-in and the compiled version move > 50 % of the copy bandwidth at the
       largest size of each op, in each mode.

    A target with nothing to read from (a variant or op not in the run) is left out.

    >>> rows = compare("layer_norm", (8, 16), "forward+backward", variants=("hand", "torch"), repeats=2)
    >>> [(t["name"], t["met"]) for t in targets(rows)]
    [('hand-derived backward saves ≤ 1.05 × torch', True)]
    """
    ref = _reference(rows)
    out = []

    saved = [(r, r.saved_bytes / ref[(r.op, tuple(r.shape), r.mode)].saved_bytes)
             for r in rows if r.variant == "hand" and r.saved_bytes is not None
             and (r.op, tuple(r.shape), r.mode) in ref]
    if saved:
        out.append({"name": "hand-derived backward saves ≤ 1.05 × torch", "threshold": 1.05, "kind": "at most",
                    "values": [(r.op, _shape_label(r.shape), v) for r, v in saved],
                    "met": all(v <= 1.05 for _, v in saved)})

    timed = [(r, r.seconds / ref[(r.op, tuple(r.shape), r.mode)].seconds)
             for r in rows if r.variant == "compiled" and r.op == "layer_norm" and r.mode == "forward+backward"
             and (r.op, tuple(r.shape), r.mode) in ref]
    if timed:
        out.append({"name": "compiled LayerNorm forward+backward ≤ 1.3 × torch's time", "threshold": 1.3,
                    "kind": "at most", "values": [(r.op, _shape_label(r.shape), v) for r, v in timed],
                    "met": all(v <= 1.3 for _, v in timed)})

    largest = {}
    for r in rows:
        if r.op not in largest or math.prod(r.shape) > math.prod(largest[r.op]):
            largest[r.op] = tuple(r.shape)
    fast = []
    for r in rows:
        if r.variant in ("torch", "compiled") and tuple(r.shape) == largest[r.op]:
            fraction = r.fraction if r.fraction is not None else (r.gbps / bandwidth if bandwidth else None)
            if fraction is not None:
                fast.append((f"{r.op} {r.variant}", f"{_shape_label(r.shape)} {r.mode}", fraction))
    if fast:
        out.append({"name": "torch and compiled > 50 % of copy bandwidth at the largest size", "threshold": 0.5,
                    "kind": "above", "values": fast, "met": all(v > 0.5 for _, _, v in fast)})
    return out


def targets_markdown(rows: Sequence[Row], bandwidth: Optional[float] = None) -> str:
    """:func:`targets` as Markdown: each target met or missed, and by how much where missed."""
    lines = []
    for t in targets(rows, bandwidth):
        lines += [f"### {t['name']}: {'met' if t['met'] else 'MISSED'}", ""]
        for what, where, value in t["values"]:
            if t["kind"] == "at most":
                verdict = "met" if value <= t["threshold"] else \
                    f"missed by {100 * (value / t['threshold'] - 1):.0f}% (over {t['threshold']:.2f})"
                lines.append(f"- {what} {where}: {value:.2f} × torch, {verdict}")
            else:
                verdict = "met" if value > t["threshold"] else \
                    f"missed by {100 * (t['threshold'] - value):.0f} points (under {100 * t['threshold']:.0f}%)"
                lines.append(f"- {what} {where}: {100 * value:.0f}% of copy bandwidth, {verdict}")
        lines.append("")
    return "\n".join(lines)


# --------------------------------------------------------------------------- figures



def _label(key: str, lang: str) -> str:
    """A figure label in ``lang``, from normlib.i18n (keys ``bench:<key>``)."""
    return text(f"bench:{key}", lang)


def _colours() -> Dict[str, str]:
    from .viz import COLORS  # Okabe–Ito

    return {"readable": COLORS["orange"], "hand": COLORS["green"], "compiled": COLORS["blue"],
            "torch": COLORS["black"]}


_MARKERS = {"layer_norm": "o", "rms_norm": "s", "batch_norm2d": "^"}


def plot(rows: Sequence[Row], lang: str = "en"):
    """Time ÷ torch's built-in for each variant and shape: one panel per op (columns) and mode
    (rows), log scale, the line at 1 = as fast as torch. Returns the matplotlib Figure.

    >>> rows = compare("rms_norm", (8, 16), "forward", variants=("hand", "torch"), repeats=2)
    >>> fig = plot(rows)
    >>> len(fig.axes)
    1
    """
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    ref = _reference(rows)
    ops = [op for op in OPS if any(r.op == op for r in rows)]
    modes = [m for m in MODES if any(r.mode == m for r in rows)]
    colours = _colours()
    fig, axs = plt.subplots(len(modes), len(ops), figsize=(4.2 * len(ops), 3.3 * len(modes)),
                            squeeze=False, layout="constrained")
    for i, mode in enumerate(modes):
        for j, op in enumerate(ops):
            ax = axs[i][j]
            shapes = sorted({tuple(r.shape) for r in rows if r.op == op}, key=math.prod)
            for variant in VARIANTS:
                points = [(k, r.seconds / ref[(op, s, mode)].seconds) for k, s in enumerate(shapes)
                          for r in rows if (r.op, tuple(r.shape), r.mode, r.variant) == (op, s, mode, variant)
                          and (op, s, mode) in ref]
                if points:
                    ax.plot(*zip(*points), marker=_MARKERS[op], color=colours[variant], label=_label(variant, lang))
            ax.axhline(1.0, color="grey", linewidth=0.8)
            ax.set_yscale("log")
            for axis in (ax.yaxis.set_major_formatter, ax.yaxis.set_minor_formatter):
                axis(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.set_xticks(range(len(shapes)), [_shape_label(s) for s in shapes], rotation=20, fontsize=8)
            ax.set_title(f"{_label(op, lang)} · {_label(mode, lang)}", fontsize=10)
            if j == 0:
                ax.set_ylabel(_label("time_ratio", lang))
    handles, labels = axs[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=len(labels), frameon=False)
    return fig


def roofline(rows: Sequence[Row], bandwidth: float, gflops: float, lang: str = "en",
             title: Optional[str] = None):
    """The roofline: each row's arithmetic intensity (FLOPs per minimal byte, from
    :data:`FLOPS_PER_ELEMENT` and :func:`minimal_bytes`) against its achieved GFLOP/s, under
    the two roofs — ``bandwidth × intensity`` (memory) and ``gflops`` (a float32 matmul).
    Log–log. Colour: variant; marker: op; filled: forward, hollow: forward+backward.

    Every normalization sits far left of the ridge (where the roofs meet): memory, not
    arithmetic, sets its speed, and a point below the slanted roof moves more than the
    minimal bytes (or waits on something else).

    >>> rows = compare("layer_norm", (8, 16), "forward", variants=("torch",), repeats=2)
    >>> fig = roofline(rows, bandwidth=10.0, gflops=100.0)
    >>> fig.axes[0].get_xscale()
    'log'
    """
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    colours = _colours()
    fig, ax = plt.subplots(figsize=(7, 4.6), layout="constrained")
    intensity = lambda r: FLOPS_PER_ELEMENT[r.op][r.mode] / (4 * PASSES[r.mode])   # float32: 4 bytes
    ridge = gflops / bandwidth
    lo, hi = min([0.1] + [intensity(r) / 2 for r in rows]), max(10 * ridge, 10)
    ax.plot([lo, ridge, hi], [bandwidth * lo, gflops, gflops], color="grey", linewidth=1.5)
    ax.annotate(_label("compute_roof", lang).format(gf=gflops), (ridge, gflops * 1.2), fontsize=8, color="grey")
    for r in rows:
        colour = colours[r.variant]
        ax.scatter([intensity(r)], [r.gflops], marker=_MARKERS[r.op], s=44, alpha=0.85, edgecolors=colour,
                   facecolors=colour if r.mode == "forward" else "none", linewidths=1.3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(min([r.gflops for r in rows] + [bandwidth * lo]) / 2, gflops * 3)
    ax.set_xlabel(_label("intensity", lang))
    ax.set_ylabel(_label("gflops", lang))
    if title:
        ax.set_title(title, fontsize=9)

    def key(marker, label, colour="grey", filled=True):
        return Line2D([], [], linestyle="none", marker=marker, markeredgecolor=colour,
                      markerfacecolor=colour if filled else "none", label=label)

    # the memory roof's label along it: its angle on screen is known once the figure is laid out
    fig.canvas.draw()
    (x0, y0), (x1, y1) = ax.transData.transform([(lo, bandwidth * lo), (ridge, gflops)])
    ax.text(lo * 1.6, bandwidth * lo * 1.6 * 1.25, _label("memory_roof", lang).format(bw=bandwidth), fontsize=8,
            color="grey", rotation=math.degrees(math.atan2(y1 - y0, x1 - x0)), rotation_mode="anchor")

    variants = [v for v in VARIANTS if any(r.variant == v for r in rows)]
    ops = [op for op in OPS if any(r.op == op for r in rows)]
    by_colour = ax.legend(handles=[key("o", _label(v, lang), colours[v]) for v in variants],
                          loc="lower right", fontsize=8)
    ax.add_artist(by_colour)
    ax.legend(handles=[key(_MARKERS[op], _label(op, lang)) for op in ops]
              + [key("o", _label("forward", lang)), key("o", _label("forward+backward", lang), filled=False)],
              loc="upper left", fontsize=8)
    return fig
