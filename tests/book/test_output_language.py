"""Each page prints in its own language.

* A Korean notebook prints no English: its stream outputs, the text/plain results a reader sees
  (not the text/plain stand-in of a figure or a widget), error messages, the text of text/html
  outputs and the labels of its widgets hold no English word outside ENGLISH_ALLOWED, code and
  PyTorch's own error messages (TORCH_MESSAGES).
* An English notebook holds no Hangul anywhere: markdown, code, outputs, cell metadata (figure
  captions, alt text) and notebook metadata (the stored widget state holds the widgets' labels),
  except the link to the Korean edition in the first cell.

That no ``#ko:``/``#en:`` marker survives in a notebook's code is checked, for every notebook of
both languages, by test_chapter_sources.py::test_no_notebook_shows_a_language_marker.

What counts as an English word
------------------------------
The text is cut into tokens that keep code whole (``x_hat``, ``nn.LayerNorm``, ``F.layer_norm``,
``torch.float64``, ``float32``). A token is an English word when it is only ASCII letters, at
least two of them, and is none of these:

* code: a call with its arguments (``sqrt(var + eps)``, ``isinstance(layer, normlib.LayerNorm)``),
  followed by ``(`` or ``[`` (``tensor(``, ``E[``), after a ``.`` (``.std()``),
  a keyword or an assignment (``momentum=0.1``, ``mean= 2.00``, ``mode=train``), part of a
  formula (``u*offset^2``, ``FLOP/byte``), camelCase or PascalCase (``LayerNorm``, ``DyT``,
  ``RMSNorm``, ``ValueError``), all capitals (``RMS``, ``GPU``, ``MB``, ``FLOP``), inside
  backticks or in a fenced code block of a Markdown output (chapter 12's C++), a quoted literal
  without spaces (``['weight', 'bias']``), or ``is``/``in``/``not``/``and``/``or`` between two
  pieces of code (``model[1].weight is weight_before``);
* ``True``, ``False``, ``None``;
* ``max``/``min`` before ``|…|`` (the math notation ``max |dx - autograd|``);
* a word of ENGLISH_ALLOWED (below, each with its reason).

A failure lists, per cell, the offending words and the line they are on, so a writer can fix them.
"""

from __future__ import annotations

import html
import re
import warnings
from pathlib import Path
from unittest import mock

import nbformat
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from helpers.paths import ROOT
from helpers.text import has_hangul

KO, EN = ROOT / "chapters" / "ko", ROOT / "chapters" / "en"
KO_NOTEBOOKS = sorted(KO.glob("*.ipynb"))
EN_NOTEBOOKS = sorted(EN.glob("*.ipynb"))
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


# --- The words a Korean page may print ----------------------------------------------------------

PYTHON_LITERALS = {"True", "False", "None"}

# Compared in lower case. Keep this short: a word belongs here only if it is a name, a unit or a
# math symbol the Korean pages print, never an English label a writer should translate ("mean",
# "sum", "values", "input"). Arguments with their values (momentum=0.1, affine=True) and dotted
# names (nn.LayerNorm) are code by the rules of is_english and need no entry.
ENGLISH_ALLOWED = {
    # units (MB, GB, GB/s, GFLOP/s are all capitals or formulas; µs and s need no entry)
    "ms": "milliseconds: '1.21 ms'",
    "ns": "nanoseconds: '2.68 ns' (chapter 8's statistics loop)",
    # math symbols, spelled out in printed formulas
    "eps": "ε, the layers' eps argument: 'eps 1e-06: …', 'sqrt(var + eps)'",
    "var": "Var(x) in printed formulas: 'sqrt(var + eps)', 'merged var'",
    "rms": "RMS(x), the quantity RMSNorm divides by: '제곱평균 9.6667  rms 3.1091'",
    "ln": "natural logarithm: 'ln 2 = 0.6931'",
    "mu": "μ: 'mu = 3.0000'", "sigma": "σ", "gamma": "γ", "beta": "β",
    "dx": "the gradient ∂L/∂x, as the code and formulas name it: 'max |dx - autograd|'",
    "dy": "the upstream gradient ∂L/∂y, as the code names it: 'sum dy*x_hat'",
    "dgamma": "the gradient ∂L/∂γ, as the code names it: 'max |dgamma ours - torch|'",
    "dbeta": "the gradient ∂L/∂β, as the code names it",
    # names of packages, APIs, arguments and parameters, printed as such
    "torch": "the package: 'torch 2.13.0+cpu', 'torch의 state_dict'",
    "normlib": "this book's package: 'normlib과 torch의 최대 절대 차이'",
    "cpu": "the local version tag of torch's version: '2.13.0+cpu'",
    "autograd": "torch.autograd, named as the reference gradient: 'torch autograd [...]'",
    "gradcheck": "torch.autograd.gradcheck, named with its result: 'gradcheck True'",
    "gradgradcheck": "torch.autograd.gradgradcheck, named with its result",
    "dim": "torch's argument for an axis: the widget label '실수: dim 0만'",
    "weight": "the layers' parameter (module.weight): 'weight (5,)' next to its shape",
    "bias": "the layers' parameter (module.bias): \"['weight'] (bias 없음)\"",
    "welford": "Welford's algorithm, and normlib.stats.welford in a table's header",
    "triton": "Triton, the GPU kernel language and its package, named as such (chapter 12)",
    "processor": "part of the benchmark machine's CPU name: 'Intel(R) Xeon(R) Processor'",
    "vs": "'versus', written so in Korean too: 'G = 1 vs LayerNorm'",
}


