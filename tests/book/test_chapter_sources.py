"""The chapter notebooks are generated from chapters/src/*.md (book/tools/build_chapters.py), every
figure they draw has a caption and alt text in the page's language, and every chapter ends
with exercises whose solutions are collapsed."""

from __future__ import annotations

import ast
import re

import nbformat
import pytest

from book.tools import build_chapters
from helpers.paths import ROOT
from helpers.text import has_hangul

STEMS = build_chapters.stems()


def _shape(nb):
    return [(c.cell_type, c.source, c.metadata.get("tags", []), c.metadata.get("mystnb", {})) for c in nb.cells]


def test_every_source_has_its_pair_and_no_notebook_lacks_a_source():
    assert STEMS, "no chapter sources in chapters/src"
    for lang in build_chapters.LANGS:
        assert sorted(p.stem for p in (ROOT / "chapters" / lang).glob("*.ipynb")) == STEMS, lang


@pytest.mark.parametrize("stem", STEMS)
def test_notebooks_match_their_source(stem):
    blocks = build_chapters.parse((build_chapters.SRC / f"{stem}.md").read_text(encoding="utf-8"), stem)
    for lang in build_chapters.LANGS:
        expected = build_chapters.notebook(blocks, stem, lang)
        committed = nbformat.read(ROOT / "chapters" / lang / f"{stem}.ipynb", as_version=4)
        assert _shape(committed) == _shape(expected), (
            f"chapters/{lang}/{stem}.ipynb differs from chapters/src/{stem}.md: "
            "run `make chapters` (or edit the source, not the notebook)")


@pytest.mark.parametrize("stem", STEMS)
@pytest.mark.parametrize("lang", build_chapters.LANGS)
def test_every_figure_has_a_caption_and_alt_text_in_its_language(stem, lang):
    nb = nbformat.read(ROOT / "chapters" / lang / f"{stem}.ipynb", as_version=4)
    figures = 0
    for index, cell in enumerate(nb.cells):
        images = [o for o in cell.get("outputs", []) if "image/png" in o.get("data", {})]
        if not images:
            continue
        figures += 1
        assert len(images) == 1, f"{lang}/{stem} cell {index}: one figure per cell, so one caption fits"
        meta = cell.metadata.get("mystnb", {})
        caption, alt = meta.get("figure", {}).get("caption", ""), meta.get("image", {}).get("alt", "")
        assert len(caption) > 20 and len(alt) > 20, f"{lang}/{stem} cell {index}: caption {caption!r}, alt {alt!r}"
        assert has_hangul(caption) == has_hangul(alt) == (lang == "ko"), f"{lang}/{stem} cell {index}: wrong language"
    assert figures, f"{lang}/{stem} draws no figure"


@pytest.mark.parametrize("stem", STEMS)
def test_chapter_closes_with_exercises_and_collapsed_solutions(stem):
    for lang, heading in (("ko", "## 연습 문제"), ("en", "## Exercises")):
        nb = nbformat.read(ROOT / "chapters" / lang / f"{stem}.ipynb", as_version=4)
        at = [i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and heading in c.source]
        assert at, f"{lang}/{stem}: no '{heading}' section"
        questions = sum(1 for line in nb.cells[at[-1]].source.splitlines() if line[:3] in ("1. ", "2. ", "3. ", "4. "))
        solutions = [c for c in nb.cells[at[-1]:] if c.cell_type == "code"]
        assert 2 <= questions <= 4, f"{lang}/{stem}: {questions} exercises"
        assert len(solutions) == questions, f"{lang}/{stem}: {questions} exercises, {len(solutions)} solutions"
        for c in solutions:
            assert "hide-cell" in c.metadata.get("tags", []) and c.metadata.get("jupyter", {}).get("source_hidden")


