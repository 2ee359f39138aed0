"""One language per page, read in the built HTML (`make book`'s site, book/site/website.py):

- every page declares its book's language (<html lang="ko"> in ko/, "en" in en/);
- each book's sidebar lists that book's pages and nothing of the other's;
- a switch in every page's header leads to the same page of the other book, and back;
- figures are numbered per book from 1, "그림 N" on Korean pages and "Fig. N" on English ones;
- no English interface word is left on a Korean page: every text and every aria-label, title,
  placeholder and alt outside the chapter's own content is Korean, or a name (Binder, Colab);
- the landing page offers both books and runs no script (it remembers nothing).

What only a running browser shows (words written by scripts, the search page) is in
test_browser.py; the extension that does this is book/site/site_pages.py.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from helpers.site_pages import site_pages

# what this module needs beyond Python (tests/conftest.py: not in make test-fast)
pytestmark = pytest.mark.site

HANGUL = re.compile(r"[\uac00-\ud7a3]")
LATIN_WORD = re.compile(r"[A-Za-z]{3,}")
# Names and file types, the same in every language.
# "English" is the Korean page's switch: the other book's name in its own language.
NAMES = {"Binder", "Colab", "JupyterHub", ".ipynb", ".pdf", "Ctrl", "Ctrl+K", "PDF", "English"}
ATTRIBUTES = ("aria-label", "title", "placeholder", "alt")


class Chrome(HTMLParser):
    """The texts and labelled attributes of a page outside its <article> (the chapter's own
    content, whose language test_output_language.py and test_chapter_sources.py check), code and
    math aside (a heading's `nn.RMSNorm` is the same in both languages, in the sidebars too)."""

    VOID = {"br", "img", "input", "meta", "link", "hr", "source", "wbr", "area", "col", "embed"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth_in_article = 0
        self.skip = 0            # inside <script>, <style>, <code> or math
        self.skipped: list[str] = []
        self.texts: list[str] = []
        self.attributes: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs):
        classes = dict(attrs).get("class") or ""
        if tag in ("script", "style", "code") or (tag == "span" and "math" in classes.split()):
            self.skip += 1
            self.skipped.append(tag)
        if self.depth_in_article or (tag == "article" and "bd-article" in classes):
            if tag not in self.VOID:
                self.depth_in_article += 1
            return
        for name, value in attrs:
            if name in ATTRIBUTES and value:
                self.attributes.append((name, value))

    def handle_endtag(self, tag):
        if self.skipped and tag == self.skipped[-1]:
            self.skipped.pop()
            self.skip -= 1
        if self.depth_in_article and tag not in self.VOID:
            self.depth_in_article -= 1

    def handle_data(self, data):
        if not self.depth_in_article and not self.skip and data.strip():
            self.texts.append(data.strip())


def chrome_of(path: Path) -> Chrome:
    parser = Chrome()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def english_words(strings: list[str], chapter_titles: set[str]) -> list[str]:
    """Strings with an English word and no Hangul, other than names and the books' own titles
    (the sidebar's "6장. ... (GroupNorm, InstanceNorm)" has Hangul; a bibliography's hover text
    is the cited paper's title)."""
    return [s for s in strings
            if LATIN_WORD.search(s) and not HANGUL.search(s) and s not in NAMES and s not in chapter_titles]


PAGES = site_pages()


def page_file(site: Path, page: str) -> Path:
    return site / f"{page}.html"


def test_every_page_declares_its_books_language(built_site):
    wrong = []
    for page in PAGES:
        lang = page.split("/")[0]
        head = page_file(built_site, page).read_text(encoding="utf-8")[:400]
        if f'<html lang="{lang}"' not in head:
            wrong.append(f"{page}: {re.search(r'<html[^>]*>', head).group(0)}")
    for extra in ("search", "genindex"):
        for lang in ("ko", "en"):
            head = (built_site / lang / f"{extra}.html").read_text(encoding="utf-8")[:400]
            if f'<html lang="{lang}"' not in head:
                wrong.append(f"{lang}/{extra}")
    assert not wrong, "pages that do not declare their language:\n" + "\n".join(wrong)


SIDEBAR_LINK = re.compile(r'<a class="[^"]*reference internal[^"]*" href="([^"#]+)"')


def sidebar_links(html: str) -> list[str]:
    start = html.index('class="bd-links bd-docs-nav"')
    return SIDEBAR_LINK.findall(html[start:html.index("</nav>", start)])


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_each_books_sidebar_lists_its_own_pages(built_site, lang):
    own = [p.split("/", 1)[1] for p in PAGES if p.startswith(f"{lang}/")]
    page = built_site / lang / "search.html"     # a page outside the list: no entry is "current"
    links = [str((page.parent / href).resolve().relative_to((built_site / lang).resolve()).with_suffix(""))
             for href in sidebar_links(page.read_text(encoding="utf-8"))]
    assert links == own[1:] or links == own, f"{lang} sidebar: {links}"
    other = "en" if lang == "ko" else "ko"
    assert not [link for link in links if f"chapters/{other}/" in link]


SWITCH = re.compile(r'<a class="btn btn-sm language-switch" href="([^"]+)" hreflang="([a-z]+)"')


def test_every_page_switches_to_the_same_page_in_the_other_language_and_back(built_site):
    problems = []
    for page in PAGES + ["ko/search", "en/search", "ko/genindex", "en/genindex"]:
        path = page_file(built_site, page)
        found = SWITCH.findall(path.read_text(encoding="utf-8"))
        if len(found) != 1:
            problems.append(f"{page}: {len(found)} switches")
            continue
        href, hreflang = found[0]
        target = (path.parent / href).resolve()
        lang = page.split("/")[0]
        if not target.is_file():
            problems.append(f"{page}: switch to {href}, which does not exist")
            continue
        rel = target.relative_to(built_site.resolve())
        expected = page.replace(f"/chapters/{lang}/", f"/chapters/{hreflang}/").split("/", 1)[1]
        if rel.parts[0] != hreflang or hreflang == lang or str(Path(*rel.parts[1:]).with_suffix("")) != expected:
            problems.append(f"{page}: switch to {rel}, expected {hreflang}/{expected}")
            continue
        back = SWITCH.findall(target.read_text(encoding="utf-8"))
        if not back or (target.parent / back[0][0]).resolve() != path.resolve():
            problems.append(f"{page}: the other page's switch does not lead back")
    assert not problems, "\n".join(problems)


CAPTION_NUMBER = re.compile(r'<span class="caption-number">([^<]*)</span>')


@pytest.mark.parametrize("lang, word", [("ko", "그림"), ("en", "Fig.")])
def test_figures_are_numbered_per_book_from_one_in_its_language(built_site, lang, word):
    numbers = []
    for page in PAGES:
        if page.startswith(f"{lang}/"):
            numbers += CAPTION_NUMBER.findall(page_file(built_site, page).read_text(encoding="utf-8"))
    assert numbers, f"no numbered figure in the {lang} book"
    wrong = [n for n in numbers if not re.fullmatch(rf"{re.escape(word)} \d+\s*", n)]
    assert not wrong, f"{lang}: figure numbers not in the form '{word} N': {sorted(set(wrong))[:5]}"
    values = [int(re.search(r"\d+", n).group(0)) for n in numbers]
    assert values[0] == 1 and values == list(range(1, len(values) + 1)), values[:20]


def chapter_titles(site: Path, lang: str) -> set[str]:
    titles = set()
    for page in PAGES:
        if page.startswith(f"{lang}/"):
            html = page_file(site, page).read_text(encoding="utf-8")
            titles.add(re.sub(r"<[^>]+>", "", re.search(r"<h1>(.*?)<", html, re.S).group(1)).strip())
    return titles


def test_no_english_interface_word_on_a_korean_page(built_site):
    titles = chapter_titles(built_site, "ko")
    found: dict[str, str] = {}
    for page in [p for p in PAGES if p.startswith("ko/")] + ["ko/search", "ko/genindex"]:
        chrome = chrome_of(page_file(built_site, page))
        strings = chrome.texts + [value for name, value in chrome.attributes
                                  if not (name == "title" and re.search(r"\d{4}\.", value))]  # citations' hover text
        for s in english_words(strings, titles):
            found.setdefault(s, page)
    assert not found, "English interface words on Korean pages:\n" + "\n".join(f"  {s!r} ({p})" for s, p in found.items())


def test_the_check_finds_an_english_word_in_a_korean_page(tmp_path):
    """The check above can fail: a button with an English title outside the article is caught,
    the same word inside the article is not."""
    page = tmp_path / "p.html"
    page.write_text('<html lang="ko"><body><button title="Toggle primary sidebar"></button>'
                    '<article class="bd-article"><p>Toggle me</p><img alt="x"></article>'
                    '<footer>지은이: normlib 저자들</footer><nav>Contents</nav></body></html>', encoding="utf-8")
    chrome = chrome_of(page)
    strings = chrome.texts + [v for _, v in chrome.attributes]
    assert english_words(strings, set()) == ["Contents", "Toggle primary sidebar"]


def test_the_english_pages_say_the_same_things_in_english(built_site):
    """The English book keeps the theme's English (the catalogue is Korean only)."""
    html = page_file(built_site, "en/chapters/en/03_batchnorm").read_text(encoding="utf-8")
    assert 'aria-label="Main"' in html and ">Show code cell source<" in html
    assert not HANGUL.search(" ".join(chrome_of(page_file(built_site, "en/chapters/en/03_batchnorm")).texts
                                      ).replace("한국어", ""))


def test_the_landing_page_offers_both_books_and_remembers_nothing(built_site):
    html = (built_site / "index.html").read_text(encoding="utf-8")
    for lang in ("ko", "en"):
        match = re.search(rf'<a href="({lang}/chapters/{lang}/index.html)" hreflang="{lang}">', html)
        assert match and (built_site / match.group(1)).is_file(), lang
        # and the book's own address leads there too
        redirect = (built_site / lang / "index.html").read_text(encoding="utf-8")
        assert f'<html lang="{lang}">' in redirect and f'url=chapters/{lang}/index.html' in redirect
    assert "<script" not in html.lower() and "cookie" not in html.lower() and "storage" not in html.lower()
    assert re.search(r'<li lang="ko">.*한국어', html) and re.search(r'<li lang="en">.*English', html)
    css = re.search(r'<link rel="stylesheet" href="([^"]+)"', html).group(1)
    assert (built_site / css).is_file(), f"the landing page's font stylesheet {css} is missing"


# --- Chapters that read as prose (issue 29, point 5; the notebooks' side: test_prose_pages.py) ----

TOGGLE = re.compile(r'<p class="collapsed admonition-title">([^<]*)</p>')
SOLUTION_WORDS = {"ko": re.compile(r"(\d+)번 풀이 보기"), "en": re.compile(r"Show solution (\d+)")}


def exercises(lang: str, stem: str) -> int:
    """How many numbered exercises the chapter's last section asks (read in the notebook's prose)."""
    import nbformat

    from helpers.paths import ROOT

    heading = "## 연습 문제" if lang == "ko" else "## Exercises"
    nb = nbformat.read(ROOT / "chapters" / lang / f"{stem}.ipynb", as_version=4)
    prose = [c.source for c in nb.cells if c.cell_type == "markdown" and heading in c.source][-1]
    return sum(1 for line in prose.splitlines() if re.match(r"\d+\. ", line))


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_each_solution_is_offered_as_a_solution(built_site, lang):
    """An exercise's solution opens with "2번 풀이 보기" / "Show solution 2", numbered as the
    exercises; no other folded cell says so, and no solution says the words of any folded code."""
    chapters = [p for p in PAGES if p.startswith(f"{lang}/chapters/{lang}/") and p.split("/")[-1][:2].isdigit()]
    assert len(chapters) >= 10
    for page in chapters:
        toggles = TOGGLE.findall(page_file(built_site, page).read_text(encoding="utf-8"))
        numbers = [int(m.group(1)) for t in toggles if (m := SOLUTION_WORDS[lang].fullmatch(t))]
        assert numbers == list(range(1, exercises(lang, page.split("/")[-1]) + 1)), f"{page}: toggles {toggles}"
        assert not [t for t in toggles if t in ("코드 셀 보기", "Show code cell content")], f"{page}: {toggles}"


PLACE = re.compile(r'<span id="(s(?:\.\d+)+)"></span>')


def test_both_languages_name_each_section_by_the_same_place(built_site):
    """Every section under a page's title has an id that is its place (s.2.1), the same on the
    page's counterpart: the language switch opens the other page at it (test_browser.py follows it)."""
    problems = []
    pairs = [p for p in PAGES if p.startswith("ko/")]
    for page in pairs:
        other = page.replace("ko/", "en/", 1).replace("/chapters/ko/", "/chapters/en/")
        html = page_file(built_site, page).read_text(encoding="utf-8")
        places = PLACE.findall(html)
        if places != PLACE.findall(page_file(built_site, other).read_text(encoding="utf-8")):
            problems.append(f"{page} and {other} differ: {places}")
        if len(places) != html.count("<section") - 1:
            problems.append(f"{page}: {html.count('<section')} sections, places {places}")
    assert not problems, "\n".join(problems)
    chapter = PLACE.findall(page_file(built_site, "en/chapters/en/03_batchnorm").read_text(encoding="utf-8"))
    assert chapter[:2] == ["s.1", "s.2"] and any(p.count(".") == 2 for p in chapter), chapter


def test_the_landing_page_says_what_the_book_is_in_each_language(built_site):
    html = (built_site / "index.html").read_text(encoding="utf-8")
    lines = dict(re.findall(r'<p lang="(ko|en)">([^<]+)</p>', html))
    assert set(lines) == {"ko", "en"}, lines
    assert HANGUL.search(lines["ko"]) and "정규화" in lines["ko"] and lines["ko"].endswith("책입니다.")
    assert not HANGUL.search(lines["en"]) and "normalization" in lines["en"]
    assert html.index('<p lang="en">') < html.index("<ul>"), "the line comes before the links"
