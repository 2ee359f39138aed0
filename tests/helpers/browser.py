"""Headless Chromium (Debian's, driven by Playwright) and what the browser tests ask a page: fonts
that draw Hangul, the page on a phone's screen (conftest.py's browser fixture, tests/book,
tests/classroom's feedback pages)."""

from __future__ import annotations

from typing import Optional

from book.site.local_site import CHROMIUM, launch_chromium  # one launcher for tests and tools
from helpers.paths import unavailable


def chromium_browser(purpose: str):
    """Yield headless Chromium (Debian's, driven by Playwright), or skip/fail saying what is missing.

    ``purpose`` finishes the sentences "install Chromium … to <purpose>" and "CI=true: <purpose>"."""
    if not CHROMIUM.exists():
        unavailable(f"{CHROMIUM} not found: install Chromium (apt-get install chromium) to {purpose}", purpose)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("Python Playwright is not installed: pip install -r requirements.txt", purpose)
    with sync_playwright() as p:
        browser = launch_chromium(p)
        yield browser
        browser.close()


MARK_HANGUL = """(limit) => {
  const texts = [];
  for (const e of document.querySelectorAll('body *')) {
    if (limit && texts.length >= limit) break;
    const own = Array.from(e.childNodes).filter(c => c.nodeType === Node.TEXT_NODE).map(c => c.textContent).join('');
    if (/[\\uac00-\\ud7a3]/.test(own) && e.getClientRects().length) {
      e.setAttribute('data-hangul-probe', String(texts.length));
      texts.push(own.trim().slice(0, 40));
    }
  }
  return texts;
}"""


def hangul_without_nanum(page, limit: Optional[int] = None) -> tuple[list[str], list[str]]:
    """(the visible elements' Hangul texts, up to ``limit``; those Chromium drew without
    NanumGothic, so as boxes on a machine without a Korean system font). document.fonts cannot
    tell: a font can be loaded and still not be used for a run of text."""
    texts = page.evaluate(MARK_HANGUL, limit)
    if not texts:
        return texts, []
    cdp = page.context.new_cdp_session(page)
    try:
        cdp.send("DOM.enable")
        cdp.send("CSS.enable")
        root = cdp.send("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
        nodes = cdp.send("DOM.querySelectorAll", {"nodeId": root, "selector": "[data-hangul-probe]"})["nodeIds"]
        bad = []
        for node in nodes:
            fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]
            # No fonts: not drawn at all (scrolled away inside a box, collapsed).
            if fonts and not any("nanum" in f["familyName"].lower() for f in fonts):
                attributes = cdp.send("DOM.getAttributes", {"nodeId": node})["attributes"]
                text = texts[int(attributes[attributes.index("data-hangul-probe") + 1])]
                bad.append(f"{text!r} drawn with {', '.join(f['familyName'] for f in fonts)}")
        return texts, bad
    finally:
        cdp.detach()


# --- A page on a phone (test_browser.py, the book's pages) --------------------------------------

PHONE = {"width": 390, "height": 844}

