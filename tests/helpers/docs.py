"""Pages that name commands, paths and links (README, CONTRIBUTING, the teachers' and students'
guides, the chapters' Markdown): what they name, and whether it is real (tests/repository,
tests/book, tests/classroom)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from helpers.paths import ROOT
from helpers.text import has_hangul

INLINE_CODE = re.compile(r"`([^`\n]+)`")
MAKE_COMMAND = re.compile(r"\bmake ([a-z][a-z0-9-]*)")
FENCED = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
FILE_SUFFIX = re.compile(r"\w\.(py|yml|yaml|md|csv|db|ipynb|txt|html|toml|cfg|json|js|css|po|bib|j2|lock)$")


def make_targets() -> set[str]:
    """The targets the Makefile defines (``name:`` at the start of a line, not ``NAME :=``)."""
    return set(re.findall(r"^([\w.-]+)\s*:(?!=)", (ROOT / "Makefile").read_text(encoding="utf-8"), re.MULTILINE))


def make_commands(page: str, code_only: bool = False) -> set[str]:
    """The make targets ``page`` runs: ``make X`` anywhere, or (``code_only``) in inline code and
    fenced blocks only, where English prose's verb "make" is not read as a command."""
    if code_only:
        page = "\n".join(INLINE_CODE.findall(FENCED.sub("", page)) + FENCED.findall(page))
    return set(MAKE_COMMAND.findall(page))


def named_paths(page: str) -> set[str]:
    """Inline code that names a file or folder: with a slash, or a file name with a known suffix
    (not a command with spaces, an absolute path, a URL, a bare suffix such as ``.ipynb``)."""
    found = set()
    for span in INLINE_CODE.findall(FENCED.sub("", page)):
        span = span.strip()
        if " " in re.sub(r"<[^>]*>", "", span) or span.startswith(("/", "#", "~")) or "://" in span:
            continue
        if span.startswith(".") and "/" not in span:     # a suffix (.ipynb) or .venv
            continue
        if "/" in span or FILE_SUFFIX.search(span):
            found.add(span)
    return found


def git_ignored(path: str) -> bool:
    """Whether git ignores ``path``, a file a command writes (release/, grades.csv, _build/ …)."""
    try:
        return subprocess.run(["git", "check-ignore", "-q", "--no-index", path], cwd=ROOT).returncode == 0
    except OSError:
        pytest.skip("git is not installed")


def concrete_paths(path: str) -> list[str]:
    """The repository paths a named path stands for: the part before a placeholder (``<student>``,
    ``…``), without a pytest id (``::test_x``) or a line (``:12``), braces spelled out
    (``results/fold.{md,json}`` is two files)."""
    path = re.split(r"[<…*]", path.split("::")[0], maxsplit=1)[0]
    path = re.sub(r":\d+$", "", path)
    braces = re.search(r"\{([^{}]*)\}", path)
    if braces:
        return [p for choice in braces.group(1).split(",")
                for p in concrete_paths(path[:braces.start()] + choice + path[braces.end():])]
    return [path]


MD_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def local_links(page: str) -> list[str]:
    """The page's Markdown links that are not to another site."""
    return [link for link in MD_LINK.findall(page) if "://" not in link]


def links_out_of_the_book(page: str, folder: Path) -> list[str]:
    """Local links of a page of ``folder`` (``chapters/<language>/``) that are not a page of that same
    folder named by its file name (``04_layernorm.ipynb#…``): a link into the repository or into the
    other language's book leaves the reader's book."""
    bad = []
    for link in local_links(page):
        target = link.split("#")[0]
        if "/" in target or not target.endswith((".ipynb", ".md")) or not (folder / target).is_file():
            bad.append(link)
    return bad


def lines_without_hangul(page: str) -> list[str]:
    """The lines of a Korean page, outside code, with no Hangul (table rules and blank lines aside)."""
    page = FENCED.sub("", page)
    lines = [line for line in page.splitlines() if line.strip() and not re.fullmatch(r"\|[-| ]+\|", line.strip())]
    return [line for line in lines if not has_hangul(INLINE_CODE.sub("", line))]


def unreal_paths(page: str) -> list[str]:
    """The paths ``page`` names that are neither in the repository nor written by a command
    (git-ignored)."""
    return sorted(path for path in named_paths(page)
                  if not all((ROOT / p).exists() or git_ignored(p) for p in concrete_paths(path)))
