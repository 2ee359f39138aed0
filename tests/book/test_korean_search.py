"""Korean search (book/site/korean_search.py), without a browser:

- the split of Python (the index) on examples written by hand;
- a noun's query terms are among the index terms of any run of Hangul holding it (hypothesis);
- the browser's split (the JS_SPLITTER code, run in node) equals the Python query split on every
  line of the chapters and on awkward strings;
- a tiny Sphinx project built with the extension: the shipped searchtools.js, run in node on its
  search index, finds a noun on every page where a particle or ending is glued to it, and the
  same project built with Sphinx's default splitting does not (the test can fail).

The real site in the real browser: tests/book/test_search.py.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.tools.search_recall import SPACED
from book.site import korean_search
from book.site.korean_search import split_for_index, split_query
from helpers.paths import ROOT, unavailable

NODE = shutil.which("node")


def node(script: str, payload) -> object:
    """Run ``script`` in node with ``payload`` as JSON on stdin; return what it prints as JSON."""
    if NODE is None:
        unavailable("node not found: install Node.js (the book's assets need npm anyway)",
                    "the Korean search tests must run")
    result = subprocess.run([NODE, "-e", script], input=json.dumps(payload), capture_output=True,
                            text=True, encoding="utf-8", timeout=60, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


# --- The split, by hand -----------------------------------------------------------------------

@pytest.mark.parametrize("text, query, extra_in_index", [
    ("정규화", ["정규", "규화"], ["정", "규", "화"]),
    ("정규화는", ["정규", "규화", "화는"], ["정", "규", "화", "는"]),
    ("층", ["층"], []),
    ("층을 쌓습니다.", ["층을", "쌓습", "습니", "니다"], ["층", "을", "쌓", "습", "니", "다", "을쌓"]),
    ("이동 평균", ["이동", "평균"], ["이", "동", "평", "균", "동평"]),
    ("평균과  분산", ["평균", "균과", "분산"], ["평", "균", "과", "분", "산", "과분"]),
    ("층\n정규화", ["층", "정규", "규화"], ["정", "규", "화", "층정"]),
    ("배치. 정규화", ["배치", "정규", "규화"], ["배", "치", "정", "규", "화"]),     # not across a full stop
    ("배치 BatchNorm 정규화", ["배치", "BatchNorm", "정규", "규화"], ["배", "치", "정", "규", "화"]),
    ("0입니다", ["0", "입니", "니다"], ["입", "니", "다"]),
    ("BatchNorm의 eps=1e-5", ["BatchNorm", "의", "eps", "1e", "5"], []),
    ("running_mean을 봅니다", ["running_mean", "을", "봅니", "니다"], ["봅", "니", "다", "을봅"]),
    ("γ와 β", ["γ", "와", "β"], []),
    ("(N, C, H, W)", ["N", "C", "H", "W"], []),
    ("x\u0302 = 1", ["x", "1"], []),                 # a combining hat is no word character
    ("가—나", ["가", "나"], []),
    ("", [], []),
])
def test_split_by_hand(text, query, extra_in_index):
    assert split_query(text) == query
    assert sorted(split_for_index(text)) == sorted(query + extra_in_index)


def test_the_search_language_lowercases_and_does_not_stem():
    lang = korean_search.SearchKorean({})
    assert lang.lang == "ko"
    assert [lang.stem(w) for w in ["BatchNorm", "Normalization", "layers", "정규"]] == \
        ["batchnorm", "normalization", "layers", "정규"]
    assert not lang.word_filter("the") and lang.word_filter("eps") and lang.word_filter("층")


syllables = st.characters(min_codepoint=0xAC00, max_codepoint=0xD7A3)


@given(run=st.text(syllables, min_size=1, max_size=12), data=st.data())
def test_any_piece_of_a_run_is_found_in_the_run(run, data):
    """A noun typed alone (any piece of a run of Hangul in a page) needs only terms the page has."""
    start = data.draw(st.integers(0, len(run) - 1))
    stop = data.draw(st.integers(start + 1, len(run)))
    noun = run[start:stop]
    assert set(split_query(noun)) <= set(split_for_index(f"앞 {run}, 뒤"))


@given(a=st.text(syllables, min_size=1, max_size=6), b=st.text(syllables, min_size=1, max_size=6),
       space=st.sampled_from([" ", "  ", "\n", "\t", "\u00a0", " \n "]), data=st.data())
def test_an_unspaced_compound_is_found_where_it_is_written_with_a_space(a, b, space, data):
    """배치정규화 typed needs only terms that "배치 정규화" stores, also when Sphinx hands the
    text over in two nodes (**배치** 정규화) cut anywhere in the space."""
    text = f"앞, {a}{space}{b} 뒤"
    assert set(split_query(a + b)) <= set(split_for_index(text))
    cut = data.draw(st.integers(len(f"앞, {a}"), len(f"앞, {a}{space}")))
    lang = korean_search.SearchKorean({})
    stored = lang.split(text[:cut]) + lang.split(text[cut:])
    assert set(split_query(a + b)) <= set(stored)


def test_no_pair_across_two_nodes_without_space_nor_across_two_pages():
    lang = korean_search.SearchKorean({})
    lang.split("배치 정규화")
    assert "화배" not in lang.split("배치 정규화"), "a title is split as itself, then as its text"
    lang.split("정규화 ")

    class Builder:
        indexer = type("Indexer", (), {"lang": lang})

    korean_search.new_document(type("App", (), {"builder": Builder})(), None, "next")
    assert lang.split("층") == ["층"], "the first word of a page is paired with the last of the one before"


@pytest.mark.parametrize("query, known, terms", [
    ("층정규화", {"정규", "규화"}, ["층", "정규", "규화"]),                  # no page held 층정
    ("층정규화", {"층정", "정규", "규화"}, ["층정", "정규", "규화"]),
    ("평균분산", {"평균", "균과", "분산"}, ["평균", "분산"]),
    ("평균과분산", {"평균", "균과", "분산"}, ["평균", "균과", "분산"]),       # as 평균과 분산
    ("배치정규화층", {"배치", "정규", "규화"}, ["배치", "정규", "규화", "층"]),
    ("가나다", set(), ["가나", "나다"]),                                  # not in the book: left whole
    ("층정규화", None, ["층정", "정규", "규화"]),                          # no index loaded
    ("RMS정규화 eps", {"정규"}, ["RMS", "정규", "화", "eps"]),
])
def test_a_query_is_cut_where_no_page_holds_its_pair(query, known, terms):
    assert split_query(query, known) == terms


# --- The browser's split equals Python's --------------------------------------------------------

JS_SPLIT = "const vm = require('vm'); vm.runInThisContext(%s);" + textwrap.dedent("""
    let input = ''; process.stdin.on('data', d => input += d);
    process.stdin.on('end', () => console.log(JSON.stringify(JSON.parse(input).map(splitQuery))));
