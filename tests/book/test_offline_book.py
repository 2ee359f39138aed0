"""The built site (both books and the landing page) loads nothing from another host, read statically (no browser; test_browser.py
watches a real one): every resource a page or stylesheet names is on the book's own host, and
the vendored assets (book/site/vendor_assets.py) stay small."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

# what this module needs beyond Python (tests/conftest.py: not in make test-fast)
pytestmark = pytest.mark.site

# MathJax is 1.5 MB of it (the widget manager, 3.6 MB, went with the anywidget explorer).
VENDORED_LIMIT_MB = 6.5

# Attributes through which a page makes the browser fetch something. <a href> is not among them:
# a link to Colab, Binder or the PyTorch docs is followed only when the reader clicks it.
LOADING_ATTRIBUTES = {
    "script": ("src",),
    "img": ("src", "srcset"),
    "iframe": ("src",),
    "source": ("src", "srcset"),
    "video": ("src", "poster"),
    "audio": ("src",),
    "embed": ("src",),
    "object": ("data",),
    "input": ("src",),
}
# <link rel=...> values that fetch nothing.
NON_LOADING_LINK_RELS = {"canonical", "alternate", "next", "prev", "index", "search", "author",
                         "help", "license", "bookmark", "nofollow", "noopener", "noreferrer"}
EXTERNAL = re.compile(r"^\s*(?:[a-z][a-z0-9+.-]*:)?//", re.IGNORECASE)   # http://, https://, //host
CSS_URL = re.compile(r"""url\(\s*['"]?([^'")]+)|@import\s+['"]([^'"]+)""", re.IGNORECASE)


def external(url: str) -> bool:
    return bool(EXTERNAL.match(url))


class ResourceLinks(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.resources: list[tuple[str, str]] = []   # (tag/attribute, url)
        self.cdn_only = False
        self._in_style = False

    def handle_starttag(self, tag, attrs):
        a = {k: (v or "") for k, v in attrs}
        if tag == "script" and "data-jupyter-widgets-cdn-only" in a:
            self.cdn_only = True
        if tag == "link":
            rels = set(a.get("rel", "").lower().split())
            if a.get("href") and not rels <= NON_LOADING_LINK_RELS:
                self.resources.append((f"link[rel={a.get('rel')}]", a["href"]))
        for attr in LOADING_ATTRIBUTES.get(tag, ()):
            for url in re.split(r",\s+", a.get(attr, "")) if attr == "srcset" else [a.get(attr, "")]:
                if url.strip():
                    self.resources.append((f"{tag}[{attr}]", url.strip().split()[0]))
        if "style" in a:
            self.resources += [("style=", u) for u in css_urls(a["style"])]
        self._in_style = tag == "style"

    def handle_endtag(self, tag):
        self._in_style = False

    def handle_data(self, data):
        if self._in_style:
            self.resources += [("<style>", u) for u in css_urls(data)]


def css_urls(css: str) -> list[str]:
    return [m.group(1) or m.group(2) for m in CSS_URL.finditer(css)]


def html_pages(book: Path) -> list[Path]:
    """Every page of the site, not the two books' one-line redirects (<lang>/index.html)."""
    return sorted(p for p in book.rglob("*.html") if "_static" not in p.parts
                  and 'http-equiv="refresh"' not in p.read_text(encoding="utf-8")[:400])


def test_no_page_loads_a_resource_from_another_host(offline_site):
    pages = html_pages(offline_site)
    assert len(pages) >= 12, [p.name for p in pages]
    problems = []
    for page in pages:
        parser = ResourceLinks()
        parser.feed(page.read_text(encoding="utf-8"))
        name = page.relative_to(offline_site).as_posix()
        problems += [f"{name}: {where} {url}" for where, url in parser.resources if external(url)]
        if parser.cdn_only:
            problems.append(f"{name}: a script has data-jupyter-widgets-cdn-only (CDN-only widget loading)")
    assert not problems, "resources from other hosts:\n" + "\n".join(problems)


def test_no_stylesheet_loads_from_another_host(offline_site):
    problems = []
    for css in sorted(c for lang in ("ko", "en") for c in (offline_site / lang / "_static").rglob("*.css")):
        for url in css_urls(css.read_text(encoding="utf-8", errors="replace")):
            if external(url):
                problems.append(f"{css.relative_to(offline_site).as_posix()}: {url}")
    assert not problems, "stylesheets loading from other hosts:\n" + "\n".join(problems)


def test_math_and_korean_font_come_from_the_book(offline_site):
    for page in html_pages(offline_site):
        html = page.read_text(encoding="utf-8")
        name = page.relative_to(offline_site).as_posix()
        assert "offline/nanum-gothic.css" in html, f"{name}: the Korean web font's stylesheet is not linked"
        if 'class="math' in html:
            assert re.search(r'<script[^>]* src="[^"]*_static/offline/mathjax/tex-chtml\.js', html), \
                f"{name}: has math but does not load the vendored MathJax"


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_vendored_assets_are_small(offline_site, lang):
    """Per book: each language's book is a site of its own, with its own _static/."""
    folder = offline_site / lang / "_static" / "offline"
    files = [f for f in folder.rglob("*") if f.is_file()]
    total = sum(f.stat().st_size for f in files)
    largest = sorted(files, key=lambda f: f.stat().st_size, reverse=True)[:3]
    print(f"\nvendored assets: {total / 1e6:.2f} MB in {len(files)} files; largest: "
          + ", ".join(f"{f.relative_to(folder).as_posix()} {f.stat().st_size / 1e6:.2f} MB" for f in largest))
    assert total < VENDORED_LIMIT_MB * 1e6, f"{total / 1e6:.2f} MB vendored, limit {VENDORED_LIMIT_MB} MB"


@pytest.mark.parametrize("url, outside", [
    ("https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js", True),
    ("//fonts.googleapis.com/css", True),
    ("HTTP://example.org/a.css", True),
    ("../../_static/offline/mathjax/tex-chtml.js", False),
    ("_static/favicon.svg", False),
    ("data:image/svg+xml;charset=utf-8,%3Csvg xmlns='http://www.w3.org/2000/svg'", False),
])
def test_external_tells_hosts_apart(url, outside):
    assert external(url) is outside