def test_korean_prose_glosses_a_core_term_once_in_the_book():
    """The English term in parentheses at the term's first use in the book, and not again: the
    glossary holds the pairs, and a gloss repeated on every page reads as translation."""
    terms = {"정규화": "normalization", "평균": "mean", "분산": "variance"}
    defined_in = {"평균": "02_mean_variance", "분산": "02_mean_variance"}  # its definition may gloss it again
    glossed = {}
    for stem in STEMS:
        nb = nbformat.read(ROOT / "chapters" / "ko" / f"{stem}.ipynb", as_version=4)
        # headings (the chapter title) are not "use in a sentence"
        text = "\n".join(line for c in nb.cells if c.cell_type == "markdown"
                         for line in c.source.splitlines() if not line.startswith("#"))
        for korean, english in terms.items():
            gloss = re.compile(re.escape(korean) + r"\s*\([^)]*\b" + english + r"\b", re.IGNORECASE)
            if korean not in glossed and korean in text:
                first = text.index(korean)
                assert gloss.match(text, first), (stem, korean, text[first:first + 60])
                glossed[korean] = stem
            elif korean in glossed and defined_in.get(korean) != stem:
                again = gloss.search(text)
                assert not again, f"{stem} glosses {korean} again (first glossed in {glossed[korean]}): {again.group(0)!r}"
    assert set(glossed) == set(terms), glossed


@pytest.mark.parametrize("bad, message", [
    ("stray text\n<!-- ko -->\n# t", "text before the first"),
    ("<!-- ko -->\n# t\n<!-- fr -->\nx", "unknown block kind 'fr'"),
    ("<!-- ko -->\n# t\n<!-- caption -->\nx", "caption needs 'ko' or 'en'"),
    ("<!-- ko -->\n# t\n<!-- code -->\n", "empty code block"),
])
def test_source_errors_name_the_line_and_the_problem(bad, message):
    with pytest.raises(build_chapters.SourceError, match=message):
        build_chapters.parse(bad, "x.md")


def test_language_comments_go_to_their_language_only():
    body = "a = 1  # shared\n#ko: 한국어 설명\n#en: English note\nb = 2"
    assert build_chapters.code_for(body, "ko") == "a = 1  # shared\n# 한국어 설명\nb = 2"
    assert build_chapters.code_for(body, "en") == "a = 1  # shared\n# English note\nb = 2"


def test_a_language_comment_at_the_end_of_a_code_line_stays_in_its_language():
    body = "y = f(x)  #ko: 한국어 설명\n    z = g(y)   #en: note"
    assert build_chapters.code_for(body, "ko") == "y = f(x)  # 한국어 설명\n    z = g(y)"
    assert build_chapters.code_for(body, "en") == "y = f(x)\n    z = g(y)   # note"


def test_a_pair_of_end_of_line_comments_stays_on_its_code_line_in_both_languages():
    """``code  #ko: …`` followed by an own-line ``#en: …``: each notebook shows its comment at the
    end of that code line, not on a line of its own under it."""
    body = "y = f(x)  #ko: 한국어 설명\n    #en: English note\n#en: a note on its own line\nz = 1"
    assert build_chapters.code_for(body, "ko") == "y = f(x)  # 한국어 설명\nz = 1"
    assert build_chapters.code_for(body, "en") == "y = f(x)  # English note\n# a note on its own line\nz = 1"


# -- the strings a cell prints: pairs in the source, one plain literal in each notebook ------------
def _chapter(code: str) -> str:
    return f"<!-- ko -->\n# 제목\n<!-- en -->\n# Title\n<!-- setup -->\nimport x\n<!-- code -->\n{code}\n"


def _built(code: str, lang: str) -> str:
    nb = build_chapters.notebook(build_chapters.parse(_chapter(code), "x.md"), "x", lang)
    return [c.source for c in nb.cells if c.cell_type == "code"][-1]


def test_a_pair_becomes_each_languages_plain_literal():
    code = 'print(T(en="LayerNorm on one sample:", ko="샘플 하나에 LayerNorm:"), y)'
    assert _built(code, "ko") == 'print("샘플 하나에 LayerNorm:", y)'
    assert _built(code, "en") == 'print("LayerNorm on one sample:", y)'
    template = 'print(T(en="{n} seeds, mean {m:.3f}", ko="시드 {n}개, 평균 {m:.3f}").format(n=3, m=0.5))'
    assert _built(template, "ko") == 'print("시드 {n}개, 평균 {m:.3f}".format(n=3, m=0.5))'
    fstring = 'names = {"bn": T(en=f"layer {k}", ko=f"{k}층")}  #ko: 이름\n#en: names'
    assert _built(fstring, "ko") == 'names = {"bn": f"{k}층"}  # 이름'
    assert _built(fstring, "en") == 'names = {"bn": f"layer {k}"}  # names'
    # a literal written over several lines keeps parentheses, so the code stays valid
    lines = 'x = T(en="one "\n      "two", ko="하나 "\n      "둘")'
    assert _built(lines, "ko") == 'x = ("하나 "\n      "둘")'
    assert ast.literal_eval(_built(lines, "en").split("= ", 1)[1]) == "one two"


