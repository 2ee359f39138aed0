"""The drawings: colours that colour-blind readers can tell apart, Korean and English labels,
and tables that colour exactly the cells normlib.axes says share a statistic."""

from __future__ import annotations

import itertools

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from helpers.text import has_hangul  # noqa: E402
from normlib import axes  # noqa: E402
from normlib import functional as F
from normlib_book import examples, i18n, instruments, viz  # noqa: E402

# -- colour blindness ---------------------------------------------------------------------------
# Machado, Oliveira & Fernandes (2009) simulation matrices at severity 1.0, applied in linear RGB.
SIMULATIONS = {
    "protanopia": ((0.152286, 1.052583, -0.204868), (0.114503, 0.786281, 0.099216), (-0.003882, -0.048116, 1.051998)),
    "deuteranopia": ((0.367322, 0.860646, -0.227968), (0.280085, 0.672501, 0.047413), (-0.011820, 0.042940, 0.968881)),
    "tritanopia": ((1.255528, -0.076749, -0.178779), (-0.078411, 0.930809, 0.147602), (0.004733, 0.691367, 0.303900)),
}


def _linear(c: float) -> float:
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def _lab(rgb_linear) -> tuple[float, float, float]:
    r, g, b = (min(max(v, 0.0), 1.0) for v in rgb_linear)
    xyz = (0.4124 * r + 0.3576 * g + 0.1805 * b, 0.2126 * r + 0.7152 * g + 0.0722 * b, 0.0193 * r + 0.1192 * g + 0.9505 * b)
    white = (0.95047, 1.0, 1.08883)

    def f(t):
        return t ** (1 / 3) if t > 216 / 24389 else (24389 / 27 * t + 16) / 116

    fx, fy, fz = (f(v / w) for v, w in zip(xyz, white))
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def _seen_as(hex_colour: str, matrix=None):
    rgb = [_linear(int(hex_colour[i:i + 2], 16) / 255) for i in (1, 3, 5)]
    if matrix is not None:
        rgb = [sum(m * v for m, v in zip(row, rgb)) for row in matrix]
    return _lab(rgb)


def _delta_e(a, b) -> float:
    return sum((x - y) ** 2 for x, y in zip(a, b)) ** 0.5


def min_distance(colours, matrix=None) -> float:
    seen = [_seen_as(c, matrix) for c in colours]
    return min(_delta_e(a, b) for a, b in itertools.combinations(seen, 2))


# The table drawings use the first four colours (up to four statistics), the line charts the
# first five; both must stay apart (CIE76 ΔE > 10) for every simulated viewer.
@pytest.mark.parametrize("viewer", [None, *SIMULATIONS])
def test_palette_stays_distinguishable(viewer):
    matrix = SIMULATIONS.get(viewer)
    assert min_distance(viz.PALETTE[:5], matrix) > 10, viewer


def test_the_colour_check_can_fail():
    # red and green, the classic pair, collapse for a deuteranope
    assert min_distance(["#D62728", "#2CA02C"]) > 10
    assert min_distance(["#D62728", "#2CA02C"], SIMULATIONS["deuteranopia"]) < 10


def test_setup_sets_the_palette_and_a_korean_font():
    viz.setup("ko")
    cycle = [c["color"] for c in matplotlib.rcParams["axes.prop_cycle"]]
    assert [c.lower() for c in cycle] == [c.lower() for c in viz.PALETTE]
    assert viz.korean_font() in matplotlib.rcParams["font.family"]


def test_korean_labels_render_without_missing_glyphs(recwarn, caplog):
    viz.setup("ko")
    fig, ax = plt.subplots()
    ax.set_xlabel(i18n.text("std_per_layer", "ko"))
    ax.plot([1, 2], [1e-3, 1.0])
    ax.set_yscale("log")  # mathtext ticks with minus signs
    fig.canvas.draw()
    plt.close(fig)
    missing = [str(w.message) for w in recwarn if "glyph" in str(w.message).lower()]
    missing += [r.getMessage() for r in caplog.records if "glyph" in r.getMessage().lower()]
    assert not missing, missing


