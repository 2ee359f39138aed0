"""The figures of a run: time ÷ torch per variant and shape (:func:`plot`), and the roofline
(:func:`roofline`). matplotlib is imported when a figure is drawn, not with this module;
labels come from :mod:`normlib_benchmarks.words` (keys ``bench:<key>``), colours from
:mod:`normlib_book.viz`.
"""

from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence

from .report import Row, reference, shape_label
from .variants import MODES, OPS, VARIANTS
from .words import text
from .work import SERIAL_ADDS, in_core_ceiling, intensity

__all__ = ["plot", "roofline"]

_MARKERS = {"layer_norm": "o", "rms_norm": "s", "batch_norm2d": "^"}


def _label(key: str, lang: str) -> str:
    """A figure label in ``lang``, from normlib_benchmarks.words (keys ``bench:<key>``)."""
    return text(f"bench:{key}", lang)


def _colours() -> Dict[str, str]:
    from normlib_book.viz import COLORS  # Okabe–Ito

    return {"readable": COLORS["orange"], "hand": COLORS["green"], "compiled": COLORS["blue"],
            "torch": COLORS["black"]}


def _present(names: Sequence[str], rows: Sequence[Row], attribute: str) -> List[str]:
    """The ``names`` (in their order) that some row has as its ``attribute``."""
    return [name for name in names if any(getattr(r, attribute) == name for r in rows)]


def _ratio_label(ax):
    """The tick labels of a log-scale ratio axis: every decade (0.1, 1, 10), and as many of the
    minor ticks as fit without overlapping: all of them (1.1, 1.2 …) within half a decade, 2, 3
    and 5 within one and a half, 2 and 5 within two and a half (so that an axis always shows two
    labels at least), none across more."""

    def label(value: float, _) -> str:
        low, high = ax.get_ylim()
        decades = math.log10(high / low) if low > 0 and high > low else 0.0
        mantissa = value / 10 ** math.floor(math.log10(value) + 1e-9)
        shown = [] if decades > 2.5 else [2, 5] if decades > 1.5 else [2, 3, 5]
        if (abs(mantissa - 1) < 1e-6 or decades <= 0.5
                or any(abs(mantissa - m) < 1e-6 for m in shown)):
            return f"{value:g}"
        return ""

    return label


def plot(rows: Sequence[Row], lang: str = "en"):
    """Time ÷ torch's built-in for each variant and shape: one panel per op (columns) and mode
    (rows), log scale, the line at 1 = as fast as torch. Returns the matplotlib Figure.

    >>> from normlib_benchmarks import compare
    >>> rows = compare("rms_norm", (8, 16), "forward", variants=("hand", "torch"), repeats=2)
    >>> fig = plot(rows)
    >>> len(fig.axes)
    1
    """
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    ref = reference(rows)
    ops, modes = _present(OPS, rows, "op"), _present(MODES, rows, "mode")
    colours = _colours()
    fig, axs = plt.subplots(len(modes), len(ops), figsize=(4.2 * len(ops), 3.3 * len(modes)),
                            squeeze=False, layout="constrained")
    for i, mode in enumerate(modes):
        for j, op in enumerate(ops):
            ax = axs[i][j]
            shapes = sorted({tuple(r.shape) for r in rows if r.op == op}, key=math.prod)
            for variant in VARIANTS:
                points = [(k, r.seconds / ref[(op, s, mode)].seconds) for k, s in enumerate(shapes)
                          for r in rows if (r.op, tuple(r.shape), r.mode, r.variant) == (op, s, mode, variant)
                          and (op, s, mode) in ref]
                if points:
                    ax.plot(*zip(*points), marker=_MARKERS[op], color=colours[variant], label=_label(variant, lang))
            ax.axhline(1.0, color="grey", linewidth=0.8)
            ax.set_yscale("log")
            for axis in (ax.yaxis.set_major_formatter, ax.yaxis.set_minor_formatter):
                axis(FuncFormatter(_ratio_label(ax)))
            ax.set_xticks(range(len(shapes)), [shape_label(s) for s in shapes], rotation=20, fontsize=8)
            ax.set_title(f"{_label(op, lang)} · {_label(mode, lang)}", fontsize=10)
            if j == 0:
                ax.set_ylabel(_label("time_ratio", lang))
    handles, labels = axs[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=len(labels), frameon=False)
    return fig


