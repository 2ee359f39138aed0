"""The built site's search in headless Chromium, as a reader uses it: each query is typed into the
search box of a book's search.html and Enter pressed; the result links are counted.

- Every Korean query (benchmarks/tools/search_recall.py's KOREAN_QUERIES: 정규화, 분산, 이동 평균, 배치 크기,
  층, ...) lists every Korean chapter page whose article text holds it, whatever particle or
  ending is attached (recall 100%), and lists only pages of the Korean book.
- A compound typed without its space (benchmarks/tools/search_recall.py's SPACED: 배치정규화, 층정규화,
  평균과분산, 이동평균, ...) lists every chapter holding its spaced form, written either way: its
  recall equals its spaced form's, 100%.
- Every listed Korean result shows, as its excerpt, a sentence of the page: no LaTeX source, no
  run of the page's hidden print outline, and on a chapter holding the query a sentence holding it.
- Every English query does the same in the English book, excerpts included (the same snippets).
- A chapter whose title holds the query is listed first (배치 정규화 -> chapter 3, 그룹정규화 ->
  chapter 6), else one with a heading holding it; in both books, for every query of the lists and
  for the named ones in ``FIRST``; then chapters with a heading holding it, then those holding it
  only in their text, each group in the book's order (chapter 1 before chapter 10).
- The Korean book's search page runs the Korean split (book/site/korean_search.py); no request leaves
  127.0.0.1.

`python -m benchmarks.tools.search_recall SITE_DIR` prints the same measurement as a table. The split
itself, without a browser: tests/book/test_korean_search.py.
"""

from __future__ import annotations

import json
import re

import pytest

from benchmarks.tools.search_recall import (
    ENGLISH_QUERIES,
    KOREAN_QUERIES,
    SPACED,
    book_of,
    first_expected,
    search_row,
    where_held,
)
from book.site.korean_search import JS_SNIPPET, JS_SPLITTER
from book.site.local_site import isolated_context, serve

pytestmark = pytest.mark.browser      # and so slow (tests/conftest.py)


@pytest.fixture(scope="module")
def search(browser, offline_site):
    """search(lang, query) -> Row (benchmarks/tools/search_recall.py), each typed once per module; and the
    requests made to other hosts (aborted)."""
    seen: list[str] = []
    with serve(offline_site) as url:
        context = isolated_context(browser, url, seen)
        page = context.new_page()
        cache = {}

        def run(lang: str, query: str):
            if (lang, query) not in cache:       # the excerpts checked too (test_an_excerpt_...)
                cache[lang, query] = search_row(page, url, book_of(offline_site, lang), query, snippets=True)
            return cache[lang, query]

        run.seen = seen
        yield run
        context.close()


def check(row, lang: str):
    assert row.holding, f"{row.query!r} is in no {lang} chapter any more: change the query list"
    assert not row.missed, (f"{row.query!r}: the search lists {len(row.holding) - len(row.missed)} of the "
                            f"{len(row.holding)} chapters holding it; missed {row.missed}; listed {row.found}")
    other = "en" if lang == "ko" else "ko"
    strays = [d for d in row.found if d.startswith("../") or d.startswith(f"chapters/{other}/")]
    assert not strays, f"{row.query!r} lists pages outside the {lang} book: {strays}"


@pytest.mark.parametrize("query", KOREAN_QUERIES)
def test_a_korean_query_finds_every_korean_chapter_holding_it(search, query):
    check(search("ko", query), "ko")


@pytest.mark.parametrize("query", sorted(SPACED))
def test_a_korean_compound_typed_without_its_space_finds_what_its_spaced_form_finds(search, query):
    unspaced, spaced = search("ko", query), search("ko", SPACED[query])
    assert unspaced.holding == spaced.holding and spaced.holding
    recall = [len(r.holding) - len(r.missed) for r in (unspaced, spaced)]
    assert recall[0] == recall[1] == len(spaced.holding), (
        f"{query!r} finds {recall[0]} of the {len(spaced.holding)} chapters holding {SPACED[query]!r} "
        f"(missed {unspaced.missed}); the spaced form finds {recall[1]}")


@pytest.mark.parametrize("lang, query", [("ko", q) for q in KOREAN_QUERIES] + [("en", q) for q in ENGLISH_QUERIES])
def test_an_excerpt_shows_the_sentence_holding_the_query(search, lang, query):
    row = search(lang, query)
    assert set(row.faults) == set(row.found), "some result showed no excerpt"
    bad = {page: faults for page, faults in row.faults.items() if faults}
    assert not bad, f"{query!r}: excerpts at fault: {bad}"


@pytest.mark.parametrize("query", ENGLISH_QUERIES)
def test_an_english_query_finds_every_english_chapter_holding_it(search, query):
    check(search("en", query), "en")