def _sync_batch_norm_on_cpu():
    # what the distributed chapter's workers print: SyncBatchNorm inside a process group, on CPU
    with mock.patch("torch.distributed.is_initialized", return_value=True):
        nn.SyncBatchNorm(3)(torch.randn(4, 3))


def _instance_norm_count_warning():
    # chapter 6's pitfall prints the warning nn.InstanceNorm1d(C) gives on an (N, C) input
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.InstanceNorm1d(3)(torch.randn(4, 3))


# PyTorch's own exception messages, which the chapters print verbatim to compare normlib's with
# them (normlib's messages begin with torch's text, then explain in Korean). A writer cannot
# translate them. test_torch_messages_are_torchs_own checks each against what torch raises.
TORCH_MESSAGES = {
    r"Expected more than 1 value per channel when training, got input size torch\.Size\(\[[\d, ]*\]\)":
        lambda: F.batch_norm(torch.randn(1, 3), None, None, training=True),
    r"Expected more than 1 spatial element when training, got input size torch\.Size\(\[[\d, ]*\]\)":
        lambda: F.instance_norm(torch.randn(4, 3)),
    r"Given normalized_shape=\[[\d, ]*\], expected input with shape \[\*[\d, ]*\], but got input of size ?\[[\d, ]*\]":
        lambda: F.layer_norm(torch.randn(2, 3, 4, 5), (4, 4)),
    r"running_mean should contain \d+ elements not \d+":
        lambda: nn.BatchNorm1d(8)(torch.randn(4, 16, 8)),
    r"SyncBatchNorm expected input tensor to be on GPU or XPU or privateuseone":
        _sync_batch_norm_on_cpu,
    r"input's size at dim=0 does not match num_features\. You can silence this warning by not passing in "
    r"num_features, which is not used because affine=False":
        _instance_norm_count_warning,
    r"expected input's size at dim=0 to match num_features \(\d+\), but got: \d+\.":
        lambda: nn.InstanceNorm1d(3, affine=True)(torch.randn(4, 3)),
}

# torch's repr of a parameter begins with this line.
REPR_PHRASES = [r"Parameter containing:"]

ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
FENCED = re.compile(r"^```[^\n]*\n.*?^```[ \t]*$", re.MULTILINE | re.DOTALL)   # a fenced code block in Markdown
MASKS = [re.compile(p) for p in (*TORCH_MESSAGES, *REPR_PHRASES)] + [
    re.compile(r"`[^`\n]*`"),               # inline code
    re.compile(r"'[^'\s]+'|\"[^\"\s]+\""),  # quoted literals: ['weight', 'bias'], ('all_gather', 7)
]
TOKEN = re.compile(r"[A-Za-z0-9_µ]+(?:\.[A-Za-z0-9_µ]+)*")   # keeps nn.LayerNorm, F.layer_norm, x_hat whole
WORD = re.compile(r"[A-Za-z]{2,}")
CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]")
FORMULA = set("*^/=")
CALL = re.compile(r"[A-Za-z_][\w.]*\([^()\n]*\)")      # an innermost call: name(args)
PYTHON_OPERATORS = {"is", "in", "not", "and", "or"}


