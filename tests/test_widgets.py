"""The block drawings and the explorers: every filled cell is an element that torch really pools
with the others (checked with torch's own gradients, not with normlib.axes), every choice in
a static explorer leads, through browser-side links only, to the picture drawn for it, and
the live explorer prints what normlib computes."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import ipywidgets as W  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as TF  # noqa: E402
from ipywidgets.embed import embed_data  # noqa: E402
from ipywidgets.widgets.widget_link import Link  # noqa: E402

from helpers import has_hangul  # noqa: E402
from normlib import axes  # noqa: E402
from normlib.book import viz, widgets  # noqa: E402


# -- the oracle: which inputs does torch's output at one element depend on? -----------------------
def torch_normalize(layout: str, method: str, x: torch.Tensor, num_groups=None) -> torch.Tensor:
    if layout == "image":
        return {
            "batch": lambda: TF.batch_norm(x, None, None, training=True),
            "layer": lambda: TF.layer_norm(x, x.shape[1:]),
            "instance": lambda: TF.instance_norm(x),
            "group": lambda: TF.group_norm(x, num_groups),
            "rms": lambda: TF.rms_norm(x, x.shape[1:]),
        }[method]()
    return {
        "batch": lambda: TF.batch_norm(x.transpose(1, 2), None, None, training=True).transpose(1, 2),
        "layer": lambda: TF.layer_norm(x, x.shape[-1:]),
        "rms": lambda: TF.rms_norm(x, x.shape[-1:]),
        # the slip as the seed lesson wrote it: statistics over dim 0 only
        "batch_dim0": lambda: (x - x.mean(dim=0)) / (x.var(dim=0, unbiased=False) + 1e-5).sqrt(),
    }[method]()


def pooled_with(layout, method, shape, element, num_groups=None) -> torch.Tensor:
    """The inputs that torch's output at ``element`` depends on (non-zero gradient)."""
    x = torch.randn(*shape, dtype=torch.float64, generator=torch.Generator().manual_seed(7)).requires_grad_()
    y = torch_normalize(layout, method, x, num_groups)
    (grad,) = torch.autograd.grad(y[element], x)
    return grad != 0


CASES = [("image", shape, m, None) for shape in [(2, 6, 2, 2), (3, 4, 5)] for m in ("batch", "layer", "instance", "rms")]
CASES += [("image", (2, 6, 2, 2), "group", g) for g in (1, 2, 3, 6)] + [("image", (3, 4, 5), "group", 2)]
CASES += [("image", (5, 3), m, None) for m in ("batch", "layer", "rms")]
CASES += [("sequence", shape, m, None) for shape in [(2, 4, 3), (3, 2, 5)] for m in axes.SEQUENCE_METHODS]


@pytest.mark.parametrize("layout,shape,method,groups", CASES, ids=lambda v: str(v))
def test_every_block_fills_exactly_what_torch_pools(layout, shape, method, groups):
    share = viz.block_sharing(shape, method, layout, groups)
    assert share.num_statistics >= 1
    for which in range(share.num_statistics):
        drawing = viz.block_figure(shape, method, "en", layout=layout, num_groups=groups, which=which)
        viz.plt.close(drawing.fig)
        filled = drawing.highlighted.reshape(shape)
        assert filled.any(), (method, which)
        first = tuple(int(i) for i in filled.nonzero()[0])
        assert torch.equal(filled, pooled_with(layout, method, shape, first, groups)), (layout, method, which)
        # and the same as normlib.axes says, for the element drawn
        assert torch.equal(filled, share.mask(first))
        assert int(filled.sum()) == share.count


def test_group_norm_extremes_coincide_with_layer_and_instance():
    shape = (2, 6, 2, 2)
    for g, same_as in ((1, "layer"), (6, "instance")):
        for which in range(viz.block_sharing(shape, "group", num_groups=g).num_statistics):
            a = viz.block_figure(shape, "group", "en", num_groups=g, which=which)
            b = viz.block_figure(shape, same_as, "en", which=which)
            viz.plt.close(a.fig), viz.plt.close(b.fig)
            assert torch.equal(a.highlighted, b.highlighted), (g, which)


