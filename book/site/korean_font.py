"""Sphinx extension of the book (both languages' builds): NanumGothic cut to the Hangul each book shows.

The book draws Hangul in its own web font (book/site/offline_book/nanum-gothic.css: a bare Linux
machine has no Korean font). The vendored files (@fontsource/nanum-gothic's ``korean`` files,
book/site/vendor_assets.py) hold all 11,172 Hangul syllables: 341 kB (regular) and 417 kB (bold),
both fetched by every Korean page and the regular one by the English pages, whose language
switch says 한국어. A book uses about a thousand syllables.

After each book is built (``build-finished``), this writes into its ``_static/offline/fonts/``

    nanum-gothic-400.woff2, nanum-gothic-700.woff2   the two weights cut to the characters below

and deletes the whole vendored fonts from that book's output (nothing there refers to them).
The characters (only Hangul syllables and compatibility jamo, the faces' unicode-range):

- every character of the book's built pages (their text, attributes and inline scripts: the
  words site.js and the explorers' stored state write at run time are there), and of its
  ``_static/translations.js`` (the search page's words);
- for the Korean book, also what a Korean page can show that its HTML does not hold: the
  project's catalogue (book/locale/ko/LC_MESSAGES/sphinx.po), book/site/site_pages.py's words, the
  words the book's helpers draw and the explorer shows at run time (book/normlib_book/i18n.py and
  i18n_explorer.py; a chapter's printed strings are in its HTML), the explorer's own table of strings
  (book/normlib_book/explorer.js, when it exists) and our scripts in book/site/offline_book/, and
  _config.yml (the landing page, _build/html/index.html, uses the Korean book's stylesheet).

So the English book gets a font of a few dozen syllables (the switch's 한국어, the glossary's
Korean column), fetched only by its pages that show Hangul. A character that is in neither
subset is still in the faces' unicode-range: the browser finds no glyph in NanumGothic and
draws it with the next font of the stack (a system font, if the machine has a Korean one),
as it does for any character a web font lacks; tests/book/test_browser.py checks that every Hangul
character the pages show is drawn in NanumGothic.

fonttools (pyftsubset's library) and brotli (for woff2) are pinned in requirements.txt. Without
them, or without the vendored fonts, the book keeps the whole fonts and says so.

    python -m book.site.korean_font _build/html/ko     # what a built book's subset holds
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FONT_DIR = "offline/fonts"                               # under _static/
WHOLE = "nanum-gothic-korean-{weight}-normal.woff2"      # vendored by book/site/vendor_assets.py
SUBSET = "nanum-gothic-{weight}.woff2"                    # book/site/offline_book/nanum-gothic.css
WEIGHTS = (400, 700)
SOURCES = [ROOT / "book_assets" / "offline" / "fonts",
           ROOT / "node_modules" / "@fontsource" / "nanum-gothic" / "files"]
# What the faces cover (book/site/offline_book/nanum-gothic.css): compatibility jamo and syllables.
HANGUL = re.compile(r"[\u3131-\u318e\uac00-\ud7a3]")


def korean_sources() -> list[Path]:
    """Files whose Hangul a Korean page may show without its HTML holding it."""
    files = [ROOT / "book" / "locale" / "ko" / "LC_MESSAGES" / "sphinx.po", ROOT / "book" / "site" / "site_pages.py",
             ROOT / "_config.yml", ROOT / "book" / "normlib_book" / "explorer.js"]
    files += [ROOT / "book" / "normlib_book" / name for name in ("i18n.py", "i18n_explorer.py")]
    files += sorted((ROOT / "book" / "site" / "offline_book").glob("*.js"))
    return [f for f in files if f.exists()]


def hangul_of(paths) -> set[str]:
    chars: set[str] = set()
    for path in paths:
        chars.update(HANGUL.findall(Path(path).read_text(encoding="utf-8", errors="replace")))
    return chars


def book_characters(outdir: Path, lang: str) -> set[str]:
    pages = list(outdir.rglob("*.html")) + list((outdir / "_static").glob("translations.js"))
    chars = hangul_of(pages)
    if lang == "ko":
        chars |= hangul_of(korean_sources())
    return chars


def source_font(weight: int) -> Path | None:
    for folder in SOURCES:
        path = folder / WHOLE.format(weight=weight)
        if path.exists():
            return path
    return None


def subset(source: Path, target: Path, chars: set[str]) -> int:
    """``source`` cut to ``chars`` as woff2 (layout tables kept: the font's own spacing), unhinted; its size."""
    from fontTools import subset as ft

    options = ft.Options()
    options.flavor = "woff2"
    options.name_IDs = ["*"]        # the family's names and the licence (SIL OFL 1.1)
    options.name_languages = ["*"]
    options.notdef_outline = True
    # No TrueType hinting (its instructions are 40 % of the subset: 76 kB regular with them, 47 kB
    # without): browsers draw unhinted outlines well (Google Fonts serves its fonts so).
    options.hinting = False
    font = ft.load_font(str(source), options)
    subsetter = ft.Subsetter(options)
    subsetter.populate(text="".join(sorted(chars)))
    subsetter.subset(font)
    target.parent.mkdir(parents=True, exist_ok=True)
    ft.save_font(font, str(target), options)
    return target.stat().st_size


def write_fonts(outdir: Path, lang: str, log=print) -> dict[str, int] | None:
    """The subsets of one built book; None (and the whole fonts kept) when they cannot be made."""
    fonts = Path(outdir) / "_static" / FONT_DIR
    if not fonts.exists():                      # not vendored (no npm): the stylesheet is not linked
        return None
    try:
        import brotli  # noqa: F401  (woff2)
        from fontTools import subset as _  # noqa: F401
    except ImportError as missing:
        log(f"Korean font: {missing.name} is missing (pip install -r requirements.txt): "
            "the whole NanumGothic files are used")
        return None
    chars = book_characters(Path(outdir), lang)
    sizes = {}
    for weight in WEIGHTS:
        source = source_font(weight)
        if source is None:
            log(f"Korean font: {WHOLE.format(weight=weight)} not found in {', '.join(map(str, SOURCES))}")
            return None
        name = SUBSET.format(weight=weight)
        sizes[name] = subset(source, fonts / name, chars)
    for weight in WEIGHTS:
        (fonts / WHOLE.format(weight=weight)).unlink(missing_ok=True)
    log(f"Korean font ({lang}): {len(chars)} Hangul characters, "
        + ", ".join(f"{n} {s / 1000:.1f} kB" for n, s in sizes.items()))
    return sizes


def finish(app, exception) -> None:
    if exception is not None or getattr(app.builder, "format", "") != "html":
        return
    from sphinx.util import logging

    write_fonts(Path(app.outdir), app.config.language, log=logging.getLogger(__name__).info)


def setup(app):
    app.connect("build-finished", finish, priority=900)   # after site_pages writes translations.js
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}


def main(argv: list[str]) -> int:
    from fontTools.ttLib import TTFont

    for book in argv or [str(ROOT / "_build" / "html" / "ko")]:
        for weight in WEIGHTS:
            path = Path(book) / "_static" / FONT_DIR / SUBSET.format(weight=weight)
            if not path.exists():
                print(f"{path}: missing")
                continue
            cmap = TTFont(str(path)).getBestCmap()
            hangul = sum(1 for c in cmap if HANGUL.match(chr(c)))
            print(f"{path}: {path.stat().st_size / 1000:.1f} kB, {hangul} Hangul characters")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
