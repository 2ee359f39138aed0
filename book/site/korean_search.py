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
why the index also keeps single syllables (in this book some 760 terms of 15,000):
without them 층 would find only pages where it stands alone. A query of several words (이동 평균, 배치 크기) needs
all of its pairs, also when the page writes them without the space (이동평균). The price of
bigrams is a rare false match, a page holding every pair of the query but never the noun.

A Korean reader also types a compound without its space: 배치정규화 for 배치 정규화, 평균과분산 for
평균과 분산. Its pairs include one across the missing space (치정, 과분), which a page writing the
space never held, so the query found nothing. Two things make it find what its spaced form finds:

- **compounds indexed** (build time): where two Hangul runs stand separated only by white space,
  the pair across the space is indexed too (배치 정규화 -> ... 치정 ...), also when the space lies
  between two text nodes in a row (**배치** 정규화, a link then a word). A page writing the space
  and one writing none then hold the same terms, so the un-spaced query finds both, particle and
  all (평균과 분산 and 평균과분산 alike hold 과분). No dictionary, no list of particles: the text's
  own spacing is the segmentation. Runs joined without a space across nodes are not joined (a
  section title is split once as the title and once as its text, and would pair its last
  syllable with its first).
- **queries cut where the book never is** (in the browser, which has the index): a pair of a
  query's run that no page holds at all can only be a space the reader left out, in a place the
  book never writes the two words together (평균분산); the run is cut there and each piece
  searched on its own, a piece of one syllable as that syllable (층정규화 -> 층, 정규, 규화 when
  no page held 층정). A run none of whose pairs any page holds is left whole: it is not in the
  book, and the search says so instead of listing every page holding its syllables.

Why not split the query into the book's words (a longest match over a word list) instead: the
index holds pairs, not words, and a list of words would hold 이동평균 too wherever a page writes it
so, and a longest match would then keep 동평 and miss the pages that write 이동 평균; a shortest
split would cut 표준편차 into 표준 and 편차. Indexing the pair across the space needs neither a
word list nor a list of particles. Its costs: about 5,800 more terms (searchindex.js, loaded by
the search page only, from 56 to 85 kB gzip), and a few more false matches of the kind above (a
page holding 이동 only as ...같이 동작...).

