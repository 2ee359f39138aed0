"""What a run produced and how it is read: the :class:`Row` of one measurement, the
:class:`Results` of a run and their JSON, the Markdown table, and issue 5's three targets.

Times are shown as ratios to torch's built-in: the torch row of the same (op, shape, mode)
is what every other row divides by.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from normlib.messages import say

from .machine import MiB
from .variants import Shape

__all__ = [
    "Row", "Results", "load", "shape_label", "largest_shapes", "reference",
    "markdown_table", "targets", "targets_markdown", "size_check",
]


@dataclass
class Row:
    """One measurement: a variant of an op at a shape, in a mode. Times in seconds, memory in bytes.

    ``seconds`` is the median of ``times``; ``gbps`` and ``gflops`` are per that median;
    ``fraction`` is ``gbps`` over the copy bandwidth (``None`` when none was given);
    ``saved_bytes`` is ``None`` in forward mode; ``compile_seconds``, ``graphs`` (how many
    graphs torch.compile made: 1 means no graph break) and ``compile_cached`` (inductor found
    every graph's code in its on-disk cache, from an earlier run: the compile time is then
    mostly tracing) are for the compiled variant only.
    """

    op: str
    variant: str
    shape: Shape
    mode: str
    seconds: float
    times: List[float]
    gbps: float
    gflops: float
    fraction: Optional[float]
    peak_bytes: int
    saved_bytes: Optional[int] = None
    compile_seconds: Optional[float] = None
    graphs: Optional[int] = None
    compile_cached: Optional[bool] = None

    @property
    def spread(self) -> float:
        """Interquartile range of the times over their median: how noisy this measurement was."""
        if len(self.times) < 4:
            return 0.0
        q1, _, q3 = statistics.quantiles(self.times, n=4)
        return (q3 - q1) / self.seconds


@dataclass
class Results:
    """A run: its rows; the copy bandwidth (GB/s) the fractions divide by and the matmul speed
    (GFLOP/s) of the roofline; the machine (:func:`~normlib_benchmarks.machine.machine_info`); the
    conditions of the run (each bandwidth measurement, the load average before and after,
    whether freed memory was kept); how long it took (s); and the compile report of each op
    (:func:`~normlib_benchmarks.graphs.graph_breaks`)."""

    rows: List[Row]
    bandwidth: float
    matmul_gflops: float
    machine: Dict[str, object]
    conditions: Dict[str, object] = field(default_factory=dict)
    seconds: float = 0.0
    compile_report: List[Dict[str, object]] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> "Results":
        data = json.loads(text)
        data["rows"] = [Row(**{**r, "shape": tuple(r["shape"])}) for r in data["rows"]]
        return cls(**data)


def load(path) -> Results:
    """Read a run written by ``benchmarks/normalization.py`` (its ``.json``): the chapter uses
    it to show the last full run and say when and where it was made."""
    with open(path, encoding="utf-8") as f:
        return Results.from_json(f.read())


RESULTS = "benchmarks/results/normalization.json"   # where `make bench` writes its last run


def results_file(name: str, start=None) -> Optional[Path]:
    """Where a benchmark's committed results ``benchmarks/results/<name>.json`` are: in ``start``
    (default: the working folder) or the nearest folder above it that has them (a chapter runs in
    ``chapters/ko``), else in the repository this normlib was installed from (``make lab`` runs an
    editable install); ``None`` outside the book's repository (Colab, a copied notebook).

    >>> results_file("no_such_benchmark", "/") is None
    True
    """
    results = Path(RESULTS).with_name(f"{name}.json")
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents, Path(__file__).resolve().parents[2]):
        if (folder / results).exists():
            return folder / results
    return None


def save_results(out, name: str, result, text: str, indent: Optional[int] = None) -> None:
    """Write one benchmark run into the folder ``out`` (``benchmarks/results`` by default in the
    scripts): ``result`` (a dict, or JSON text already made) as ``<name>.json``, which the chapters
    read back with :func:`committed_results`, and the report ``text`` as ``<name>.md``; print the report."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    data = result if isinstance(result, str) else json.dumps(result, indent=indent, ensure_ascii=False)
    (out / f"{name}.json").write_text(data + "\n", encoding="utf-8")
    (out / f"{name}.md").write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    print(text)


