"""Chapter 1's training comparison over 20 seeds: no normalization, BatchNorm, LayerNorm (issue 27).

    make bench-lr-sweep      # or: .venv/bin/python benchmarks/lr_sweep.py [--seeds N]

The network, data and training loop are chapter 1's (``mlp`` and ``train`` there; chapter 1 re-runs
seed 0 at learning rate 0.03 live and checks it against these results): a 12-layer MLP of width 64,
He initialization, zero biases, plain SGD, 400 steps of 64 samples, float64, one thread. The data
set is fixed (generator seed 0: 2048 training and 1024 validation samples of 8 features, four of
them 10 and 100 times larger than the rest). A seed ``s`` sets the initial weights (shared by the
three networks) and the order of the mini-batches (shared too), so the three networks of one seed
form a pair and their differences are paired.

Runs, for every seed:

- standardized inputs, each network at learning rates 0.03, 0.1, 0.3 and 1.0;
- inputs as they come (``raw``: scales 1, 1, 1, 1, 10, 10, 100, 100) at 0.03;
- the same with the two ×100 features brought back to scale 1 (``raw_without_x100``) and with
  every feature at scale 1 (``raw_all_scale_1``, not standardized) at 0.03: the controls for
  "LayerNorm does worse on raw inputs because the largest features dominate one sample's statistics".

Each run records the validation accuracy (None if the loss became infinite or NaN, and the step at
which it did), the training loss averaged over windows of 10 steps, how much the weights of the
linear layers grew (final ÷ initial Frobenius norm, geometric mean over the 12 layers) and, at step
100, a probe over the whole training set: the standard deviation of the logits, the share of ReLU
units that are zero for every training sample (per layer) and, in front of each normalization, the
share of the activations' norm that differs between samples (‖h − mean over samples‖ ÷ ‖h‖).

Writes benchmarks/results/lr_sweep.json (every run) and lr_sweep.md (means and standard errors).
Numbers at large learning rates are chaotic: one seed's result can differ on another CPU; the
means and spreads over the seeds are what chapter 1 quotes. Takes about 10 minutes on one core.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

from normlib_benchmarks import machine_info
from normlib_benchmarks.report import save_results

OUT = Path(__file__).resolve().parent / "results"
RATES = (0.03, 0.1, 0.3, 1.0)
NORMS = {"no_norm": None, "with_batch": nn.BatchNorm1d, "with_layer": nn.LayerNorm}
SCALES = {"raw": (1, 1, 1, 1, 10, 10, 100, 100.0), "raw_without_x100": (1, 1, 1, 1, 10, 10, 1, 1.0),
          "raw_all_scale_1": (1, 1, 1, 1, 1, 1, 1, 1.0)}
STEPS, BATCH, WINDOW, PROBE_AT = 400, 64, 10, 100


def data():
    """Chapter 1's data set: features of scale 1 and the labels, fixed by generator seed 0."""
    gen = torch.Generator().manual_seed(0)
    points = torch.randn(3072, 8, generator=gen, dtype=torch.float64)
    labels = ((points[:, 0] * points[:, 1] + torch.sin(2 * points[:, 4]) - points[:, 6]) > 0).double()
    return points, labels


def mlp(norm=None, depth=12, width=64, seed=0):
    gen = torch.Generator().manual_seed(seed)
    layers, d = [], 8
    for _ in range(depth):
        linear = nn.Linear(d, width, dtype=torch.float64)
        nn.init.kaiming_normal_(linear.weight, nonlinearity="relu", generator=gen)
        nn.init.zeros_(linear.bias)
        layers += [linear] + ([norm(width, dtype=torch.float64)] if norm else []) + [nn.ReLU()]
        d = width
    head = nn.Linear(width, 1, dtype=torch.float64)
    nn.init.kaiming_normal_(head.weight, nonlinearity="linear", generator=gen)
    nn.init.zeros_(head.bias)
    return nn.Sequential(*layers, head)


def probe(model, inputs):
    """Logit std, dead ReLUs per layer and the between-sample share in front of each norm, over ``inputs``."""
    was_training = model.training
    model.train()                 # BatchNorm: the statistics of the whole training set, no running update
    dead, between = [], []
    with torch.no_grad():
        h = inputs
        for module in model:
            if isinstance(module, (nn.BatchNorm1d, nn.LayerNorm)):
                between.append(((h - h.mean(0)).norm() / h.norm()).item())
                if isinstance(module, nn.BatchNorm1d):
                    h = nn.functional.batch_norm(h, None, None, module.weight, module.bias, True, 0.0, module.eps)
                    continue
            h = module(h)
            if isinstance(module, nn.ReLU):
                dead.append(((h > 0).sum(0) == 0).double().mean().item())
    model.train(was_training)
    return {"logit_std": h.std().item(), "dead_relu": dead, "between_sample_share": between}


def weight_norms(model):
    return [m.weight.norm().item() for m in model if isinstance(m, nn.Linear)][:-1]


