"""Sphinx extension of the book (both languages' builds): what the theme and the packages write into
every page that axe-core finds inaccessible, fixed where it is written.

tests/book/test_accessibility.py runs axe-core on every page in Chromium, in the light and the dark
colour mode; these are the violations of the built pages that do not come from the book's own
content (the explorer is normlib_book.explorer's, with its own names, keys and focus rings in
explorer.js and explorer.css):

- pydata-sphinx-theme's search field and colour-mode button (templates in book/site/a11y_templates/,
  put before the theme's): each had an aria-label that left out text shown inside it, so a voice
  user saying what they see ("검색 Ctrl+K") did not match the name a screen reader says (WCAG 2.5.3,
  axe label-content-name-mismatch, serious);
- myst-nb's collapsed cells: ``<summary aria-label="Toggle hidden content">`` hid its own visible
  words ("코드 보기") behind that label (same rule). The label goes; the summary is named by
  the words it shows, and <details> says itself whether it is open. An exercise's solution shows
  "풀이 보기" / "Show solution" (book/site/site_pages.py), so that is its name too;
- the bibliography (Sphinx's citation list, sphinxcontrib-bibtex): ``role="doc-biblioentry"``,
  deprecated in DPUB-ARIA 1.1 and not allowed on a <div>, so the ``role="list"`` around the entries
  had no list items (axe aria-required-children, critical). Each entry becomes ``role="listitem"``,
  what DPUB-ARIA 1.1 says to use instead.
"""

from __future__ import annotations

import re
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parent / "a11y_templates"

SUMMARY_LABEL = re.compile(r'<summary aria-label="[^"]*">')
BIBLIOENTRY = 'role="doc-biblioentry"'


def accessible_body(body: str) -> str:
    """The page's body with the collapsed cells' summaries named by their own words and the
    bibliography's entries as list items."""
    body = SUMMARY_LABEL.sub("<summary>", body)
    return body.replace(BIBLIOENTRY, 'role="listitem"')


def fix_page(app, pagename, templatename, context, doctree) -> None:
    if isinstance(context.get("body"), str):
        context["body"] = accessible_body(context["body"])


def configure(app, config) -> None:
    config.templates_path = [str(TEMPLATES), *config.templates_path]


def setup(app):
    app.connect("config-inited", configure)
    app.connect("html-page-context", fix_page)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