def roofline(rows: Sequence[Row], bandwidth: float, gflops: float, lang: str = "en",
             title: Optional[str] = None, ceilings: Optional[Dict[str, float]] = None, threads: int = 1):
    """The roofline: each row's arithmetic intensity (FLOPs per minimal byte,
    :func:`~normlib_benchmarks.work.intensity`) against its achieved GFLOP/s, under the two roofs —
    ``bandwidth × intensity`` (memory) and ``gflops`` (a float32 matmul). Log–log. Colour:
    variant; marker: op; filled: forward, hollow: forward+backward.

    Every normalization sits far left of the ridge (where the roofs meet): memory, not
    arithmetic, sets its speed, and a point below the slanted roof moves more than the
    minimal bytes (or waits on something else).

    ``ceilings``: the in-core ceilings of an op whose statistics are a serial loop
    (:data:`~normlib_benchmarks.work.SERIAL_ADDS`), drawn as dashed lines across its forward
    point: ``{"serial": ns}``, the time of one dependent addition on data in cache
    (:func:`~normlib_benchmarks.machine.add_latency_ns`), ``{"serial_memory": ns}``, the same on
    data streamed from memory, and ``{"simd": ns}``, an addition of a
    vectorized sum (:func:`~normlib_benchmarks.machine.vector_sum_ns`), each on ``threads``
    threads (:func:`~normlib_benchmarks.work.in_core_ceiling`). Only ops present among the
    rows' forward points get them.

    >>> from normlib_benchmarks import compare
    >>> rows = compare("layer_norm", (8, 16), "forward", variants=("torch",), repeats=2)
    >>> fig = roofline(rows, bandwidth=10.0, gflops=100.0)
    >>> fig.axes[0].get_xscale()
    'log'
    """
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    colours = _colours()
    fig, ax = plt.subplots(figsize=(7, 4.6), layout="constrained")
    ridge = gflops / bandwidth
    lo, hi = min([0.1] + [intensity(r.op, r.mode) / 2 for r in rows]), max(10 * ridge, 10)
    ax.plot([lo, ridge, hi], [bandwidth * lo, gflops, gflops], color="grey", linewidth=1.5)
    ax.annotate(_label("compute_roof", lang).format(gf=gflops), (ridge, gflops * 1.2), fontsize=8, color="grey")
    for r in rows:
        colour = colours[r.variant]
        ax.scatter([intensity(r.op, r.mode)], [r.gflops], marker=_MARKERS[r.op], s=44, alpha=0.85, edgecolors=colour,
                   facecolors=colour if r.mode == "forward" else "none", linewidths=1.3)
    ceiling_levels = []
    for op in SERIAL_ADDS:
        if not ceilings or not any(r.op == op and r.mode == "forward" for r in rows):
            continue
        x = intensity(op, "forward")
        for kind in ("serial", "serial_memory", "simd"):
            if ceilings.get(kind):
                level = in_core_ceiling(op, "forward", ceilings[kind], threads)
                ceiling_levels.append(level)
                ax.plot([x / 1.5, x * 30], [level, level], color=colours["torch"], linestyle=(0, (4, 3)), linewidth=1)
                ax.annotate(_label(f"ceiling_{kind}", lang).format(ns=ceilings[kind], gf=level), (x * 30, level * 1.1),
                            fontsize=7, color=colours["torch"], ha="right")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(min([r.gflops for r in rows] + [bandwidth * lo] + ceiling_levels) / 2, gflops * 3)
    ax.set_xlabel(_label("intensity", lang))
    ax.set_ylabel(_label("gflops", lang))
    if title:
        ax.set_title(title, fontsize=9)

    def key(marker, label, colour="grey", filled=True):
        return Line2D([], [], linestyle="none", marker=marker, markeredgecolor=colour,
                      markerfacecolor=colour if filled else "none", label=label)

    # the memory roof's label along it, centred on a point of the roof, its baseline lifted 5 points
    # off the roof at right angles: the same place in every language, whatever the string's
    # descenders. Its angle on screen is known once the figure is laid out.
    fig.canvas.draw()
    (x0, y0), (x1, y1) = ax.transData.transform([(lo, bandwidth * lo), (ridge, gflops)])
    angle = math.atan2(y1 - y0, x1 - x0)
    at = lo * 3
    ax.annotate(_label("memory_roof", lang).format(bw=bandwidth), (at, bandwidth * at),
                xytext=(-5 * math.sin(angle), 5 * math.cos(angle)), textcoords="offset points",
                ha="center", va="baseline", rotation=math.degrees(angle), rotation_mode="anchor",
                fontsize=8, color="grey")

    # one meaning per mark: a marker's shape is an op, its colour a variant (colour swatches), and
    # filled or hollow the mode (grey swatches): no marker stands for two things
    by_colour = ax.legend(handles=[Patch(facecolor=colours[v], edgecolor=colours[v], label=_label(v, lang))
                                   for v in _present(VARIANTS, rows, "variant")], loc="lower right", fontsize=8)
    ax.add_artist(by_colour)
    ax.legend(handles=[key(_MARKERS[op], _label(op, lang)) for op in _present(OPS, rows, "op")]
              + [Patch(facecolor="grey", edgecolor="grey", label=_label("forward", lang)),
                 Patch(facecolor="none", edgecolor="grey", label=_label("forward+backward", lang))],
              loc="upper left", fontsize=8)
    return fig
