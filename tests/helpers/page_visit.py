"""One load of each page of the built site, as a reader's first visit, recording everything the
page tests check (conftest.py's visit: tests/book/test_browser.py, tests/benchmarks/test_page_weight.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from helpers.axe import audited
from helpers.browser import hangul_without_nanum, on_a_phone
from helpers.paths import ROOT

BROWSER_ARTIFACTS = ROOT / "test-artifacts" / "browser"
PAGE_TIMEOUT_MS = 15_000
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


@dataclass
class Visit:
    """What one load of a page of the built site showed (load_page)."""
    docname: str
    errors: list[str] = field(default_factory=list)       # JS errors and >= 400 responses
    foreign: list[str] = field(default_factory=list)      # requests to other hosts
    tofu: list[str] = field(default_factory=list)         # Hangul drawn without NanumGothic
    facts: dict = field(default_factory=dict)             # what the page reported after loading
    english: list[str] = field(default_factory=list)      # interface words without Hangul, as shown
    axe: dict | None = None                               # axe-core's violations, light and dark (None: no axe, or not audited)
    weight: object = None                                 # benchmarks.tools.page_weight.Weight of this first load
    phone: dict = field(default_factory=dict)             # the page resized to a phone's (helpers.browser.on_a_phone)


# What the page shows once settled (book.site.axe_audit.READY: math typeset, widgets drawn, fonts loaded).
MEASURE = """() => {
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


def screenshot_name(docname: str) -> str:
    """ko/chapters/ko/03_batchnorm -> ko_03_batchnorm; ko/glossary -> ko_glossary; index -> index."""
    parts = docname.split("/")
    return "_".join(parts[:1] + parts[3:] if parts[1:2] == ["chapters"] else parts)


def load_page(browser, book_url: str, site: Path, docname: str) -> Visit:
    """Load ``<book_url>/<docname>.html`` once, as a reader's first visit (a fresh browser context:
    nothing cached), and record everything the browser tests check of it, in this order: what it
    requests and weighs (benchmarks.tools.page_weight), its errors, math, widgets, interface words and fonts,
    a screenshot of its first screen, axe-core's audit in light and dark mode (the pages helpers.axe.audited
    names: one of each kind), and the page on a
    phone (last: it turns the page's transitions off)."""
    from urllib.parse import urlsplit

    from benchmarks.tools.page_weight import SETTLE, Weight, add_responses
    from book.site.axe_audit import AXE, READY, audit_loaded
    from book.site.local_site import isolated_context

    v = Visit(docname)
    host = urlsplit(book_url).netloc
    context = isolated_context(browser, book_url)
    responses = []
    try:
        page = context.new_page()
        page.set_default_timeout(PAGE_TIMEOUT_MS)

        def on_request(req):
            parts = urlsplit(req.url)
            if parts.scheme not in ("data", "blob") and parts.netloc != host:
                v.foreign.append(req.url)

        def on_request_failed(req):
            if urlsplit(req.url).netloc == host:   # other hosts' requests are aborted on purpose
                v.errors.append(f"request failed ({req.failure}): {req.url}")

        def on_response(response):
            responses.append(response)
            if response.status >= 400:
                v.errors.append(f"HTTP {response.status}: {response.url}")

        page.on("request", on_request)
        page.on("requestfailed", on_request_failed)
        page.on("response", on_response)
        page.on("pageerror", lambda e: v.errors.append(f"uncaught: {e}"))
        page.on("console", lambda m: m.type == "error" and v.errors.append(
            f"console.error: {m.text} ({m.location.get('url', '')}:{m.location.get('lineNumber', '')})"))
        page.goto(f"{book_url}/{docname}.html", wait_until="load")
        v.weight = Weight(docname, fcp_ms=page.evaluate(SETTLE))
        page.evaluate(READY)
        v.facts = page.evaluate(MEASURE)
        v.english = page.evaluate(INTERFACE_WORDS)
        _, v.tofu = hangul_without_nanum(page, limit=400)
        page.wait_for_load_state("networkidle")      # every request of the first load answered, then counted
        add_responses(v.weight, responses, book_url, site)
        BROWSER_ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(BROWSER_ARTIFACTS / f"{screenshot_name(docname)}.png"))
        if AXE.exists() and audited(docname):      # one page of each kind (helpers.axe.AUDITED_OF_EACH_KIND)
            v.axe = audit_loaded(page)   # leaves the page light again
        v.phone = on_a_phone(page)
    finally:
        context.close()
    return v
