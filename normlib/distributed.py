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
laptop's CPU. :func:`launch` starts such processes, from a script or from a notebook.
"""

from __future__ import annotations

import io
import multiprocessing
import os
import queue
import shutil
import socket
import tempfile
import time
import traceback
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Callable, Iterator, List, Optional, Sequence

import torch
import torch.distributed as dist
from torch import Tensor, nn
from torch.autograd.function import once_differentiable

from . import functional as F
from . import modules
from .axes import NormInputError, _fmt
from .stats import Moments, merge_all

__all__ = [
    "SyncBatchNorm", "sync_batch_norm", "SyncBatchNormFunction",
    "local_moments", "gather_moments", "is_synchronized",
    "Collective", "traffic", "launch", "WorkerError", "split_steps",
]


# --------------------------------------------------------------------------- collectives, recorded

@dataclass(frozen=True)
class Collective:
    """One collective call: which, how many numbers this process sent, their dtype, the group's size."""

    op: str
    numel: int
    dtype: torch.dtype
    world_size: int

    @property
    def nbytes(self) -> int:
        """Bytes this process contributes (an ``all_gather`` then receives ``world_size`` times as many)."""
        return self.numel * torch.empty((), dtype=self.dtype).element_size()


_RECORDS: List[List[Collective]] = []


@contextmanager
def traffic() -> Iterator[List[Collective]]:
    """Record the collectives normlib's synchronized BatchNorm makes inside the ``with`` block.

    >>> with traffic() as calls:
    ...     pass
    >>> calls
    []
    """
    calls: List[Collective] = []
    _RECORDS.append(calls)
    try:
        yield calls
    finally:
        _RECORDS.remove(calls)


def _note(op: str, t: Tensor, world_size: int) -> None:
    for calls in _RECORDS:
        calls.append(Collective(op, t.numel(), t.dtype, world_size))


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
    """``(count, mean, M2)`` per channel of this process's ``(N, C, *)`` slice, in two passes.

    The second pass, over ``d = x − mean``, also gives back what rounding left in the first
    mean: ``mean(d)`` is 0 in exact arithmetic, and ``mean + mean(d)`` is the mean to about the
    rounding of the *spread* instead of that of ``|mean|`` (the "corrected two-pass" of Chan,
    Golub and LeVeque; ``M2 = Σ d² − n·mean(d)²`` to match). These parts then travel in float64,
    so an offset of 1e3 in float32 costs the merged mean no more than single-process BatchNorm.
    ``mean`` and ``M2`` have shape ``(C,)`` (float64); an empty slice gives count 0 and zeros.

    >>> m = local_moments(torch.tensor([[2.0], [4.0]]))      # feature 1 of rows A and B
    >>> m.count, m.mean, m.m2
    (2, tensor([3.], dtype=torch.float64), tensor([2.], dtype=torch.float64))
    """
    dims = (0, *range(2, x.dim()))
    count = x.numel() // x.shape[1] if x.shape[1] else 0
    if count == 0:
        zeros = x.new_zeros(x.shape[1], dtype=torch.float64)
        return Moments(0, zeros, zeros.clone())
    mean = x.mean(dim=dims, keepdim=True)
    d = x - mean
    correction = d.mean(dim=dims).to(torch.float64)
    m2 = (d * d).sum(dim=dims).to(torch.float64) - count * correction * correction
    return Moments(count, mean.reshape(-1).to(torch.float64) + correction, m2)


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
    _note("all_gather", packed, world_size)
    dist.all_gather(parts, packed, group=group)
    return [Moments(int(p[0].item()), p[1:1 + channels], p[1 + channels:]) for p in parts]


def _all_reduce_sum(t: Tensor, process_group) -> Tensor:
    group = _group(process_group)
    _note("all_reduce", t, dist.get_world_size(group))
    dist.all_reduce(t, op=dist.ReduceOp.SUM, group=group)
    return t


# --------------------------------------------------------------------------- forward and backward

