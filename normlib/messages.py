"""The language of normlib's messages: English, or Korean for a reader of the Korean pages.

Every error normlib raises starts with torch's own words for that error, in English (torch's tests,
and code written against torch, look for them), and goes on with normlib's explanation of what was
expected and what was received, in the selected language. ``import normlib`` speaks English, as
libraries do; a Korean chapter calls ``normlib.set_language("ko")`` (``normlib_book.start`` does).

>>> say(en="expected", ko="기대했습니다")
'expected'
>>> with speaking("ko"):
...     say(en="expected", ko="기대했습니다")
'기대했습니다'
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

__all__ = ["LANGUAGES", "set_language", "language", "speaking", "say", "layouts_ko"]

LANGUAGES = ("en", "ko")
_selected = ["en"]


def set_language(lang: str) -> None:
    """Explain errors in ``lang``: ``"en"`` (the default) or ``"ko"``."""
    if lang not in LANGUAGES:
        raise ValueError(say(en=f"set_language expects 'en' or 'ko', but got {lang!r}",
                             ko=f"set_language에는 'en'이나 'ko'를 주어야 하는데, 받은 값은 {lang!r}입니다."))
    _selected[0] = lang


def language() -> str:
    """The language normlib explains its errors in now."""
    return _selected[0]


@contextmanager
def speaking(lang: str) -> Iterator[None]:
    """Explain errors in ``lang`` inside the ``with`` block, then go back to the language before."""
    before = language()
    set_language(lang)
    try:
        yield
    finally:
        _selected[0] = before


def say(*, en: str, ko: str) -> str:
    """The explanation in the selected language; both are written where the error is raised."""
    return ko if _selected[0] == "ko" else en


def layouts_ko(dims, layouts: str) -> str:
    """Input layouts in Korean, each with its number of dimensions, for a Korean message.

    >>> layouts_ko((2, 3), "(N, C) or (N, C, L)")
    '2차원 (N, C) 또는 3차원 (N, C, L)'
    """
    return " 또는 ".join(f"{d}차원 {layout}" for d, layout in zip(dims, layouts.split(" or ")))
