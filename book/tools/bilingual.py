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
