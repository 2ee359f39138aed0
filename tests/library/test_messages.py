"""normlib explains its errors in English or Korean: every message is a function of the catalogue
normlib/errors.py, written there in both languages, and each raise site names one; `import normlib`
speaks English, and Korean selected, every error torch would raise comes with torch's words first
and a Korean explanation (with the shapes and names it must hold)."""

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
CATALOGUE = ROOT / "normlib" / "errors.py"
# raise sites whose words are Python's own, not normlib's: a module's missing attribute
PYTHONS_WORDS = {("__init__.py", "AttributeError")}


def _is_say(node) -> bool:
    return isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "say"


def _message_calls(tree):
    """Every raise of a new exception and every warnings.warn: (line, exception name, message arguments)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
            yield node.lineno, getattr(node.exc.func, "id", None), node.exc.args
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "warn":
            yield node.lineno, "warn", node.args[:1]


def _catalogue_entry(args):
    """The name of the catalogue function a raise site's message is (``errors.name(...)``), or None."""
    if len(args) == 1 and isinstance(args[0], ast.Call) and isinstance(args[0].func, ast.Attribute) \
            and getattr(args[0].func.value, "id", None) == "errors":
        return args[0].func.attr
    return None


def _catalogue_functions():
    tree = ast.parse(CATALOGUE.read_text(encoding="utf-8"))
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef) and not node.name.startswith("_")}


def _raise_sites():
    """{catalogue function: [where it is raised]}, and the raise sites that name no catalogue function."""
    used, inline = {}, []
    for path in CORE:
        if path == CATALOGUE:
            continue
        for line, exc, args in _message_calls(ast.parse(path.read_text(encoding="utf-8"))):
            name = _catalogue_entry(args)
            if name is not None:
                used.setdefault(name, []).append(f"{path.name}:{line}")
            elif (path.name, exc) not in PYTHONS_WORDS:
                inline.append(f"{path.name}:{line}")
    return used, inline


def test_every_raise_site_names_one_message_of_the_catalogue():
    used, inline = _raise_sites()
    assert sum(map(len, used.values())) > 50, f"found only {sum(map(len, used.values()))} raise sites: is the search broken?"
    assert not inline, f"raise sites with their text inline, not errors.<name>(...): {inline}"
    unknown = sorted(set(used) - set(_catalogue_functions()))
    assert not unknown, f"raise sites name messages the catalogue does not have: {unknown}"


def test_every_message_of_the_catalogue_is_raised_somewhere():
    used, _ = _raise_sites()
    dead = sorted(set(_catalogue_functions()) - set(used))
    assert not dead, f"messages in normlib/errors.py that nothing raises: {dead}"


def test_every_message_is_written_in_both_languages():
    problems = []
    for name, function in _catalogue_functions().items():
        if not any(_is_say(n) for n in ast.walk(function)):
            problems.append(f"errors.{name} has no say(en=..., ko=...)")
    for path in CORE:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if _is_say(node):
                if path != CATALOGUE:
                    problems.append(f"{path.name}:{node.lineno} writes a message outside the catalogue")
                texts = {k.arg: " ".join(c.value for c in ast.walk(k.value) if isinstance(c, ast.Constant)
                                         and isinstance(c.value, str)) for k in node.keywords}
                if set(texts) != {"en", "ko"} or not has_hangul(texts["ko"]) or has_hangul(texts["en"]):
                    problems.append(f"{path.name}:{node.lineno} say() needs English en= and Korean ko=")
    assert len(_catalogue_functions()) > 50
    assert not problems, "\n".join(problems)


def test_the_checks_see_an_inline_message_and_a_dead_one():
    tree = ast.parse("raise ValueError(f'bad {x}')\nraise ValueError(errors.bad(x))\nwarnings.warn(errors.odd(x), UserWarning)\n")
    assert [_catalogue_entry(args) for _, _, args in _message_calls(tree)] == [None, "bad", "odd"]
    assert "chunks_not_positive" in _catalogue_functions() and "_given" not in _catalogue_functions()


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
