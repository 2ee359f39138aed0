"""Accessibility of the built site (`make book`), in headless Chromium with axe-core.

- One page of each kind in each language (helpers.axe.AUDITED_OF_EACH_KIND: the landing page, a book's
  first page, a chapter, a chapter with each form of the explorer, the glossary, the references, a
  guide, the search and index pages), a search's results and a page opened from them: no critical or
  serious axe-core violation, in the light and in the dark colour mode (book/site/axe_audit.py: every
  rule in light mode, then the colour rules again once the page is switched to dark in place). Every
  page built is of a kind audited. The pages of the tables of contents and the landing page are
  audited in test_browser.py, in the load its other checks use (each page is loaded once); the
  search and index pages and the searches here.
  A failure lists each rule, its impact and the failing nodes. axe-core's version is the one
  package.json pins (a development dependency, injected from node_modules: the browser context
  reaches no other host).
- Switching a page to dark in place gives the colours of the same page loaded in dark mode, so
  the dark pass sees what a reader in dark mode sees.
- The audit can fail: a page with an image without alt text and a paragraph readable in light mode
  only is caught, the paragraph by the dark pass.
- The family chapter's explorer (chapter 6, each language) by keyboard alone: Tab stops at every
  control it shows, the drawing's cells once (the chosen cell); each control has a name in the
  page's language and a visible focus ring; the chosen cell is marked pressed; the arrow keys move
  the chosen cell and a select's arrow keys change the method, and the text that describes the
  current state (a live region) follows, in the page's language.

Each page's violations (all impacts) are saved to test-artifacts/accessibility/;
`python -m book.site.axe_audit <site>` prints the counts by impact and rule.
"""

from __future__ import annotations

import json
import re
from urllib.parse import quote, unquote

import pytest

from book.site.axe_audit import AXE, AXE_VERSION, COLOUR_RULES, READY, SWITCH, audit, blocking, site_html_pages
from book.site.local_site import isolated_context, serve
from helpers.axe import AUDITED_OF_EACH_KIND, audited, axe_missing, check_axe, kind_of
from helpers.paths import unavailable
from helpers.site_pages import site_pages
from helpers.text import has_hangul

# what this module needs beyond Python (tests/conftest.py: not in make test-fast)
pytestmark = pytest.mark.browser

TIMEOUT_MS = 15_000
LANGS = sorted({page.split("/")[0] for page in site_pages()})
# The audited pages of the table of contents and the landing page are audited in the load test_browser.py's
# checks use (its test_no_critical_or_serious_violation_in_either_colour_mode); here, the search and index pages.
PAGES = [f"{lang}/{special}.html" for lang in LANGS for special in ("search", "genindex")]
# What search shows: its results (the searched words marked in titles and excerpts), and a page
# opened from them (Sphinx marks the words there too).
QUERY = {"ko": "정규화", "en": "variance"}
SEARCHED = ([f"{lang}/search.html?q={quote(QUERY[lang])}" for lang in LANGS]
            + [f"{lang}/chapters/{lang}/03_batchnorm.html?highlight={quote(QUERY[lang])}" for lang in LANGS])


@pytest.fixture(scope="module")
def site_url(book_url):
    """The built site's address (conftest.py's book_url), once axe-core is there to audit it."""
    axe_missing()
    return book_url


@pytest.fixture(scope="module")
def axe_page(browser, site_url):
    """One page of one isolated context for the whole module: each audit navigates it."""
    context = isolated_context(browser, site_url)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    yield page
    context.close()


def test_axe_is_the_pinned_version(offline_site):
    """After the site's build, which runs npm ci on a fresh clone (book/site/vendor_assets.py)."""
    installed = json.loads((AXE.parent / "package.json").read_text(encoding="utf-8"))["version"] \
        if AXE.exists() else None
    if installed is None:
        unavailable("axe-core is not installed: run npm ci", "the accessibility tests must run")
    assert installed == AXE_VERSION, f"node_modules has axe-core {installed}, package.json pins {AXE_VERSION}: npm ci"


def kinds_unaudited(built: list[str]) -> list[str]:
    """What is wrong with the audit of the ``built`` pages (``ko/glossary.html``, ...): a page of no known kind,
    a kind a language has and no audited page of it, an audited page that was not built."""
    docnames = [page.removesuffix(".html") for page in built]
    problems = [f"{d}: a page of no known kind (add its kind to helpers.axe.AUDITED_OF_EACH_KIND)"
                for d in docnames if kind_of(d) is None]
    for kind, lang in sorted({(kind_of(d), d.split("/")[0] if "/" in d else "") for d in docnames if kind_of(d)}):
        if not any(audited(d) and kind_of(d) == kind for d in docnames if d.split("/")[0] == lang or "/" not in d):
            problems.append(f"{kind} ({lang or 'the landing page'}): built, none audited")
    problems += [f"{page}: audited, not built" for lang in LANGS for pages in AUDITED_OF_EACH_KIND.values()
                 for page in {p.format(lang=lang) for p in pages} if page not in docnames]
    return problems


