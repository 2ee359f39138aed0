"""Korean search (tools/korean_search.py), without a browser:

- the split of Python (the index) on examples written by hand;
- a noun's query terms are among the index terms of any run of Hangul holding it (hypothesis);
- the browser's split (the JS_SPLITTER code, run in node) equals the Python query split on every
  line of the chapters and on awkward strings;
- a tiny Sphinx project built with the extension: the shipped searchtools.js, run in node on its
  search index, finds a noun on every page where a particle or ending is glued to it, and the
  same project built with Sphinx's default splitting does not (the test can fail).

The real site in the real browser: tests/test_search.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import ROOT, unavailable
from tools import korean_search
from tools.korean_search import split_for_index, split_query

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
    ("층을 쌓습니다.", ["층을", "쌓습", "습니", "니다"], ["층", "을", "쌓", "습", "니", "다"]),
    ("이동 평균", ["이동", "평균"], ["이", "동", "평", "균"]),
    ("0입니다", ["0", "입니", "니다"], ["입", "니", "다"]),
    ("BatchNorm의 eps=1e-5", ["BatchNorm", "의", "eps", "1e", "5"], []),
    ("running_mean을 봅니다", ["running_mean", "을", "봅니", "니다"], ["봅", "니", "다"]),
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


# --- A tiny book, searched with the searchtools.js Sphinx ships ---------------------------------

PAGES = {
    "index": "작은 책\n=======\n\n.. toctree::\n\n   a\n   b\n   c\n   d\n",
    "a": "가\n==\n\n정규화는 평균을 빼고 표준편차로 나눕니다. 층을 지나면 이동평균이 바뀝니다.\n",
    "b": "나\n==\n\n층 정규화를 배치 크기와 상관없이 씁니다. RMSNorm도 있습니다.\n",
    "c": "다\n==\n\n배치정규화된 값의 분산은 1입니다.\n",
    "d": "라\n==\n\nThe running mean of BatchNorm layers. 분포가 바뀝니다.\n",
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

QUERIES = {"정규화": ["a", "b", "c"], "층": ["a", "b"], "이동 평균": ["a"], "배치 크기": ["b"],
           "분산": ["c"], "표준편차": ["a"], "batchnorm": ["d"], "rmsnorm": ["b"], "running mean": ["d"]}


def build_tiny_book(tmp: Path, extensions: list[str]) -> Path:
    src, out = tmp / "src", tmp / "out"
    src.mkdir()
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'tools')!r})\n"
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


def test_without_the_extension_the_tiny_book_misses_them(tiny_books):
    """The measurement above can fail: Sphinx's own split misses pages for most of the queries."""
    found = search(tiny_books[None], QUERIES)
    missed = [q for q, pages in QUERIES.items() if found[q] != pages]
    assert {"층", "이동 평균", "배치 크기", "분산"} <= set(missed), found
