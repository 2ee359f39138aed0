"""BatchNorm across processes: every process normalizes with the statistics of the *whole* batch.

In data-parallel training each of k processes (GPUs, or here CPU processes) gets b = B/k of
the B samples. Plain BatchNorm then normalizes each slice with that slice's own mean and
variance, which drift further from the full batch's the smaller b is (chapter 9 measures it).
Synchronized BatchNorm exchanges per-channel statistics so that every process uses those of all
B samples, exactly as one process would on the concatenated batch.

Forward, per channel (the axes of BatchNorm: ``(N, C, *)`` pools every axis but 1):

1. each process computes its slice's ``(count, mean, M2)``, ``M2 = Σ (x − mean)²``, in two passes;
2. **one** ``all_gather`` of ``[count, mean_1…mean_C, M2_1…M2_C]`` (float64: ``2C + 1`` numbers
   per process, so counts are exact and uneven slices, even empty ones, weigh what they hold);
3. every process merges the parts in rank order with Chan et al.'s stable formula
   (:func:`normlib.stats.merge`: ``δ = mean_b − mean_a``, ``mean = mean_a + δ·n_b/n``,
   ``M2 = M2_a + M2_b + δ²·n_a·n_b/n``), never sums of squares, which cancel catastrophically
   when ``|mean| ≫ std`` (chapter 2);
4. ``x̂ = (x − mean)/sqrt(M2/n + ε)`` and ``y = γ·x̂ + β``, as BatchNorm; the running statistics
   (same on every process) get the unbiased ``M2/(n − 1)``, with PyTorch's momentum convention.

Backward: chapter 7's ``∂L/∂x = r·(g − mean(g) − x̂·mean(g·x̂))`` with ``g = γ·∂L/∂y``, where
both means run over all n values of the channel, on every process. Because γ is one number per
channel, they need only two per-channel sums, ``Σ ∂L/∂y`` and ``Σ ∂L/∂y·x̂``: **one**
``all_reduce`` of ``2C`` numbers. ``∂L/∂γ`` and ``∂L/∂β`` are these sums over the local slice
only, as in ``torch.nn.SyncBatchNorm``: the data-parallel wrapper (DDP) reduces parameter
gradients across processes with all the others.

Outside an initialized process group (``torch.distributed.is_initialized()`` is false), with a
group of one process, or in evaluation mode, nothing is exchanged and the layer is ordinary
BatchNorm (:func:`normlib.functional.batch_norm`).

Every process of the group must call the layer the same number of times in the same order,
and run its backward (a process whose loss does not use the output would leave the others
waiting for its ``all_reduce``). ``torch.nn.SyncBatchNorm`` needs a GPU (on CPU tensors it
raises); this one runs wherever ``torch.distributed`` does, e.g. the ``gloo`` backend on a
laptop's CPU. :func:`normlib_book.launch.launch` starts such processes, from a script or a notebook.
"""

from __future__ import annotations

from typing import Any, List, Optional

import torch
import torch.distributed as dist
from torch import Tensor, nn
from torch.autograd.function import once_differentiable

from . import checks, modules
from . import functional as F
from .axes import NormInputError, channel_view
from .functional import _affine, _opmath, _update_running
from .messages import errors
from .stats import Moments, merge_all, moments

__all__ = [
    "SyncBatchNorm", "sync_batch_norm", "SyncBatchNormFunction",
    "local_moments", "gather_moments", "is_synchronized",
]


def is_synchronized(process_group=None) -> bool:
    """True when a default process group exists and ``process_group`` (default: all processes)
    has more than one member: then synchronized BatchNorm exchanges statistics.

    >>> is_synchronized()          # a plain Python process: no process group
    False
    """
    if not (dist.is_available() and dist.is_initialized()):
        return False
    return dist.get_world_size(_group(process_group)) > 1


def _group(process_group):
    return dist.group.WORLD if process_group is None else process_group


# --------------------------------------------------------------------------- the statistics

def local_moments(x: Tensor) -> Moments:
    """``(count, mean, M2)`` per channel of this process's ``(N, C, *)`` slice, in float64.

    The slice is converted to float64 and its moments computed in two passes
    (:func:`normlib.stats.moments`), so the parts that travel carry no more rounding than
    float64's: an offset of 1e3 in float32 costs the merged mean no more than single-process
    BatchNorm. ``mean`` and ``M2 = n·σ²`` have shape ``(C,)``; an empty slice gives count 0 and zeros.

    >>> m = local_moments(torch.tensor([[2.0], [4.0]]))      # feature 1 of rows A and B
    >>> m.count, m.mean, m.m2
    (2, tensor([3.], dtype=torch.float64), tensor([2.], dtype=torch.float64))
    """
    count = x.numel() // x.shape[1] if x.shape[1] else 0
    if count == 0:
        zeros = x.new_zeros(x.shape[1], dtype=torch.float64)
        return Moments(0, zeros, zeros.clone())
    mean, var = moments(x.to(torch.float64), (0, *range(2, x.dim())))   # every axis but the channels
    return Moments(count, mean.reshape(-1), var.reshape(-1) * count)


