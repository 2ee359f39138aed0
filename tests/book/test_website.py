"""book/site/website.py without building anything: what each language's book is made of, the
landing page, and the site folder it will and will not empty. (The built site: test_site.py.)"""

from __future__ import annotations

import re

import pytest
import yaml

from book.site import site_pages as pages
from book.site import website
from helpers.paths import ROOT

TOC = {
    "format": "jb-book",
    "root": "chapters/ko/index",
    "parts": [
        {"caption": "한국어", "chapters": [{"file": "chapters/ko/01_a"}, {"file": "chapters/ko/02_b"}]},
        {"caption": "English", "chapters": [{"file": "chapters/en/index"}, {"file": "chapters/en/01_a"},
                                            {"file": "chapters/en/02_b"}]},
        {"caption": "both", "chapters": [{"file": "glossary"}]},
    ],
}


def test_each_language_gets_its_pages_its_root_and_the_shared_ones():
    langs = {"ko": {}, "en": {}}
    ko = website.language_toc(TOC, "ko", langs)
    en = website.language_toc(TOC, "en", langs)
    assert ko == {"format": "jb-book", "root": "chapters/ko/index",
                  "chapters": [{"file": "chapters/ko/01_a"}, {"file": "chapters/ko/02_b"}, {"file": "glossary"}]}
    assert en["root"] == "chapters/en/index"
    assert [c["file"] for c in en["chapters"]] == ["chapters/en/01_a", "chapters/en/02_b", "glossary"]


def test_a_language_without_its_index_is_refused_by_name():
    toc = {**TOC, "parts": TOC["parts"][:1] + TOC["parts"][2:]}
    with pytest.raises(SystemExit, match="en book's root chapters/en/index is not listed"):
        website.language_toc(toc, "en", {"ko": {}, "en": {}})


def test_the_repositorys_toc_gives_both_books_the_same_chapters():
    config, toc = website.load(website.CONFIG), website.load(website.TOC)
    langs = website.languages(config)
    assert list(langs) == ["ko", "en"]
    files = {lang: [f.replace(f"chapters/{lang}/", "chapters/*/")
                    for f in website.toc_files(website.language_toc(toc, lang, langs))] for lang in langs}
    assert files["ko"] == files["en"], "the Korean and English books list different pages"
    for lang in langs:
        for f in website.toc_files(website.language_toc(toc, lang, langs)):
            assert any((ROOT / f).with_suffix(s).exists() for s in (".md", ".ipynb")), f


def test_a_languages_configuration_lays_its_overrides_over_the_shared_one():
    config = {
        "title": "both", "author": "A",
        "html": {"favicon": "tools/x.svg", "use_repository_button": True},
        "sphinx": {"local_extensions": {"ext": "tools/"},
                   "config": {"language": "en", "html_context": {"default_mode": "auto"}}},
        "bibtex_bibfiles": ["references.bib"],
        "languages": {"ko": {"title": "한국어 책", "sphinx": {"config": {"locale_dirs": ["locale"]},
                                                          "local_extensions": {"extra": "tools/"}}},
                      "en": {"title": "English book"}},
    }
    ko = website.language_config(config, "ko")
    assert ko["title"] == "한국어 책" and ko["author"] == "A" and "languages" not in ko
    assert ko["sphinx"]["config"]["language"] == "ko"
    assert ko["sphinx"]["config"]["html_context"] == {"default_mode": "auto"}   # merged, not replaced
    assert ko["sphinx"]["config"]["locale_dirs"] == [str(ROOT / "locale")]
    assert ko["sphinx"]["local_extensions"] == {"ext": str(ROOT / "tools"), "extra": str(ROOT / "tools")}
    assert ko["html"] == {"favicon": str(ROOT / "tools" / "x.svg"), "use_repository_button": True}
    assert ko["bibtex_bibfiles"] == [str(ROOT / "references.bib")]
    en = website.language_config(config, "en")
    assert en["sphinx"]["config"]["language"] == "en" and "extra" not in en["sphinx"]["local_extensions"]
    assert config["sphinx"]["config"]["language"] == "en", "the shared configuration was changed in place"


def test_a_configuration_without_languages_is_refused():
    with pytest.raises(SystemExit, match="expected a 'languages:' mapping"):
        website.languages({"title": "x"})


def test_the_landing_page_links_each_book_and_runs_nothing():
    config = website.load(website.CONFIG)
    html = website.landing_page(config, ["ko", "en"])
    assert re.search(r'<li lang="ko"><a href="ko/chapters/ko/index.html" hreflang="ko"><strong>한국어로 읽기', html)
    assert re.search(r'<li lang="en"><a href="en/chapters/en/index.html" hreflang="en"><strong>Read in English', html)
    assert "<script" not in html and "localStorage" not in html and "cookie" not in html
    # one language built: the page offers that one only
    assert "hreflang=\"en\"" not in website.landing_page(config, ["ko"])


