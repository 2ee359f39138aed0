"""Chapter 9's live demos: one SyncBatchNorm training step per way of splitting the batch over processes,
and whose running statistics plain BatchNorm keeps under DistributedDataParallel."""

from __future__ import annotations

from typing import Optional, Sequence

import torch
from torch import Tensor, nn
from torch.nn.parallel import DistributedDataParallel

from normlib.distributed import SyncBatchNorm, gather_moments, local_moments
from normlib.functional import batch_norm
from normlib.stats import merge_all

from .instruments import traffic

__all__ = ["split_steps", "ddp_running_stats"]


def split_steps(rank: int, world_size: int, batch: Tensor, upstream: Tensor, splits: Sequence[Sequence[int]],
                weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
                ddp_sizes: Optional[Sequence[int]] = None) -> dict:
    """One training step of :class:`SyncBatchNorm` on this rank's rows of ``batch``, per split.

    Run by :func:`normlib_book.launch.launch` (chapter 9's live demo): ``splits`` lists how many rows each rank holds,
    e.g. ``[[2, 2], [1, 3]]``; every rank builds the same layer (γ = ``weight``, β = ``bias``)
    and takes its rows of ``batch``; the loss is ``Σ y · upstream``. For each split it returns
    the rows it held, its own slice's mean and (population) variance, the merged ones, its
    output and gradients, its running statistics, plain per-process BatchNorm's output on the
    same rows (``None`` with fewer than 2 values per channel) and the collectives made. Under
    ``"torch"``: what ``torch.nn.SyncBatchNorm`` does with CPU tensors in this process group.
    Given ``ddp_sizes`` (rows per rank), under ``"ddp"`` also :func:`ddp_running_stats` in the same
    processes (starting processes takes longer than either demo).
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
    ddp = None if ddp_sizes is None else ddp_running_stats(rank, world_size, batch, ddp_sizes)
    return dict(rank=rank, steps=steps, torch=torch_on_cpu, ddp=ddp)


def ddp_running_stats(rank: int, world_size: int, batch: Tensor, sizes: Sequence[int]) -> dict:
    """Plain ``nn.BatchNorm1d`` (momentum 1) wrapped in ``DistributedDataParallel`` with its defaults.

    Run by :func:`normlib_book.launch.launch` (chapter 9): rank ``r`` takes ``sizes[r]`` rows of
    ``batch`` and makes one training forward and backward; then the next forward, in evaluation
    mode. Returns this rank's ``running_mean`` after the training step (its own rows' mean: the
    layer is not synchronized) and during the next forward, which DDP begins by copying rank 0's
    buffers to every rank (``broadcast_buffers=True``, the default).
    """
    if len(sizes) != world_size or sum(sizes) != batch.shape[0]:
        raise ValueError(f"sizes must give {world_size} row counts adding up to {batch.shape[0]}, got {list(sizes)}")
    start = sum(sizes[:rank])
    rows = batch[start:start + sizes[rank]]
    model = DistributedDataParallel(nn.BatchNorm1d(batch.shape[1], momentum=1.0).to(batch.dtype))
    model(rows).sum().backward()
    after_step = model.module.running_mean.clone()
    model.eval()
    with torch.no_grad():
        model(rows)
    return dict(rank=rank, rows=(start, start + sizes[rank]), after_step=after_step,
                next_forward=model.module.running_mean.clone())
