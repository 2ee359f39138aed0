"""Matplotlib drawings for the book, in Korean or English, in colours that stay apart for
colour-blind readers.

Every drawing that says "these elements share one statistic" reads :mod:`normlib.axes`,
and returns the data it coloured, so tests can check the picture against the arithmetic.

>>> from normlib_book import viz
>>> drawing = viz.table_figure(method="layer", lang="en")
>>> drawing.groups.tolist()          # cell (row, column) -> which statistic it shares
[[0, 0, 0], [1, 1, 1], [2, 2, 2], [3, 3, 3]]
>>> viz.plt.close(drawing.fig)
>>> block = viz.block_figure((2, 6, 2, 2), "group", "en", num_groups=3, which=4)
>>> block.highlighted.sum().item(), block.labels.shape  # group 4 = sample 1, channels 2-3, 4 positions
(8, torch.Size([2, 6, 4]))
>>> viz.plt.close(block.fig)
"""

from __future__ import annotations

import importlib.util
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence, Tuple

import matplotlib
import matplotlib.collections
import matplotlib.pyplot as plt
import torch
from matplotlib import font_manager

from normlib import axes as _axes
from normlib import functional as _F

from . import examples as _examples
from .i18n import check_lang, text
from .instruments import labels, sequence_sharing

__all__ = [
    "COLORS", "PALETTE", "setup", "korean_font",
    "TableDrawing", "table_figure",
    "LAYOUTS", "BlockDrawing", "block_sharing", "block_figure",
]

# Okabe & Ito (2008), "Color Universal Design": distinguishable with every common form of
# colour blindness. tests/book/test_viz.py checks this under simulated protanopia, deuteranopia
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
    """A drawn table: the figure, the statistic id of each cell, the numbers written in it, and
    what it shows in words, in the drawing's language (an ``<img>``'s alt text)."""

    fig: "matplotlib.figure.Figure"
    groups: torch.Tensor
    values: torch.Tensor
    alt: str = ""


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
    running example :func:`normlib_book.examples.table`.
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
    groups = labels(share)
    number_format = "{:g}" if show == "input" else "{:.2f}"
    if show == "input":
        shown = x
    elif method == "batch":
        shown = _F.batch_norm(x, None, None, training=True, eps=eps)
    else:
        shown = (_F.layer_norm if method == "layer" else _F.rms_norm)(x, (c,), eps=eps)
    own_figure = ax is None
    if own_figure:
        fig, ax = plt.subplots(figsize=(0.9 * c + 1.2, 0.5 * n + 1.3))
    else:
        fig = ax.figure
    for i in range(n):
        for j in range(c):
            colour = PALETTE[int(groups[i, j]) % len(PALETTE)]
            ax.add_patch(matplotlib.patches.Rectangle((j, n - 1 - i), 1, 1, facecolor=colour, alpha=0.35,
                                                      edgecolor="white", linewidth=2))
            label = number_format.format(float(shown[i, j]))
            ax.text(j + 0.5, n - 0.5 - i, label, ha="center", va="center", fontsize=11)
    ax.set_xlim(0, c)
    ax.set_ylim(0, n)
    ax.set_xticks([j + 0.5 for j in range(c)], list(column_names))
    ax.set_yticks([n - 0.5 - i for i in range(n)], list(row_names))
    ax.xaxis.tick_top()
    ax.tick_params(length=0)
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)
    # wrapped to the table's width, and laid out inside the figure, so a saved picture (the static
    # explorer's) keeps the whole title, not only a notebook's tightly cropped one
    width = max(24, int(8 * c + 10)) if not any("\uac00" <= ch <= "\ud7a3" for ch in text(_SHARES[method], lang)) \
        else max(14, int(5 * c + 8))
    ax.set_title(textwrap.fill(text(_SHARES[method], lang), width), fontsize=10, pad=22)
    if own_figure:
        fig.tight_layout()
    cells = "; ".join(f"{row}: " + ", ".join(number_format.format(float(v)).replace("-", "\u2212") for v in values)
                      for row, values in zip(row_names, shown))   # the minus sign the drawing writes
    alt = text("table_alt", lang).format(title=text(_SHARES[method], lang), rows=n, cols=c, cells=cells,
                                         what=text(f"table_{show}_values", lang))
    return TableDrawing(fig=fig, groups=groups, values=shown.detach().clone(), alt=alt)


