"""How fast, and how close to the memory's speed, are the book's normalization layers? (chapter 8)

Four versions of LayerNorm, RMSNorm and BatchNorm2d (training mode) are compared with each
other, as ratios to PyTorch's built-in, forward and forward+backward, float32 on the CPU.
``make bench`` (``benchmarks/normalization.py``) runs the full suite; chapter 8 a small one.
``make bench-dyt`` (``benchmarks/dyt.py``) times chapter 11's DyT against LayerNorm and RMSNorm.

=================  ========================================================================
:mod:`.variants`   the ops, variants and modes; one table of the function each variant runs
:mod:`.work`       the least bytes one call moves and the FLOPs it needs (the roofline)
:mod:`.machine`    the machine: timing, copy bandwidth, matmul speed, peak memory, its name
:mod:`.graphs`     what torch.compile makes of the readable functions (graph breaks)
:mod:`.suite`      the measuring: compare the variants on one input, run over many sizes
:mod:`.traffic`    count the memory passes of a call, operation by operation (chapters 8, 11)
:mod:`.report`     a run's rows and results, their JSON, the Markdown table, the targets
:mod:`.plots`      the figures (matplotlib, imported when one is drawn)
=================  ========================================================================

Each module's docstring says what its numbers mean. ``from normlib import bench`` gives the
names below; ``import normlib`` does not import this package.
"""

from .graphs import graph_breaks
from .machine import (
    add_latency_ns,
    copy_bandwidth,
    keep_freed_memory,
    machine_info,
    matmul_gflops,
    peak_memory,
    vector_sum_ns,
)
from .plots import plot, roofline
from .report import Results, Row, last_run, load, markdown_table, size_check, targets, targets_markdown
from .suite import compare, compare_ops, measure, run
from .traffic import Traffic, passes, variant_passes
from .variants import ALL_OPS, MODES, OPS, SMALL_SIZES, VARIANTS, VARIANTS_OF
from .work import FLOPS_PER_ELEMENT, PASSES, in_core_ceiling, minimal_bytes

__all__ = [
    "OPS", "ALL_OPS", "VARIANTS", "VARIANTS_OF", "MODES", "PASSES", "FLOPS_PER_ELEMENT", "SMALL_SIZES",
    "Row", "Results",
    "minimal_bytes", "in_core_ceiling", "add_latency_ns", "vector_sum_ns", "copy_bandwidth", "keep_freed_memory", "matmul_gflops", "peak_memory", "machine_info", "graph_breaks",
    "measure", "compare", "compare_ops", "run", "Traffic", "passes", "variant_passes", "load", "last_run",
    "markdown_table", "size_check", "targets", "targets_markdown", "plot", "roofline",
]
