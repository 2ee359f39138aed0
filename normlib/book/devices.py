"""Chapter 9's live demo: one SyncBatchNorm training step per way of splitting the batch over processes."""

from __future__ import annotations

from typing import Optional, Sequence

import torch
from torch import Tensor, nn

from ..distributed import SyncBatchNorm, gather_moments, local_moments, traffic
from ..functional import batch_norm
from ..stats import merge_all

__all__ = ["split_steps"]


def split_steps(rank: int, world_size: int, batch: Tensor, upstream: Tensor, splits: Sequence[Sequence[int]],
                weight: Optional[Tensor] = None, bias: Optional[Tensor] = None) -> dict:
    """One training step of :class:`SyncBatchNorm` on this rank's rows of ``batch``, per split.

    Run by :func:`normlib.book.launch.launch` (chapter 9's live demo): ``splits`` lists how many rows each rank holds,
    e.g. ``[[2, 2], [1, 3]]``; every rank builds the same layer (γ = ``weight``, β = ``bias``)
    and takes its rows of ``batch``; the loss is ``Σ y · upstream``. For each split it returns
    the rows it held, its own slice's mean and (population) variance, the merged ones, its
    output and gradients, its running statistics, plain per-process BatchNorm's output on the
    same rows (``None`` with fewer than 2 values per channel) and the collectives made. Under
    ``"torch"``: what ``torch.nn.SyncBatchNorm`` does with CPU tensors in this process group.
    """
    channels = batch.shape[1]
    steps = []
    for sizes in splits:
        if len(sizes) != world_size or sum(sizes) != batch.shape[0]:
            raise ValueError(f"each split must give {world_size} row counts adding up to {batch.shape[0]}, "
                             f"got {list(sizes)}")
        start = sum(sizes[:rank])
        rows = slice(start, start + sizes[rank])
        layer = SyncBatchNorm(channels, momentum=1.0, affine=weight is not None).to(batch.dtype)
        if weight is not None:
            with torch.no_grad():
                layer.weight.copy_(weight)
                layer.bias.copy_(bias if bias is not None else torch.zeros_like(weight))
        x = batch[rows].clone().requires_grad_()
        with traffic() as calls:
            y = layer(x)
            (y * upstream[rows]).sum().backward()
        local = local_moments(x.detach())
        total = merge_all(gather_moments(local, None))
        steps.append(dict(
            rows=(rows.start, rows.stop), local_mean=local.mean, local_var=local.var(), mean=total.mean,
            var=total.var(), y=y.detach(), grad_input=x.grad,
            grad_weight=None if weight is None else layer.weight.grad,
            grad_bias=None if weight is None else layer.bias.grad,
            running_mean=layer.running_mean, running_var=layer.running_var, collectives=calls,
            naive=(batch_norm(x.detach(), None, None, weight, bias, training=True)
                   if local.count > 1 else None),
        ))
    try:
        nn.SyncBatchNorm(channels)(batch[:2])
        torch_on_cpu = "ran"
    except ValueError as error:
        torch_on_cpu = f"ValueError: {error}"
    return dict(rank=rank, steps=steps, torch=torch_on_cpu)
