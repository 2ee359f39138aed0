"""What keeps the pages light, without building the book (fast): book/site/icons.py, book/site/korean_font.py,
book/site/light_pages.py and the arithmetic of benchmarks/tools/page_weight.py. The weights of the built pages in
Chromium, and their budgets: tests/benchmarks/test_page_weight.py."""

from __future__ import annotations

import gzip
import re

import pytest

from benchmarks.tools import page_weight
from book.site import icons, korean_font, light_pages
from helpers.paths import ROOT

HEAD = """<head>
  <script defer src="../../_static/scripts/fontawesome.js?digest=55c26ed414f5f8a31ebb"></script>
  <script src="../../_static/searchtools.js"></script>
  <script src="../../_static/language_data.js"></script>
  <script src="../../searchindex.js"></script>
  <script src="../../_static/doctools.js?v=9a2dae69"></script>
</head>"""


def test_the_icon_script_goes_and_icons_are_hidden_from_screen_readers():
    page = icons.without_icon_script(HEAD + '<button title="Launch"><i class="fas fa-rocket"></i></button>'
                                     '<i class="fa-solid fa-sun" aria-hidden="true"></i>')
    assert "fontawesome.js" not in page and "doctools.js" in page
    assert '<i class="fas fa-rocket" aria-hidden="true"></i>' in page
    assert page.count("aria-hidden") == 2, "an icon that was hidden already got a second attribute"


def test_icon_code_points_come_from_the_pages_classes_and_the_stylesheets_own_icons(tmp_path):
    css = ('.fa-rocket:before{content:"\\f135"}.fa-magnifying-glass:before,.fa-search:before{content:"\\f002"}'
           '.fa-unused:before{content:"\\f000"}html{--pst-icon-info-circle:"\uf05a"}'
           '.dropdown:after{content:"\\f107"}')
    (tmp_path / "page.html").write_text('<i class="fas fa-rocket"></i><span class="fa-solid fa-search"></span>',
                                        encoding="utf-8")
    assert icons.used_codepoints(tmp_path, [css]) == {0xF135, 0xF002, 0xF05A, 0xF107}


def test_the_theme_still_has_what_icons_py_reads():
    """A theme upgrade that renames its script or its fonts, or drops the class rules, fails here."""
    static = icons.theme_static()
    css = (static / "styles" / "pydata-sphinx-theme.css").read_text(encoding="utf-8")
    table = icons.class_codepoints(css)
    assert table.get("fa-rocket") == 0xF135 and table.get("fa-github") == 0xF09B, "no .fa-* rules in the theme's CSS"
    for name in icons.FONTS:
        assert (static / "vendor" / "fontawesome" / "webfonts" / name).exists(), name
        family = "Font Awesome 6 Brands" if "brands" in name else "Font Awesome 6 Free"
        assert family.replace(" ", "\\ ") in css or family in css
    macros = (static / "webpack-macros.html").read_text(encoding="utf-8")
    assert icons.SCRIPT.search(macros.replace("{{ pathto('_static/scripts/fontawesome.js', 1) }}",
                                              "../_static/scripts/fontawesome.js")), "the script tag changed"


def test_search_tools_stay_on_the_search_page_only():
    assert "searchindex.js" not in light_pages.lighter(HEAD, "chapters/ko/02_mean_variance")
    assert "searchtools.js" not in light_pages.lighter(HEAD, "glossary")
    assert light_pages.lighter(HEAD, "search").count("<script") == HEAD.count("<script")
    menu = '<img alt="Colab 로고" src="../../_static/images/logo_colab.png">'
    assert light_pages.lighter(menu, "x") == '<img loading="lazy" alt="Colab 로고" src="../../_static/images/logo_colab.png">'
    assert light_pages.lighter('<img src="fig.png">', "x") == '<img src="fig.png">', "only the menu's logos"


