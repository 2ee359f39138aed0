"""torch.nn.functional in float64 as the explorer's oracle, for tests/book/test_explorer.py (the module's arithmetic)
and tests/book/test_explorer_ui.py (what a reader sees after each action). A state is the explorer's: layout,
method, the shapes and values of each layout, groups, gamma, beta, eps, training, running statistics."""

from __future__ import annotations

import torch
import torch.nn.functional as TF


def sizes(st) -> tuple[int, int, int]:
    """The (A, B, K) the explorer draws: (N, C, H·W), (B, L, D), or the 4 × 3 table as (4, 1, 3)."""
    return (4, 1, 3) if st["layout"] == "table" else tuple(st[f"{st['layout']}_shape"])


def values(st) -> torch.Tensor:
    key = {"table": "table", "image": "image_x", "sequence": "sequence_x"}[st["layout"]]
    return torch.tensor(st[key], dtype=torch.float64).reshape(sizes(st))


def batch_input(st, x3: torch.Tensor) -> torch.Tensor:
    """The (A, B, K) tensor as torch's batch_norm takes it: channels on axis 1."""
    a, b, k = x3.shape
    return x3 if st["layout"] == "image" else x3.reshape(a * b, k) if st["layout"] == "table" else x3.transpose(1, 2)


def normalize(st, x3, affine: bool, rm=None, rv=None, training=None, momentum=0.0):
    """torch's output for the state, (A, B, K) in and out (BatchNorm with the running statistics given)."""
    layout, method, eps = st["layout"], st["method"], st["eps"]
    a, b, k = x3.shape
    channels = b if layout == "image" else k
    full = lambda shape, v: torch.full(shape, float(v), dtype=torch.float64) if affine else None  # noqa: E731
    if method == "batch":
        y = TF.batch_norm(batch_input(st, x3), rm, rv, full((channels,), st["gamma"]), full((channels,), st["beta"]),
                          training=st["training"] if training is None else training, momentum=momentum, eps=eps)
        return y if layout == "image" else y.reshape(a, b, k) if layout == "table" else y.transpose(1, 2)
    if method == "batch_dim0":
        y = (x3 - x3.mean(0)) / torch.sqrt(x3.var(0, unbiased=False) + eps)
        return y * st["gamma"] + st["beta"] if affine else y
    if method in ("layer", "rms"):
        shape = (b, k) if layout == "image" else (k,)
        if method == "layer":
            return TF.layer_norm(x3, shape, full(shape, st["gamma"]), full(shape, st["beta"]), eps)
        return TF.rms_norm(x3, shape, full(shape, st["gamma"]), eps)
    if method == "instance":
        return TF.instance_norm(x3, weight=full((b,), st["gamma"]), bias=full((b,), st["beta"]), eps=eps)
    return TF.group_norm(x3, st["groups"], full((b,), st["gamma"]), full((b,), st["beta"]), eps)


def statistic_rows(st, t: torch.Tensor) -> torch.Tensor:
    """One row per statistic of an (A, B, K) tensor, in the order the explorer numbers them (1, 2, …)."""
    layout, method = st["layout"], st["method"]
    a, b, k = t.shape
    if method == "batch":
        return t.transpose(0, 1).reshape(b, -1) if layout == "image" else t.reshape(-1, k).T
    if method == "batch_dim0":
        return t.reshape(a, -1).T
    if method in ("layer", "rms"):
        return t.reshape(a, -1) if layout == "image" else t.reshape(-1, k)
    if method == "instance":
        return t.reshape(a * b, k)
    return t.reshape(a * st["groups"], -1)