""")

AWKWARD = ["", " ", "정규화", "층", "a", "_", "__init__", "x²", "x\u0302", "ﬁt", "Ⅻ", "①②", "١٢٣", "Ωmega",
           "İstanbul", "ẞ", "𝑥𝑦", "😀정규화😀", "정규화—층", "가\u3000나", "ㄱㄴ 자모", "漢字와 한글", "ｆｕｌｌ", "½",
           "배치\u00a0크기", "x\u200by", "한\u0301글", "e.g.,정규화", "[1, 2, 3]을", "tab\t정규화\n줄"]


def chapter_lines() -> list[str]:
    """Every line of every cell source of the chapters, both languages."""
    lines = []
    for path in sorted((ROOT / "chapters").glob("*/*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            lines += cell.source.splitlines()
    return lines


def test_the_browser_split_equals_the_python_split():
    strings = AWKWARD + chapter_lines()
    assert len(strings) > 2000, "the chapters were not found"
    script = JS_SPLIT % json.dumps(korean_search.JS_SPLITTER)
    js = node(script, strings)
    differ = [(s, j, split_query(s)) for s, j in zip(strings, js) if j != split_query(s)]
    assert not differ, "\n".join(f"{s!r}: browser {j}, Python {p}" for s, j, p in differ[:10])
    assert any(len(t) == 2 and "\uac00" <= t[0] <= "\ud7a3" for terms in js for t in terms)


JS_CUT = "const vm = require('vm'); vm.runInThisContext(%s);" + textwrap.dedent("""
    let input = ''; process.stdin.on('data', d => input += d);
    process.stdin.on('end', () => {
      const {index, queries} = JSON.parse(input);
      vm.runInThisContext('var Search = {_index: ' + JSON.stringify(index) + '};');
      console.log(JSON.stringify(queries.map(splitQuery)));
    });
