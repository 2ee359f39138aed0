"""The words the book's helper modules draw (figure labels, legends, titles, alt texts), in Korean
and English, and the lookup that the other tables use too.

A chapter's printed strings are not here: each chapter writes its own in its source as pairs,
``T(en="…", ko="…")`` (``chapters/src``, ``book.tools.build_chapters``). The tables, each by what it serves:

=============================================  ====================================================
:mod:`normlib_book.i18n` (this module)         the helpers' drawings (:mod:`.viz`, :mod:`.examples`)
:mod:`normlib_book.i18n_explorer`              the explorer widget (:mod:`.explorer`, ``explorer.js``)
:mod:`normlib_classroom.words`                 what the classroom's checkers tell a student
:mod:`normlib_benchmarks.words`                the benchmarks' figures and reports
=============================================  ====================================================

>>> text("sample", "ko"), text("sample", "en")
('샘플', 'sample')
>>> text("sample", "fr")
Traceback (most recent call last):
    ...
ValueError: lang must be one of 'ko', 'en'; got 'fr'
"""

from __future__ import annotations

from normlib_book.i18n_explorer import PAIRS as EXPLORER_PAIRS

__all__ = ["LANGS", "STRINGS", "check_lang", "strings_of", "text"]

LANGS = ("ko", "en")

# key: (Korean, English)
_PAIRS = {
    "sample": ("샘플", "sample"),
    "feature": ("특성", "feature"),
    "activation": ("활성값", "activation"),
    "count": ("개수", "count"),
    "normalized": ("정규화 결과", "normalized"),
    "max_abs_difference": ("최대 절대 차이", "max abs difference"),
    "equal": ("같음:", "equal:"),
    "cmp:summary": ("{name}: 학습 {train} | 평가 {eval} | state_dict 키 일치 {keys} | 값 차이 {values} | torch의 state_dict 불러오기 {loads}",
                    "{name}: train {train} | eval {eval} | state_dict keys equal {keys} | values {values} | loads torch's: {loads}"),
    "cmp:keys": ("  키:", "  keys:"),
    "accuracy": ("정확도", "accuracy"),
    "std_per_layer": ("층별 활성값 표준편차", "std of activations per layer"),
    "batch_shares": ("BatchNorm: 같은 색 = 평균·분산 공유 (열 단위)", "BatchNorm: same colour = one mean and variance (per column)"),
    "layer_shares": ("LayerNorm: 같은 색 = 평균·분산 공유 (행 단위)", "LayerNorm: same colour = one mean and variance (per row)"),
    "rms_shares": ("RMSNorm: 같은 색 = 제곱평균 공유 (행 단위)", "RMSNorm: same colour = one mean square (per row)"),
    "instance_shares": ("InstanceNorm: 같은 색 = 평균·분산 공유", "InstanceNorm: same colour = one mean and variance"),
    "group_shares": ("GroupNorm: 같은 색 = 평균·분산 공유", "GroupNorm: same colour = one mean and variance"),
    "eps": ("eps", "eps"),
    "block_batch": ("BatchNorm: 채널 하나 = 통계 하나", "BatchNorm: one statistic per channel"),
    "block_layer": ("LayerNorm: 샘플 하나 = 통계 하나", "LayerNorm: one statistic per sample"),
    "block_instance": ("InstanceNorm: (샘플, 채널)마다 통계 하나", "InstanceNorm: one per (sample, channel)"),
    "block_group": ("GroupNorm: (샘플, 그룹)마다 통계 하나", "GroupNorm: one per (sample, group)"),
    "seq_batch": ("BatchNorm: 특성 하나 = 통계 하나 (B, L에 걸쳐)", "BatchNorm: one statistic per feature (over B, L)"),
    "seq_layer": ("LayerNorm: 토큰 하나 = 통계 하나", "LayerNorm: one statistic per token"),
    "seq_rms": ("RMSNorm: 토큰 하나 = 제곱평균 하나", "RMSNorm: one mean square per token"),
    "block_rms": ("RMSNorm: 샘플 하나 = 제곱평균 하나", "RMSNorm: one mean square per sample"),
    "block_batch_dim0": ("실수: dim 0만 줄인 평균 (위치·특성마다 통계 하나)", "Slip: mean over dim 0 only (per position, feature)"),
    "block_count": ("칠한 원소 {count}개가 통계 하나를 공유 · 통계 {total}개", "the {count} filled elements share one statistic · {total} statistics"),
    "axis_N": ("N (샘플)", "N (samples)"),
    "axis_C": ("C (채널)", "C (channels)"),
    "axis_HW": ("H·W (위치)", "H·W (positions)"),
    "axis_L_spatial": ("L (위치)", "L (positions)"),
    "axis_none": ("(공간 축 없음)", "(no spatial axis)"),
    "axis_B": ("B (시퀀스)", "B (sequences)"),
    "axis_L": ("L (토큰)", "L (tokens)"),
    "axis_D": ("D (특성)", "D (features)"),
    "block_alt": ("{title}. {dims}인 블록에서 통계 {which}번을 공유하는 원소 {count}개를 칠한 그림 (통계는 모두 {total}개).",
                  "{title}. A block of {dims}; the {count} filled elements share statistic {which} ({total} statistics in all)."),
    "table_alt": ("{title}. {what}을 적은 {rows}행 {cols}열 표: {cells}.", "{title}. A {rows}-by-{cols} table of the {what}: {cells}."),
    "table_input_values": ("입력값", "input values"),
    "table_normalized_values": ("정규화한 값", "normalized values"),
    "mean": ("평균", "mean"),
    "variance": ("분산", "variance"),
}


def _merged(*tables: dict) -> dict:
    """One table from several, refusing a key defined twice (a later copy would silently win)."""
    merged: dict = {}
    for table in tables:
        twice = sorted(set(merged) & set(table))
        if twice:
            raise ValueError(f"strings defined twice: {', '.join(twice)}")
        merged.update(table)
    return merged


def strings_of(*tables: dict) -> dict:
    """``{"ko": {key: Korean}, "en": {key: English}}`` from tables of ``key: (Korean, English)``
    (merged, a key defined twice refused)."""
    merged = _merged(*tables)
    return {"ko": {key: pair[0] for key, pair in merged.items()},
            "en": {key: pair[1] for key, pair in merged.items()}}


PAIRS = _merged(_PAIRS, EXPLORER_PAIRS)
STRINGS = strings_of(PAIRS)


def check_lang(lang: str) -> str:
    """Return ``lang`` if it is ``"ko"`` or ``"en"``; otherwise raise a ``ValueError`` naming both."""
    if lang not in LANGS:
        raise ValueError(f"lang must be one of 'ko', 'en'; got {lang!r}")
    return lang


def text(key: str, lang: str, strings: dict | None = None) -> str:
    """The reader-facing string ``key`` in ``lang`` (``"ko"`` or ``"en"``), from ``strings``
    (:func:`strings_of`; default: this package's, :data:`STRINGS`)."""
    check_lang(lang)
    table = STRINGS if strings is None else strings
    try:
        return table[lang][key]
    except KeyError:
        raise KeyError(f"no string {key!r}; known keys: {', '.join(sorted(table[lang]))}") from None
