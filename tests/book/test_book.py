"""The site builds as `make book` builds it (book/site/website.py: one Jupyter Book 1 per language, with
warnings treated as errors), and every page of each language's table of contents comes out as
HTML, with what the reader should find in it. (The `built_site` fixture is in conftest.py.)

What each page's text says is checked where it is written: captions, alt text and the link to the
other language in test_chapter_sources.py and test_notebooks.py. Here: that it reaches the HTML.
Checks look inside the page's <article>, not at the whole file: the sidebar lists every page of
the book, so a link searched for in the whole file is always found.
"""

from __future__ import annotations

import html as htmllib
import re
from pathlib import Path

import nbformat
import yaml

from helpers.paths import ROOT
from helpers.site_pages import site_pages

OUTPUT_IMAGE = re.compile(r'<img [^>]*src="[^"]*_images/[^"]*"[^>]*>')
ALT = re.compile(r'\balt="([^"]*)"')
CAPTION_TEXT = re.compile(r'<figcaption>.*?<span class="caption-text">(.*?)</span>', re.S)
LINK = re.compile(r'<a [^>]*href="([^"]*)"')


def article(html: str) -> str:
    """The page's own content (<article class="bd-article">), without the sidebar and header."""
    start = html.index('<article class="bd-article"')
    return html[start:html.index("</article>", start)]


def test_every_toc_page_is_built(built_site):
    for f in site_pages():
        page = built_site / f"{f}.html"
        assert page.exists(), f"{page} missing"
        assert page.stat().st_size > 1000


def chapter_pages(built_site):
    """The chapters' pages, both books: one per notebook (references, index, teachers are Markdown)."""
    return sorted(p for lang in ("ko", "en") for p in (built_site / lang / "chapters" / lang).glob("*.html")
                  if (ROOT / "chapters" / lang / f"{p.stem}.ipynb").exists())


def chapter(built_site, lang: str, stem: str) -> Path:
    return built_site / lang / "chapters" / lang / f"{stem}.html"


def test_each_language_has_a_bibliography_page_that_the_chapters_cite(built_site):
    for lang, title in (("ko", "참고 문헌"), ("en", "References")):
        page = chapter(built_site, lang, "references").read_text(encoding="utf-8")
        assert title in page and "Ioffe" in page and "Szegedy" in page, f"{lang}/references.html"
        cited = chapter(built_site, lang, "03_batchnorm").read_text(encoding="utf-8")
        assert 'href="references.html#' in cited, f"{lang}/03_batchnorm.html cites nothing in references.html"


def test_chapter_pages_carry_their_outputs(built_site):
    html = article(chapter(built_site, "en", "03_batchnorm").read_text(encoding="utf-8"))
    assert "max abs difference normlib vs nn.BatchNorm1d" in html   # the stored outputs made it in
    html_ko = article(chapter(built_site, "ko", "03_batchnorm").read_text(encoding="utf-8"))
    assert "배치 정규화" in html_ko and "이동 통계" in html_ko


def notebook_figures(path: Path) -> list[str]:
    """The alt text of every figure a chapter notebook draws (an image/png output), in order."""
    nb = nbformat.read(path, as_version=4)
    return [c.metadata.get("mystnb", {}).get("image", {}).get("alt", "")
            for c in nb.cells
            if any("image/png" in o.get("data", {}) for o in c.get("outputs", []))
            and not {"remove-cell", "remove-output"} & set(c.metadata.get("tags", []))]


def page_figures(html: str) -> list[tuple[str, str]]:
    """(alt, caption) of every output image of a page; caption "" when it is not in a captioned <figure>."""
    figures = []
    for m in OUTPUT_IMAGE.finditer(html):
        opened, closed = html.rfind("<figure", 0, m.start()), html.rfind("</figure>", 0, m.start())
        end = html.find("</figure>", m.end())
        caption = CAPTION_TEXT.search(html[m.end():end]) if opened > closed and end > 0 else None
        alt = ALT.search(m.group(0))
        figures.append((htmllib.unescape(alt.group(1)) if alt else "",
                        re.sub(r"<[^>]+>", "", caption.group(1)).strip() if caption else ""))
    return figures


