"""The small things a new student ran into (the newcomer's review of 2026-12-03, F5 and F7), on the
built site: the search box's magnifier clear of what is typed, Korean not broken inside words on the
landing page, glossary rows leading to the chapter that introduces their term, the home pages
pointing students to their guide."""

from __future__ import annotations

import re

import pytest
from bs4 import BeautifulSoup

from book.site.local_site import isolated_context, serve

# The input's first character against the icon: where the typed text starts (the input's left edge
# plus its left padding) must lie right of the magnifier's right edge.
ICON_AND_TEXT = """() => {
  const form = [...document.querySelectorAll('form.bd-search')].find(f => f.offsetParent !== null);
  const icon = form.querySelector('.fa-magnifying-glass').getBoundingClientRect();
  const input = form.querySelector('input[name=q]');
  const box = input.getBoundingClientRect();
  const padding = parseFloat(getComputedStyle(input).paddingLeft);
  return {iconRight: icon.right, iconWidth: icon.width, textLeft: box.left + padding};
}"""


@pytest.mark.browser
@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("lang, query", [("ko", "배치 정규화"), ("en", "batch normalization")])
def test_the_magnifier_does_not_cover_what_is_typed(browser, offline_site, lang, query, width):
    with serve(offline_site) as url:
        context = isolated_context(browser, url)
        page = context.new_page()
        page.set_viewport_size({"width": width, "height": 800})
        page.goto(f"{url}/{lang}/search.html", wait_until="load")
        box = page.locator(".bd-search-container input[name=q]").first
        box.click()
        box.press_sequentially(query)
        where = page.evaluate(ICON_AND_TEXT)
        context.close()
    assert where["iconWidth"] > 0, "no magnifier drawn"
    assert where["iconRight"] <= where["textLeft"], f"the magnifier covers the first character typed: {where}"


@pytest.mark.browser
def test_the_landing_page_keeps_korean_words_whole(browser, offline_site):
    with serve(offline_site) as url:
        context = isolated_context(browser, url)
        page = context.new_page()
        page.goto(f"{url}/index.html", wait_until="load")
        breaks = page.eval_on_selector_all("[lang=ko]", "els => els.map(e => getComputedStyle(e).wordBreak)")
        context.close()
    assert breaks and set(breaks) == {"keep-all"}, breaks


def soup(path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


@pytest.mark.parametrize("lang, term, chapter", [
    ("ko", "그룹 정규화", "06_family"), ("ko", "인스턴스 정규화", "06_family"), ("ko", "배치 정규화", "03_batchnorm"),
    ("ko", "층 정규화", "04_layernorm"), ("ko", "모멘텀", "03_batchnorm"),
    ("en", "group normalization (GroupNorm)", "06_family"), ("en", "batch normalization (BatchNorm)", "03_batchnorm"),
    ("en", "momentum", "03_batchnorm")])
def test_a_glossary_row_links_to_the_chapter_introducing_its_term(built_site, lang, term, chapter):
    page = built_site / lang / "glossary.html"
    rows = [tr for tr in soup(page).select("table tr") if tr.find("td") and tr.find("td").get_text(strip=True) == term]
    assert len(rows) == 1, f"no one row for {term!r} in {page}"
    links = [a["href"].split("#")[0] for a in rows[0].select("a[href]")]
    assert links == [f"chapters/{lang}/{chapter}.html"], links
    assert (page.parent / links[0]).exists()


def test_the_chapter_6_the_glossary_sends_to_introduces_the_korean_terms(built_site):
    article = soup(built_site / "ko" / "chapters" / "ko" / "06_family.html").find("article").get_text(" ")
    for term, english in (("그룹 정규화", "group normalization"), ("인스턴스 정규화", "instance normalization")):
        assert re.search(f"{term}\\s*\\(\\s*{english}", article), term


@pytest.mark.parametrize("lang, words", [("ko", "배우는 분을 위한 안내"), ("en", "guide for students")])
def test_the_home_page_sends_students_to_their_guide(built_site, lang, words):
    home = soup(built_site / lang / "chapters" / lang / "index.html").find("article")
    links = [a for a in home.select("a[href]") if a["href"].split("#")[0] == "students.html"]
    assert links and words in links[0].get_text(" "), [a.get_text() for a in links]


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_every_chapter_link_of_the_glossary_stays_in_its_language_and_exists(built_site, lang):
    page = built_site / lang / "glossary.html"
    links = [a["href"].split("#")[0] for a in soup(page).select("table a[href]")]
    chapters = [href for href in links if href.startswith("chapters/")]
    assert len(chapters) >= 35, chapters                    # the rows of the terms the chapters introduce
    assert all(href.startswith(f"chapters/{lang}/") for href in chapters), chapters
    assert all((page.parent / href).exists() for href in chapters), chapters
