"""First contentful paint of two builds of the site, chapter pages, loaded in alternation.

    python benchmarks/first_paint.py --before DIR --after DIR [--rounds 5]

One load of a page says little about its first paint on a shared 2-core machine (±200 ms from run
to run). Here each chapter page of both sites is loaded ``--rounds`` times, before and after in
alternation (so that whatever else the machine does falls on both), each load a first visit in a
fresh browser context (benchmarks/tools/page_weight.measure: empty cache, served from 127.0.0.1). The table
gives each page's median of each site and their ratio, and the median ratio over the pages; it is
written to benchmarks/results/first_paint.md. Build the "before" site from an earlier commit
(``git worktree add /tmp/before <commit>``, then ``python -m book.site.website --out DIR`` there).
It times localhost, not a reader's network: it says whether the page waits longer for its own
work (scripts, fonts, styles) before it paints, and nothing more.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.tools.page_weight import measure, site_pages  # noqa: E402
from book.site.local_site import launch_chromium, serve  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "first_paint.md"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    for site in (args.before, args.after):
        if not (site / "index.html").exists():
            parser.error(f"{site}: not a built site (no index.html); build one with python -m book.site.website --out DIR")
    pages = [p for p in site_pages(args.after) if "/chapters/" in p and p.rsplit("/", 1)[1][:2].isdigit()]
    from playwright.sync_api import sync_playwright

    times: dict[str, dict[str, list[float]]] = {p: {"before": [], "after": []} for p in pages}
    with serve(args.before) as before_url, serve(args.after) as after_url, sync_playwright() as pw:
        browser = launch_chromium(pw)
        for round_ in range(args.rounds):
            for page in pages:
                for name, url, site in (("before", before_url, args.before), ("after", after_url, args.after)):
                    fcp = measure(browser, url, site, page).fcp_ms
                    if fcp is not None:
                        times[page][name].append(fcp)
            print(f"round {round_ + 1}/{args.rounds} done", flush=True)
        browser.close()
    rows, ratios = [], []
    for page, t in times.items():
        b, a = statistics.median(t["before"]), statistics.median(t["after"])
        ratios.append(a / b)
        rows.append(f"| {page} | {b:.0f} ms | {a:.0f} ms | {a / b:.2f} |")
    text = (f"# First contentful paint, before and after ({date.today().isoformat()})\n\n"
            f"`python benchmarks/first_paint.py --before {args.before} --after {args.after} --rounds {args.rounds}`: "
            f"each chapter page loaded {args.rounds} times per site in alternation, medians; headless Chromium, "
            f"127.0.0.1, a fresh context per load. Median ratio after/before over the {len(pages)} pages: "
            f"**{statistics.median(ratios):.2f}** (range {min(ratios):.2f}–{max(ratios):.2f}).\n\n"
            "| page | before | after | after / before |\n|---|---:|---:|---:|\n" + "\n".join(rows) + "\n")
    OUT.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
