"""What each page of the built site weighs on a reader's first visit, measured in headless Chromium.

    python -m benchmarks.tools.page_weight                       # _build/html, every page below
    python -m benchmarks.tools.page_weight --site DIR --json FILE --markdown FILE
    python -m benchmarks.tools.page_weight --page ko/chapters/ko/06_family --page index
    make page-weight    # builds the book, then writes benchmarks/results/page_weight.{md,json}

The Markdown file is written whole by this tool: what was measured, on which commit, machine and
browser, how, and the table (``report``), so that nothing in it is copied by hand.

The site is served on 127.0.0.1 (book/site/local_site.py, as the browser tests serve it). Each page is
loaded in a fresh browser context (a new profile: empty cache, no cookies, no service worker) at
1280 × 900; the load ends when the network has been idle for 500 ms, MathJax has typeset the page
and ``document.fonts.ready`` has resolved (the web fonts the text asked for are in), and then the
network is idle again. Every response the page received during that first load is counted, the
page's HTML included (data: and blob: URLs are not requests to the host and are not counted).

For each page: the number of files; their bytes as served (uncompressed: the files themselves);
their bytes gzip-compressed as a static host would serve them: each response body compressed
with gzip level 6, except formats that are compressed already (woff2, woff, png, jpeg, gif, webp:
GitHub Pages and most hosts send them as they are), which count as they are; the largest parts;
and the first contentful paint (``performance.getEntriesByType('paint')``, one load on this
machine from localhost: it says where the page waits, it is no reader's network).

The pages: the landing page, and for each language its book's pages in the order of its table of
contents (chapters, glossary, ...), its general index and its search page.

tests/benchmarks/test_page_weight.py holds the budget with the same measurement (``measure``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SITE = ROOT / "_build" / "html"
# Formats compressed already: a static host sends them as they are, and so they are counted.
PRECOMPRESSED = (".woff2", ".woff", ".png", ".jpg", ".jpeg", ".gif", ".webp", ".avif", ".gz", ".br", ".zip")
GZIP_LEVEL = 6
TIMEOUT_MS = 30_000

SETTLE = """async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  await document.fonts.ready;
  const paint = performance.getEntriesByType('paint').find(e => e.name === 'first-contentful-paint');
  return paint ? paint.startTime : null;
}"""


@dataclass
class Part:
    path: str          # the file, relative to the site's root (no query string)
    raw: int           # bytes as served
    gz: int            # bytes as a static host serves them (gzip -6, or as is when precompressed)


@dataclass
class Weight:
    page: str                          # ko/chapters/ko/06_family, index, ...
    parts: list[Part] = field(default_factory=list)
    fcp_ms: float | None = None
    errors: list[str] = field(default_factory=list)

    @property
    def files(self) -> int:
        return len(self.parts)

    @property
    def raw(self) -> int:
        return sum(p.raw for p in self.parts)

    @property
    def gz(self) -> int:
        return sum(p.gz for p in self.parts)

    def largest(self, n: int = 5) -> list[Part]:
        return sorted(self.parts, key=lambda p: -p.gz)[:n]

    def part(self, suffix: str) -> Part | None:
        return next((p for p in self.parts if p.path.endswith(suffix)), None)

    def summary(self, n: int = 6) -> str:
        top = ", ".join(f"{p.path} {kb(p.gz)}" for p in self.largest(n))
        fcp = f"{self.fcp_ms:.0f} ms" if self.fcp_ms is not None else "?"
        return (f"{self.page}: {self.files} files, {mb(self.raw)} uncompressed, {mb(self.gz)} gzip, "
                f"first contentful paint {fcp}; largest (gzip): {top}")

    def to_json(self) -> dict:
        return {"page": self.page, "files": self.files, "raw": self.raw, "gzip": self.gz,
                "fcp_ms": self.fcp_ms, "errors": self.errors, "parts": [asdict(p) for p in self.parts]}


def mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB"


def kb(n: int) -> str:
    return f"{n / 1e3:.0f} kB"


def served_size(path: str, body: bytes) -> int:
    """Bytes a static host sends for ``body``: gzip -6, or the body itself when already compressed."""
    if path.lower().endswith(PRECOMPRESSED):
        return len(body)
    return min(len(body), len(gzip.compress(body, compresslevel=GZIP_LEVEL, mtime=0)))


def site_pages(site: Path | None = None) -> list[str]:
    """The landing page, then per language: its book's pages (book/site/website.py's table of contents),
    its general index and its search page (with ``site``: those whose HTML exists there)."""
    from book.site.website import CONFIG, TOC, language_toc, languages, load, toc_files

    config, toc = load(CONFIG), load(TOC)
    langs = languages(config)
    pages = ["index"]
    for lang in langs:
        pages += [f"{lang}/{f}" for f in toc_files(language_toc(toc, lang, langs))]
        pages += [f"{lang}/genindex", f"{lang}/search"]
    return [p for p in pages if site is None or (site / f"{p}.html").exists()]


def measure(browser, url: str, site: Path, page_name: str) -> Weight:
    """One first visit of ``<url>/<page_name>.html`` in a fresh context of ``browser`` (Playwright)."""
    from book.site.local_site import isolated_context

    weight = Weight(page_name)
    context = isolated_context(browser, url)
    responses = []
    try:
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.on("response", lambda r: responses.append(r))
        page.on("pageerror", lambda e: weight.errors.append(f"uncaught: {e}"))
        page.goto(f"{url}/{page_name}.html", wait_until="networkidle")
        weight.fcp_ms = page.evaluate(SETTLE)
        page.wait_for_load_state("networkidle")
        add_responses(weight, responses, url, site)
    finally:
        context.close()
    return weight


def add_responses(weight: Weight, responses: list, url: str, site: Path) -> None:
    """Count in ``weight`` every response (Playwright's) from the site's own host at ``url``."""
    host = urlsplit(url).netloc
    for response in responses:
        parts = urlsplit(response.url)
        if parts.netloc != host:
            continue
        path = unquote(parts.path).lstrip("/")
        if response.status >= 300:
            weight.errors.append(f"HTTP {response.status}: {path}")
            continue
        try:
            body = response.body()
        except Exception:              # evicted from the browser's buffer: the file itself
            body = (site / path).read_bytes()
        weight.parts.append(Part(path, len(body), served_size(path, body)))


def markdown_table(weights: list[Weight], before: dict[str, dict] | None = None) -> str:
    """A table for the README: one row per page (with the ``before`` gzip column when given)."""
    head = "| page | files | uncompressed | gzip | first contentful paint |"
    rule = "|---|---:|---:|---:|---:|"
    if before:
        head = "| page | files | uncompressed | gzip | gzip before | first contentful paint |"
        rule = "|---|---:|---:|---:|---:|---:|"
    rows = [head, rule]
    for w in weights:
        fcp = f"{w.fcp_ms:.0f} ms" if w.fcp_ms is not None else "?"
        cells = [w.page, str(w.files), mb(w.raw), mb(w.gz)]
        if before:
            old = before.get(w.page)
            cells.append(mb(old["gzip"]) if old else "–")
        rows.append("| " + " | ".join(cells + [fcp]) + " |")
    return "\n".join(rows) + "\n"


def _commit() -> str:
    import subprocess

    result = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                           text=True, check=False).stdout.strip()
    return (result.stdout.strip() or "unknown") + (" with uncommitted changes" if dirty else "")


def _machine() -> str:
    """The CPU as normlib_benchmarks.machine names it for every benchmark, and the system."""
    import platform

    from normlib_benchmarks.machine import machine_info

    info = machine_info()
    return f"{info['cpu']}, {info['cores']} logical CPUs, {platform.system()} {platform.release()}"


def report(weights: list[Weight], browser: str, command: str, commit: str,
           before: dict[str, dict] | None = None) -> str:
    """The whole Markdown file: how and where the weights were measured, then the table."""
    import datetime

    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Each page's weight on a reader's first visit",
        "",
        f"Written by `{command}` (benchmarks/tools/page_weight.py; its docstring says how each number is",
        "measured) on " + when + f": the site of commit {commit}, {browser} headless, a fresh profile per page,",
        f"1280 × 900, served from 127.0.0.1, on {_machine()}. *gzip*: every response body gzip -6 as a",
        "static host serves it (woff2, woff and png counted as they are). First contentful paint: one load from",
        "localhost; it says where a page waits, not how fast a reader's network is. Every response of each page",
        "is in the JSON file beside this one" + (", the gzip column before in `--before`'s file." if before else "."),
        "The budgets are held by tests/benchmarks/test_page_weight.py.",
        "",
        "",
    ]
    return "\n".join(lines) + markdown_table(weights, before)


def measure_site(site: Path, pages: list[str], log=print, about: dict | None = None) -> list[Weight]:
    """Every page's weight, in one Chromium; ``about`` (when given) gets the browser's name and version."""
    from playwright.sync_api import sync_playwright

    from book.site.local_site import launch_chromium, serve

    weights = []
    with serve(site) as url, sync_playwright() as p:
        browser = launch_chromium(p)
        if about is not None:
            about["browser"] = f"Chromium {browser.version}"
        try:
            for name in pages:
                weights.append(measure(browser, url, site, name))
                log(weights[-1].summary())
        finally:
            browser.close()
    return weights


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, default=DEFAULT_SITE, help="the built site (default _build/html)")
    parser.add_argument("--page", action="append", help="only this page (ko/chapters/ko/06_family, index; repeatable)")
    parser.add_argument("--json", type=Path, help="write every page's files and sizes here")
    parser.add_argument("--markdown", type=Path, help="write the table here")
    parser.add_argument("--before", type=Path, help="a --json file of an earlier run: its gzip column in the table")
    args = parser.parse_args(argv)
    site = args.site.resolve()
    if not (site / "index.html").exists():
        parser.error(f"{site}: no built site there (python -m book.site.website --out {site})")
    pages = args.page or site_pages(site)
    commit = _commit()             # before this run writes anything
    about: dict = {}
    weights = measure_site(site, pages, about=about)
    before = None
    if args.before:
        before = {w["page"]: w for w in json.loads(args.before.read_text(encoding="utf-8"))["pages"]}
    table = markdown_table(weights, before)
    print("\n" + table)
    if args.json:
        args.json.write_text(json.dumps({"site": str(site), "pages": [w.to_json() for w in weights]},
                                        indent=1), encoding="utf-8")
    if args.markdown:
        command = "python -m benchmarks.tools.page_weight " + " ".join(argv if argv is not None else sys.argv[1:])
        args.markdown.write_text(report(weights, about.get("browser", "Chromium"), command.strip(), commit, before),
                                 encoding="utf-8")
    errors = [f"{w.page}: {e}" for w in weights for e in w.errors]
    if errors:
        print("Errors while loading:\n  " + "\n  ".join(errors), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
