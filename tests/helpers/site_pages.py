"""The pages of the built site, in the order of each language's table of contents (tests/book)."""

from __future__ import annotations


def site_pages() -> list[str]:
    """Every page of the site as ``<lang>/<docname>`` (``ko/chapters/ko/06_family``): each
    language's book (book/site/website.py, from _config.yml's languages and _toc.yml), root first, in
    the order of its table of contents. The HTML file is ``<site>/<lang>/<docname>.html``."""
    from book.site.website import CONFIG, TOC, language_toc, languages, load, toc_files

    config, toc = load(CONFIG), load(TOC)
    langs = languages(config)
    return [f"{lang}/{f}" for lang in langs for f in toc_files(language_toc(toc, lang, langs))]