def train(norm, inputs, labels, held_inputs, held_labels, lr, seed):
    model = mlp(norm, seed=seed)
    start = weight_norms(model)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    order = torch.Generator().manual_seed(100 + seed)
    losses, probed, diverged_at = [], None, None
    for step in range(STEPS):
        idx = torch.randint(0, len(inputs), (BATCH,), generator=order)
        loss = nn.functional.binary_cross_entropy_with_logits(model(inputs[idx]).squeeze(1), labels[idx])
        if not torch.isfinite(loss):
            diverged_at = step + 1
            break
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if step + 1 == PROBE_AT:
            probed = probe(model, inputs)
    windows = [round(statistics.fmean(losses[i:i + WINDOW]), 5) for i in range(0, len(losses) - WINDOW + 1, WINDOW)]
    out = {"accuracy": None, "diverged_at": diverged_at, "loss_windows": windows, "probe_100": probed}
    if diverged_at is None:
        model.eval()
        with torch.no_grad():
            out["accuracy"] = ((model(held_inputs).squeeze(1) > 0).double() == held_labels).double().mean().item()
        growth = [end / begin for end, begin in zip(weight_norms(model), start)]
        out["weight_growth"] = math.exp(statistics.fmean(math.log(g) for g in growth))
    return out


def run(seeds) -> dict:
    torch.set_num_threads(1)
    begin = time.perf_counter()
    points, labels = data()
    train_y, held_y = labels[:2048], labels[2048:]

    def split(scale, standardize):
        x = points * torch.tensor(scale, dtype=torch.float64)
        tr, he = x[:2048], x[2048:]
        if standardize:
            center, spread = tr.mean(0), tr.std(0)
            tr, he = (tr - center) / spread, (he - center) / spread
        return tr, he

    conditions = [("standardized", SCALES["raw"], True, RATES)] + [(name, s, False, (0.03,)) for name, s in SCALES.items()]
    runs = []
    for seed in seeds:
        for inputs, scale, standardize, rates in conditions:
            tr, he = split(scale, standardize)
            for lr in rates:
                for name, norm in NORMS.items():
                    result = train(norm, tr, train_y, he, held_y, lr, seed)
                    runs.append({"seed": seed, "inputs": inputs, "norm": name, "lr": lr, **result})
        print(f"seed {seed} done after {time.perf_counter() - begin:.0f} s", file=sys.stderr, flush=True)
    return {"seeds": list(seeds), "rates": list(RATES), "norms": list(NORMS), "steps": STEPS, "batch": BATCH,
            "window": WINDOW, "probe_at": PROBE_AT, "machine": machine_info(),
            "seconds": time.perf_counter() - begin, "runs": runs}


def summary(values):
    """mean, standard error, min, max of a list (standard error None for fewer than two)."""
    if not values:
        return None
    se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else None
    return {"mean": statistics.fmean(values), "se": se, "min": min(values), "max": max(values), "n": len(values)}


def report(res: dict) -> str:
    m, runs = res["machine"], res["runs"]
    n = len(res["seeds"])
    lines = ["# Chapter 1: the training comparison over seeds", "",
             f"Run {m['date']} on {m['cpu']}, torch {m['torch']} with 1 thread, Python {m['python']}, float64. "
             f"Written by `make bench-lr-sweep` (benchmarks/lr_sweep.py) in {res['seconds'] / 60:.1f} min.", "",
             f"{n} seeds (initial weights and mini-batch order; the data set is fixed). Validation accuracy: "
             "mean ± standard error over the runs that did not diverge, [min, max], and how many diverged.", ""]

    def cell(inputs, norm, lr):
        group = [r for r in runs if (r["inputs"], r["norm"], r["lr"]) == (inputs, norm, lr)]
        acc = summary([r["accuracy"] for r in group if r["accuracy"] is not None])
        diverged = sum(r["accuracy"] is None for r in group)
        text = f"{acc['mean']:.3f} ± {acc['se']:.3f} [{acc['min']:.3f}, {acc['max']:.3f}]" if acc and acc["se"] is not None \
            else (f"{acc['mean']:.3f}" if acc else "–")
        return text + (f", {diverged}/{len(group)} diverged" if diverged else "")

    lines += ["| inputs | learning rate | " + " | ".join(res["norms"]) + " |", "|---|---:|" + "---|" * len(res["norms"])]
    for lr in res["rates"]:
        lines.append(f"| standardized | {lr} | " + " | ".join(cell("standardized", k, lr) for k in res["norms"]) + " |")
    for inputs in SCALES:
        lines.append(f"| {inputs} | 0.03 | " + " | ".join(cell(inputs, k, 0.03) for k in res["norms"]) + " |")
    lines += ["", "Weight growth (final ÷ initial norm of the linear layers' weights, geometric mean over layers), "
              "mean over seeds, standardized inputs:", ""]
    for lr in res["rates"]:
        parts = []
        for k in res["norms"]:
            g = summary([r["weight_growth"] for r in runs if (r["inputs"], r["norm"], r["lr"]) == ("standardized", k, lr)
                         and r.get("weight_growth")])
            parts.append(f"{k} {g['mean']:.2f}" if g else f"{k} –")
        lines.append(f"- learning rate {lr}: " + ", ".join(parts))
    lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--out", type=Path, default=OUT, help=f"where to write the results (default {OUT})")
    args = parser.parse_args(argv)
    res = run(range(args.seeds))
    save_results(args.out, "lr_sweep", res, report(res))
    print(f"written to {args.out}/lr_sweep.{{md,json}}; took {res['seconds'] / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
