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
- pages that store Jupyter widget state render their widgets (the explorers, mounted by the book's
  anywidget loader; what they compute and how a reader works them: test_explorer.py);
- on a phone (the same load, resized to 390 × 844): nothing wider than the screen but a box that
  scrolls sideways, and each such box of a chapter (a printed output, code, a table, an equation)
  reached by keyboard, named for a screen reader and showing that it scrolls
  (tools/offline_book/narrow-screens.css and scroll-boxes.js; helpers.on_a_phone).

Only what needs a real browser is checked here; what can be read in the built HTML is in
test_book.py and test_offline_site.py.

A full-page screenshot of each page is saved to test-artifacts/browser/. Chromium is the system's
(/usr/bin/chromium, which .ci/run installs) driven by Python Playwright; `playwright install` is
never needed. Without Chromium or Playwright the tests skip, except on CI (CI=true), where they fail.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import pytest

from helpers import ROOT, hangul_without_nanum, on_a_phone, phone_problems, site_pages
from tools.local_site import isolated_context

ARTIFACTS = ROOT / "test-artifacts" / "browser"
TIMEOUT_MS = 15_000
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
PAGES = site_pages() + ["index"]   # both books' pages (ko/chapters/ko/06_family, ...) and the landing page


@dataclass
class Visit:
    docname: str
    errors: list[str] = field(default_factory=list)       # JS errors and >= 400 responses
    foreign: list[str] = field(default_factory=list)      # requests to other hosts
    tofu: list[str] = field(default_factory=list)         # Hangul drawn without NanumGothic
    facts: dict = field(default_factory=dict)             # what the page reported after loading
    english: list[str] = field(default_factory=list)      # interface words without Hangul, as shown
    phone: dict = field(default_factory=dict)             # the page resized to a phone's (helpers.on_a_phone)


MEASURE = """async ({ hasWidgets }) => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  if (hasWidgets) {
    const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length;
    const deadline = Date.now() + 10000;
    while (Date.now() < deadline &&
           document.querySelectorAll('.anywidget-view .nx').length < views) {
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
    widgetAreas: document.querySelectorAll('.anywidget-view').length,
    widgetElements: document.querySelectorAll('.anywidget-view .nx [data-stat]').length,
  };
}"""


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
        v.english = page.evaluate(INTERFACE_WORDS)
        _, v.tofu = hangul_without_nanum(page, limit=400)
        page.screenshot(path=str(ARTIFACTS / f"{screenshot_name(docname)}.png"), full_page=True)
        v.phone = on_a_phone(page)   # last: it turns the page's transitions off
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


@pytest.mark.parametrize("docname", PAGES)
def test_page_fits_a_phone(visit, docname):
    """At 390 px a wide printed output, code, table or equation scrolls inside its own box, which
    a reader can see (the edge with more is shaded), reach by keyboard and hear named; nothing else
    is wider than the screen, and the page does not scroll sideways."""
    problems = phone_problems(visit(docname).phone)
    assert not problems, f"{docname} at 390 px:\n  " + "\n  ".join(problems[:15])


WIDE = "x" * 120
DOCTORED_PHONE_PAGE = f"""<!DOCTYPE html><html lang="en"><body style="margin: 0"><article>
<p>A word longer than the line: <code style="white-space: nowrap">{WIDE}</code> sticks out.</p>
<pre style="overflow-x: auto">unmarked {WIDE}</pre>
<pre style="overflow-x: auto; box-shadow: inset -8px 0 8px -8px #000" tabindex="0" role="group"
     aria-label="Output" data-scrolls="right">marked {WIDE}</pre>
<span style="position: absolute; clip: rect(0 0 0 0); width: 900px">read aloud only</span>
<div style="visibility: hidden; width: 900px">hidden</div>
</article></body></html>"""


