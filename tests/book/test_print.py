"""A chapter printed, or saved as PDF, from the built site: what a teacher hands out.

Chromium prints (``page.pdf()``, A4) the Korean page of chapter 6 (the explorers, and Hangul in
every kind of block) and the English page of chapter 9 (the widest equation, long code lines),
served from 127.0.0.1 with every request to another host aborted. The two books share one
stylesheet and one layout, so each chapter is printed in one language: a printout takes about
12 s, and the other two repeated these (the four printed until issue 38 passed and failed together). pypdf 7.1 reads the PDFs:

- no interface on paper: no text that only the sidebars, the article header (launch, download,
  search, colour mode, the language switch), the theme's printed "Contents", Previous/Next or the
  "Show code cell" toggles hold (the texts are read from the page itself, so they are the page's
  own words in its own language);
- no cut lines: every source and text output line of the chapter's notebook that the page shows
  (the longest first: they are the ones a page would cut) is in the PDF's text whole, wrapped or
  not (whitespace aside);
- Hangul in NanumGothic: every run of text holding Hangul is drawn in a font named NanumGothic
  (the book's web font: a machine without Korean fonts would print boxes otherwise), and the
  Korean pages have such runs;
- the figures: at least as many images as the notebook shows image outputs; each explorer prints
  its current state (its drawing, the sentence that describes it and the chosen cell's formula are
  in the PDF's text);
- the math is shown on paper: every MathJax element has a box under print emulation, and no
  display equation starts left of the text column or ends past the right margin (the theme's
  right-to-left layout of an equation and its number ran a wide one off the paper's left edge);
- nothing is wider than the paper's text column (under print emulation at its width);
- dark mode prints as light mode: with the theme switched to dark, the page under print emulation
  is drawn pixel for pixel as in light mode;
- the page count is at most PAGE_SLACK times the chapter's length laid out continuously at the
  page's width (see PAGE_SLACK), and no more than the theme alone prints (the same page printed
  again with the print stylesheet removed).

The PDFs and a picture of each printout (the page under print emulation) are saved to
test-artifacts/print/ for a human to look at.
"""

from __future__ import annotations

import io
import json
import math
import re
import time
import unicodedata
from dataclasses import dataclass, field

import pytest
from PIL import Image
from pypdf import PdfReader

from book.site.local_site import isolated_context, serve
from helpers.paths import ROOT
from helpers.text import has_hangul

# what this module needs beyond Python (tests/conftest.py: not in make test-fast)
pytestmark = pytest.mark.browser

ARTIFACTS = ROOT / "test-artifacts" / "print"
TIMEOUT_MS = 15_000
PAGES = [("ko", "06_family"),          # the explorers, Hangul in text, code, outputs and figures
         ("en", "09_distributed")]     # the widest equation, the longest code lines
MM = 96 / 25.4                       # CSS px per millimetre
A4 = (210 * MM, 297 * MM)
# The stylesheet keeps figures, explorers, table rows and code blocks of up to five lines whole and
# a heading with what follows it. Each such block that does not fit where it falls moves to the next
# page and leaves the rest of the page blank. A third more than the chapter's continuous length
# still makes a handout without half-empty pages; more would mean the breaks waste whole pages.
PAGE_SLACK = 4 / 3
LONG = 90                            # characters: a line longer than this wraps on A4 (code at 10 pt)

# What has no use on paper; their texts must not be in the PDF (unless the article says them too).
INTERFACE = [".bd-sidebar-primary", ".bd-sidebar-secondary", ".bd-header-article", ".bd-header",
             "#jb-print-docs-body", ".prev-next-footer", ".language-switch", "details.hide > summary"]

READY = """async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length;
  const deadline = Date.now() + 10000;
  while (Date.now() < deadline && document.querySelectorAll('.anywidget-view .nx').length < views)
    await new Promise(r => setTimeout(r, 100));
  await document.fonts.ready;
  return { views, rendered: document.querySelectorAll('.anywidget-view .nx').length };
}"""

