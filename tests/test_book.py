"""The book builds with Jupyter Book 1 with warnings treated as errors, and every page in the
table of contents comes out as HTML. (The `built_book` fixture is in conftest.py, shared with
test_offline_book.py and test_browser.py.)"""

from __future__ import annotations

import re

import yaml
from conftest import ROOT, toc_docnames


def test_every_toc_page_is_built(built_book):
    for f in toc_docnames():
        page = built_book / f"{f}.html"
        assert page.exists(), f"{page} missing"
        assert page.stat().st_size > 1000


def chapter_pages(built_book):
    return sorted((built_book / "chapters").glob("*/*.html"))


def test_chapter_pages_carry_their_outputs(built_book):
    html = (built_book / "chapters" / "en" / "03_batchnorm.html").read_text(encoding="utf-8")
    assert "max abs difference normlib vs nn.BatchNorm1d" in html   # the stored outputs made it in
    html_ko = (built_book / "chapters" / "ko" / "03_batchnorm.html").read_text(encoding="utf-8")
    assert "배치 정규화" in html_ko and "누적 통계" in html_ko


def test_every_chapter_page_has_math_figures_with_captions_and_its_counterpart_link(built_book):
    pages = chapter_pages(built_book)
    expected = sorted(name for name in toc_docnames() if name.startswith("chapters/"))
    assert [f"chapters/{p.parent.name}/{p.stem}" for p in pages] == expected, [p.name for p in pages]
    for page in pages:
        html = page.read_text(encoding="utf-8")
        lang, other = page.parent.name, {"ko": "en", "en": "ko"}[page.parent.name]
        assert 'class="math' in html, f"{lang}/{page.name}: no math"
        assert "mathjax" in html.lower(), f"{lang}/{page.name}: MathJax is not loaded"
        images = re.findall(r"<img [^>]*>", html)
        output_images = [i for i in images if "_images/" in i]
        assert output_images, f"{lang}/{page.name}: no figure"
        assert all(re.search(r'alt="[^"]{20,}"', i) for i in output_images), f"{lang}/{page.name}: an image without alt text"
        assert html.count("<figcaption") >= len(output_images), f"{lang}/{page.name}: a figure without a caption"
        assert f'href="../{other}/{page.name}"' in html, f"{lang}/{page.name}: no link to ../{other}/{page.name}"


def test_landing_page_offers_both_languages_and_the_glossary(built_book):
    html = (built_book / "index.html").read_text(encoding="utf-8")
    for lang in ("ko", "en"):
        for stem in ("01_why_normalize", "05_rmsnorm"):
            assert f'href="chapters/{lang}/{stem}.html"' in html, (lang, stem)
    assert 'href="glossary.html"' in html
    glossary = (built_book / "glossary.html").read_text(encoding="utf-8")
    for pair in (("모분산", "population variance"), ("스케일링과 이동", "scale and shift"), ("정규화", "normalization")):
        assert all(word in glossary for word in pair), pair


def test_every_chapter_page_offers_launch_buttons_and_its_ipynb(built_book):
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    repo = config["repository"]["url"].removeprefix("https://github.com/")
    for page in chapter_pages(built_book):
        html = page.read_text(encoding="utf-8")
        notebook = f"chapters/{page.parent.name}/{page.stem}.ipynb"
        assert f'href="https://colab.research.google.com/github/{repo}/blob/main/{notebook}"' in html, page
        assert f"https://mybinder.org/v2/gh/{repo}/main?urlpath=lab/tree/{notebook}" in html, page
        assert "/hub/user-redirect/git-pull?repo=" in html, page
        download = f'href="../../_sources/{notebook}"'
        assert download in html, f"{page}: no download link to the .ipynb"
        assert (built_book / "_sources" / notebook).exists()