@pytest.mark.parametrize("call,needle", [
    (lambda: viz.block_figure((2, 6, 2, 2), "group", "en", num_groups=4), "divisible"),
    (lambda: viz.block_figure((2, 6, 2, 2), "batch", "en", which=6), "from 0 to 5"),
    (lambda: viz.block_figure((2, 6, 2, 2), "batch", "en", which=-1), "from 0 to 5"),
    (lambda: viz.block_figure((2, 6, 2, 2), "batch_dim0", "en"), "image layout"),
    (lambda: viz.block_figure((2, 4, 3), "instance", "en", layout="sequence"), "(B, L, D)"),
    (lambda: viz.block_figure((2, 4, 3, 1), "layer", "en", layout="sequence"), "(B, L, D)"),
    (lambda: viz.block_figure((2, 4, 3), "layer", "en", layout="tokens"), "layout must be one of"),
    (lambda: viz.block_figure((2, 4, 3), "layer", "de"), "lang must be one of"),
    (lambda: viz.block_figure((5,), "batch", "en"), "(N, C, *spatial)"),
])
def test_block_figure_rejects_bad_input_clearly(call, needle):
    with pytest.raises((ValueError, KeyError)) as info:
        call()
    assert needle in str(info.value)


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_block_labels_are_in_the_language_asked(lang):
    viz.setup(lang)
    drawing = viz.block_figure((2, 6, 2, 2), "group", lang, num_groups=3)
    texts = [t.get_text() for t in drawing.fig.axes[0].texts] + [drawing.fig.axes[0].get_title()]
    viz.plt.close(drawing.fig)
    assert any(has_hangul(t) for t in texts) == (lang == "ko"), texts


# -- the static explorer: what a click in the browser shows -----------------------------------------
def browser_choose(explorer: widgets.Explorer, choice) -> widgets.Picture:
    """Do what the browser does when the reader picks ``choice`` (a dict selector -> value):
    copy each selector's value along its jslink, then follow the Stacks to the shown picture."""
    for selector, value in choice.items():
        if isinstance(selector, W.ToggleButtons):
            selector.index = value
        else:
            selector.value = value
    for link in explorer.links:
        (source, source_trait), (target, target_trait) = link.source, link.target
        setattr(target, target_trait, getattr(source, source_trait))
    node = explorer
    while not isinstance(node, widgets.Picture):
        if isinstance(node, W.Stack):
            node = node.children[node.selected_index]
        else:
            node = node.children[-1]  # a selector and, last, what it switches
    return node


def selectors_along(explorer: widgets.Explorer, path, layouts) -> dict:
    """The selector values that lead to the leaf ``path`` = (layout, method[, G][, which])."""
    choice, node = {}, explorer.children[0]
    layout, method, *rest = path
    steps = []
    if len(layouts) > 1:
        steps.append(layouts.index(layout))
    steps.append(widgets._LAYOUT_METHODS[layout].index(method))
    if method == "group" and layout == "image":
        steps.append(widgets._divisors(6).index(rest.pop(0)))
    if rest:
        steps.append(rest.pop(0))
    for step in steps:
        while isinstance(node, W.Stack):
            node = node.children[node.selected_index if node not in choice else choice[node]]
        selector, stack = node.children
        choice[selector] = step
        node = stack.children[step]
    return choice


@pytest.fixture(scope="module")
def explorer_en():
    viz.setup("en")
    return widgets.static_explorer("en", layouts=("image", "sequence", "table"))


def test_static_explorer_has_one_picture_per_choice_and_links_only(explorer_en):
    paths = [leaf.path for leaf in explorer_en.leaves]
    assert len(paths) == len(set(paths))
    image_leaves = [p for p in paths if p[0] == "image"]
    # batch 6 + layer 2 + instance 12 + group (G=1: 2, 2: 4, 3: 6, 6: 12) + rms 2
    assert len(image_leaves) == 6 + 2 + 12 + (2 + 4 + 6 + 12) + 2
    assert len([p for p in paths if p[0] == "sequence"]) == 3 + 8 + 8 + 12
    assert [p for p in paths if p[0] == "table"] == [("table", "batch"), ("table", "layer"), ("table", "rms")]
    for link in explorer_en.links:
        assert type(link) is Link  # jslink: runs in the browser, no kernel needed
        assert isinstance(link.target[0], W.Stack) and link.target[1] == "selected_index"


