"""The measuring: :func:`compare` times the variants of one (op, shape, mode), :func:`compare_ops`
variants of several ops on inputs of one shape, :func:`measure` one variant alone, and :func:`run`
compares them over many sizes and both modes.

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

**Memory.** ``peak_bytes``: the highest total of memory allocated during one call, above what
was allocated when the call began (:func:`~normlib_benchmarks.machine.peak_memory`; the output,
the intermediates, the graph saved for backward and the fresh gradients all count; the
inputs, γ, β and dy were allocated before). ``saved_bytes`` (forward+backward only): the
bytes the forward leaves in the autograd graph for the backward, by
:func:`normlib_book.instruments.saved_for_backward` (inputs saved count too: x is usually one of
them). For the compiled variant these are the tensors its compiled backward keeps, as
torch.compile's partitioner chose them (its autograd.Function saves them through the same
hooks; measuring does not recompile).

>>> row = measure("layer_norm", "torch", (64, 768), "forward", repeats=3, warmup=1)
>>> row.op, row.variant, row.shape, row.mode, row.seconds > 0
('layer_norm', 'torch', (64, 768), 'forward', True)
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import torch

from normlib_book.instruments import saved_for_backward

from .graphs import compile_counts
from .machine import GB, copy_bandwidth, load_average, machine_info, matmul_gflops, peak_memory
from .report import Results, Row, shape_label
from .variants import MODES, SMALL_SIZES, VARIANTS, VARIANTS_OF, Case, check, check_choice, function
from .work import FLOPS_PER_ELEMENT, minimal_bytes

__all__ = ["compare", "compare_ops", "measure", "run"]


def compare(op: str, shape: Sequence[int], mode: str, variants: Optional[Sequence[str]] = None,
            repeats: int = 10, warmup: int = 2, bandwidth: Optional[float] = None,
            seed: int = 0, affine: Union[bool, str] = True) -> List[Row]:
    """Time ``variants`` of ``op`` on one input of ``shape``, interleaved; one :class:`Row` each.

    ``op``: ``"layer_norm"`` or ``"rms_norm"`` (shape ``(rows, D)``, normalized over D) or
    ``"batch_norm2d"`` (shape ``(N, C, H, W)``, training mode, with running statistics), or
    ``"dyt"`` (chapter 11, shape ``(rows, D)``); ``variants``: by default all of the op's
    (:data:`~normlib_benchmarks.variants.VARIANTS_OF`); ``mode``: ``"forward"`` or
    ``"forward+backward"``. ``bandwidth`` (GB/s, e.g. from :func:`copy_bandwidth`) gives each row
    its ``fraction``. ``affine=False`` leaves out γ and β (and so their gradients);
    ``affine="frozen"`` keeps γ and β without gradients (the multiply and the add stay, the two
    column sums go): ``make bench`` uses both to see what those two column sums cost.

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
    variants = VARIANTS_OF.get(op, VARIANTS) if variants is None else variants
    return compare_ops([(op, v) for v in variants], shape, mode, repeats, warmup, bandwidth, seed, affine)


