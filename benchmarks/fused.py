"""Chapter 12's fused kernel (normlib_book.fused) against torch's CPU kernels and the memory limit (issue 39).

    make bench-fused   # or: .venv/bin/python benchmarks/fused.py [--threads N] [--max-repeats N] [--quick]

Every time is the median of calls timed in turn: the functions of one group are called one after the
other, the order rotating each round, so that a change in the machine's load touches them alike.
A group is repeated until every member's spread (interquartile range ÷ median) is at most
``--spread`` (5 %) or ``--max-repeats`` rounds are done (the spread is printed with each time); a
group of section 1 still above 25 % (something else ran) is timed once more, marked ↻ in the table.
torch.compile compiles in this process (``TORCHINDUCTOR_COMPILE_THREADS=1``), so that no pool of
compiling workers runs beside the next timings.
Before timing, ``keep_freed_memory()`` makes glibc reuse freed memory (each call allocates its
outputs; fresh pages from the operating system would be timed otherwise, chapter 8).

1. **Against torch** at transformer sizes (rows 2048-16384 × D 768-4096) and small ones (8 and 64
   rows of 768), forward and forward+backward (``torch.autograd.grad`` of x, γ, β with a fixed dy),
   float32: the fused kernel, torch's ``F.layer_norm`` / ``F.rms_norm`` and ``torch.compile`` of the
   same call (inductor's generated C++ kernel; compiled once per op and mode before timing, shapes
   marked dynamic after the first, as torch.compile does on its own).
2. **Against the memory limit**: the least bytes a call must move ÷ this machine's copy bandwidth
   (``normlib_benchmarks.copy_bandwidth``, 256 MiB, measured at the same thread count):
   forward reads x and writes y (2 passes over the input), forward+backward also reads x and dy and
   writes dx (5 passes); γ, β, their gradients and the per-row statistics are left out (one value per
   feature or row). A write is counted as one pass, as in the copy that calibrates the bandwidth
   (``benchmarks/normlib_benchmarks/work.py``): on x86 a write to a line not in the cache first reads
   it (read-for-ownership), and the copy pays that too, so a kernel with the copy's mix of reads and
   writes is compared fairly; forward+backward, with 3 reads for 2 writes, pays relatively less of
   it than the copy and could in principle go slightly below 1×. "× the memory limit" is the measured
   time ÷ that least time: 1 is the limit.
3. **The chapter's steps**, each against the one before: row sums three ways and row moments two ways
   (one thread, rows in the cache: ns per element), column sums two-stage against one shared vector,
   1 thread against all, the fused residual add against the add followed by the norm, and when a
   thread pays for itself (GRAIN: rows of 768, 1 thread against 2).
4. **Precision and time** of float32 with float32 or float64 accumulation and of bfloat16 (float32
   accumulation): the largest error of y and of dx against float64 on the same (rounded) input,
   relative to the largest value of that output.
5. **Where the time goes** (at the first transformer size where the fused forward+backward is farther
   than 1.5× from the limit, else 8192 × 1024): the forward and the backward timed alone, each against
   its own least bytes and against a copy (1 read, 1 write) and an add (2 reads, 1 write) of the same
   bytes, what this machine's memory does with that mix; and, at 8 × 768, the kernel called alone
   against the whole Python call and torch's, to show what small sizes pay for.

Time must grow with size: each series (op, mode, variant) is checked in order of elements, and a pair
where the larger input took less time is printed and written into the results, never dropped.
Writes ``benchmarks/results/fused.md`` and ``fused.json`` whole (how, commit, machine, threads, load
average, then the tables). Ratios are of this one run; no timing is asserted anywhere.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

# torch.compile's code generation in this process, not in a pool of worker processes that would go on
# compiling (and taking a core) while the next group is timed
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from normlib_benchmarks import copy_bandwidth, keep_freed_memory, machine_info  # noqa: E402
from normlib_benchmarks.machine import load_average  # noqa: E402
from normlib_benchmarks.report import save_results  # noqa: E402
from normlib_book import fused  # noqa: E402

OUT = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parent.parent
TRANSFORMER = [(2048, 768), (8192, 1024), (16384, 768), (4096, 4096), (16384, 2048)]
SMALL = [(8, 768), (64, 768)]
MODES = ("forward", "forward+backward")
PASSES = {"forward": 2, "forward+backward": 5}
GOAL = 1.5
PAYS = 0.85       # 2 threads pay when they take less than this × the time of 1 (a clear gain, not noise)
NOISY = 0.25      # a group with a spread above this after its repeats is timed once more (and marked ↻)


# --- Timing ------------------------------------------------------------------------------------------

class Load:
    """The load average (1 min) before, at its highest between groups, and after."""

    def __init__(self):
        self.before = load_average()
        self.highest = self.before or 0.0

    def note(self):
        now = load_average()
        if now is not None:
            self.highest = max(self.highest, now)


def in_turn(fns: dict, args, load: Load) -> dict:
    """Median seconds and spread of each function, called in turn, the order rotating each round,
    until every spread is at most ``args.spread`` (after ``args.min_repeats`` rounds) or
    ``args.max_repeats`` rounds."""
    names = list(fns)
    for _ in range(args.warmup):
        for name in names:
            fns[name]()
    times = {name: [] for name in names}

    def spread(t):
        q1, _, q3 = statistics.quantiles(t, n=4)
        return (q3 - q1) / statistics.median(t)

    k = 0
    while True:
        for name in names[k % len(names):] + names[:k % len(names)]:
            start = time.perf_counter()
            fns[name]()
            times[name].append(time.perf_counter() - start)
        k += 1
        if k >= args.max_repeats or (k >= args.min_repeats and all(spread(t) <= args.spread for t in times.values())):
            break
    load.note()
    return {name: {"seconds": statistics.median(t), "spread": spread(t), "calls": len(t)} for name, t in times.items()}


# --- What is timed -----------------------------------------------------------------------------------

def inputs(shape, dtype=torch.float32, seed=0, offset=0.0):
    g = torch.Generator().manual_seed(seed)
    x = (offset + torch.randn(shape, generator=g)).to(dtype)
    w = (0.5 + torch.rand(shape[-1], generator=g)).to(dtype)
    b = torch.randn(shape[-1], generator=g).to(dtype)
    dy = torch.randn(shape, generator=g).to(dtype)
    return x, w, b, dy


def torch_fn(op):
    if op == "layer_norm":
        return lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b, 1e-5)
    return lambda x, w, b: F.rms_norm(x, (x.shape[-1],), w, 1e-5)


def fused_fn(op, threads=None, accumulate=None):
    if op == "layer_norm":
        return lambda x, w, b: fused.layer_norm(x, w, b, 1e-5, accumulate=accumulate, threads=threads)
    return lambda x, w, b: fused.rms_norm(x, w, 1e-5, accumulate=accumulate, threads=threads)


def call(fn, mode, x, w, b, dy):
    """One timed call: the forward without gradients, or the forward and the gradients of x, γ (and β)."""
    if mode == "forward":
        def run():
            with torch.no_grad():
                fn(x, w, b)
        return run
    xg, wg, bg = (t.detach().requires_grad_(True) for t in (x, w, b))

    def run():
        y = fn(xg, wg, bg)
        torch.autograd.grad(y, [xg, wg, bg], dy)
    return run


_compiled: dict = {}


def compiled_fn(op, mode):
    """torch.compile of torch's own call, one per op and mode (inductor writes its C++ kernel)."""
    key = (op, mode)
    if key not in _compiled:
        _compiled[key] = torch.compile(torch_fn(op))
    return _compiled[key]