def is_english(token: str, before: str, after: str, rest: str) -> bool:
    """``token`` (a TOKEN), with the character before it, the one after it and the text after it."""
    if not WORD.fullmatch(token):
        return False                 # a number, a single letter, or code (x_hat, nn.LayerNorm, float32)
    if after in ("(", "[") or before == ".":
        return False                 # a call, an index, an attribute
    if after == "=" and not rest.startswith("=="):
        return False                 # a keyword argument or an assignment
    if before in FORMULA or after in FORMULA:
        return False                 # part of a formula: u*offset^2, FLOP/byte
    if CAMEL.search(token) or token.isupper():
        return False                 # LayerNorm, DyT, ValueError; RMS, GPU, MB
    if token in PYTHON_LITERALS or token.lower() in ENGLISH_ALLOWED:
        return False
    if token in ("max", "min") and rest.lstrip().startswith("|"):
        return False                 # max |x|
    return True


def english_words(line: str) -> list[str]:
    """The English words of one printed line (ANSI codes already stripped)."""
    for mask in MASKS:
        line = mask.sub(" ", line)
    while True:   # a call is code, arguments and all: isinstance(layer, normlib.LayerNorm), sqrt(var + eps)
        line, calls = CALL.subn("_call_", line)
        if not calls:
            break
    tokens = list(TOKEN.finditer(line))
    english = [is_english(m.group(), line[m.start() - 1] if m.start() else "", line[m.end():m.end() + 1],
                          line[m.end():]) for m in tokens]
    words = []
    for k, m in enumerate(tokens):
        if not english[k]:
            continue
        if m.group() in PYTHON_OPERATORS and 0 < k < len(tokens) - 1:
            # `a is b`, `x in y` between two pieces of code: model[1].weight is weight_before
            left, right = tokens[k - 1], tokens[k + 1]
            if (not english[k - 1] and not english[k + 1] and not line[left.end():m.start()].strip(" ])")
                    and not line[m.end():right.start()].strip()
                    and all(re.search(r"[A-Za-z]", t.group()) for t in (left, right))):
                continue
        words.append(m.group())
    return words


# --- What a reader sees ----------------------------------------------------------------------------

def html_text(markup: str) -> str:
    markup = re.sub(r"(?is)<(script|style)\b.*?</\1\s*>", " ", markup)
    return html.unescape(re.sub(r"<[^>]+>", " ", markup))


def shown_outputs(cell) -> list[tuple[str, str]]:
    """(what, text) for each output of a code cell as a reader sees it. Consecutive chunks of one
    stream are joined; a figure's or a widget's text/plain stand-in is not shown, so not checked."""
    shown: list[tuple[str, str]] = []
    previous = None
    for k, o in enumerate(cell.get("outputs", [])):
        if o.get("output_type") == "stream":
            if previous == o.get("name"):
                shown[-1] = (shown[-1][0], shown[-1][1] + o.get("text", ""))
            else:
                shown.append((f"output {k} ({o.get('name')})", o.get("text", "")))
            previous = o.get("name")
            continue
        previous = None
        if o.get("output_type") == "error":
            shown.append((f"output {k} (error {o.get('ename')})", o.get("evalue", "")))
            continue
        data = o.get("data", {})
        if "text/html" in data:
            shown.append((f"output {k} (text/html)", html_text(data["text/html"])))
        elif any(m.startswith("image/") for m in data) or WIDGET_VIEW in data:
            continue
        elif "text/markdown" in data:
            # a fenced block is a listing of code (chapter 12's C++), as inline code in backticks is
            shown.append((f"output {k} (text/markdown)", FENCED.sub(" ", data["text/markdown"])))
        elif "text/plain" in data:
            shown.append((f"output {k} (text/plain)", data["text/plain"]))
    return [(what, ANSI.sub("", text)) for what, text in shown]


WIDGET_TEXT = ("description", "_options_labels", "tooltip", "tooltips", "placeholder")
WIDGET_VALUE = {"LabelModel", "HTMLModel", "HTMLMathModel", "TextModel", "TextareaModel"}


def widget_labels(nb) -> list[tuple[str, str]]:
    """(what, text) for the labels and texts of the widgets stored in the notebook's metadata."""
    state = nb.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    labels = []
    for model_id, model in state.items():
        name, fields = model.get("model_name", "?"), model.get("state", {})
        for key in WIDGET_TEXT + (("value",) if name in WIDGET_VALUE else ()):
            value = fields.get(key)
            for text in value if isinstance(value, list) else [value]:
                if isinstance(text, str) and text.strip():
                    labels.append((f"widget {name} {model_id[:8]} {key}", html_text(text) if "HTML" in name else text))
    return labels


def _where(index: int, cell) -> str:
    count = cell.get("execution_count")
    return f"cell {index}" + (f" [In {count}]" if count is not None else "")


