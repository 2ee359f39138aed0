"""Korean full-text search for the Korean build of the book: a Sphinx extension.

Sphinx's default search cuts text at spaces and punctuation, so a Korean noun is stored glued
to whatever particle or ending follows it: 정규화는, 정규화를 and 정규화된 are three unrelated
words, and a query for 정규화 finds none of them. This extension registers a search language
for ``language = "ko"`` (``app.add_search_language``) that cuts Hangul into character bigrams,
the dependency-free way of Korean full-text search, on both sides:

- at build time (Python, :meth:`SearchKorean.split`), every run of Hangul syllables becomes its
  overlapping pairs of syllables and each of its syllables on its own:
  정규화는 -> 정규 규화 화는 정 규 화 는. A run of one syllable is kept as itself (층 -> 층).
- in the browser (JavaScript, :data:`JS_SPLITTER`, which replaces searchtools.js's
  ``splitQuery``), a query's Hangul runs become their pairs only, a run of one syllable itself:
  정규화 -> 정규 규화; 층 -> 층.

searchtools.js requires every query term in a page (AND over the terms), so a noun typed in the
search box finds every page where it appears as part of a run, whatever is attached: its pairs
are pairs of that run, and a one-syllable noun (층, 값) is one of the run's syllables. That is
why the index also keeps single syllables (in this book some 700 terms, a tenth of the index):
without them 층 would find only pages where it stands alone. A query of several words (이동 평균, 배치 크기) needs
all of its pairs, also when the page writes them without the space (이동평균). The price of
bigrams is a rare false match, a page holding every pair of the query but never the noun.

Everything that is not Hangul is split as Sphinx's default splitter does: runs of Unicode
letters, digits and underscores (Python's ``\\w``), lower-cased when indexed and when typed, with
Sphinx's English stopwords left out on both sides (searchtools.js also drops query terms that
are only digits). Latin words are **not stemmed**. In a Korean page they are identifiers and
names (BatchNorm, running_mean, eps, torch.nn), where stemming helps nobody, and Sphinx's
English stemmers do not agree across the two sides (Python uses Snowball's Porter2, the browser
the original Porter algorithm), while unstemmed words are the same on both. searchtools.js
still finds a typed word of three letters or more inside longer indexed words (norm finds
batchnorm and layernorm).

The build needs, for the Korean book only: ``language: ko`` (``html_search_language`` follows
it) and this module among the extensions (``sphinx: local_extensions: {korean_search: tools/}``
in Jupyter Book's _config.yml). Registering the language is harmless in a build in another
language, which never asks for ``ko``.
"""

from __future__ import annotations

import re

from sphinx.search import SearchLanguage
from sphinx.search.en import english_stopwords

HANGUL = "\uac00-\ud7a3"           # the 11,172 precomposed Hangul syllables, 가 to 힣
# A run of Hangul syllables, or a run of other word characters (letters, digits, underscore).
TOKEN = re.compile(f"[{HANGUL}]+|[^\\W{HANGUL}]+")

# The same split in the browser. \p{L}\p{N}_ is what Python's \w matches; the look-ahead keeps
# Hangul out of the second kind of run. `var`, not `const`: searchtools.js, loaded first,
# already declared its own splitQuery with `var`, and this one replaces it.
JS_SPLITTER = r"""
/* Korean search (tools/korean_search.py): Hangul runs as pairs of syllables. */
var splitQuery = function (query) {
  var terms = [];
  var tokens = query.match(/[\uac00-\ud7a3]+|(?:(?![\uac00-\ud7a3])[\p{L}\p{N}_])+/gu) || [];
  tokens.forEach(function (token) {
    if (!/^[\uac00-\ud7a3]/.test(token)) terms.push(token);
    else if (token.length === 1) terms.push(token);
    else for (var i = 0; i + 1 < token.length; i++) terms.push(token.slice(i, i + 2));
  });
  return terms;
};
"""


def is_hangul_run(token: str) -> bool:
    return "\uac00" <= token[0] <= "\ud7a3"


def pairs(run: str) -> list[str]:
    """정규화 -> [정규, 규화]; a single syllable stays itself."""
    if len(run) == 1:
        return [run]
    return [run[i:i + 2] for i in range(len(run) - 1)]


def split_query(text: str) -> list[str]:
    """The terms of a typed query, as the browser's splitQuery (JS_SPLITTER) computes them."""
    terms: list[str] = []
    for token in TOKEN.findall(text):
        terms.extend(pairs(token) if is_hangul_run(token) else [token])
    return terms


def split_for_index(text: str) -> list[str]:
    """The terms stored for a page's text: the query split, plus every Hangul syllable alone."""
    terms: list[str] = []
    for token in TOKEN.findall(text):
        if is_hangul_run(token):
            terms.extend(pairs(token))
            if len(token) > 1:
                terms.extend(token)
        else:
            terms.append(token)
    return terms


class SearchKorean(SearchLanguage):
    lang = "ko"
    language_name = "Korean"
    stopwords = english_stopwords
    js_splitter_code = JS_SPLITTER
    # js_stemmer_code: the base class's, a Stemmer whose stemWord returns the word unchanged.

    def split(self, input: str) -> list[str]:
        return split_for_index(input)

    def stem(self, word: str) -> str:
        return word.lower()


def setup(app):
    app.add_search_language(SearchKorean)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