def test_every_chapter_page_has_math_and_the_figures_of_its_notebook_with_their_captions(built_site):
    pages = chapter_pages(built_site)
    expected = sorted(name for name in site_pages()
                      if (ROOT / (name.split("/", 1)[1] + ".ipynb")).exists())
    assert sorted(str(p.relative_to(built_site).with_suffix("")) for p in pages) == expected, [p.name for p in pages]
    for page in pages:
        html = page.read_text(encoding="utf-8")
        name = f"{page.parent.name}/{page.name}"
        assert 'class="math' in html, f"{name}: no math"
        # the notebook's figures, each with the notebook's alt text and a caption (their wording
        # and language: test_chapter_sources.py)
        figures = page_figures(article(html))
        alts = notebook_figures(ROOT / "chapters" / page.parent.name / f"{page.stem}.ipynb")
        assert [alt for alt, _ in figures] == alts, f"{name}: the page's figures (alt text) are not the notebook's"
        uncaptioned = [alt[:40] for alt, caption in figures if not caption]
        assert not uncaptioned, f"{name}: figures without a caption: {uncaptioned}"


def test_links_in_the_pages_lead_to_pages_of_the_book(built_site):
    """Every relative link in a page's content (another chapter, the glossary, ...) points to a
    file of the built site."""
    broken = []
    for docname in site_pages():
        page = built_site / f"{docname}.html"
        for href in LINK.findall(article(page.read_text(encoding="utf-8"))):
            target = htmllib.unescape(href).split("#")[0].split("?")[0]
            if not target or re.match(r"^[a-z][a-z0-9+.-]*:|^//", target, re.IGNORECASE):
                continue   # an anchor on the page, or another site
            if not (page.parent / target).resolve().is_file():
                broken.append(f"{docname}: {href}")
    assert not broken, "links to no page of the book:\n" + "\n".join(broken)


def test_each_book_opens_on_its_chapters_and_glossary(built_site):
    for lang in ("ko", "en"):
        html = article(chapter(built_site, lang, "index").read_text(encoding="utf-8"))
        for stem in ("01_why_normalize", "05_rmsnorm", "11_without_norm"):
            assert f'href="{stem}.html"' in html, (lang, stem)
        assert 'href="../../glossary.html"' in html and 'href="teachers.html"' in html, lang
        # the book's root redirects to its index
        assert f"url=chapters/{lang}/index.html" in (built_site / lang / "index.html").read_text(encoding="utf-8")


def test_the_glossary_is_in_the_page_language(built_site):
    """One glossary.md, two pages: the Korean page's title, introduction and meanings are Korean,
    the English page's English; both pair every term."""
    ko = article((built_site / "ko" / "glossary.html").read_text(encoding="utf-8"))
    en = article((built_site / "en" / "glossary.html").read_text(encoding="utf-8"))
    for pair in (("모분산", "population variance"), ("스케일과 시프트", "scale and shift"), ("정규화", "normalization")):
        assert all(word in ko for word in pair) and all(word in en for word in pair), pair
    assert "<h1>용어집" in ko and "Glossary" not in ko and "The terms of the book" not in ko
    assert "<h1>Glossary" in en and "용어집" not in en and "짝지었습니다" not in en
    # the meaning column: a Korean meaning on the Korean page only, an English one on the English page only
    assert "값들의 합을 개수로 나눈 것" in ko and "the sum of the values divided by their count" not in ko
    assert "the sum of the values divided by their count" in en and "값들의 합을 개수로 나눈 것" not in en


def test_every_chapter_page_offers_launch_buttons_and_its_ipynb(built_site):
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    repo = config["repository"]["url"].removeprefix("https://github.com/")
    for page in chapter_pages(built_site):
        html = page.read_text(encoding="utf-8")
        lang = page.parent.name
        notebook = f"chapters/{lang}/{page.stem}.ipynb"
        assert f'href="https://colab.research.google.com/github/{repo}/blob/main/{notebook}"' in html, page
        assert f"https://mybinder.org/v2/gh/{repo}/main?urlpath=lab/tree/{notebook}" in html, page
        # no JupyterHub entry unless a course sets its hub (tests/book/test_launch_menu.py)
        assert "/hub/user-redirect/git-pull" not in html, page
        download = f'href="../../_sources/{notebook}"'
        assert download in html, f"{page}: no download link to the .ipynb"
        assert (built_site / lang / "_sources" / notebook).exists()
