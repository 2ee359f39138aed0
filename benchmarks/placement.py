"""Post-norm and pre-norm transformers trained with and without warmup, over many seeds (chapter 10).

    make bench-placement    # or: .venv/bin/python benchmarks/placement.py [--seeds N]

Chapter 10 trains its tiny transformer (normlib_book.transformer: width 32, 2 heads, the
reversal task with a vocabulary of 8 and sequences of 8) for 90 steps. One training run takes a
few seconds, so the sweep over seeds lives here and the chapter reads its committed results.
Every run of seed s starts from ``torch.manual_seed(s)`` and sees the batches of ``train(...,
seed=s)``, so the arrangements compared under one seed share their initial draws and their data.
float64 and one thread throughout, as in the chapter.

The runs (depth 6, Adam with β = (0.9, 0.98), learning rate 0.01, unless the row says otherwise):

    post_w0, post_w24, pre_w0, pre_w24   post-norm / pre-norm, no warmup / 24 warmup steps
    pre_qk_w24                           pre-norm with QK-normalization (LayerNorm), warmup 24
    post_w0_radam                        post-norm, no warmup, RAdam instead of Adam
    post_w0_lr3e-3                       post-norm, no warmup, learning rate 0.003
    post_w0_d2, _d3, _d4                 post-norm, no warmup, depth 2, 3, 4

The last three groups are the controls of Xiong et al.'s explanation of warmup (large gradients
near the output with a large learning rate): the variance of Adam's early steps (RAdam), the
size of the step (a smaller learning rate), and the depth (Xiong's bound on the output-side
gradient does not depend on it).

The gradients at initialization (``--part grads``): for depths 3, 6, 12, 24, both arrangements and
20 seeds, the gradient norm of every block's MLP output weight after one backward pass of one batch
(the batch of seed s comes from a generator seeded with 100 + s), and the RMS of the residual
stream after the last block. Chapter 10 prints their means and standard errors.

For each run: the loss and the largest |attention logit| of every step, the mean loss of the last
10 steps ("final"), and the first step with a loss below 0.5. Writes benchmarks/results/
placement.json (every run) and placement.md (a summary per row: how many seeds learn, that is end
below 0.2; how many stay at the loss of uniform guessing, ln 8 within 0.05; the final loss's mean,
standard error and range). ``--part train`` or ``--part grads`` reruns one part and keeps the other
from the existing placement.json. A few minutes on one free core.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

import torch

import normlib
from normlib_benchmarks import machine_info
from normlib_book.transformer import TinyTransformer, largest_logit, reversal_batch, train

OUT = Path(__file__).resolve().parent / "results"
V, LENGTH, WIDTH, HEADS = 8, 8, 32, 2
STEPS, LR, WARMUP = 90, 1e-2, 24
LEARNED, STUCK = 0.2, 0.05          # final loss below LEARNED: learned; within STUCK of ln 8: learned nothing

# name: (placement, depth, warmup, learning rate, optimizer, QK-normalization)
RUNS = {
    "post_w0": ("post", 6, 0, LR, "Adam", False),
    "post_w24": ("post", 6, WARMUP, LR, "Adam", False),
    "pre_w0": ("pre", 6, 0, LR, "Adam", False),
    "pre_w24": ("pre", 6, WARMUP, LR, "Adam", False),
    "pre_qk_w24": ("pre", 6, WARMUP, LR, "Adam", True),
    "post_w0_radam": ("post", 6, 0, LR, "RAdam", False),
    "post_w0_lr3e-3": ("post", 6, 0, 3e-3, "Adam", False),
    "post_w0_d2": ("post", 2, 0, LR, "Adam", False),
    "post_w0_d3": ("post", 3, 0, LR, "Adam", False),
    "post_w0_d4": ("post", 4, 0, LR, "Adam", False),
}


def one_run(name: str, seed: int) -> dict:
    placement, depth, warmup, lr, optimizer, qk = RUNS[name]
    torch.manual_seed(seed)
    model = TinyTransformer(V, LENGTH, WIDTH, HEADS, depth, normlib.LayerNorm, placement,
                            qk_norm=normlib.LayerNorm if qk else None)
    seen = []
    history = train(model, STEPS, lr, warmup=warmup, seed=seed, optimizer=getattr(torch.optim, optimizer),
                    every=lambda step, m: seen.append(largest_logit(m)))
    loss = history["loss"]
    below = next((step for step, value in enumerate(loss, 1) if value < 0.5), None)
    return {"seed": seed, "final": sum(loss[-10:]) / 10 if len(loss) == STEPS else float("nan"),
            "first_below_0.5": below, "max_logit": max(seen) if seen else float("nan"),
            "loss": [round(v, 5) for v in loss], "logit": [round(v, 4) for v in seen]}


DEPTHS = (3, 6, 12, 24)


def gradients(seeds) -> dict:
    """Per placement and depth: each seed's gradient norms (one per block) and stream RMS."""
    out = {}
    for placement in ("post", "pre"):
        for depth in DEPTHS:
            norms, rms = [], []
            for seed in seeds:
                torch.manual_seed(seed)
                model = TinyTransformer(V, LENGTH, WIDTH, HEADS, depth, normlib.LayerNorm, placement)
                batch, answers = reversal_batch(32, V, LENGTH, torch.Generator().manual_seed(100 + seed))
                stream = model.stream(batch)
                logits = model.head(model.final(stream))
                torch.nn.functional.cross_entropy(logits.reshape(-1, V), answers.reshape(-1)).backward()
                norms.append([b.mlp[2].weight.grad.norm().item() for b in model.blocks])
                rms.append(stream.detach().pow(2).mean().sqrt().item())
            out[f"{placement}_{depth}"] = {"grad_norms": norms, "stream_rms": rms}
            print(f"gradients {placement} depth {depth}", file=sys.stderr, flush=True)
    return out