# -- the table drawing reads normlib.axes ---------------------------------------------------------
@pytest.mark.parametrize("method", ["batch", "layer", "rms"])
@pytest.mark.parametrize("shape", [(4, 3), (2, 5), (6, 2)])
def test_table_colours_exactly_the_cells_that_share(method, shape):
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(0)) * 3 + 1
    rows, cols = [f"r{i}" for i in range(shape[0])], [f"c{j}" for j in range(shape[1])]
    drawing = viz.table_figure(x, method, "en", show="normalized", row_names=rows, column_names=cols)
    kwargs = {} if method == "batch" else {"normalized_shape": shape[1]}
    expected = instruments.labels(axes.sharing(method, shape, **kwargs))
    assert torch.equal(drawing.groups, expected)
    # one colour per statistic, different statistics in different colours
    faces = [p.get_facecolor() for p in drawing.fig.axes[0].patches]
    by_group = {}
    for (i, j), face in zip(itertools.product(range(shape[0]), range(shape[1])), faces):
        by_group.setdefault(int(expected[i, j]), set()).add(face)
    assert all(len(f) == 1 for f in by_group.values())
    assert len({next(iter(f)) for f in by_group.values()}) == len(by_group)
    # the numbers written are the method's output
    reference = {"batch": lambda t: F.batch_norm(t, None, None, training=True),
                 "layer": lambda t: F.layer_norm(t, (shape[1],)),
                 "rms": lambda t: F.rms_norm(t, (shape[1],), eps=1e-5)}[method](x)
    assert torch.allclose(drawing.values, reference)
    written = [float(t.get_text()) for t in drawing.fig.axes[0].texts]
    assert written == pytest.approx(reference.flatten().tolist(), abs=0.006)
    plt.close(drawing.fig)


def test_table_defaults_to_the_running_example_and_its_names():
    drawing = viz.table_figure(method="batch", lang="ko")
    ax = drawing.fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == list(examples.SAMPLES)
    assert [t.get_text() for t in ax.get_xticklabels()] == list(examples.FEATURES)
    assert " ".join(ax.get_title().split("\n")) == i18n.text("batch_shares", "ko")   # (wrapped to the table's width)
    assert torch.equal(drawing.values, examples.table())
    plt.close(drawing.fig)


@pytest.mark.parametrize("kwargs, message", [
    ({"method": "group"}, "method must be one of"),
    ({"lang": "fr"}, "lang must be one of 'ko', 'en'; got 'fr'"),
    ({"show": "both"}, "show must be 'input' or 'normalized'; got 'both'"),
    ({"x": torch.zeros(2, 3, 4)}, "got shape (2, 3, 4)"),
    ({"x": torch.zeros(2, 3)}, "2 rows and 3 columns need as many names; got 4 and 3"),
])
def test_table_rejects_bad_input_clearly(kwargs, message):
    with pytest.raises(ValueError) as info:
        viz.table_figure(**kwargs)
    assert message in str(info.value)


# -- strings ------------------------------------------------------------------------------------
def test_every_string_exists_in_both_languages_and_is_not_empty():
    assert set(i18n.STRINGS["ko"]) == set(i18n.STRINGS["en"])
    for lang in i18n.LANGS:
        assert all(v.strip() for v in i18n.STRINGS[lang].values()), lang


def test_korean_strings_are_korean_and_keep_out_of_mathtext():
    untranslated = {k for k, v in i18n.STRINGS["ko"].items() if not has_hangul(v)}
    # only names stay as they are: eps and the layer names of the benchmark's figures
    assert untranslated <= {"eps", "bench:layer_norm", "bench:rms_norm", "bench:batch_norm2d"}, untranslated
    # mathtext uses only the first font (DejaVu Sans, no Hangul): a "$" beside Hangul would break
    assert not [v for v in i18n.STRINGS["ko"].values() if "$" in v]


def test_a_key_defined_in_two_tables_is_refused():
    """The chapters' and the checkers' tables are merged; a key in both would silently pick one."""
    with pytest.raises(ValueError, match="defined twice: sample"):
        i18n._merged({"sample": ("샘플", "sample")}, {"sample": ("표본", "sample")})
    assert i18n._merged({"a": ("가", "a")}, {"b": ("나", "b")}) == {"a": ("가", "a"), "b": ("나", "b")}


def test_unknown_key_and_language_name_what_is_known():
    with pytest.raises(KeyError, match="known keys"):
        i18n.text("nope", "en")
    with pytest.raises(ValueError, match="got 'EN'"):
        i18n.text("sample", "EN")


@pytest.mark.parametrize("lang", ["ko", "en"])
@pytest.mark.parametrize("method", ["batch", "layer", "rms"])
def test_a_saved_table_picture_keeps_its_whole_title(lang, method):
    """The static explorer saves the figure as it is (no tight crop): the title must fit inside it."""
    viz.setup(lang)
    drawing = viz.table_figure(None, method, lang, show="normalized")
    fig = drawing.fig
    fig.canvas.draw()
    box = fig.axes[0].title.get_window_extent()
    width, height = fig.canvas.get_width_height()
    try:
        assert box.x0 >= 0 and box.x1 <= width and box.y1 <= height, (lang, method, box, width, height)
    finally:
        viz.plt.close(fig)
