"""Assignment 4 (axes and GroupNorm): which axes each method reduces, GroupNorm's channel groups,
then GroupNorm itself. The right axes come from :mod:`normlib.axes`.
"""

from __future__ import annotations

from typing import Callable, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor

from normlib.axes import METHODS, _fmt, sharing
from normlib_book.instruments import sequence_sharing

from ._report import _case, _input, _name, _params, _passed, _Report, _start
from ._slips import _channel_affine, _check_normalized, _Norm, _Pool

# The layouts of chapter 6, with the sizes used to ask normlib.axes for the answer.
LAYOUTS = {"NC": (4, 6), "NCL": (4, 6, 5), "NCHW": (4, 6, 5, 3), "BLD": (4, 5, 6)}
LAYOUT_NAMES = {"NC": "(N, C)", "NCL": "(N, C, L)", "NCHW": "(N, C, H, W)", "BLD": "(B, L, D)"}
AXES_CASES = tuple((m, layout) for layout in LAYOUTS for m in METHODS
                   if not (m == "instance" and layout in ("NC", "BLD")) and not (m == "group" and layout == "BLD"))
AXES_INVALID = (("instance", "NC"), ("instance", "BLD"), ("group", "BLD"))


def _expected_axes(method: str, layout: str) -> Optional[Tuple[int, ...]]:
    """The reduction axes from normlib.axes (tested against what torch pools); None = no meaning."""
    if (method, layout) in AXES_INVALID:
        return None
    shape = LAYOUTS[layout]
    if layout == "BLD":
        return sequence_sharing(method, shape).axes
    if method in ("layer", "rms"):
        return sharing(method, shape, normalized_shape=shape[1:]).axes
    return sharing(method, shape, num_groups=2 if method == "group" else None).axes


def _as_axes(answer, ndim: int) -> Optional[Tuple[int, ...]]:
    """A sequence of ints, in any order, negative allowed → sorted non-negative tuple; else None."""
    try:
        items = list(answer)
    except TypeError:
        return None
    if not all(isinstance(a, int) and not isinstance(a, bool) and -ndim <= a < ndim for a in items):
        return None
    return tuple(sorted(a % ndim for a in items))


def check_axes(fn: Callable, lang: str = "en", *, cases=AXES_CASES) -> None:
    """Check ``fn(method, layout) -> axes`` for methods ``batch``, ``layer``, ``instance``,
    ``group``, ``rms`` and layouts ``"NC"``, ``"NCL"``, ``"NCHW"``, ``"BLD"``: the axes one
    statistic pools (``layer``/``rms``: one statistic per sample, or per token for ``BLD``;
    ``group``: the channel axis within a group and the spatial axes). A combination without
    meaning (:data:`AXES_INVALID`) must raise ``ValueError``. Any order and negative axes are
    accepted. The answers come from :mod:`normlib.axes`.

    >>> def reduction_axes(method, layout):
    ...     return {("batch", "BLD"): (0,), ("layer", "BLD"): (2,)}[method, layout]    # (0,): the dim=0 slip
    >>> try:
    ...     check_axes(reduction_axes, "en", cases=[("batch", "BLD"), ("layer", "BLD")])
    ... except AssertionError as failure:
    ...     print(failure.diagnoses)
    ('dim0',)
    """
    _start(lang, fn)
    name = _name(fn, "reduction_axes")
    report = _Report(lang, name, ", ".join(sorted({LAYOUT_NAMES[layout] for _, layout in cases})), "ex:sec:06_frame")
    wrong = 0
    sections = {"batch": ("batch_spatial", "ex:sec:03_axes"), "layer": ("layer_sample", "ex:sec:04_sequences"),
                "rms": ("layer_sample", "ex:sec:04_sequences"), "instance": ("instance_spatial", "ex:sec:06_frame"),
                "group": ("group_axes", "ex:sec:06_group")}
    for method, layout in cases:
        expected = _expected_axes(method, layout)
        where = dict(method=repr(method), layout=f"{layout!r} {LAYOUT_NAMES[layout]}")   # the student's own strings
        with report.guarded():
            try:
                answer = fn(method, layout)
            except ValueError as error:
                if expected is None:
                    continue
                report.add("ex:axes_raised", expected=_fmt(expected), error=f"ValueError: {error}", **where)
                wrong += 1
                continue
            except NotImplementedError as error:
                report.add("ex:not_implemented")
                report.fail(error)
            except Exception as error:   # noqa: BLE001
                report.add("ex:axes_raised", expected=_fmt(expected) if expected else "ValueError",
                           error=f"{type(error).__name__}: {error}", **where)
                wrong += 1
                continue
        if expected is None:
            report.add("ex:axes_should_raise", got=repr(answer), **where)
            report.diagnoses.append("should_raise")
            wrong += 1
            continue
        got = _as_axes(answer, len(LAYOUTS[layout]))
        if got == expected:
            continue
        wrong += 1
        report.add("ex:axes_wrong", got=repr(answer), expected=_fmt(expected), **where)
        if method == "batch" and layout == "BLD" and got == (0,):
            report.diagnose("dim0", "ex:diag:dim0", "ex:sec:03_dim0")
        elif sections[method][0] not in report.diagnoses:
            slip, section = sections[method]
            report.diagnose(slip, f"ex:diag:{slip}", section)
    if wrong:
        report.lines.insert(0, report.t("ex:axes_title", count=wrong, total=len(cases)))
        report.fail()
    _passed(lang, name, len(cases))