def test_every_choice_shows_its_own_picture(explorer_en):
    layouts = ("image", "sequence", "table")
    for leaf in explorer_en.leaves:
        shown = browser_choose(explorer_en, selectors_along(explorer_en, leaf.path, layouts))
        assert shown is leaf.image, leaf.path
        assert leaf.image.png[:8] == b"\x89PNG\r\n\x1a\n"
    # different choices, different pictures
    pictures = {leaf.image.png for leaf in explorer_en.leaves}
    assert len(pictures) == len(explorer_en.leaves)


def test_static_explorer_leaves_carry_what_axes_names(explorer_en):
    for leaf in explorer_en.leaves:
        layout, method, *rest = leaf.path
        if layout == "table":
            expected = axes.sharing(method, (4, 3), **({} if method == "batch" else {"normalized_shape": 3})).labels()
            assert torch.equal(leaf.groups, expected)
            continue
        groups = rest.pop(0) if method == "group" else None
        shape = (2, 6, 2, 2) if layout == "image" else (2, 4, 3)
        which = rest[0]
        assert torch.equal(leaf.highlighted.reshape(shape), viz.block_sharing(shape, method, layout, groups).labels() == which)


def test_static_explorer_state_embeds_for_the_static_page(explorer_en):
    data = embed_data(views=[explorer_en])
    models = {state["model_name"] for state in data["manager_state"]["state"].values()}
    assert {"LinkModel", "StackModel", "HTMLModel", "ToggleButtonsModel", "IntSliderModel"} <= models


def test_static_explorer_speaks_the_language_asked(explorer_en):
    ko = widgets.static_explorer("ko", layouts=("sequence",))   # one layout: its slider and its slip say it
    labels = [w.description for w in _walk(ko) if isinstance(w, W.IntSlider)]
    labels += [o for w in _walk(ko) if isinstance(w, W.ToggleButtons) for o in w.options]
    assert any(has_hangul(t) for t in labels), labels
    labels = [w.description for w in _walk(explorer_en) if isinstance(w, W.IntSlider)]
    labels += [o for w in _walk(explorer_en) if isinstance(w, W.ToggleButtons) for o in w.options]
    assert labels and not any(has_hangul(t) for t in labels), labels


def test_every_picture_says_what_it_shows_in_the_language_asked(explorer_en):
    """Each picture's <img> has an alt text (a screen reader's only way to the picture): the
    method, and for a block the statistic filled and how many elements share it (counted here from
    the leaf's mask); in Korean on a Korean page."""
    import base64
    import re

    ko = widgets.static_explorer("ko", layouts=("image", "table"))
    for lang, explorer in (("en", explorer_en), ("ko", ko)):
        for leaf in explorer.leaves:
            alt = leaf.image.alt
            img = re.fullmatch(r'<img src="data:image/png;base64,([^"]+)" alt="([^"]+)" [^<>]*>', leaf.image.value)
            assert img and base64.b64decode(img.group(1)) == leaf.image.png, leaf.path
            assert img.group(2) == alt.replace("&", "&amp;").replace('"', "&quot;"), leaf.path
            assert leaf.path[1] == "batch_dim0" or widgets.METHOD_NAMES[leaf.path[1]] in alt, (leaf.path, alt)
            assert has_hangul(alt) == (lang == "ko"), (leaf.path, alt)
            if leaf.highlighted is not None:
                which, count = leaf.path[-1], int(leaf.highlighted.sum())
                said = f"통계 {which}번을 공유하는 원소 {count}개" if lang == "ko" else f"{count} filled elements share statistic {which}"
                assert said in alt, (leaf.path, alt)
        selectors = [w for w in _walk(explorer) if isinstance(w, W.ToggleButtons)]
        assert selectors and all(w.description and has_hangul(w.description) == (lang == "ko") for w in selectors)