""")


def test_the_browser_cut_equals_the_python_cut():
    """With an index loaded, the browser cuts a query where Python does: the index is the Korean
    chapters' own terms (half of them as title terms), the queries the chapters' lines without
    their spaces (정규화층은어디에두는가) and the recall table's un-spaced queries."""
    lines = [line for line in chapter_lines() if re.search("[\uac00-\ud7a3]", line)]
    terms = sorted({t for line in lines[::2] for t in split_for_index(line)})
    index = {"terms": dict.fromkeys(terms[::2], 0), "titleterms": dict.fromkeys(terms[1::2], 0)}
    queries = AWKWARD + list(SPACED) + ["평균분산", "층정"] + [re.sub(r"\s+", "", line) for line in lines[1::2]]
    js = node(JS_CUT % json.dumps(korean_search.JS_SPLITTER), {"index": index, "queries": queries})
    differ = [(q, j, split_query(q, terms)) for q, j in zip(queries, js) if j != split_query(q, set(terms))]
    assert not differ, "\n".join(f"{q!r}: browser {j}, Python {p}" for q, j, p in differ[:10])
    assert sum(j != split_query(q) for q, j in zip(queries, js)) > 100, "hardly any query was cut"


# --- Result snippets (JS_SNIPPET's functions without a page; the real pages: tests/book/test_search.py) --

JS_SNIPPET_CALLS = "const vm = require('vm'); vm.runInThisContext(%s);" + textwrap.dedent("""
    let input = ''; process.stdin.on('data', d => input += d);
    process.stdin.on('end', () => console.log(JSON.stringify(JSON.parse(input).map(
      ([f, args]) => searchSnippet[f](...args)))));
""")


def snippet_calls(calls: list) -> list:
    return node(JS_SNIPPET_CALLS % json.dumps(korean_search.JS_SNIPPET), calls)


@pytest.mark.parametrize("tex, text", [
    (r"\(x\)", "x"),
    (r"\(\hat{x}_i\)", "x\u0302_i"),
    (r"\(\hat\sigma_c^2\)", "σ\u0302_c^2"),
    (r"\(\mu_c = \frac{1}{N}\sum_n x_{nc}\)", "μ_c = 1/NΣ_n x_nc"),
    (r"\(1/\sqrt{\sigma^2+\epsilon}\)", "1/√(σ^2+ε)"),
    (r"\(\operatorname{mean}(g) = 0.3333\)", "mean(g) = 0.3333"),
    (r"\(h = 10^{-6}\)", "h = 10^(-6)"),
    (r"\(x_1, \dots, x_n\)", "x_1, …, x_n"),
    (r"\(\gamma \odot \tanh(\alpha x) + \beta\)", "γ ⊙ tanh(α x) + β"),
    (r"\(a \\ b\)", "…"),                                     # what it cannot read
])
def test_inline_math_reads_as_plain_symbols(tex, text):
    assert snippet_calls([["mathText", [tex]]]) == [text]


def test_the_book_has_no_inline_formula_left_as_latex():
    """Every inline formula of the Korean chapters reads without a backslash, a brace or a dollar."""
    formulas = sorted({m for path in (ROOT / "chapters" / "ko").glob("*.ipynb")
                       for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "markdown"
                       for m in re.findall(r"(?<![$\\])\$([^$\n]+)\$(?!\$)", cell.source)})
    assert len(formulas) > 100, "the chapters' inline math was not found"
    texts = snippet_calls([["mathText", [f"\\({f}\\)"]] for f in formulas])
    left = [(f, t) for f, t in zip(formulas, texts) if re.search(r"[\\{}$]", t)]
    assert not left, left[:10]


BLOCKS = {"prose": ["배치 정규화(BatchNorm)는 특성마다 평균과 분산을 구합니다. 그다음 γ와 β를 곱하고 더합니다.",
                    "이동 평균은 평가 모드에서 씁니다. 평균과 분산의 이동 평균을 모아 둡니다.",
                    "평균과 분산"],                      # a heading: the blocks put headings last
          "code": ["x.mean(0)  # 배치정규화의 평균"]}


@pytest.mark.parametrize("query, sentence", [
    ("배치정규화", "배치 정규화(BatchNorm)는 특성마다 평균과 분산을 구합니다."),     # spaced on the page
    ("평균과분산", "배치 정규화(BatchNorm)는 특성마다 평균과 분산을 구합니다."),     # first of the best
    ("이동평균", "이동 평균은 평가 모드에서 씁니다."),
    ("평가", "이동 평균은 평가 모드에서 씁니다."),
    ("곱하고", "그다음 γ와 β를 곱하고 더합니다."),
    ("mean", "x.mean(0) # 배치정규화의 평균"),                                 # code only when no prose holds it
    ("없는말", None),
])
def test_the_snippet_is_the_sentence_holding_the_query(query, sentence):
    terms = [t for t in split_query(query.lower())]
    assert snippet_calls([["best", [BLOCKS, query, terms]]]) == [sentence]