def summary(runs: list) -> dict:
    finals = [r["final"] for r in runs]
    n = len(finals)
    mean = statistics.fmean(finals)
    se = statistics.stdev(finals) / math.sqrt(n) if n > 1 else float("nan")
    chance = math.log(V)
    return {"learned": sum(f < LEARNED for f in finals), "stuck": sum(abs(f - chance) < STUCK for f in finals),
            "n": n, "mean": mean, "se": se, "min": min(finals), "max": max(finals)}


def report(result: dict) -> str:
    m = result["machine"]
    lines = ["# Post-norm and pre-norm, with and without warmup, over seeds", "",
             f"Run {m['date']} on {m['cpu']}, torch {m['torch']} with {m['threads']} thread(s), float64; "
             f"written by `make bench-placement` (benchmarks/placement.py) in {result['seconds'] / 60:.1f} min.",
             "", f"Tiny transformer (width {WIDTH}, {HEADS} heads), reversal task (vocabulary {V}, length {LENGTH}), "
             f"{STEPS} steps, batch 32, seeds {result['seeds'][0]}–{result['seeds'][-1]} ({len(result['seeds'])}). "
             f"Final = mean loss of the last 10 steps; learned = final < {LEARNED}; stuck = final within {STUCK} of "
             f"ln {V} = {math.log(V):.3f}.", "",
             "| run | placement | depth | warmup | lr | optimizer | QK-norm | learned | stuck | final, mean ± se | final, min–max |",
             "|---|---|---:|---:|---:|---|---|---:|---:|---:|---:|"]
    for name, (placement, depth, warmup, lr, optimizer, qk) in RUNS.items():
        if name not in result["runs"]:        # a quick look with --only
            continue
        s = result["runs"][name]["summary"]
        lines.append(f"| {name} | {placement} | {depth} | {warmup} | {lr:g} | {optimizer} | {'yes' if qk else 'no'} | "
                     f"{s['learned']}/{s['n']} | {s['stuck']}/{s['n']} | {s['mean']:.3f} ± {s['se']:.3f} | "
                     f"{s['min']:.3f}–{s['max']:.3f} |")
    g = result["grads"]
    lines += ["", f"## Gradients at initialization ({len(g['seeds'])} seeds, {g['seeds'][0]}–{g['seeds'][-1]})", "",
              "Gradient norm of the last block's MLP output weight, mean ± standard error over the seeds; "
              "RMS of the residual stream after the last block, mean.", "",
              "| depth | post | pre | pre × √L | pre stream RMS | pre × RMS |", "|---:|---:|---:|---:|---:|---:|"]
    for depth in DEPTHS:
        row = {}
        for placement in ("post", "pre"):
            last = [norms[-1] for norms in g["runs"][f"{placement}_{depth}"]["grad_norms"]]
            row[placement] = (statistics.fmean(last), statistics.stdev(last) / math.sqrt(len(last)))
        rms = statistics.fmean(g["runs"][f"pre_{depth}"]["stream_rms"])
        lines.append(f"| {depth} | {row['post'][0]:.3f} ± {row['post'][1]:.3f} | {row['pre'][0]:.3f} ± {row['pre'][1]:.3f} | "
                     f"{row['pre'][0] * math.sqrt(depth):.2f} | {rms:.2f} | {row['pre'][0] * rms:.2f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="seeds of the training runs (default 10)")
    parser.add_argument("--grad-seeds", type=int, default=20, help="seeds of the gradients at initialization (default 20)")
    parser.add_argument("--part", choices=("all", "train", "grads"), default="all",
                        help="rerun one part only and keep the other from the existing placement.json")
    parser.add_argument("--only", nargs="*", default=list(RUNS), help="run only these rows (for a quick look)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"where to write the results (default {OUT})")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)
    start = time.perf_counter()
    seeds = list(range(args.seeds))
    old = args.out / "placement.json"
    if args.part != "all":
        kept = json.loads(old.read_text(encoding="utf-8"))
    result = {"machine": machine_info(), "seeds": seeds, "steps": STEPS, "lr": LR, "warmup": WARMUP,
              "learned_below": LEARNED, "stuck_within": STUCK,
              "settings": {name: dict(zip(("placement", "depth", "warmup", "lr", "optimizer", "qk_norm"), row))
                           for name, row in RUNS.items()},
              "runs": {}}
    if args.part == "grads":
        for key in ("machine", "seeds", "runs", "seconds"):
            result[key] = kept[key]
        args.only = []
    for name in args.only:
        runs = []
        for seed in seeds:
            runs.append(one_run(name, seed))
            print(f"{name} seed {seed}: final {runs[-1]['final']:.3f}", file=sys.stderr, flush=True)
        result["runs"][name] = {"summary": summary(runs), "runs": runs}
    if args.part == "train":
        result["grads"] = kept["grads"]
    else:
        grad_seeds = list(range(args.grad_seeds))
        result["grads"] = {"machine": machine_info(), "seeds": grad_seeds, "depths": list(DEPTHS),
                           "runs": gradients(grad_seeds)}
    if args.part != "grads":
        result["seconds"] = time.perf_counter() - start
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "placement.json").write_text(json.dumps(result, ensure_ascii=False) + "\n", encoding="utf-8")
    if args.part != "all" or set(args.only) == set(RUNS):
        text = report(result)
        (args.out / "placement.md").write_text(text + "\n", encoding="utf-8")
        print(text)
    print(f"written to {args.out}/placement.{{md,json}} in {result['seconds'] / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
