"""The one source format of the book's bilingual files: ``chapters/src/*.md`` (``book.tools.build_chapters``)
and ``classroom/course/src/*.md`` (``classroom.tools.build_assignments``), each written once and turned into a
Korean and an English notebook with the same code.

A source is a sequence of blocks. Each block starts with a marker line ``<!-- kind [options] -->``
and runs to the next marker; nothing but blank lines may come before the first one. The kinds and
their options belong to each builder (``KINDS`` in each); common to both:

``<!-- ko -->`` / ``<!-- en -->``
    a Markdown cell in that language only.
code blocks (``code``, ``solution``, and the assignments' ``setup`` and ``tests``)
    a code cell in both languages. A line ``#ko: words`` becomes the comment ``# words`` in the
    Korean notebook only, ``#en: words`` in the English one only (:func:`code_for`). The same
    marker may end a line of code (``x = f()  #ko: words``): the code stays in both, the
    comment only in its language. Every other line is the same in both, so the pair has the
    same code.

Every notebook also starts with :func:`install_cell`, which installs normlib from the book's
repository (``repository.url`` in ``_config.yml``) when it is not importable, as on Colab or Binder.
The notebooks keep a copy of that address (the install cell, and the chapters' links to the
library's lines); after changing it in ``_config.yml``, ``make repository`` (``book/tools/repository.py``)
rewrites every copy without executing anything.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[2]
LANGS = ("ko", "en")


def assignment_language(assignment: str) -> str:
    """The language of a classroom assignment, from its name (``01_layernorm_ko``); English otherwise."""
    suffix = str(assignment).rsplit("_", 1)[-1]
    return suffix if suffix in LANGS else "en"

MARKER = re.compile(r"^<!--\s*(\w+)((?:\s+[\w.-]+)*)\s*-->[ \t]*$", re.MULTILINE)
LANG_COMMENT = re.compile(r"^(\s*)#(ko|en):\s?(.*)$")
TRAILING_LANG_COMMENT = re.compile(r"^(.*?\S)(\s+)#(ko|en):\s?(.*)$")
KERNEL = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
}

# A block kind's options are checked by a function that returns what is wrong with them, or None.
OptionCheck = Callable[[list[str]], "str | None"]


class SourceError(ValueError):
    """A source that cannot be built; the message starts with ``file:line``."""


def count(n: int) -> OptionCheck:
    """Exactly ``n`` options."""
    return lambda options: None if len(options) == n else f"takes {n} option(s), got {options}"


def any_options(options: list[str]) -> None:
    """Any options (cell tags)."""
    return None


def parse(text: str, name: str, kinds: Mapping[str, OptionCheck]) -> list[dict]:
    """The blocks of a source, in order: dicts with ``kind``, ``options``, ``body`` and ``line``."""
    markers = list(MARKER.finditer(text))
    if not markers or text[:markers[0].start()].strip():
        raise SourceError(f"{name}:1: text before the first <!-- marker -->")
    ends = [m.start() for m in markers[1:]] + [len(text)]
    blocks = [{"kind": m.group(1), "options": m.group(2).split(), "body": text[m.end():end].strip("\n"),
               "line": text.count("\n", 0, m.start()) + 1} for m, end in zip(markers, ends)]
    for b in blocks:
        where = f"{name}:{b['line']}"
        if b["kind"] not in kinds:
            raise SourceError(f"{where}: unknown block kind {b['kind']!r}; expected one of {', '.join(kinds)}")
        problem = kinds[b["kind"]](b["options"])
        if problem:
            raise SourceError(f"{where}: {b['kind']} {problem}")
        if not b["body"]:
            raise SourceError(f"{where}: empty {b['kind']} block")
    return blocks


def code_for(body: str, lang: str) -> str:
    """A code block's source in one language: its ``#ko:``/``#en:`` lines become comments or go.

    A code line ending in one language's comment and followed by an own-line comment in the other
    language is a pair: each language's notebook gets its comment at the end of that code line
    (``y = f(x)  #ko: …`` then ``#en: …`` gives ``y = f(x)  # …`` in both)."""
    lines = body.splitlines()
    out = []
    skip = False
    for index, line in enumerate(lines):
        if skip:
            skip = False
            continue
        m = LANG_COMMENT.match(line)
        trailing = None if m else TRAILING_LANG_COMMENT.match(line)
        if m:
            if m.group(2) == lang:
                out.append(f"{m.group(1)}# {m.group(3)}")
        elif trailing:
            code, gap, marker, words = trailing.groups()
            following = LANG_COMMENT.match(lines[index + 1]) if index + 1 < len(lines) else None
            if following and following.group(2) != marker:  # the other language's half of a pair
                skip = True
                if following.group(2) == lang:
                    words = following.group(3)
                    marker = lang
            out.append(f"{code}{gap}# {words}" if marker == lang else code)
        else:
            out.append(line)
    return "\n".join(out)


def _repository(root: Path) -> dict:
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8")) or {}
    return config.get("repository") or {}


def repository_url(root: Path = ROOT) -> str:
    """The book's repository (``repository.url`` in ``root/_config.yml``)."""
    url = _repository(root).get("url")
    if not url:
        raise SourceError("_config.yml has no repository.url: the notebooks' install cell needs it")
    return str(url).rstrip("/")


def repository_branch(root: Path = ROOT) -> str:
    """The branch the book's links point into (``repository.branch`` in ``_config.yml``, default main)."""
    return str(_repository(root).get("branch") or "main")


INSTALL_COMMENTS = {
    "en": ("# Opened on Colab, Binder or a JupyterHub? Install normlib from the book's repository.\n"
           "# Where normlib is already installed (make lab, the book's own .venv) this does nothing.\n"),
    "ko": ("# Colab, Binder, JupyterHub에서 열었나요? 책의 저장소에서 normlib을 설치합니다.\n"
           "# normlib이 이미 설치된 환경(make lab, 책의 .venv)에서는 아무것도 하지 않습니다.\n"),
}


_URL_MARK = "\x00url\x00"


def install_cell(url: str | None = None, lang: str = "en") -> nbformat.NotebookNode:
    """The first code cell of every notebook: install normlib where it is missing (hidden in the book),
    from ``url`` (default: ``repository.url``), its comments in ``lang``."""
    url = repository_url() if url is None else url
    source = (
        INSTALL_COMMENTS[lang] +
        "try:\n"
        "    import normlib\n"
        "except ModuleNotFoundError:\n"
        "    import subprocess, sys\n"
        f'    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "normlib[book] @ git+{url}"], check=True)\n'
        "    import normlib"
    )
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["tags"] = ["remove-cell"]
    return cell


def installed_from(source: str) -> str | None:
    """The address an install cell installs from, or None when ``source`` is not an install cell."""
    for lang in INSTALL_COMMENTS:
        before, after = install_cell(_URL_MARK, lang).source.split(_URL_MARK)
        if source.startswith(before) and source.endswith(after):
            url = source[len(before):len(source) - len(after)]
            if url and "\n" not in url:
                return url
    return None


def stems(folder: Path) -> list[str]:
    """The sources in ``folder``, by file stem."""
    return sorted(p.stem for p in folder.glob("*.md"))


# ---------------------------------------------------------------------------------------------------
# Inline string pairs: ``T(en="…", ko="…")`` in a source's code, one plain literal in each notebook.

PAIR_NAME = "T"


def _offsets(code: str) -> list[int]:
    """The character offset where each line of ``code`` starts (ast's lines count from 1)."""
    starts, total = [0], 0
    for line in code.splitlines(keepends=True):
        total += len(line)
        starts.append(total)
    return starts


def _char(code_lines: list[str], starts: list[int], lineno: int, col_bytes: int) -> int:
    """A character offset from ast's (line, UTF-8 byte column)."""
    line = code_lines[lineno - 1]
    return starts[lineno - 1] + len(line.encode("utf-8")[:col_bytes].decode("utf-8"))


def pair_calls(code: str, where: str = "<code>") -> list[dict]:
    """The inline pairs of a code block, in order: dicts with ``start``/``end`` (the call's character
    span in ``code``), ``line`` (1-based, in ``code``) and, per language, the literal's source text
    (``"ko"``, ``"en"``) and its value when it is a plain string (``"ko_value"``, ``"en_value"``;
    an f-string's is its text with each replacement field as ``{…}``).

    A pair is a call ``T(en=<literal>, ko=<literal>)`` with both keywords, no other argument, each a
    string literal or an f-string, neither containing another pair. Anything else named ``T`` is a
    :class:`SourceError` (a key looked up in a table, a pair missing a language, a computed string)."""
    import ast

    try:
        tree = ast.parse(code)
    except SyntaxError as error:
        raise SourceError(f"{where}:{error.lineno}: not Python ({error.msg})") from None
    lines = code.splitlines(keepends=True) or [""]
    starts = _offsets(code)
    found = []
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == PAIR_NAME and id(node) not in called:
            raise SourceError(f"{where}:{node.lineno}: the name T is the book's inline pair T(en=…, ko=…), "
                              "not a value (use a dict of pairs for a string chosen at run time)")
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == PAIR_NAME):
            continue
        line = where + f":{node.lineno}"
        names = sorted(k.arg or "**" for k in node.keywords)
        if node.args or names != ["en", "ko"]:
            raise SourceError(f"{line}: T(...) takes exactly en=\"…\" and ko=\"…\" (a pair written in the "
                              f"source), got {ast.unparse(node)[:120]}")
        pair = {"start": _char(lines, starts, node.lineno, node.col_offset),
                "end": _char(lines, starts, node.end_lineno, node.end_col_offset), "line": node.lineno}
        for keyword in node.keywords:
            value = keyword.value
            if not isinstance(value, (ast.Constant, ast.JoinedStr)) or (
                    isinstance(value, ast.Constant) and not isinstance(value.value, str)):
                raise SourceError(f"{line}: T(...)'s {keyword.arg}= must be a string literal or an f-string")
            if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == PAIR_NAME
                   for n in ast.walk(value)):
                raise SourceError(f"{line}: a pair inside a pair's {keyword.arg}=")
            s = _char(lines, starts, value.lineno, value.col_offset)
            e = _char(lines, starts, value.end_lineno, value.end_col_offset)
            pair[keyword.arg] = code[s:e]
            pair[f"{keyword.arg}_value"] = value.value if isinstance(value, ast.Constant) else "".join(
                part.value if isinstance(part, ast.Constant) else "{…}" for part in value.values)
        found.append(pair)
    found.sort(key=lambda p: p["start"])
    return found


def pairs_in(code: str, lang: str, where: str = "<code>") -> str:
    """``code`` with each inline pair ``T(en=…, ko=…)`` replaced by its ``lang`` literal as written."""
    out, last = [], 0
    for pair in pair_calls(code, where):
        literal = pair[lang]
        if "\n" in literal:   # a literal written over several lines keeps its parentheses
            literal = f"({literal})"
        out += [code[last:pair["start"]], literal]
        last = pair["end"]
    return "".join(out) + code[last:]