@pytest.mark.parametrize("code, message", [
    ('print(T(en="sample"))', "exactly en="),                       # a pair missing a language
    ('print(T(ko="샘플"))', "exactly en="),
    ('print(T("sample"))', "exactly en="),                          # a table key
    ('print(T(en="a", ko="가", fr="b"))', "exactly en="),
    ('print(T(en=name, ko="가"))', "string literal or an f-string"),  # a computed string
    ('print(T(en="a", ko=f"{T(en=\'b\', ko=\'나\')}"))', "inside a pair"),
    ("label = T", "not a value"),
    ('print(T(en="a", ko="가"', "not Python"),
])
def test_a_pair_that_cannot_be_built_names_its_line(code, message):
    with pytest.raises(build_chapters.SourceError, match=message):
        build_chapters.notebook(build_chapters.parse(_chapter(code), "x.md"), "x", "ko")


@pytest.mark.parametrize("stem", STEMS)
def test_every_printed_string_is_a_pair_of_two_languages(stem):
    """Each pair has a Korean side with Hangul or the same words as the English (a name, a formula),
    and an English side without Hangul."""
    pairs = build_chapters.source_pairs(stem)
    assert pairs, f"{stem} prints nothing in words"
    for p in pairs:
        assert not has_hangul(p["en_value"]), f"{stem}:{p['line']}+: Hangul in the English of {p['en']}"
        assert has_hangul(p["ko_value"]) or p["ko_value"] == p["en_value"] or not re.search("[A-Za-z]{3}", p["ko_value"]), \
            f"{stem}:{p['line']}+: the Korean side is English: {p['ko']}"


@pytest.mark.parametrize("lang", build_chapters.LANGS)
def test_no_notebook_shows_a_language_marker(lang):
    marked = [f"{path.name}: {line.strip()}" for path in sorted((ROOT / "chapters" / lang).glob("*.ipynb"))
              for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code"
              for line in cell.source.splitlines() if re.search(r"#(ko|en):", line)]
    assert not marked, f"#ko:/#en: markers left in the {lang} notebooks: {marked[:5]}"


def _punct(ch: str) -> bool:
    return not ch.isspace() and not ch.isalnum()


def _broken_bold(line: str) -> list[str]:
    """CommonMark will not close "**(mean)**을" (a closing ** after punctuation and before a
    letter) nor open "는**(…": common in Korean, where particles follow without a space."""
    line = re.sub(r"`[^`]*`", "``", line)
    bad = []
    for k, m in enumerate(re.finditer(r"\*\*", line)):
        before = line[m.start() - 1] if m.start() else " "
        after = line[m.end()] if m.end() < len(line) else " "
        if k % 2 == 1 and _punct(before) and after.isalnum():
            bad.append(line[max(0, m.start() - 20):m.end() + 3])
        if k % 2 == 0 and before.isalnum() and _punct(after):
            bad.append(line[max(0, m.start() - 3):m.end() + 20])
    return bad