class SyncBatchNormFunction(torch.autograd.Function):
    """Training-mode BatchNorm with given whole-batch statistics, and the synchronized backward.

    ``SyncBatchNormFunction.apply(input, weight, bias, mean, var, count, eps, process_group)``:
    ``mean`` and ``var`` (population, shape ``(C,)``) are the merged statistics of all ``count``
    values per channel over every process (:func:`sync_batch_norm` computes them first). The
    backward all-reduces the two per-channel sums. Use :func:`sync_batch_norm`.
    """

    @staticmethod
    def forward(ctx, input, weight, bias, mean, var, count, eps, process_group):
        dtype = F._compute_dtype(input.dtype)
        view = (1, -1) + (1,) * (input.dim() - 2)
        mean = mean.to(dtype).reshape(view)
        rstd = torch.rsqrt(var.to(dtype) + eps).reshape(view)
        y = F._affine_per_channel((input.to(dtype) - mean) * rstd, weight, bias)
        ctx.save_for_backward(input, weight, mean, rstd)
        ctx.count, ctx.process_group = count, process_group
        ctx.bias_dtype = None if bias is None else bias.dtype
        return y.to(input.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        input, weight, mean, rstd = ctx.saved_tensors
        dtype = F._compute_dtype(input.dtype)
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
            gamma = 1 if weight is None else weight.to(dtype).reshape(mean.shape)
            grad_input = (gamma * rstd * (dy - mean_dy - x_hat * mean_dy_xhat)).to(input.dtype)
        return grad_input, grad_weight, grad_bias, None, None, None, None, None


def sync_batch_norm(input: Tensor, running_mean: Optional[Tensor], running_var: Optional[Tensor],
                    weight: Optional[Tensor] = None, bias: Optional[Tensor] = None, training: bool = False,
                    momentum: float = 0.1, eps: float = 1e-5, process_group=None) -> Tensor:
    """:func:`normlib.functional.batch_norm` with the batch statistics of every process in the group.

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
    _, momentum = F._checked_batch_axes(input, running_mean, running_var, weight, bias, training, momentum,
                                        eps, fn="sync_batch_norm", local_count=False)
    if input.shape[1] == 0:
        raise NormInputError(f"sync_batch_norm needs at least one channel, but got an input of shape "
                             f"{_fmt(input.shape)}")
    with torch.no_grad():
        total = merge_all(gather_moments(local_moments(input.to(F._compute_dtype(input.dtype))), process_group))
    if total.count == 1:
        raise NormInputError(
            f"sync_batch_norm in training mode needs more than 1 value per channel over all "
            f"{dist.get_world_size(_group(process_group))} processes, but they hold 1 in all "
            f"(this process's input has shape {_fmt(input.shape)})"
        )
    if total.count > 1:    # (every slice empty: nothing to learn from, as batch_norm on an empty batch)
        F._update_running(running_mean, total.mean, momentum)
        F._update_running(running_var, total.var(correction=1), momentum)
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
            raise NormInputError(f"SyncBatchNorm expects an input of at least 2 dimensions (N, C, *), "
                                 f"but got a {input.dim()}D input of shape {_fmt(input.shape)}")
        if input.shape[1] == 0:
            raise NormInputError(f"SyncBatchNorm needs at least one channel (dim 1), but got an input "
                                 f"of shape {_fmt(input.shape)}")

    def forward(self, input: Tensor) -> Tensor:
        args = self._batch_norm_args(input)
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
            raise TypeError(f"convert_sync_batchnorm expects a torch.nn.Module, got {type(module).__name__}")
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


# --------------------------------------------------------------------------- starting processes

class WorkerError(RuntimeError):
    """A process started by :func:`launch` failed (raised, exited, or did not finish in time)."""


def _loopback_interface() -> Optional[str]:
    """The loopback network interface's name (``lo`` on Linux, ``lo0`` on macOS), if there is one."""
    try:
        names = [name for _, name in socket.if_nameindex()]
    except (OSError, AttributeError):
        return None
    return next((n for n in ("lo", "lo0") if n in names), None)


def _worker(rank: int, world_size: int, store: str, backend: str, timeout: float, threads: int,
            fn: Callable, args: tuple, results) -> None:
    """Body of each process :func:`launch` starts: join the group, run ``fn``, report, leave."""
    interface = _loopback_interface()
    if interface and "GLOO_SOCKET_IFNAME" not in os.environ:
        os.environ["GLOO_SOCKET_IFNAME"] = interface        # keep gloo's traffic on 127.0.0.1
    torch.set_num_threads(threads)
    try:
        dist.init_process_group(backend, init_method=f"file://{store}", rank=rank, world_size=world_size,
                                timeout=timedelta(seconds=timeout))
        buffer = io.BytesIO()
        torch.save(fn(rank, world_size, *args), buffer)   # by value: nothing shared with an exiting process
        report = (rank, "ok", buffer.getvalue())
    except BaseException:                   # report everything, even KeyboardInterrupt/SystemExit
        report = (rank, "error", traceback.format_exc())
    # Deliver the report before leaving the group: leaving breaks the peers' collectives, and
    # their "connection reset" must not arrive before the error that caused it.
    results.put(report)
    results.close()
    results.join_thread()
    if dist.is_initialized():
        dist.destroy_process_group()


def launch(fn: Callable, world_size: int, *args: Any, timeout: float = 60.0, threads: int = 1,
           backend: str = "gloo") -> List[Any]:
    """Run ``fn(rank, world_size, *args)`` in ``world_size`` new processes joined in one process group.

    Returns the ``world_size`` return values in rank order. Each process starts fresh
    (``spawn``: it imports ``fn`` by its module and name, so ``fn`` must be a function defined
    in a module, not in a notebook cell), joins a ``torch.distributed`` group (``gloo`` by
    default, through a file in a temporary folder; gloo's own connections stay on the
    loopback interface) and uses ``threads`` CPU threads. ``args`` and the return values are
    pickled (tensors by value).

    Nothing is left running: if any process raises, exits early or the whole run takes longer
    than ``timeout`` seconds, the other processes are stopped and :class:`WorkerError` says which
    rank failed and how (with its traceback). ``timeout`` counts from the start, so it includes
    each process importing torch (a second or two, several on a busy machine); it also bounds
    every collective inside, so a process left waiting for a dead peer gives up too.
    """
    if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1:
        raise ValueError(f"world_size must be a positive int, got {world_size!r}")
    if not callable(fn):
        raise TypeError(f"fn must be a function fn(rank, world_size, *args), got {type(fn).__name__}")
    if not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    folder = tempfile.mkdtemp(prefix="normlib-dist-")
    store = os.path.join(folder, "store")
    processes = [
        context.Process(target=_worker, name=f"normlib-rank-{rank}", daemon=True,
                        args=(rank, world_size, store, backend, timeout, threads, fn, args, results))
        for rank in range(world_size)
    ]
    try:
        for p in processes:
            p.start()
        return _collect(processes, results, timeout)
    finally:
        for p in processes:
            if p.is_alive():
                p.terminate()
        for p in processes:
            p.join(5)
            if p.is_alive():
                p.kill()
                p.join()
        results.close()
        shutil.rmtree(folder, ignore_errors=True)


def _collect(processes: Sequence, results, timeout: float) -> List[Any]:
    """Wait for one report per process; raise :class:`WorkerError` at the first failure."""
    world_size = len(processes)
    deadline = time.monotonic() + timeout
    values: dict = {}
    errors: dict = {}
    while len(values) < world_size:
        _receive(results, values, errors, wait=0.1)
        if errors or _silent(processes, values, errors):
            raise _failure(processes, results, values, errors)
        if time.monotonic() > deadline:
            missing = [r for r in range(world_size) if r not in values]
            raise WorkerError(f"rank{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))} "
                              f"of {world_size} did not finish within timeout={timeout:g} s "
                              f"(stopped; a process waiting for a peer in a collective never returns)")
    return [values[rank] for rank in range(world_size)]


def _receive(results, values: dict, errors: dict, wait: float) -> None:
    """File the next report (if one arrives within ``wait`` seconds) under values or errors."""
    try:
        rank, status, payload = results.get(timeout=wait)
    except queue.Empty:
        return
    if status == "ok":
        values[rank] = torch.load(io.BytesIO(payload), weights_only=False)
    else:
        errors[rank] = payload


def _silent(processes: Sequence, values: dict, errors: dict) -> List[int]:
    """Ranks whose process has ended without a report (killed, crashed, ``os._exit``)."""
    return [r for r, p in enumerate(processes) if p.exitcode is not None and r not in values and r not in errors]


def _failure(processes: Sequence, results, values: dict, errors: dict, grace: float = 1.0) -> WorkerError:
    """Say which rank failed first. When one process fails, its peers soon fail too, in the
    collective it left ("connection reset"): collect reports for a moment, then blame a rank that
    died without a report, or else the first error received, and name the others after it."""
    world_size = len(processes)
    end = time.monotonic() + grace
    while time.monotonic() < end:
        _receive(results, values, errors, wait=0.05)
    silent = _silent(processes, values, errors)
    if silent:
        rank = silent[0]
        message = (f"rank {rank} of {world_size} exited with code {processes[rank].exitcode} "
                   f"without returning a result")
    else:
        rank = next(iter(errors))
        message = f"rank {rank} of {world_size} failed:\n{errors[rank]}"
    others = [r for r in errors if r != rank]
    if others:
        last_line = lambda tb: tb.strip().splitlines()[-1]
        message += "\nthen, waiting for it: " + "; ".join(f"rank {r}: {last_line(errors[r])}" for r in others)
    return WorkerError(message)


# --------------------------------------------------------------------------- chapter 9's demo

def split_steps(rank: int, world_size: int, batch: Tensor, upstream: Tensor, splits: Sequence[Sequence[int]],
                weight: Optional[Tensor] = None, bias: Optional[Tensor] = None) -> dict:
    """One training step of :class:`SyncBatchNorm` on this rank's rows of ``batch``, per split.

    Run by :func:`launch` (chapter 9's live demo): ``splits`` lists how many rows each rank holds,
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
            naive=(F.batch_norm(x.detach(), None, None, weight, bias, training=True)
                   if local.count > 1 else None),
        ))
    try:
        nn.SyncBatchNorm(channels)(batch[:2])
        torch_on_cpu = "ran"
    except ValueError as error:
        torch_on_cpu = f"ValueError: {error}"
    return dict(rank=rank, steps=steps, torch=torch_on_cpu)