def committed_results(name: str, make_target: str, start=None) -> dict:
    """The committed results of ``make <make_target>`` (``benchmarks/results/<name>.json``) as a
    dict, for a chapter that reads a sweep too long for a notebook. Outside the book's repository
    it raises ``FileNotFoundError`` saying what is missing and how to get it, in the page's language.

    >>> committed_results("no_such_benchmark", "bench-none", "/")
    Traceback (most recent call last):
        ...
    FileNotFoundError: benchmarks/results/no_such_benchmark.json not found: ...
    """
    path = results_file(name, start)
    if path is None:
        raise FileNotFoundError(say(
            en=f"benchmarks/results/{name}.json not found: this cell reads the results that "
               f"make {make_target} committed to the book's repository. Open the notebook inside a clone of "
               f"the repository (git clone, then make lab), or first run there: make {make_target}.",
            ko=f"benchmarks/results/{name}.json 파일이 없습니다. 이 셀은 책 저장소에 커밋된 벤치마크 결과"
               f"(make {make_target})를 읽습니다. 저장소를 복제한 뒤(git clone, make lab) 그 안에서 노트북을 "
               f"열거나, 먼저 그곳에서 다음을 실행하세요: make {make_target}."))
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def last_run(start=None, name: str = "normalization") -> Optional[Results]:
    """The last ``make bench`` run, from :data:`RESULTS` (see :func:`results_file`); ``None``
    outside the book's repository. Its numbers are medians of many repeats, measured once and
    committed: a chapter quotes them instead of timing on a machine whose load it cannot know.
    ``name="dyt"`` reads ``make bench-dyt``'s ``benchmarks/results/dyt.json`` instead (chapter 11).

    >>> last_run("/") is None or isinstance(last_run("/"), Results)
    True
    """
    path = results_file(name, start)
    return None if path is None else load(path)


def shape_label(shape: Sequence[int]) -> str:
    """``"8192×768"``: a shape as the table and the figures print it.

    >>> shape_label((8192, 768))
    '8192×768'
    """
    return "×".join(str(s) for s in shape)


def largest_shapes(rows: Sequence[Row]) -> Dict[str, Shape]:
    """The largest shape (most elements) of each op in ``rows``, in the order the ops appear;
    the first one seen wins a tie."""
    largest: Dict[str, Shape] = {}
    for r in rows:
        if r.op not in largest or math.prod(r.shape) > math.prod(largest[r.op]):
            largest[r.op] = tuple(r.shape)
    return largest


def _key(r: Row) -> Tuple:
    return r.op, tuple(r.shape), r.mode


def reference(rows: Sequence[Row]) -> Dict[Tuple, Row]:
    """The torch row of each (op, shape, mode): what the ratios divide by."""
    return {_key(r): r for r in rows if r.variant == "torch"}


def _ratio(value: Optional[float], ref: Optional[float]) -> str:
    if value is None or ref is None or ref == 0:
        return "–"
    return f"{value / ref:.2f}"


def _fraction(r: Row, bandwidth: Optional[float]) -> Optional[float]:
    """The row's share of the copy bandwidth: its own, else from ``bandwidth``, else None."""
    if r.fraction is not None:
        return r.fraction
    return r.gbps / bandwidth if bandwidth else None


def size_check(rows: Sequence[Row]) -> List[Dict[str, object]]:
    """Time must grow with size. For each (op, mode, variant), its shapes in order of elements:
    every pair of neighbours where the larger input did not take longer than the smaller one,
    as ``{"op", "mode", "variant", "shape", "seconds", "larger", "larger_seconds"}``. A run on a
    quiet machine gives none; a pair here means that one of the two was measured while
    something else ran (a run writes them into its results rather than dropping the rows).

    >>> fast = lambda shape, s: Row("layer_norm", "torch", shape, "forward", s, [s], 1.0, 1.0, None, 0)
    >>> [(d["shape"], d["larger"]) for d in size_check([fast((4, 8), 2.0), fast((4, 16), 1.0), fast((4, 32), 3.0)])]
    [((4, 8), (4, 16))]
    """
    series: Dict[Tuple, List[Row]] = {}
    for r in rows:
        series.setdefault((r.op, r.mode, r.variant), []).append(r)
    out = []
    for (op, mode, variant), group in series.items():
        group = sorted(group, key=lambda r: math.prod(r.shape))
        for small, large in zip(group, group[1:]):
            if math.prod(large.shape) > math.prod(small.shape) and large.seconds <= small.seconds:
                out.append({"op": op, "mode": mode, "variant": variant, "shape": tuple(small.shape),
                            "seconds": small.seconds, "larger": tuple(large.shape), "larger_seconds": large.seconds})
    return out


