"""DyT against LayerNorm and RMSNorm, each as it is written and as it is fused (chapter 11).

    make bench-dyt    # or: .venv/bin/python benchmarks/dyt.py [--repeats N]

DyT (y = γ·tanh(α x) + β) computes no statistic: every element on its own. Written out
(normlib.functional.dyt) it is four elementwise operations; compiled, one kernel that reads x
and writes y, the least any of these layers can move. LayerNorm and RMSNorm reduce each row
first. Which one is faster depends on what each is compared with, so every implementation runs
on the same input, timed in turn (bench.compare_ops: a slow spell of the machine slows all of
them alike), float32 on the CPU, forward and forward+backward:

    dyt         readable (normlib.functional.dyt), compiled (torch.compile of it)
    layer_norm  readable, compiled, torch (torch's fused kernel)
    rms_norm    readable, compiled, torch (in torch 2.13 on the CPU: several elementwise kernels)

Writes benchmarks/results/dyt.md (the table, as ratios to torch's LayerNorm) and dyt.json (every
row, the machine, the conditions: chapter 11 reads it with bench.last_run(name="dyt")).
Takes a few minutes on 2 cores (each compiled variant is compiled once per size and mode).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import normlib_benchmarks as bench
from normlib_benchmarks.report import save_results, shape_label

SIZES = [(8192, 1024), (8192, 4096)]     # transformer activations: 8192 tokens of width D
PAIRS = [("dyt", "readable"), ("dyt", "compiled"),
         ("layer_norm", "readable"), ("layer_norm", "compiled"), ("layer_norm", "torch"),
         ("rms_norm", "readable"), ("rms_norm", "compiled"), ("rms_norm", "torch")]
NAMES = {"dyt": "DyT", "layer_norm": "LayerNorm", "rms_norm": "RMSNorm"}
OUT = Path(__file__).resolve().parent / "results"


def elementwise(shape, repeats: int, warmup: int) -> dict:
    """Milliseconds of three single kernels on a float32 input of ``shape``, each writing into a
    tensor made beforehand: a copy (read x, write y), a multiplication by a number (the same
    traffic, one multiplication per element) and tanh (the same traffic, the tanh of each element).
    If tanh took as long as the copy, DyT's cost would be its memory traffic alone."""
    import torch

    x = torch.randn(shape, generator=torch.Generator().manual_seed(0))
    y = torch.empty_like(x)
    calls = {"copy": lambda: y.copy_(x), "mul": lambda: torch.mul(x, 0.5, out=y), "tanh": lambda: torch.tanh(x, out=y)}
    return {name: 1000 * bench.machine.median_time(call, repeats, warmup) for name, call in calls.items()}


def run(repeats: int, warmup: int) -> bench.Results:
    start = time.perf_counter()
    kept = bench.keep_freed_memory()        # as make bench: large outputs reuse freed memory
    conditions = {"load_average_before": bench.machine.load_average(), "keep_freed_memory": kept,
                  "copy_gbps_before": bench.copy_bandwidth(), "repeats": repeats, "warmup": warmup}
    gflops = bench.matmul_gflops()
    conditions["elementwise_ms"] = {shape_label(shape): elementwise(shape, repeats, warmup) for shape in SIZES}
    rows = []
    for shape in SIZES:
        for mode in bench.MODES:
            print(f"{shape_label(shape)} {mode}", file=sys.stderr, flush=True)
            rows += bench.compare_ops(PAIRS, shape, mode, repeats, warmup)
    conditions["copy_gbps_after"] = bench.copy_bandwidth()
    conditions["load_average_after"] = bench.machine.load_average()
    bandwidth = max(conditions["copy_gbps_before"], conditions["copy_gbps_after"])
    for row in rows:
        row.fraction = row.gbps / bandwidth
    return bench.Results(rows=rows, bandwidth=bandwidth, matmul_gflops=gflops, machine=bench.machine_info(),
                         conditions=conditions, seconds=time.perf_counter() - start)


def report(res: bench.Results) -> str:
    m, c = res.machine, res.conditions
    lines = [
        "# DyT against LayerNorm and RMSNorm",
        "",
        f"Run {m['date']} on {m['cpu']} ({m['cores']} cores), torch {m['torch']} with {m['threads']} threads, "
        f"Python {m['python']}, float32. Written by `make bench-dyt` (benchmarks/dyt.py).",
        "",
        f"- copy bandwidth (read + write): **{res.bandwidth:.1f} GB/s**, the higher of {c['copy_gbps_before']:.1f} "
        f"(before) and {c['copy_gbps_after']:.1f} (after)",
        f"- load average (1 min) before / after: {c['load_average_before']:.2f} / {c['load_average_after']:.2f}",
        f"- {c['repeats']} timed calls per implementation after {c['warmup']} warm-up calls, all implementations "
        f"of one size and mode in turn; the run took {res.seconds / 60:.1f} min",
        "",
        "Single kernels on the same input (ms): " + "; ".join(
            f"{size}: copy {e['copy']:.2f}, multiply {e['mul']:.2f}, tanh {e['tanh']:.2f}"
            for size, e in c["elementwise_ms"].items()),
        "",
        "Columns: median time of one call; spread = interquartile range ÷ median; time ÷ torch's LayerNorm "
        "(its fused kernel) on the same input; GB/s of the minimal traffic (forward 2 passes, forward+backward 5) "
        "as a share of the copy bandwidth.",
        "",
    ]
    for shape in SIZES:
        for mode in bench.MODES:
            group = [r for r in res.rows if tuple(r.shape) == shape and r.mode == mode]
            ref = next(r for r in group if (r.op, r.variant) == ("layer_norm", "torch"))
            lines += [f"## {shape_label(shape)}, {mode}", "",
                      "| layer | implementation | ms | spread | ÷ torch LayerNorm | share of copy bandwidth |",
                      "|---|---|---:|---:|---:|---:|"]
            for r in group:
                lines.append(f"| {NAMES[r.op]} | {r.variant} | {1000 * r.seconds:.2f} | {100 * r.spread:.0f}% | "
                             f"{r.seconds / ref.seconds:.2f} | {100 * r.fraction:.0f}% |")
            ms = {(r.op, r.variant): r.seconds for r in group}
            lines += ["", f"DyT ÷ LayerNorm, like for like: readable {ms['dyt', 'readable'] / ms['layer_norm', 'readable']:.2f}, "
                          f"compiled {ms['dyt', 'compiled'] / ms['layer_norm', 'compiled']:.2f}; compiled DyT ÷ torch's "
                          f"LayerNorm {ms['dyt', 'compiled'] / ms['layer_norm', 'torch']:.2f}, ÷ torch's RMSNorm "
                          f"{ms['dyt', 'compiled'] / ms['rms_norm', 'torch']:.2f}.", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--out", type=Path, default=OUT, help=f"where to write the results (default {OUT})")
    args = parser.parse_args(argv)
    res = run(args.repeats, args.warmup)
    save_results(args.out, "dyt", res.to_json(), report(res))
    print(f"written to {args.out}/dyt.{{md,json}}; make bench-dyt took {res.seconds / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
