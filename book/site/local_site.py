"""A built site served on 127.0.0.1, and browser contexts that reach no other host.

Used by the browser tests (tests/book/test_browser.py, tests/book/test_search.py) and by the tools that
measure the built site in Chromium (benchmarks/tools/search_recall.py):

    with serve(site_dir) as url:                       # http://127.0.0.1:<free port>
        context = isolated_context(browser, url, seen)  # Playwright: other hosts aborted, listed in seen
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        """A browser that leaves a page before a reply ends (a search summary still loading) is no error."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@contextmanager
def serve(directory: Path):
    """``directory`` over HTTP on 127.0.0.1 at a free port, while the block runs; yields its URL."""
    server = QuietServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(directory)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def isolated_context(browser, book_url: str, seen: list[str] | None = None, width: int = 1280):
    """A browser context ``width`` pixels wide whose requests to any host but the book's are aborted
    (and appended to ``seen`` when given): nothing leaves the machine."""
    context = browser.new_context(viewport={"width": width, "height": 900}, service_workers="block")
    host = urlsplit(book_url).netloc

    def elsewhere(url: str) -> bool:
        parts = urlsplit(url)
        return parts.scheme in ("http", "https", "ws", "wss") and parts.netloc != host

    def abort(route):
        if seen is not None:
            seen.append(route.request.url)
        route.abort()

    context.route(elsewhere, abort)
    return context


# Debian's Chromium (which .ci/run installs), headless, reaching nothing by itself: the one way the
# tests, benchmarks/tools/search_recall.py and book/site/axe_audit.py start it.
CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def launch_chromium(playwright):
    """``playwright.chromium`` started as the book's checks start it (Playwright's sync API)."""
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
