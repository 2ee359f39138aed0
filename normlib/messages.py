"""The language of normlib's messages: English, or Korean for a reader of the Korean pages.

Every error normlib raises starts with torch's own words for that error, in English (torch's tests,
and code written against torch, look for them), and goes on with normlib's explanation of what was
expected and what was received, in the selected language. ``import normlib`` speaks English, as
libraries do; a Korean chapter calls ``normlib.set_language("ko")`` (``normlib_book.start`` does).
The texts themselves are in :mod:`normlib.errors`, one function per error; the modules reach it
through :data:`errors` here, which imports it when a message is first needed.

>>> say(en="expected", ko="기대했습니다")
'expected'
>>> with speaking("ko"):
...     say(en="expected", ko="기대했습니다")
'기대했습니다'
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

__all__ = ["LANGUAGES", "set_language", "language", "speaking", "say", "errors"]

LANGUAGES = ("en", "ko")
_selected = ["en"]


def set_language(lang: str) -> None:
    """Explain errors in ``lang``: ``"en"`` (the default) or ``"ko"``."""
    if lang not in LANGUAGES:
        raise ValueError(errors.unknown_language(lang))
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
    """The explanation in the selected language; :mod:`normlib.errors` writes both."""
    return ko if _selected[0] == "ko" else en


class _Catalogue:
    """:mod:`normlib.errors`, imported the first time one of its messages is asked for."""

    def __getattr__(self, name: str):
        from . import errors
        return getattr(errors, name)


errors = _Catalogue()
