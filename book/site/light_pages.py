"""Sphinx extension of the book (both languages' builds): what every page loaded and did not use.

Measured with benchmarks/tools/page_weight.py on the Korean chapter 2 (first load, gzip; the icons are
book/site/icons.py's, the Korean font book/site/korean_font.py's):

- pydata-sphinx-theme 0.17 writes Sphinx's search tools into every page's head for its
  search-as-you-type (``searchtools.js`` 6.4 kB, ``language_data.js`` 0.7 kB and the book's whole
  ``searchindex.js``, 45 kB; 193 kB to parse, in Korean). That feature is off
  (``search_as_you_type = False``, the theme's default: the header's search box sends the query
  to search.html, and the theme's script returns before touching ``Search`` when it is off). The
  search page itself loads them as before. 52 kB less on every other page. And a page opened
  from the search results marks the searched words again, as Sphinx means it to: its
  sphinx_highlight.js marks them only where ``Search`` is undefined (not on the search page),
  so with the tools on every page it never did. (In light mode a marked word inside a link
  is darker blue for contrast, book/site/offline_book/accessibility.css.)
- sphinx-book-theme's launch menu (chapter pages) holds the Binder and Colab logos as ``<img>``
  in a menu hidden until opened: fetched on every load (``logo_colab.png`` 7.6 kB,
  ``logo_binder.svg`` 0.6 kB). They get ``loading="lazy"``, which Chromium and Firefox honour for
  an image that is not displayed: fetched when the menu opens.

- Pygments wraps every token of a code block in a ``<span class="…">``, the plain ones too:
  names (``n``), punctuation (``p``) and white space (``w``), whose colour in the theme's
  ``pygments.css`` is the code block's own in both colour modes (#080808 light, #F8F8F2 dark).
  About half of a chapter's HTML was these tags (71 of 149 kB in the Korean chapter 6); the plain
  ones are unwrapped (:data:`PLAIN`): the same text in the same colours (screenshots of three
  blocks in each mode differ only in sub-pixel anti-aliasing), 149 -> 107 kB for that page.
  tests/benchmarks/test_page_weight.py checks, on the built site, that each of these classes has exactly the
  block's colour in each mode.

Left as they are, needed or small: MathJax (263 kB and its fonts, only on pages with math),
the theme's stylesheets (pydata-sphinx-theme.css 66 kB), Bootstrap (24 kB), print.css (4 kB, for
printing without a network).
"""

from __future__ import annotations

import re

SEARCH_TOOLS = re.compile(r'[ \t]*<script src="[^"]*(?:_static/searchtools\.js|_static/language_data\.js|'
                          r'searchindex\.js)"></script>\n?')
MENU_IMAGE = re.compile(r'<img (?![^>]*loading=)([^>]*src="[^"]*_static/images/logo_[a-z]+\.(?:png|svg)"[^>]*)>')


# Pygments' classes drawn in the code block's own colour in both modes (checked on the built site).
PLAIN = ("n", "p", "w")
CODE_BLOCK = re.compile(r'(<div class="highlight"><pre>)(.*?)(</pre>)', re.S)
PLAIN_TOKEN = re.compile(r'<span class="(?:%s)">([^<]*)</span>' % "|".join(PLAIN))


def plain_tokens_unwrapped(page: str) -> str:
    """Each code block's plain tokens (:data:`PLAIN`) as bare text: the same text, the same colours."""
    return CODE_BLOCK.sub(lambda m: m.group(1) + PLAIN_TOKEN.sub(r"\1", m.group(2)) + m.group(3), page)


def lighter(page: str, pagename: str) -> str:
    if pagename != "search":
        page = SEARCH_TOOLS.sub("", page)
    return plain_tokens_unwrapped(MENU_IMAGE.sub(r'<img loading="lazy" \1>', page))


def wrap_render(app) -> None:
    if getattr(app.builder, "format", "") != "html":
        return
    render = app.builder.templates.render

    def rendered(template: str, context: dict) -> str:
        return lighter(render(template, context), context.get("pagename", ""))

    app.builder.templates.render = rendered


def setup(app):
    app.connect("builder-inited", wrap_render)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
