"""Chapter 11's seeded training runs: DyT against LayerNorm, and the causal language model's BOS.

``benchmarks/dyt_seeds.py`` (``make bench-dyt-seeds``) runs :func:`sweep` and commits its result;
chapter 11 reads that result, and runs :func:`sweep` itself only where the result is missing (a
notebook opened outside the book's repository, where it takes a few minutes).

For every seed the chapter's reversal model (6 pre-norm blocks, width 32, 2 heads) is trained for
100 steps with Adam, three times, the seed fixing the initial values and the batches: LayerNorm at
learning rate 1e-2, DyT at 1e-2 (every LayerNorm replaced one for one), and DyT at a third of it.
:func:`lm_sweep` trains the chapter's small causal language model (400 steps on
:func:`~normlib_book.transformer.chain_batch`) once per seed and measures each LayerNorm's cloud the
way the chapter does, BOS included, excluded and counted once. Everything runs in float64, so that
the numbers are the same on every CPU.

>>> summary({"accuracy": [0.5, 0.995, 1.0], "loss": [2.0, 1.0, 3.0]})
(2, 1.0, 3.0)
"""

from __future__ import annotations

import math
from typing import Callable, Dict, Iterable, Optional

import torch

from normlib import DyT, LayerNorm, functional

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


LM = dict(vocab=17, length=8, d=64, heads=4, depth=2, placement="pre", causal=True)
LM_STEPS, LM_LR, BOS = 400, 3e-3, 16


def fits(x: torch.Tensor, y: torch.Tensor) -> tuple:
    """Chapter 11's ``fits``: the mean squared error of a line through the origin y ≈ k·x, and
    (error, a, b) of y ≈ a·tanh(b·x), b from a grid and a in closed form."""
    line = (y - (x @ y) / (x @ x) * x).pow(2).mean().item()
    best = (math.inf, 0.0, 0.0)
    for b in torch.logspace(-3, 0, 301).tolist():
        t = torch.tanh(b * x)
        a = ((t @ y) / (t @ t)).item()
        error = (y - a * t).pow(2).mean().item()
        if error < best[0]:
            best = (error, a, b)
    return line, best


def _three_fits(x: torch.Tensor, x_hat: torch.Tensor, owner: torch.Tensor) -> dict:
    line, (curve, a, b) = fits(x.flatten(), x_hat.flatten())
    squares = 0.0
    for part in (owner, ~owner):
        u, v = x[part], x_hat[part]
        squares += (v - (u @ v) / (u @ u) * u).pow(2).sum().item()
    return {"line": line, "curve": curve, "two": squares / x.numel(), "a": a, "b": b}


def lm_run(seed: int) -> dict:
    """One seed of the chapter's causal language model, measured on the chapter's fixed batch: per
    LayerNorm the error ratio (tanh ÷ line), BOS's σ ÷ the others' median σ, BOS's share of the top
    1% of the elements, whether BOS has the largest σ, and the error ratio without BOS and with BOS
    counted once; for the final LayerNorm also one line, a·tanh and two lines (BOS, the rest)."""
    torch.manual_seed(seed)
    model = transformer.TinyTransformer(norm=LayerNorm, **LM)
    transformer.train(model, LM_STEPS, LM_LR, batch=16, seed=seed, task=transformer.chain_batch)
    tokens, _ = transformer.chain_batch(64, LM["vocab"], LM["length"], generator=torch.Generator().manual_seed(1000))
    caught = {}
    hooks = [layer.register_forward_hook(lambda layer, args, out, name=name: caught.__setitem__(name, args[0].detach().flatten(0, -2)))
             for name, layer in model.named_modules() if isinstance(layer, LayerNorm)]
    with torch.no_grad():
        model(tokens)
    for hook in hooks:
        hook.remove()
    bos = (tokens == BOS).flatten()
    once = ~bos
    once[bos.nonzero()[0]] = True
    layers = {}
    for name, x in caught.items():
        d = x.shape[-1]
        x_hat = functional.layer_norm(x, (d,))
        sigma = x.std(-1, unbiased=False)
        extreme = x.abs() >= x.abs().flatten().quantile(0.99)
        line, (error, _, _) = fits(x.flatten(), x_hat.flatten())
        rest = x[~bos]
        line_rest, (error_rest, _, _) = fits(rest.flatten(), functional.layer_norm(rest, (d,)).flatten())
        line_once, (error_once, _, _) = fits(x[once].flatten(), functional.layer_norm(x[once], (d,)).flatten())
        layers[name] = {"ratio": error / line, "bos": sigma[bos].mean().item() / sigma[~bos].median().item(),
                        "held": extreme[bos].sum().item() / extreme.sum().item(),
                        "largest": bool(sigma[bos].min() > sigma[~bos].max()),
                        "without": error_rest / line_rest, "once": error_once / line_once}
    x = caught["final"]
    x_hat = functional.layer_norm(x, x.shape[-1:])
    owner = bos.unsqueeze(1).expand_as(x)
    final = {"every": _three_fits(x, x_hat, owner), "once": _three_fits(x[once], x_hat[once], owner[once])}
    top = x.abs() >= x.abs().flatten().quantile(0.99)
    a, b = final["every"]["a"], final["every"]["b"]
    final.update(got=x_hat[top].abs().mean().item(), curve=(a * torch.tanh(b * x[top])).abs().mean().item(),
                 bos_top=x_hat[bos].abs().max().item(), rest_top=x_hat[~bos].abs().max().item())
    return {"layers": layers, "final": final}


def lm_sweep(seeds: Iterable[int], progress: Optional[Callable[[str], None]] = None) -> dict:
    """:func:`lm_run` for every seed: ``{"seeds", "config", "steps", "lr", "runs": {str(seed): ...}}``."""
    seeds = list(seeds)
    runs = {}
    for seed in seeds:
        runs[str(seed)] = run = lm_run(seed)
        if progress is not None:
            f = run["final"]
            progress(f"LM seed {seed:2d}  final: line {f['every']['line']:.3f}  tanh {f['every']['curve']:.3f}  "
                     f"two lines {f['every']['two']:.3f}  (BOS once: {f['once']['line']:.3f} {f['once']['curve']:.3f} {f['once']['two']:.3f})")
    return {"seeds": seeds, "config": LM, "steps": LM_STEPS, "lr": LM_LR, "runs": runs}