def op_call(op, variant, mode, tensors, threads=None):
    fn = {"fused": lambda: fused_fn(op, threads), "torch": lambda: torch_fn(op),
          "compiled": lambda: compiled_fn(op, mode)}[variant]()
    x, w, b, dy = tensors
    if op == "rms_norm" and mode != "forward":
        xg, wg = (t.detach().requires_grad_(True) for t in (x, w))

        def run():
            y = fn(xg, wg, None)
            torch.autograd.grad(y, [xg, wg], dy)
        return run
    return call(fn, mode, x, w, b, dy)


def least_seconds(shape, mode, bandwidth, element_size=4, passes=None):
    return (passes or PASSES[mode]) * math.prod(shape) * element_size / (bandwidth * 1e9)


# --- The measurements -------------------------------------------------------------------------------

def against_torch(args, load, bandwidth):
    rows = []
    for op in ("layer_norm", "rms_norm"):
        for shape in (SMALL + TRANSFORMER if not args.quick else [(8, 768), (2048, 768)]):
            tensors = inputs(shape)
            for mode in MODES:
                fns = {v: op_call(op, v, mode, tensors) for v in ("fused", "torch", "compiled")}
                start = time.perf_counter()
                fns["compiled"]()                      # the compile (first call), outside the timings
                compile_seconds = time.perf_counter() - start
                timed = in_turn(fns, args, load)
                remeasured = any(t["spread"] > NOISY for t in timed.values())
                if remeasured:                         # something else ran: the group once more, said so
                    timed = in_turn(fns, args, load)
                limit = least_seconds(shape, mode, bandwidth)
                for variant, t in timed.items():
                    rows.append({"op": op, "shape": list(shape), "mode": mode, "variant": variant, **t,
                                 "x_limit": t["seconds"] / limit, "remeasured": remeasured,
                                 "compile_seconds": compile_seconds if variant == "compiled" else None})
                print(f"{op} {shape} {mode}: " + ", ".join(
                    f"{v} {1e3 * t['seconds']:.3f} ms ({100 * t['spread']:.0f}%)" for v, t in timed.items()),
                    flush=True)
    return rows


