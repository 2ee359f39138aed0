"""Explorers: which elements of a tensor share one mean and variance, to click through.

Two kinds, both in Korean or English (``lang="ko"`` or ``"en"``):

* :func:`static_explorer` draws every choice in advance and switches between the pictures
  with links that live in the browser (``ipywidgets.jslink`` between a selector and a
  ``Stack`` of :class:`Picture` widgets, each an image with its alt text). Stored with the notebook, it keeps working on the static
  HTML page of the book, with no kernel.
* :func:`live_explorer` redraws from :mod:`normlib` as sliders move (N, C, H·W, G, which
  group, eps, an offset of the input) and prints the statistics. It needs a running kernel.

Every picture is a :func:`normlib.book.viz.block_figure` or :func:`normlib.book.viz.table_figure`, which
read :mod:`normlib.axes`; the explorers keep the data behind each picture in ``leaves`` so
tests can check it.

>>> explorer = static_explorer("en", layouts=("table",))
>>> [leaf.path for leaf in explorer.leaves]
[('table', 'batch'), ('table', 'layer'), ('table', 'rms')]
"""

from __future__ import annotations

import base64
import html
import io
from contextlib import contextmanager
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import ipywidgets as W
import PIL.Image
import torch
from ipywidgets.widgets.widget_link import Link
from ipywidgets.widgets.widget_string import HTMLStyle

from .. import axes
from .. import functional as _F
from . import viz
from .i18n import check_lang, text

__all__ = ["Leaf", "Picture", "Explorer", "static_explorer", "live_explorer", "LiveExplorer", "METHOD_NAMES"]

METHOD_NAMES = {
    "batch": "BatchNorm", "layer": "LayerNorm", "instance": "InstanceNorm",
    "group": "GroupNorm", "rms": "RMSNorm",
}
_LAYOUT_METHODS = {
    "image": axes.METHODS,
    "sequence": axes.SEQUENCE_METHODS,
    "table": ("batch", "layer", "rms"),
}
LAYOUTS = tuple(_LAYOUT_METHODS)


@dataclass
class Leaf:
    """One pre-drawn picture: the choices that lead to it, what it highlights, its widget.

    ``path`` is ``(layout, method[, G], [which])``; ``groups`` the statistic id of every element
    and ``highlighted`` the filled ones (for a table, every cell is coloured by its id and
    ``highlighted`` is ``None``).
    """

    path: Tuple
    groups: torch.Tensor
    highlighted: Optional[torch.Tensor]
    image: "Picture"


class Explorer(W.VBox):
    """A ``VBox`` that also remembers its pictures (``leaves``) and its links (``links``)."""

    def __init__(self, children, leaves: List[Leaf], links: List[Link], **kwargs):
        super().__init__(children, **kwargs)
        self.leaves = leaves
        self.links = links


