"""Start processes that join one ``torch.distributed`` group, from a script or a notebook (chapter 9).

:func:`launch` runs ``fn(rank, world_size, *args)`` in ``world_size`` fresh processes on this
machine (the ``gloo`` backend on the CPU: no GPU needed) and returns what each returned, in rank
order. It is the book's machinery, not part of the library: :mod:`normlib.distributed`'s
SyncBatchNorm runs in any process group, however it was started (``torchrun`` included).
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
from datetime import timedelta
from typing import Any, Callable, List, Optional, Sequence

import torch
import torch.distributed as dist

__all__ = ["launch", "WorkerError"]


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