# -- blocks: an image batch (N, C, H, W) or a token batch (B, L, D) drawn as a 3-D block -----------
LAYOUTS = ("image", "sequence")

_TITLE_KEYS = {
    "batch": "block_batch", "layer": "block_layer", "instance": "block_instance",
    "group": "block_group", "rms": "block_rms", "batch_dim0": "block_batch_dim0",
}
_SEQUENCE_TITLE_KEYS = {"batch": "seq_batch", "layer": "seq_layer", "rms": "seq_rms", "batch_dim0": "block_batch_dim0"}


@dataclass
class BlockDrawing:
    """A drawn block: the figure, the statistic id of every element (shape ``(depth, across, up)``,
    trailing dimensions flattened), the mask of the highlighted group, the sharing it reads, and
    what it shows in words, in the drawing's language (an ``<img>``'s alt text)."""

    fig: "matplotlib.figure.Figure"
    labels: torch.Tensor
    highlighted: torch.Tensor
    sharing: _axes.Sharing
    alt: str = ""


def block_sharing(shape: Sequence[int], method: str, layout: str = "image",
                  num_groups: Optional[int] = None) -> _axes.Sharing:
    """The :class:`normlib.axes.Sharing` a block drawing shows.

    ``layout="image"``: ``shape`` is ``(N, C, *spatial)`` and ``method`` one of ``batch``,
    ``layer`` and ``rms`` (over ``(C, *spatial)``, one statistic per sample, as in the Group
    Normalization paper's figure), ``instance``, ``group`` (needs ``num_groups``).
    ``layout="sequence"``: ``shape`` is ``(B, L, D)``, ``method`` one of
    :data:`normlib_book.instruments.SEQUENCE_METHODS`.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}; got {layout!r}")
    shape = tuple(shape)
    if layout == "sequence":
        if num_groups is not None:
            raise ValueError(f"num_groups is only for method 'group' of the image layout; got {num_groups!r}")
        return sequence_sharing(method, shape)
    if method not in _axes.METHODS:
        raise ValueError(f"method must be one of {_axes.METHODS} for the image layout; got {method!r}")
    if len(shape) < 2:
        raise ValueError(f"an image batch has shape (N, C, *spatial); got {tuple(shape)}")
    if method in ("layer", "rms"):
        return _axes.sharing(method, shape, normalized_shape=shape[1:])
    return _axes.sharing(method, shape, num_groups=num_groups)


def _box_faces(i: int, j: int, k: int, dx: float, dy: float):
    """The three visible faces (front, top, right) of the unit cell at depth i, column j,
    height k, in an oblique projection where depth runs up and to the right."""
    x0, y0 = j + i * dx, k + i * dy
    front = [(x0, y0), (x0 + 1, y0), (x0 + 1, y0 + 1), (x0, y0 + 1)]
    top = [(x0, y0 + 1), (x0 + 1, y0 + 1), (x0 + 1 + dx, y0 + 1 + dy), (x0 + dx, y0 + 1 + dy)]
    right = [(x0 + 1, y0), (x0 + 1 + dx, y0 + dy), (x0 + 1 + dx, y0 + 1 + dy), (x0 + 1, y0 + 1)]
    return front, top, right


def _lighter(colour: str, shade: float) -> Tuple[float, float, float, float]:
    """``colour`` mixed with white (``shade`` 1 → the colour itself), opaque: a translucent face
    would let the faces and edges behind it show through."""
    r, g, b = matplotlib.colors.to_rgb(colour)
    return (shade * r + 1 - shade, shade * g + 1 - shade, shade * b + 1 - shade, 1.0)


def block_figure(
    shape: Sequence[int] = (2, 6, 2, 2),
    method: str = "batch",
    lang: str = "en",
    *,
    layout: str = "image",
    num_groups: Optional[int] = None,
    which: int = 0,
    ax=None,
    figsize: Tuple[float, float] = (4.2, 3.3),
) -> BlockDrawing:
    """Draw a tensor as a block of cells and fill the cells that share statistic number ``which``.

    An image batch ``(N, C, H, W)`` is drawn as ``N × C × (H·W)`` (samples going back, channels
    across, spatial positions up), as in the Group Normalization paper's figure; a token batch
    ``(B, L, D)`` as ``B × L × D``. The other cells are drawn as an outline. Statistic ids are
    :func:`normlib_book.instruments.labels`; ``which`` runs from 0 to ``num_statistics - 1``.
    """
    check_lang(lang)
    share = block_sharing(shape, method, layout, num_groups)
    if isinstance(which, bool) or not isinstance(which, int) or not 0 <= which < share.num_statistics:
        raise ValueError(f"which must be an int from 0 to {share.num_statistics - 1} "
                         f"({method} on {tuple(shape)} has {share.num_statistics} statistics); got {which!r}")
    depth, across = share.shape[0], share.shape[1]
    cells = labels(share).reshape(depth, across, -1)
    up = cells.shape[2]
    highlighted = cells == which
    if ax is None:
        fig, ax = plt.subplots(figsize=figsize)
    else:
        fig = ax.figure
    dx, dy = 0.55, 0.45
    colour = PALETTE[0]
    # 1. the faint outer faces of the block
    ax.add_patch(matplotlib.patches.Polygon([(0, 0), (across, 0), (across, up), (0, up)],
                                            facecolor="#f2f2f2", edgecolor="none"))
    # 2. the highlighted cells, solid, painted back to front, left to right and bottom to top: a cell's
    #    front face then covers the top face of the cell below it and the right face of the cell to
    #    its left, and only the outside of the filled cells shows (row k of labels is drawn at height
    #    up - 1 - k, so the bottom row is k = up - 1)
    polys, faces = [], []
    for i in reversed(range(depth)):
        for j in range(across):
            for k in reversed(range(up)):
                if highlighted[i, j, k]:
                    for face, shade in zip(_box_faces(i, j, up - 1 - k, dx, dy), (1.0, 0.75, 0.55)):
                        polys.append(face)
                        faces.append(_lighter(colour, shade))
    ax.add_collection(matplotlib.collections.PolyCollection(polys, facecolors=faces, edgecolors="white",
                                                            linewidths=0.8))
    # 3. the grid of the three outer faces and the block's edges, on top
    grey = "#9a9a9a"
    lines = []
    for j in range(across + 1):
        lines.append([(j, 0), (j, up)])
        lines.append([(j, up), (j + depth * dx, up + depth * dy)])
    for k in range(up + 1):
        lines.append([(0, k), (across, k)])
        lines.append([(across, k), (across + depth * dx, k + depth * dy)])
    for i in range(depth + 1):
        lines.append([(i * dx, up + i * dy), (across + i * dx, up + i * dy)])
        lines.append([(across + i * dx, i * dy), (across + i * dx, up + i * dy)])
    ax.add_collection(matplotlib.collections.LineCollection(lines, colors=grey, linewidths=0.6))
    names = _block_axis_names(layout, len(share.shape), lang)
    ax.annotate(names[1], (across / 2, -0.15), ha="center", va="top", fontsize=9)
    ax.annotate(names[2], (-0.2, up / 2), ha="right", va="center", fontsize=9, rotation=90)
    ax.annotate(names[0], (across + depth * dx / 2 + 0.25, up + depth * dy / 2 + 0.1), ha="left",
                va="center", fontsize=9)
    ax.set_xlim(-1.0, across + depth * dx + 1.6)
    ax.set_ylim(-1.1, up + depth * dy + 0.3)
    ax.set_aspect("equal")
    ax.axis("off")
    title = text((_SEQUENCE_TITLE_KEYS if layout == "sequence" else _TITLE_KEYS)[method], lang)
    if method == "group":
        title += f" (G = {len(share.groups)})"
    ax.set_title(title, fontsize=10)
    ax.text(0.5, 0.0, text("block_count", lang).format(count=share.count, total=share.num_statistics),
            transform=ax.transAxes, ha="center", va="bottom", fontsize=8.5)
    sizes = (depth, across, up)[:3 if len(share.shape) > 2 else 2]   # (N, C): no spatial axis to name
    dims = ", ".join(f"{name} = {size}" for name, size in zip(names, sizes))
    alt = text("block_alt", lang).format(title=title, dims=dims, which=which, count=share.count,
                                         total=share.num_statistics)
    return BlockDrawing(fig=fig, labels=cells, highlighted=highlighted, sharing=share, alt=alt)


def _block_axis_names(layout: str, ndim: int, lang: str) -> Tuple[str, str, str]:
    if layout == "sequence":
        return (text("axis_B", lang), text("axis_L", lang), text("axis_D", lang))
    spatial = {2: "axis_none", 3: "axis_L_spatial"}.get(ndim, "axis_HW")
    return (text("axis_N", lang), text("axis_C", lang), text(spatial, lang))