Result snippets (both books; the English one loads this module for them alone, as
:class:`SearchEnglishSnippets`): searchtools.js shows 240 characters of the page's main block around the first
query term it finds there, which is often the hidden print outline (the page's table of contents
for printing), a button's words or the LaTeX source of a formula. :data:`JS_SNIPPET` replaces
``Search.makeSearchSummary``: it reads the article only, without hidden, printed-only or button
text, reads inline math as plain symbols (\\mu_c -> μ_c; a formula it cannot read becomes …)
and drops display math, cuts the prose into sentences and shows the sentence that holds the
query (the whole query, the un-spaced form matching the spaced one, else the most of its terms);
code and outputs only when no sentence of prose holds any term.

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
it) and this module among the extensions (``sphinx: local_extensions: {korean_search: book/site/}``
in Jupyter Book's _config.yml). Registering the language is harmless in a build in another
language, which never asks for ``ko``.
"""

from __future__ import annotations

import re
from collections.abc import Container

from sphinx.search import SearchLanguage
from sphinx.search.en import SearchEnglish, english_stopwords

HANGUL = "\uac00-\ud7a3"           # the 11,172 precomposed Hangul syllables, 가 to 힣
# A run of Hangul syllables, or a run of other word characters (letters, digits, underscore).
TOKEN = re.compile(f"[{HANGUL}]+|[^\\W{HANGUL}]+")

# The same split in the browser. \p{L}\p{N}_ is what Python's \w matches; the look-ahead keeps
# Hangul out of the second kind of run. `var`, not `const`: searchtools.js, loaded first,
# already declared its own splitQuery with `var`, and this one replaces it. `Search._index` is
# the loaded search index (searchtools.js parses a query only once it is loaded).
JS_SPLITTER = r"""
/* Korean search (book/site/korean_search.py): Hangul runs as pairs of syllables, cut where no page
   holds a pair (a space the reader left out). */
var splitQuery = function (query) {
  var index = typeof Search !== "undefined" && Search._index ? Search._index : null;
  var has = Object.prototype.hasOwnProperty;
  var known = function (t) { return has.call(index.terms, t) || has.call(index.titleterms, t); };
  var pairs = function (run, out) {
    if (run.length === 1) out.push(run);
    else for (var i = 0; i + 1 < run.length; i++) out.push(run.slice(i, i + 2));
  };
  var terms = [];
  var tokens = query.match(/[\uac00-\ud7a3]+|(?:(?![\uac00-\ud7a3])[\p{L}\p{N}_])+/gu) || [];
  tokens.forEach(function (token) {
    if (!/^[\uac00-\ud7a3]/.test(token)) { terms.push(token); return; }
    var cuts = [];
    if (index) for (var i = 1; i < token.length; i++) if (!known(token.slice(i - 1, i + 1))) cuts.push(i);
    if (cuts.length === token.length - 1) cuts = [];
    var start = 0;
    cuts.concat([token.length]).forEach(function (end) { pairs(token.slice(start, end), terms); start = end; });
  });
  return terms;
};
"""

# Result snippets (see the module's docstring). It goes into language_data.js with the splitter, so
# it runs on the search page only, after searchtools.js has declared Search (a `const`), whose
# makeSearchSummary it replaces. searchSnippet's functions other than blocks need no page (tested in node).
JS_SNIPPET = r"""
/* Search result snippets (book/site/korean_search.py): the sentence of the article that holds the query. */
var searchSnippet = (function () {
  var SYMBOLS = {alpha: "α", beta: "β", gamma: "γ", delta: "δ", epsilon: "ε", varepsilon: "ε", eta: "η",
    theta: "θ", lambda: "λ", mu: "μ", nu: "ν", pi: "π", rho: "ρ", sigma: "σ", tau: "τ", phi: "φ",
    chi: "χ", psi: "ψ", omega: "ω", Gamma: "Γ", Delta: "Δ", Sigma: "Σ", Omega: "Ω", cdot: "·",
    times: "×", approx: "≈", ne: "≠", neq: "≠", le: "≤", leq: "≤", ge: "≥", geq: "≥", sum: "Σ",
    prod: "Π", in: "∈", to: "→", rightarrow: "→", leftarrow: "←", infty: "∞", pm: "±", sqrt: "√",
    partial: "∂", nabla: "∇", ldots: "…", dots: "…", cdots: "⋯", lVert: "‖", rVert: "‖", Vert: "‖",
    gg: "≫", ll: "≪", mid: "|", odot: "⊙", quad: " ", qquad: " ",
    ",": " ", ";": " ", ":": " ", "!": "", " ": " ", "{": "(", "}": ")", "%": "%", "_": "_",
    left: "", right: "", big: "", Big: "", bigl: "", bigr: "", displaystyle: "", top: "ᵀ",
    mathbb: "", mathrm: "", mathbf: "", mathit: "", text: "", operatorname: "", boldsymbol: "",
    mathcal: ""};
  var ACCENTS = {hat: "\u0302", bar: "\u0304", tilde: "\u0303", dot: "\u0307", vec: "\u20d7"};
  var HIDDEN = ".headerlink, script, style, template, noscript, button, summary, .onlyprint, .d-none, " +
    "[hidden], [aria-hidden='true'], nav, .tocsection, div.math, mjx-container";
  var PROSE = "p, li, dt, dd, th, td, h1, h2, h3, h4, h5, h6, figcaption, caption";
  var WORDS = /[\uac00-\ud7a3]+|(?:(?![\uac00-\ud7a3])[\p{L}\p{N}_])+/gu;
  var escape = function (s) { return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"); };

  /* An inline formula as plain symbols (\(\hat{x}_i\) -> x̂_i); one it cannot read becomes "…". */
  function mathText(tex) {
    var s = tex.trim().replace(/^(\\\(|\\\[|\$\$?)/, "").replace(/(\\\)|\\\]|\$\$?)$/, "");
    var group = function (x) { return /^[\p{L}\p{N}.\u0300-\u036f\u20d7]+$/u.test(x) ? x : "(" + x + ")"; };
    s = s.replace(/\\([A-Za-z]+|[^A-Za-z])/g, function (m, name) {
      if (name in ACCENTS || name === "frac" || name === "sqrt") return m;
      if (name in SYMBOLS) return SYMBOLS[name];
      return /^[A-Za-z]+$/.test(name) ? name : m;     // \tanh -> tanh
    });
    s = s.replace(/\\(hat|bar|tilde|dot|vec)(?![A-Za-z])\s*(?:\{([^{}])\}|([^\s{}\\]))/g,
      function (m, a, x, y) { return (x || y) + ACCENTS[a]; });
    s = s.replace(/\\(hat|bar|tilde|dot|vec)(?![A-Za-z])/g, "");
    for (var i = 0; i < 3; i++) {
      s = s.replace(/([_^])\{([^{}]*)\}/g, function (m, o, a) { return o + group(a); });
      s = s.replace(/(^|[^A-Za-z_^}])\{([^{}]*)\}/g, "$1$2");
      s = s.replace(/\\frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}/g, function (m, a, b) { return group(a) + "/" + group(b); });
      s = s.replace(/\\sqrt\s*\{([^{}]*)\}/g, function (m, a) { return "√" + group(a); });
    }
    s = s.replace(/\\sqrt(?![A-Za-z])/g, "√").replace(/[{}]/g, "").replace(/\s+/g, " ").trim();
    return /[\\$]/.test(s) ? "…" : s;
  }

  /* The text of an article's prose blocks (outermost ones) and, apart, of its code and outputs. */
  function blocks(htmlString, anchor) {
    var doc = new DOMParser().parseFromString(htmlString, "text/html");
    var section = null;
    try { section = anchor ? doc.querySelector('[role="main"] ' + anchor) : null; } catch (e) { /* not a selector */ }
    var root = section || doc.querySelector("article") || doc.querySelector('[role="main"]') || doc.body;
    root.querySelectorAll(HIDDEN).forEach(function (el) { el.remove(); });
    root.querySelectorAll(".math").forEach(function (el) {
      el.replaceWith(doc.createTextNode(mathText(el.textContent)));
    });
    var prose = [], headings = [], code = [];
    root.querySelectorAll(PROSE).forEach(function (el) {
      if (el.parentElement && el.parentElement.closest(PROSE) || el.closest("pre")) return;
      (/^H\d$/.test(el.tagName) ? headings : prose).push(el.textContent);
    });
    root.querySelectorAll("pre").forEach(function (el) { code.push(el.textContent); });
    return {prose: prose.concat(headings), code: code};     // a heading only when no sentence says more
  }

  function sentences(text) {
    return text.replace(/\s+/g, " ").trim().split(/(?<=[.?!。])\s+/).filter(function (s) { return s; });
  }

  /* The query's words, Hangul ones matching with or without spaces between syllables, others only
     where a word starts (variance in variances, not in invariance). */
  function wordPatterns(query) {
    return (query.match(WORDS) || []).map(function (w) {
      return /^[\uac00-\ud7a3]/.test(w) ? w.split("").map(escape).join("\\s*") : "(?<![\\p{L}\\p{N}_])" + escape(w);
    });
  }

  /* The sentence that holds the whole query (spaces or none), else all its words, else the most of
     its terms; prose first, code and outputs only when no sentence of prose holds any term. */
  function best(found, query, terms) {
    var words = wordPatterns(query);
    var whole = words.length ? new RegExp(words.join("\\s*"), "iu") : null;
    var each = words.map(function (w) { return new RegExp(w, "iu"); });
    terms = terms.map(function (t) { return t.toLowerCase(); });
    var top = null, topScore = 0;
    [found.prose, found.code].some(function (list) {
      list.forEach(function (block) {
        sentences(block).forEach(function (s) {
          var lower = s.toLowerCase();
          var score = terms.filter(function (t) { return lower.indexOf(t) !== -1; }).length / (terms.length || 1);
          if (whole && whole.test(s)) score += 2;
          else if (each.length && each.every(function (re) { return re.test(s); })) score += 1;
          if (score > topScore) { top = s; topScore = score; }
        });
      });
      return top !== null;
    });
    return top;
  }

  /* At most `width` characters of a sentence, around where the query is. */
  function cut(sentence, query, width) {
    if (sentence.length <= width) return sentence;
    var words = wordPatterns(query);
    var at = words.length ? sentence.search(new RegExp(words.join("\\s*"), "iu")) : -1;
    if (at < 0 && words.length) at = sentence.search(new RegExp(words[0], "iu"));
    var start = Math.max(0, Math.min(at - width / 3, sentence.length - width));
    return (start > 0 ? "…" : "") + sentence.substr(start, width).trim() + (start + width < sentence.length ? "…" : "");
  }

  return {mathText: mathText, blocks: blocks, sentences: sentences, best: best, cut: cut};
})();

