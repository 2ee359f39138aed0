"""What the machine is and what it can do: the timing primitive, the copy bandwidth, the speed
of a matrix product, the peak memory of a call, the in-core ceilings of a serial loop, and a
description of the machine (and whether it is a virtual one).

Threads: whatever ``torch.get_num_threads()`` says; nothing here changes it, but for the in-core
ceilings (:func:`add_latency_ns`, :func:`vector_sum_ns`), measured on one thread and restored. Memory: each
call of a normalization allocates its output and gradients anew; with glibc's default
``malloc`` a large one arrives as fresh pages from the operating system, which can cost more
than the normalization (:func:`keep_freed_memory`, which ``make bench`` calls, and which
nothing here calls on its own).
"""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import sys
import time
from typing import Callable, Dict, Optional

import torch

__all__ = [
    "GB", "MiB", "median_time", "copy_bandwidth", "keep_freed_memory", "matmul_gflops", "peak_memory",
    "machine_info", "load_average", "add_latency_ns", "vector_sum_ns", "huge_pages", "virtualization",
]

GB = 1e9
MiB = 2 ** 20


def median_time(fn: Callable[[], object], repeats: int, warmup: int) -> float:
    """Seconds: the median of ``repeats`` calls of ``fn()`` after ``warmup`` calls.

    >>> median_time(lambda: None, repeats=3, warmup=1) >= 0
    True
    """
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def copy_bandwidth(nbytes: int = 256 * MiB, repeats: int = 10, warmup: int = 2, fresh: bool = False) -> float:
    """This machine's memory bandwidth in GB/s (10⁹ bytes/s): the median of ``dst.copy_(src)``.

    ``src`` and ``dst`` are float32 tensors of ``nbytes`` each, far larger than the caches by
    default; one copy counts as ``2 · nbytes`` (read ``src``, write ``dst``). With
    ``fresh=True`` each copy goes to newly allocated memory (``src.clone()``), as every
    normalization's output does: the difference is what the allocator and the operating
    system cost (see :func:`keep_freed_memory`).

    >>> copy_bandwidth(nbytes=4 * MiB, repeats=3) > 0
    True
    """
    src = torch.rand(nbytes // 4)
    if fresh:
        seconds = median_time(src.clone, repeats, warmup)
    else:
        dst = torch.empty_like(src)
        seconds = median_time(lambda: dst.copy_(src), repeats, warmup)
    return 2 * src.nbytes / seconds / GB


def keep_freed_memory(threshold: int = 2 ** 30) -> bool:
    """Ask glibc's ``malloc`` to keep freed blocks of up to ``threshold`` bytes for reuse,
    instead of handing them back to the operating system; True if it agreed.

    By default glibc gives every large block (above 32 MiB at most) straight back when it is
    freed, so the next tensor of that size arrives as fresh pages that the kernel must map
    and zero on first touch: on the machine this was written on, writing a new 128 MiB
    tensor took three times as long as writing into an old one. Each call of a
    normalization allocates its output (and gradients) anew, so without this a benchmark of
    large sizes times the operating system more than the normalization. Caching allocators
    (jemalloc, tcmalloc, PyTorch's own on GPUs) reuse memory like this. It sets
    ``M_MMAP_THRESHOLD`` and ``M_TRIM_THRESHOLD`` with ``mallopt`` for the whole process, for
    the rest of its life (the process keeps its peak memory). Linux with glibc only; elsewhere
    it does nothing and returns False. ``benchmarks/normalization.py`` calls it unless given
    ``--fresh-memory``.
    """
    import ctypes
    import ctypes.util

    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3      # from glibc's <malloc.h>
    return bool(mallopt(M_MMAP_THRESHOLD, ctypes.c_int(threshold))) and \
        bool(mallopt(M_TRIM_THRESHOLD, ctypes.c_int(threshold)))


def matmul_gflops(n: int = 2048, repeats: int = 5, warmup: int = 1) -> float:
    """The compute roof in GFLOP/s: the median speed of a float32 ``n × n`` matrix product
    (``2n³`` floating-point operations).

    >>> matmul_gflops(n=128, repeats=3) > 0
    True
    """
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(n, n, generator=gen), torch.randn(n, n, generator=gen)
    out = torch.empty(n, n)
    seconds = median_time(lambda: torch.mm(a, b, out=out), repeats, warmup)
    return 2 * n ** 3 / seconds / GB


def _slope_ns(make: Callable[[int], Callable[[], object]], sizes=(16384, 65536), repeats: int = 200,
              warmup: int = 20) -> float:
    """ns per element: the difference of the median times of ``make(n)()`` at two sizes, over the
    difference of the sizes, so that the fixed cost of a call (about a microsecond) drops out.
    One thread, whatever torch's setting (restored after); both sizes fit in the caches."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        small, large = (median_time(make(n), repeats, warmup) for n in sizes)
    finally:
        torch.set_num_threads(threads)
    return 1e9 * (large - small) / (sizes[1] - sizes[0])


def add_latency_ns(in_cache: bool = True) -> float:
    """The in-core ceiling of a serial loop: ns per element of a chain of dependent additions.

    It times ``torch.cumsum`` of a float32 vector. ATen's CPU cumsum is a scalar loop,
    ``acc += x[i]; out[i] = acc``, with one ``double`` accumulator: each addition needs the
    result of the one before it, so on data in the caches (``in_cache=True``: 64 KiB to 256 KiB)
    the loop runs at one addition per add latency (2 to 4 cycles on current x86 cores); the
    loads, the conversions and the stores do not wait on the chain and overlap with it. With
    ``in_cache=False`` (32 MiB to 128 MiB, far beyond the caches) the same chain is fed from
    memory: a loop that advances one element per latency cannot run far enough ahead of its loads
    to hide the memory's, and it is slower again. ATen's training-mode BatchNorm statistics
    (contiguous layout) are the same loop, twice (chapter 8).

    >>> add_latency_ns() > 0
    True
    """
    gen = torch.Generator().manual_seed(0)

    def make(n):
        x, out = torch.randn(n, generator=gen), torch.empty(n)
        return lambda: torch.cumsum(x, 0, out=out)

    if in_cache:
        return _slope_ns(make)
    return _slope_ns(make, sizes=(2 ** 23, 2 ** 25), repeats=7, warmup=2)


def vector_sum_ns() -> float:
    """The same sum without the chain: ns per element of ``x.sum()`` over a float32 vector in the
    caches, one thread. ATen's sum keeps several vector accumulators (SIMD lanes, and several
    registers of them), so the additions do not wait on one another: the ceiling of a vectorized
    reduction with independent accumulators.

    >>> vector_sum_ns() > 0
    True
    """
    gen = torch.Generator().manual_seed(0)

    def make(n):
        x = torch.randn(n, generator=gen)
        return x.sum

    return _slope_ns(make)


def huge_pages() -> Optional[str]:
    """The kernel's transparent huge pages setting (``always``, ``madvise`` or ``never``), or None
    where it cannot be read. With ``madvise``, glibc's malloc asks for huge pages only when told
    to (``GLIBC_TUNABLES=glibc.malloc.hugetlb=1``)."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled", encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return None
    chosen = [word[1:-1] for word in text.split() if word.startswith("[")]
    return chosen[0] if chosen else None


