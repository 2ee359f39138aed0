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
- no critical or serious axe-core violation, in light and in dark mode, on one page of each kind in
  each language (the same load, audited by book/site/axe_audit.audit_loaded; helpers.axe.audited; the
  search and index pages and searches: test_accessibility.py);
- on a phone (the same load, resized to 390 × 844): nothing wider than the screen but a box that
  scrolls sideways, and each such box of a chapter (a printed output, code, a table, an equation)
  reached by keyboard, named for a screen reader and showing that it scrolls
  (book/site/offline_book/narrow-screens.css and scroll-boxes.js; helpers.browser.on_a_phone).

Only what needs a real browser is checked here; what can be read in the built HTML is in
test_book.py and test_offline_site.py.

A screenshot of each page's first screen (1280 × 900, what a reader sees on opening it) is saved to
test-artifacts/browser/ (a full page took 1.5-3.5 s more per page). Chromium is the system's
(/usr/bin/chromium, which .ci/run installs) driven by Python Playwright; `playwright install` is
never needed. Without Chromium or Playwright the tests skip, except on CI (CI=true), where they fail.
"""

from __future__ import annotations

import json
import re

import pytest

from book.site.local_site import isolated_context
from helpers.axe import audited, axe_missing, check_axe
from helpers.browser import on_a_phone, phone_problems
from helpers.page_visit import PAGE_TIMEOUT_MS as TIMEOUT_MS
from helpers.page_visit import WIDGET_STATE
from helpers.paths import ROOT
from helpers.site_pages import site_pages

# what this module needs beyond Python (tests/conftest.py: not in make test-fast)
pytestmark = pytest.mark.browser

PAGES = site_pages() + ["index"]   # both books' pages (ko/chapters/ko/06_family, ...) and the landing page
# Each page is loaded once (conftest.py's visit, helpers.page_visit.load_page); the tests below read that load.


# Names and file types, the same in both languages; "English" is the switch to the other book.
SAME_IN_EVERY_LANGUAGE = {"Binder", "Colab", "JupyterHub", ".ipynb", ".pdf", "Ctrl", "Ctrl+K", "English"}


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


@pytest.mark.parametrize("docname", [d for d in PAGES if audited(d)])
def test_no_critical_or_serious_violation_in_either_colour_mode(visit, docname):
    """axe-core on the page as loaded above, every rule in light mode, then the colour rules in dark
    mode (the page switched in place: test_accessibility.py checks that this is what a page loaded
    dark shows). One page of each kind in each language (helpers.axe.AUDITED_OF_EACH_KIND: the pages
    of a kind share their template and kinds of content); test_accessibility.py checks that every
    kind of page built is audited."""
    found = visit(docname).axe
    if found is None:
        axe_missing()
    check_axe(f"{docname}.html", found)


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
    """helpers.browser.on_a_phone on a page of its own: the paragraph wider than the screen and the page
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


KOREAN_CHAPTERS = [d for d in PAGES if d.startswith("ko/chapters/ko/")]
KOREAN_PAGES = [d for d in PAGES if d.startswith("ko/")]
# The pages whose notebooks store widget state (the explorers): their HTML carries it too.
WIDGET_PAGES = [d for d in PAGES if (ROOT / f"{d.split('/', 1)[-1]}.ipynb").exists()
                and WIDGET_STATE in (ROOT / f"{d.split('/', 1)[1]}.ipynb").read_text(encoding="utf-8")]


def test_the_book_has_korean_chapters_and_explorers():
    assert KOREAN_CHAPTERS, "no Korean chapter in _toc.yml"
    assert len(WIDGET_PAGES) >= 2, f"the explorers' chapters store no widget state: {WIDGET_PAGES}"


@pytest.mark.parametrize("docname", KOREAN_CHAPTERS)
def test_korean_pages_show_korean_text(visit, docname):
    """The Korean chapters show Hangul, so test_page_loads_cleanly_from_its_own_host checks their
    font (it checks NanumGothic on every page that shows Hangul)."""
    assert visit(docname).facts["koreanText"] > 100, f"{docname}: hardly any Hangul on the page"


@pytest.mark.parametrize("docname", KOREAN_PAGES)
def test_korean_pages_show_no_english_interface_word_as_they_run(visit, docname):
    """What the reader meets on a Korean page once its scripts have run: the theme's menus, the
    copy buttons' tooltips, the collapsed cells, all in Korean (the words: book/locale/ko/.../sphinx.po)."""
    found = sorted(set(visit(docname).english) - SAME_IN_EVERY_LANGUAGE)
    assert not found, f"English on {docname}:\n" + "\n".join(f"  {w}" for w in found)


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_the_headers_sidebar_buttons_open_the_tables_of_contents(browser, book_url, lang):
    """The ☰ button a reader sees opens the book's table of contents on a phone (a dialog) and
    hides the sidebar on a wide screen; the page's table-of-contents button opens it on a phone.
    (The themes listen on a hidden button only; book/site/site_templates/static/site.js forwards.)"""
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


# What each page weighs on its first load, and its budget: tests/benchmarks/test_page_weight.py.


@pytest.mark.parametrize("docname", WIDGET_PAGES)
def test_pages_with_widget_state_render_their_widgets(visit, offline_site, docname):
    """Their errors and requests: test_page_loads_cleanly_from_its_own_host."""
    assert WIDGET_STATE in (offline_site / f"{docname}.html").read_text(encoding="utf-8"), \
        f"{docname}: the notebook stores widget state, the page does not"
    f = visit(docname).facts
    assert f["widgetViews"] > 0, f"{docname}: widget state but no widget view"
    assert f["widgetAreas"] >= f["widgetViews"], \
        f"{docname}: {f['widgetAreas']} of {f['widgetViews']} widget views rendered"
    assert f["widgetElements"] >= f["widgetViews"], f"{docname}: explorers that drew no cell"
