"""Chapter 11's seeded training runs: DyT against LayerNorm over 20 seeds, the causal language model over 10 (issue 27).

    make bench-dyt-seeds     # or: .venv/bin/python benchmarks/dyt_seeds.py [--seeds 20]   (1 thread, float64)

The runs themselves are in ``normlib_book.dyt_seeds`` (which chapter 11 also uses where these results
are missing). For every seed, chapter 11's reversal model (6 pre-norm blocks, width 32, 2 heads) is trained for
100 steps with Adam three times, with the seed fixing the initial values and the batches:
LayerNorm at learning rate 1e-2, DyT at 1e-2 (every LayerNorm replaced one for one), and DyT at a
third of it. Each run gives the first step at 99% accuracy and, over its last 50 steps, the median
loss and the largest rise of the loss from one step to the next (chapter 11's ``summary``). For
the DyT run at 1e-2 it also records, per DyT layer, the learned α, α times the σ of the layer's
input and the share of inputs with |αx| > 2, on chapter 11's fixed batch of 64 sequences.
Then chapter 11's small causal language model is trained once per seed (``--lm-seeds``, 10 by
default) and each LayerNorm's input-output cloud measured as the chapter does: the error ratio
(tanh ÷ line), BOS's σ and share of the extremes, the ratio without BOS and with BOS counted once,
and on the final layer one line, a·tanh and two lines (BOS, the rest).

This is a measurement of training outcomes, not of time: float64 and one thread, so that the
numbers are the same on every machine (the chapter re-runs seed 0 live and checks it against
these results). Takes a few minutes on one core.

Writes, to benchmarks/results/: ``dyt_seeds.json`` (every run, with its loss curve) and
``dyt_seeds.md`` (a table per seed and the counts).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

from normlib_benchmarks import machine_info
from normlib_benchmarks.report import save_results
from normlib_book.dyt_seeds import RUNS, lm_sweep, sweep

OUT = Path(__file__).resolve().parent / "results"


def report(result: dict) -> str:
    m = result["machine"]
    lines = [
        "# DyT against LayerNorm in chapter 11's tiny transformer, per seed",
        "",
        f"Run {m['date']} on {m['cpu']}, torch {m['torch']} with {m['threads']} thread(s), float64, "
        f"{len(result['seeds'])} seeds, {result['steps']} steps each; the run took {result['seconds']:.0f} s. "
        "Written by `make bench-dyt-seeds` (benchmarks/dyt_seeds.py).",
        "",
        "first = first step at 99% accuracy; median = median loss over the last 50 steps; "
        "rise = largest ratio of one step's loss to the step before, over the last 50 steps.",
        "",
        "| seed | " + " | ".join(f"{n} first | {n} median | {n} rise" for n in RUNS) + " |",
        "|---:|" + "---:|" * (3 * len(RUNS)),
    ]
    for seed in result["seeds"]:
        cells = []
        for name in RUNS:
            r = result["runs"][name][str(seed)]
            cells += [str(r["first"]), f"{r['median']:.2e}", f"{r['rise']:.2f}"]
        lines.append(f"| {seed} | " + " | ".join(cells) + " |")
    ln, dyt, slow = (result["runs"][n] for n in RUNS)
    seeds = [str(s) for s in result["seeds"]]
    earlier = [ln[s]["first"] - dyt[s]["first"] for s in seeds if ln[s]["first"] and dyt[s]["first"]]
    lines += [
        "",
        f"- DyT reaches 99% before LayerNorm on {sum(e > 0 for e in earlier)} of {len(seeds)} seeds "
        f"(steps earlier: mean {statistics.mean(earlier):.1f}, min {min(earlier)}, max {max(earlier)})",
        f"- DyT's loss rises more than 5× in one step on {sum(dyt[s]['rise'] > 5 for s in seeds)} of {len(seeds)} seeds; "
        f"LayerNorm's more than 1.5× on {sum(ln[s]['rise'] > 1.5 for s in seeds)}",
        f"- DyT at lr/3: a rise above 1.5× on {sum(slow[s]['rise'] > 1.5 for s in seeds)} of {len(seeds)} seeds",
    ]
    if "lm" in result:
        lm = result["lm"]
        lines += ["", f"## The causal language model, {len(lm['seeds'])} seeds, {lm['steps']} steps each", "",
                  "| seed | final: one line | a·tanh | two lines | BOS once: one line | a·tanh | two lines | error ratios (tanh ÷ line), per layer |",
                  "|---:|---:|---:|---:|---:|---:|---:|---|"]
        for seed in lm["seeds"]:
            run = lm["runs"][str(seed)]
            e, o = run["final"]["every"], run["final"]["once"]
            ratios = ", ".join(f"{layer['ratio']:.2f}" for layer in run["layers"].values())
            lines.append(f"| {seed} | {e['line']:.3f} | {e['curve']:.3f} | {e['two']:.3f} | {o['line']:.3f} | {o['curve']:.3f} | "
                         f"{o['two']:.3f} | {ratios} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20, help="seeds 0, 1, …, N − 1 (default 20)")
    parser.add_argument("--lm-seeds", type=int, default=10, help="the causal language model's seeds (default 10)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"where to write the results (default {OUT})")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)
    start = time.perf_counter()
    result = sweep(range(args.seeds), progress=lambda line: print(line, flush=True))
    result["lm"] = lm_sweep(range(args.lm_seeds), progress=lambda line: print(line, flush=True))
    result.update(machine=machine_info(), seconds=time.perf_counter() - start)
    save_results(args.out, "dyt_seeds", result, report(result))
    print(f"written to {args.out}/dyt_seeds.{{md,json}}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
