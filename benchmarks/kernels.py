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
3. a fixed cost per operation: ``a + a`` on 1 element against 65,536 elements (256 KB), and a
   training-mode ``batch_norm`` on 8 × 32 × 16 × 16 (the same 65,536 elements).

Writes ``kernels.md`` and ``kernels.json`` to benchmarks/results/ (chapter 8 prints the ratios and
says when and where they were measured). About half a minute on 2 cores. Timings live here and in
the results, never in tests.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
from torch.nn import functional as F

import normlib_benchmarks as bench
from normlib_benchmarks import machine_info
from normlib_benchmarks.machine import load_average
from normlib_benchmarks.report import save_results

OUT = Path(__file__).resolve().parent / "results"
SHAPE = (32, 64, 112, 112)
SMALL = (8, 32, 16, 16)


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


def measure(repeats: int, warmup: int) -> dict:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(SHAPE, generator=gen)
    dst = torch.empty_like(x)
    copies = {"copy_": lambda: dst.copy_(x), "clone": x.clone}
    result = {}
    with torch.inference_mode():
        result["fresh"] = in_turn(copies, repeats, warmup)
        result["kept_memory"] = bench.keep_freed_memory()
        result["kept"] = in_turn(copies, repeats, warmup)

        x_cl = x.contiguous(memory_format=torch.channels_last)
        mean, var = torch.zeros(SHAPE[1]), torch.ones(SHAPE[1])
        result["batch_norm"] = in_turn({
            "copy_": lambda: dst.copy_(x),
            "eval": lambda: F.batch_norm(x, mean, var, training=False),
            "train": lambda: F.batch_norm(x, None, None, training=True),
            "train_channels_last": lambda: F.batch_norm(x_cl, None, None, training=True),
            "channel_sum": lambda: x.sum((0, 2, 3)),
        }, repeats, warmup)
        bn = result["batch_norm"]
        result["ns_per_element"] = 1e9 * (bn["train"]["seconds"] - bn["eval"]["seconds"]) / (2 * x.numel())

        one, small = torch.ones(1), torch.randn(SMALL, generator=gen)
        result["overhead"] = in_turn({
            "add_1": lambda: one + one,
            "add_small": lambda: small + small,
            "batch_norm_train_small": lambda: F.batch_norm(small, None, None, training=True),
        }, 50 * repeats, 50 * warmup)
    return result


def report(result: dict) -> str:
    m, r = result["machine"], result
    bn, ov = r["batch_norm"], r["overhead"]
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
        "",
        "## 2. BatchNorm2d forward, freed memory kept",
        "",
        *(f"- {name}: {ms(bn, name)}, ÷ copy_ = {ratio(bn, name, 'copy_'):.2f}" for name in bn),
        f"- training ÷ evaluation = **{ratio(bn, 'train', 'eval'):.2f}**; training ÷ training on channels-last "
        f"= **{ratio(bn, 'train', 'train_channels_last'):.2f}**; (training − evaluation) ÷ (2 × elements) = "
        f"**{r['ns_per_element']:.2f} ns** per element and statistic",
        "",
        f"## 3. A fixed cost per operation ({'×'.join(map(str, SMALL))} = {torch.Size(SMALL).numel()} elements)",
        "",
        *(f"- {name}: {us(ov, name)}" for name in ov),
        f"- add on {torch.Size(SMALL).numel()} elements ÷ add on 1 = **{ratio(ov, 'add_small', 'add_1'):.2f}**; "
        f"training-mode batch_norm ÷ add, same size = **{ratio(ov, 'batch_norm_train_small', 'add_small'):.1f}**",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (default 1, as the chapters run; 0 leaves torch's own choice)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"where to write the results (default {OUT})")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    start = time.perf_counter()
    load_before = load_average()
    result = measure(args.repeats, args.warmup)
    result.update(machine=machine_info(), repeats=args.repeats, warmup=args.warmup, shape=list(SHAPE),
                  small=list(SMALL), load_before=load_before if load_before is not None else float("nan"),
                  load_after=load_average() or float("nan"), seconds=time.perf_counter() - start)
    save_results(args.out, "kernels", result, report(result), indent=1)
    print(f"written to {args.out}/kernels.{{md,json}}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
