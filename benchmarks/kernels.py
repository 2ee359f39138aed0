"""What the passes × bytes ÷ bandwidth model of chapter 8 leaves out, measured (issue 27).

    make bench-kernels   # or: .venv/bin/python benchmarks/kernels.py [--repeats N] [--threads N]   (1 thread by default)

Three effects, each as ratios of times measured in this one process, the calls of a group timed
in turn (call after call, the order rotating) so that a change in the machine's load touches
them alike; each time is the median of ``--repeats`` calls after warm-up.

1. allocation: a copy into a preallocated tensor (``dst.copy_(x)``) against a copy into a new one
   (``x.clone()``), first with glibc's malloc as it starts (large blocks come back as fresh pages
   that the kernel must map and zero on first touch), then after ``bench.keep_freed_memory()``.
2. BatchNorm2d's statistics (32 × 64 × 112 × 112, float32, freed memory kept): the copy, the
   evaluation-mode forward (normalize with given statistics: one read, one write), the
   training-mode forward, the same training-mode forward on a channels-last copy of the input
   (the same op and bytes, but ATen collects the statistics with a vectorized loop there), and a
   per-channel sum (``x.sum((0, 2, 3))``). In the default (contiguous) layout ATen's
   ``batch_norm_cpu_collect_stats_contiguous_impl`` sums each channel in a scalar loop with a
   ``double`` accumulator, once for the mean and once for the variance, parallel over channels only;
   ``ns_per_element`` is (training − evaluation) ÷ (2 × elements): the time of one step of that loop.
   The in-core ceiling of such a loop is measured beside it: ``add_latency_ns``, one addition of a
   chain of dependent additions (``torch.cumsum`` of a vector in cache: ATen's scalar loop with one
   ``double`` accumulator), the same chain fed from memory (``add_latency_memory_ns``: cumsum of
   32 to 128 MiB), and ``vector_sum_ns``, one addition of the vectorized ``x.sum()`` on data in cache. The same group is timed again on all the machine's cores (``batch_norm_all_cores``):
   the statistics loop runs in parallel over channels, the copy is bound by the memory.
3. a fixed cost per operation: ``a + a`` on 1 element against 65,536 elements (256 KB), and a
   training-mode ``batch_norm`` on 8 × 32 × 16 × 16 (the same 65,536 elements).
4. LayerNorm's forward taken apart (8192 × 4096, float32, 128 MiB, freed memory kept): the copy
   (one read, one write), ``x.sum(-1)`` (one read: the first half of the row statistics),
   ``dst.fill_(1.0)`` (one write), ``torch.var_mean(x, -1)`` (the moments; ATen's CPU ``var_mean``
   is a scalar Welford loop in double, not the vectorized row moments inside ``layer_norm``), and
   ``layer_norm`` without and with γ and β.

Section 1 is run again in a child process with ``GLIBC_TUNABLES=glibc.malloc.hugetlb=1``, which has
glibc's malloc ask the kernel for transparent huge pages (``madvise``): one page fault then maps
2 MiB instead of 4 KiB (``huge_pages``; the kernel's setting is recorded beside it).

Writes ``kernels.md`` and ``kernels.json`` to benchmarks/results/ (chapter 8 prints the ratios and
says when and where they were measured). About a minute on 2 cores. Timings live here and in
the results, never in tests.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
from torch.nn import functional as F

import normlib_benchmarks as bench
from normlib_benchmarks import machine_info
from normlib_benchmarks.machine import add_latency_ns, huge_pages, load_average, vector_sum_ns, virtualization
from normlib_benchmarks.report import save_results

OUT = Path(__file__).resolve().parent / "results"
SHAPE = (32, 64, 112, 112)
SMALL = (8, 32, 16, 16)
ROWS = (8192, 4096)
TUNABLE = "glibc.malloc.hugetlb=1"


def in_turn(fns: dict, repeats: int, warmup: int) -> dict:
    """Median seconds and spread (interquartile range ÷ median) of each function, the calls in turn."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    times = {name: [] for name in fns}
    names = list(fns)
    for k in range(repeats):
        for name in names[k % len(names):] + names[:k % len(names)]:
            start = time.perf_counter()
            fns[name]()
            times[name].append(time.perf_counter() - start)
    out = {}
    for name, t in times.items():
        q1, median, q3 = statistics.quantiles(t, n=4)
        out[name] = {"seconds": statistics.median(t), "spread": (q3 - q1) / statistics.median(t)}
    return out


def allocation(repeats: int, warmup: int) -> dict:
    """Section 1's copies, first with malloc as the process started, then with freed memory kept."""
    x = torch.randn(SHAPE, generator=torch.Generator().manual_seed(0))
    dst = torch.empty_like(x)
    copies = {"copy_": lambda: dst.copy_(x), "clone": x.clone}
    result = {}
    with torch.inference_mode():
        result["fresh"] = in_turn(copies, repeats, warmup)
        result["kept_memory"] = bench.keep_freed_memory()
        result["kept"] = in_turn(copies, repeats, warmup)
    return result


