"""LayerNorm, RMSNorm and BatchNorm2d four ways, timed against torch's built-in (issue 5).

    make bench        # or: .venv/bin/python benchmarks/normalization.py [--fresh-memory] [--repeats N]

For each op, size and mode (forward, forward+backward), float32 on the CPU: normlib's readable
version, the hand-derived backward, the readable version under torch.compile, and torch's
built-in, timed in turn (median of repeated calls after warm-up), with the peak memory of a
call, the bytes saved for backward and the effective GB/s as a share of this machine's copy
bandwidth. benchmarks/normlib_benchmarks/ does the measuring and explains every number; this script picks
the sizes and writes, to benchmarks/results/:

    normalization.md    the table (ratios to torch), the run's conditions and the three targets
    normalization.json  every row, the machine and the conditions (a chapter loads the last run)
    normalization.png   time ÷ torch per variant, op, size and mode
    roofline.png        arithmetic intensity against GFLOP/s under the memory and compute roofs

Before measuring it calls bench.keep_freed_memory(), so that the large outputs of each call
reuse freed memory instead of fresh pages from the operating system (which, with glibc's
malloc, cost more than a LayerNorm at 8192 × 4096); --fresh-memory leaves malloc alone.
The targets are read here, never asserted in tests. Takes about 2 minutes on 2 cores, plus
about 2 more the first time, while torch.compile fills its on-disk cache.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

import normlib_benchmarks as bench  # noqa: E402
from normlib_benchmarks.report import largest_shapes, save_results, shape_label  # noqa: E402

# Transformer activations: (tokens, D), 8192 tokens (e.g. a batch of 8 sequences of 1024).
TRANSFORMER = [(8192, d) for d in (768, 1024, 2048, 4096)]
# CNN activations (N, C, H, W) at batch 32: ResNet's stages, and its stem at 112 × 112.
CNN = [(32, 256, 14, 14), (32, 128, 28, 28), (32, 64, 56, 56), (32, 64, 112, 112)]
SIZES = {"layer_norm": TRANSFORMER, "rms_norm": TRANSFORMER, "batch_norm2d": CNN}

OUT = Path(__file__).resolve().parent / "results"


def conditions_lines(res: bench.Results) -> list[str]:
    c = res.conditions
    lines = [
        f"- copy bandwidth (`dst.copy_(src)`, 256 MiB, read + write): **{res.bandwidth:.1f} GB/s**, the higher of "
        f"{c['copy_gbps_before']:.1f} (before) and {c['copy_gbps_after']:.1f} (after the comparisons)",
        f"- copy into newly allocated memory (`src.clone()`): {c['fresh_copy_gbps']:.1f} GB/s with glibc's "
        f"malloc as it starts" + ("" if c["fresh_copy_gbps_kept"] is None else
                                  f"; {c['fresh_copy_gbps_kept']:.1f} GB/s after `bench.keep_freed_memory()`"),
        f"- float32 matmul (2048 × 2048): **{res.matmul_gflops:.0f} GFLOP/s**; ridge point of the roofline: "
        f"{res.matmul_gflops / res.bandwidth:.1f} FLOP/byte",
        f"- freed memory kept for reuse (`bench.keep_freed_memory()`, so that large outputs reuse memory "
        f"instead of new pages from the OS): {'yes' if c['keep_freed_memory'] else 'no'}",
        f"- load average (1 min) before / after: {c['load_average_before']:.2f} / {c['load_average_after']:.2f}",
        f"- {c['repeats']} timed calls per variant after {c['warmup']} warm-up calls; the whole run took "
        f"{res.seconds / 60:.1f} min",
    ]
    worst = max(res.rows, key=lambda r: r.spread)
    lines.append(f"- noisiest measurement: {worst.op} {shape_label(worst.shape)} {worst.mode} "
                 f"{worst.variant}, interquartile range {100 * worst.spread:.0f}% of its median")
    return lines


def compile_lines(res: bench.Results) -> list[str]:
    lines = []
    for report in res.compile_report:
        if report["breaks"]:
            why = "; ".join(report["reasons"]) or "no reason given"
            lines.append(f"- {report['op']}: {report['graphs']} graphs, {report['breaks']} graph breaks ({why})")
        else:
            lines.append(f"- {report['op']}: one graph, no graph break")
    return lines


def report(res: bench.Results) -> str:
    m = res.machine
    lines = [
        "# Normalization layers: readable, hand-derived backward, compiled, torch's built-in",
        "",
        f"Run {m['date']} on {m['cpu']} ({m['cores']} cores), torch {m['torch']} with {m['threads']} threads, "
        f"Python {m['python']}, float32. Written by `make bench` (benchmarks/normalization.py); "
        "benchmarks/normlib_benchmarks/ says what each column measures.",
        "",
        *conditions_lines(res),
        "",
        "Columns: median time of one call; spread = interquartile range ÷ median (noise); time ÷ torch; "
        "GB/s of the minimal traffic (forward 2 passes over the input, forward+backward 5) and its share of "
        "the copy bandwidth; peak memory allocated during a call and ÷ torch; bytes saved for backward and "
        "÷ torch; for the compiled variant, its first call (the compilation), the number of graphs and `cached` when "
        "inductor loaded their code from its on-disk cache (from an earlier run) instead of compiling it.",
        "",
        bench.markdown_table(res.rows, res.bandwidth),
        "## torch.compile of normlib.functional",
        "",
        *compile_lines(res),
        "",
        "## Targets",
        "",
        bench.targets_markdown(res.rows, res.bandwidth),
        "",
        *diagnosis_lines(res),
    ]
    return "\n".join(lines)


def without_affine(shape, repeats: int, warmup: int) -> dict:
    """LayerNorm forward+backward without γ and β, torch's built-in against the compiled readable
    version (bench.compare, timed in turn): the same comparison as target 2 minus the two column
    sums (∂L/∂γ, ∂L/∂β) over all rows. If the ratio drops to about 1 here, the gap of target 2 is
    in the code inductor generates for those sums, not in the rest of the layer."""
    rows = {r.variant: r for r in bench.compare("layer_norm", shape, "forward+backward", ("compiled", "torch"),
                                                 repeats, warmup, affine=False)}
    ms = {name: 1000 * r.seconds for name, r in rows.items()}
    return {"shape": list(shape), "torch_ms": ms["torch"], "compiled_ms": ms["compiled"],
            "ratio": ms["compiled"] / ms["torch"]}


def diagnosis_lines(res: bench.Results) -> list[str]:
    d = res.conditions.get("without_affine")
    if not d:
        return []
    shape = "×".join(map(str, d["shape"]))
    return [
        "## Target 2 without γ and β",
        "",
        f"LayerNorm {shape} forward+backward with no affine parameters: torch {d['torch_ms']:.3g} ms, compiled "
        f"{d['compiled_ms']:.3g} ms, **{d['ratio']:.2f} × torch**. With γ and β the compiled version also sums "
        "∂L/∂y·x̂ and ∂L/∂y down every column (over all rows); the difference between this ratio and the one "
        "above is what inductor's code for those two column sums costs.",
        "",
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fresh-memory", action="store_true",
                        help="leave glibc's malloc as it is: large freed blocks go back to the OS (see bench.keep_freed_memory)")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--out", type=Path, default=OUT, help=f"where to write the results (default {OUT})")
    parser.add_argument("--redraw", action="store_true",
                        help="measure nothing: rewrite the table and the figures from the last run's normalization.json")
    args = parser.parse_args(argv)
    if args.redraw:
        write(bench.load(args.out / "normalization.json"), args.out)
        return 0

    start = time.perf_counter()
    fresh = bench.copy_bandwidth(fresh=True)
    kept = False if args.fresh_memory else bench.keep_freed_memory()
    fresh_kept = bench.copy_bandwidth(fresh=True) if kept else None
    compile_report = [bench.graph_breaks(op) for op in SIZES]
    res = bench.run(SIZES, repeats=args.repeats, warmup=args.warmup, progress=True)
    res.compile_report = compile_report
    largest_ln = max(SIZES["layer_norm"], key=math.prod)
    res.conditions["without_affine"] = without_affine(largest_ln, args.repeats, args.warmup)
    res.conditions.update(keep_freed_memory=kept, fresh_copy_gbps=fresh, fresh_copy_gbps_kept=fresh_kept,
                          repeats=args.repeats, warmup=args.warmup)
    res.seconds = time.perf_counter() - start
    write(res, args.out)
    print(f"make bench took {res.seconds / 60:.1f} min ({res.seconds:.0f} s)")
    return 0


def write(res: bench.Results, out: Path) -> None:
    """The table (printed too), the JSON and the two figures, into ``out``."""
    save_results(out, "normalization", res.to_json(), report(res))
    fig = bench.plot(res.rows)
    fig.savefig(out / "normalization.png", dpi=110)
    plt.close(fig)
    largest = largest_shapes(res.rows)
    title = "largest size of each op: " + ", ".join(shape_label(shape) for shape in largest.values())
    fig = bench.roofline([r for r in res.rows if tuple(r.shape) == largest[r.op]], res.bandwidth,
                         res.matmul_gflops, title=title)
    fig.savefig(out / "roofline.png", dpi=110)
    plt.close(fig)
    print(f"written to {out}/normalization.{{md,json,png}} and roofline.png")


if __name__ == "__main__":
    sys.exit(main())
