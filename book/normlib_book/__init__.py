"""What the book's pages use besides the library: strings in two languages, the running table,
drawings, explorers, chapter 9's process launcher and chapters 10-11's tiny transformer. Needs the
``book`` extra (matplotlib, ipywidgets); the library itself (``import normlib``) needs none of it.

===================  =====================================================================
:mod:`.i18n`         every string a page prints or draws, in Korean and English
:mod:`.examples`     the running 4 × 3 table, and ``within`` for rounding-level differences
:mod:`.viz`          matplotlib drawings of which elements share one statistic
:mod:`.explorer`     the explorer (an anywidget: computes in the browser, on the page and in JupyterLab)
:mod:`.launch`       start processes in one ``torch.distributed`` group (chapter 9)
:mod:`.devices`      chapter 9's demo: one SyncBatchNorm step per split of the batch
:mod:`.transformer`  chapters 10-11's tiny transformer (post-/pre-norm, causal or not), tasks, loop
===================  =====================================================================

A chapter's setup cell is ``T = book.start(LANG)``: see :func:`start`.
"""

from __future__ import annotations

from typing import Callable, Optional

import torch

from . import i18n

__all__ = ["start"]


def start(lang: str, threads: Optional[int] = 1) -> Callable[[str], str]:
    """Set up a chapter's kernel and return ``T``, the page's strings in ``lang``.

    Seeds torch with 0 and uses ``threads`` CPU threads (one, so every number comes out the same
    on every machine; ``None`` leaves torch's own choice, for the chapter that measures speed);
    sets matplotlib's fonts and style for ``lang`` (Korean needs a Hangul font) and the language
    normlib explains its errors in. ``T(key)`` is ``i18n.text(key, lang)``.

    In a chapter: ``T = book.start(LANG)``, then ``T("accuracy")`` is 정확도 on a Korean page.
    """
    from normlib import set_language

    from . import viz  # matplotlib: imported when a page starts, not by `import normlib_book`

    lang = i18n.check_lang(lang)
    set_language(lang)  # normlib's errors explain themselves in the page's language
    torch.manual_seed(0)
    if threads is not None:
        torch.set_num_threads(threads)
    viz.setup(lang)
    return lambda key: i18n.text(key, lang)