def with_huge_pages(repeats: int, warmup: int, threads: int) -> dict:
    """Section 1 again in a child process whose malloc asks for transparent huge pages."""
    env = {**os.environ, "GLIBC_TUNABLES": TUNABLE}
    done = subprocess.run([sys.executable, __file__, "--allocation-only", "--repeats", str(repeats),
                           "--warmup", str(warmup), "--threads", str(threads)],
                          env=env, capture_output=True, text=True, check=True)
    return {"tunable": TUNABLE, "setting": huge_pages(), **json.loads(done.stdout)}


def batch_norm_group(x, dst, repeats: int, warmup: int) -> dict:
    x_cl = x.contiguous(memory_format=torch.channels_last)
    mean, var = torch.zeros(SHAPE[1]), torch.ones(SHAPE[1])
    return in_turn({
        "copy_": lambda: dst.copy_(x),
        "eval": lambda: F.batch_norm(x, mean, var, training=False),
        "train": lambda: F.batch_norm(x, None, None, training=True),
        "train_channels_last": lambda: F.batch_norm(x_cl, None, None, training=True),
        "channel_sum": lambda: x.sum((0, 2, 3)),
    }, repeats, warmup)


def measure(repeats: int, warmup: int) -> dict:
    result = allocation(repeats, warmup)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(SHAPE, generator=gen)
    dst = torch.empty_like(x)
    with torch.inference_mode():
        result["batch_norm"] = batch_norm_group(x, dst, repeats, warmup)
        bn = result["batch_norm"]
        result["ns_per_element"] = 1e9 * (bn["train"]["seconds"] - bn["eval"]["seconds"]) / (2 * x.numel())
        result["add_latency_ns"] = add_latency_ns()
        result["add_latency_memory_ns"] = add_latency_ns(in_cache=False)
        result["vector_sum_ns"] = vector_sum_ns()
        threads = torch.get_num_threads()
        cores = os.cpu_count() or 1
        torch.set_num_threads(cores)
        try:
            result["batch_norm_all_cores"] = {"threads": cores, **batch_norm_group(x, dst, repeats, warmup)}
        finally:
            torch.set_num_threads(threads)

        rows = torch.randn(ROWS, generator=gen)
        out = torch.empty_like(rows)
        weight, bias = 1 + 0.5 * torch.randn(ROWS[1], generator=gen), 0.5 * torch.randn(ROWS[1], generator=gen)
        result["layer_norm"] = in_turn({
            "copy_": lambda: out.copy_(rows),
            "sum": lambda: rows.sum(-1),
            "fill_": lambda: out.fill_(1.0),
            "var_mean": lambda: torch.var_mean(rows, -1, correction=0),
            "layer_norm_plain": lambda: F.layer_norm(rows, ROWS[-1:]),
            "layer_norm": lambda: F.layer_norm(rows, ROWS[-1:], weight, bias),
        }, repeats, warmup)

        one, small = torch.ones(1), torch.randn(SMALL, generator=gen)
        result["overhead"] = in_turn({
            "add_1": lambda: one + one,
            "add_small": lambda: small + small,
            "batch_norm_train_small": lambda: F.batch_norm(small, None, None, training=True),
        }, 50 * repeats, 50 * warmup)
    return result


