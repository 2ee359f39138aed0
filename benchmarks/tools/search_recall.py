"""How well the built book's search finds its own words, measured in headless Chromium.

For each query: the chapter pages whose article text holds it (every word of the query, in order,
with or without the space between them, whatever particle or ending follows: 정규화 is held by
"정규화는" and "정규화된"; a compound typed without its space, 배치정규화, is held where its spaced
form 배치 정규화 is, written either way), and the pages the book's search lists when the query is typed into
its search page's box and Enter is pressed. Recall is the share of the pages holding the query
that the search lists. Each listed result's excerpt is checked too: it must show no LaTeX source,
no run of the page's hidden print outline and, on a page holding the query, a sentence holding it.
"listed first" is the first three pages of the list: a chapter whose title holds the query must come
first (first_expected), else one with a heading holding it.

    python -m benchmarks.tools.search_recall SITE_DIR                      # Korean and English tables
    python -m benchmarks.tools.search_recall SITE_DIR --before OLD_SITE    # the same queries on an older build too

SITE_DIR is a built site: either the two-book layout of book/site/website.py (SITE_DIR/ko/search.html,
SITE_DIR/ko/chapters/ko/*.html, the same under en/) or the older single book holding both
languages (SITE_DIR/search.html, SITE_DIR/chapters/ko/*.html). The site is served on 127.0.0.1
and the browser reaches no other host. tests/book/test_search.py asserts the same measurement.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from bs4 import BeautifulSoup

from book.site.local_site import isolated_context, launch_chromium, serve

# A Korean reader often writes a compound without its space (배치정규화 for 배치 정규화), and a
# noun and its particle with the next noun (평균과분산 for 평균과 분산). Each such query is held by
# the pages holding its spaced form (with or without the space, see holds) and must find all of them.
SPACED = {"배치정규화": "배치 정규화", "층정규화": "층 정규화", "평균과분산": "평균과 분산", "이동평균": "이동 평균",
          "배치크기": "배치 크기", "이동통계": "이동 통계", "사전정규화": "사전 정규화", "잔차연결": "잔차 연결",
          "평가모드": "평가 모드", "정규화층": "정규화 층"}
KOREAN_QUERIES = ["정규화", "분산", "평균", "이동 평균", "역전파", "기울기", "모멘텀", "배치 크기", "채널",
                  "표준편차", "통계", "특성", "샘플", "학습", "추론", "층", "매개변수", "잔차 연결", "합성곱",
                  "배치 정규화", "층 정규화", "평균과 분산", "이동 통계", "사전 정규화", "평가 모드", "정규화 층",
                  *SPACED]
ENGLISH_QUERIES = ["normalization", "variance", "running mean", "backward", "gradient", "momentum",
                   "batch size", "channel", "standard deviation", "statistics", "feature", "residual"]
QUERIES = {"ko": KOREAN_QUERIES, "en": ENGLISH_QUERIES}

# searchtools.js writes a summary line when it has listed every result (or found none).
SEARCH_DONE = """() => {
  const status = document.querySelector('#search-results .search-summary');
  return status !== null && status.textContent.trim().length > 0;
}"""


@dataclass(frozen=True)
class Book:
    """One language's book in a built site: the folder holding its search.html."""
    site: Path
    root: Path
    lang: str

    @property
    def path(self) -> str:
        """The book's folder under the site, as in a URL: "ko/" or ""."""
        rel = self.root.relative_to(self.site).as_posix()
        return "" if rel == "." else rel + "/"

    def chapters(self) -> list[str]:
        """The docnames of the chapter pages (chapters/ko/03_batchnorm), not the bibliography."""
        folder = self.root / "chapters" / self.lang
        return sorted(f"chapters/{self.lang}/{p.stem}" for p in folder.glob("[0-9]*.html"))


def book_of(site: Path, lang: str) -> Book:
    """The book of ``lang`` in ``site``: ``site/lang`` in the two-book layout, else ``site``."""
    site = Path(site).resolve()
    root = site / lang if (site / lang / "search.html").exists() else site
    if not (root / "search.html").exists():
        raise SystemExit(f"no search.html in {site / lang} nor in {site}: is {site} a built site?")
    return Book(site, root, lang)


@cache
def article_text(page: Path) -> str:
    """The text of a built page's article, as a reader sees it (scripts and styles left out)."""
    soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
    article = soup.find("article") or soup
    for tag in article.find_all(["script", "style"]):
        tag.decompose()
    return article.get_text(" ")


@cache
def headings(page: Path) -> tuple[str, list[str]]:
    """A built page's title (its first heading) and every heading of its article, as read."""
    soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
    article = soup.find("article") or soup
    for tag in article.select(".headerlink"):
        tag.decompose()
    found = [" ".join(h.get_text(" ").split()) for h in article.find_all(["h1", "h2", "h3", "h4", "h5", "h6"])]
    return (found[0] if found else ""), found