INTERFACE_TEXTS = """(selectors) => {
  const flat = s => s.normalize('NFKC').replace(/\\s+/g, '');
  const copy = (document.querySelector('.bd-article') || document.body).cloneNode(true);
  copy.querySelectorAll(selectors.join(',')).forEach(e => e.remove());
  const article = flat(copy.textContent);
  const texts = new Set();
  for (const region of document.querySelectorAll(selectors.join(','))) {
    const walk = document.createTreeWalker(region, NodeFilter.SHOW_TEXT);
    for (let node = walk.nextNode(); node; node = walk.nextNode()) {
      if (node.parentElement.closest('script, style')) continue;
      const text = node.textContent.trim();
      if (flat(text).length >= 2 && !article.includes(flat(text))) texts.add(text);
    }
  }
  return Array.from(texts);
}"""

# What each explorer shows of its current state: the sentence that describes it, the chosen cell's
# formula and its cells (SVG rectangles, or the table's inputs), drawn in the browser.
EXPLORER_STATE = """() => Array.from(document.querySelectorAll('.anywidget-view .nx'), (nx) => ({
  summary: (nx.querySelector('.nx-summary') || {}).textContent || '',
  formula: (nx.querySelector('.nx-formula') || {}).textContent || '',
  cells: nx.querySelectorAll('[data-stat]').length,
}))"""

# Under print emulation: the @page margins the stylesheets set, and what would be hidden.
PRINT_FACTS = """() => {
  const FIGURES = '.bd-article figure img, .bd-article .cell_output img';
  const margins = [];
  const walk = rules => { for (const r of rules) {
    if (r instanceof CSSPageRule) margins.push([r.style.marginTop, r.style.marginRight, r.style.marginBottom, r.style.marginLeft]);
    else if (r.cssRules) walk(r.cssRules);
  } };
  for (const sheet of document.styleSheets) { try { walk(sheet.cssRules); } catch (e) {} }
  const hidden = sel => Array.from(document.querySelectorAll(sel)).filter(e => !e.getClientRects().length).length;
  return {
    margins,
    math: document.querySelectorAll('.bd-article mjx-container').length,
    hiddenMath: hidden('.bd-article mjx-container'),
    figures: document.querySelectorAll(FIGURES).length,
    hiddenFigures: hidden(FIGURES),
    // Display equations: how far each starts left of the text column and ends right of it (px).
    equations: Array.from(document.querySelectorAll('.bd-article mjx-container[display="true"] > mjx-math'), m => {
      const column = document.querySelector('.bd-article').getBoundingClientRect(), box = m.getBoundingClientRect();
      return [column.left - box.left, box.right - column.right, m.parentElement.textContent.slice(0, 40)];
    }),
  };
}"""


WITHOUT_PRINT_CSS = """() => {
  document.querySelectorAll('link[href*="offline/print.css"]').forEach(l => l.remove());
  document.documentElement.dataset.theme = 'light';
}"""


@dataclass(repr=False)
class Printout:
    lang: str
    chapter: str
    pages: int = 0
    text: str = ""                                     # the PDF's text, flattened (see flat)
    hangul_fonts: set = field(default_factory=set)     # fonts of the runs of text holding Hangul
    images: list = field(default_factory=list)         # the PDF's images (PIL)
    interface: list[str] = field(default_factory=list)
    explorers: list = field(default_factory=list)      # what each explorer shows (EXPLORER_STATE)
    facts: dict = field(default_factory=dict)
    continuous_pages: float = 0.0
    pages_without_print_css: int = 0
    right_margin: float = 0.0                          # px
    dark_as_light: bool = False
    problems: list[str] = field(default_factory=list)  # requests to other hosts, JavaScript errors
    seconds: float = 0.0

    def __repr__(self) -> str:
        return f"Printout({self.lang}/{self.chapter}: {self.pages} pages)"


