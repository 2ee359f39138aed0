"""The book builds with Jupyter Book 1 with warnings treated as errors, and every page in the
table of contents comes out as HTML."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent


def toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [c["file"] for c in part.get("chapters", [])]
    return files


@pytest.fixture(scope="session")
def built_book(tmp_path_factory) -> Path:
    jb = Path(sys.executable).parent / "jupyter-book"
    if not jb.exists():
        pytest.fail(f"jupyter-book is not installed next to {sys.executable}; run the README's setup")
    out = tmp_path_factory.mktemp("book")
    result = subprocess.run(
        [str(jb), "build", str(ROOT), "--builder", "html", "-W", "--keep-going", "--path-output", str(out)],
        capture_output=True, text=True, timeout=600,
    )
    if result.returncode != 0:
        pytest.fail("jupyter-book build -W failed:\n" + result.stdout[-4000:] + result.stderr[-4000:])
    return out / "_build" / "html"


def test_every_toc_page_is_built(built_book):
    for f in toc_files():
        page = built_book / f"{f}.html"
        assert page.exists(), f"{page} missing"
        assert page.stat().st_size > 1000


def test_chapter_pages_carry_their_outputs(built_book):
    html = (built_book / "chapters" / "en" / "01_why_normalize.html").read_text(encoding="utf-8")
    assert "max abs difference" in html   # the stored outputs made it into the page
    html_ko = (built_book / "chapters" / "ko" / "01_why_normalize.html").read_text(encoding="utf-8")
    assert "배치 정규화" in html_ko