def where_held(book: Book, docname: str, query: str) -> str:
    """Where a page holds the whole query, spaces or none: "title", "heading" or "" (only in its text,
    or not at all)."""
    title, all_headings = headings(book.root / f"{docname}.html")
    if holds(title, query):
        return "title"
    return "heading" if any(holds(h, query) for h in all_headings) else ""


def first_expected(book: Book, query: str) -> list[str]:
    """The chapters one of which must be listed first: those whose title holds the query, else those
    with a heading holding it, else none (any order of the chapters holding it)."""
    query = SPACED.get(query, query)
    places = {d: where_held(book, d, query) for d in book.chapters()}
    for level in ("title", "heading"):
        chosen = [d for d, where in places.items() if where == level]
        if chosen:
            return chosen
    return []


def holds(text: str, query: str) -> bool:
    """Whether ``text`` holds the words of ``query`` in order, with or without spaces between them,
    ignoring case. Anything may follow (정규화는, channels); Hangul may also come before (배치정규화),
    a Latin letter may not (the English query "mean" is not held by "semantic")."""
    words = [re.escape(w) for w in query.split()]
    return re.search(r"(?<![A-Za-z])" + r"\s*".join(words), text, re.IGNORECASE) is not None


def pages_holding(book: Book, query: str) -> list[str]:
    """The chapters holding ``query``, or its spaced form when it is a compound written without one."""
    query = SPACED.get(query, query)
    return [d for d in book.chapters() if holds(article_text(book.root / f"{d}.html"), query)]


def typed_search(page, search_url: str, query: str, timeout_ms: int = 20_000) -> list[str]:
    """Type ``query`` into the search box of ``search_url`` and press Enter, as a reader does; return
    the links of the results (absolute URLs, anchors dropped), in the order listed. A page already
    showing results of that search page is reused: its box is cleared first."""
    if not page.url.startswith(search_url):
        page.goto(search_url, wait_until="load")
    box = page.locator(".bd-search-container input[name=q]").first
    box.fill("")
    box.press_sequentially(query)
    with page.expect_navigation(timeout=timeout_ms):
        box.press("Enter")
    page.wait_for_function(SEARCH_DONE, timeout=timeout_ms)
    hrefs = page.eval_on_selector_all("#search-results ul.search li > a", "links => links.map(a => a.href)")
    return [h.split("#")[0] for h in hrefs]


# Each result's excerpt (searchtools.js fetches the page and adds a p.context to its item).
SNIPPETS_SHOWN = """() => [...document.querySelectorAll('#search-results ul.search li')]
  .every(li => li.querySelector('p.context') !== null)"""
LATEX = re.compile(r"\\[A-Za-z()\[\]]|\$")


def shown_snippets(page, timeout_ms: int = 20_000) -> list[tuple[str, str]]:
    """(link, excerpt) of each listed result, anchors dropped, once every excerpt is shown."""
    page.wait_for_function(SNIPPETS_SHOWN, timeout=timeout_ms)
    return page.eval_on_selector_all("#search-results ul.search li", """items => items.map(li =>
      [li.querySelector('a').href.split('#')[0], li.querySelector('p.context').textContent])""")


@cache
def outline_of(page: Path) -> list[str]:
    """The entries of a built page's print outline (the title and table of contents it prints, hidden
    on screen), each entry whole (a heading or a link, inline code and all), white space squeezed."""
    soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
    entries = (el.get_text(" ") for box in soup.select(".onlyprint") for el in box.select("h1, h2, h3, a"))
    return [" ".join(e.split()) for e in entries if e.strip()]


def snippet_faults(book: Book, docname: str, query: str, snippet: str, holding: bool) -> list[str]:
    """What is wrong with the excerpt shown for ``docname``: LaTeX source, two entries in a row of
    the page's hidden print outline, or (on a page holding the query) no sentence holding it."""
    text = " ".join(snippet.split())
    faults = ["LaTeX"] if LATEX.search(text) else []
    page = book.root / f"{docname}.html"
    outline = outline_of(page) if page.exists() else []
    if any(f"{a} {b}" in text for a, b in zip(outline, outline[1:])):
        faults.append("print outline")
    if holding and not holds(text, SPACED.get(query, query)):
        faults.append("not the query's sentence")
    return faults


def docnames_of(book: Book, base_url: str, hrefs: list[str]) -> list[str]:
    """Result URLs as docnames of ``book`` (chapters/ko/03_batchnorm), each once, in order; a link
    outside the book keeps its path with a leading "../"."""
    prefix = urlsplit(urljoin(base_url + "/", book.path)).path
    out: list[str] = []
    for href in hrefs:
        path = urlsplit(href).path
        name = path[len(prefix):] if path.startswith(prefix) else "../" + path.lstrip("/")
        name = name.removesuffix(".html")
        if name not in out:
            out.append(name)
    return out


@dataclass
class Row:
    query: str
    lang: str
    holding: list[str]       # chapter pages whose text holds the query
    found: list[str]         # pages the search lists (any page)
    faults: dict[str, list[str]] = field(default_factory=dict)   # listed page -> its excerpt's faults

    @property
    def missed(self) -> list[str]:
        return [d for d in self.holding if d not in self.found]

    @property
    def others(self) -> list[str]:
        """Pages listed that are not chapters holding the query (the glossary, a bigram's false match)."""
        return [d for d in self.found if d not in self.holding]