def test_an_english_word_is_matched_where_a_word_starts():
    """The English book's snippets: "variance" is the word in "variances", not the end of "invariance"
    (the stemmed term "varianc" is in both, so only the word match can choose)."""
    blocks = {"prose": ["RMSNorm keeps re-scaling invariance.", "The variances of the two features differ."],
              "code": []}
    assert snippet_calls([["best", [blocks, "variance", ["varianc"]]]]) == ["The variances of the two features differ."]


def test_a_long_sentence_is_cut_around_the_query():
    long = "가" * 300 + " 배치 정규화 " + "나" * 300
    [cut] = snippet_calls([["cut", [long, "배치정규화", 240]]])
    assert cut.startswith("…") and cut.endswith("…") and "배치 정규화" in cut and len(cut) <= 242


# --- A tiny book, searched with the searchtools.js Sphinx ships ---------------------------------

PAGES = {
    "index": "작은 책\n=======\n\n.. toctree::\n\n   a\n   b\n   c\n   d\n   e\n",
    "a": "가\n==\n\n정규화는 평균을 빼고 표준편차로 나눕니다. 층을 지나면 이동평균이 바뀝니다.\n",
    "b": "나\n==\n\n층 정규화를 배치 크기와 상관없이 씁니다. RMSNorm도 있습니다.\n",
    "c": "다\n==\n\n배치정규화된 값의 분산은 1입니다.\n",
    "d": "라\n==\n\nThe running mean of BatchNorm layers. 분포가 바뀝니다.\n",
    "e": "마\n==\n\n**배치** 정규화는 평균과 분산을 씁니다. 이동 평균도 모읍니다.\n",
}

SEARCH = textwrap.dedent("""
    const fs = require('fs'), vm = require('vm'), path = require('path');
    let input = ''; process.stdin.on('data', d => input += d);
    process.stdin.on('end', () => {
      const {out, queries} = JSON.parse(input);
      const context = vm.createContext({
        console, _ready: () => {}, _: s => s, SPHINX_HIGHLIGHT_ENABLED: false,
        document: {getElementById: () => null}, DOCUMENTATION_OPTIONS: {},
      });
      for (const file of ['_static/searchtools.js', '_static/language_data.js', 'searchindex.js'])
        vm.runInContext(fs.readFileSync(path.join(out, file), 'utf8'), context);
      const found = {};
      for (const q of queries) {
        context.q = q;
        const results = vm.runInContext('Search._performSearch(...Search._parseQuery(q))', context);
        found[q] = [...new Set(results.map(r => r[0]))].sort();
      }
      console.log(JSON.stringify(found));
    });
""")

QUERIES = {"정규화": ["a", "b", "c", "e"], "층": ["a", "b"], "이동 평균": ["a", "e"], "배치 크기": ["b"],
           "분산": ["c", "e"], "표준편차": ["a"], "batchnorm": ["d"], "rmsnorm": ["b"], "running mean": ["d"]}
# Typed without their spaces: found where the page writes the space, also across two text nodes
# (**배치** 정규화); 평균분산 is written nowhere in the book, with or without a space: cut in two.
UNSPACED = {"배치정규화": ["c", "e"], "이동평균": ["a", "e"], "층정규화": ["b"], "평균과분산": ["e"],
            "평균분산": ["e"], "배치크기": ["b"]}


def build_tiny_book(tmp: Path, extensions: list[str]) -> Path:
    src, out = tmp / "src", tmp / "out"
    src.mkdir()
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'book' / 'site')!r})\n"
        f"extensions = {extensions!r}\nlanguage = 'ko'\nhtml_theme = 'basic'\n", encoding="utf-8")
    for name, text in PAGES.items():
        (src / f"{name}.rst").write_text(text, encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "sphinx", "-q", "-W", "-b", "html", str(src), str(out)],
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return out


@pytest.fixture(scope="module")
def tiny_books(tmp_path_factory):
    """The tiny book built with the extension, and without it (Sphinx's default split)."""
    return {ext: build_tiny_book(tmp_path_factory.mktemp("tiny"), [ext] if ext else [])
            for ext in ("korean_search", None)}


def search(out: Path, queries) -> dict[str, list[str]]:
    return node(SEARCH, {"out": str(out), "queries": list(queries)})


