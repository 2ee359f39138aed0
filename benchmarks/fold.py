"""A BatchNorm folded into the layer before it: the inference time it saves (issue 18, chapter 10).

    make bench-fold      # or: .venv/bin/python benchmarks/fold.py [--repeats N] [--threads N]   (1 thread by default)

For each case, float32 on the CPU, in evaluation mode and under ``torch.inference_mode()``: the
layer followed by its BatchNorm (two operations; the BatchNorm reads and writes the layer's whole
output once more) against the one layer ``normlib.fold_batch_norm`` makes of them. The two are
timed in turn, call after call (the order alternating), so that a change in the machine's load
touches both alike; each time is the median of ``--repeats`` calls after warm-up, and the ratio
(unfolded ÷ folded) is computed within this one run. The spread is the interquartile range ÷ the
median of the unfolded calls. Before timing, the folded layer's output is checked against the
two layers' (float32 tolerance).

Writes, to benchmarks/results/: ``fold.md`` (the table and the run's conditions) and ``fold.json``
(every row and the machine; chapter 10 prints the ratios and says when and where they were measured).
Takes well under a minute on 2 cores. Timings live here and in the results, never in tests.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

import normlib
from normlib_benchmarks import machine_info
from normlib_benchmarks.machine import load_average
from normlib_benchmarks.report import save_results

OUT = Path(__file__).resolve().parent / "results"

# (kind, kernel, channels in, channels out, input shape): ResNet-50's 3×3 stages and a 1×1 bottleneck at
# batch 8, a MobileNet depthwise 3×3 (little arithmetic per output, so the BatchNorm's pass weighs more),
# and a Linear on 4096 tokens followed by BatchNorm1d.
CASES = [
    ("conv", 3, 64, 64, (8, 64, 56, 56)),
    ("conv", 3, 128, 128, (8, 128, 28, 28)),
    ("conv", 3, 256, 256, (8, 256, 14, 14)),
    ("conv", 1, 256, 64, (8, 256, 56, 56)),
    ("depthwise", 3, 256, 256, (8, 256, 28, 28)),
    ("linear", 0, 768, 768, (4096, 768)),
]


def build(kind: str, kernel: int, c_in: int, c_out: int) -> tuple[str, nn.Module, nn.Module]:
    """The case's name, its layer (no bias, as before a BatchNorm) and the BatchNorm after it."""
    if kind == "linear":
        return f"linear {c_in} → {c_out}", nn.Linear(c_in, c_out, bias=False), nn.BatchNorm1d(c_out)
    groups = c_in if kind == "depthwise" else 1
    conv = nn.Conv2d(c_in, c_out, kernel, padding=kernel // 2, groups=groups, bias=False)
    name = f"depthwise {kernel}×{kernel}, {c_in}" if kind == "depthwise" else f"conv {kernel}×{kernel}, {c_in} → {c_out}"
    return name, conv, nn.BatchNorm2d(c_out)


def trained_batch_norm(bn: nn.Module, channels_out: int) -> nn.Module:
    """The BatchNorm in evaluation mode, with running statistics and γ, β that are not 0 and 1."""
    gen = torch.Generator().manual_seed(channels_out)
    with torch.no_grad():
        bn.running_mean.copy_(torch.randn(channels_out, generator=gen))
        bn.running_var.copy_(torch.rand(channels_out, generator=gen) + 0.5)
        bn.weight.copy_(torch.rand(channels_out, generator=gen) + 0.5)
        bn.bias.copy_(torch.randn(channels_out, generator=gen))
    return bn.eval()


def time_in_turn(first, second, repeats: int, warmup: int) -> tuple[list[float], list[float]]:
    """Seconds of each call of ``first`` and ``second``, called alternately (which goes first alternates too)."""
    for _ in range(warmup):
        first(), second()
    times = ([], [])
    for k in range(repeats):
        order = (0, 1) if k % 2 == 0 else (1, 0)
        for which in order:
            fn = (first, second)[which]
            start = time.perf_counter()
            fn()
            times[which].append(time.perf_counter() - start)
    return times


def spread(times: list[float]) -> float:
    q1, _, q3 = statistics.quantiles(times, n=4)
    return (q3 - q1) / statistics.median(times)


def measure_case(name: str, layer: nn.Module, bn: nn.Module, x: torch.Tensor, repeats: int, warmup: int) -> dict:
    """One case: check the folded layer, then time it against the layer and its BatchNorm."""
    folded = normlib.fold_batch_norm(layer, bn).eval()
    with torch.inference_mode():
        reference, ours = bn(layer(x)), folded(x)
        scale = reference.abs().max().item()
        difference = (reference - ours).abs().max().item()
        if difference > 1e-4 * max(1.0, scale):
            raise AssertionError(f"{name}: the folded layer is {difference:.2e} off (largest output {scale:.2e})")
        unfolded_s, folded_s = time_in_turn(lambda: bn(layer(x)), lambda: folded(x), repeats, warmup)
    u, f = statistics.median(unfolded_s), statistics.median(folded_s)
    return {"case": name, "input": list(x.shape), "output": list(reference.shape),
            "unfolded_ms": 1000 * u, "folded_ms": 1000 * f, "ratio": u / f,
            "spread": spread(unfolded_s), "max_abs_difference": difference}


def measure(repeats: int, warmup: int) -> list[dict]:
    rows = []
    torch.manual_seed(0)
    for kind, kernel, c_in, c_out, shape in CASES:
        name, layer, bn = build(kind, kernel, c_in, c_out)
        row = measure_case(name, layer.eval(), trained_batch_norm(bn, c_out), torch.randn(shape), repeats, warmup)
        row.update(kind=kind, kernel=kernel, channels_in=c_in, channels_out=c_out)
        rows.append(row)
        print(f"{name:22s} {'×'.join(map(str, shape)):>16s}  {row['unfolded_ms']:8.3f} ms → {row['folded_ms']:8.3f} ms  "
              f"{row['ratio']:5.2f}×  (spread {100 * row['spread']:.0f}%)", flush=True)
    return rows


def report(result: dict) -> str:
    m = result["machine"]
    lines = [
        "# BatchNorm folded into the layer before it: inference time",
        "",
        f"Run {m['date']} on {m['cpu']} ({m['cores']} cores), torch {m['torch']} with {m['threads']} threads, "
        f"Python {m['python']}, float32, evaluation mode under `torch.inference_mode()`. Written by "
        "`make bench-fold` (benchmarks/fold.py).",
        "",
        f"- {result['repeats']} timed calls of each after {result['warmup']} warm-up calls, the two timed in turn; "
        f"load average (1 min) before / after: {result['load_before']:.2f} / {result['load_after']:.2f}; "
        f"the run took {result['seconds']:.0f} s",
        "- unfolded = the layer, then `BatchNorm` in evaluation mode (two operations); folded = the one layer "
        "`normlib.fold_batch_norm` returns; ratio = unfolded ÷ folded (above 1: folding saves time)",
        "- spread = interquartile range ÷ median of the unfolded calls (the noise of the measurement)",
        "",
        "| case | input | unfolded (ms) | folded (ms) | ratio | spread | max abs difference |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in result["rows"]:
        lines.append(f"| {r['case']} | {'×'.join(map(str, r['input']))} | {r['unfolded_ms']:.3f} | "
                     f"{r['folded_ms']:.3f} | {r['ratio']:.2f} | {100 * r['spread']:.0f}% | {r['max_abs_difference']:.1e} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=41)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (default 1, as the chapters run; 0 leaves torch's own choice)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"where to write the results (default {OUT})")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    start = time.perf_counter()
    load_before = load_average()
    rows = measure(args.repeats, args.warmup)
    result = {"machine": machine_info(), "repeats": args.repeats, "warmup": args.warmup,
              "load_before": load_before if load_before is not None else float("nan"),
              "load_after": load_average() or float("nan"), "seconds": time.perf_counter() - start, "rows": rows}
    save_results(args.out, "fold", result, report(result), indent=1)
    print(f"written to {args.out}/fold.{{md,json}}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