def markdown_table(rows: Sequence[Row], bandwidth: Optional[float] = None,
                   machine: Optional[Dict[str, object]] = None) -> str:
    """The rows as a Markdown table, with time and memory as ratios to torch's built-in.

    Columns: median time, spread (interquartile range over median: noise), time ÷ torch,
    GB/s of minimal traffic and its share of the copy bandwidth, peak memory and ÷ torch,
    bytes saved for backward and ÷ torch, compile time (first call), graphs and whether
    inductor's cache had them. Preceded by a line on the machine when ``machine``
    (:func:`~normlib_benchmarks.machine.machine_info`) is given. A row of a pair that
    :func:`size_check` flags has ⚠ after its median.

    >>> from normlib_benchmarks import compare
    >>> rows = compare("layer_norm", (8, 16), "forward", variants=("hand", "torch"), repeats=2)
    >>> table = markdown_table(rows, bandwidth=10.0)
    >>> [line.split(" | ")[3] for line in table.splitlines()[2:]], table.splitlines()[-1].split(" | ")[6]
    (['hand', 'torch'], '1.00')
    """
    lines = []
    if machine:
        lines += [f"{machine['cpu']}, {machine['cores']} cores, torch {machine['torch']} with "
                  f"{machine['threads']} threads, {machine['date']}."
                  + (f" Copy bandwidth {bandwidth:.1f} GB/s." if bandwidth else ""), ""]
    lines += [
        "| op | shape | mode | variant | median ms | spread | time ÷ torch | GB/s | of copy | "
        "peak MiB | peak ÷ torch | saved MiB | saved ÷ torch | compile s (graphs) |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    ref = reference(rows)
    flagged = {(d["op"], d["mode"], d["variant"], shape) for d in size_check(rows) for shape in (d["shape"], d["larger"])}
    for r in rows:
        t = ref.get(_key(r))
        fraction = _fraction(r, bandwidth)
        mark = " ⚠" if (r.op, r.mode, r.variant, tuple(r.shape)) in flagged else ""
        cells = [
            r.op, shape_label(r.shape), r.mode, r.variant,
            f"{r.seconds * 1e3:.3g}{mark}", f"{100 * r.spread:.0f}%",
            _ratio(r.seconds, t and t.seconds), f"{r.gbps:.1f}",
            "–" if fraction is None else f"{100 * fraction:.0f}%",
            f"{r.peak_bytes / MiB:.1f}", _ratio(r.peak_bytes, t and t.peak_bytes),
            "–" if r.saved_bytes is None else f"{r.saved_bytes / MiB:.1f}",
            _ratio(r.saved_bytes, t and t.saved_bytes),
            "–" if r.compile_seconds is None else
            f"{r.compile_seconds:.1f} ({r.graphs}{', cached' if r.compile_cached else ''})",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def targets(rows: Sequence[Row], bandwidth: Optional[float] = None) -> List[Dict[str, object]]:
    """Read issue 5's three targets from a run. Each: its name, every value it was read from,
    the threshold, and whether all of them meet it.

    1. the hand-derived backward saves no more for backward than torch + 5 % (each op and shape);
    2. the compiled readable LayerNorm's forward+backward takes ≤ 1.3 × torch's time (each shape);
    3. torch's built-in and the compiled version move > 50 % of the copy bandwidth at the
       largest size of each op, in each mode.

    A target with nothing to read from (a variant or op not in the run) is left out.

    >>> from normlib_benchmarks import compare
    >>> rows = compare("layer_norm", (8, 16), "forward+backward", variants=("hand", "torch"), repeats=2)
    >>> [(t["name"], t["met"]) for t in targets(rows)]
    [('hand-derived backward saves ≤ 1.05 × torch', True)]
    """
    ref = reference(rows)
    out = []

    saved = [(r, r.saved_bytes / ref[_key(r)].saved_bytes)
             for r in rows if r.variant == "hand" and r.saved_bytes is not None and _key(r) in ref]
    if saved:
        out.append({"name": "hand-derived backward saves ≤ 1.05 × torch", "threshold": 1.05, "kind": "at most",
                    "values": [(r.op, shape_label(r.shape), v) for r, v in saved],
                    "met": all(v <= 1.05 for _, v in saved)})

    timed = [(r, r.seconds / ref[_key(r)].seconds)
             for r in rows if r.variant == "compiled" and r.op == "layer_norm" and r.mode == "forward+backward"
             and _key(r) in ref]
    if timed:
        out.append({"name": "compiled LayerNorm forward+backward ≤ 1.3 × torch's time", "threshold": 1.3,
                    "kind": "at most", "values": [(r.op, shape_label(r.shape), v) for r, v in timed],
                    "met": all(v <= 1.3 for _, v in timed)})

    largest = largest_shapes(rows)
    fast = []
    for r in rows:
        if r.variant in ("torch", "compiled") and tuple(r.shape) == largest[r.op]:
            fraction = _fraction(r, bandwidth)
            if fraction is not None:
                fast.append((f"{r.op} {r.variant}", f"{shape_label(r.shape)} {r.mode}", fraction))
    if fast:
        out.append({"name": "torch and compiled > 50 % of copy bandwidth at the largest size", "threshold": 0.5,
                    "kind": "above", "values": fast, "met": all(v > 0.5 for _, _, v in fast)})
    return out


def targets_markdown(rows: Sequence[Row], bandwidth: Optional[float] = None) -> str:
    """:func:`targets` as Markdown: each target met or missed, and by how much where missed."""
    lines = []
    for t in targets(rows, bandwidth):
        lines += [f"### {t['name']}: {'met' if t['met'] else 'MISSED'}", ""]
        for what, where, value in t["values"]:
            if t["kind"] == "at most":
                verdict = "met" if value <= t["threshold"] else \
                    f"missed by {100 * (value / t['threshold'] - 1):.0f}% (over {t['threshold']:.2f})"
                lines.append(f"- {what} {where}: {value:.2f} × torch, {verdict}")
            else:
                verdict = "met" if value > t["threshold"] else \
                    f"missed by {100 * (t['threshold'] - value):.0f} points (under {100 * t['threshold']:.0f}%)"
                lines.append(f"- {what} {where}: {100 * value:.0f}% of copy bandwidth, {verdict}")
        lines.append("")
    return "\n".join(lines)