def flat(text: str) -> str:
    """Compatibility-normalised (ligatures spelled out) and without whitespace: a wrapped line
    and the line it was are the same string."""
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text))


def mm(value: str) -> float:
    """A CSS length from an @page rule, in px (mm, cm, in, pt or px)."""
    m = re.fullmatch(r"([\d.]+)(mm|cm|in|pt|px)", value.strip())
    if not m:
        pytest.fail(f"@page margin {value!r}: expected a length in mm, cm, in, pt or px")
    return float(m[1]) * {"mm": MM, "cm": 10 * MM, "in": 96, "pt": 96 / 72, "px": 1}[m[2]]


def read_pdf(data: bytes, out: Printout, bottom_margin: float) -> None:
    """The PDF's pages, text, fonts of Hangul and images into ``out``. The text is the page
    area's, without the math: what is in the bottom margin (``bottom_margin`` px: the page
    numbers) is left out, or a line wrapped across two pages would read with the page number
    inside it."""
    reader = PdfReader(io.BytesIO(data))
    out.pages = len(reader.pages)
    texts = []
    above = bottom_margin * 72 / 96                 # PDF units (pt) from the page's bottom edge

    def visit(text, cm, tm, font, size):
        y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]   # where the text starts, from the bottom
        # Math is drawn in MathJax's fonts, which Chromium embeds as Type 3, after the rest of
        # the page: left out, it cannot come between the two parts of a line wrapped across pages.
        if y >= above and (font or {}).get("/Subtype") != "/Type3":
            texts.append(text)
        if has_hangul(text):
            out.hangul_fonts.add(str((font or {}).get("/BaseFont", "(no font name)")))

    for page in reader.pages:
        page.extract_text(visitor_text=visit)
        out.images += [image.image for image in page.images]
    out.text = flat("".join(texts))


