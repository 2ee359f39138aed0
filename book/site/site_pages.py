"""Sphinx extension of the book (both languages' builds, see book/site/website.py): one language per page.

- a switch in every page's header that leads to the same page in the other language's book
  (``chapters/ko/06_family`` <-> ``chapters/en/06_family``; the glossary, search and index pages
  to their namesakes), labelled in the page's language;
- the link each chapter notebook opens with to its other-language notebook (for JupyterLab)
  left out of the page: this build has no such page, and the header's switch leads there;
- the glossary (one bilingual ``glossary.md``, the reference of every term) shown in the page's
  language: the title and introduction of that language, the meaning column in that language;
- every section of a chapter given a second id that is the same in both languages, its place in
  the page (``s.2`` the second ``##`` section, ``s.2.1`` the first ``###`` in it): the switch
  (language-switch.html) opens the other language at the section the reader is in;
- the words other packages write into a page without a catalogue (myst-nb's "Show code cell
  source", sphinx-book-theme's aria-label="Main") looked up in the page language's catalogue; an
  exercise's solution (tag ``solution``, book/tools/build_chapters.py) says "Show solution 1" (2번 풀이
  보기), not myst-nb's "Show code cell content".

The theme's own words come from Sphinx's and sphinx-book-theme's catalogues and, for what they
lack, book/locale/<lang>/LC_MESSAGES/sphinx.po (``locale_dirs`` in _config.yml's ``languages:``).
"""

from __future__ import annotations

import gettext
import json
import re
from pathlib import Path

from sphinx.locale import _

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE / "site_templates"
STATIC = TEMPLATES / "static"            # site.css: the switch's place in the header
SWITCH = "language-switch.html"

# What the switch says on a page of each language: the other book's name in its own language,
# and, for screen readers, where it leads, in the page's language.
SWITCH_TEXT = {
    "ko": {"en": ("English", "이 페이지의 영어판")},
    "en": {"ko": ("한국어", "This page in Korean")},
}

# Words other packages write into a page in English only, not through a catalogue: sphinx-book-theme's
# sidebar and print outline (aria-label), myst-nb's collapsed cells. Each is looked up in the page
# language's catalogue (book/locale/<lang>/LC_MESSAGES/sphinx.po) as the page is written.
FIXED_ATTRIBUTES = ["Main", "Page"]   # (myst-nb's summary label is dropped: book/site/accessibility.py)
FIXED_TEXTS = [f"{verb} code cell {kind}" for verb in ("Show", "Hide")
               for kind in ("source", "content", "output", "outputs")]
# ... and by scripts as the page runs (sphinx-copybutton's tooltips): site.js.
SCRIPT_WORDS = ["Copy", "Copy to clipboard", "Copied!", "Failed to copy"]


def fixed_words() -> dict[str, str]:
    words = {f'aria-label="{w}"': f'aria-label="{_(w)}"' for w in FIXED_ATTRIBUTES}
    words.update({f">{w}<": f">{_(w)}<" for w in FIXED_TEXTS})
    return {english: said for english, said in words.items() if english != said}


def translate_fixed_words(app) -> None:
    if getattr(app.builder, "format", "") != "html":
        return
    said = {w: str(_(w)) for w in SCRIPT_WORDS if str(_(w)) != w}
    app.add_js_file(None, body=f"window.SITE_WORDS = {json.dumps(said, ensure_ascii=False)};", priority=200)
    app.add_js_file("site.js", priority=900)
    words = fixed_words()
    if not words:
        return
    render = app.builder.templates.render

    def rendered(template: str, context: dict) -> str:
        page = render(template, context)
        for english, said in words.items():
            page = page.replace(english, said)
        return page

    app.builder.templates.render = rendered


# --- An exercise's solution: its toggle says so -------------------------------------------------

SOLUTION_WORDS = {"Show code cell content": "Show solution %(n)s", "Hide code cell content": "Hide solution %(n)s"}
SOLUTION_SUMMARY = re.compile(r'(<div class="cell\b[^"]*\btag_solution\b[^"]*">\s*<details\b[^>]*>\s*'
                              r'<summary\b[^>]*>)(.*?)(</summary>)', re.S)


