"""normlib explains its errors in English or Korean: every message is written in both where it is
raised, `import normlib` speaks English, and Korean selected, every error torch would raise comes
with torch's words first and a Korean explanation (with the shapes and names it must hold)."""

from __future__ import annotations

import ast
import re

import pytest
import torch.nn.functional as TF

import normlib
import normlib.functional as NF
from helpers.library_cases import CASES, MODULE_CASES, raised, raised_in_english_and_korean, x24
from helpers.paths import ROOT
from helpers.text import has_hangul

CORE = sorted((ROOT / "normlib").glob("*.py"))


def _is_say(node) -> bool:
    return isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "say"


def _message_calls(tree):
    """Every raise of a new exception and every warnings.warn, with its message arguments."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
            yield node.lineno, node.exc.args
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "warn":
            yield node.lineno, node.args[:1]


def test_every_message_of_the_library_is_written_in_both_languages():
    problems, seen = [], 0
    for path in CORE:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for line, args in _message_calls(tree):
            seen += 1
            if not any(_is_say(n) for a in args for n in ast.walk(a)):
                problems.append(f"{path.name}:{line} raises a message not written with say(en=..., ko=...)")
        for node in ast.walk(tree):
            if _is_say(node):
                texts = {k.arg: " ".join(c.value for c in ast.walk(k.value) if isinstance(c, ast.Constant)
                                         and isinstance(c.value, str)) for k in node.keywords}
                if set(texts) != {"en", "ko"} or not has_hangul(texts["ko"]) or has_hangul(texts["en"]):
                    problems.append(f"{path.name}:{node.lineno} say() needs English en= and Korean ko=")
    assert seen > 30, f"found only {seen} messages in normlib's modules"
    assert not problems, "\n".join(problems)


def test_the_check_sees_a_message_in_one_language():
    tree = ast.parse("raise ValueError(f'bad {x}')\nraise ValueError(say(en='bad', ko='나쁨'))\n")
    calls = list(_message_calls(tree))
    assert [any(_is_say(n) for a in args for n in ast.walk(a)) for _, args in calls] == [False, True]


def test_import_normlib_speaks_english_and_set_language_checks_its_argument():
    assert normlib.language() == "en"
    with pytest.raises(ValueError, match="'en' or 'ko'"):
        normlib.set_language("fr")
    with normlib.speaking("ko"):
        assert normlib.language() == "ko"
    assert normlib.language() == "en"


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_korean_selected_every_functional_error_explains_itself_in_korean(case):
    _, call, must_contain = case
    _assert_korean_explanation(*raised_in_english_and_korean(lambda: call(NF)), must_contain)


@pytest.mark.parametrize("case", MODULE_CASES, ids=[c[0] for c in MODULE_CASES])
def test_korean_selected_every_module_error_explains_itself_in_korean(case):
    _, call, must_contain = case
    _assert_korean_explanation(*raised_in_english_and_korean(lambda: call(normlib)), must_contain)


def _assert_korean_explanation(english, korean, must_contain):
    assert type(korean) is type(english)
    assert has_hangul(str(korean)) and not has_hangul(str(english)), f"{english!s} / {korean!s}"
    for needle in must_contain:
        assert needle in str(korean), f"the Korean message lacks {needle!r}: {korean}"
    if ": " in str(english):   # torch's words (or the function's name) first, the same in both
        assert str(korean).split(": ")[0] == str(english).split(": ")[0], f"{english!s} / {korean!s}"


def test_a_korean_reader_still_gets_torchs_words_first():
    with normlib.speaking("ko"):
        ours = str(raised(lambda: NF.batch_norm(x24[:1], None, None, training=True)))
    theirs = str(raised(lambda: TF.batch_norm(x24[:1], None, None, training=True)))
    assert re.match(r"Expected more than 1 value per channel when training", ours) and theirs.startswith(ours[:40])