@pytest.fixture(scope="module")
def printed(browser, offline_site):
    """printed(lang, chapter) -> Printout, printing each chapter page once."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    cache: dict[tuple[str, str], Printout] = {}
    with serve(offline_site) as url:
        foreign: list[str] = []
        context = isolated_context(browser, url, foreign)

        def load(lang: str, chapter: str) -> Printout:
            if (lang, chapter) in cache:
                return cache[lang, chapter]
            out = Printout(lang, chapter)
            started = time.monotonic()
            foreign.clear()
            page = context.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            page.on("pageerror", lambda e: out.problems.append(f"uncaught: {e}"))
            page.goto(f"{url}/{lang}/chapters/{lang}/{chapter}.html", wait_until="load")
            ready = page.evaluate(READY)
            if ready["rendered"] < ready["views"]:
                out.problems.append(f"{ready['rendered']} of {ready['views']} widget views rendered")
            out.interface = page.evaluate(INTERFACE_TEXTS, INTERFACE)
            out.explorers = page.evaluate(EXPLORER_STATE)
            page.emulate_media(media="print")
            out.facts = page.evaluate(PRINT_FACTS)
            # Without an @page rule, page.pdf() prints with no margins.
            top, right, bottom, left = (mm(v) for v in (out.facts["margins"] or [["0px"] * 4])[-1])
            out.right_margin = right
            data = page.pdf(format="A4")
            (ARTIFACTS / f"{lang}_{chapter}.pdf").write_bytes(data)
            read_pdf(data, out, bottom)

            page.set_viewport_size({"width": round(A4[0] - left - right), "height": 900})
            page.wait_for_timeout(200)
            out.facts["equations"] = page.evaluate(PRINT_FACTS)["equations"]   # at the page's width
            out.facts["too_wide"] = page.evaluate("document.documentElement.scrollWidth - innerWidth")
            height = page.evaluate("document.documentElement.scrollHeight")
            out.continuous_pages = height / (A4[1] - top - bottom)
            light = page.screenshot(full_page=True)
            (ARTIFACTS / f"{lang}_{chapter}_print.png").write_bytes(light)
            page.evaluate("document.documentElement.dataset.theme = 'dark'")
            page.wait_for_timeout(200)
            out.dark_as_light = _pixels(page.screenshot(full_page=True)) == _pixels(light)
            # The same page printed by the theme alone, without the print stylesheet.
            page.evaluate(WITHOUT_PRINT_CSS)
            out.pages_without_print_css = len(PdfReader(io.BytesIO(page.pdf(format="A4"))).pages)
            page.close()
            out.problems += [f"request to another host: {u}" for u in foreign]
            out.seconds = time.monotonic() - started
            cache[lang, chapter] = out
            return out

        yield load
        context.close()
    _report(cache)


def _pixels(png: bytes):
    image = Image.open(io.BytesIO(png)).convert("RGB")
    return image.size, image.tobytes()


def _report(cache: dict) -> None:
    """One line per printout in test-artifacts/print/report.txt (and on the terminal with -s)."""
    lines = [f"{p.lang}/{p.chapter}: {p.pages} pages (continuous length {p.continuous_pages:.2f} pages, "
             f"ratio {p.pages / max(p.continuous_pages, 1e-9):.2f}; {p.pages_without_print_css} pages without "
             f"the print stylesheet), {len(p.images)} images, "
             f"{len(p.interface)} interface texts checked, printed in {p.seconds:.1f} s"
             for p in cache.values()]
    if lines:
        (ARTIFACTS / "report.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        print("\n" + "\n".join(lines))


# --- What the notebook shows ---------------------------------------------------------------------

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def shown_lines(lang: str, chapter: str) -> tuple[list[str], list[str], int]:
    """(source lines, text output lines, image outputs) of the cells the page shows expanded:
    no removed cell, input or output, and no input or cell the page folds away."""
    nb = json.loads((ROOT / "chapters" / lang / f"{chapter}.ipynb").read_text(encoding="utf-8"))
    sources, outputs, images = [], [], 0
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        tags = set(cell.get("metadata", {}).get("tags", []))
        if tags & {"remove-cell", "hide-cell"}:
            continue
        if not tags & {"remove-input", "hide-input"}:
            sources += "".join(cell["source"]).splitlines()
        if tags & {"remove-output", "hide-output"}:
            continue
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            if o["output_type"] == "stream":
                outputs += ANSI.sub("", "".join(o["text"])).splitlines()
            elif any(k.startswith("image/") for k in data) and not any(
                    k in data for k in ("application/vnd.jupyter.widget-view+json", "text/html")):
                images += 1
            elif set(data) == {"text/plain"}:
                outputs += ANSI.sub("", "".join(data["text/plain"])).splitlines()
    return sources, outputs, images


def longest_first(lines: list[str]) -> list[str]:
    return sorted({line.rstrip() for line in lines if flat(line)}, key=len, reverse=True)


# --- The checks ----------------------------------------------------------------------------------

@pytest.mark.parametrize("lang,chapter", PAGES)
def test_the_printout_has_no_interface_text(printed, lang, chapter):
    p = printed(lang, chapter)
    assert not p.problems, p.problems
    assert len(p.interface) >= 10, f"{lang}/{chapter}: only {len(p.interface)} interface texts found: {p.interface}"
    on_paper = [t for t in p.interface if flat(t) in p.text]
    assert not on_paper, f"{lang}/{chapter}: interface text printed: {on_paper}"


@pytest.mark.parametrize("lang,chapter", PAGES)
def test_code_and_output_lines_are_printed_whole(printed, lang, chapter):
    p = printed(lang, chapter)
    sources, outputs, _ = shown_lines(lang, chapter)
    checked = longest_first(sources + outputs)
    assert len(checked[0]) > LONG, \
        f"{lang}/{chapter}: no line longer than {LONG} characters, so no line to wrap: {checked[:1]}"
    cut = [line for line in checked if flat(line) not in p.text]
    assert not cut, f"{lang}/{chapter}: {len(cut)} of {len(checked)} lines not printed whole (cut, " \
                    "or missing), the longest:\n" + "\n".join(cut[:10])


@pytest.mark.parametrize("lang,chapter", PAGES)
def test_hangul_is_printed_in_nanum_gothic(printed, lang, chapter):
    p = printed(lang, chapter)
    others = {f for f in p.hangul_fonts if "NanumGothic" not in f}
    assert not others, f"{lang}/{chapter}: Hangul drawn in {sorted(others)}"
    if lang == "ko":
        assert p.hangul_fonts, f"{lang}/{chapter}: no text of the PDF reads as Hangul (Hangul drawn " \
                               "without a Korean font prints as boxes, which read as nothing)"


@pytest.mark.parametrize("lang,chapter", PAGES)
def test_the_figures_explorers_and_math_are_printed(printed, lang, chapter):
    p = printed(lang, chapter)
    _, _, image_outputs = shown_lines(lang, chapter)
    assert len(p.images) >= image_outputs, \
        f"{lang}/{chapter}: {len(p.images)} images in the PDF, {image_outputs} image outputs on the page"
    if chapter == "06_family":
        assert p.explorers, f"{lang}/{chapter}: no explorer drawn on the page"
    for index, shown in enumerate(p.explorers):      # the explorer prints its current state
        assert shown["cells"] > 0, f"{lang}/{chapter}: explorer {index} drew no cell"
        for what in ("summary", "formula"):
            assert flat(shown[what]) and flat(shown[what]) in p.text, \
                f"{lang}/{chapter}: explorer {index}'s {what} is not in the PDF: {shown[what]!r}"
    f = p.facts
    assert f["math"] > 0 and f["hiddenMath"] == 0, f"{lang}/{chapter}: math on paper: {f}"
    off_paper = [(text, round(before), round(after)) for before, after, text in f["equations"]
                 if before > 1 or after > p.right_margin]
    assert not off_paper, f"{lang}/{chapter}: display equations running off the paper (text, px left of the " \
                          f"column, px right of it; the right margin is {p.right_margin:.0f} px): {off_paper}"
    assert f["figures"] > 0 and f["hiddenFigures"] == 0, f"{lang}/{chapter}: figures on paper: {f}"


def _rgb(image):
    """The picture as it looks on white paper."""
    if image.mode in ("RGBA", "LA", "P"):
        rgba = image.convert("RGBA")
        paper = Image.new("RGBA", rgba.size, "white")
        return Image.alpha_composite(paper, rgba).convert("RGB")
    return image.convert("RGB")


@pytest.mark.parametrize("lang,chapter", PAGES)
def test_nothing_is_wider_than_the_paper(printed, lang, chapter):
    """Chromium shrinks a whole printout to fit content wider than the page (the text of every
    page smaller for one long equation), or, printing anyway, cuts it at the paper's edge."""
    too_wide = printed(lang, chapter).facts["too_wide"]
    assert too_wide <= 0, f"{lang}/{chapter}: the page is {too_wide} px wider than the paper's text column"


@pytest.mark.parametrize("lang,chapter", PAGES)
def test_dark_mode_prints_in_light_colours(printed, lang, chapter):
    assert printed(lang, chapter).dark_as_light, \
        f"{lang}/{chapter}: with the dark theme, the page under print emulation differs from light mode"


@pytest.mark.parametrize("lang,chapter", PAGES)
def test_the_page_count_is_close_to_the_chapters_length(printed, lang, chapter):
    p = printed(lang, chapter)
    bound = math.ceil(PAGE_SLACK * p.continuous_pages)
    assert 0 < p.pages <= bound, \
        f"{lang}/{chapter}: {p.pages} pages for {p.continuous_pages:.2f} pages of continuous print (at most {bound})"
    assert p.pages <= p.pages_without_print_css, \
        f"{lang}/{chapter}: {p.pages} pages, {p.pages_without_print_css} without the print stylesheet"
