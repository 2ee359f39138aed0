"""Korean particles after a value: every Korean message of normlib (``say(ko=...)``), of the
classroom checkers (the ``ex:`` strings, normlib_classroom.words) and every Korean string a chapter
prints (its source's pairs, ``T(en=…, ko=…)`` in chapters/src: ``.format`` templates and f-strings) is rendered with values that end in every digit 0–9, with
tuples, numbers like 10 or 0.1, quoted names and type names, and each particle right after a value
must agree with how the value is read aloud.

Korean picks 은/는, 이/가, 을/를, 과/와, 으로/로, 이어야/여야 by whether the word before ends in a
final consonant (받침). A number is read by its last digit: 0 영, 1 일, 3 삼, 6 육, 7 칠, 8 팔 end
in one (1, 7, 8 in ㄹ, which takes 로, not 으로), 2 이, 4 사, 5 오, 9 구 do not; 10 십, 100 백, 1000
천 do. A tuple is read by its last element; ``'group'`` is 그룹 (ㅂ), ``'batch'`` 배치. The messages
avoid the question rather than answer it (a value goes after a colon, in parentheses after a noun
that carries the particle, or before 입니다/인): a value of either kind then reads right, and so a
message that puts a particle straight after a value fails here for one value or the other, as does
a hedge such as ``을(를)``.
"""

from __future__ import annotations

import ast
import re
import string
from typing import Dict, List, Optional, Tuple

import pytest

from book.tools import build_chapters
from helpers.paths import ROOT
from normlib_classroom.words import PAIRS, text

# ----------------------------------------------------------------------------- how a value is read

V, C, L = "vowel", "consonant", "rieul"     # how the reading ends: no 받침, a 받침, the 받침 ㄹ

DIGIT = {"0": C, "1": L, "2": V, "3": C, "4": V, "5": V, "6": C, "7": L, "8": L, "9": V}

# (sample as printed, how it is read): every digit, the round numbers, decimals, tuples, names
SAMPLES: List[Tuple[str, str]] = (
    [(str(d), DIGIT[str(d)]) for d in range(10)]
    + [("10", C), ("12", V), ("100", C), ("1000", C), ("0.1", L), ("1e-05", V), ("0.001", L)]
    + [("(3,)", C), ("(5, 0)", C), ("(5, 6)", C), ("(2, 3, 4, 5)", V), ("(4, 1)", L), ("[2, 3]", C)]
    + [("'group'", C), ("'batch'", V), ("'NC'", V), ("list", V), ("NoneType", C)]
)


def final(word: str) -> Optional[str]:
    """How a Hangul word ends (``V``, ``C`` or ``L``); ``None`` if it does not end in a Hangul syllable."""
    if not word or not "가" <= word[-1] <= "힣":
        return None
    jong = (ord(word[-1]) - 0xAC00) % 28
    return V if jong == 0 else L if jong == 8 else C


# particle forms: (after a 받침, after none); longest first so that 이어야 is not read as 이
PARTICLES = [("이어야", "여야"), ("이라고", "라고"), ("이라", "라"), ("이나", "나"), ("이며", "며"),
             ("으로", "로"), ("은", "는"), ("을", "를"), ("과", "와"), ("이", "가")]
COPULA = {"이어야", "이라고", "이라", "이나", "이며"}          # after a vowel the 이 may stay (사과이어야)
HEDGE = re.compile(r"^(?:[은는을를이가과와]\([은는을를이가과와]\)|\(으\)로|\(이\)|\(을\)|\(은\))")


def particle_error(rest: str, reading: str) -> Optional[str]:
    """What is wrong with the particle that starts ``rest`` after a word read as ``reading``, if anything."""
    if HEDGE.match(rest):
        return f"a hedge {HEDGE.match(rest).group(0)!r} instead of the particle that agrees"
    for after_consonant, after_vowel in PARTICLES:
        for form in (after_consonant, after_vowel):
            if rest.startswith(form):
                if (after_consonant, after_vowel) == ("으로", "로"):
                    right = "으로" if reading == C else "로"
                    return None if form == right else f"{form!r} where {right!r} agrees"
                if reading == V and form == after_consonant and form in COPULA:
                    return None
                right = after_vowel if reading == V else after_consonant
                return None if form == right else f"{form!r} where {right!r} agrees"
    return None


