"""Make the HTML book load nothing from another host: vendor its browser assets from npm.

Sphinx and myst-nb load MathJax (and the Jupyter widget manager) from CDNs,
and a bare Linux machine has no Korean font. This file

1. runs ``npm ci`` (the exact versions in package.json / package-lock.json) when node_modules is
   missing or older than the lock file;
2. copies only what the book uses into ``book_assets/offline/`` (generated, git-ignored;
   ``book_assets`` is in ``html_static_path``, so it ends up in ``_build/html/_static/offline/``):

   - ``mathjax/tex-chtml.js`` (the combined TeX-to-CommonHTML component Sphinx loads) and the
     ``output/chtml/fonts/woff-v2`` fonts it requests at run time;
   - ``widgets/anywidget-loader.js`` (ours, see book/site/offline_book/): mounts the book's anywidget
     explorers from the widget state stored in the page (only pages whose notebook stores widget
     state load it; no widget manager, no RequireJS);
   - ``fonts/`` NanumGothic (Hangul only, regular and bold) and ``nanum-gothic.css`` (ours);
   - ``print.css`` (ours): the pages on paper, linked with media="print", and ``print.js`` (ours),
     which gives it each display equation's width so that none is wider than the paper;
   - ``accessibility.css`` (ours): contrast and focus rings in both colour modes
     (tests/book/test_accessibility.py);
   - ``narrow-screens.css`` and ``scroll-boxes.js`` (ours): on a phone, wide outputs, code and
     tables scroll inside their own box, which fades at the edge that has more, with a tab stop and
     a name (tests/book/test_browser.py);

3. as a Sphinx extension (``sphinx: local_extensions:`` in _config.yml), does 1 and 2 at the start
   of every build and points ``mathjax_path``, ``nb_ipywidgets_js`` and ``html_css_files`` at the
   copies. When npm is missing (or ``npm ci`` fails) it says so in plain words and leaves Sphinx's
   and myst-nb's CDN defaults in place: the book still builds (with -W), but needs a network.

Run it by hand (``make assets``) to see what is vendored and how big it is:

    python book/site/vendor_assets.py
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NODE_MODULES = ROOT / "node_modules"
PACKAGE_JSON = ROOT / "package.json"
LOCK = ROOT / "package-lock.json"
ASSETS = ROOT / "book_assets"        # the html_static_path entry (_config.yml)
OUT = ASSETS / "offline"             # -> _build/html/_static/offline/
OWN = Path(__file__).resolve().parent / "offline_book"   # our own small JS and CSS

# Paths as Sphinx takes them (relative to _static/).
MATHJAX_PATH = "offline/mathjax/tex-chtml.js"
WIDGETS_LOADER = "offline/widgets/anywidget-loader.js"
# The book's own anywidgets: the front end each notebook stores (``_esm``, ``_css``) is written once
# into a script every widget page shares (cached from page to page) instead of into each page's
# widget state: ``_anywidget_id`` -> (module, stylesheet).
WIDGET_MODULES_FILE = "widgets/anywidget-modules.js"
WIDGET_MODULES = "offline/" + WIDGET_MODULES_FILE
BOOK_WIDGETS = {"normlib_book.explorer.Explorer": (ROOT / "book" / "normlib_book" / "explorer.js",
                                                   ROOT / "book" / "normlib_book" / "explorer.css")}
FONT_CSS = "offline/nanum-gothic.css"
PRINT_CSS = "offline/print.css"
PRINT_JS = "offline/print.js"
A11Y_CSS = "offline/accessibility.css"
NARROW_CSS = "offline/narrow-screens.css"
SCROLL_JS = "offline/scroll-boxes.js"

NO_NPM = ("npm not found: the book will load MathJax from a CDN, "
          "so it needs a network connection; install Node.js/npm for a fully offline book")

# (folder under node_modules, file names or glob patterns, destination folder under OUT).
# Every pattern must match at least one file, or the vendoring is incomplete.
FROM_NPM: list[tuple[str, list[str], str]] = [
    # tex-chtml.js has the TeX packages the book's math uses built in. A macro from a package it
    # autoloads (\boldsymbol, \cancel, \bbox, ...) would be requested from
    # mathjax/input/tex/extensions/<name>.js: tests/book/test_browser.py reports that 404; then add
    # ("mathjax/es5/input/tex/extensions", ["<name>.js"], "mathjax/input/tex/extensions").
    ("mathjax/es5", ["tex-chtml.js"], "mathjax"),
    ("mathjax/es5/output/chtml/fonts/woff-v2", ["*.woff"], "mathjax/output/chtml/fonts/woff-v2"),
    ("mathjax", ["LICENSE"], "mathjax"),
    ("@fontsource/nanum-gothic/files",
     ["nanum-gothic-korean-400-normal.woff2", "nanum-gothic-korean-700-normal.woff2"], "fonts"),
    ("@fontsource/nanum-gothic", ["LICENSE"], "fonts"),
]
FROM_OWN: list[tuple[str, str]] = [
    ("anywidget-loader.js", "widgets"),
    ("nanum-gothic.css", "."),
    ("print.css", "."),
    ("print.js", "."),
    ("accessibility.css", "."),
    ("narrow-screens.css", "."),
    ("scroll-boxes.js", "."),
]
PACKAGES = ["mathjax", "@fontsource/nanum-gothic"]


def _say(msg: str) -> None:
    print(msg, flush=True)


def node_modules_current() -> bool:
    """node_modules was installed by npm after the last change of package.json / the lock file."""
    marker = NODE_MODULES / ".package-lock.json"   # written by npm at the end of every install
    if not marker.exists():
        return False
    newest_spec = max(p.stat().st_mtime for p in (PACKAGE_JSON, LOCK) if p.exists())
    return marker.stat().st_mtime >= newest_spec


def npm_ci(log: Callable[[str], None]) -> bool:
    """Install node_modules when needed. False when there is no (current) node_modules."""
    if node_modules_current():
        return True
    npm = shutil.which("npm")
    if npm is None:
        log(NO_NPM)
        return False
    log("offline book: npm ci (the pinned MathJax and Korean font) ...")
    result = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )
    if result.returncode != 0:
        log(f"npm ci failed (exit {result.returncode}); the book will load MathJax from a CDN, "
            "so it needs a network connection.\n"
            + (result.stdout + result.stderr)[-3000:])
        return False
    return True


def planned_copies() -> list[tuple[Path, Path]] | None:
    """(source, destination) of every vendored file, or None when a source is missing."""
    copies: list[tuple[Path, Path]] = []
    for folder, patterns, dest in FROM_NPM:
        src_dir = NODE_MODULES / folder
        for pattern in patterns:
            found = sorted(src_dir.glob(pattern))
            if not found:
                return None
            copies += [(f, OUT / dest / f.name) for f in found]
    copies += [(OWN / name, OUT / dest / name) for name, dest in FROM_OWN]
    return copies


def _versions() -> str:
    lines = ["Vendored into the HTML book by book/site/vendor_assets.py from npm (package-lock.json):"]
    for name in PACKAGES:
        meta = json.loads((NODE_MODULES / name / "package.json").read_text(encoding="utf-8"))
        lines.append(f"  {name}@{meta['version']}  license: {meta.get('license', '?')}")
    lines.append("Ours (book/site/offline_book/): " + ", ".join(f"{d}/{n}".removeprefix("./") for n, d in FROM_OWN))
    return "\n".join(lines) + "\n"


@contextmanager
def _locked() -> Iterator[None]:
    """One vendoring at a time (pytest-xdist workers each build the book)."""
    ASSETS.mkdir(exist_ok=True)
    try:
        import fcntl
    except ImportError:   # Windows: no lock
        yield
        return
    with open(ASSETS / ".lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def vendor(log: Callable[[str], None] = _say) -> tuple[bool, bool]:
    """Install and copy the assets: (book_assets/offline holds everything the book needs,
    a file in it was added, replaced or removed)."""
    with _locked():
        have_npm_files = npm_ci(log)
        copies = planned_copies() if have_npm_files else None
        if copies is None:
            if have_npm_files:
                log("offline book: node_modules lacks a vendored file (see FROM_NPM in "
                    "book/site/vendor_assets.py); run `npm ci`.")
            # Leave nothing half-vendored: the build then uses the CDN defaults throughout.
            existed = OUT.exists()
            shutil.rmtree(OUT, ignore_errors=True)
            return False, existed
        changed = False
        wanted = {dst for _, dst in copies}
        for src, dst in copies:
            st = src.stat()
            if dst.exists() and dst.stat().st_size == st.st_size and dst.stat().st_mtime == st.st_mtime:
                continue
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
            changed = True
        for path, text in ((OUT / "VENDORED.txt", _versions()), (OUT / WIDGET_MODULES_FILE, widget_modules_script())):
            wanted.add(path)
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                path.write_text(text, encoding="utf-8")
                changed = True
        for path in sorted(OUT.rglob("*"), reverse=True):   # drop what is no longer vendored
            if path.is_file() and path not in wanted:
                path.unlink()
                changed = True
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()
        return True, changed


def size_report() -> str:
    def size(p: Path) -> int:
        return sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) if p.is_dir() else p.stat().st_size
    parts = [f"{p.relative_to(OUT)} {size(p) / 1e6:.2f} MB" for p in sorted(OUT.iterdir()) if p.is_dir()]
    return f"{size(OUT) / 1e6:.2f} MB in {OUT.relative_to(ROOT)}/ ({', '.join(parts)})"


# --- Sphinx extension -------------------------------------------------------------------------

def _configure(app, config) -> None:
    from sphinx.util import logging

    logger = logging.getLogger(__name__)
    # logger.info, not logger.warning: the book is built with -W, and a missing npm is a choice
    # of the machine, not an error in the book.
    complete, app.vendored_assets_changed = vendor(log=logger.info)
    if not complete:
        return
    config.mathjax_path = MATHJAX_PATH
    # The pages' widgets are anywidgets (normlib_book.explorer): a loader of a few kB mounts them
    # from the stored state, in place of RequireJS and the 3.6 MB Jupyter widget manager.
    config.nb_ipywidgets_js = {WIDGET_MODULES: {}, WIDGETS_LOADER: {}}
    # read once per build: every page with widget state compares its stored modules with these
    app.book_widget_sources = _book_widget_sources()
    # The print stylesheet last, after the theme's: it overrides the theme on paper.
    config.html_css_files = [*config.html_css_files, FONT_CSS, A11Y_CSS, NARROW_CSS, (PRINT_CSS, {"media": "print"})]
    config.html_js_files = [*config.html_js_files, PRINT_JS, SCROLL_JS]
    if ASSETS.name not in config.html_static_path:
        config.html_static_path = [*config.html_static_path, ASSETS.name]
    logger.info(f"offline book: {size_report()}")


def _drop_duplicate_scripts(app, pagename, templatename, context, doctree) -> None:
    """Emit each script once.

    Sphinx 7.4 keeps a script that an extension adds after the builder started (sphinx-thebe's
    ``const THEBE_JS_URL = ...``, sphinx-togglebutton's selector) twice: once with filename None
    as added, once with filename '' when it re-reads the registry before writing. The second
    ``const`` declaration is a JavaScript error (SyntaxError: Identifier 'THEBE_JS_URL' has
    already been declared) on every page.
    """
    scripts = context.get("script_files")
    if not isinstance(scripts, list):
        return
    seen, unique = set(), []
    for js in scripts:
        attributes = getattr(js, "attributes", {})
        key = (getattr(js, "filename", js) or "", getattr(js, "priority", 500),
               tuple(sorted((k, str(v)) for k, v in attributes.items())))
        if key not in seen:
            seen.add(key)
            unique.append(js)
    scripts[:] = unique


def _book_widget_sources() -> dict[str, dict[str, str]]:
    return {key: {"esm": js.read_text(encoding="utf-8"), "css": css.read_text(encoding="utf-8")}
            for key, (js, css) in BOOK_WIDGETS.items()}


def widget_modules_script() -> str:
    """A classic script (it loads from file:// too) that hands the book's widget modules to
    anywidget-loader.js."""
    body = json.dumps(_book_widget_sources(), ensure_ascii=False).replace("</", "<\\/")
    return ("// The book's anywidget front ends, written by book/site/vendor_assets.py from book/normlib_book/: the pages'\n"
            "// stored widget state refers to them by _anywidget_id (anywidget-loader.js).\n"
            f"window.anywidgetModules = Object.assign(window.anywidgetModules || {{}}, {body});\n")


def _share_widget_modules(app, pagename, templatename, context, doctree) -> None:
    """Drop from the page's stored widget state the front end (``_esm``, ``_css``) of every book
    widget whose stored source is the current one: anywidget-modules.js carries it. A widget that
    stored another version keeps its own (it still renders as it was executed)."""
    scripts = context.get("script_files")
    sources = getattr(app, "book_widget_sources", None)     # None: nothing vendored (CDN fallback)
    if not isinstance(scripts, list) or sources is None:
        return
    from myst_nb.core.render import sanitize_script_content

    for index, js in enumerate(scripts):
        attributes = getattr(js, "attributes", {})
        if attributes.get("type") != "application/vnd.jupyter.widget-state+json":
            continue
        stored = json.loads(attributes["body"])
        for model in stored.get("state", {}).values():
            state = model.get("state", {})
            source = sources.get(state.get("_anywidget_id"))
            if source and state.get("_esm") == source["esm"] and state.get("_css") == source["css"]:
                del state["_esm"], state["_css"]
        body = sanitize_script_content(json.dumps(stored, ensure_ascii=False))
        scripts[index] = type(js)(js.filename, priority=js.priority, **{**attributes, "body": body})


def _rewrite_all_when_assets_changed(app, env, added, changed, removed) -> list[str]:
    """Sphinx copies static files (and stamps their ?v= checksums into the pages) only when it
    writes pages; new vendored files alone would leave an incremental build stale."""
    return sorted(env.found_docs) if getattr(app, "vendored_assets_changed", False) else []


def setup(app):
    # Before myst-nb reads nb_ipywidgets_js (builder-inited) and before Sphinx copies static files.
    app.connect("config-inited", _configure, priority=100)
    app.connect("env-get-outdated", _rewrite_all_when_assets_changed)
    # After every extension has added its page scripts (MathJax, myst-nb's widget scripts: 500).
    app.connect("html-page-context", _drop_duplicate_scripts, priority=900)
    app.connect("html-page-context", _share_widget_modules, priority=901)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}


def main() -> int:
    if vendor()[0]:
        print(f"Offline book assets: {size_report()}")
    else:
        print("Offline book assets: not vendored; the book will use CDNs (see above).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