def _walk(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _walk(child)


@pytest.mark.parametrize("kwargs,needle", [
    ({"lang": "ja"}, "lang must be one of"),
    ({"lang": "en", "layouts": ("cube",)}, "layouts must be"),
    ({"lang": "en", "layouts": ()}, "layouts must be"),
    ({"lang": "en", "layouts": ("table", "table")}, "must not repeat"),
])
def test_static_explorer_rejects_bad_input_clearly(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        widgets.static_explorer(**kwargs)


# -- the live explorer -------------------------------------------------------------------------------
@pytest.fixture
def live():
    return widgets.live_explorer("en")


def test_live_redraws_and_reports_what_normlib_computes(live):
    before = live.image.png
    live.method.value = "layer"
    assert live.image.png[:8] == b"\x89PNG\r\n\x1a\n" and live.image.png != before
    assert "LayerNorm" in live.image.alt and f'alt="{live.image.alt}"' in live.image.value
    live.eps.value = 1.0
    live.offset.value = 3.0
    x = live.input()
    sample = x[0]
    var = float(sample.var(unbiased=False))
    # LayerNorm of one sample: mean 0, variance var / (var + eps), computed here from the definition
    assert f"{var / (var + 1.0):.4f}" in live.status.value
    assert f"{float(sample.mean()):+.4f}" in live.status.value


def test_live_rmsnorm_keeps_the_offset_layernorm_removes_it(live):
    live.offset.value = 5.0
    live.method.value = "rms"
    x = live.input()[0]
    rms_mean = float((x / x.square().mean().add(live.eps.value).sqrt()).mean())
    assert rms_mean > 0.9 and f"{rms_mean:+.4f}" in live.status.value


def test_live_group_choices_follow_the_channels(live):
    live.method.value = "group"
    live.c.value = 4
    assert tuple(live.g.options) == (1, 2, 4)
    live.c.value = 9
    assert tuple(live.g.options) == (1, 3, 9)
    assert live.g.value in live.g.options
    share = viz.block_sharing((live.n.value, 9, live.hw.value, 1), "group", num_groups=live.g.value)
    assert live.which.max == share.num_statistics - 1


def test_live_which_is_clamped_and_redrawn(live):
    live.method.value = "instance"
    live.which.value = 11
    live.method.value = "layer"  # 2 statistics
    assert live.which.max == 1 and live.which.value == 1
    assert "statistic 1" in live.status.value


def test_live_says_what_cannot_be_normalized(live):
    live.n.value, live.hw.value = 1, 1
    live.method.value = "batch"
    assert "cannot normalize" in live.status.value and "more than 1 value per channel" in live.status.value
    live.n.value = 2  # recovers
    assert "cannot normalize" not in live.status.value


def test_live_in_korean():
    viz.setup("ko")   # the Korean font, whichever test ran before (pytest -n 2 splits the order)
    ko = widgets.live_explorer("ko")
    assert has_hangul(ko.status.value) and has_hangul(ko.which.description)


def test_pictures_are_shown_at_their_own_pixel_width():
    """A picture stretched beyond its pixels blurs its text (the live explorer was shown at 2.5×)."""
    import io

    import PIL.Image

    live = widgets.live_explorer("en")
    static = widgets.static_explorer("en", layouts=("table",))
    for picture in (live.image, static.leaves[0].image):
        width, height = PIL.Image.open(io.BytesIO(picture.png)).size
        assert f'width="{width}" height="{height}" style="max-width: 100%; height: auto;"' in picture.value
        assert picture.layout.max_width == "100%" and picture.layout.width is None


def test_the_pictures_of_an_explorer_share_one_layout_and_style():
    """Each widget stores its layout and style models in the page: shared, not one per picture."""
    static = widgets.static_explorer("en", layouts=("table", "sequence"))
    assert len({id(leaf.image.layout) for leaf in static.leaves}) == 1
    assert len({id(leaf.image.style) for leaf in static.leaves}) == 1