def test_the_phone_check_reports_what_sticks_out_and_an_unmarked_box(browser):
    """helpers.on_a_phone on a page of its own: the paragraph wider than the screen and the page
    scrolling sideways, the box that scrolls with no tab stop, name or cue; not the box that has
    them, nor what is hidden or read aloud only."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.set_content(DOCTORED_PHONE_PAGE)
        problems = phone_problems(on_a_phone(page, settle_ms=200))
    finally:
        context.close()
    assert len(problems) == 3, problems
    assert problems[0].startswith("wider than the 390 px screen: code. ") and WIDE[:40] in problems[0], problems
    assert problems[1].startswith("the page scrolls sideways"), problems
    assert "without keyboard/named/cue" in problems[2] and ": unmarked x" in problems[2], problems


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


def notebook_headings(lang: str, stem: str) -> list[str]:
    """The chapter's headings as its notebook writes them (Markdown's backticks dropped), in order."""
    nb = json.loads((ROOT / "chapters" / lang / f"{stem}.ipynb").read_text(encoding="utf-8"))
    return [m.group(1).replace("`", "").strip() for c in nb["cells"] if c["cell_type"] == "markdown"
            for line in "".join(c["source"]).splitlines() if (m := re.match(r"#{1,6} (.+)", line))]


# A heading's text as the notebook writes it: the permalink's "#" dropped, Sphinx's curly quotes straight.
PLAIN = """const plain = (s) => s.replace('#', '').replace(/[\u2018\u2019]/g, "'").replace(/[\u201c\u201d]/g, '"').trim();"""
def click_switch(page) -> None:
    """Click the header's switch where it is, as a reader does (Playwright's click() first scrolls
    the page, which would change the section in view)."""
    box = page.locator("a.language-switch").first.bounding_box()
    with page.expect_navigation():
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)


IN_VIEW = """() => {
  """ + PLAIN + """
  const named = document.getElementById(decodeURIComponent(location.hash.slice(1)));
  const heading = named && named.closest('section').querySelector(':scope > h1, :scope > h2, :scope > h3');
  return heading && {text: plain(heading.textContent), top: heading.getBoundingClientRect().top,
                     fragment: location.hash, path: location.pathname};
}"""


def test_the_language_switch_opens_the_other_page_at_the_same_section(browser, book_url):
    """From a section named in the URL (ko → en) and from a section scrolled into view (en → ko),
    the header's switch opens the other language's page with that section at the top."""
    context = isolated_context(browser, book_url)
    try:
        page = context.new_page()
        page.set_viewport_size({"width": 1280, "height": 800})
        page.goto(f"{book_url}/ko/chapters/ko/03_batchnorm.html", wait_until="load")
        exercises = page.evaluate("""() => [...document.querySelectorAll('section > h2')]
            .find(h => h.textContent.startsWith('연습 문제')).parentElement.id""")
        page.goto(f"{book_url}/ko/chapters/ko/03_batchnorm.html#{exercises}", wait_until="load")
        click_switch(page)
        landed = page.evaluate(IN_VIEW)
        assert landed and landed["path"].endswith("/en/chapters/en/03_batchnorm.html"), landed
        assert landed["text"] == "Exercises" and 0 <= landed["top"] < 400, landed   # the last section: as high as the page scrolls

        en, ko = notebook_headings("en", "04_layernorm"), notebook_headings("ko", "04_layernorm")
        wanted = en.index("The weights' scale and their gradient")   # a ### inside a ## section
        page.goto(f"{book_url}/en/chapters/en/04_layernorm.html", wait_until="load")
        page.evaluate("""(text) => { """ + PLAIN + """
            [...document.querySelectorAll('section > h3')].find(h => plain(h.textContent) === text).scrollIntoView(); }""",
                      en[wanted])
        click_switch(page)
        landed = page.evaluate(IN_VIEW)
        assert landed and landed["path"].endswith("/ko/chapters/ko/04_layernorm.html"), landed
        assert landed["text"] == ko[wanted] and 0 <= landed["top"] < 400, (landed, ko[wanted])

        page.goto(f"{book_url}/en/chapters/en/04_layernorm.html", wait_until="load")   # the top: no section
        click_switch(page)
        assert page.url.endswith("/ko/chapters/ko/04_layernorm.html"), page.url
    finally:
        context.close()


# What each page weighs on its first load, and its budget: tests/test_page_weight.py.


def test_pages_with_widget_state_render_their_widgets(visit, offline_site):
    with_state = [d for d in PAGES if WIDGET_STATE in (offline_site / f"{d}.html").read_text(encoding="utf-8")]
    if not with_state:
        pytest.skip("no page in _toc.yml stores Jupyter widget state yet")
    for docname in with_state:   # their errors and requests: test_page_loads_cleanly_from_its_own_host
        f = visit(docname).facts
        assert f["widgetViews"] > 0, f"{docname}: widget state but no widget view"
        assert f["widgetAreas"] >= f["widgetViews"], \
            f"{docname}: {f['widgetAreas']} of {f['widgetViews']} widget views rendered"
        assert f["widgetElements"] >= f["widgetViews"], f"{docname}: explorers that drew no cell"