def size_check(rows):
    """Every neighbouring pair (in order of elements) of a series where the larger took no longer."""
    series = {}
    for r in rows:
        series.setdefault((r["op"], r["mode"], r["variant"]), []).append(r)
    out = []
    for (op, mode, variant), group in series.items():
        group = sorted(group, key=lambda r: math.prod(r["shape"]))
        for small, large in zip(group, group[1:]):
            if large["seconds"] <= small["seconds"]:
                out.append({"op": op, "mode": mode, "variant": variant, "shape": small["shape"],
                            "seconds": small["seconds"], "larger": large["shape"], "larger_seconds": large["seconds"]})
    return out


def steps(args, load, threads):
    out = {}
    # row sums and row moments: one thread, rows in the cache (16 × 4096 float32 = 256 KiB)
    x = inputs((16, 4096))[0]
    n = x.numel()
    with torch.no_grad():
        t = in_turn({how: (lambda h=how: fused.row_sums(x, h)) for how in fused.ROW_SUMS}, args, load)
        out["row_sums"] = {how: {**v, "ns_per_element": 1e9 * v["seconds"] / n} for how, v in t.items()}
        t = in_turn({how: (lambda h=how: fused.row_moments(x, h)) for how in fused.ROW_MOMENTS}, args, load)
        out["row_moments"] = {how: {**v, "ns_per_element": 1e9 * v["seconds"] / n} for how, v in t.items()}
        big = inputs((8192, 1024))[0]
        t = in_turn({how: (lambda h=how: fused.row_moments(big, h)) for how in fused.ROW_MOMENTS}, args, load)
        out["row_moments_from_memory"] = {how: {**v, "ns_per_element": 1e9 * v["seconds"] / big.numel()}
                                          for how, v in t.items()}
        # column sums: per-thread partials then one sum, against one shared vector (atomic adds)
        fns = {}
        for nt in sorted({1, threads}):
            for how in fused.COLUMN_SUMS:
                fns[f"{how}, {nt} thread(s)"] = (lambda h=how, k=nt: fused.column_sums(big, h, threads=k))
        out["column_sums"] = in_turn(fns, args, load)
    # one thread against all, forward + backward, a transformer size
    shape = (8192, 1024)
    tensors = inputs(shape)
    fns = {f"{nt} thread(s)": op_call_threads("layer_norm", tensors, nt) for nt in sorted({1, threads})}
    out["threads"] = {"shape": list(shape), **in_turn(fns, args, load)}
    # the fused residual add: add_layer_norm against x + r then the norm (fused, and torch's)
    out["residual"] = residual(args, load, shape)
    # when does a thread pay: rows of 768, 1 thread against 2 (fused.GRAIN set to 1 so both really run)
    out["grain"] = grain(args, load, threads)
    return out


def op_call_threads(op, tensors, nt):
    x, w, b, dy = tensors
    xg, wg, bg = (t.detach().requires_grad_(True) for t in (x, w, b))

    def run():
        y = fused.layer_norm(xg, wg, bg, threads=nt)
        torch.autograd.grad(y, [xg, wg, bg], dy)
    return run