def virtualization() -> Optional[str]:
    """What the machine runs under, as far as Linux tells: ``"Firecracker microVM"`` when the
    kernel was started by Firecracker's init (its command line says so), ``"virtual machine"``
    when the CPU flags say a hypervisor is present, ``None`` for bare metal or where it cannot be
    read. A first touch of a page costs more in a virtual machine (the host may have to back the
    page too), so allocation measurements carry this beside them."""
    try:
        with open("/proc/cmdline", encoding="utf-8") as f:
            if "firecracker" in f.read():
                return "Firecracker microVM"
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return "virtual machine" if "hypervisor" in line.split() else None
    except OSError:
        pass
    return None


def peak_memory(fn: Callable[[], object]) -> int:
    """Bytes: the highest total of CPU memory allocated while ``fn()`` runs, above the start.

    torch keeps no peak counter for CPU memory, so this runs ``fn`` once under
    ``torch.profiler`` with ``profile_memory=True``, takes every allocation (+) and free (−)
    it recorded, puts them in time order and keeps the highest running sum. Memory allocated
    before the call and freed during it makes the running sum go below zero, which can only
    hide a peak, so free what you can before. Only allocations through torch's allocator are
    seen (tensors, including those torch.compile's kernels allocate), not Python objects.
    The profiler's log lines are silenced by setting ``KINETO_LOG_LEVEL=6`` in the environment
    when it is not set.

    >>> peak_memory(lambda: torch.empty(MiB // 4)) / MiB      # one 1 MiB tensor, freed at once
    1.0
    """
    from torch.profiler import ProfilerActivity, profile

    # torch 2.13's profiler (kineto) prints "profiler_start"/"profiler_stop" on stderr each time;
    # level 6 silences its log unless the user chose a level (read when the profiler first starts).
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    # The raw records: each "[memory]" event is one allocation (nbytes > 0) or free (< 0).
    # (prof.events() attributes most of them to the operator that made them and loses their order.)
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    events.sort(key=lambda e: e.start_ns())
    live = peak = 0
    for e in events:
        live += e.nbytes()
        peak = max(peak, live)
    return peak


def machine_info() -> Dict[str, object]:
    """CPU model, core count, torch's thread count, versions and the date: what a result needs
    to be read later.

    >>> sorted(machine_info())
    ['cores', 'cpu', 'date', 'platform', 'python', 'threads', 'torch']
    """
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
    }


def load_average() -> Optional[float]:
    """The load average over the last minute, or None where the platform has none."""
    try:
        return os.getloadavg()[0]
    except OSError:  # pragma: no cover - not on every platform
        return None