def test_bold_text_renders_in_korean():
    assert _broken_bold("결국 **평균(mean)**을") and not _broken_bold("결국 **평균**(mean)을")
    texts = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
             for p in (ROOT / "glossary.md", *sorted((ROOT / "chapters").glob("[a-z][a-z]/*.md")))}
    for path in sorted((ROOT / "chapters").glob("[a-z][a-z]/*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        texts[f"{path.parent.name}/{path.name}"] = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    bad = [(name, b) for name, text in texts.items() for line in text.splitlines() for b in _broken_bold(line)]
    assert not bad, bad


@pytest.mark.parametrize("lang", build_chapters.LANGS)
def test_pages_open_with_their_content_and_a_collapsed_setup(lang):
    """Title and introduction first; then the install cell (removed from the book) and one short
    setup cell, collapsed in the book, that prints nothing; then the chapter."""
    for stem in STEMS:
        cells = nbformat.read(ROOT / "chapters" / lang / f"{stem}.ipynb", as_version=4).cells
        assert cells[0].cell_type == "markdown" and cells[0].source.startswith("# "), f"{lang}/{stem}"
        assert cells[1].metadata.get("tags") == ["remove-cell"], f"{lang}/{stem}: cell 1 is not the install cell"
        setup = cells[2]
        assert setup.source.startswith(f'LANG = "{lang}"\n'), f"{lang}/{stem}: cell 2 is not the setup cell"
        assert setup.metadata.get("tags") == ["hide-input"], f"{lang}/{stem}: the setup cell is not collapsed"
        assert not setup.get("outputs"), f"{lang}/{stem}: the setup cell prints {setup.outputs}"
        assert "book.start(LANG" in setup.source and "def " not in setup.source, f"{lang}/{stem}: {setup.source}"
        assert len(setup.source.splitlines()) <= 14, f"{lang}/{stem}: a setup of {len(setup.source.splitlines())} lines"
        assert not any("LANG = " in c.source for c in cells[3:] if c.cell_type == "code"), f"{lang}/{stem}"


PACKAGES = r"(?:normlib|book/normlib_book|classroom/normlib_classroom|benchmarks/normlib_benchmarks)"
LIBRARY_LINE = re.compile(r"\]\(https://github\.com/[^)]+/blob/[^/]+/(" + PACKAGES + r"/[\w/]+\.py)#L(\d+)-L(\d+)\)")


@pytest.mark.parametrize("lang", build_chapters.LANGS)
def test_chapters_link_to_the_library_lines_they_derive(lang):
    """Chapters 2–7 and 9 link to the normlib code they derive; each link's first line is the
    definition (a `def` or `class`, or its decorator) and its last line is inside the file."""
    for stem in STEMS:
        markdown = "\n".join(c.source for c in nbformat.read(ROOT / "chapters" / lang / f"{stem}.ipynb",
                                                              as_version=4).cells if c.cell_type == "markdown")
        links = LIBRARY_LINE.findall(markdown)
        if stem[:2] in ("02", "03", "04", "05", "06", "07", "09"):
            assert links, f"{lang}/{stem} links to no line of normlib"
        for path, first, last in links:
            lines = (ROOT / path).read_text(encoding="utf-8").splitlines()
            head = lines[int(first) - 1].lstrip()
            assert head.startswith(("def ", "class ", "@")) and int(last) <= len(lines), (
                f"{lang}/{stem} links to {path}#L{first}-L{last}, which starts {head!r}: the library moved; "
                f"run `python -m book.tools.build_chapters {stem}` (the code is unchanged, so its outputs are kept)")


def test_a_library_link_names_a_real_definition():
    assert build_chapters.link_library("[x](normlib:functional.layer_norm)").startswith("[x](https://github.com/")
    with pytest.raises(build_chapters.SourceError, match="normlib:functional.no_such_function"):
        build_chapters.link_library("[x](normlib:functional.no_such_function)")


def test_rebuilding_after_a_prose_change_keeps_the_outputs():
    blocks = build_chapters.parse((build_chapters.SRC / f"{STEMS[0]}.md").read_text(encoding="utf-8"), STEMS[0])
    executed = nbformat.read(ROOT / "chapters" / "en" / f"{STEMS[0]}.ipynb", as_version=4)
    prose = [dict(b, body=b["body"] + " More prose.") if b["kind"] == "en" else b for b in blocks]
    rebuilt = build_chapters.notebook(prose, STEMS[0], "en")
    assert build_chapters.keep_outputs(rebuilt, executed)
    assert [c.get("outputs") for c in rebuilt.cells if c.cell_type == "code"] == \
           [c.outputs for c in executed.cells if c.cell_type == "code"]
    code = [dict(b, body=b["body"] + "\nprint(1)") if b["kind"] == "code" else b for b in blocks]
    assert not build_chapters.keep_outputs(build_chapters.notebook(code, STEMS[0], "en"), executed)


def test_what_a_chapter_links_to_names_that_chapter():
    """A chapter links to the library code it derives, and that code's docstring names the chapter."""
    import importlib
    import inspect

    checked = 0
    for stem in STEMS:
        number = int(stem[:2])
        source = (build_chapters.SRC / f"{stem}.md").read_text(encoding="utf-8")
        for package, target in re.findall(r"\]\((normlib(?:_book|_classroom|_benchmarks)?):([\w.]+)\)", source):
            module, _, name = target.rpartition(".")
            doc = inspect.getdoc(getattr(importlib.import_module(f"{package}.{module}" if module else package), name)) or ""
            named = {int(n) for n in re.findall(r"[Cc]hapters? (\d+)", doc)}
            named |= {n for a, b in re.findall(r"[Cc]hapters (\d+)–(\d+)", doc) for n in range(int(a), int(b) + 1)}
            assert number in named, f"{stem} links to {package}.{target}, whose docstring names chapters {sorted(named)}"
            checked += 1
    assert checked >= 8, f"only {checked} library links in the chapters"


def _bibliography_keys() -> set[str]:
    import pybtex.database

    return set(pybtex.database.parse_file(str(ROOT / "references.bib")).entries)


def test_every_chapter_cites_and_every_citation_is_in_the_bibliography():
    keys = _bibliography_keys()
    for stem in STEMS:
        cited = [k.strip() for m in build_chapters.CITATION.finditer((build_chapters.SRC / f"{stem}.md").read_text(encoding="utf-8"))
                 for k in m.group(2).split(",")]
        assert cited, f"{stem} cites no paper"
        unknown = sorted(set(cited) - keys)
        assert not unknown, f"{stem} cites {unknown}, not in references.bib"


@pytest.mark.parametrize("lang", build_chapters.LANGS)
def test_each_language_cites_into_its_own_bibliography_page(lang):
    page = (ROOT / "chapters" / lang / "references.md").read_text(encoding="utf-8")
    assert f":keyprefix: {lang}-" in page and "{bibliography}" in page
    assert f"chapters/{lang}/references" in (ROOT / "_toc.yml").read_text(encoding="utf-8")
    for stem in STEMS:
        markdown = "\n".join(c.source for c in nbformat.read(ROOT / "chapters" / lang / f"{stem}.ipynb", as_version=4).cells
                             if c.cell_type == "markdown")
        keys = [k for m in build_chapters.CITATION.finditer(markdown) for k in m.group(2).split(",")]
        assert keys and all(k.startswith(f"{lang}-") for k in keys), f"{lang}/{stem}: {keys}"
    assert build_chapters.cite_in("x {cite:p}`a2000,b2001` y {cite}`c`", "ko") == "x {cite:p}`ko-a2000,ko-b2001` y {cite}`ko-c`"


def _docstrings(source: str) -> list[str]:
    """The functions and classes of a code cell that explain themselves in a docstring."""
    code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
    return [node.name for node in ast.walk(ast.parse(code))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and ast.get_docstring(node)]


@pytest.mark.parametrize("stem", STEMS)
def test_code_cells_explain_in_comments_not_docstrings(stem):
    """A docstring is the same string in both notebooks, so a Korean page would show English: the
    explanations in a chapter's code are #ko:/#en: comments, which each page gets in its language."""
    nb = nbformat.read(ROOT / "chapters" / "ko" / f"{stem}.ipynb", as_version=4)
    found = [f"cell {i}: {name}" for i, cell in enumerate(nb.cells) if cell.cell_type == "code"
             for name in _docstrings(cell.source)]
    assert not found, f"ko/{stem}: docstrings in code cells (write them as #ko:/#en: comments): {found}"


def test_the_docstring_check_can_fail():
    assert _docstrings('def f(x):\n    """Adds one."""\n    return x + 1\n') == ["f"]
    assert _docstrings("def f(x):\n    # 하나를 더합니다\n    return x + 1\n") == []