def residual(args, load, shape):
    x, w, b, dy = inputs(shape)
    r = inputs(shape, seed=1)[0]
    out = {"shape": list(shape)}
    with torch.no_grad():
        out["forward"] = in_turn({
            "fused add_layer_norm": lambda: fused.add_layer_norm(x, r, w, b),
            "x + r, then fused layer_norm": lambda: fused.layer_norm(x + r, w, b),
            "x + r, then F.layer_norm": lambda: F.layer_norm(x + r, (shape[-1],), w, b),
        }, args, load)
    xg, rg, wg, bg = (t.detach().requires_grad_(True) for t in (x, r, w, b))

    def fused_add():
        y, h = fused.add_layer_norm(xg, rg, wg, bg)
        torch.autograd.grad(y, [xg, rg, wg, bg], dy)

    def add_then(norm):
        def run():
            y = norm(xg + rg)
            torch.autograd.grad(y, [xg, rg, wg, bg], dy)
        return run

    out["forward+backward"] = in_turn({
        "fused add_layer_norm": fused_add,
        "x + r, then fused layer_norm": add_then(lambda h: fused.layer_norm(h, wg, bg)),
        "x + r, then F.layer_norm": add_then(lambda h: F.layer_norm(h, (shape[-1],), wg, bg)),
    }, args, load)
    return out


def grain(args, load, threads):
    if threads < 2:
        return {"skipped": "one thread only"}
    saved, fused.GRAIN = fused.GRAIN, 1
    rows_list = [2, 8, 16, 24, 32, 48, 64, 96, 128, 256]
    out = []
    try:
        for rows in rows_list:
            tensors = inputs((rows, 768))
            t = in_turn({"1": op_call_threads("layer_norm", tensors, 1),
                         "2": op_call_threads("layer_norm", tensors, 2)}, args, load)
            out.append({"rows": rows, "elements": rows * 768, "one": t["1"], "two": t["2"],
                        "two_over_one": t["2"]["seconds"] / t["1"]["seconds"]})
    finally:
        fused.GRAIN = saved
    # the first size from which on 2 threads always take less than PAYS × the time of 1
    paying = next((o["elements"] for k, o in enumerate(out) if all(p["two_over_one"] < PAYS for p in out[k:])), None)
    # threads_for gives 2 threads from 2 × GRAIN elements: the power of two with 2 × GRAIN ≥ that size
    suggested = 2 ** math.ceil(math.log2(paying / 2)) if paying else None
    return {"per_rows": out, "first_paying_elements": paying, "suggested_grain": suggested, "grain": saved}


def precision(args, load, bandwidth):
    shape = (8192, 1024)
    out = []
    for name, dtype, acc in (("float32, float32 accumulation", torch.float32, torch.float32),
                             ("float32, float64 accumulation", torch.float32, torch.float64),
                             ("bfloat16, float32 accumulation", torch.bfloat16, torch.float32)):
        for offset in (0.0, 100.0):
            x, w, b, dy = inputs(shape, dtype, seed=2, offset=offset)
            # the float64 reference on the same rounded inputs
            x64, w64, b64, dy64 = (t.double().requires_grad_(True) for t in (x, w, b, dy))
            y64 = F.layer_norm(x64, (shape[-1],), w64, b64, 1e-5)
            (dx64,) = torch.autograd.grad(y64, [x64], dy64)
            xg, wg, bg = (t.detach().requires_grad_(True) for t in (x, w, b))
            y = fused.layer_norm(xg, wg, bg, accumulate=acc)
            (dx,) = torch.autograd.grad(y, [xg], dy)
            err_y = float((y.double() - y64).abs().max() / y64.abs().max())
            err_dx = float((dx.double() - dx64).abs().max() / dx64.abs().max())
            yt = F.layer_norm(x, (shape[-1],), w, b, 1e-5)
            err_torch = float((yt.double() - y64).abs().max() / y64.abs().max())
            row = {"name": name, "offset": offset, "error_y": err_y, "error_dx": err_dx, "torch_error_y": err_torch}
            if offset == 0.0:
                t = in_turn({"fused": op_call_dtype(x, w, b, dy, acc)}, args, load)["fused"]
                row.update(seconds=t["seconds"], spread=t["spread"],
                           x_limit=t["seconds"] / least_seconds(shape, "forward+backward", bandwidth, x.element_size()))
            out.append(row)
    return {"shape": list(shape), "rows": out}