def _png(fig, dpi: int, colours: Optional[int] = 32) -> bytes:
    """The figure as PNG bytes (and closed). The drawings are flat colours, so a 32-colour
    palette keeps them sharp at about a quarter of the size: the static explorers store
    dozens of pictures in the page."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, metadata={"Software": None})
    viz.plt.close(fig)
    if colours is None:
        return buffer.getvalue()
    image = PIL.Image.open(buffer).convert("RGB").quantize(colors=colours, method=PIL.Image.Quantize.MEDIANCUT)
    small = io.BytesIO()
    image.save(small, format="png", optimize=True)
    return small.getvalue()


class Picture(W.HTML):
    """A PNG with its alt text (what it shows, in the page's language): ``png``, ``alt``.

    ipywidgets' ``Image`` writes an ``<img>`` without alt, so a screen reader says nothing of it,
    and cannot be given one (its ``tooltip`` throws in the page's widget manager: the Image model
    has no description). This is an HTML widget holding the ``<img>``, its bytes in a data: URL,
    base64 as the Image widget's stored state would hold them. It is shown at its own pixel width
    (never stretched, which blurs its text; narrower on a phone: max-width).

    ``look`` (``layout=``, ``style=``) lets many pictures share one layout and one style model:
    each widget would otherwise store its own (about 1.5 kB of defaults per picture in the page).
    """

    def __init__(self, png: bytes = b"", alt: str = "", **look):
        super().__init__(**look)
        self.show(png, alt)

    def show(self, png: bytes, alt: str) -> None:
        self.png, self.alt = png, alt
        if not png:
            self.value = ""
            return
        width, height = PIL.Image.open(io.BytesIO(png)).size
        data = base64.b64encode(png).decode("ascii")
        self.value = (f'<img src="data:image/png;base64,{data}" alt="{html.escape(alt)}" width="{width}" '
                      f'height="{height}" style="max-width: 100%; height: auto;">')


def _method_label(method: str, lang: str) -> str:
    return text("slip_dim0", lang) if method == "batch_dim0" else METHOD_NAMES[method]


def _divisors(n: int) -> List[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


class _Builder:
    """Builds nested selector → Stack pairs and records every leaf and link."""

    def __init__(self, lang: str, dpi: int):
        self.lang, self.dpi = lang, dpi
        self.leaves: List[Leaf] = []
        self.links: List[Link] = []
        self.look = {"layout": W.Layout(max_width="100%"), "style": HTMLStyle()}   # one for all pictures

    def picture(self, drawing) -> Picture:
        return Picture(_png(drawing.fig, self.dpi), drawing.alt, **self.look)

    def choose(self, options: Sequence[str], children: Sequence[W.Widget], css: str, label: str) -> W.VBox:
        selector = W.ToggleButtons(options=list(options), description=text(label, self.lang),
                                   style={"button_width": "auto", "description_width": "initial"})
        selector.add_class(css)
        stack = W.Stack(children=list(children), selected_index=0)
        self.links.append(W.jslink((selector, "index"), (stack, "selected_index")))
        return W.VBox([selector, stack])

    def slide(self, count: int, children: Sequence[W.Widget]) -> W.Widget:
        if count == 1:
            return children[0]
        slider = W.IntSlider(value=0, min=0, max=count - 1, description=text("which_group", self.lang),
                             style={"description_width": "initial"}, continuous_update=True)
        slider.add_class("normlib-which")
        stack = W.Stack(children=list(children), selected_index=0)
        self.links.append(W.jslink((slider, "value"), (stack, "selected_index")))
        return W.VBox([slider, stack])

    def blocks(self, path: Tuple, shape, method: str, layout: str, num_groups=None) -> W.Widget:
        images = []
        share = viz.block_sharing(shape, method, layout, num_groups)
        for which in range(share.num_statistics):
            drawing = viz.block_figure(shape, method, self.lang, layout=layout, num_groups=num_groups, which=which)
            image = self.picture(drawing)
            self.leaves.append(Leaf(path + (which,), drawing.labels, drawing.highlighted, image))
            images.append(image)
        return self.slide(len(images), images)


def static_explorer(
    lang: str = "en",
    layouts: Sequence[str] = ("image", "sequence", "table"),
    *,
    image_shape: Sequence[int] = (2, 6, 2, 2),
    sequence_shape: Sequence[int] = (2, 4, 3),
    table: Optional[torch.Tensor] = None,
    dpi: int = 90,
) -> Explorer:
    """An explorer whose every picture is drawn now and chosen in the browser.

    ``layouts`` picks among ``"image"`` (an ``(N, C, H, W)`` batch drawn as ``N × C × (H·W)``,
    methods BatchNorm, LayerNorm, InstanceNorm, GroupNorm with a choice of G among the
    divisors of C, RMSNorm), ``"sequence"`` (a ``(B, L, D)`` batch: BatchNorm, LayerNorm,
    RMSNorm and the dim-0 slip) and ``"table"`` (the running example, normalized numbers
    written in). For blocks a slider picks which statistic's elements are filled.

    The choices are linked to the pictures in the browser (``jslink``), so the explorer works
    on a static HTML page where the notebook's widget state is stored.
    """
    check_lang(lang)
    layouts = tuple(layouts)
    if not layouts or any(layout not in LAYOUTS for layout in layouts):
        raise ValueError(f"layouts must be a non-empty selection of {LAYOUTS}; got {layouts!r}")
    if len(set(layouts)) != len(layouts):
        raise ValueError(f"layouts must not repeat; got {layouts!r}")
    b = _Builder(lang, dpi)
    panels = []
    for layout in layouts:
        methods = _LAYOUT_METHODS[layout]
        children = []
        for method in methods:
            path = (layout, method)
            if layout == "table":
                drawing = viz.table_figure(table, method, lang, show="normalized")
                image = b.picture(drawing)
                b.leaves.append(Leaf(path, drawing.groups, None, image))
                children.append(image)
            elif method == "group":
                choices = _divisors(int(image_shape[1]))
                per_g = [b.blocks(path + (g,), image_shape, method, layout, num_groups=g) for g in choices]
                labels = [_group_label(g, int(image_shape[1]), lang) for g in choices]
                children.append(b.choose(labels, per_g, "normlib-groups", "choose_groups"))
            else:
                shape = image_shape if layout == "image" else sequence_shape
                children.append(b.blocks(path, shape, method, layout))
        panels.append(b.choose([_method_label(m, lang) for m in methods], children, "normlib-method", "choose_method"))
    if len(panels) == 1:
        body = panels[0]
    else:
        body = b.choose([text(f"layout_{layout}", lang) for layout in layouts], panels, "normlib-layout", "choose_layout")
    explorer = Explorer([body], b.leaves, b.links)
    explorer.add_class("normlib-explorer")
    return explorer


def _group_label(g: int, channels: int, lang: str) -> str:
    if g == 1:
        return "G = 1 (= LayerNorm)"
    if g == channels:
        return f"G = {g} (= InstanceNorm)"
    return f"G = {g}"


# -- live ------------------------------------------------------------------------------------------
_NORMALIZE: dict = {
    "batch": lambda x, eps, g: _F.batch_norm(x, None, None, training=True, eps=eps),
    "layer": lambda x, eps, g: _F.layer_norm(x, x.shape[1:], eps=eps),
    "instance": lambda x, eps, g: _F.instance_norm(x, eps=eps),
    "group": lambda x, eps, g: _F.group_norm(x, g, eps=eps),
    "rms": lambda x, eps, g: _F.rms_norm(x, x.shape[1:], eps=eps),
}


class LiveExplorer(W.VBox):
    """Sliders that redraw from normlib in a running kernel: see :func:`live_explorer`.

    ``update()`` redraws now (the sliders call it); ``status`` holds the printed statistics.
    """

    def __init__(self, lang: str, seed: int, dpi: int):
        check_lang(lang)
        self.lang, self.seed, self.dpi = lang, seed, dpi
        style = {"description_width": "initial"}
        self.method = W.ToggleButtons(options=[(METHOD_NAMES[m], m) for m in _LAYOUT_METHODS["image"]],
                                      description=text("choose_method", lang),
                                      style={"button_width": "auto", "description_width": "initial"})
        self.n = W.IntSlider(value=2, min=1, max=6, description="N", style=style)
        self.c = W.IntSlider(value=6, min=1, max=12, description="C", style=style)
        self.hw = W.IntSlider(value=4, min=1, max=8, description="H·W", style=style)
        self.g = W.SelectionSlider(options=_divisors(6), value=3, description="G", style=style)
        self.which = W.IntSlider(value=0, min=0, max=5, description=text("which_group", lang), style=style)
        self.eps = W.FloatLogSlider(value=1e-5, base=10, min=-8, max=1, description="eps", style=style,
                                    readout_format=".0e")
        self.offset = W.FloatSlider(value=0.0, min=-10.0, max=10.0, step=0.5, description=text("input_offset", lang),
                                    style=style)
        self.image = Picture(layout=W.Layout(max_width="100%"))
        self.status = W.HTML()
        self.last_error: Optional[str] = None
        controls = [self.method, W.HBox([self.n, self.c, self.hw]), W.HBox([self.g, self.which]),
                    W.HBox([self.eps, self.offset])]
        super().__init__(controls + [self.image, self.status])
        self.add_class("normlib-live")
        self._quiet = False
        self.c.observe(self._on_channels, names="value")
        for control in (self.method, self.n, self.hw, self.g, self.eps, self.offset, self.which):
            control.observe(self._on_change, names="value")
        self.update()

    @contextmanager
    def _quietly(self):
        """Change controls without each change triggering its own redraw."""
        self._quiet = True
        try:
            yield
        finally:
            self._quiet = False

    def _on_change(self, change) -> None:
        if not self._quiet:
            self.update()

    def _on_channels(self, change) -> None:
        # G must divide C: offer only the divisors, keeping G if it still divides.
        divisors = _divisors(change["new"])
        keep = max(d for d in divisors if d <= self.g.value)
        with self._quietly():
            self.g.options = divisors
            self.g.value = keep
        self.update()

    def input(self) -> torch.Tensor:
        """The input the explorer normalizes: seeded standard normal numbers plus the offset."""
        gen = torch.Generator().manual_seed(self.seed)
        x = torch.randn(self.n.value, self.c.value, self.hw.value, 1, generator=gen, dtype=torch.float64)
        return x + self.offset.value

    def update(self) -> None:
        method, g = self.method.value, self.g.value if self.method.value == "group" else None
        shape = (self.n.value, self.c.value, self.hw.value, 1)
        share = viz.block_sharing(shape, method, "image", g)
        with self._quietly():
            self.which.max = share.num_statistics - 1  # clamps the value
        x = self.input()
        try:
            y = _NORMALIZE[method](x, self.eps.value, g)
        except ValueError as error:  # e.g. BatchNorm of one value per channel
            self.last_error = str(error)
            y = None
        else:
            self.last_error = None
        drawing = viz.block_figure(shape, method, self.lang, num_groups=g, which=self.which.value)
        self.image.show(_png(drawing.fig, self.dpi, colours=None), drawing.alt)  # fast: one picture at a time
        self.status.value = self._report(x, y, drawing.highlighted.reshape(shape))

    def _report(self, x: torch.Tensor, y: Optional[torch.Tensor], mask: torch.Tensor) -> str:
        t = lambda key: text(key, self.lang)  # noqa: E731
        if y is None:
            return f"<b>{t('live_error')}</b> {html.escape(self.last_error, quote=False)}"
        xs, ys = x[mask], y[mask]
        rows = [
            (t("input"), xs.mean(), xs.var(unbiased=False), xs.square().mean()),
            (t("normalized"), ys.mean(), ys.var(unbiased=False), ys.square().mean()),
        ]
        head = (f"<tr><th></th><th>{t('mean')}</th><th>{t('variance')}</th><th>{t('mean_square')}</th></tr>")
        body = "".join(f"<tr><td>{name}</td><td>{_num(m):+.4f}</td><td>{_num(v):.4f}</td><td>{_num(q):.4f}</td></tr>"
                       for name, m, v, q in rows)
        caption = t("live_caption").format(count=int(mask.sum()), which=self.which.value)
        return f"<div>{caption}</div><table class='normlib-stats'>{head}{body}</table>"


def _num(value: torch.Tensor) -> float:
    """Rounded to the 4 printed decimals, with -0.0 made 0.0 (a mean of -0.0000 looks wrong)."""
    return round(float(value), 4) + 0.0


def live_explorer(lang: str = "en", *, seed: int = 0, dpi: int = 90) -> LiveExplorer:
    """Sliders for N, C, H·W, G, which group, eps and the input's offset, redrawn from normlib.

    Under the drawing it prints the mean, variance and mean square of the highlighted
    elements before and after normalization: LayerNorm and its family bring them to 0 and
    ``var / (var + eps)``; RMSNorm keeps the offset. Needs a running kernel (JupyterLab,
    Binder, Colab); on the static page use :func:`static_explorer`.
    """
    return LiveExplorer(lang, seed, dpi)