def gather_moments(local: Moments, process_group=None) -> List[Moments]:
    """Every process's ``(count, mean, M2)``, in rank order, with one ``all_gather``.

    The parts travel as float64 ``[count, mean…, M2…]`` (``2C + 1`` numbers), so a count is
    exact however large; they come back in float64.
    """
    group = _group(process_group)
    world_size = dist.get_world_size(group)
    channels = local.mean.numel()
    packed = torch.cat([
        torch.tensor([float(local.count)], dtype=torch.float64, device=local.mean.device),
        local.mean.to(torch.float64).reshape(-1),
        local.m2.to(torch.float64).reshape(-1),
    ])
    parts = [torch.empty_like(packed) for _ in range(world_size)]
    dist.all_gather(parts, packed, group=group)
    return [Moments(int(p[0].item()), p[1:1 + channels], p[1 + channels:]) for p in parts]


def _all_reduce_sum(t: Tensor, process_group) -> Tensor:
    group = _group(process_group)
    dist.all_reduce(t, op=dist.ReduceOp.SUM, group=group)
    return t


# --------------------------------------------------------------------------- forward and backward

class SyncBatchNormFunction(torch.autograd.Function):
    """Training-mode BatchNorm with given whole-batch statistics, and the synchronized backward (chapter 9).

    ``SyncBatchNormFunction.apply(input, weight, bias, mean, var, count, eps, process_group)``:
    ``mean`` and ``var`` (population, shape ``(C,)``) are the merged statistics of all ``count``
    values per channel over every process (:func:`sync_batch_norm` computes them first). The
    backward all-reduces the two per-channel sums. Use :func:`sync_batch_norm`.
    """

    @staticmethod
    def forward(ctx, input, weight, bias, mean, var, count, eps, process_group):
        x = input.to(_opmath(input.dtype))
        mean = channel_view(mean, x.dim()).to(x.dtype)                  # the merged μ_c of every process
        rstd = torch.rsqrt(channel_view(var, x.dim()).to(x.dtype) + eps)   # r_c = 1/√(σ²_c + ε)
        x_hat = (x - mean) * rstd                                       # x̂ = (x − μ)·r
        y = _affine(x_hat, channel_view(weight, x.dim()), channel_view(bias, x.dim()))   # y = γ_c · x̂ + β_c
        ctx.save_for_backward(input, weight, mean, rstd)
        ctx.count, ctx.process_group = count, process_group
        ctx.bias_dtype = None if bias is None else bias.dtype
        return y.to(input.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        input, weight, mean, rstd = ctx.saved_tensors
        dtype = _opmath(input.dtype)
        dims = (0, *range(2, input.dim()))
        x_hat = (input.to(dtype) - mean) * rstd
        dy = grad_output.to(dtype)
        # The two per-channel sums over this process's slice. Here they are ∂L/∂β and ∂L/∂γ …
        sum_dy = dy.sum(dim=dims)
        sum_dy_xhat = (dy * x_hat).sum(dim=dims)
        grad_input = grad_weight = grad_bias = None
        if weight is not None and ctx.needs_input_grad[1]:
            grad_weight = sum_dy_xhat.to(weight.dtype)
        if ctx.bias_dtype is not None and ctx.needs_input_grad[2]:
            grad_bias = sum_dy.to(ctx.bias_dtype)
        if ctx.needs_input_grad[0]:
            # … and, added up over every process, they give the two means of
            # ∂L/∂x = r·(g − mean(g) − x̂·mean(g·x̂)), g = γ·∂L/∂y (γ is constant per channel).
            both = _all_reduce_sum(torch.cat([sum_dy, sum_dy_xhat]), ctx.process_group)
            mean_dy, mean_dy_xhat = (both / ctx.count).reshape(2, *mean.shape)
            gamma = 1 if weight is None else channel_view(weight, input.dim()).to(dtype)
            grad_input = (gamma * rstd * (dy - mean_dy - x_hat * mean_dy_xhat)).to(input.dtype)
        return grad_input, grad_weight, grad_bias, None, None, None, None, None


def sync_batch_norm(input: Tensor, running_mean: Optional[Tensor], running_var: Optional[Tensor],
                    weight: Optional[Tensor] = None, bias: Optional[Tensor] = None, training: bool = False,
                    momentum: float = 0.1, eps: float = 1e-5, process_group=None) -> Tensor:
    """:func:`normlib.functional.batch_norm` with the batch statistics of every process in the group (chapter 9).

    Same arguments as ``batch_norm``, plus ``process_group`` (default: all processes). In training
    mode inside a process group of more than one process, the statistics of all slices are merged
    (one ``all_gather`` forward, one ``all_reduce`` backward; see the module docs) and every
    process updates its running statistics with the same merged values. A process may hold an
    empty slice (its output and gradient are empty; it still takes part in both collectives).
    Otherwise (evaluation mode, no initialized process group, or a group of one) it *is*
    :func:`normlib.functional.batch_norm`.

    >>> x = torch.tensor([[2.0], [4.0], [6.0], [8.0]])      # no process group: plain BatchNorm
    >>> sync_batch_norm(x, None, None, training=True).flatten()
    tensor([-1.3416, -0.4472,  0.4472,  1.3416])
    """
    if not (training and is_synchronized(process_group)):
        return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    _, momentum = checks.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps,
                                    name="sync_batch_norm", local_count=False)
    with torch.no_grad():
        total = merge_all(gather_moments(local_moments(input), process_group))
    # the one check that needs every process's count: made after the exchange, by every process alike
    if total.count == 1:
        raise NormInputError(errors.sync_one_value(dist.get_world_size(_group(process_group)), input.shape))
    if total.count > 1:    # (every slice empty: nothing to learn from, as batch_norm on an empty batch)
        _update_running(running_mean, total.mean, momentum)
        _update_running(running_var, total.var(correction=1), momentum)
    return SyncBatchNormFunction.apply(input, weight, bias, total.mean, total.var(), total.count, eps, process_group)


