"""Make every copy of the book's repository address follow ``_config.yml`` (``make repository``).

    python -m book.tools.repository            # rewrite the copies that differ from _config.yml
    python -m book.tools.repository --check    # change nothing; exit 1 naming every file that differs

``repository.url`` (and ``repository.branch``) in ``_config.yml`` is the one place a course sets
where its copy of the book lives. Sphinx reads it at every build (the launch buttons, the
repository button), but the notebooks carry copies of it, written when they were generated:

- the install cell (``book.tools.bilingual.install_cell``): the first code cell of every chapter,
  ``chapters/ko/*.ipynb`` and ``chapters/en/*.ipynb``, and of every assignment's source notebook,
  ``classroom/course/source/*/*.ipynb``, installs ``normlib[book] @ git+URL``;
- the chapters' links to the library's lines (``book.tools.build_chapters.library_url``):
  ``URL/blob/BRANCH/normlib/...``.

This rewrites those cells' sources and nothing else: outputs, execution counts and metadata stay
as they are, so no notebook is executed (the install cell does nothing where normlib is installed,
and prints nothing). The notebooks then are what ``make chapters`` and ``make assignments`` would
write (``tests/repository/test_repository.py``).

``classroom/course/release/`` (the student versions, git-ignored) is nbgrader's copy of ``source/``,
and nbgrader's gradebook keeps the released cells: a release that still installs from the old
address is named, not rewritten; ``make assignments-release`` writes it again.

A notebook whose text still holds the old address somewhere else (a sentence, an output) is named
too: that copy is not one this tool knows, so its source (``chapters/src``) needs editing.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

try:
    from book.tools.bilingual import ROOT, SourceError, install_cell, installed_from, repository_branch, repository_url
except ModuleNotFoundError as error:  # run as a file instead of a module
    raise SystemExit(f"run it from the repository's root as a module: python -m book.tools.repository ({error})") from None

# A link into the library's sources, as book.tools.build_chapters writes it: ](URL/blob/BRANCH/normlib/…)
LIBRARY_LINK = re.compile(r"\]\((?P<url>[^()\s]+?)/blob/(?P<branch>[^()\s]+?)/(?P<path>(?:normlib|book/normlib_book|classroom/normlib_classroom|benchmarks/normlib_benchmarks)/[^()\s]*)\)")


def notebooks(root: Path) -> list[Path]:
    """The committed notebooks that embed the address: the chapters and the assignments' sources."""
    found = [*sorted((root / "chapters" / "ko").glob("*.ipynb")), *sorted((root / "chapters" / "en").glob("*.ipynb")),
             *sorted((root / "classroom" / "course" / "source").glob("*/*.ipynb"))]
    return [p for p in found if ".ipynb_checkpoints" not in p.parts]


def releases(root: Path) -> list[Path]:
    """The student versions nbgrader wrote (``make assignments-release``), if any."""
    return sorted(p for p in (root / "classroom" / "course" / "release").glob("*/*.ipynb") if ".ipynb_checkpoints" not in p.parts)


@dataclass
class Report:
    """What differs in one notebook, and the address it held."""
    path: Path
    old: str | None = None
    install: bool = False                     # the install cell differs
    links: int = 0                            # library links that differ
    problems: list[str] = field(default_factory=list)

    @property
    def differs(self) -> bool:
        return self.install or bool(self.links)

    def what(self) -> str:
        parts = ["the install cell"] if self.install else []
        if self.links:
            parts.append(f"{self.links} library link{'s' if self.links > 1 else ''}")
        return " and ".join(parts)


def follow(nb: nbformat.NotebookNode, path: Path, url: str, branch: str) -> Report:
    """Make ``nb``'s copies of the address ``url`` (and of ``branch`` in the library links), in place."""
    report = Report(path)
    code = [c for c in nb.cells if c.cell_type == "code"]
    old = installed_from(code[0].source) if code else None
    if old is None:
        report.problems.append("its first code cell is not the install cell (book.tools.bilingual.install_cell)")
    else:
        report.old = old
        korean = "ko" in path.parts or path.parent.name.endswith("_ko")   # chapters/ko/…, …/01_layernorm_ko/…
        expected = install_cell(url, "ko" if korean else "en").source
        if code[0].source != expected:
            code[0].source = expected
            report.install = True
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue

        def relink(m: re.Match) -> str:
            if (m["url"], m["branch"]) == (url, branch):
                return m.group(0)
            report.links += 1
            return f"]({url}/blob/{branch}/{m['path']})"
        cell.source = LIBRARY_LINK.sub(relink, cell.source)
    if report.old and report.old != url:
        stray = re.compile(re.escape(report.old) + r"(?![\w-]|\.\w)")     # not a longer address
        left = [i for i, c in enumerate(nb.cells) if stray.search(json.dumps(c, ensure_ascii=False))]
        if left:
            report.problems.append(f"cell(s) {', '.join(map(str, left))} still hold {report.old} where this tool "
                                   f"does not rewrite it: edit the source (chapters/src, classroom/course/src)")
    return report


def run(root: Path = ROOT, check: bool = False, out=sys.stdout) -> int:
    """Check or rewrite every copy under ``root``; print what differs; 0 when all follow _config.yml."""
    try:
        url, branch = repository_url(root), repository_branch(root)
    except (OSError, SourceError) as error:
        print(f"cannot read repository.url from {root / '_config.yml'}: {error}", file=out)
        return 2
    shown = lambda p: p.relative_to(root).as_posix()
    status, same = 0, 0
    for path in notebooks(root):
        nb = nbformat.read(path, as_version=4)
        report = follow(nb, path, url, branch)
        for problem in report.problems:
            print(f"PROBLEM {shown(path)}: {problem}", file=out)
            status = 1
        if not report.differs:
            same += 1
        elif check:
            print(f"{shown(path)}: out of date: {report.what()} (it installs from {report.old}; "
                  f"_config.yml says {url}, branch {branch})", file=out)
            status = 1
        else:
            nbformat.write(nb, path)
            print(f"rewrote {shown(path)}: {report.what()} (outputs kept)", file=out)
    stale = []
    for path in releases(root):
        code = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
        if code and installed_from(code[0].source) not in (None, url):
            stale.append(path)
            print(f"{shown(path)}: the install cell installs from {installed_from(code[0].source)}, not {url}", file=out)
    if stale:
        print("the student versions in classroom/course/release/ are nbgrader's: write them again with "
              "`make assignments-release` (this tool does not edit them)", file=out)
        status = max(status, 1) if check else status
    print(f"{same} notebook(s) already follow {url} (branch {branch})" if same else
          f"no notebook already followed {url} (branch {branch})", file=out)
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m book.tools.repository", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 naming every file that differs")
    parser.add_argument("--root", type=Path, default=ROOT, help="the book's folder (default: this repository)")
    args = parser.parse_args(argv)
    return run(args.root.resolve(), check=args.check)


if __name__ == "__main__":
    sys.exit(main())