def test_the_landing_page_says_in_one_line_per_language_what_the_book_is():
    html = website.landing_page(website.load(website.CONFIG), ["ko", "en"])
    lines = re.findall(r'<p lang="(ko|en)">([^<\n]+)</p>', html)
    assert [lang for lang, _ in lines] == ["ko", "en"], lines
    (_, ko), (_, en) = lines
    assert re.search(r"[\uac00-\ud7a3]", ko) and not re.search(r"[\uac00-\ud7a3]", en)
    assert "BatchNorm" in ko and "BatchNorm" in en and 60 < len(en) < 300
    assert '<p lang="en">' not in website.landing_page(website.load(website.CONFIG), ["ko"])


def test_only_a_folder_the_site_wrote_is_emptied(tmp_path):
    mine = tmp_path / "site"
    website.prepare(mine)
    (mine / "chapters").mkdir()
    (mine / "chapters" / "old.html").write_text("from an earlier build")
    website.prepare(mine)
    assert sorted(p.name for p in mine.iterdir()) == [website.MARKER]
    other = tmp_path / "documents"
    other.mkdir()
    (other / "thesis.tex").write_text("mine")
    with pytest.raises(SystemExit, match="expected an empty folder or one book/site/website.py built"):
        website.prepare(other)
    assert (other / "thesis.tex").read_text() == "mine"


GLOSSARY = """# 용어집 · Glossary

이 책의 용어입니다.

The book's terms.

| 한국어 | English | 뜻 · meaning |
|---|---|---|
| 평균 | mean | 값의 합을 개수로 나눈 것 · the sum divided by the count |
| 학습 모드 | training mode | `model.train()` |
"""


def test_the_glossary_in_each_language():
    ko = pages.glossary_in(GLOSSARY, "ko")
    en = pages.glossary_in(GLOSSARY, "en")
    assert ko.splitlines()[0] == "# 용어집" and en.splitlines()[0] == "# Glossary"
    assert "이 책의 용어입니다." in ko and "The book's terms." not in ko
    assert "The book's terms." in en and "이 책의 용어입니다." not in en
    assert "| 한국어 | 영어 | 뜻 |" in ko and "| English | Korean | Meaning |" in en
    assert "| 평균 | mean | 값의 합을 개수로 나눈 것 |" in ko
    assert "| mean | 평균 | the sum divided by the count |" in en
    assert "| training mode | 학습 모드 | `model.train()` |" in en   # a meaning said once stays whole


@pytest.mark.parametrize("page, lang, other, expected", [
    ("chapters/ko/06_family", "ko", "en", "../../../en/chapters/en/06_family.html"),
    ("glossary", "ko", "en", "../en/glossary.html"),
    ("search", "en", "ko", "../ko/search.html"),
])
def test_the_switch_leads_to_the_same_page_of_the_other_book(page, lang, other, expected):
    assert pages.switch_href(page, lang, other) == expected


def test_the_notebooks_link_to_the_other_language_is_left_out_of_the_page():
    import json
    notebook = {"cells": [{"cell_type": "markdown", "metadata": {},
                           "source": ["# 6장\n", "\n", "[English version →](../en/06_family.ipynb)\n", "\n", "본문\n"]}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    out = json.loads(pages.without_other_language_link(json.dumps(notebook), "ko"))
    assert out["cells"][0]["source"] == ["# 6장\n", "\n", "\n", "본문\n"]
    # a link to a notebook of the page's own language stays
    notebook["cells"][0]["source"][2] = "[5장](../ko/05_rmsnorm.ipynb)\n"
    assert pages.without_other_language_link(json.dumps(notebook), "ko") == json.dumps(notebook)


def test_the_korean_catalogue_translates_every_word_the_site_looks_up():
    """Every English word book/site/site_pages.py writes through the catalogue has a Korean entry."""
    po = (ROOT / "book" / "locale" / "ko" / "LC_MESSAGES" / "sphinx.po").read_text(encoding="utf-8")
    entries = dict(re.findall(r'^msgid "(.+)"\nmsgstr "(.*)"$', po, re.MULTILINE))
    needed = (pages.FIXED_ATTRIBUTES + pages.FIXED_TEXTS + pages.SCRIPT_WORDS + ["Search this book..."]
              + list(pages.SOLUTION_WORDS.values()))
    missing = [w for w in needed if not entries.get(w)]
    assert not missing, f"no Korean for {missing} in book/locale/ko/LC_MESSAGES/sphinx.po"
    untranslated = [k for k, v in entries.items() if not re.search(r"[\uac00-\ud7a3]", v) and "%(" not in v]
    assert not untranslated, f"entries without Korean: {untranslated}"


def test_the_generated_configuration_is_what_jupyter_book_reads(tmp_path):
    cfg_path, toc_path = website.write_inputs("ko", tmp_path)
    cfg = yaml.safe_load(cfg_path.read_text(encoding="utf-8"))
    toc = yaml.safe_load(toc_path.read_text(encoding="utf-8"))
    assert cfg["sphinx"]["config"]["language"] == "ko" and toc["root"] == "chapters/ko/index"
    assert cfg_path.read_text(encoding="utf-8").startswith("# Generated by book/site/website.py")
