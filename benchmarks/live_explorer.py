"""How long one update of the live explorer takes (normlib.book.widgets.live_explorer).

    make bench-widgets        # or: .venv/bin/python benchmarks/live_explorer.py

A slider change redraws the block from normlib, renders it to PNG and recomputes the printed
statistics, synchronously in the kernel. The target is < 150 ms per update on this machine;
this prints the median and the worst of repeated updates per method and per slider, and
writes the table to benchmarks/results/live_explorer.md. Timings belong here, never in tests.
"""

from __future__ import annotations

import platform
import statistics
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import torch  # noqa: E402

from normlib.book import viz, widgets  # noqa: E402

TARGET_MS = 150.0
REPEATS = 15


def timed(change) -> list[float]:
    times = []
    for k in range(REPEATS):
        start = time.perf_counter()
        change(k)
        times.append((time.perf_counter() - start) * 1000)
    return times


def main() -> int:
    torch.set_num_threads(1)
    rows = []
    for lang in ("ko", "en"):
        viz.setup(lang)
        live = widgets.live_explorer(lang)
        live.n.value, live.c.value, live.hw.value = 4, 12, 8  # the largest block the sliders allow
        for method in ("batch", "layer", "instance", "group", "rms"):
            live.method.value = method
            times = timed(lambda k, live=live: setattr(live.offset, "value", float(k % 10)))
            rows.append((lang, method, "offset", times))
        live.method.value = "group"
        rows.append((lang, "group", "C (G follows)", timed(lambda k, live=live: setattr(live.c, "value", 12 - (k % 2) * 4))))
        rows.append((lang, "group", "which", timed(lambda k, live=live: setattr(live.which, "value", k % 4))))
        live.method.value = "layer"
        rows.append((lang, "layer", "eps", timed(lambda k, live=live: setattr(live.eps, "value", 10.0 ** -(k % 8)))))
    lines = [
        f"# Live explorer: one update (ms), {REPEATS} updates each, largest block (N=4, C=12, H·W=8)",
        "",
        f"Python {platform.python_version()}, torch {torch.__version__}, matplotlib {matplotlib.__version__}, "
        f"{platform.machine()}, 1 thread. Target: < {TARGET_MS:.0f} ms.",
        "",
        "| lang | method | slider | median | worst | median / target |",
        "|---|---|---|---:|---:|---:|",
    ]
    worst_median = 0.0
    for lang, method, slider, times in rows:
        median = statistics.median(times)
        worst_median = max(worst_median, median)
        lines.append(f"| {lang} | {method} | {slider} | {median:.1f} | {max(times):.1f} | {median / TARGET_MS:.2f} |")
    lines += ["", f"Slowest median: {worst_median:.1f} ms ({'under' if worst_median < TARGET_MS else 'OVER'} the target)."]
    report = "\n".join(lines) + "\n"
    out = Path(__file__).resolve().parent / "results" / "live_explorer.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text(report, encoding="utf-8")
    print(report)
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