def search_row(page, base_url: str, book: Book, query: str, snippets: bool = False) -> Row:
    """``query`` typed into ``book``'s search page in ``page`` (a Playwright page) and the chapters
    holding it; ``base_url`` is the site's URL. With ``snippets``, each listed excerpt's faults too."""
    hrefs = typed_search(page, f"{base_url}/{book.path}search.html", query)
    row = Row(query, book.lang, pages_holding(book, query), docnames_of(book, base_url, hrefs))
    if snippets:
        for href, text in shown_snippets(page):
            [name] = docnames_of(book, base_url, [href])
            row.faults[name] = snippet_faults(book, name, query, text, name in row.holding)
    return row


def measure(context, base_url: str, book: Book, queries: list[str]) -> list[Row]:
    """One Row per query, in a new page of ``context`` (a Playwright browser context)."""
    page = context.new_page()
    rows = [search_row(page, base_url, book, q, snippets=True) for q in queries]
    page.close()
    return rows


def short(docname: str, lang: str) -> str:
    """chapters/ko/03_batchnorm -> 03 in the Korean table; chapters/en/03_batchnorm -> en/03 there."""
    folder, _, name = docname.rpartition("/")
    if folder.startswith("chapters/"):
        name = name.split("_")[0]
        return name if folder == f"chapters/{lang}" else f"{folder.removeprefix('chapters/')}/{name}"
    return docname


def cells(r: Row) -> list[str]:
    found = f"{len(r.holding) - len(r.missed)}/{len(r.holding)}"
    if r.missed:
        found += " (missed " + " ".join(short(d, r.lang) for d in r.missed) + ")"
    first = " ".join(short(d, r.lang) for d in r.found[:3]) or "-"
    return [found, " ".join(short(d, r.lang) for d in r.others) or "-", fault_cell([r]), first]


def fault_cell(rows: list[Row]) -> str:
    """How many listed excerpts have a fault, of how many, and which faults: "2/13 (LaTeX 2)"."""
    faults = [f for r in rows for fs in r.faults.values() for f in fs]
    bad = sum(1 for r in rows for fs in r.faults.values() if fs)
    kinds = ", ".join(f"{k} {faults.count(k)}" for k in dict.fromkeys(faults))
    return f"{bad}/{sum(len(r.faults) for r in rows)}" + (f" ({kinds})" if kinds else "")


def table(rows: list[Row], before: list[Row] | None = None) -> str:
    """A Markdown table: per query, the chapter pages holding it, how many of them the search found,
    which other pages it listed and how many of the listed excerpts are at fault (snippet_faults);
    the same for ``before`` (an older build) when given."""
    head = ["query", "chapters holding it", "found", "other pages listed", "excerpts at fault", "listed first"]
    if before:
        head += ["found before", "other pages listed before", "excerpts at fault before", "listed first before"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for i, r in enumerate(rows):
        query = f"{r.query} (= {SPACED[r.query]})" if r.query in SPACED else r.query
        row = [query, f"{len(r.holding)} ({' '.join(short(d, r.lang) for d in r.holding)})"] + cells(r)
        if before:
            row += cells(before[i])
        lines.append("| " + " | ".join(row) + " |")

    def total(rs):
        pairs = sum(len(r.holding) for r in rs)
        return [f"{pairs - sum(len(r.missed) for r in rs)}/{pairs}", f"{sum(len(r.others) for r in rs)} listings",
                fault_cell(rs), ""]

    row = [f"all {len(rows)} queries", f"{sum(len(r.holding) for r in rows)} pairs"] + total(rows)
    if before:
        row += total(before)
    return "\n".join(lines + ["| " + " | ".join(row) + " |"])


def run(sites: list[Path], langs: list[str]) -> dict[tuple[int, str], list[Row]]:
    """Measure every language of every site in one Chromium; keys are (index of the site, lang)."""
    from playwright.sync_api import sync_playwright

    results = {}
    with sync_playwright() as p:
        browser = launch_chromium(p)
        for i, site in enumerate(sites):
            with serve(site) as url:
                context = isolated_context(browser, url)
                for lang in langs:
                    results[i, lang] = measure(context, url, book_of(site, lang), QUERIES[lang])
                context.close()
        browser.close()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", type=Path, help="a built site (the folder with index.html)")
    parser.add_argument("--before", type=Path, help="an older build of the site, measured the same way")
    parser.add_argument("--lang", choices=sorted(QUERIES), action="append", help="default: both")
    args = parser.parse_args(argv)
    langs = args.lang or ["ko", "en"]
    sites = [args.site] + ([args.before] if args.before else [])
    results = run(sites, langs)
    for lang in langs:
        print(f"\n{lang}: {book_of(args.site, lang).root}" + (f" (before: {book_of(args.before, lang).root})" if args.before else ""))
        print(table(results[0, lang], results.get((1, lang))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
