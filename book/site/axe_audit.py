"""axe-core (npm, a development dependency: package.json) on the built site, in headless Chromium.

tests/book/test_accessibility.py asserts with it; run by hand, it counts what axe finds on every page
of a built site, in the light and the dark colour mode, by impact and by rule:

    python -m book.site.website --out /tmp/site && python -m book.site.axe_audit /tmp/site

axe.min.js is injected into each page from node_modules (never fetched from another host; the
browser context aborts any request that leaves 127.0.0.1, book/site/local_site.py).

The two colour modes. pydata-sphinx-theme switches mode by setting ``data-theme`` on <html>
(its stylesheets read ``html[data-theme=dark]``; its script also marks the hidden dropdown menus).
The page's elements, roles and names do not change, only colours, so a page is audited once with
every rule in light mode, then switched in place (:data:`SWITCH`) and audited again with the rules
whose outcome depends on colours (:data:`COLOUR_RULES`). The test checks that a page switched in
place has the computed colours of the same page loaded in dark mode (the theme's own way: its
stored choice in localStorage). ``--every-rule`` runs every rule in both modes instead.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
AXE_VERSION = json.loads((ROOT / "package.json").read_text(encoding="utf-8"))["devDependencies"]["axe-core"]
IMPACTS = ("critical", "serious", "moderate", "minor")
MODES = ("light", "dark")
# The rules whose outcome depends on colours: text contrast (WCAG 1.4.3) and links told from the
# text around them by colour alone (1.4.1). color-contrast-enhanced (AAA) is off by default.
COLOUR_RULES = ("color-contrast", "link-in-text-block")

# What a reader sees once the page has settled: math typeset, widgets drawn, search results listed,
# web fonts loaded.
READY = """async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length;
  const deadline = Date.now() + 10000;
  while (views && Date.now() < deadline && document.querySelectorAll('.anywidget-view .nx').length < views) {
    await new Promise(r => setTimeout(r, 100));
  }
  // a search page with a query: its results listed, and their excerpts (fetched one by one)
  if (document.getElementById('search-results') && new URLSearchParams(location.search).get('q')) {
    const listed = () => (document.querySelector('#search-results .search-summary') || {}).textContent;
    const excerpts = () => Array.from(document.querySelectorAll('#search-results li'))
      .every(li => li.querySelector('p.context'));
    const until = Date.now() + 20000;
    while (Date.now() < until && !(listed() && listed().trim() && excerpts())) await new Promise(r => setTimeout(r, 100));
  }
  await document.fonts.ready;
  return document.documentElement.dataset.theme || null;
}"""

# The theme's colours change with CSS transitions (Bootstrap's buttons 0.15 s, the copy buttons
# 0.3 s): axe must see the colours at rest, not half-way (it once measured the language switch's
# text mid-way, at 1.3:1), and waiting for the transitions is not enough (Chromium leaves a hidden
# copy button's at its light colour). So the switch happens with transitions off, as pages that
# restore a stored mode do on load.
SWITCH = """(mode) => {
  const still = document.createElement('style');
  still.textContent = '*, *::before, *::after { transition: none !important; }';
  document.head.appendChild(still);
  document.documentElement.dataset.mode = mode;
  document.documentElement.dataset.theme = mode;
  // every element's colours computed now, without transitions (a forced layout does not reach
  // them all: the copy buttons kept their light colour)
  for (const e of document.querySelectorAll('*')) getComputedStyle(e).backgroundColor;
  still.remove();
}"""

RUN = """async (rules) => {
  const options = { resultTypes: ['violations'] };
  if (rules) options.runOnly = { type: 'rule', values: rules };
  const result = await axe.run(document, options);
  return result.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map(n => ({ target: n.target.join(' '), impact: n.impact,
                               html: n.html.slice(0, 200), summary: n.failureSummary })),
  }));
}"""


def site_html_pages(site: Path) -> list[str]:
    """Every page of a built site (relative paths, / separated), redirects and copies aside."""
    pages = []
    for path in sorted(site.rglob("*.html")):
        rel = path.relative_to(site)
        if {"_static", "_sources", "_images"} & set(rel.parts):
            continue
        if 'http-equiv="refresh"' in path.read_text(encoding="utf-8", errors="replace")[:2000].lower():
            continue
        pages.append(rel.as_posix())
    return pages


def audit(page, url: str, every_rule_in_dark: bool = False) -> dict[str, list[dict]]:
    """axe's violations on the page at ``url`` (a Playwright page of an isolated context), light
    then dark: {"light": [...], "dark": [...]}. Each violation: id, impact, help, nodes."""
    page.goto(url, wait_until="load")
    return audit_loaded(page, every_rule_in_dark)


def audit_loaded(page, every_rule_in_dark: bool = False) -> dict[str, list[dict]]:
    """audit() on the page already loaded in ``page`` (tests/book/test_browser.py audits each page in
    the load its other checks use). The page is left in light mode."""
    themed = page.evaluate(READY) is not None
    page.add_script_tag(path=str(AXE))
    found = {}
    for mode in MODES:
        if themed:
            page.evaluate(SWITCH, mode)
        else:   # a page without the theme (the landing page) follows the system's setting
            page.emulate_media(color_scheme=mode)
        rules = None if mode == "light" or every_rule_in_dark else list(COLOUR_RULES)
        found[mode] = page.evaluate(RUN, rules)
    if themed:
        page.evaluate(SWITCH, "light")
    else:
        page.emulate_media(color_scheme="light")
    return found


def blocking(violations: list[dict]) -> list[dict]:
    return [v for v in violations if v["impact"] in ("critical", "serious")]


def describe(violations: list[dict], limit: int = 8) -> str:
    """The rules, their impact and help, and up to ``limit`` failing nodes each, for a message."""
    lines = []
    for v in violations:
        lines.append(f"{v['id']} ({v['impact']}): {v['help']} - {len(v['nodes'])} node(s)")
        for n in v["nodes"][:limit]:
            lines.append(f"    {n['target']}\n      {n['html'][:160]!r}\n      "
                         + " ".join(n["summary"].split())[:300])
    return "\n".join(lines)


def tables(results: dict[str, dict[str, list[dict]]]) -> str:
    """Markdown tables of ``{page: {mode: violations}}``: nodes by impact, then by rule."""
    out = []
    for mode in MODES:
        by_impact, by_rule = Counter(), defaultdict(lambda: ["", 0, 0])
        pages = [p for p in results if mode in results[p]]
        for page in pages:
            for v in results[page][mode]:
                by_impact[v["impact"]] += len(v["nodes"])
                row = by_rule[v["id"]]
                row[0], row[1], row[2] = v["impact"], row[1] + len(v["nodes"]), row[2] + 1
        out.append(f"{mode} mode, {len(pages)} pages: nodes by impact: "
                   + " | ".join(f"{i} {by_impact[i]}" for i in IMPACTS))
        out.append("| rule | impact | nodes | pages |\n|---|---|---|---|")
        for rule, (impact, nodes, on) in sorted(by_rule.items(), key=lambda kv: (IMPACTS.index(kv[1][0]), kv[0])):
            out.append(f"| {rule} | {impact} | {nodes} | {on} |")
        out.append("")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", type=Path, help="a built site (python -m book.site.website --out DIR)")
    parser.add_argument("--every-rule", action="store_true", help="every rule in dark mode too")
    parser.add_argument("--json", type=Path, help="write every violation found here")
    args = parser.parse_args(argv)
    if not AXE.exists():
        raise SystemExit(f"{AXE} not found: run npm ci (axe-core {AXE_VERSION} is a devDependency)")
    from playwright.sync_api import sync_playwright

    from book.site.local_site import isolated_context, launch_chromium, serve

    results = {}
    with serve(args.site) as url, sync_playwright() as p:
        browser = launch_chromium(p)
        context = isolated_context(browser, url)
        page = context.new_page()
        for name in site_html_pages(args.site):
            start = time.perf_counter()
            results[name] = audit(page, f"{url}/{name}", args.every_rule)
            print(f"{name}: {time.perf_counter() - start:.1f} s, "
                  + ", ".join(f"{m} {sum(len(v['nodes']) for v in results[name][m])}" for m in MODES), flush=True)
        browser.close()
    if args.json:
        args.json.write_text(json.dumps(results, ensure_ascii=False, indent=1), encoding="utf-8")
    print(tables(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