# --------------------------------------------------------------------------- the module

class SyncBatchNorm(modules._BatchNorm):
    """BatchNorm over ``(N, C, *)`` whose training statistics are those of every process's batch.

    Arguments, parameters, buffers and ``state_dict`` keys of ``torch.nn.SyncBatchNorm``:
    ``num_features`` (= C), ``eps=1e-5``, ``momentum=0.1`` (``None``: cumulative average),
    ``affine=True``, ``track_running_stats=True``, ``process_group=None`` (all processes).
    Any input with at least 2 dimensions; the statistics pool every axis but 1.

    In training mode inside an initialized process group of more than one process, the batch
    mean and variance are merged across the group (:func:`sync_batch_norm`); every process ends
    the step with the same running statistics. **Outside an initialized process group, with a
    group of one process, or in evaluation mode, it behaves exactly as ordinary BatchNorm**
    (:class:`normlib.BatchNorm1d/2d/3d`) and exchanges nothing: evaluation uses the running
    statistics (or, with ``track_running_stats=False``, this process's own batch, as
    ``torch.nn.SyncBatchNorm`` does).

    >>> bn = SyncBatchNorm(1)                                   # no process group here
    >>> bn(torch.tensor([[2.0], [4.0], [6.0], [8.0]])).flatten().detach()
    tensor([-1.3416, -0.4472,  0.4472,  1.3416])
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: Optional[float] = 0.1,
                 affine: bool = True, track_running_stats: bool = True, process_group: Any = None,
                 device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() < 2:
            raise NormInputError(errors.sync_input_dims(input))
        if input.shape[1] == 0:
            raise NormInputError(errors.sync_no_channels(input.shape))

    def forward(self, input: Tensor) -> Tensor:
        args = self._count_batch_and_arguments(input)
        if not self.training:
            # Evaluation: the running statistics, or (untracked) this process's own batch, as
            # torch.nn.SyncBatchNorm does: nothing is exchanged outside training.
            return F.batch_norm(*args)
        return sync_batch_norm(*args, process_group=self.process_group)

    @classmethod
    def convert_sync_batchnorm(cls, module: nn.Module, process_group: Any = None) -> nn.Module:
        """Replace every BatchNorm layer in ``module`` (``torch.nn.BatchNorm1d/2d/3d`` and normlib's)
        by a :class:`SyncBatchNorm` that shares its parameters and buffers (the same tensors, not
        copies) and its training flag. Other layers (InstanceNorm, LayerNorm, …) are left alone.

        Returns ``module`` itself, changed in place, or the new layer if ``module`` is a BatchNorm.

        >>> net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
        >>> SyncBatchNorm.convert_sync_batchnorm(net)[1]
        SyncBatchNorm(4, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)
        """
        if not isinstance(module, nn.Module):
            raise TypeError(errors.convert_not_module(module))
        if _is_batch_norm(module) and not isinstance(module, cls):
            converted = cls(module.num_features, module.eps, module.momentum, module.affine,
                            module.track_running_stats, process_group, bias=module.bias is not None)
            for name in ("weight", "bias"):
                setattr(converted, name, getattr(module, name))
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                setattr(converted, name, getattr(module, name))
            converted.train(module.training)
            module = converted
        for name, child in list(module.named_children()):
            setattr(module, name, cls.convert_sync_batchnorm(child, process_group))
        return module


def _is_batch_norm(module: nn.Module) -> bool:
    return isinstance(module, (modules._BatchNorm, nn.modules.batchnorm._BatchNorm))
