"""The block drawings (normlib_book.viz, the chapters' figures): every filled cell is an element
that torch really pools with the others (checked with torch's own gradients, not with
normlib.axes). The explorer that computes in the browser is test_explorer.py's."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as TF  # noqa: E402

from helpers.text import has_hangul  # noqa: E402
from normlib_book import instruments, viz  # noqa: E402


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
CASES += [("sequence", shape, m, None) for shape in [(2, 4, 3), (3, 2, 5)] for m in instruments.SEQUENCE_METHODS]


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
        assert torch.equal(filled, instruments.mask(share, first))
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
