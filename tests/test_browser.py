"""Every page of the table of contents in a real headless Chromium, served from 127.0.0.1:

- no JavaScript error (uncaught exceptions and console errors, the theme's included) and no
  response with a status >= 400 (a missing local file);
- no request to any host but the one serving the book (data: and blob: URLs aside); requests to
  other hosts are recorded and aborted, so the test never depends on the network;
- the math is typeset by MathJax (no math element left untypeset, no TeX left raw, no MathJax
  error; that chapter pages have math at all is test_book.py's, that they load the vendored
  MathJax test_offline_site.py's);
- Korean text is drawn with the book's NanumGothic web font: the font is loaded, and Chromium
  (asked through the DevTools protocol which fonts it used for each element's text) drew every
  visible element holding Hangul with it, not with a font that has no Hangul (boxes);
- pages that store Jupyter widget state render their widgets;
- on the family chapter, with no kernel, the static explorer's method buttons and its
  which-statistic slider change the picture shown.

Only what needs a real browser is checked here; what can be read in the built HTML is in
test_book.py and test_offline_site.py.

A full-page screenshot of each page is saved to test-artifacts/browser/. Chromium is the system's
(/usr/bin/chromium, which .ci/run installs) driven by Python Playwright; `playwright install` is
never needed. Without Chromium or Playwright the tests skip, except on CI (CI=true), where they fail.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import pytest

from helpers import ROOT, hangul_without_nanum, site_pages
from tools.local_site import isolated_context, serve

ARTIFACTS = ROOT / "test-artifacts" / "browser"
TIMEOUT_MS = 15_000
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
PAGES = site_pages() + ["index"]   # both books' pages (ko/chapters/ko/06_family, ...) and the landing page


@pytest.fixture(scope="session")
def book_url(offline_site):
    """The built book over HTTP on 127.0.0.1, a free port, for the whole session."""
    with serve(offline_site) as url:
        yield url


@dataclass
class Visit:
    docname: str
    errors: list[str] = field(default_factory=list)       # JS errors and >= 400 responses
    foreign: list[str] = field(default_factory=list)      # requests to other hosts
    tofu: list[str] = field(default_factory=list)         # Hangul drawn without NanumGothic
    facts: dict = field(default_factory=dict)             # what the page reported after loading
    english: list[str] = field(default_factory=list)      # interface words without Hangul, as shown
    weight: int = 0                                       # bytes of every response the page loaded
    first_paint_ms: float | None = None                   # first contentful paint


MEASURE = """async ({ hasWidgets }) => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  if (hasWidgets) {
    const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length;
    const deadline = Date.now() + 10000;
    while (Date.now() < deadline &&
           document.querySelectorAll('.widget-subarea > *').length < views) {
      await new Promise(r => setTimeout(r, 100));
    }
  }
  await document.fonts.ready;
  const rawTex = Array.from(document.querySelectorAll('.math'))
    .filter(e => !e.querySelector('mjx-container') && /\\\\[(\\[]|\\$\\$|\\\\begin\\{/.test(e.textContent))
    .map(e => e.textContent.trim().slice(0, 60));
  const nanum = Array.from(document.fonts).filter(f => f.family.replace(/["']/g, '') === 'NanumGothic');
  return {
    mathElements: document.querySelectorAll('.math').length,
    mjx: document.querySelectorAll('mjx-container').length,
    mathErrors: Array.from(document.querySelectorAll('mjx-merror')).map(e => e.textContent.slice(0, 60)),
    rawTex,
    koreanText: (document.body.innerText.match(/[\\uac00-\\ud7a3]/g) || []).length,
    nanumLoaded: nanum.some(f => f.status === 'loaded'),
    nanumCheck: document.fonts.check('16px NanumGothic', '가'),
    widgetViews: document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length,
    widgetAreas: document.querySelectorAll('.widget-subarea').length,
    widgetElements: document.querySelectorAll('.widget-subarea [class*="widget-"]').length,
  };
}"""


# What the page loaded (the page itself and every resource, decoded bytes) and its first paint.
WEIGHT = """() => [
  performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'))
    .reduce((sum, e) => sum + (e.decodedBodySize || 0), 0),
  performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? null]"""


# Every text and label a running page shows outside its chapter content (scripts' words included:
# the copy buttons' tooltips, the theme's menus) with an English word and no Hangul. Code, math
# and the cells' outputs are content; test_site.py reads the same in the HTML as written.
INTERFACE_WORDS = """() => {
  const out = new Set();
  const english = (s) => /[A-Za-z]{3,}/.test(s) && !/[\uac00-\ud7a3]/.test(s);
  const content = 'article.bd-article, code, pre, .math, mjx-container, script, style';
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n; (n = walker.nextNode());) {
    const s = n.textContent.trim();
    if (s && english(s) && n.parentElement && !n.parentElement.closest(content)) out.add(s);
  }
  for (const el of document.querySelectorAll('[aria-label], [title], [placeholder], [alt], [data-tooltip]')) {
    if (el.closest('.cell_output') || (el.closest('article.bd-article') && el.matches('a[title]'))) continue;
    for (const a of ['aria-label', 'title', 'placeholder', 'alt', 'data-tooltip']) {
      const v = el.getAttribute(a);
      if (v && v !== 'null' && english(v)) out.add(`${a}="${v.slice(0, 80)}"`);
    }
  }
  return [...out].sort();
}"""
# Names and file types, the same in both languages; "English" is the switch to the other book.
SAME_IN_EVERY_LANGUAGE = {"Binder", "Colab", "JupyterHub", ".ipynb", ".pdf", "Ctrl", "Ctrl+K", "English"}


@pytest.fixture(scope="session")
def visit(browser, book_url, offline_site):
    """visit(docname) -> Visit, loading each page once per session."""
    context = isolated_context(browser, book_url)
    host = urlsplit(book_url).netloc
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    cache: dict[str, Visit] = {}

    def load(docname: str) -> Visit:
        if docname in cache:
            return cache[docname]
        v = Visit(docname)
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)

        def on_request(req):
            parts = urlsplit(req.url)
            if parts.scheme not in ("data", "blob") and parts.netloc != host:
                v.foreign.append(req.url)

        def on_request_failed(req):
            if urlsplit(req.url).netloc == host:   # other hosts' requests are aborted on purpose
                v.errors.append(f"request failed ({req.failure}): {req.url}")

        page.on("request", on_request)
        page.on("requestfailed", on_request_failed)
        page.on("response", lambda r: r.status >= 400 and v.errors.append(f"HTTP {r.status}: {r.url}"))
        page.on("pageerror", lambda e: v.errors.append(f"uncaught: {e}"))
        page.on("console", lambda m: m.type == "error" and v.errors.append(
            f"console.error: {m.text} ({m.location.get('url', '')}:{m.location.get('lineNumber', '')})"))
        html = (offline_site / f"{docname}.html").read_text(encoding="utf-8")
        page.goto(f"{book_url}/{docname}.html", wait_until="load")
        v.facts = page.evaluate(MEASURE, {"hasWidgets": WIDGET_STATE in html})
        v.weight, v.first_paint_ms = page.evaluate(WEIGHT)
        v.english = page.evaluate(INTERFACE_WORDS)
        _, v.tofu = hangul_without_nanum(page, limit=400)
        page.screenshot(path=str(ARTIFACTS / f"{screenshot_name(docname)}.png"), full_page=True)
        page.close()
        cache[docname] = v
        return v

    yield load
    context.close()


def screenshot_name(docname: str) -> str:
    """ko/chapters/ko/03_batchnorm -> ko_03_batchnorm; ko/glossary -> ko_glossary; index -> index."""
    parts = docname.split("/")
    return "_".join(parts[:1] + parts[3:] if parts[1:2] == ["chapters"] else parts)


@pytest.mark.parametrize("docname", PAGES)
def test_page_loads_cleanly_from_its_own_host(visit, docname):
    v = visit(docname)
    f = v.facts
    problems = [f"request to another host: {u}" for u in v.foreign] + v.errors
    if f["mathElements"] and not f["mjx"]:
        problems.append(f"{f['mathElements']} math elements but nothing typeset")
    problems += [f"TeX left raw: {t!r}" for t in f["rawTex"]]
    problems += [f"MathJax error: {t!r}" for t in f["mathErrors"]]
    if f["koreanText"] and not (f["nanumLoaded"] and f["nanumCheck"]):
        problems.append(f"{f['koreanText']} Hangul characters but the NanumGothic web font is not loaded")
    problems += [f"Hangul not in NanumGothic: {t}" for t in v.tofu]
    assert not problems, f"{docname}:\n  " + "\n  ".join(problems)


def test_korean_pages_show_korean_text(visit):
    """The Korean chapters show Hangul, so test_page_loads_cleanly_from_its_own_host checks their
    font (it checks NanumGothic on every page that shows Hangul)."""
    korean = [d for d in PAGES if d.startswith("ko/chapters/ko/")]
    assert korean, "no Korean chapter in _toc.yml"
    for docname in korean:
        f = visit(docname).facts
        assert f["koreanText"] > 100, f"{docname}: hardly any Hangul on the page"


def test_korean_pages_show_no_english_interface_word_as_they_run(visit):
    """What the reader meets on a Korean page once its scripts have run: the theme's menus, the
    copy buttons' tooltips, the collapsed cells, all in Korean (the words: locale/ko/.../sphinx.po)."""
    found = {}
    for docname in [d for d in PAGES if d.startswith("ko/")]:
        for word in visit(docname).english:
            if word not in SAME_IN_EVERY_LANGUAGE:
                found.setdefault(word, docname)
    assert not found, "English on Korean pages:\n" + "\n".join(f"  {w} ({d})" for w, d in found.items())


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_the_headers_sidebar_buttons_open_the_tables_of_contents(browser, book_url, lang):
    """The ☰ button a reader sees opens the book's table of contents on a phone (a dialog) and
    hides the sidebar on a wide screen; the page's table-of-contents button opens it on a phone.
    (The themes listen on a hidden button only; tools/site_templates/static/site.js forwards.)"""
    docname = f"{lang}/chapters/{lang}/03_batchnorm"
    state = """() => ({
      primaryDialog: document.getElementById('pst-primary-sidebar-modal')?.open ?? null,
      secondaryDialog: document.getElementById('pst-secondary-sidebar-modal')?.open ?? null,
      sidebarHidden: document.getElementById('pst-primary-sidebar').classList.contains('pst-sidebar-hidden')})"""
    context = isolated_context(browser, book_url)
    try:
        page = context.new_page()
        page.set_viewport_size({"width": 390, "height": 800})
        page.goto(f"{book_url}/{docname}.html", wait_until="load")
        page.locator(".bd-header-article .primary-toggle").click()
        assert page.wait_for_function(f"({state})().primaryDialog === true", timeout=TIMEOUT_MS)
        page.keyboard.press("Escape")
        page.locator(".bd-header-article .secondary-toggle").click()
        assert page.wait_for_function(f"({state})().secondaryDialog === true", timeout=TIMEOUT_MS)
        page.set_viewport_size({"width": 1280, "height": 800})
        page.goto(f"{book_url}/{docname}.html", wait_until="load")
        assert page.evaluate(state)["sidebarHidden"] is False
        page.locator(".bd-header-article .primary-toggle").click()
        assert page.wait_for_function(f"({state})().sidebarHidden === true", timeout=TIMEOUT_MS)
    finally:
        context.close()


# The heaviest page, chapter 6, measured the same way (WEIGHT) on the book as it was before it became one
# book per language (issue 19: one Jupyter Book with both languages, commit fe8204c): every
# response's bytes, MathJax, the widget manager and the fonts included. It must not grow.
HEAVIEST = "06_family"
WEIGHT_BEFORE_MB = {"ko": 9.64, "en": 9.66}


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_the_heaviest_page_is_no_heavier_than_before(visit, lang):
    v = visit(f"{lang}/chapters/{lang}/{HEAVIEST}")
    print(f"\n{lang}/{HEAVIEST}: {v.weight / 1e6:.2f} MB loaded (before: {WEIGHT_BEFORE_MB[lang]} MB), "
          f"first contentful paint {v.first_paint_ms:.0f} ms (one load on this machine: not asserted)")
    assert v.weight > 1e6, "the page's responses were not counted"
    assert v.weight <= WEIGHT_BEFORE_MB[lang] * 1e6, f"{v.weight / 1e6:.2f} MB, was {WEIGHT_BEFORE_MB[lang]} MB"


def test_pages_with_widget_state_render_their_widgets(visit, offline_site):
    with_state = [d for d in PAGES if WIDGET_STATE in (offline_site / f"{d}.html").read_text(encoding="utf-8")]
    if not with_state:
        pytest.skip("no page in _toc.yml stores Jupyter widget state yet")
    for docname in with_state:   # their errors and requests: test_page_loads_cleanly_from_its_own_host
        f = visit(docname).facts
        assert f["widgetViews"] > 0, f"{docname}: widget state but no widget view"
        assert f["widgetAreas"] >= f["widgetViews"], \
            f"{docname}: {f['widgetAreas']} of {f['widgetViews']} widget views rendered"
        assert f["widgetElements"] >= f["widgetViews"], f"{docname}: widget areas without .widget-* elements"


VISIBLE_PICTURE = """(root) => {
  const shown = Array.from(root.querySelectorAll('img')).filter(i => i.offsetParent !== null && i.getClientRects().length);
  return shown.map(i => i.src.slice(-120));
}"""


@contextlib.contextmanager
def family_explorer(browser, book_url, lang):
    """The family chapter's static page (no kernel), scrolled to its explorer: yields (docname,
    page, explorer, problems). After the block, ``problems`` holds every request to another host
    and every JavaScript error the visit caused."""
    docname = f"{lang}/chapters/{lang}/06_family"
    if docname not in PAGES:
        pytest.fail(f"{docname} is not in the {lang} book (_toc.yml)")
    foreign, errors = [], []
    context = isolated_context(browser, book_url, foreign)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.on("pageerror", lambda e: errors.append(str(e)))
    problems: list[str] = []
    try:
        page.goto(f"{book_url}/{docname}.html", wait_until="load")
        explorer = page.locator(".normlib-explorer").first
        explorer.wait_for(state="visible")
        explorer.scroll_into_view_if_needed()
        yield docname, page, explorer, problems
    finally:
        context.close()
        problems.extend(foreign + errors)


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_clicking_a_method_in_the_static_explorer_changes_the_picture(browser, book_url, lang):
    """On the family chapter, with no kernel: the explorer's first method selector switches the
    visible picture (checked in the DOM and on screenshots, saved as artifacts)."""
    with family_explorer(browser, book_url, lang) as (docname, page, explorer, problems):
        methods = explorer.locator(".normlib-method").first
        buttons = methods.locator("button")
        assert buttons.count() == 5, f"{docname}: {buttons.count()} method buttons in the image layout"
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        before_src = explorer.evaluate(VISIBLE_PICTURE)
        before_png = explorer.screenshot(path=str(ARTIFACTS / f"{lang}_06_explorer_batch.png"))
        assert len(before_src) == 1, f"{docname}: {len(before_src)} pictures visible at once"
        shots = {}
        for index, name in ((2, "instance"), (1, "layer")):
            buttons.nth(index).click()
            page.wait_for_function("([root, old]) => { const i = Array.from(root.querySelectorAll('img'))"
                                   ".filter(i => i.offsetParent !== null); return i.length === 1 && !i[0].src.endsWith(old); }",
                                   arg=[explorer.element_handle(), before_src[0]])
            after_src = explorer.evaluate(VISIBLE_PICTURE)
            assert after_src != before_src, f"{docname}: clicking {name} did not change the picture"
            assert "mod-active" in (buttons.nth(index).get_attribute("class") or "")
            shots[name] = explorer.screenshot(path=str(ARTIFACTS / f"{lang}_06_explorer_{name}.png"))
        assert len({before_png, shots["instance"], shots["layer"]}) == 3, "screenshots did not change"
    assert not problems, problems


# The picture the explorer shows: its <img> is re-created from a new blob: URL at every switch, so
# the URL changing says nothing; the bytes behind it (SHA-256, computed in the page) say which.
SHOWN_PICTURE = """async (root) => {
  const shown = Array.from(root.querySelectorAll('img')).filter(i => i.offsetParent !== null && i.getClientRects().length);
  if (shown.length !== 1) return { count: shown.length };
  const bytes = await (await fetch(shown[0].src)).arrayBuffer();
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  return { count: 1, size: bytes.byteLength, sha: Array.from(digest, b => b.toString(16).padStart(2, '0')).join('') };
}"""


def shown_picture(explorer, other_than: str | None = None) -> dict:
    """The explorer's visible picture; with ``other_than``, waits until it is another one."""
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while True:
        shown = explorer.evaluate(SHOWN_PICTURE)
        if shown["count"] == 1 and shown["sha"] != other_than:
            return shown
        if time.monotonic() > deadline:
            return shown
        time.sleep(0.1)


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_the_which_statistic_slider_changes_the_picture_without_a_kernel(browser, book_url, lang):
    """On the family chapter's static page (no kernel), moving the explorer's which-statistic
    slider, with the keyboard and with the mouse, shows another picture for every value, and
    the same picture again when it comes back."""
    with family_explorer(browser, book_url, lang) as (docname, page, explorer, problems):
        slider = explorer.locator(".normlib-which:visible")
        assert slider.count() == 1, f"{docname}: {slider.count()} which-statistic sliders visible"
        handle = slider.locator(".noUi-handle")
        readout = slider.locator(".widget-readout")
        top = int(float(handle.get_attribute("aria-valuemax")))
        assert top >= 2 and readout.inner_text().strip() == "0", (top, readout.inner_text())
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shown = {0: shown_picture(explorer)}
        assert shown[0]["count"] == 1, f"{docname}: {shown[0]['count']} pictures visible at once"
        explorer.screenshot(path=str(ARTIFACTS / f"{lang}_06_slider_0.png"))

        handle.focus()
        page.keyboard.press("ArrowRight")                      # the keyboard: one step
        shown[1] = shown_picture(explorer, other_than=shown[0]["sha"])
        assert readout.inner_text().strip() == "1", f"{docname}: the slider did not move to 1"
        explorer.screenshot(path=str(ARTIFACTS / f"{lang}_06_slider_1.png"))

        box, grip = slider.locator(".noUi-base").bounding_box(), handle.bounding_box()
        y = grip["y"] + grip["height"] / 2
        page.mouse.move(grip["x"] + grip["width"] / 2, y)      # the mouse: drag to the far end
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] + 20, y, steps=10)
        page.mouse.up()
        shown[top] = shown_picture(explorer, other_than=shown[1]["sha"])
        assert readout.inner_text().strip() == str(top), f"{docname}: the slider did not move to {top}"
        explorer.screenshot(path=str(ARTIFACTS / f"{lang}_06_slider_{top}.png"))

        page.keyboard.press("Home")                            # and back to the first statistic
        back = shown_picture(explorer, other_than=shown[top]["sha"])
        assert readout.inner_text().strip() == "0", f"{docname}: the slider did not go back to 0"
    assert all(s["count"] == 1 for s in shown.values()), f"{docname}: pictures shown {shown}"
    assert len({s["sha"] for s in shown.values()}) == 3, \
        f"{docname}: moving the slider (0 → 1 → {top}) did not change the picture each time: {shown}"
    assert back.get("sha") == shown[0]["sha"], f"{docname}: back at 0, another picture than at first"
    assert not problems, problems