# Queries and the chapter a reader expects first, written from the chapters' titles.
FIRST = [("ko", "배치 정규화", "03_batchnorm"), ("ko", "배치정규화", "03_batchnorm"),
         ("ko", "층 정규화", "04_layernorm"), ("ko", "층정규화", "04_layernorm"),
         ("ko", "RMS 정규화", "05_rmsnorm"), ("ko", "그룹 정규화", "06_family"), ("ko", "그룹정규화", "06_family"),
         ("ko", "인스턴스 정규화", "06_family"), ("ko", "인스턴스정규화", "06_family"), ("ko", "역전파", "07_backward"),
         ("ko", "평균과 분산", "02_mean_variance"), ("ko", "평균과분산", "02_mean_variance"),
         ("ko", "이동 평균", "03_batchnorm"), ("ko", "이동평균", "03_batchnorm"),
         ("en", "batch normalization", "03_batchnorm"), ("en", "layer normalization", "04_layernorm"),
         ("en", "backward pass", "07_backward"), ("en", "mean and variance", "02_mean_variance"),
         ("en", "GroupNorm", "06_family")]


@pytest.mark.parametrize("lang, query, chapter", FIRST)
def test_the_chapter_named_by_the_query_is_listed_first(search, lang, query, chapter):
    row = search(lang, query)
    assert row.found, f"{query!r} lists nothing"
    assert row.found[0] == f"chapters/{lang}/{chapter}", f"{query!r} lists first {row.found[:4]}"


@pytest.mark.parametrize("lang, query", [("ko", q) for q in KOREAN_QUERIES] + [("en", q) for q in ENGLISH_QUERIES])
def test_a_chapter_whose_title_or_heading_holds_the_query_comes_first(search, offline_site, lang, query):
    """The chapters holding the query: those whose title holds it first, then those with a heading
    holding it, then the others, each group in the book's order (chapter 2 before chapter 10)."""
    row = search(lang, query)
    book = book_of(offline_site, lang)
    wanted = first_expected(book, query)
    if wanted:
        assert row.found and row.found[0] in wanted, f"{query!r}: listed first {row.found[:4]}, expected one of {wanted}"
    level = {d: {"title": 2, "heading": 1, "": 0}[where_held(book, d, SPACED.get(query, query))] for d in row.holding}
    listed = [(-level[d], int(d.rsplit("/", 1)[1].split("_")[0]), d) for d in row.found if d in level]
    assert listed == sorted(listed), f"{query!r}: chapters listed out of order: {[d for *_, d in listed]}"


def test_the_korean_search_page_splits_korean(offline_site):
    ko = (offline_site / "ko" / "_static" / "language_data.js").read_text(encoding="utf-8")
    en = (offline_site / "en" / "_static" / "language_data.js").read_text(encoding="utf-8")
    assert JS_SPLITTER.strip() in ko, "the Korean book was built without book/site/korean_search.py"
    assert JS_SPLITTER.strip() not in en
    assert JS_SNIPPET.strip() in ko and JS_SNIPPET.strip() in en, "a book without the result snippets"


def search_index(book) -> dict:
    text = (book / "searchindex.js").read_text(encoding="utf-8")
    return json.loads(text.removeprefix("Search.setIndex(").removesuffix(")"))


def test_the_search_indexes_hold_only_what_their_build_wrote(offline_site):
    """Sphinx loads the searchindex.js an output folder already holds and keeps its words with
    an empty list of pages: a build into a used folder ships every word of the one before."""
    for lang in ("ko", "en"):
        index = search_index(offline_site / lang)
        stale = [t for part in ("terms", "titleterms") for t, pages in index[part].items() if pages == []]
        assert not stale, f"{lang}/searchindex.js: {len(stale)} words on no page, e.g. {stale[:5]}"
    long_hangul = [t for t in search_index(offline_site / "ko")["terms"] if re.fullmatch("[\uac00-\ud7a3]{3,}", t)]
    assert not long_hangul, f"ko/searchindex.js holds Hangul words of 3 syllables or more, e.g. {long_hangul[:5]}"


def test_searching_asks_no_other_host(search):
    search("ko", KOREAN_QUERIES[0])
    search("en", ENGLISH_QUERIES[0])
    assert not search.seen, f"requests to other hosts: {search.seen[:5]}"


# Each highlighted run of a listed result (its title and excerpt), in the order shown.
HIGHLIGHTED = """() => [...document.querySelectorAll('#search-results ul.search li .highlighted')]
  .map(span => span.textContent)"""


@pytest.mark.parametrize("query, words", [("배치 정규화", {"배치", "정규화"}), ("이동 평균", {"이동", "평균"})])
def test_a_korean_word_is_highlighted_whole(browser, offline_site, query, words):
    """The newcomer saw 정규화 highlighted as 정규 (the query's syllable pairs, one after the other)."""
    with serve(offline_site) as url:
        context = isolated_context(browser, url)
        page = context.new_page()
        book = book_of(offline_site, "ko")
        search_row(page, url, book, query, snippets=True)         # typed, every excerpt shown
        shown = page.evaluate(HIGHLIGHTED)
        context.close()
    assert words <= set(shown), shown
    pieces = {"정규", "규화", "이동", "평균", "배치"} - words
    assert not pieces & set(shown), f"pairs highlighted instead of words: {sorted(pieces & set(shown))}"
