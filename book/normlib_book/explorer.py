"""The explorer: which elements share one statistic, and what every element becomes, computed in the
reader's browser.

:class:`Explorer` is an `anywidget <https://anywidget.dev>`_ widget: its front end is one ES module,
``explorer.js`` beside this file, and its state is the traitlets below. The same widget runs live in
JupyterLab, Notebook 7, VS Code and Colab, and on the book's static page with no kernel (the
notebook stores the widget's state, module included; the book's loader mounts it). The JavaScript
computes in float64 and draws with SVG and HTML.

The reader chooses the layout (an image batch ``(N, C, H·W)``, a sequence batch ``(B, L, D)``, the
running 4 × 3 table), its sizes, the method (and G for GroupNorm), types the table's values, γ, β
and ε, and for BatchNorm switches between training and evaluation and steps through batches.

:meth:`Explorer.expected` computes the same numbers with :mod:`normlib` in Python;
:meth:`Explorer.check` compares them with what the JavaScript reported (``shown``) when a front
end is showing the widget.

>>> e = Explorer("en", layouts=("table",))
>>> e.method, e.table[:4]
('batch', [2.0, 3.0, 4.0, 4.0])
>>> [round(v, 4) for v in e.expected()["mean"]]
[5.0, 5.0, 18.0]
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Optional, Sequence

import anywidget
import torch
import traitlets as t

from normlib import axes
from normlib import functional as F
from normlib.stats import moments

from . import examples
from .i18n import check_lang, text
from .instruments import labels, sequence_sharing

__all__ = ["Explorer", "sample_values", "METHODS", "LIMITS"]

HERE = Path(__file__).resolve().parent

METHODS = {
    "image": ("batch", "layer", "instance", "group", "rms"),
    "sequence": ("batch", "layer", "rms", "batch_dim0"),
    "table": ("batch", "layer", "rms"),
}
# The sizes a reader may set (explorer.js's LIMITS): (min, max) per axis.
LIMITS = {
    "image": ((1, 4), (1, 8), (1, 9)),
    "sequence": ((1, 4), (1, 6), (1, 8)),
}

# Every string the front end shows (its keys; the words come from normlib_book.i18n).
WORD_KEYS = (
    "choose_layout", "choose_method", "choose_groups", "layout_image", "layout_sequence", "layout_table",
    "train_mode", "eval_mode", "mean_square",
    "nx_method_batch_dim0", "nx_gamma", "nx_beta", "nx_eps",
    "axis_N", "axis_C", "axis_HW", "axis_B", "axis_L", "axis_D",
    "nx_summary", "nx_selected", "nx_where_image", "nx_where_sequence", "nx_where_table", "nx_cell",
    "nx_block_image", "nx_block_sequence", "nx_feature", "nx_sample", "nx_table_input", "nx_table_caption",
    "nx_stats_caption", "nx_statistic", "nx_running", "nx_momentum", "nx_momentum_none", "nx_step",
    "nx_reset", "nx_steps", "nx_error_one_value", "nx_error_one_position",
    "nx_summary_one", "nx_stats_caption_one", "nx_uses_running", "nx_members", "nx_members_rms",
    "nx_error_eps_training", "nx_error_eps_negative", "nx_bad_number", "nx_bad_empty", "nx_bad_ambiguous",
    "nx_bad_huge", "nx_bad_whole", "nx_bad_range", "nx_bad_eps_training", "nx_bad_eps_negative",
    "nx_why_zero", "nx_why_negative", "nx_why_overflow", "nx_why_overflow_onepass", "nx_why_other",
)


def _fmt(v: float) -> str:
    """As explorer.js's fmt prints a number of 1e-4 or more (or 0): at most 4 decimals, no trailing
    zeros, a true minus (the JavaScript writes smaller ones with an exponent)."""
    s = f"{v:.4f}".rstrip("0").rstrip(".")
    return "0" if s == "-0" else s.replace("-", "−")


# The traits that make up what the widget shows (STATE_KEYS in explorer.js).
STATE_KEYS = ("layout", "layouts", "image_shape", "sequence_shape", "image_x", "sequence_x", "table", "method",
              "groups", "eps", "gamma", "beta", "training", "momentum", "running_mean", "running_var", "steps",
              "selected")


def sample_values(layout: str, shape: Sequence[int], seed: int = 1) -> list[float]:
    """The inputs the explorer shows for an image or sequence shape (``sampleValues`` in explorer.js):
    the minimal standard LCG, one decimal in [-3, 3], channel ``c`` shifted by ``c / 2``.

    >>> sample_values("image", (1, 2, 2))
    [-1.0, 0.7, 3.4, 3.0]
    """
    a, b, k = (int(s) for s in shape)
    out, s = [], seed
    for i in range(a * b * k):
        s = (48271 * s) % 2147483647
        channel = (i // k) % b if layout == "image" else i % k
        out.append(((s % 61) - 30) / 10 + channel / 2)
    return out


def _sizes(e: "Explorer") -> tuple[int, int, int]:
    if e.form == "table":
        return (4, 1, 3)
    return tuple(e.image_shape if e.form == "image" else e.sequence_shape)


class Explorer(anywidget.AnyWidget):
    """The explorer's state: ``Explorer(lang, layouts, **state)`` offers ``layouts`` (the first is shown,
    or ``form=``) with any other trait (``method="group"``, ``groups=2``, ``image_shape=[2, 6, 4]``,
    ``training=False`` …)."""

    _esm = HERE / "explorer.js"
    _css = HERE / "explorer.css"

    lang = t.Unicode("en").tag(sync=True)
    words = t.Dict().tag(sync=True)
    layouts = t.List(t.Unicode()).tag(sync=True)
    # the layout shown ("form": ipywidgets' ``layout`` trait is the widget's CSS layout)
    form = t.Unicode("table").tag(sync=True)
    image_shape = t.List(t.Int(), default_value=[2, 6, 4]).tag(sync=True)
    sequence_shape = t.List(t.Int(), default_value=[2, 4, 3]).tag(sync=True)
    image_x = t.List(t.Float()).tag(sync=True)
    sequence_x = t.List(t.Float()).tag(sync=True)
    table = t.List(t.Float()).tag(sync=True)
    method = t.Unicode("batch").tag(sync=True)
    groups = t.Int(3).tag(sync=True)
    eps = t.Float(1e-5).tag(sync=True)
    gamma = t.Float(1.0).tag(sync=True)
    beta = t.Float(0.0).tag(sync=True)
    training = t.Bool(True).tag(sync=True)
    momentum = t.Float(0.1, allow_none=True).tag(sync=True)
    running_mean = t.List(t.Float()).tag(sync=True)
    running_var = t.List(t.Float()).tag(sync=True)
    steps = t.Int(0).tag(sync=True)
    selected = t.Int(0).tag(sync=True)
    # What the front end computed for the state it drew (written by explorer.js; empty without one).
    shown = t.Dict().tag(sync=True)

    def __init__(self, lang: str = "en", layouts: Sequence[str] = ("image", "sequence", "table"), **state):
        lang = check_lang(lang)
        layouts = list(layouts)
        if not layouts or any(layout not in METHODS for layout in layouts) or len(set(layouts)) != len(layouts):
            raise ValueError(f"layouts must be a non-empty selection, without repeats, of {tuple(METHODS)}; got {tuple(layouts)!r}")
        state.setdefault("form", layouts[0])
        super().__init__(lang=lang, layouts=layouts, words={k: text(k, lang) for k in WORD_KEYS}, **state)
        if not self.table:
            self.table = [float(v) for row in examples.TABLE for v in row]
        if not self.image_x:
            self.image_x = sample_values("image", self.image_shape)
        if not self.sequence_x:
            self.sequence_x = sample_values("sequence", self.sequence_shape)
        self._check()
        channels = self._channels()
        if len(self.running_mean) != channels:
            self.running_mean, self.running_var = [0.0] * channels, [1.0] * channels

    def _channels(self) -> int:
        a, b, k = _sizes(self)
        return b if self.form == "image" else k

    def _check(self) -> None:
        if self.form not in self.layouts:
            raise ValueError(f"layout must be one of {tuple(self.layouts)}; got {self.form!r}")
        if self.method not in METHODS[self.form]:
            raise ValueError(f"method must be one of {METHODS[self.form]} for the {self.form} layout; got {self.method!r}")
        for layout, limits in LIMITS.items():
            shape = getattr(self, f"{layout}_shape")
            if len(shape) != 3 or any(not lo <= s <= hi for s, (lo, hi) in zip(shape, limits)):
                raise ValueError(f"{layout}_shape must be 3 sizes within {limits}; got {shape}")
            values = getattr(self, f"{layout}_x")
            if len(values) != math.prod(shape):
                raise ValueError(f"{layout}_x must hold {math.prod(shape)} values for shape {shape}; got {len(values)}")
        if len(self.table) != 12:
            raise ValueError(f"table must hold 12 values (4 × 3); got {len(self.table)}")
        if self.image_shape[1] % self.groups:
            raise ValueError(f"groups must divide C = {self.image_shape[1]}; got {self.groups}")
        if not math.isfinite(self.eps):
            raise ValueError(f"eps must be a finite number; got {self.eps}")
        if self.method == "batch" and (self.eps < 0 or (self.training and self.eps == 0)):
            # torch's words (F.batch_norm): LayerNorm, RMSNorm, GroupNorm, InstanceNorm take any eps
            raise ValueError(f"batch_norm eps must be {'positive during training' if self.training else 'non-negative'}, "
                             f"but got {self.eps}")

    def input(self) -> torch.Tensor:
        """The tensor shown, as the layout holds it: (N, C, H·W), (B, L, D) or the (4, 3) table."""
        if self.form == "table":
            return torch.tensor(self.table, dtype=torch.float64).reshape(4, 3)
        values = self.image_x if self.form == "image" else self.sequence_x
        return torch.tensor(values, dtype=torch.float64).reshape(_sizes(self))

    def expected(self) -> dict:
        """What the widget should show, computed with :mod:`normlib` (float64): per statistic the
        mean and variance (RMSNorm: the mean square), per element x̂ and y."""
        self._check()
        x, method = self.input(), self.method
        weight = lambda shape: torch.full(shape, self.gamma, dtype=torch.float64)  # noqa: E731
        bias = lambda shape: torch.full(shape, self.beta, dtype=torch.float64)  # noqa: E731
        # one row per statistic, in the widget's order (normlib.axes numbers them as explorer.js does)
        cells = labels(self.sharing()).flatten()
        groups = torch.stack([x.flatten()[cells == j] for j in range(int(cells.max()) + 1)])
        if method == "rms":
            mean, var = groups.square().mean(1), None
        else:
            mean, var = (m.squeeze(1) for m in moments(groups, (1,)))
        channels = self._channels()
        if method == "batch":
            moved = x.transpose(1, 2) if self.form == "sequence" else x
            rm = torch.tensor(self.running_mean, dtype=torch.float64)
            rv = torch.tensor(self.running_var, dtype=torch.float64)
            xhat = F.batch_norm(moved, rm.clone(), rv.clone(), training=self.training, eps=self.eps)
            y = F.batch_norm(moved, rm.clone(), rv.clone(), weight((channels,)), bias((channels,)),
                             training=self.training, eps=self.eps)
            if self.form == "sequence":
                xhat, y = xhat.transpose(1, 2), y.transpose(1, 2)
        elif method == "batch_dim0":
            xhat = (x - x.mean(0)) / torch.sqrt(x.var(0, unbiased=False) + self.eps)
            y = self.gamma * xhat + self.beta
        elif method in ("layer", "rms"):
            shape = tuple(x.shape[1:]) if self.form == "image" else (x.shape[-1],)
            fn = F.layer_norm if method == "layer" else F.rms_norm
            xhat = fn(x, shape, eps=self.eps)
            y = fn(x, shape, weight(shape), bias(shape), eps=self.eps) if method == "layer" else fn(x, shape, weight(shape), eps=self.eps)
        elif method == "instance":
            xhat = F.instance_norm(x, eps=self.eps)
            y = F.instance_norm(x, weight=weight((channels,)), bias=bias((channels,)), eps=self.eps)
        else:
            xhat = F.group_norm(x, self.groups, eps=self.eps)
            y = F.group_norm(x, self.groups, weight((channels,)), bias((channels,)), eps=self.eps)
        return {"mean": mean.tolist(), "variance": None if var is None else var.tolist(),
                "xhat": xhat.flatten().tolist(), "y": y.flatten().tolist()}

    def sharing(self) -> axes.Sharing:
        """Which elements of :meth:`input` share one statistic (:mod:`normlib.axes`); its labels
        are the statistics' numbers the widget shows, minus one."""
        shape = tuple(self.input().shape)
        if self.form == "sequence":
            return sequence_sharing(self.method, shape)
        if self.method in ("layer", "rms"):
            return axes.sharing(self.method, shape, normalized_shape=shape[1:])
        return axes.sharing(self.method, shape, num_groups=self.groups if self.method == "group" else None)

    def train_step(self) -> None:
        """One training step of BatchNorm on the current batch (what the page's step button does),
        computed by :class:`normlib.BatchNorm1d`."""
        if self.method != "batch":
            raise ValueError(f"only BatchNorm keeps running statistics; the method is {self.method!r}")
        import normlib

        bn = normlib.BatchNorm1d(self._channels(), momentum=self.momentum, dtype=torch.float64)
        bn.running_mean.copy_(torch.tensor(self.running_mean, dtype=torch.float64))
        bn.running_var.copy_(torch.tensor(self.running_var, dtype=torch.float64))
        bn.num_batches_tracked.fill_(self.steps)
        x = self.input()
        bn.train()(x.transpose(1, 2) if self.form == "sequence" else x.reshape(x.shape[0], x.shape[1], -1))
        self.running_mean, self.running_var = bn.running_mean.tolist(), bn.running_var.tolist()
        self.steps = int(bn.num_batches_tracked)

    def check(self, tolerance: float = 1e-12) -> Optional[int]:
        """Compare what the front end computed (``shown``) with :meth:`expected`: the number of values
        compared, or None when no front end has drawn the current state (no browser showing it).
        Raises AssertionError naming the first value that differs by more than ``tolerance``
        (relative to the value, or absolute below 1)."""
        shown = dict(self.shown)
        if "state" not in shown:
            return None
        drawn = json.loads(shown["state"])
        if any(drawn.get(key) != getattr(self, "form" if key == "layout" else key) for key in STATE_KEYS):
            return None                      # the front end has not drawn this state (yet)
        if "error" in shown:
            raise AssertionError(f"the widget shows an error ({shown['error']}) for a state normlib computes")
        expected, compared = self.expected(), 0
        for key, values in expected.items():
            if values is None:
                continue
            got = shown.get(key)
            assert got is not None and len(got) == len(values), f"{key}: the widget shows {got!r}, normlib {values!r}"
            for i, (a, b) in enumerate(zip(got, values)):
                assert abs(a - b) <= tolerance * max(1.0, abs(b)), f"{key}[{i}]: the widget shows {a!r}, normlib {b!r}"
                compared += 1
        return compared

    def report(self) -> str:
        """normlib's numbers for the chosen cell, in the page's language; when a front end has drawn
        the current state, also every number it computed checked against normlib's (:meth:`check`,
        which raises if one differs). Without a front end (a script, a test run) only the first."""
        values = self.expected()
        a, b, k = _sizes(self)
        i = self.selected
        where = {"image": ("nx_where_image", {"n": i // (b * k) + 1, "c": i // k % b + 1, "s": i % k + 1}),
                 "sequence": ("nx_where_sequence", {"b": i // (b * k) + 1, "l": i // k % b + 1, "d": i % k + 1}),
                 "table": ("nx_where_table", {"n": "ABCDEF"[i // k], "d": i % k + 1})}[self.form]
        stat = int(labels(self.sharing()).flatten()[i])
        moment = (f"{text('mean_square', self.lang)} = {_fmt(values['mean'][stat])}" if self.method == "rms" else
                  f"μ = {_fmt(values['mean'][stat])}, σ² = {_fmt(values['variance'][stat])}")
        line = text("nx_report", self.lang).format(where=text(where[0], self.lang).format(**where[1]), stat=moment,
                                                   xhat=_fmt(values["xhat"][i]), y=_fmt(values["y"][i]))
        compared = self.check()
        if compared is not None:
            line += "\n" + text("nx_report_checked", self.lang).format(count=compared)
        return line