def op_call_dtype(x, w, b, dy, acc):
    xg, wg, bg = (t.detach().requires_grad_(True) for t in (x, w, b))

    def run():
        y = fused.layer_norm(xg, wg, bg, accumulate=acc)
        torch.autograd.grad(y, [xg, wg, bg], dy)
    return run


def why(args, load, bandwidth, shape):
    """The fused forward and backward timed apart, each against its own least bytes (2 and 3 passes),
    and torch's, to see which half is far from the limit."""
    x, w, b, dy = inputs(shape)
    xg, wg, bg = (t.detach().requires_grad_(True) for t in (x, w, b))
    y_f = fused.layer_norm(xg, wg, bg)
    y_t = F.layer_norm(xg, (shape[-1],), wg, bg)
    out = torch.empty_like(x)
    fns = {
        "a copy, out.copy_(x) (1 read, 1 write: the forward's bytes)": lambda: out.copy_(x),
        "an add, torch.add(x, dy, out=out) (2 reads, 1 write: the backward's bytes)":
            lambda: torch.add(x, dy, out=out),
        "fused forward (with autograd's graph)": lambda: fused.layer_norm(xg, wg, bg),
        "fused backward": lambda: torch.autograd.grad(y_f, [xg, wg, bg], dy, retain_graph=True),
        "torch forward (with autograd's graph)": lambda: F.layer_norm(xg, (shape[-1],), wg, bg),
        "torch backward": lambda: torch.autograd.grad(y_t, [xg, wg, bg], dy, retain_graph=True),
    }
    t = in_turn(fns, args, load)
    for name, v in t.items():
        v["x_limit"] = v["seconds"] / least_seconds(shape, "forward", bandwidth,
                                                    passes=2 if ("forward" in name or "copy" in name) else 3)
    return {"shape": list(shape), **t}


def overhead(args, load, shape=(8, 768)):
    """At a small size: the kernel called straight through ctypes into preallocated outputs, against
    the whole fused.layer_norm (argument checks, allocation, the ctypes call) and torch's F.layer_norm,
    forward without gradients."""
    x, w, b, _ = inputs(shape)
    lib = fused.load()
    y, mean, rstd = torch.empty_like(x), torch.empty(shape[0]), torch.empty(shape[0])
    ptrs = [t.data_ptr() for t in (x, w, b)]
    with torch.no_grad():
        t = in_turn({
            "the kernel alone (ctypes, outputs allocated once)": lambda: lib.norm_forward(
                1, 0, 0, shape[0], shape[1], ptrs[0], None, None, ptrs[1], ptrs[2], 1e-5, 0, y.data_ptr(),
                mean.data_ptr(), rstd.data_ptr(), 1),
            "fused.layer_norm": lambda: fused.layer_norm(x, w, b),
            "F.layer_norm": lambda: F.layer_norm(x, (shape[-1],), w, b),
        }, args, load)
    return {"shape": list(shape), **t}


# --- The report --------------------------------------------------------------------------------------

def _commit() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=False).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "book/normlib_book/fused", "benchmarks/fused.py"],
                               cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return "unknown"
    return (head or "unknown") + (" (the kernel or this script with uncommitted changes)" if dirty else "")


def ms(v):
    return f"{1e3 * v['seconds']:.3f} ms ({100 * v['spread']:.0f}%)"


