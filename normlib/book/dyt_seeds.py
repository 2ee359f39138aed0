"""Chapter 11's DyT-against-LayerNorm training runs over many seeds.

``benchmarks/dyt_seeds.py`` (``make bench-dyt-seeds``) runs :func:`sweep` and commits its result;
chapter 11 reads that result, and runs :func:`sweep` itself only where the result is missing (a
notebook opened outside the book's repository, where it takes a few minutes).

For every seed the chapter's reversal model (6 pre-norm blocks, width 32, 2 heads) is trained for
100 steps with Adam, three times, the seed fixing the initial values and the batches: LayerNorm at
learning rate 1e-2, DyT at 1e-2 (every LayerNorm replaced one for one), and DyT at a third of it.
Everything runs in float64, so that the numbers are the same on every CPU.

>>> summary({"accuracy": [0.5, 0.995, 1.0], "loss": [2.0, 1.0, 3.0]})
(2, 1.0, 3.0)
"""

from __future__ import annotations

from typing import Callable, Dict, Iterable, Optional

import torch

from .. import DyT, LayerNorm
from . import transformer

CONFIG = dict(vocab=8, length=8, d=32, heads=2, depth=6, placement="pre")
STEPS, LR = 100, 1e-2
RUNS = {"LayerNorm": (LayerNorm, LR), "DyT": (DyT, LR), "DyT lr/3": (DyT, LR / 3)}


def trained(norm, seed: int, lr: float = LR):
    """The reversal model with ``norm`` trained for :data:`STEPS` steps; the seed fixes the initial
    values and the batches. Returns the model and its history (loss and accuracy per step)."""
    torch.manual_seed(seed)
    model = transformer.TinyTransformer(norm=norm, **CONFIG)
    return model, transformer.train(model, STEPS, lr, batch=32, seed=seed)


def summary(history: dict) -> tuple:
    """The first step at 99% accuracy (``None`` if never); over the last 50 steps, the median loss
    and the largest ratio of one step's loss to the step before."""
    first = next((step + 1 for step, acc in enumerate(history["accuracy"]) if acc >= 0.99), None)
    loss = torch.tensor(history["loss"][-51:], dtype=torch.float64)
    return first, loss[1:].median().item(), (loss[1:] / loss[:-1]).max().item()


def probe() -> torch.Tensor:
    """The fixed batch (64 sequences) on which the chapter looks inside the trained models."""
    tokens, _ = transformer.reversal_batch(64, vocab=8, length=8, generator=torch.Generator().manual_seed(1000))
    return tokens


def alphas(model: torch.nn.Module, tokens: torch.Tensor) -> dict:
    """Per DyT layer, in order: its name, the learned α, α × the σ of its input on ``tokens``, and
    the share of its inputs with |αx| > 2 (where tanh is nearly flat)."""
    seen = {}
    hooks = [layer.register_forward_hook(lambda layer, args, out, name=name: seen.__setitem__(name, args[0].detach()))
             for name, layer in model.named_modules() if isinstance(layer, DyT)]
    with torch.no_grad():
        model(tokens)
    for hook in hooks:
        hook.remove()
    out = {"layers": list(seen), "alpha": [], "alpha_sigma": [], "saturated": []}
    for name, x in seen.items():
        a = model.get_submodule(name).alpha.item()
        out["alpha"].append(a)
        out["alpha_sigma"].append(a * x.std().item())
        out["saturated"].append(((a * x).abs() > 2).double().mean().item())
    return out


def sweep(seeds: Iterable[int], progress: Optional[Callable[[str], None]] = None) -> dict:
    """Every run of :data:`RUNS` for every seed: ``{"seeds", "config", "steps", "lr", "runs"}``, with
    ``runs[name][str(seed)]`` holding ``first``, ``median``, ``rise`` and ``loss`` (every step), and
    for "DyT" also :func:`alphas` on :func:`probe`. Call it in float64 (``torch.set_default_dtype``)."""
    tokens = probe()
    seeds = list(seeds)
    runs: Dict[str, dict] = {name: {} for name in RUNS}
    for seed in seeds:
        for name, (norm, lr) in RUNS.items():
            model, history = trained(norm, seed, lr)
            first, median, rise = summary(history)
            runs[name][str(seed)] = row = {"first": first, "median": median, "rise": rise, "loss": history["loss"]}
            if name == "DyT":
                row.update(alphas(model, tokens))
            if progress is not None:
                progress(f"seed {seed:2d}  {name:10s} first {first}  median {median:.2e}  rise {rise:6.2f}")
    return {"seeds": seeds, "config": CONFIG, "steps": STEPS, "lr": LR, "runs": runs}
