"""Sphinx extension of the book (both languages' builds): the theme's icons without its 1.5 MB icon bundle.

pydata-sphinx-theme (under sphinx-book-theme) puts Font Awesome's whole SVG framework,
``_static/scripts/fontawesome.js``, on every page (1.49 MB, 543 kB gzip), and its stylesheet
declares Font Awesome's two web fonts, which the pages' ``<i class="fa-…">`` icons and the
admonitions' and links' CSS icons make the browser fetch as well (fa-solid-900.woff2 156 kB,
fa-brands-400.woff2 118 kB): 817 kB of a chapter page's 1.7–2.4 MB (gzip), for thirty icons.

What was measured (benchmarks/tools/page_weight.py, first load, gzip; chapter 6's header and footer use 17
Font Awesome classes, the theme's stylesheets draw 16 icons of their own, 30 code points in all):

==================================================  ==============  ==========================
option                                              icon bytes      cost
==================================================  ==============  ==========================
as it was: fontawesome.js and both web fonts         817 kB         on every page
a theme setting                                      817 kB         none exists: pydata-sphinx-
                                                                    theme 0.17 always writes the
                                                                    script (webpack-macros.html)
the script dropped, the theme's CSS draws the icons  274 kB         the two whole web fonts
from its web fonts (its stylesheet has every
``.fa-*:before { content: … }`` rule)
… and the two fonts subset to the code points the    3.3 + 1.1 kB   two small requests, cached
pages use (chosen)                                                  from page to page
every ``<i class="fa-…">`` as inline SVG (paths      +4.1 kB gzip   in every page's HTML
taken from fontawesome.js)                           (15 kB raw)    (chapter 6), never cached;
                                                     + 3.3 kB       the CSS icons (admonitions,
                                                                    external links) still need
                                                                    the solid font
==================================================  ==============  ==========================

Chosen: the script goes (a script tag less in every page's head), the icons are the theme's own
CSS icons (the same Font Awesome 6 glyphs, drawn from the ``.fa-*:before`` rules and the
``--pst-icon-*`` variables), and the two web fonts are cut at build time to the code points the
built pages ask for (every ``fa-*`` class of any element of any page, every icon the theme's
stylesheets draw by themselves). ``icons_static/icons.css``, after the theme's stylesheet,
declares the same two families with the subsets as their source. Each icon element without
``aria-hidden`` gets ``aria-hidden="true"`` (the script put that on its SVGs; a font icon's
private-use character must not be read out); every button keeps its accessible name (title or
aria-label), tests/benchmarks/test_page_weight.py checks each header button in both languages on a desktop
and a phone screen.

A code point missing from a subset does not vanish: for equal descriptors the browser tries the
faces of a family from the last declared, so it finds the glyph in the theme's whole font and
fetches that (as the first version of this file did for the sidebar buttons' ``<span>`` icons):
the page shows its icon and weighs 156 kB more, which tests/benchmarks/test_page_weight.py reports.
"""

from __future__ import annotations

import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
STATIC = HERE / "icons_static"                     # icons.css
CSS = "icons.css"
OUT = "icons"                                      # _static/icons/: the subsets, written after the build
FONTS = {"fa-solid-900.woff2": "fa-solid-900.woff2", "fa-brands-400.woff2": "fa-brands-400.woff2"}

SCRIPT = re.compile(r'[ \t]*<script[^>]*src="[^"]*_static/scripts/fontawesome\.js[^"]*"[^>]*></script>\n?')
ICON_TAG = re.compile(r'<i class="([^"]*\bfa-[^"]*)"([^>]*)>')
# Any element drawn as an icon (the header's sidebar buttons are <span class="fa-solid fa-bars">).
ICON_CLASSES = re.compile(r'<[a-z]+ class="([^"]*\bfa-[^"]*)"')
# Font Awesome's class to code point table, as in the theme's stylesheet:
#   .fa-magnifying-glass:before,.fa-search:before{content:"\f002"}
CLASS_RULE = re.compile(r'([^{}]+)\{content:"(\\[0-9a-fA-F]{4,5}|[\ue000-\uf8ff])"\}')
CLASS_NAME = re.compile(r'\.(fa-[a-z0-9-]+):{1,2}before')
# The icons drawn by CSS alone: custom properties (--pst-icon-info-circle:"\f05a") and content:"\f107".
# The stylesheets write a code point escaped ("\\f05a") or as the private-use character itself.
CSS_CODEPOINT = re.compile(r'(?:--pst-[a-z-]+|content)\s*:\s*"(\\[0-9a-fA-F]{4,5}|[\ue000-\uf8ff])"')