def _opener(message: str, close: int) -> int:
    """Where the bracket that ``message[close]`` closes opens (-1 if nowhere)."""
    depth = 0
    for i in range(close, -1, -1):
        depth += {")": 1, "]": 1, "(": -1, "[": -1}.get(message[i], 0)
        if depth == 0:
            return i
    return -1


def check_rendered(message: str, spans: List[Tuple[int, int, str]]) -> List[str]:
    """The particle errors after each value of ``message`` (``spans``: where each value was put and how
    it is read). A value closed by ``)`` that was glossing a Hangul noun, as in ``채널({c})을``, hands
    the particle to that noun."""
    errors = []
    for start, end, reading in spans:
        j, closed = end, 0
        while j < len(message) and message[j] in ")]" and closed < 3:
            j, closed = j + 1, closed + 1
        if closed:
            opener = _opener(message, j - 1)
            noun = final(message[:opener]) if opener > 0 else None
            reading = noun or reading
        error = particle_error(message[j:], reading)
        if error:
            errors.append(f"{message[max(0, start - 15):j + 6]!r}: {error}")
    return errors


def test_the_reading_rules():
    """Known right and known wrong cases, so that the check below can fail."""
    def errors(template: str, value: str, reading: str) -> List[str]:
        pieces, message, spans = template.split("{}"), "", []
        for k, piece in enumerate(pieces):
            message += piece
            if k < len(pieces) - 1:
                spans.append((len(message), len(message) + len(value), reading))
                message += value
        return check_rendered(message, spans)
    wrong = [("chunks는 양의 int여야 하는데 {}를 받았습니다", "0", C),       # the 2026-11-27 review's findings
             ("num_channels={}와 num_groups=4를", "6", C),
             ("num_channels={}와", "10", C),
             ("{}여야 하는데", "(3,)", C),
             ("normalized_shape={}와 같아야", "(3,)", C),
             ("입력은 {}로 끝나지 않습니다", "(3,)", C),
             ("인덱스 {}는 모양", "(5, 0)", C),
             ("method {}는 normalized_shape를", "'group'", C),
             ("넘겨준 eps = {}가 아니라", "0.1", L),
             ("{}을 받았습니다", "2", V),
             ("{}으로 나눕니다", "8", L),
             ("{}을(를) 받았습니다", "3", C),
             ("InstanceNorm1d({})가 모양", "3", C)]
    for template, value, reading in wrong:
        assert errors(template, value, reading), (template, value)
    right = [("{}을 받았습니다", "0", C), ("{}과 num_groups", "6", C), ("{}이어야 하는데", "(3,)", C),
             ("{}은 모양", "(5, 0)", C), ("{}은 normalized_shape를", "'group'", C), ("eps = {}이 아니라", "0.1", L),
             ("{}로 나눕니다", "8", L), ("{}으로 나눕니다", "6", C), ("{}로 나눕니다", "1e-05", V),
             ("{}여야", "(2, 3, 4, 5)", V), ("{}이어야", "(2, 3, 4, 5)", V), ("받은 값은 {}입니다", "3", C),
             ("채널({})을 같은", "5", V), ("끝 차원들({})과 같아야", "2", V), ("모양 {}인 입력", "(4, 1)", L),
             ("{}에 맞춰", "7", L), ("{}개를", "2", V), ("채널 {}개(out_channels={})를", "3", C),
             ("채널(num_channels={})을", "(2, 3, 4, 5)", V)]
    for template, value, reading in right:
        assert not errors(template, value, reading), (template, value, errors(template, value, reading))
    assert final("평균") == C and final("분산") == C and final("행") == C and final("출력") == C and final("길") == L and final("배치") == V


# ----------------------------------------------------------------------------- the messages

def _is_say(node) -> bool:
    return isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "say"