def solution_labels(body: str) -> str:
    """A solution cell's toggle (myst-nb's ``hide-cell``: "Show code cell content") says "Show
    solution 2" (the page's second solution: exercise 2's), in the page's language (book/locale/: "2번
    풀이 보기"). The summary stays named by the words it shows (book/site/accessibility.py)."""
    count = iter(range(1, 1000))

    def relabel(m):
        words, n = m.group(2), next(count)
        for english, said in SOLUTION_WORDS.items():
            words = words.replace(f">{english}<", f">{str(_(said)) % {'n': n}}<")
        return m.group(1) + words + m.group(3)
    return SOLUTION_SUMMARY.sub(relabel, body)


def label_solutions(app, pagename, templatename, context, doctree) -> None:
    if isinstance(context.get("body"), str):
        context["body"] = solution_labels(context["body"])


# --- Sections named alike in both languages -----------------------------------------------------

def place_ids(app, doctree, docname) -> None:
    """Each section below a page's title gets the id ``s.<n>[.<m>...]``: its place among its
    siblings, the same in both languages where the chapters' sections match (one source per
    chapter; tests/book/test_prose_pages.py checks every page pair). Docutils ids never hold a dot,
    so these take no id of a heading."""
    from docutils import nodes

    def number(node, prefix: str) -> None:
        sections = [c for c in node.children if isinstance(c, nodes.section)]
        for n, section in enumerate(sections, 1):
            own = f"{prefix}.{n}"
            section["ids"].append(own)
            number(section, own)

    tops = [c for c in doctree.children if isinstance(c, nodes.section)]
    number(tops[0] if len(tops) == 1 else doctree, "s")   # one title: its sections are s.1, s.2, ...


GLOSSARY = "glossary"


def counterpart(docname: str, lang: str, other: str) -> str:
    """The same page in the other language's book."""
    prefix = f"chapters/{lang}/"
    return f"chapters/{other}/{docname[len(prefix):]}" if docname.startswith(prefix) else docname


def switch_href(pagename: str, lang: str, other: str) -> str:
    """Relative URL from ``<out>/<lang>/<pagename>.html`` to ``<out>/<other>/<its page>.html``."""
    up = "../" * (pagename.count("/") + 1)
    return f"{up}{other}/{counterpart(pagename, lang, other)}.html"


def add_switch(app, pagename, templatename, context, doctree) -> None:
    lang = app.config.language
    context["language_switches"] = [
        {"href": switch_href(pagename, lang, other), "lang": other,
         "text": SWITCH_TEXT[lang][other][0], "label": SWITCH_TEXT[lang][other][1]}
        for other in SWITCH_TEXT.get(lang, {})
    ]


def configure(app, config) -> None:
    # Ours first: two of sphinx-book-theme's buttons are re-written with translated titles.
    config.templates_path = [str(TEMPLATES), *config.templates_path]
    config.html_static_path = [*config.html_static_path, str(STATIC)]
    options = dict(config.html_theme_options or {})
    end = list(options.get("article_header_end") or ["article-header-buttons.html"])
    if SWITCH not in end:
        end.insert(0, SWITCH)
    options["article_header_end"] = end
    # Jupyter Book sets this English text itself (not through a catalogue).
    options["search_bar_text"] = str(_("Search this book..."))
    config.html_theme_options = options


def theme_words_first(app) -> None:
    """sphinx-book-theme's words (its "booktheme" catalogue) from the project's catalogue first.

    Sphinx compiled book/locale/<lang>/LC_MESSAGES/sphinx.po to sphinx.mo when it started and puts it
    before its own and pydata-sphinx-theme's words; the book theme's catalogue is separate, and
    its Korean is partly machine-made ("By" -> "으로"), so the same file goes in front of it."""
    from sphinx import locale

    key = ("general", "booktheme")
    for folder in app.config.locale_dirs:
        mo = Path(app.srcdir, folder, app.config.language, "LC_MESSAGES", "sphinx.mo")
        if mo.exists():
            with mo.open("rb") as handle:
                ours = gettext.GNUTranslations(handle)
            theirs = locale.translators.get(key)
            if theirs is not None:
                ours.add_fallback(theirs)
            locale.translators[key] = ours
            return


# --- The glossary in one language ---------------------------------------------------------------

ROW = re.compile(r"^\|(?P<ko>[^|]*)\|(?P<en>[^|]*)\|(?P<meaning>.*)\|\s*$")