def english_in_outputs(nb) -> list[str]:
    """One entry per printed line with English words: where, the words, and the line."""
    found = []
    sources = [(_where(i, c), what, text) for i, c in enumerate(nb.cells) if c.get("cell_type") == "code"
               for what, text in shown_outputs(c)]
    sources += [("metadata", what, text) for what, text in widget_labels(nb)]
    for where, what, text in sources:
        for line in text.splitlines():
            words = english_words(line)
            if words:
                found.append(f"{where} {what}: {', '.join(dict.fromkeys(words))}\n      {line.strip()[:240]}")
    return found


# The English page links to the Korean edition in the Korean edition's language.
KOREAN_EDITION_LINK = re.compile(r"\[[^\]\n]*\]\(\.\./ko/[^)\s]+\.ipynb\)")


def _strings(obj, path: str):
    if isinstance(obj, str):
        yield path, obj
    elif isinstance(obj, dict):
        for key, value in obj.items():
            yield from _strings(value, f"{path}.{key}" if path else str(key))
    elif isinstance(obj, list):
        for k, value in enumerate(obj):
            yield from _strings(value, f"{path}[{k}]")


def hangul_anywhere(nb) -> list[str]:
    """One entry per line with Hangul, anywhere in the notebook: cells (source, outputs, metadata)
    and the notebook's metadata (the stored widget state)."""
    found = []
    for index, cell in enumerate(nb.cells):
        for path, text in _strings(dict(cell), ""):
            if path == "source" and cell.get("cell_type") == "markdown":
                text = KOREAN_EDITION_LINK.sub(" ", text)
            found += [f"{_where(index, cell)} {path}: {line.strip()[:240]}" for line in text.splitlines() if has_hangul(line)]
    for path, text in _strings(dict(nb.get("metadata", {})), "metadata"):
        found += [f"{path}: {line.strip()[:240]}" for line in text.splitlines() if has_hangul(line)]
    return found


def _report(path: Path, problems: list[str], what: str) -> str:
    return (f"chapters/{path.parent.name}/{path.name}: {what} in {len(problems)} place(s):\n  "
            + "\n  ".join(problems))


# --- The tests -------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", KO_NOTEBOOKS, ids=lambda p: f"ko/{p.name}")
def test_korean_notebook_prints_no_english(path):
    problems = english_in_outputs(nbformat.read(path, as_version=4))
    assert not problems, _report(path, problems, "English words printed")


@pytest.mark.parametrize("path", EN_NOTEBOOKS, ids=lambda p: f"en/{p.name}")
def test_english_notebook_holds_no_hangul(path):
    problems = hangul_anywhere(nbformat.read(path, as_version=4))
    assert not problems, _report(path, problems, "Hangul")


def test_there_are_notebooks_to_check():
    assert KO_NOTEBOOKS and [p.name for p in KO_NOTEBOOKS] == [p.name for p in EN_NOTEBOOKS]


@pytest.mark.parametrize("pattern", list(TORCH_MESSAGES), ids=["bn-one-value", "in-one-element", "ln-shape", "bn-running-mean", "syncbn-cpu",
                                                           "in-num-features-warning", "in-num-features-affine"])
def test_torch_messages_are_torchs_own(pattern):
    """An exemption of TORCH_MESSAGES is text torch raises today, not a label of the book."""
    with pytest.raises(Exception) as info:
        TORCH_MESSAGES[pattern]()
    assert re.fullmatch(pattern, str(info.value)), f"torch now says {str(info.value)!r}"


# --- The checkers can fail -------------------------------------------------------------------------

def _notebook(outputs, markdown="# 제목", cell_metadata=None, metadata=None):
    return nbformat.from_dict({
        "nbformat": 4, "nbformat_minor": 5, "metadata": metadata or {},
        "cells": [
            {"cell_type": "markdown", "id": "m", "metadata": {}, "source": markdown},
            {"cell_type": "code", "id": "c", "metadata": cell_metadata or {}, "execution_count": 1,
             "source": "print(x)", "outputs": outputs},
        ],
    })


def _stream(text):
    return {"output_type": "stream", "name": "stdout", "text": text}