CODE = ('<div class="highlight"><pre><span></span><span class="n">x</span><span class="w"> </span>'
        '<span class="o">=</span><span class="w"> </span><span class="n">torch</span><span class="o">.</span>'
        '<span class="n">zeros</span><span class="p">(</span><span class="mi">3</span><span class="p">)</span>'
        '<span class="w">  </span><span class="c1"># 0</span>\n</pre></div>')


def test_plain_code_tokens_are_bare_text_and_the_coloured_ones_keep_their_span():
    out = light_pages.lighter(CODE, "chapters/ko/06_family")
    assert re.sub(r"<[^>]+>", "", out) == re.sub(r"<[^>]+>", "", CODE), "the code's text changed"
    assert not re.search(r'<span class="(n|p|w)">', out), out
    assert {c: out.count(f'<span class="{c}">') for c in ("o", "mi", "c1")} == {"o": 2, "mi": 1, "c1": 1}
    assert len(out) < 0.6 * len(CODE)
    outside = '<p><span class="n">N</span> samples</p>'
    assert light_pages.lighter(outside, "x") == outside, "only code blocks are touched"


NANUM_TTF = next(iter(sorted(ROOT.glob(".venv/lib/python*/site-packages/koreanize_matplotlib/fonts/NanumGothic.ttf"))),
                 None)


@pytest.mark.skipif(NANUM_TTF is None, reason="koreanize-matplotlib's NanumGothic.ttf is not installed")
def test_the_korean_subset_holds_exactly_the_characters_asked_for(tmp_path):
    from fontTools.ttLib import TTFont

    target = tmp_path / "nanum.woff2"
    size = korean_font.subset(NANUM_TTF, target, set("정규화층한국어"))
    cmap = TTFont(str(target)).getBestCmap()
    assert {chr(c) for c in cmap} == set("정규화층한국어")
    assert size < 10_000, f"{size} bytes for seven syllables"


def test_the_korean_book_takes_the_words_its_pages_show_without_holding_them(tmp_path):
    (tmp_path / "page.html").write_text("<p>정규화</p><script>window.SITE_WORDS={'Copied!':'복사했습니다'}</script>",
                                        encoding="utf-8")
    (tmp_path / "_static").mkdir()
    (tmp_path / "_static" / "translations.js").write_text('{"Search Results": "검색 결과"}', encoding="utf-8")
    english = korean_font.book_characters(tmp_path, "en")
    assert english == set("정규화복사했습니다검색결과")
    korean = korean_font.book_characters(tmp_path, "ko")
    sources = korean_font.korean_sources()
    assert ROOT / "book" / "locale" / "ko" / "LC_MESSAGES" / "sphinx.po" in sources
    assert any(p.name == "i18n.py" for p in sources) and ROOT / "_config.yml" in sources
    assert korean > english and set("한국어로읽기") <= korean, "the landing page's words (_config.yml)"
    assert all(korean_font.HANGUL.match(c) for c in korean), "only what the faces' unicode-range covers"


def test_the_stylesheet_names_the_subsets_and_keeps_the_hangul_range():
    css = (ROOT / "book" / "site" / "offline_book" / "nanum-gothic.css").read_text(encoding="utf-8")
    for weight in korean_font.WEIGHTS:
        assert f'url("fonts/{korean_font.SUBSET.format(weight=weight)}")' in css
    assert css.count("unicode-range: U+3131-318E, U+AC00-D7A3;") == len(korean_font.WEIGHTS)


def test_gzip_as_a_static_host_serves_it():
    text = b"normalization " * 1000
    assert page_weight.served_size("a/b.js", text) == len(gzip.compress(text, 6, mtime=0))
    assert page_weight.served_size("fonts/x.woff2", text) == len(text), "woff2 is sent as it is"
    w = page_weight.Weight("p", [page_weight.Part("p.html", 100, 40), page_weight.Part("f.woff2", 50, 50)])
    assert (w.files, w.raw, w.gz) == (2, 150, 90) and w.largest(1)[0].path == "f.woff2"
    table = page_weight.markdown_table([w], {"p": {"gzip": 200}})
    assert "| p | 2 | 0.00 MB | 0.00 MB | 0.00 MB | ? |" in table