def glossary_in(text: str, lang: str) -> str:
    """``glossary.md`` (title ``한국어 · English``, a Korean then an English paragraph, a table
    whose meaning column is ``Korean · English``) as the page of one language."""
    lines = text.splitlines()
    out: list[str] = []
    paragraphs_seen = 0
    for line in lines:
        if line.startswith("# "):
            ko_title, _, en_title = line[2:].partition(" · ")
            out.append("# " + (ko_title if lang == "ko" else en_title or ko_title))
        elif line.startswith("|"):
            match = ROW.match(line)
            if not match:
                out.append(line)
                continue
            ko, en, meaning = (match.group(g).strip() for g in ("ko", "en", "meaning"))
            if set(ko) <= set("-: "):           # the separator row
                out.append(line)
                continue
            ko_meaning, sep, en_meaning = meaning.partition(" · ")
            said = (ko_meaning if lang == "ko" else en_meaning) if sep else meaning
            if ko == "한국어":                    # the header row
                ko, en, said = ("한국어", "영어", "뜻") if lang == "ko" else ("Korean", "English", "Meaning")
            first, second = (ko, en) if lang == "ko" else (en, ko)
            out.append(f"| {first} | {second} | {said} |")
        elif line.strip():
            # Prose paragraphs alternate: Korean, then English.
            is_korean = bool(re.search(r"[\uac00-\ud7a3]", line))
            paragraphs_seen += 1
            if is_korean == (lang == "ko"):
                out.append(line)
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def localise_source(app, docname, source) -> None:
    if docname == GLOSSARY:
        source[0] = glossary_in(source[0], app.config.language)
    elif docname.endswith(".ipynb") or app.env.doc2path(docname).endswith(".ipynb"):
        source[0] = without_other_language_link(source[0], app.config.language)


# --- The notebooks' link to the other language ------------------------------------------------

OTHER_NOTEBOOK = re.compile(r"^\s*\[[^\]]*\]\(\.\./(?P<lang>[a-z]{2})/[\w-]+\.ipynb\)\s*$")


def without_other_language_link(text: str, lang: str) -> str:
    """A chapter notebook opens with ``[English version →](../en/06_family.ipynb)`` (useful in
    JupyterLab; book/tools/build_chapters.py writes it). This build has no such page, and the label is
    in the other language: the page drops the line, the header's switch leads there instead."""
    notebook = json.loads(text)
    changed = False
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "markdown":
            continue
        lines = cell["source"] if isinstance(cell["source"], list) else cell["source"].splitlines(True)
        kept = [line for line in lines
                if not ((m := OTHER_NOTEBOOK.match(line)) and m.group("lang") != lang)]
        if len(kept) != len(lines):
            cell["source"] = kept
            changed = True
    return json.dumps(notebook, ensure_ascii=False) if changed else text


# Sphinx's search page speaks from _static/translations.js, written from Sphinx's own Korean
# script catalogue, which the project's .po does not reach: its words are laid over it here.
TRANSLATIONS_JS = re.compile(r"(Documentation\.addTranslations\()(\{.*\})(\);?\s*)$", re.S)


def script_catalogue_words(app, exception) -> None:
    path = Path(app.outdir) / "_static" / "translations.js"
    if exception is not None or getattr(app.builder, "format", "") != "html" or not path.exists():
        return
    match = TRANSLATIONS_JS.search(path.read_text(encoding="utf-8"))
    if not match:
        raise RuntimeError(f"{path}: not the Documentation.addTranslations({{...}}) Sphinx writes")
    catalogue = json.loads(match.group(2))
    messages = catalogue.get("messages", {})
    for english, said in messages.items():
        ours = str(_(english))
        if isinstance(said, str) and ours != english:
            messages[english] = ours
    path.write_text(match.group(1) + json.dumps(catalogue, ensure_ascii=False, indent=1) + match.group(3),
                    encoding="utf-8")


def setup(app):
    app.connect("config-inited", configure)
    app.connect("builder-inited", theme_words_first)
    app.connect("builder-inited", translate_fixed_words)
    app.add_css_file("site.css")
    app.connect("source-read", localise_source)
    app.connect("html-page-context", add_switch)
    app.connect("html-page-context", label_solutions)
    app.connect("doctree-resolved", place_ids)
    app.connect("build-finished", script_catalogue_words)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
