"""The work one call must do: the least bytes it moves and the FLOPs it needs (chapter 8's roofline).

**Bytes and bandwidth.** A normalization does almost no arithmetic per element, so its speed
is set by how fast memory moves. The *minimal* traffic of each mode, counted in passes over
an input-sized float32 tensor (:func:`minimal_bytes`):

* forward: read x, write y → **2 passes**;
* forward+backward: the forward's 2, then the backward reads x and dy and writes dx → **5**.

γ, β, their gradients, the running statistics and the per-row (or per-channel) mean and
1/σ are left out: they are one value per feature or per row, at most 0.3 % of the input at
the sizes benchmarked here. ``gbps`` is these bytes over the median time, and ``fraction``
divides it by the copy bandwidth :func:`~normlib_benchmarks.machine.copy_bandwidth` measures (a
large ``dst.copy_(src)``, counted as one read and one write). Both counts leave out the extra
read a cache line costs before it is written (write-allocate), so they are counted alike. The
copy is measured far beyond the caches; an input that fits in them (tens of MiB or less) can
show a fraction above 1. A variant that moves more than the minimum (the readable one writes
and reads back x − μ, its square, x̂, …) shows it as a lower fraction.

**FLOPs and the roofline.** :data:`FLOPS_PER_ELEMENT` counts the useful floating-point
operations per input element of a fused implementation (documented there); over the minimal
bytes it gives the arithmetic intensity (:func:`intensity`) that
:func:`~normlib_benchmarks.plots.roofline` plots against the achieved GFLOP/s, under the copy
bandwidth and the speed of a float32 matrix product
(:func:`~normlib_benchmarks.machine.matmul_gflops`).

**In-core ceilings.** The two roofs assume arithmetic that keeps up: vectorized, with independent
operations in flight. A loop whose every step waits for the addition before it (one scalar
accumulator) runs at one addition per add latency however fast memory is; Williams et al. draw
such limits as ceilings under the compute roof. :func:`in_core_ceiling` turns the time of one
dependent addition (:func:`~normlib_benchmarks.machine.add_latency_ns`) into the GFLOP/s a kernel
cannot exceed when each of its elements waits for :data:`SERIAL_ADDS` of them.
"""

from __future__ import annotations

import math
from typing import Sequence

from .variants import MODES, check_choice

__all__ = ["PASSES", "FLOPS_PER_ELEMENT", "SERIAL_ADDS", "minimal_bytes", "intensity", "in_core_ceiling"]

# Minimal memory traffic of each mode, in passes over an input-sized tensor (module docstring).
PASSES = {"forward": 2, "forward+backward": 5}

# Useful float operations per input element of a fused implementation; the per-row (or
# per-channel) work — one rsqrt, a division by n — is left out, as its bytes are.
#   LayerNorm / BatchNorm forward (8): Σx (1 add); Σ(x − μ)² (sub, mul, add: 3);
#       y = (x − μ)·r·γ + β (sub, mul, mul, add: 4).
#   RMSNorm forward (4): Σx² (mul, add: 2); y = x·r·γ (2).
#   LayerNorm / BatchNorm backward (13): x̂ = (x − μ)·r (2); g = γ·dy (1); Σg (1); Σg·x̂ (2);
#       dx = r·(g − mean(g) − x̂·mean(g·x̂)) (sub, mul, sub, mul: 4); Σdy·x̂ for dγ (2); Σdy for dβ (1).
#   RMSNorm backward (9): x̂ = x·r (1); g = γ·dy (1); Σg·x̂ (2); dx = r·(g − x̂·mean(g·x̂)) (3); Σdy·x̂ (2).
#   DyT forward (4, chapter 11): α·x (1); t = tanh(α·x), counted as one operation although a vectorised
#       tanh costs a dozen or more (so DyT's intensity is a floor); y = γ·t + β (2).
#   DyT backward (10): g = γ·dy (1); s = g·(1 − t²) (3); dx = α·s (1); Σs·x for dα (2); Σdy·t (2); Σdy (1).
FLOPS_PER_ELEMENT = {
    "layer_norm": {"forward": 8, "forward+backward": 8 + 13},
    "rms_norm": {"forward": 4, "forward+backward": 4 + 9},
    "batch_norm2d": {"forward": 8, "forward+backward": 8 + 13},
    "dyt": {"forward": 4, "forward+backward": 4 + 10},
}


def minimal_bytes(shape: Sequence[int], mode: str, element_size: int = 4) -> int:
    """The least memory traffic one call must cause: ``PASSES[mode]`` × the input's bytes.

    Forward reads x and writes y (2 passes); forward+backward also reads x and dy and writes
    dx (5). Parameters and statistics are left out (module docstring).

    >>> minimal_bytes((4, 8), "forward"), minimal_bytes((4, 8), "forward+backward")
    (256, 640)
    """
    check_choice("mode", mode, MODES)
    return PASSES[mode] * math.prod(shape) * element_size


def intensity(op: str, mode: str, element_size: int = 4) -> float:
    """Arithmetic intensity: FLOPs per byte of minimal traffic, the x-axis of the roofline.

    >>> intensity("layer_norm", "forward")          # 8 FLOPs over 2 passes of 4 bytes
    1.0
    """
    return FLOPS_PER_ELEMENT[op][mode] / (element_size * PASSES[mode])


# Dependent additions per element in a forward pass whose statistics are one scalar chain: ATen's
# training-mode BatchNorm on a contiguous (N, C, H, W) input sums each channel with one double
# accumulator, once for the mean and once for the squared deviations (chapter 8).
SERIAL_ADDS = {"batch_norm2d": 2}


def in_core_ceiling(op: str, mode: str, ns_per_add: float, threads: int = 1) -> float:
    """GFLOP/s that ``op`` cannot exceed in ``mode`` when each element waits for
    :data:`SERIAL_ADDS` dependent additions of ``ns_per_add`` ns each, on ``threads`` threads
    (the chains of different channels run side by side): the op's FLOPs per element over the
    time of its chain. The other FLOPs overlap with the chain and the other passes add to it, so
    a kernel built so lands on or under this line.

    >>> in_core_ceiling("batch_norm2d", "forward", 1.0)     # 8 FLOPs per 2 additions of 1 ns
    4.0
    """
    check_choice("mode", mode, MODES)
    if op not in SERIAL_ADDS:
        raise ValueError(f"op must be one of {', '.join(repr(o) for o in SERIAL_ADDS)}; got {op!r}")
    if ns_per_add <= 0 or threads < 1:
        raise ValueError(f"ns_per_add must be > 0 and threads >= 1; got ns_per_add={ns_per_add}, threads={threads}")
    return threads * FLOPS_PER_ELEMENT[op][mode] / (SERIAL_ADDS[op] * ns_per_add)