def test_every_kind_of_page_is_audited(offline_site):
    built = site_html_pages(offline_site)
    assert set(built) >= set(PAGES) | {f"{d}.html" for d in site_pages()} | {"index.html"}
    assert not kinds_unaudited(built)


def test_the_kinds_check_sees_a_new_kind_and_a_kind_left_unaudited():
    built = [f"{d}.html" for d in site_pages()] + ["index.html"] + PAGES
    assert not kinds_unaudited(built)
    assert kinds_unaudited(built + ["ko/changelog.html"]) == [
        "ko/changelog: a page of no known kind (add its kind to helpers.axe.AUDITED_OF_EACH_KIND)"]
    without = [p for p in built if p != "en/chapters/en/teachers.html"]       # en/.../students is left, unaudited
    assert kinds_unaudited(without) == ["guide (en): built, none audited", "en/chapters/en/teachers: audited, not built"]


@pytest.mark.parametrize("page_path", PAGES + SEARCHED)
def test_no_critical_or_serious_violation_in_either_colour_mode(axe_page, site_url, page_path):
    found = audit(axe_page, f"{site_url}/{page_path}")
    if "?q=" in page_path:
        assert axe_page.locator("#search-results li").count(), f"{unquote(page_path)}: no result listed"
    check_axe(page_path, found)


# The colours of every element shown, to compare a page switched to dark in place with the same
# page loaded in dark mode.
COLOURS = """() => Array.from(document.querySelectorAll('body *'))
  .filter(e => e.getClientRects().length && !e.closest('mjx-container'))
  .map(e => { const s = getComputedStyle(e);
              return [e.tagName + '.' + (e.getAttribute('class') || '').split(' ')[0],
                      [s.color, s.backgroundColor, s.borderTopColor, s.outlineColor].join(' ')]; })"""


def test_switching_to_dark_in_place_shows_the_dark_page(browser, site_url):
    page_path = "ko/chapters/ko/06_family.html"   # the theme, code, outputs, widgets, a figure
    loaded_dark = isolated_context(browser, site_url)
    loaded_dark.add_init_script("localStorage.setItem('mode', 'dark'); localStorage.setItem('theme', 'dark');")
    switched = isolated_context(browser, site_url)
    try:
        colours = {}
        for name, context in (("loaded", loaded_dark), ("switched", switched)):
            page = context.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            page.goto(f"{site_url}/{page_path}", wait_until="load")
            theme = page.evaluate(READY)
            if name == "switched":
                assert theme == "light", f"a fresh context shows the {theme} mode"
                page.evaluate(SWITCH, "dark")
            else:
                assert theme == "dark", f"localStorage mode=dark gave the {theme} mode"
            colours[name] = page.evaluate(COLOURS)
    finally:
        loaded_dark.close()
        switched.close()
    loaded, shown = colours["loaded"], colours["switched"]
    assert len(loaded) == len(shown) > 100, (len(loaded), len(shown))
    differ = [(a[0], a[1], b[1]) for a, b in zip(loaded, shown) if a != b]
    assert not differ, f"{len(differ)} elements coloured otherwise when switched in place: {differ[:5]}"


TINY_PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
BROKEN_PAGE = f"""<!DOCTYPE html>
<html lang="en" data-theme="light"><head><meta charset="utf-8"><title>A page with two faults</title>
<style>
  body {{ background: #fff; color: #222; }}
  html[data-theme=dark] body {{ background: #121212; color: #ddd; }}
  html[data-theme=dark] p.faint {{ color: #333; }}
</style></head>
<body><main><h1>Two faults</h1><p class="faint">Readable in light mode, not in dark mode.</p>
<img src="data:image/png;base64,{TINY_PNG}" width="20" height="20"></main></body></html>
"""


def test_the_audit_finds_a_missing_alt_and_a_contrast_only_dark_mode_has(browser, site_url, tmp_path):
    (tmp_path / "broken.html").write_text(BROKEN_PAGE, encoding="utf-8")
    with serve(tmp_path) as url:
        context = isolated_context(browser, url)
        try:
            found = audit(context.new_page(), f"{url}/broken.html")
        finally:
            context.close()
    rules = {mode: {v["id"] for v in blocking(violations)} for mode, violations in found.items()}
    assert rules["light"] == {"image-alt"}, rules
    assert rules["dark"] == {"color-contrast"}, rules     # the dark pass runs the colour rules only
    assert set(COLOUR_RULES) >= rules["dark"]


# --- The family chapter's explorer by keyboard ---------------------------------------------------

CONTROLS = ('button, [role="slider"], [contenteditable="true"], input, select, textarea, a[href], '
            '[tabindex]:not([tabindex="-1"])')

# Marks every control the explorer shows (data-probe = its index) and focuses the last focusable
# element before the explorer, so that the next Tab enters it.
PREPARE = """(selector) => {
  const explorer = document.querySelector('.nx');
  const shown = e => e.getClientRects().length && !e.disabled && getComputedStyle(e).visibility !== 'hidden';
  const inside = Array.from(explorer.querySelectorAll(selector)).filter(shown);
  inside.forEach((e, i) => e.setAttribute('data-probe', String(i)));
  const before = Array.from(document.querySelectorAll(selector)).filter(
    e => shown(e) && !explorer.contains(e) && (e.compareDocumentPosition(explorer) & Node.DOCUMENT_POSITION_FOLLOWING));
  before[before.length - 1].focus();
  return inside.length;
}"""