def compare_ops(pairs: Sequence[Tuple[str, str]], shape: Sequence[int], mode: str, repeats: int = 10,
                warmup: int = 2, bandwidth: Optional[float] = None, seed: int = 0,
                affine: Union[bool, str] = True) -> List[Row]:
    """:func:`compare` across ops: each ``(op, variant)`` of ``pairs`` on its op's seeded input of
    ``shape``, timed in turn like the variants of one op, so that a ratio between two ops (chapter
    11: DyT against LayerNorm and RMSNorm) is measured under the same load. ``dynamo`` is reset once,
    before the first compiled pair is compiled. One :class:`Row` per pair, in their order.

    >>> rows = compare_ops([("dyt", "readable"), ("layer_norm", "torch")], (8, 16), "forward", repeats=2)
    >>> [(r.op, r.variant) for r in rows]
    [('dyt', 'readable'), ('layer_norm', 'torch')]
    """
    if not pairs:
        raise ValueError("pairs must name at least one (op, variant); got none")
    for op, variant in pairs:
        shape = check(op, (variant,), mode, shape)
    if repeats < 1 or warmup < 0:
        raise ValueError(f"repeats must be >= 1 and warmup >= 0; got repeats={repeats}, warmup={warmup}")
    pairs = [tuple(p) for p in pairs]
    cases = {op: Case(op, shape, mode, seed, affine) for op, _ in pairs}
    functions, compiled = {}, {}
    if any(variant == "compiled" for _, variant in pairs):
        torch._dynamo.reset()
    for op, variant in pairs:
        case = cases[op]
        functions[op, variant] = function(op, variant)
        if variant == "compiled":
            graphs_before, misses_before = compile_counts()
            case.clear()
            start = time.perf_counter()
            case.call(functions[op, variant])
            seconds = time.perf_counter() - start
            graphs_after, misses_after = compile_counts()
            compiled[op] = (seconds, graphs_after - graphs_before, misses_after == misses_before)
        for _ in range(warmup):
            case.clear()
            case.call(functions[op, variant])

    times: Dict[Tuple[str, str], List[float]] = {p: [] for p in pairs}
    order = list(pairs)
    for _ in range(repeats):
        for op, variant in order:
            cases[op].clear()
            start = time.perf_counter()
            cases[op].call(functions[op, variant])
            times[op, variant].append(time.perf_counter() - start)
        order = order[1:] + order[:1]       # next round starts with the next pair

    rows = []
    for op, variant in pairs:
        case, fn = cases[op], functions[op, variant]
        moved = minimal_bytes(shape, mode, case.x.element_size())
        flops = FLOPS_PER_ELEMENT[op][mode] * math.prod(shape)
        case.clear()
        peak = peak_memory(lambda fn=fn, case=case: case.call(fn))
        saved = None
        if mode == "forward+backward":
            saved = saved_for_backward(case.forward, fn).nbytes
        seconds = statistics.median(times[op, variant])
        compile_seconds, graphs, cached = compiled.get(op, (None, None, None)) if variant == "compiled" else (None,) * 3
        rows.append(Row(
            op=op, variant=variant, shape=shape, mode=mode, seconds=seconds, times=times[op, variant],
            gbps=moved / seconds / GB, gflops=flops / seconds / GB,
            fraction=None if bandwidth is None else moved / seconds / GB / bandwidth,
            peak_bytes=peak, saved_bytes=saved,
            compile_seconds=compile_seconds, graphs=graphs, compile_cached=cached,
        ))
    for case in cases.values():
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
    ValueError: op must be one of 'layer_norm', 'rms_norm', 'batch_norm2d', 'dyt'; got 'group_norm'
    """
    return compare(op, shape, mode, (variant,), repeats, warmup, bandwidth, seed)[0]


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


def run(sizes: Optional[Dict[str, Sequence[Sequence[int]]]] = None, variants: Sequence[str] = VARIANTS,
        modes: Sequence[str] = MODES, repeats: int = 10, warmup: int = 2,
        bandwidth: Optional[float] = None, gflops: Optional[float] = None,
        progress: ProgressArg = True) -> Results:
    """Compare ``variants`` for every op and shape in ``sizes`` (default
    :data:`~normlib_benchmarks.variants.SMALL_SIZES`) and every mode.

    The load average (1 min) is read before, after each (op, shape, mode) and after the run:
    ``conditions`` keeps the first, the highest and the last.

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
            check(op, variants, MODES[0], shape)
    for mode in modes:
        check_choice("mode", mode, MODES)
    start = time.perf_counter()
    machine = machine_info()
    conditions: Dict[str, object] = {"load_average_before": load_average()}
    cases = [(op, tuple(shape), mode) for op, shapes in sizes.items() for shape in shapes for mode in modes]
    measure_bandwidth = bandwidth is None
    step, close = _progress_bar(progress, len(cases) + 2)
    try:
        step(0, "copy bandwidth, matmul")
        if measure_bandwidth:
            conditions["copy_gbps_before"] = copy_bandwidth()
        gflops = matmul_gflops() if gflops is None else gflops
        rows: List[Row] = []
        highest = conditions["load_average_before"]
        for done, (op, shape, mode) in enumerate(cases, start=1):
            step(done, f"{op} {shape_label(shape)} {mode}")
            rows += compare(op, shape, mode, variants, repeats, warmup, bandwidth)
            load = load_average()
            highest = load if highest is None or (load is not None and load > highest) else highest
        step(len(cases) + 1, "copy bandwidth")
        if measure_bandwidth:
            conditions["copy_gbps_after"] = copy_bandwidth()
            bandwidth = max(conditions["copy_gbps_before"], conditions["copy_gbps_after"])
            for row in rows:
                row.fraction = row.gbps / bandwidth
        step(len(cases) + 2, "done")
    finally:
        close()
    conditions["load_average_after"] = load_average()
    conditions["load_average_max"] = highest     # the highest seen after each case
    return Results(rows=rows, bandwidth=bandwidth, matmul_gflops=gflops, machine=machine,
                   conditions=conditions, seconds=time.perf_counter() - start)