def check_channel_groups(fn: Callable, lang: str = "en", *, cases=((6, 2), (6, 3), (4, 4), (8, 1))) -> None:
    """Check ``fn(num_channels, num_groups)`` → the channel indices of each group, in order:
    consecutive channels, as ``torch.nn.GroupNorm`` groups them (``(6, 2)`` → ``[(0, 1, 2), (3, 4, 5)]``).
    A case whose channels do not split evenly must raise ``ValueError``.

    >>> check_channel_groups(lambda c, g: [range(i * c // g, (i + 1) * c // g) for i in range(g)], "en")
    passed: <lambda> (4 checks)
    """
    _start(lang, fn)
    name = _name(fn, "channel_groups")
    for channels, groups in cases:
        report = _Report(lang, name, f"num_channels={channels}, num_groups={groups}", "ex:sec:06_group")
        where = dict(channels=channels, groups=groups)
        if channels % groups:
            with report.guarded():
                try:
                    answer = fn(channels, groups)
                except ValueError:
                    continue
                except Exception as error:   # noqa: BLE001
                    answer = f"{type(error).__name__}: {error}"
            report.add("ex:groups_should_raise", got=repr(answer) if not isinstance(answer, str) else answer, **where)
            report.diagnoses.append("should_raise")
            report.fail()
        size = channels // groups
        expected = [tuple(range(g * size, (g + 1) * size)) for g in range(groups)]
        answer = report.call(fn, channels, groups)
        try:
            got = [tuple(int(c) for c in group) for group in answer]
        except (TypeError, ValueError):
            got = None
        if got == expected:
            continue
        report.add("ex:groups_wrong", got=repr(got if got is not None else answer), expected=repr(expected), **where)
        if got == [tuple(range(g, channels, groups)) for g in range(groups)]:
            report.diagnose("interleaved", "ex:diag:interleaved", "ex:sec:06_group")
        report.fail()
    _passed(lang, name, len(cases))


def _group_spec(x: Tensor, groups: int, eps: float) -> _Norm:
    """GroupNorm's pooling, and the other poolings a slip gives, each described in words."""
    n, c, *spatial = x.shape
    space = tuple(range(3, 3 + len(spatial)))
    grouped = (n, groups, c // groups, *spatial)
    candidates = [
        _Pool((2, *space), grouped, "ex:pool:group"),
        _Pool(tuple(range(2, x.dim())), None, "ex:pool:instance"),
        _Pool(tuple(range(1, x.dim())), None, "ex:pool:layer"),
        _Pool((0, *range(2, x.dim())), None, "ex:pool:batch"),
        _Pool((1, *space), (n, c // groups, groups, *spatial), "ex:pool:interleaved"),
        _Pool((0, 2, *space), grouped, "ex:pool:group_batch"),
        _Pool((2,), grouped, "ex:pool:group_channels_only") if spatial else None,
    ]
    right, *others = [p for p in candidates if p is not None and p.dims]
    return _Norm(pool=right, others=others, eps=eps, affine=_channel_affine, group="ex:group:sample_group",
                 formula="ex:sec:06_group", pooling_section="ex:sec:06_group")


GROUP_CASES = (((4, 6, 5), 3), ((2, 6, 3, 4), 2), ((5, 4), 2))


def check_group_norm(fn: Callable, lang: str = "en", *, cases=GROUP_CASES, eps: float = 0.01, seed: int = 0) -> None:
    """Check ``fn(x, num_groups, weight, bias, eps)`` against ``torch.nn.functional.group_norm``
    on ``(N, C, *)`` inputs, with random γ, β (one per channel) and without.

    >>> def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5):
    ...     g = x.reshape(x.shape[0], num_groups, -1)
    ...     x_hat = (g - g.mean(-1, keepdim=True)) / torch.sqrt(g.var(-1, unbiased=False, keepdim=True) + eps)
    ...     view = (1, -1) + (1,) * (x.dim() - 2)
    ...     y = x_hat.reshape(x.shape)
    ...     return y if weight is None else y * weight.reshape(view) + bias.reshape(view)
    >>> check_group_norm(group_norm, "en")
    passed: group_norm (6 checks)
    """
    gen = _start(lang, fn, seed)
    name = _name(fn, "group_norm")
    for shape, groups in cases:
        x = _input(shape, gen, torch.float64)
        for affine in (True, False):
            weight, bias = _params((shape[1],), gen, torch.float64) if affine else (None, None)
            report = _Report(lang, name, _case(lang, shape, affine, num_groups=groups, eps=eps), "ex:sec:06_group")
            got = report.call(fn, x.clone(), groups, weight, bias, eps)
            expected = F.group_norm(x, groups, weight, bias, eps)
            spec = _group_spec(x, groups, eps)
            _check_normalized(report, got, expected, x, spec, weight, bias)
    _passed(lang, name, 2 * len(cases))