if (typeof Search !== "undefined") {
  Search.makeSearchSummary = function (htmlText, keywords, anchor) {
    var terms = Array.from(keywords);
    var query = new URLSearchParams(window.location.search).get("q") || terms.join(" ");
    var found = searchSnippet.blocks(htmlText, anchor);
    var sentence = searchSnippet.best(found, query, terms) || searchSnippet.sentences(found.prose.join(" "))[0] || "";
    var summary = document.createElement("p");
    summary.classList.add("context");
    summary.textContent = searchSnippet.cut(sentence, query, 240);
    return summary;
  };
}
"""


# Result order (both books; language_data.js, loaded after searchtools.js, which declared Scorer).
# searchtools.js scores a page 15 when any one of the query's terms is in any of its headings and 5
# otherwise, then breaks ties by title as strings: a Korean query's bigram 정규 is in a heading of
# nearly every chapter, and "10장" sorts before "1장" and "3장", so chapter 10 came first for nearly
# every query. Scorer.score (searchtools.js's hook, called once per result) ranks instead by where
# the whole query is (spaces or none between Korean syllables: 그룹정규화 matches 그룹 정규화; a Latin
# word from its start: variance is not in invariance): in the page's title, then in one
# of its headings, then (Korean words typed with a space) with the words together in its text, then
# the rest; within a rank in the book's order (chapter 1, 2, …, 10, 11, then the other pages), a
# page before its sections.
JS_RANK = r"""
/* Search result order (book/site/korean_search.py): the page whose title or a heading holds the query first. */
var searchRank = (function () {
  var headings = null, typed = null;
  var escape = function (s) { return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"); };
  function headingsOf(index) {            // file number -> its headings
    if (headings) return headings;
    headings = {};
    Object.keys(index.alltitles || {}).forEach(function (title) {
      index.alltitles[title].forEach(function (entry) {
        (headings[entry[0]] = headings[entry[0]] || []).push(title);
      });
    });
    return headings;
  }
  function query() {
    if (typed !== null) return typed;
    return typeof window !== "undefined" ? new URLSearchParams(window.location.search).get("q") || "" : "";
  }
  /* The whole query, ignoring case, with or without spaces between its words and between the
     syllables of a Korean word (그룹정규화 is held by 그룹 정규화), not inside a Latin word (variance is
     not held by invariance). */
  function pattern(q) {
    var words = q.trim().split(/\s+/).filter(function (w) { return w; });
    if (!words.length) return null;
    return new RegExp("(?<![A-Za-z])" + words.map(function (w) {
      return /^[\uac00-\ud7a3]+$/.test(w) ? w.split("").map(escape).join("\\s*") : escape(w);
    }).join("\\s*"), "i");
  }
  /* Every pair of syllables of the query's Korean, the one across each space included (이동 평균 ->
     이동 동평 평균): the index holds 동평 only for a page writing 이동 평균 or 이동평균 (the pair across a
     space, see the module), so a page holding them all holds the words together, not apart. */
  function together(q) {
    var out = [], run = [];
    var flush = function () {
      if (run.length > 1) {                     // Korean words typed with spaces between them
        var joined = run.join("");
        for (var i = 0; i + 1 < joined.length; i++) out.push(joined.slice(i, i + 2));
      }
      run = [];
    };
    q.trim().split(/\s+/).forEach(function (w) {
      if (/^[\uac00-\ud7a3]+$/.test(w)) run.push(w); else flush();
    });
    flush();
    return out;
  }
  function holding(index, t, file) {
    return [index.terms[t], index.titleterms[t]].some(function (files) {
      return files !== undefined && [].concat(files).indexOf(file) !== -1;
    });
  }
  function rank(index, file, re, q) {
    if (!re) return 0;
    if (re.test(index.titles[file] || "")) return 3;
    if ((headingsOf(index)[file] || []).some(function (h) { return re.test(h); })) return 2;
    var pairs = together(q);
    return pairs.length && pairs.every(function (t) { return holding(index, t, file); }) ? 1 : 0;
  }
  function order(docname) {               // chapters/ko/03_batchnorm -> 3; another page after them
    var m = /(?:^|\/)(\d+)_[^\/]*$/.exec(docname);
    return m ? parseInt(m[1], 10) : 99;
  }
  return {
    query: function (q) { typed = q; },
    score: function (result) {
      var index = Search._index;
      var file = index.docnames.indexOf(result[0]);
      return rank(index, file, pattern(query()), query()) * 100 - order(result[0]) / 1000 + (result[2] ? 0 : 1e-5);
    }
  };
})();

if (typeof Search !== "undefined") {
  Scorer.score = searchRank.score;
  var searchRankParse = Search._parseQuery;     // the query as typed, also for a search started without ?q=
  Search._parseQuery = function (q) {
    searchRank.query(q);
    var parsed = searchRankParse(q);
    /* Highlight a Korean word whole (정규화), not as its pairs (정규, then nothing of 화): the words
       first, so that a pair finds its text already highlighted and leaves it. */
    var words = q.match(/[\uac00-\ud7a3]+/g) || [];
    if (words.length) {
      parsed[3] = new Set(words.concat([...parsed[3]]));
      if (typeof SPHINX_HIGHLIGHT_ENABLED !== "undefined" && SPHINX_HIGHLIGHT_ENABLED)
        localStorage.setItem("sphinx_highlight_terms", [...parsed[3]].join(" "));
    }
    return parsed;
  };
}
"""


def is_hangul_run(token: str) -> bool:
    return "\uac00" <= token[0] <= "\ud7a3"


def pairs(run: str) -> list[str]:
    """정규화 -> [정규, 규화]; a single syllable stays itself."""
    if len(run) == 1:
        return [run]
    return [run[i:i + 2] for i in range(len(run) - 1)]


def split_query(text: str, known: Container[str] | None = None) -> list[str]:
    """The terms of a typed query, as the browser's splitQuery (JS_SPLITTER) computes them; ``known``
    is the index's terms (the browser's loaded index): a run is cut where its pair is not known,
    unless none of its pairs is."""
    terms: list[str] = []
    for token in TOKEN.findall(text):
        if not is_hangul_run(token):
            terms.append(token)
            continue
        cuts = [i for i in range(1, len(token)) if known is not None and token[i - 1:i + 1] not in known]
        if len(cuts) == len(token) - 1:
            cuts = []
        for start, end in zip([0, *cuts], [*cuts, len(token)]):
            terms.extend(pairs(token[start:end]))
    return terms


def split_for_index(text: str, before: str = "") -> list[str]:
    """The terms stored for a page's text: the query split, every Hangul syllable alone, and the pair
    across each run of white space between two Hangul runs (배치 정규화 -> 치정). ``before`` is the
    text just before (the previous text node): the pair across a space between the two counts too."""
    terms = junction(before, text)
    last = None
    for m in TOKEN.finditer(text):
        token = m.group()
        if is_hangul_run(token):
            terms.extend(pairs(token))
            if len(token) > 1:
                terms.extend(token)
            if last is not None and is_hangul_run(last.group()) and text[last.end():m.start()].isspace():
                terms.append(last.group()[-1] + token[0])
        else:
            terms.append(token)
        last = m
    return terms


def junction(before: str, text: str) -> list[str]:
    """The pair across the white space between the end of ``before`` and the start of ``text``."""
    rest = text.lstrip()
    tail = re.search(f"([{HANGUL}])\\s+$", before + text[:len(text) - len(rest)])
    return [tail.group(1) + rest[0]] if tail and rest and is_hangul_run(rest) else []


class SearchKorean(SearchLanguage):
    lang = "ko"
    language_name = "Korean"
    stopwords = english_stopwords
    js_splitter_code = JS_SPLITTER + JS_SNIPPET + JS_RANK
    # js_stemmer_code: the base class's, a Stemmer whose stemWord returns the word unchanged.

    def init(self, options) -> None:
        self.before = ""          # the end of the text split last (in the same document)

    def split(self, input: str) -> list[str]:
        """Sphinx splits a page one text node at a time, in reading order."""
        terms = split_for_index(input, self.before)
        self.before = (self.before + input)[-32:]
        return terms

    def stem(self, word: str) -> str:
        return word.lower()


class SearchEnglishSnippets(SearchEnglish):
    """The English book's search: Sphinx's own split and stemming, with the same result snippets
    (:data:`JS_SNIPPET`), so an English excerpt is the sentence holding the query too, never the
    print outline or a formula's LaTeX, and the same order of results (:data:`JS_RANK`)."""
    js_splitter_code = JS_SNIPPET + JS_RANK


def new_document(app, doctree, docname) -> None:
    """Sphinx indexes each page right after resolving it: no pair across two pages."""
    lang = getattr(getattr(app.builder, "indexer", None), "lang", None)
    if isinstance(lang, SearchKorean):
        lang.before = ""


def setup(app):
    app.add_search_language(SearchKorean)
    app.add_search_language(SearchEnglishSnippets)      # replaces Sphinx's "en" in this build only
    app.connect("doctree-resolved", new_document)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