def codepoint(written: str) -> int:
    return int(written[1:], 16) if written.startswith("\\") else ord(written)


def without_icon_script(page: str) -> str:
    """The page without Font Awesome's script and with every icon element hidden from screen readers."""
    page = SCRIPT.sub("", page)

    def hidden(match: re.Match) -> str:
        classes, rest = match.group(1), match.group(2)
        if "aria-hidden" in rest:
            return match.group(0)
        return f'<i class="{classes}"{rest} aria-hidden="true">'

    return ICON_TAG.sub(hidden, page)


def class_codepoints(css: str) -> dict[str, int]:
    table = {}
    for selectors, code in CLASS_RULE.findall(css):
        for name in CLASS_NAME.findall(selectors):
            table[name] = codepoint(code)
    return table


def used_codepoints(outdir: Path, theme_css: list[str]) -> set[int]:
    """Every icon code point the built pages can show: the classes on their <i> elements and the
    icons the stylesheets draw by themselves."""
    table: dict[str, int] = {}
    points: set[int] = set()
    for css in theme_css:
        table.update(class_codepoints(css))
        own_rules = CLASS_RULE.sub(lambda m: "" if CLASS_NAME.search(m.group(1)) else m.group(0), css)
        points.update(codepoint(code) for code in CSS_CODEPOINT.findall(own_rules))
    for page in outdir.rglob("*.html"):
        for classes in ICON_CLASSES.findall(page.read_text(encoding="utf-8")):
            points.update(table[c] for c in classes.split() if c in table)
    return points


def subset_font(source: Path, target: Path, codepoints: set[int]) -> int:
    """``source`` cut to ``codepoints`` (those it has), as woff2; the target's size."""
    from fontTools import subset

    options = subset.Options()
    options.flavor = "woff2"
    options.layout_features = []          # icons: no ligatures, no kerning
    options.name_IDs = ["*"]              # keep the licence's and the family's names
    options.notdef_outline = True
    font = subset.load_font(str(source), options)
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=sorted(codepoints))
    subsetter.subset(font)
    target.parent.mkdir(parents=True, exist_ok=True)
    subset.save_font(font, str(target), options)
    return target.stat().st_size


def theme_static() -> Path:
    import pydata_sphinx_theme

    return Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme" / "static"


def write_subsets(outdir: Path, log=print) -> dict[str, int]:
    static = theme_static()
    sheets = [static / "styles" / "pydata-sphinx-theme.css"]
    import sphinx_book_theme

    sheets += list((Path(sphinx_book_theme.__file__).parent / "theme" / "sphinx_book_theme" / "static" / "styles")
                   .glob("*.css"))
    points = used_codepoints(outdir, [s.read_text(encoding="utf-8") for s in sheets])
    sizes = {}
    for name, target in FONTS.items():
        sizes[target] = subset_font(static / "vendor" / "fontawesome" / "webfonts" / name,
                                    outdir / "_static" / OUT / target, points)
    log(f"icons: {len(points)} Font Awesome code points, "
        + ", ".join(f"{n} {s / 1000:.1f} kB" for n, s in sizes.items()))
    return sizes


# --- Sphinx extension -------------------------------------------------------------------------

def configure(app, config) -> None:
    config.html_static_path = [*config.html_static_path, str(STATIC)]


def drop_script(app) -> None:
    if getattr(app.builder, "format", "") != "html":
        return
    render = app.builder.templates.render

    def rendered(template: str, context: dict) -> str:
        return without_icon_script(render(template, context))

    app.builder.templates.render = rendered


def finish(app, exception) -> None:
    if exception is not None or getattr(app.builder, "format", "") != "html":
        return
    from sphinx.util import logging

    write_subsets(Path(app.outdir), log=logging.getLogger(__name__).info)


def setup(app):
    app.connect("config-inited", configure)
    app.connect("builder-inited", drop_script)
    app.connect("build-finished", finish)
    app.add_css_file(CSS, priority=800)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