def korean_messages() -> List[Tuple[str, ast.expr]]:
    """``(where, expression)`` of every ``ko=`` argument of ``say`` in normlib."""
    found = []
    for path in sorted((ROOT / "normlib").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if _is_say(node):
                for kw in node.keywords:
                    if kw.arg == "ko":
                        found.append((f"{path.relative_to(ROOT)}:{node.lineno}", kw.value))
    return found


def chapter_messages() -> List[Tuple[str, ast.expr]]:
    """``(where, Korean literal)`` of every pair in the chapters' sources that has a value in it
    (an f-string, or a ``.format`` template)."""
    found = []
    for stem in build_chapters.stems():
        for pair in build_chapters.source_pairs(stem):
            node = ast.parse(pair["ko"].strip(), mode="eval").body
            if isinstance(node, ast.JoinedStr) or "{" in pair["ko_value"]:
                found.append((f"chapters/src/{stem}.md:{pair['line']}+", node))
    return found


def render_fstring(node: ast.expr, sample: str) -> Tuple[str, List[Tuple[int, int, str]]]:
    """The message with every formatted value replaced by ``sample`` (as printed), and where each went."""
    parts = node.values if isinstance(node, ast.JoinedStr) else [node]
    out, spans = "", []
    for part in parts:
        if isinstance(part, ast.Constant):
            out += str(part.value)
        else:
            spans.append((len(out), len(out) + len(sample), None))
            out += sample
    return out, spans


def render_template(template: str, sample: str, fields: Dict[str, str],
                    fixed: Optional[Dict[str, Tuple[str, str]]] = None) -> Tuple[str, List[Tuple[int, int, Optional[str]]]]:
    """A ``str.format`` template with each field replaced by ``sample``, or by ``fields[name]`` where a
    field only ever holds one of a few Korean words (then read from the word itself), or by
    ``fixed[name]`` (a value as printed, how it is read) where a chapter prints one value only."""
    out, spans = "", []
    for literal, field, _, _ in string.Formatter().parse(template):
        out += literal
        if field is not None and fixed and field in fixed:
            value, reading = fixed[field]
            spans.append((len(out), len(out) + len(value), reading))
            out += value
        elif field is not None:
            value = fields.get(field, sample)
            spans.append((len(out), len(out) + len(value), final(value) if field in fields else None))
            out += value
    return out, spans


# A checker field that only holds a Korean word from the strings' own table: rendered with each.
WORD_FIELDS = {"stat": [text("mean", "ko"), text("variance", "ko")],
               "group": [PAIRS[k][0] for k in ("ex:group:row", "ex:group:channel", "ex:group:sample_group")]}


# A chapter's field that holds one value only, whatever the machine (as its notebook prints it): read
# as that value, not as every sample. (where in chapters/src, field): (value, how it is read)
CHAPTER_VALUES = {("06_family.md", "tol"): ("1e-05", V),          # 일e 마이너스 오: 1e-05는
                  ("11_without_norm.md", "spike"): ("1000", C),   # 천: 1000이고
                  ("11_without_norm.md", "share"): ("5%", V)}     # 오 퍼센트: 5%를


def _fixed(where: str) -> Dict[str, Tuple[str, str]]:
    name = where.split("/")[-1].split(":")[0]
    return {field: value for (source, field), value in CHAPTER_VALUES.items() if source == name}


def _all_errors() -> List[str]:
    problems = []
    for where, node in korean_messages():
        for sample, reading in SAMPLES:
            message, spans = render_fstring(node, sample)
            problems += [f"{where}: {e}" for e in check_rendered(message, [(a, b, reading) for a, b, _ in spans])]
    templates = [(key, ko) for key, (ko, _) in PAIRS.items()]
    for where, node in chapter_messages():
        if isinstance(node, ast.JoinedStr):
            for sample, reading in SAMPLES:
                message, spans = render_fstring(node, sample)
                problems += [f"{where}: {e}" for e in check_rendered(message, [(a, b, reading) for a, b, _ in spans])]
        else:
            templates.append((where, node.value))
    for key, ko in templates:
        fixed = _fixed(key) if key.startswith("chapters/") else None
        names = [f for _, f, _, _ in string.Formatter().parse(ko) if f in WORD_FIELDS]
        choices = [dict(zip(names, combo)) for combo in _product([WORD_FIELDS[n] for n in names])]
        for sample, reading in SAMPLES:
            for fields in choices:
                message, spans = render_template(ko, sample, fields, fixed)
                problems += [f"{key}: {e}" for e in check_rendered(message, [(a, b, r or reading) for a, b, r in spans])]
    first: Dict[str, str] = {}
    for problem in problems:                       # one line per message, with its first wrong value
        first.setdefault(problem.split(": ", 1)[0], problem)
    return sorted(first.values())


def _product(lists):
    result = [[]]
    for options in lists:
        result = [r + [o] for r in result for o in options]
    return [tuple(r) for r in result]


def test_every_korean_message_reads_right_after_every_value():
    messages = korean_messages()
    assert len(messages) >= 55, f"found only {len(messages)} Korean messages in normlib: is the search broken?"
    assert sum(1 for ko, _ in PAIRS.values() if "{" in ko) >= 30
    assert len(chapter_messages()) >= 200, "found too few chapter strings with values: is the search broken?"
    problems = _all_errors()
    assert not problems, "particles that disagree with the value before them:\n" + "\n".join(problems)


def test_every_korean_sentence_of_the_library_ends_with_a_period():
    """A Korean message that ends a sentence (…다, …요) closes it with a period, as the checkers' do."""
    problems = []
    for where, node in korean_messages():
        message, _ = render_fstring(node, "3")
        if re.search(r"[다요]$", message.rstrip()):
            problems.append(f"{where}: …{message[-30:]!r}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("language", ["ko", "en"])
def test_a_list_as_weight_is_refused_in_normlibs_words(language):
    """A Python list as γ (or β, or a running statistic) is refused with torch's TypeError and words,
    then normlib's explanation, not with Python's AttributeError about ``.shape``."""
    import torch
    import torch.nn.functional as TF

    import normlib
    import normlib.functional as NF

    x = torch.randn(2, 3)
    calls = [("layer_norm", lambda f: f.layer_norm(x, (3,), weight=[1.0, 1.0, 1.0])),
             ("group_norm", lambda f: f.group_norm(x, 1, weight=[1.0, 1.0, 1.0])),
             ("batch_norm", lambda f: f.batch_norm(x, None, None, weight=[1.0, 1.0, 1.0], training=True)),
             ("batch_norm", lambda f: f.batch_norm(x, [0.0] * 3, [1.0] * 3, training=False))]
    with normlib.speaking(language):
        for name, call in calls:
            with pytest.raises(TypeError) as theirs:
                call(TF)
            with pytest.raises(TypeError) as ours:
                call(NF)
            message = str(ours.value)
            assert message.startswith(f"{name}(): argument '") and "must be Tensor, not list: " in message, message
            assert str(theirs.value).split(" (position")[0] == message.split(" must be")[0], (theirs.value, message)
            assert ("torch.Tensor나 None" in message) == (language == "ko"), message
    with normlib.speaking("ko"):
        with pytest.raises(TypeError, match="rms_norm의 weight에는 torch.Tensor나 None을 주어야"):
            NF.rms_norm(x, (3,), weight=[1.0, 1.0, 1.0])


def test_a_chapter_string_with_a_particle_after_a_value_is_caught():
    """The chapters' pairs are read too: a Korean template or f-string that puts 를 straight after a
    number fails for a number ending in a 받침, unless the chapter prints one value only."""
    import ast as _ast

    node = _ast.parse('f"토큰 {n}를 골라"', mode="eval").body
    message, spans = render_fstring(node, "3")
    assert check_rendered(message, [(a, b, C) for a, b, _ in spans])
    message, spans = render_template("토큰 {share:.0%}를 골라", "3", {}, _fixed("chapters/src/11_without_norm.md:9+"))
    assert message == "토큰 5%를 골라" and not check_rendered(message, spans)
    assert chapter_messages(), "no chapter strings read"
