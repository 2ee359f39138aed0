"""What the book's pages use besides the library: strings in two languages, the running table,
drawings, explorers, chapter 9's process launcher and chapters 10-11's tiny transformer. Needs the
``book`` extra (matplotlib, ipywidgets); the library itself (``import normlib``) needs none of it.

===================  =====================================================================
:mod:`.i18n`         the words the helpers draw (figures, legends, the explorer), in Korean and English
:mod:`.examples`     the running 4 × 3 table, and ``within`` for rounding-level differences
:mod:`.viz`          matplotlib drawings of which elements share one statistic
:mod:`.explorer`     the explorer (an anywidget: computes in the browser, on the page and in JupyterLab)
:mod:`.launch`       start processes in one ``torch.distributed`` group (chapter 9)
:mod:`.devices`      chapter 9's demo: one SyncBatchNorm step per split of the batch
:mod:`.transformer`  chapters 10-11's tiny transformer (post-/pre-norm, causal or not), tasks, loop
===================  =====================================================================

A chapter's setup cell is ``book.start(LANG)``: see :func:`start`. The strings a chapter prints are
written in its source (``chapters/src``), each language's notebook gets its own (``book.tools.build_chapters``).
"""

from __future__ import annotations

from typing import Optional

import torch

from . import i18n

__all__ = ["start"]


def start(lang: str, threads: Optional[int] = 1) -> None:
    """Set up a chapter's kernel for a page in ``lang``.

    Seeds torch with 0 and uses ``threads`` CPU threads (one, so every number comes out the same
    on every machine; ``None`` leaves torch's own choice, for the chapter that measures speed);
    sets matplotlib's fonts and style for ``lang`` (Korean needs a Hangul font) and the language
    normlib explains its errors in. Returns nothing: a chapter's printed strings are plain literals in
    its notebook (written as pairs in its source, ``book.tools.build_chapters``).

    In a chapter: ``book.start(LANG)``.
    """
    from normlib import set_language

    from . import viz  # matplotlib: imported when a page starts, not by `import normlib_book`

    lang = i18n.check_lang(lang)
    set_language(lang)  # normlib's errors explain themselves in the page's language
    torch.manual_seed(0)
    if threads is not None:
        torch.set_num_threads(threads)
    viz.setup(lang)