def report(r) -> str:
    m = r["machine"]
    lines = [
        "# Chapter 12's fused kernel against torch's CPU kernels and the memory limit",
        "",
        f"Written whole by `make bench-fused` (benchmarks/fused.py, whose docstring says what each line "
        f"measures) on commit {r['commit']}, {m['date']}: {m['cpu']} ({m['cores']} cores), "
        f"{r['threads']} thread(s), torch {m['torch']}, Python {m['python']}, {m['platform']}.",
        "",
        f"- load average (1 min) before / highest between groups / after: {r['load_before']:.2f} / "
        f"{r['load_highest']:.2f} / {r['load_after']:.2f}; the run took {r['seconds']:.0f} s",
        f"- copy bandwidth (`dst.copy_(src)`, 256 MiB, read + write) at {r['threads']} thread(s): "
        f"**{r['bandwidth']:.1f} GB/s** (the higher of {r['bandwidth_before']:.1f} before and "
        f"{r['bandwidth_after']:.1f} after); at 1 thread {r['bandwidth_one']:.1f} GB/s",
        f"- each time: the median of calls timed in turn, repeated until every spread (IQR ÷ median, in "
        f"parentheses) was ≤ {100 * r['spread_target']:.0f}% or {r['max_repeats']} rounds; freed memory "
        f"kept for reuse: {'yes' if r['kept_memory'] else 'no'}",
        f"- the kernel: cold compile {r['compile']['cold_seconds']:.1f} s (the first build on this machine, "
        f"{' '.join(fused.FLAGS)}); `fused.load()` of the cached build in a new process {r['compile']['warm_seconds']:.2f} s"
        if r["compile"]["cold_seconds"] is not None else
        f"- the kernel: found in the cache (no compile in this run); `fused.load()` in a new process "
        f"{r['compile']['warm_seconds']:.2f} s",
        "",
        "## 1. Against torch and the memory limit (float32)",
        "",
        "× limit: the time ÷ (the least bytes ÷ the copy bandwidth): forward 2 passes over the input "
        "(read x, write y), forward+backward 5 (also read x and dy, write dx); a write counts as one pass, as "
        "in the copy. torch ÷ fused > 1: the fused kernel is faster. ↻: a group whose spread was above "
        f"{100 * NOISY:.0f}% was timed once more, and the second timing is shown; ⚠: the size check below.",
        "",
        "| op | rows × D | mode | fused | torch | torch.compile | torch ÷ fused | compiled ÷ fused | "
        "fused × limit | torch × limit |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    by = {}
    for row in r["rows"]:
        by[row["op"], tuple(row["shape"]), row["mode"], row["variant"]] = row
    for (op, shape, mode, variant), row in by.items():
        if variant != "fused":
            continue
        t, c = by[op, shape, mode, "torch"], by[op, shape, mode, "compiled"]
        flag = " ⚠" if any(tuple(s["shape"]) == shape and s["op"] == op and s["mode"] == mode
                           for s in r["size_check"]) else ""
        flag += " ↻" if row.get("remeasured") else ""
        lines.append(f"| {op} | {shape[0]} × {shape[1]}{flag} | {mode} | {ms(row)} | {ms(t)} | {ms(c)} | "
                     f"**{t['seconds'] / row['seconds']:.2f}** | {c['seconds'] / row['seconds']:.2f} | "
                     f"**{row['x_limit']:.2f}** | {t['x_limit']:.2f} |")
    lines += ["", "### The goal: forward+backward faster than torch's LayerNorm, within "
              f"{GOAL}× of the memory limit, at transformer sizes", ""]
    for g in r["goal"]:
        lines.append(f"- {g['op']} {g['shape'][0]} × {g['shape'][1]}: torch ÷ fused {g['speedup']:.2f} "
                     f"({'faster' if g['faster'] else '**not faster**'}); × limit {g['x_limit']:.2f} "
                     f"({'within' if g['within'] else '**not within**'} {GOAL}×)")
    lines += ["", "### Time grows with size", ""]
    if r["size_check"]:
        lines += [f"- ⚠ {s['op']} {s['mode']} {s['variant']}: {s['shape']} took {1e3 * s['seconds']:.3f} ms, "
                  f"the larger {s['larger']} {1e3 * s['larger_seconds']:.3f} ms" for s in r["size_check"]]
    else:
        lines.append("- every series (op, mode, variant) takes longer at every larger size: no row was measured "
                     "while something else slowed it.")
    s = r["steps"]
    lines += ["", "## 2. The chapter's steps (each against the one before)", "",
              "### Row sums, one thread, 16 × 4096 float32 in the cache", ""]
    base = s["row_sums"]["serial"]["seconds"]
    lines += [f"- {how}: {v['ns_per_element']:.3f} ns per element ({100 * v['spread']:.0f}%), serial ÷ this "
              f"= **{base / v['seconds']:.1f}**" for how, v in s["row_sums"].items()]
    lines += ["", "### Row moments, one thread: in the cache (16 × 4096) and from memory (8192 × 1024)", ""]
    for key in ("row_moments", "row_moments_from_memory"):
        tp = s[key]["two_pass"]["seconds"]
        lines += [f"- {key.replace('_', ' ')}, {how}: {v['ns_per_element']:.3f} ns per element "
                  f"({100 * v['spread']:.0f}%), two_pass ÷ this = **{tp / v['seconds']:.2f}**"
                  for how, v in s[key].items()]
    lines += ["", "### Column sums (what dγ, dβ are), 8192 × 1024", ""]
    lines += [f"- {name}: {ms(v)}" for name, v in s["column_sums"].items()]
    two = [k for k in s["column_sums"] if k.startswith("two_stage")][-1]
    shared = [k for k in s["column_sums"] if k.startswith("shared")][-1]
    lines.append(f"- shared ÷ two-stage at the most threads: **{s['column_sums'][shared]['seconds'] / s['column_sums'][two]['seconds']:.1f}**")
    th = {k: v for k, v in s["threads"].items() if k != "shape"}
    names = list(th)
    lines += ["", f"### Threads: fused LayerNorm forward+backward, {s['threads']['shape'][0]} × "
              f"{s['threads']['shape'][1]}", ""]
    lines += [f"- {name}: {ms(v)}" for name, v in th.items()]
    if len(names) > 1:
        lines.append(f"- 1 thread ÷ {names[-1]} = **{th[names[0]]['seconds'] / th[names[-1]]['seconds']:.2f}** "
                     f"(copy bandwidth at 1 thread ÷ at {r['threads']}: {r['bandwidth_one'] / r['bandwidth']:.2f})")
    res = s["residual"]
    lines += ["", f"### The fused residual add, LayerNorm, {res['shape'][0]} × {res['shape'][1]}", ""]
    for mode in MODES:
        fz = res[mode]["fused add_layer_norm"]["seconds"]
        lines += [f"- {mode}, {name}: {ms(v)}, ÷ fused add = **{v['seconds'] / fz:.2f}**"
                  for name, v in res[mode].items()]
    gr = s["grain"]
    lines += ["", "### When a thread pays: LayerNorm forward+backward on rows of 768, 2 threads ÷ 1", ""]
    if "per_rows" in gr:
        lines += [f"- {o['rows']} rows ({o['elements']} elements): {1e6 * o['one']['seconds']:.1f} µs on 1, "
                  f"{1e6 * o['two']['seconds']:.1f} µs on 2: **{o['two_over_one']:.2f}**" for o in gr["per_rows"]]
        lines.append(f"- from {gr['first_paying_elements']} elements on, 2 threads always take less than {PAYS} × the "
                     f"time of 1; a call uses 2 threads from 2 × GRAIN elements: GRAIN = {gr['suggested_grain']} "
                     f"would follow (the power of two at or above half that size); fused.GRAIN in this run: "
                     f"{gr['grain']}")
    else:
        lines.append(f"- {gr['skipped']}")
    p = r["precision"]
    lines += ["", f"## 3. Precision and time, LayerNorm {p['shape'][0]} × {p['shape'][1]}", "",
              "Error: the largest |output − float64 reference| ÷ the largest |reference| (on the same rounded "
              "inputs); time: forward+backward, × limit with the bytes of the input's dtype.", "",
              "| input, accumulation | mean of x | error of y | error of dx | torch's error of y | time | × limit |",
              "|---|---|---|---|---|---|---|"]
    for row in p["rows"]:
        time_cells = (f"{1e3 * row['seconds']:.3f} ms ({100 * row['spread']:.0f}%) | {row['x_limit']:.2f}"
                      if "seconds" in row else "| ")
        lines.append(f"| {row['name']} | {row['offset']:g} | {row['error_y']:.1e} | {row['error_dx']:.1e} | "
                     f"{row['torch_error_y']:.1e} | {time_cells} |")
    if r.get("why"):
        w = r["why"]
        lines += ["", f"## 4. Where the time goes, LayerNorm {w['shape'][0]} × {w['shape'][1]} (forward: 2 "
                  "passes, backward: 3)", ""]
        lines += [f"- {name}: {ms(v)}, × its limit **{v['x_limit']:.2f}**" for name, v in w.items() if name != "shape"]
        parts = {name.split(" (")[0].split(",")[0]: v["seconds"] for name, v in w.items() if name != "shape"}
        lines.append(f"- fused forward ÷ the copy {parts['fused forward'] / parts['a copy']:.2f}, torch forward ÷ the "
                     f"copy {parts['torch forward'] / parts['a copy']:.2f}; fused backward ÷ the add "
                     f"{parts['fused backward'] / parts['an add']:.2f}, torch backward ÷ the add "
                     f"{parts['torch backward'] / parts['an add']:.2f}: the copy and the add move the same bytes "
                     "with the least work, so these say how far each half is from what this machine's memory "
                     "does with that mix of reads and writes")
    if r.get("overhead"):
        o = r["overhead"]
        lines += ["", f"## 5. Small sizes: the call, not the kernel (LayerNorm forward, {o['shape'][0]} × "
                  f"{o['shape'][1]}, no gradients)", ""]
        lines += [f"- {name}: {1e6 * v['seconds']:.1f} µs ({100 * v['spread']:.0f}%)" for name, v in o.items()
                  if name != "shape"]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=0, help="torch's and the kernel's threads (0: torch's default)")
    parser.add_argument("--min-repeats", type=int, default=8)
    parser.add_argument("--max-repeats", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--spread", type=float, default=0.05)
    parser.add_argument("--quick", action="store_true", help="two sizes and few repeats: a check that it runs")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if args.quick:
        args.min_repeats, args.max_repeats, args.warmup = 3, 4, 1
    if args.threads:
        torch.set_num_threads(args.threads)
    threads = torch.get_num_threads()
    start = time.perf_counter()
    load = Load()
    commit = _commit()                         # before this run writes anything
    cold = None
    library = fused.build_directory() / f"{fused.build_directory().name}.so"
    if not library.exists():
        t0 = time.perf_counter()
        fused.load()
        cold = time.perf_counter() - t0
    code = "import time\nfrom normlib_book import fused\nt = time.perf_counter()\nfused.load()\nprint(time.perf_counter() - t)"
    warm = float(subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, capture_output=True,
                                text=True).stdout.split()[-1])
    fused.load()
    kept = keep_freed_memory()
    before = copy_bandwidth()
    torch.set_num_threads(1)
    one = copy_bandwidth()
    torch.set_num_threads(threads)
    rows = against_torch(args, load, before)
    after = copy_bandwidth()
    bandwidth = max(before, after)
    for row in rows:                           # the limit with the higher of the two bandwidths
        row["x_limit"] = row["seconds"] / least_seconds(row["shape"], row["mode"], bandwidth)
    result = {
        "machine": machine_info(), "commit": commit, "threads": threads, "bandwidth": bandwidth,
        "bandwidth_before": before, "bandwidth_after": after, "bandwidth_one": one, "kept_memory": kept,
        "spread_target": args.spread, "max_repeats": args.max_repeats, "min_repeats": args.min_repeats,
        "compile": {"cold_seconds": cold, "warm_seconds": warm, "flags": fused.FLAGS},
        "grain": fused.GRAIN, "rows": rows, "size_check": size_check(rows),
    }
    for s in result["size_check"]:
        print(f"size check ⚠ {s}", flush=True)
    result["goal"] = []
    for row in rows:
        if row["variant"] == "fused" and row["mode"] == "forward+backward" and tuple(row["shape"]) in TRANSFORMER:
            t = next(o for o in rows if o["variant"] == "torch" and o["op"] == row["op"] and o["shape"] == row["shape"]
                     and o["mode"] == row["mode"])
            speedup = t["seconds"] / row["seconds"]
            result["goal"].append({"op": row["op"], "shape": row["shape"], "speedup": speedup, "faster": speedup > 1,
                                   "x_limit": row["x_limit"], "within": row["x_limit"] <= GOAL})
    result["steps"] = steps(args, load, threads)
    result["precision"] = precision(args, load, bandwidth)
    far = [g for g in result["goal"] if not g["within"]]
    result["why"] = why(args, load, bandwidth, tuple(far[0]["shape"]) if far else (8192, 1024))
    result["overhead"] = overhead(args, load)
    result["load_before"] = load.before if load.before is not None else float("nan")
    result["load_highest"] = load.highest
    result["load_after"] = load_average() or float("nan")
    result["seconds"] = time.perf_counter() - start
    save_results(args.out, "fused", json.dumps(result, indent=1, ensure_ascii=False), report(result))
    print(f"written to {args.out}/fused.{{md,json}}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