def test_an_english_label_in_a_korean_output_is_reported():
    nb = _notebook([
        _stream("최대 절대 차이 < 1e-5\n\x1b[1mmean loss\x1b[0m 0.693, 정확도 0.658\n"),
        {"output_type": "execute_result", "execution_count": 1, "metadata": {},
         "data": {"text/plain": "values: [1.0, 2.0]"}},
        {"output_type": "display_data", "metadata": {}, "data": {"text/html": "<b>rows</b> 4개"}},
        {"output_type": "error", "ename": "ValueError", "evalue": "입력 sample이 비었습니다", "traceback": []},
    ], metadata={"widgets": {WIDGET_STATE: {"state": {"abc123456": {
        "model_name": "IntSliderModel", "state": {"description": "input size"}}}}}})
    problems = english_in_outputs(nb)
    assert len(problems) == 5, problems
    assert problems[0].startswith("cell 1 [In 1] output 0 (stdout): mean, loss\n")
    assert "mean loss 0.693" in problems[0]            # the line, ANSI codes stripped
    for words in ("values", "rows", "sample", "input, size"):
        assert any(f": {words}\n" in p for p in problems), (words, problems)
    # torch's message is exempt, the book's own label in front of it is not
    assert english_words("mismatch -> Given normalized_shape=[4, 4], expected input with shape "
                         "[*, 4, 4], but got input of size[2, 3, 4, 5]") == ["mismatch"]
    assert english_words("train 모드: 출력이 0.181만큼 다릅니다") == ["train"]
    assert english_words("x_hat is the mean, 평균(mean)") == ["is", "the", "mean", "mean"]


def test_code_units_and_names_in_a_korean_output_pass():
    nb = _notebook([
        _stream("nn.LayerNorm과 F.layer_norm의 최대 절대 차이 < 1e-5 | x_hat: tensor([1., 2.], dtype=torch.float64)\n"
                "LayerNorm RMSNorm BatchNorm1d InstanceNorm2d GroupNorm SyncBatchNorm DyT: 12.5 ms 3.2 GB/s 100 GFLOP/s 5 µs\n"
                "float32 bfloat16 True False None | eps 1e-05 momentum=0.1 affine=True | sqrt(var + eps) = 44.7\n"
                "키: ['weight', 'bias', 'running_mean'] | `make bench` | max |dx - autograd| < 1e-10 | u*offset^2\n"
                "normlib -> Expected more than 1 value per channel when training, got input size torch.Size([1, 3]): 배치를 키우세요\n"
                "isinstance(layer, normlib.LayerNorm): True | model[1].weight is weight_before: True\n"),
        {"output_type": "execute_result", "execution_count": 1, "metadata": {},
         "data": {"text/plain": "Parameter containing:\ntensor([1., 1.], requires_grad=True)"}},
        # a figure: its text/plain stand-in is not what the reader sees
        {"output_type": "display_data", "metadata": {},
         "data": {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure size 640x480 with 1 Axes>"}},
    ])
    assert english_in_outputs(nb) == []


def test_a_code_listing_in_a_markdown_output_is_code_and_the_words_around_it_are_not():
    listing = "```cpp\nfor (int64_t i = 0; i < d; ++i) s += row[i];\nreturn sum of squares;\n```"
    nb = _notebook([{"output_type": "display_data", "metadata": {}, "data": {"text/markdown": listing}}])
    assert english_in_outputs(nb) == []
    nb = _notebook([{"output_type": "display_data", "metadata": {},
                     "data": {"text/markdown": "row sums:\n" + listing + "\nthe serial loop"}}])
    problems = english_in_outputs(nb)
    assert len(problems) == 2 and ": row, sums\n" in problems[0] and ": the, serial, loop\n" in problems[1], problems


def test_hangul_in_an_english_notebook_is_reported():
    link = "[한국어판 →](../ko/01_why_normalize.ipynb)"
    clean = _notebook([_stream("mean 5.0\n")], markdown=f"{link}\n\n# Title",
                      cell_metadata={"mystnb": {"figure": {"caption": "Loss per step"}}})
    assert hangul_anywhere(clean) == []
    nb = _notebook([_stream("mean 5.0\n평균 5.0\n")], markdown=f"{link}\n\n# 제목",
                   cell_metadata={"mystnb": {"image": {"alt": "손실 곡선"}}},
                   metadata={"widgets": {WIDGET_STATE: {"state": {"abc": {"state": {"description": "칠할 통계 번호"}}}}}})
    problems = hangul_anywhere(nb)
    assert problems == [
        "cell 0 source: # 제목",
        "cell 1 [In 1] metadata.mystnb.image.alt: 손실 곡선",
        "cell 1 [In 1] outputs[0].text: 평균 5.0",
        f"metadata.widgets.{WIDGET_STATE}.state.abc.state.description: 칠할 통계 번호",
    ], problems