FOCUSED = """() => {
  const a = document.activeElement;
  const style = getComputedStyle(a);
  return { probe: a.getAttribute('data-probe'), inside: !!a.closest('.nx'),
           ring: style.outlineStyle !== 'none' ? parseFloat(style.outlineWidth) : 0 };
}"""


def ax_of(cdp, expression: str) -> dict:
    """The accessibility tree's node of the element ``expression`` evaluates to: role, name and
    states (Chromium's own computation, as a screen reader gets it)."""
    handle = cdp.send("Runtime.evaluate", {"expression": expression})["result"]
    if "objectId" not in handle:
        return {}
    node_id = cdp.send("DOM.describeNode", {"objectId": handle["objectId"]})["node"]["backendNodeId"]
    node = cdp.send("Accessibility.getPartialAXTree", {"backendNodeId": node_id, "fetchRelatives": False})["nodes"][0]
    return {"role": node.get("role", {}).get("value"), "name": (node.get("name", {}).get("value") or "").strip(),
            **{p["name"]: p["value"].get("value") for p in node.get("properties", [])}}


def in_language(text: str, lang: str) -> bool:
    return has_hangul(text) if lang == "ko" else bool(re.search(r"[A-Za-z]{2,}", text)) and not has_hangul(text)


@pytest.mark.parametrize("lang", LANGS)
def test_the_family_explorer_works_by_keyboard_in_the_pages_language(browser, site_url, lang):
    page_path = f"{lang}/chapters/{lang}/06_family.html"
    foreign: list[str] = []
    context = isolated_context(browser, site_url, foreign)
    try:
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(f"{site_url}/{page_path}", wait_until="load")
        page.evaluate(READY)
        page.wait_for_selector(".nx [data-stat]")
        explorer = page.locator(".nx").first
        explorer.scroll_into_view_if_needed()
        cdp = context.new_cdp_session(page)

        # 1. Tab reaches every control the explorer shows, each named in the page's language.
        controls = page.evaluate(PREPARE, CONTROLS)
        assert controls >= 10, f"{page_path}: {controls} controls shown (layout, method, 3 sizes, G, γ, β, ε, a cell)"
        stops = []
        for _ in range(controls + 5):
            page.keyboard.press("Tab")
            focused = page.evaluate(FOCUSED)
            if not focused["inside"]:
                break
            stops.append({**focused, **ax_of(cdp, "document.activeElement")})
        assert sorted(int(s["probe"]) for s in stops) == list(range(controls)), \
            f"{page_path}: Tab stopped at {[s['probe'] for s in stops]} of the {controls} controls shown"
        problems = []
        for s in stops:
            if s["role"] not in ("button", "combobox", "textbox", "checkbox", "radio") or not s["name"]:
                problems.append(f"control {s['probe']}: role {s['role']!r}, name {s['name']!r}")
            elif not in_language(s["name"], lang):
                problems.append(f"control {s['probe']} ({s['role']}) is called {s['name']!r}: not in the page's language")
            if s["ring"] < 2:
                problems.append(f"control {s['probe']} ({s['role']} {s['name']!r}): focus ring {s['ring']}px")
        cells = [s for s in stops if s["role"] == "button"]
        if len(cells) != 1 or cells[0].get("pressed") != "true":
            problems.append(f"the drawing's cells: {len(cells)} tab stops, pressed {[c.get('pressed') for c in cells]} "
                            "(one: the chosen cell, pressed)")
        assert not problems, f"{page_path}:\n  " + "\n  ".join(problems)

        # 2. Arrow keys move the chosen cell; the description of the state follows.
        summary = explorer.locator(".nx-summary")
        assert summary.get_attribute("aria-live") == "polite"
        before = summary.inner_text()
        assert in_language(before, lang), before
        cell = explorer.locator('rect[tabindex="0"]')
        first = int(cell.get_attribute("data-index"))
        cell.focus()
        page.keyboard.press("ArrowDown")
        moved = explorer.locator('rect[tabindex="0"]')
        assert int(moved.get_attribute("data-index")) == first + 4, "ArrowDown: the next channel, same position"
        assert page.evaluate("document.activeElement.dataset.index") == moved.get_attribute("data-index")
        assert summary.inner_text() != before
        # 3. The method's select by keyboard: the drawing and its description follow.
        select = explorer.locator('select[id$="-method"]')
        select.focus()
        page.keyboard.press("ArrowUp")                        # GroupNorm -> InstanceNorm
        assert select.input_value() == "instance"
        assert "InstanceNorm" in summary.inner_text() and in_language(summary.inner_text(), lang)
        assert page.evaluate("document.activeElement.id").endswith("-method"), "the focus left the select"
    finally:
        context.close()
    assert not foreign, f"requests to other hosts: {foreign}"