def report(result: dict) -> str:
    m, r = result["machine"], result
    bn, ov, ln, hp = r["batch_norm"], r["overhead"], r["layer_norm"], r["huge_pages"]
    allc = r["batch_norm_all_cores"]
    ms = lambda d, k: f"{1000 * d[k]['seconds']:.2f} ms ({100 * d[k]['spread']:.0f}%)"
    us = lambda d, k: f"{1e6 * d[k]['seconds']:.1f} µs ({100 * d[k]['spread']:.0f}%)"
    ratio = lambda d, a, b: d[a]["seconds"] / d[b]["seconds"]
    lines = [
        "# What passes × bytes ÷ bandwidth leaves out: allocation, a serial loop, a fixed cost per call",
        "",
        f"Run {m['date']} on {m['cpu']} ({m['cores']} cores), torch {m['torch']} with {m['threads']} thread(s), "
        f"Python {m['python']}, float32. Written by `make bench-kernels` (benchmarks/kernels.py), whose "
        "docstring says what each line measures.",
        "",
        f"- {r['repeats']} timed calls of each (×50 for the small calls) after {r['warmup']} warm-up calls, "
        f"timed in turn; median (spread = interquartile range ÷ median); load average (1 min) before / after: "
        f"{r['load_before']:.2f} / {r['load_after']:.2f}; the run took {r['seconds']:.0f} s",
        "",
        f"## 1. Allocation ({'×'.join(map(str, SHAPE))}, {4 * torch.Size(SHAPE).numel() / 2**20:.0f} MiB)",
        "",
        f"- glibc's malloc as it starts: `copy_` {ms(r['fresh'], 'copy_')}, `clone` {ms(r['fresh'], 'clone')}: "
        f"**clone ÷ copy_ = {ratio(r['fresh'], 'clone', 'copy_'):.2f}**",
        f"- after `bench.keep_freed_memory()` ({r['kept_memory']}): `copy_` {ms(r['kept'], 'copy_')}, "
        f"`clone` {ms(r['kept'], 'clone')}: **clone ÷ copy_ = {ratio(r['kept'], 'clone', 'copy_'):.2f}**",
        f"- with transparent huge pages (`GLIBC_TUNABLES={hp['tunable']}`, the kernel's setting `{hp['setting']}`), "
        f"in a child process: clone ÷ copy_ = **{ratio(hp['fresh'], 'clone', 'copy_'):.2f}** as malloc starts, "
        f"{ratio(hp['kept'], 'clone', 'copy_'):.2f} with freed memory kept",
        f"- platform: {m['platform']} ({r['virtualization'] or 'no hypervisor seen'})",
        "",
        "## 2. BatchNorm2d forward, freed memory kept",
        "",
        *(f"- {name}: {ms(bn, name)}, ÷ copy_ = {ratio(bn, name, 'copy_'):.2f}" for name in bn),
        f"- training ÷ evaluation = **{ratio(bn, 'train', 'eval'):.2f}**; training ÷ training on channels-last "
        f"= **{ratio(bn, 'train', 'train_channels_last'):.2f}**; (training − evaluation) ÷ (2 × elements) = "
        f"**{r['ns_per_element']:.2f} ns** per element and statistic",
        f"- in-core ceilings, one thread, data in cache: a chain of dependent additions (`torch.cumsum`) "
        f"**{r['add_latency_ns']:.2f} ns** per addition; the vectorized `x.sum()` {r['vector_sum_ns']:.3f} ns per "
        f"addition; the chain on data from memory (`torch.cumsum` of 32 to 128 MiB) **{r['add_latency_memory_ns']:.2f} ns**; "
        f"statistics loop ÷ chain from memory = **{r['ns_per_element'] / r['add_latency_memory_ns']:.2f}**; the "
        f"training-mode batch_norm of section 3 (in cache) takes "
        f"{1e9 * ov['batch_norm_train_small']['seconds'] / (2 * torch.Size(SMALL).numel()):.2f} ns per element and "
        f"statistic, normalization and fixed cost included",
        f"- on all {allc['threads']} cores: "
        + ", ".join(f"{name} ÷ copy_ = {ratio(allc, name, 'copy_'):.2f}" for name in bn if name != "copy_")
        + f"; training ÷ evaluation = **{ratio(allc, 'train', 'eval'):.2f}**",
        "",
        f"## 3. A fixed cost per operation ({'×'.join(map(str, SMALL))} = {torch.Size(SMALL).numel()} elements)",
        "",
        *(f"- {name}: {us(ov, name)}" for name in ov),
        f"- add on {torch.Size(SMALL).numel()} elements ÷ add on 1 = **{ratio(ov, 'add_small', 'add_1'):.2f}**; "
        f"training-mode batch_norm ÷ add, same size = **{ratio(ov, 'batch_norm_train_small', 'add_small'):.1f}**",
        "",
        f"## 4. LayerNorm's forward taken apart ({'×'.join(map(str, ROWS))}, "
        f"{4 * torch.Size(ROWS).numel() / 2**20:.0f} MiB, freed memory kept)",
        "",
        *(f"- {name}: {ms(ln, name)}, ÷ copy_ = {ratio(ln, name, 'copy_'):.2f}" for name in ln),
        f"- a read pass and a write pass (sum + fill_) ÷ copy_ = "
        f"**{(ln['sum']['seconds'] + ln['fill_']['seconds']) / ln['copy_']['seconds']:.2f}**; layer_norm ÷ "
        f"(sum + fill_) = **{ln['layer_norm']['seconds'] / (ln['sum']['seconds'] + ln['fill_']['seconds']):.2f}**",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (default 1, as the chapters run; 0 leaves torch's own choice)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"where to write the results (default {OUT})")
    parser.add_argument("--allocation-only", action="store_true",
                        help="measure section 1 only and print it as JSON (the huge pages' child process)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.allocation_only:
        print(json.dumps(allocation(args.repeats, args.warmup)))
        return 0
    start = time.perf_counter()
    load_before = load_average()
    result = measure(args.repeats, args.warmup)
    result["huge_pages"] = with_huge_pages(args.repeats, args.warmup, args.threads)
    result.update(machine=machine_info(), repeats=args.repeats, warmup=args.warmup, shape=list(SHAPE), rows=list(ROWS),
                  virtualization=virtualization(),
                  small=list(SMALL), load_before=load_before if load_before is not None else float("nan"),
                  load_after=load_average() or float("nan"), seconds=time.perf_counter() - start)
    save_results(args.out, "kernels", result, report(result), indent=1)
    print(f"written to {args.out}/kernels.{{md,json}}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