# What a page shows beyond the screen's edges, outside a box that scrolls sideways (html and body
# do not count: the page itself scrolling sideways is the fault), the outermost element of each:
# shown (not visibility: hidden, not clipped away as the screen-reader-only text is), wider than
# nothing (width > 0). Then each box of the chapter (article) that scrolls sideways right now:
# reached by keyboard (its own tab stop, or one inside it, such as MathJax's), named for a screen
# reader (aria-label, or the equation it holds), and showing it scrolls (the fade or shadow that
# book/site/offline_book/narrow-screens.css draws where scroll-boxes.js marks data-scrolls).
BEYOND_THE_SCREEN = """() => {
  const width = document.documentElement.clientWidth;
  const scrolls = e => { const o = getComputedStyle(e).overflowX;
    return (o === 'auto' || o === 'scroll') && e !== document.documentElement && e !== document.body; };
  const inBox = e => { for (let p = e.parentElement; p; p = p.parentElement) if (scrolls(p)) return true; return false; };
  const unseen = e => { if (getComputedStyle(e).visibility === 'hidden') return true;
    for (let p = e; p; p = p.parentElement) { const s = getComputedStyle(p);
      if (s.clip !== 'auto' || s.clipPath !== 'none') return true; }
    return false; };
  const out = e => { const r = e.getBoundingClientRect(); return r.width > 0 && (r.right > width + 1 || r.left < -1); };
  const beyond = Array.from(document.body.querySelectorAll('*')).filter(e => out(e) && !inBox(e) && !unseen(e));
  const describe = e => { const r = e.getBoundingClientRect();
    return `${e.tagName.toLowerCase()}.${(e.getAttribute('class') || '').trim().split(/\\s+/).join('.')} ` +
           `${Math.round(r.left)}..${Math.round(r.right)} px: ${(e.textContent || '').trim().replace(/\\s+/g, ' ').slice(0, 50)}`; };
  const focusable = 'a[href], button, input, select, textarea, [tabindex]:not([tabindex="-1"])';
  const boxes = Array.from(document.querySelectorAll('article *')).filter(e =>
    e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1 && scrolls(e) && !unseen(e));
  return {
    width, pageWidth: document.documentElement.scrollWidth,
    beyond: beyond.filter(e => !beyond.includes(e.parentElement)).map(describe),
    widest: Math.round(Math.max(width, ...beyond.map(e => e.getBoundingClientRect().right))),
    boxes: boxes.map(e => { const s = getComputedStyle(e);
      return { box: describe(e), wide: e.scrollWidth,
               keyboard: e.tabIndex >= 0 || !!e.querySelector(focusable),
               named: !!(e.getAttribute('aria-label') || e.getAttribute('aria-labelledby')) ||
                      e.matches('mjx-container') || !!e.querySelector('mjx-container'),
               cue: 'scrolls' in e.dataset && (s.maskImage !== 'none' || s.webkitMaskImage !== 'none' || s.boxShadow !== 'none') }; }),
  };
}"""


# Settled at the new width: book/site/offline_book/scroll-boxes.js has marked the boxes at that width (it
# says so on <html data-scroll-boxes>; a page without it, the landing page, has none to mark) and
# the theme's sidebars have slid out of the screen (CSS transitions).
SETTLED = """(width) => (document.documentElement.dataset.scrollBoxes === String(width) ||
                       !document.querySelector('script[src*="scroll-boxes"]')) &&
                      !document.getAnimations().some(a => a instanceof CSSTransition && a.playState === 'running')"""


def on_a_phone(page, settle_ms: int = 2_000) -> dict:
    """The page (loaded at any width) resized to a phone's screen (PHONE): BEYOND_THE_SCREEN's
    report once the page has SETTLED, or ``settle_ms`` have passed (the report then shows what is
    unsettled). The page's CSS transitions are turned off first: the sidebars then leave at once."""
    page.add_style_tag(content="*, *::before, *::after { transition: none !important; }")
    page.set_viewport_size(PHONE)
    try:
        page.wait_for_function(SETTLED, arg=PHONE["width"], timeout=settle_ms)
    except Exception:   # Playwright's TimeoutError
        pass
    return page.evaluate(BEYOND_THE_SCREEN)


def phone_problems(report: dict) -> list[str]:
    """What on_a_phone's report shows wrong, one line each."""
    problems = [f"wider than the {report['width']} px screen: {e}" for e in report["beyond"]]
    if report["pageWidth"] > report["width"]:
        problems.append(f"the page scrolls sideways: {report['pageWidth']} px wide")
    for b in report["boxes"]:
        missing = [what for what in ("keyboard", "named", "cue") if not b[what]]
        if missing:
            problems.append(f"a box that scrolls sideways without {'/'.join(missing)}: {b['box']}")
    return problems
