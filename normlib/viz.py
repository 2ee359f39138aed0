"""Matplotlib drawings for the book, in Korean or English, in colours that stay apart for
colour-blind readers.

Every drawing that says "these elements share one statistic" reads :mod:`normlib.axes`,
and returns the data it coloured, so tests can check the picture against the arithmetic.

>>> import normlib.viz as viz
>>> drawing = viz.table_figure(method="layer", lang="en")
>>> drawing.groups.tolist()          # cell (row, column) -> which statistic it shares
[[0, 0, 0], [1, 1, 1], [2, 2, 2], [3, 3, 3]]
>>> viz.plt.close(drawing.fig)
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import matplotlib
import matplotlib.pyplot as plt
import torch
from matplotlib import font_manager

from . import axes as _axes
from . import examples as _examples
from . import functional as _F
from .i18n import check_lang, text

__all__ = ["COLORS", "PALETTE", "setup", "korean_font", "TableDrawing", "table_figure"]

# Okabe & Ito (2008), "Color Universal Design": distinguishable with every common form of
# colour blindness. tests/test_viz.py checks this under simulated protanopia, deuteranopia
# and tritanopia.
COLORS = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "green": "#009E73",
    "vermillion": "#D55E00",
    "sky": "#56B4E9",
    "purple": "#CC79A7",
    "yellow": "#F0E442",
    "black": "#000000",
}
PALETTE = tuple(COLORS[k] for k in ("blue", "orange", "green", "vermillion", "sky", "purple", "yellow", "black"))


def korean_font() -> Optional[str]:
    """Register a Korean font with matplotlib and return its family name (None if none is found).

    NanumGothic comes with the ``koreanize-matplotlib`` package (in requirements.txt); only
    its font file is used, none of its automatic settings.
    """
    # Found, not imported: importing it would change matplotlib's settings on its own.
    spec = importlib.util.find_spec("koreanize_matplotlib")
    if spec is None or spec.origin is None:  # pragma: no cover - requirements.txt installs it
        return None
    path = Path(spec.origin).parent / "fonts" / "NanumGothic.ttf"
    if not path.exists():  # pragma: no cover
        return None
    font_manager.fontManager.addfont(str(path))
    return font_manager.FontProperties(fname=str(path)).get_name()


def setup(lang: str) -> None:
    """Matplotlib defaults for the book: the colour-blind-safe cycle, and fonts that cover
    Latin, symbols (DejaVu Sans) and Hangul (NanumGothic, as fallback)."""
    check_lang(lang)
    # DejaVu Sans first: it has every Latin letter and symbol, and mathtext (log-axis ticks
    # such as 10⁻²) only ever uses the first family. Hangul falls back to the Korean font.
    family = ["DejaVu Sans"]
    korean = korean_font()
    if korean:
        family.append(korean)
    elif lang == "ko":  # pragma: no cover
        raise RuntimeError("no Korean font found: install koreanize-matplotlib (requirements.txt)")
    matplotlib.rcParams.update({
        "font.family": family,
        "axes.prop_cycle": matplotlib.cycler(color=PALETTE),
        "axes.unicode_minus": True,
        "image.cmap": "cividis",
        "figure.dpi": 100,
        "savefig.dpi": 100,
        "axes.spines.top": False,
        "axes.spines.right": False,
    })


@dataclass
class TableDrawing:
    """A drawn table: the figure, the statistic id of each cell, and the numbers written in it."""

    fig: "matplotlib.figure.Figure"
    groups: torch.Tensor
    values: torch.Tensor


_SHARES = {"batch": "batch_shares", "layer": "layer_shares", "rms": "rms_shares"}


def table_figure(
    x: Optional[torch.Tensor] = None,
    method: str = "batch",
    lang: str = "en",
    *,
    show: str = "input",
    eps: float = 1e-5,
    ax=None,
    row_names: Sequence[str] = _examples.SAMPLES,
    column_names: Sequence[str] = _examples.FEATURES,
) -> TableDrawing:
    """Draw a ``(samples, features)`` table with the cells that share one statistic in one colour.

    ``method`` is ``"batch"`` (cells of a column share), ``"layer"`` or ``"rms"`` (cells of a
    row share). ``show="input"`` writes the input numbers, ``show="normalized"`` the output of
    the method (computed with :mod:`normlib.functional`, no affine). ``x`` defaults to the
    running example :func:`normlib.examples.table`.
    """
    check_lang(lang)
    if method not in _SHARES:
        raise ValueError(f"method must be one of {tuple(_SHARES)} for a 2-D table; got {method!r}")
    if show not in ("input", "normalized"):
        raise ValueError(f"show must be 'input' or 'normalized'; got {show!r}")
    x = _examples.table() if x is None else x
    if x.dim() != 2:
        raise ValueError(f"a table is 2-D (samples, features); got shape {tuple(x.shape)}")
    n, c = x.shape
    if len(row_names) != n or len(column_names) != c:
        raise ValueError(f"{n} rows and {c} columns need as many names; got {len(row_names)} and {len(column_names)}")
    if method == "batch":
        share = _axes.sharing("batch", (n, c))
    else:
        share = _axes.sharing(method, (n, c), normalized_shape=c)
    groups = share.labels()
    if show == "input":
        shown = x
    elif method == "batch":
        shown = _F.batch_norm(x, None, None, training=True, eps=eps)
    else:
        shown = (_F.layer_norm if method == "layer" else _F.rms_norm)(x, (c,), eps=eps)
    if ax is None:
        fig, ax = plt.subplots(figsize=(0.9 * c + 1.2, 0.5 * n + 1.0))
    else:
        fig = ax.figure
    for i in range(n):
        for j in range(c):
            colour = PALETTE[int(groups[i, j]) % len(PALETTE)]
            ax.add_patch(matplotlib.patches.Rectangle((j, n - 1 - i), 1, 1, facecolor=colour, alpha=0.35,
                                                      edgecolor="white", linewidth=2))
            number = float(shown[i, j])
            label = f"{number:g}" if show == "input" else f"{number:.2f}"
            ax.text(j + 0.5, n - 0.5 - i, label, ha="center", va="center", fontsize=11)
    ax.set_xlim(0, c)
    ax.set_ylim(0, n)
    ax.set_xticks([j + 0.5 for j in range(c)], list(column_names))
    ax.set_yticks([n - 0.5 - i for i in range(n)], list(row_names))
    ax.xaxis.tick_top()
    ax.tick_params(length=0)
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)
    ax.set_title(text(_SHARES[method], lang), fontsize=10, pad=22)
    return TableDrawing(fig=fig, groups=groups, values=shown.detach().clone())