def test_a_noun_is_found_with_any_particle_attached(tiny_books):
    out = tiny_books["korean_search"]
    assert korean_search.JS_SPLITTER.strip() in (out / "_static" / "language_data.js").read_text(encoding="utf-8")
    assert search(out, QUERIES) == QUERIES


def test_a_compound_typed_without_its_space_is_found(tiny_books):
    assert search(tiny_books["korean_search"], UNSPACED) == UNSPACED


def test_without_the_extension_the_tiny_book_misses_them(tiny_books):
    """The measurement above can fail: Sphinx's own split misses pages for most of the queries."""
    found = search(tiny_books[None], QUERIES | UNSPACED)
    missed = [q for q, pages in (QUERIES | UNSPACED).items() if found[q] != pages]
    assert {"층", "이동 평균", "배치 크기", "분산", *UNSPACED} <= set(missed), found


# --- The order of the results (book/site/korean_search.py's JS_RANK) -------------------------------

RANK_PAGES = {
    "index": "작은 책\n========================================\n\n.. toctree::\n\n   01_why\n   02_inv\n   03_batch\n   04_var\n   05_run\n   06_family\n   10_place\n",
    "01_why": "왜 정규화하는가\n========================================\n\n배치 정규화와 그룹 정규화는 뒤에서 봅니다. 값이 이동하면 평균이 바뀝니다. The variance.\n",
    "02_inv": "Invariance\n========================================\n\nThe variance stays. 정규화.\n",
    "03_batch": "배치 정규화 (BatchNorm)\n========================================\n\n배치 정규화는 배치로 통계를 냅니다.\n",
    "04_var": "Variance\n========================================\n\nThe variance of a batch. 정규화.\n",
    "05_run": "이동 통계\n========================================\n\n이동 평균을 모읍니다.\n",
    "06_family": "정규화 방법 (그룹 정규화)\n========================================\n\n그룹 정규화와 배치 정규화를 비교합니다.\n",
    "10_place": ("정규화 층은 어디에\n========================================\n\n정규화 층을 둡니다.\n\n"
                 "배치 정규화를 접기\n----------------------------------------\n\n합성곱 뒤의 배치 정규화입니다.\n"),
}

# The results in the order listed: searchtools.js shows them from the end of the array.
ORDERED = SEARCH.replace("[...new Set(results.map(r => r[0]))].sort()", "[...new Set(results.reverse().map(r => r[0]))]").replace(
    "const {out, queries} = JSON.parse(input);", "const {out, queries, plain} = JSON.parse(input);").replace(
    "const found = {};", "if (plain) vm.runInContext('delete Scorer.score', context);\n  const found = {};")

# A title holding the query first, then a heading holding it, then the rest in the book's order
# (01 before 10, which searchtools.js's own order by title strings puts first); the index page, whose
# table of contents holds every title, after the chapters.
RANKED = {"배치 정규화": ["03_batch", "10_place", "01_why", "06_family", "index"],
          "배치정규화": ["03_batch", "10_place", "01_why", "06_family", "index"],
          "그룹정규화": ["06_family", "01_why", "index"],
          "정규화": ["01_why", "03_batch", "06_family", "10_place", "02_inv", "04_var", "index"],
          "variance": ["04_var", "01_why", "02_inv", "index"],
          # no title or heading holds it: the page with the two words together before the one with them apart
          "이동 평균": ["05_run", "01_why"]}


@pytest.fixture(scope="module")
def ranked_book(tmp_path_factory):
    global PAGES
    kept, PAGES = PAGES, RANK_PAGES
    try:
        return build_tiny_book(tmp_path_factory.mktemp("ranked"), ["korean_search"])
    finally:
        PAGES = kept


def test_a_page_whose_title_or_heading_holds_the_query_comes_first(ranked_book):
    assert korean_search.JS_RANK.strip() in (ranked_book / "_static" / "language_data.js").read_text(encoding="utf-8")
    assert node(ORDERED, {"out": str(ranked_book), "queries": list(RANKED), "plain": False}) == RANKED


def test_without_the_order_searchtools_puts_them_otherwise(ranked_book):
    """The test above can fail: searchtools.js's own scores (15 for any term in any heading) and its
    order by title strings list these pages otherwise."""
    found = node(ORDERED, {"out": str(ranked_book), "queries": list(RANKED), "plain": True})
    assert [q for q in RANKED if found[q] != RANKED[q]], found


def test_the_ordered_search_script_is_what_it_says():
    assert ORDERED.count("delete Scorer.score") == 1 and "results.reverse()" in ORDERED and "plain" in ORDERED
