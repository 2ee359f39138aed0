"""LayerNorm, RMSNorm and BatchNorm2d four ways, timed against torch's built-in (issue 5).

    make bench        # or: .venv/bin/python benchmarks/normalization.py [--fresh-memory] [--repeats N] [--threads N]

For each op, size and mode (forward, forward+backward), float32 on the CPU: normlib's readable
version, the hand-derived backward, the readable version under torch.compile, and torch's
built-in, timed in turn (median of repeated calls after warm-up), with the peak memory of a
call, the bytes saved for backward and the effective GB/s as a share of this machine's copy
bandwidth. benchmarks/normlib_benchmarks/ does the measuring and explains every number; this script picks
the sizes and writes, to benchmarks/results/:

    normalization.md    the table (ratios to torch), the run's conditions, the time each row's
                        passes predict beside the measured one, the size check and the targets
    normalization.json  every row, the machine and the conditions (a chapter loads the last run)
    normalization.png   time ÷ torch per variant, op, size and mode
    roofline.png        arithmetic intensity against GFLOP/s under the memory and compute roofs

Before measuring it calls bench.keep_freed_memory(), so that the large outputs of each call
reuse freed memory instead of fresh pages from the operating system (which, with glibc's
malloc, cost more than a LayerNorm at 8192 × 4096); --fresh-memory leaves malloc alone.
The targets are read here, never asserted in tests.

**One thread** by default (``--threads 0`` leaves torch's own choice), as ``make bench-kernels``:
on a small shared machine a second thread competes with everything else that runs, and the
first reference run (2 threads on 2 vCPUs, the load average rising from 0.58 to 1.73) had rows
slower than the next larger size. Every row is checked for that (**time grows with size**,
``report.size_check``): a pair that fails is marked ⚠ in the table and listed, never dropped.
The load average is recorded before, at its highest during, and after the run; run it on a
quiet machine. The in-core ceilings of a serial loop (one dependent addition, and the same sum
vectorized; ``machine.add_latency_ns``, ``machine.vector_sum_ns``) are measured too and drawn on
the roofline. Takes about 5 minutes on one thread, plus a few more the first time, while
torch.compile fills its on-disk cache.
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
import torch  # noqa: E402

import normlib_benchmarks as bench  # noqa: E402
from normlib_benchmarks.machine import add_latency_ns, vector_sum_ns, virtualization  # noqa: E402
from normlib_benchmarks.report import largest_shapes, save_results, shape_label, size_check  # noqa: E402
from normlib_benchmarks.traffic import variant_passes  # noqa: E402

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
        f"- load average (1 min) before / highest during / after: {c['load_average_before']:.2f} / "
        f"{c.get('load_average_max', float('nan')):.2f} / {c['load_average_after']:.2f}",
        f"- in-core ceilings, one thread: a chain of dependent additions (`torch.cumsum`, a scalar loop "
        f"with one double accumulator) {c['add_latency_ns']:.2f} ns per addition on data in cache, "
        f"{c.get('add_latency_memory_ns', float('nan')):.2f} ns on data from memory; the same sum "
        f"vectorized (`x.sum()`, data in cache) {c['vector_sum_ns']:.3f} ns per addition"
        if "add_latency_ns" in c else "- in-core ceilings: not measured in this run",
        f"- platform: {res.machine['platform']} ({c.get('virtualization') or 'no hypervisor seen'})",
        f"- {c['repeats']} timed calls per variant after {c['warmup']} warm-up calls; the whole run took "
        f"{res.seconds / 60:.1f} min",
    ]
    worst = max(res.rows, key=lambda r: r.spread)
    lines.append(f"- noisiest measurement: {worst.op} {shape_label(worst.shape)} {worst.mode} "
                 f"{worst.variant}, interquartile range {100 * worst.spread:.0f}% of its median")
    return lines


def predicted_lines(res: bench.Results) -> list[str]:
    """Each row of a variant whose passes can be counted: passes × bytes ÷ bandwidth beside the
    measured median and its spread, and whether time grew with size (chapter 8's model)."""
    flagged = {(d["op"], d["mode"], d["variant"], shape) for d in size_check(res.rows) for shape in (d["shape"], d["larger"])}
    counted = {}
    lines = ["| op | shape | mode | variant | passes | predicted ms | measured ms | spread | measured ÷ predicted | "
             "time grows with size |", "|---|---|---|---|---:|---:|---:|---:|---:|---|"]
    for r in res.rows:
        if r.variant == "compiled":
            continue
        if (r.op, r.variant) not in counted:
            counted[r.op, r.variant] = variant_passes(r.op, r.variant)
        n = counted[r.op, r.variant][0 if r.mode == "forward" else 1]
        predicted = n * 4 * math.prod(r.shape) / (res.bandwidth * 1e9)
        grows = "no ⚠" if (r.op, r.mode, r.variant, tuple(r.shape)) in flagged else "yes"
        lines.append(f"| {r.op} | {shape_label(r.shape)} | {r.mode} | {r.variant} | {n} | {1000 * predicted:.1f} | "
                     f"{1000 * r.seconds:.1f} | {100 * r.spread:.0f}% | {r.seconds / predicted:.2f} | {grows} |")
    return lines


def size_lines(res: bench.Results) -> list[str]:
    flagged = size_check(res.rows)
    if not flagged:
        return [f"Every one of the {len(res.rows)} rows took longer than the next smaller size of its op, mode "
                "and variant."]
    lines = [f"**{len(flagged)} pair(s) did not grow** (marked ⚠ in the tables; the rows are kept):", ""]
    for d in flagged:
        lines.append(f"- {d['op']} {d['mode']} {d['variant']}: {shape_label(d['shape'])} took "
                     f"{1000 * d['seconds']:.3g} ms, the larger {shape_label(d['larger'])} {1000 * d['larger_seconds']:.3g} ms")
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
        "## Time grows with size",
        "",
        *size_lines(res),
        "",
        "## Predicted from the passes, against measured",
        "",
        "Passes counted by `normlib_benchmarks.traffic.variant_passes` (aten operations, as chapter 8 counts them) "
        "× the input's bytes ÷ the copy bandwidth above. A write is counted like a read; on x86 a write to a "
        "line not in cache first reads it (read for ownership), and the copy that measures the bandwidth has "
        "the same mix of reads and writes as the readable kernels, so the cost cancels in the ratio.",
        "",
        *predicted_lines(res),
        "",
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


def affine_control(shape, affine, repeats: int, warmup: int) -> dict:
    """LayerNorm forward+backward, torch's built-in against the compiled readable version
    (bench.compare, timed in turn), with ``affine=False`` (no γ, β: no multiply, no add, no column
    sums) or ``affine="frozen"`` (γ and β kept with requires_grad=False: the multiply and the add
    stay, the two column sums ∂L/∂γ, ∂L/∂β over all rows go). If the ratio drops to about 1 with
    frozen γ and β, the gap of target 2 is in the code inductor generates for those sums."""
    rows = {r.variant: r for r in bench.compare("layer_norm", shape, "forward+backward", ("compiled", "torch"),
                                                 repeats, warmup, affine=affine)}
    ms = {name: 1000 * r.seconds for name, r in rows.items()}
    return {"shape": list(shape), "torch_ms": ms["torch"], "compiled_ms": ms["compiled"],
            "ratio": ms["compiled"] / ms["torch"],
            "torch_spread": rows["torch"].spread, "compiled_spread": rows["compiled"].spread}


def diagnosis_lines(res: bench.Results) -> list[str]:
    d = res.conditions.get("without_affine")
    if not d:
        return []
    shape = tuple(d["shape"])
    learned = {r.variant: 1000 * r.seconds for r in res.rows
               if r.op == "layer_norm" and r.mode == "forward+backward" and tuple(r.shape) == shape}
    lines = [
        "## Target 2 without the column sums",
        "",
        f"LayerNorm {shape_label(shape)} forward+backward, median ms (torch, compiled, compiled ÷ torch):",
        "",
    ]
    if {"torch", "compiled"} <= set(learned):
        lines.append(f"- γ and β learned (the table above): torch {learned['torch']:.3g}, compiled "
                     f"{learned['compiled']:.3g}, **{learned['compiled'] / learned['torch']:.2f}**")
    f = res.conditions.get("frozen_affine")
    if f:
        lines.append(f"- γ and β kept with requires_grad=False (the multiply and the add stay, the column sums go): "
                     f"torch {f['torch_ms']:.3g}, compiled {f['compiled_ms']:.3g}, **{f['ratio']:.2f}**")
    lines += [
        f"- no γ, no β: torch {d['torch_ms']:.3g}, compiled {d['compiled_ms']:.3g}, **{d['ratio']:.2f}**",
        "",
        "With learned γ and β the compiled version also sums ∂L/∂y·x̂ and ∂L/∂y down every column (over all "
        "rows); the frozen line keeps everything else of the layer, so its difference from the first line is "
        "what inductor's code for those two column sums costs.",
        "",
    ]
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fresh-memory", action="store_true",
                        help="leave glibc's malloc as it is: large freed blocks go back to the OS (see bench.keep_freed_memory)")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (default 1, as make bench-kernels; 0 leaves torch's own choice)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--out", type=Path, default=OUT, help=f"where to write the results (default {OUT})")
    parser.add_argument("--redraw", action="store_true",
                        help="measure nothing: rewrite the table and the figures from the last run's normalization.json")
    args = parser.parse_args(argv)
    if args.redraw:
        write(bench.load(args.out / "normalization.json"), args.out)
        return 0

    if args.threads:
        torch.set_num_threads(args.threads)
    start = time.perf_counter()
    ceilings = {"add_latency_ns": add_latency_ns(), "add_latency_memory_ns": add_latency_ns(in_cache=False),
                "vector_sum_ns": vector_sum_ns()}
    fresh = bench.copy_bandwidth(fresh=True)
    kept = False if args.fresh_memory else bench.keep_freed_memory()
    fresh_kept = bench.copy_bandwidth(fresh=True) if kept else None
    compile_report = [bench.graph_breaks(op) for op in SIZES]
    res = bench.run(SIZES, repeats=args.repeats, warmup=args.warmup, progress=True)
    res.compile_report = compile_report
    largest_ln = max(SIZES["layer_norm"], key=math.prod)
    res.conditions["without_affine"] = affine_control(largest_ln, False, args.repeats, args.warmup)
    res.conditions["frozen_affine"] = affine_control(largest_ln, "frozen", args.repeats, args.warmup)
    res.conditions.update(keep_freed_memory=kept, fresh_copy_gbps=fresh, fresh_copy_gbps_kept=fresh_kept,
                          repeats=args.repeats, warmup=args.warmup, size_check=size_check(res.rows),
                          virtualization=virtualization(), **ceilings)
    res.seconds = time.perf_counter() - start
    write(res, args.out)
    print(f"make bench took {res.seconds / 60:.1f} min ({res.seconds:.0f} s)")
    return 0


def write(res: bench.Results, out: Path) -> None:
    """The table (printed too), the JSON and the two figures, into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "normalization.json").write_text(res.to_json() + "\n", encoding="utf-8")   # first: --redraw can redo the rest
    save_results(out, "normalization", res.to_json(), report(res))
    fig = bench.plot(res.rows)
    fig.savefig(out / "normalization.png", dpi=110)
    plt.close(fig)
    largest = largest_shapes(res.rows)
    title = "largest size of each op: " + ", ".join(shape_label(shape) for shape in largest.values())
    c = res.conditions
    ceilings = {"serial": c["add_latency_ns"], "serial_memory": c.get("add_latency_memory_ns"),
                "simd": c["vector_sum_ns"]} if "add_latency_ns" in c else None
    fig = bench.roofline([r for r in res.rows if tuple(r.shape) == largest[r.op]], res.bandwidth,
                         res.matmul_gflops, title=title, ceilings=ceilings, threads=res.machine["threads"])
    fig.savefig(out / "roofline.png", dpi=110)
    plt.close(fig)
    print(f"written to {out}/normalization.{{md,json,png}} and roofline.png")


if __name__ == "__main__":
    sys.exit(main())
