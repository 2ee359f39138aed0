"""Re-execute chapter notebooks under perturbed numerics and compare what nbval compares.

    python book/tools/perturbed_numerics.py                  # every notebook under chapters/, 2 at a time
    python book/tools/perturbed_numerics.py --jobs 1 chapters/en/01_why_normalize.ipynb

The stored outputs must come out the same on any x86-64 CPU (Intel or AMD, any vector width)
and with any thread count. A machine cannot run another vendor's CPU, but it can change the
two things that make float32 results differ between machines: the order in which sums are
accumulated, and which kernels compute them. Each notebook runs in a fresh kernel with

- ``ATEN_CPU_CAPABILITY=default``: ATen's non-vectorised kernels (sums accumulate in another
  order than the AVX2/AVX-512 ones the stored outputs came from);
- ``MKL_ENABLE_INSTRUCTIONS=SSE4_2`` and ``ONEDNN_MAX_CPU_ISA=SSE41``: the matrix products
  take the narrow-vector code paths, as on an older or another vendor's CPU;
- a different number of intra-op threads, set when the kernel starts (an IPython start-up file
  in a temporary IPYTHONDIR, ``kernel_environment``); the notebook's own ``torch.set_num_threads``
  is then ignored, so a split reduction is split differently. The chapters compute on one thread
  (``normlib_book.start``), so any other count perturbs them: 3 where the machine has 3 cores or
  more and 3 is not its default, else 2 (on a 2-core machine 3 threads took twice as long, 58.7 s
  against 30.4 s for chapter 10, and split no differently from one thread than 2 do). Chapter 8,
  the one page that keeps torch's own thread count, then runs with its default on a 2-core
  machine: its timings are not compared anyway.

``make test`` does not call this tool on the chapters: nbval itself starts half of them (each
chapter in one language, tests/conftest.py) in a kernel with ``kernel_environment``, so their
stored outputs are compared once, under the perturbation. This tool re-executes any notebooks
(all by default) for a contributor, and make test checks on a machine-dependent notebook that it
catches what it must.

A cell whose outputs differ from the stored ones (the same fields nbval compares: text, HTML,
streams; not images, not cells tagged ``nbval-ignore-output`` or ``nbval-skip``; memory
addresses sanitized by ``tests/nbval_sanitize.cfg``) is reported with both versions. Exit
status 1 when any cell differs or any notebook fails to run.
"""

from __future__ import annotations

import argparse
import configparser
import json
import multiprocessing
import os
import re
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
SANITIZE_CFG = ROOT / "tests" / "nbval_sanitize.cfg"

ENVIRONMENT = {
    "ATEN_CPU_CAPABILITY": "default",
    "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
    "ONEDNN_MAX_CPU_ISA": "SSE41",
}
# Output fields nbval does not compare (nbval's own list, plus images, which it skips without --nbdime).
SKIPPED_FIELDS = {"metadata", "traceback", "prompt_number", "output_type", "name", "execution_count",
                  "application/vnd.jupyter.widget-view+json", "image/png", "image/jpeg"}
IGNORE_TAGS = {"nbval-ignore-output", "nbval-skip"}
MARK = "# perturbed_numerics: preamble"


def perturbed_threads(default: int, cores: int | None = None) -> int:
    """A thread count other than the chapters' 1 and no more than the machine's cores: 3 where
    that is also other than the machine's default, else 2."""
    cores = (os.cpu_count() or 1) if cores is None else cores
    return 3 if cores >= 3 and default != 3 else 2


def preamble(threads: int) -> str:
    return (
        f"{MARK}\n"
        "import torch as _torch\n"
        f"_torch.set_num_threads({threads})\n"
        "_torch.set_num_threads = lambda n: None  # the notebook's own choice is ignored\n"
    )


def kernel_environment(folder: Path, threads: int, environment: dict[str, str] = ENVIRONMENT) -> dict[str, str]:
    """The environment variables under which a Jupyter kernel started afterwards runs perturbed:
    ``environment``, and an IPYTHONDIR in ``folder`` whose start-up file runs ``preamble(threads)``
    before the notebook's first cell (IPython runs profile_default/startup/*.py in every kernel)."""
    startup = Path(folder) / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-perturbed-numerics.py").write_text(preamble(threads), encoding="utf-8")
    return {**environment, "IPYTHONDIR": str(Path(folder).resolve())}


def sanitizers() -> list[tuple[re.Pattern, str]]:
    parser = configparser.ConfigParser()
    parser.read(SANITIZE_CFG, encoding="utf-8")
    return [(re.compile(parser[s]["regex"]), parser[s]["replace"]) for s in parser.sections()]


def compared_outputs(cell, rules) -> list[tuple[str, str]]:
    """(field, text) for every output field nbval compares, streams of one name joined."""
    fields: list[tuple[str, str]] = []
    for out in cell.get("outputs", []):
        if out.output_type == "stream":
            if fields and fields[-1][0] == out.name:
                fields[-1] = (out.name, fields[-1][1] + out.text)
            else:
                fields.append((out.name, out.text))
            continue
        for key, value in out.items():
            if key in SKIPPED_FIELDS:
                continue
            items = value.items() if key == "data" else [(key, value)]
            for field, text in items:
                if field in SKIPPED_FIELDS:
                    continue
                text = text if isinstance(text, str) else json.dumps(text, sort_keys=True)
                fields.append((field, text))
    out = []
    for field, text in fields:
        for pattern, replacement in rules:
            text = pattern.sub(replacement, text)
        out.append((field, text))
    return out


def is_compared(cell) -> bool:
    tags = set(cell.metadata.get("tags", []))
    return cell.cell_type == "code" and not (tags & IGNORE_TAGS) and "NBVAL_IGNORE_OUTPUT" not in cell.source \
        and "NBVAL_SKIP" not in cell.source


def run(path: str, environment: dict[str, str] = ENVIRONMENT) -> dict:
    """Execute one notebook under the perturbation; return its differences from the stored outputs."""
    # the kernel's OpenMP threads sleep while they wait: beside another busy process (--jobs 2, make
    # test's other worker) spinning threads took 317 s for chapter 10 instead of 36 s (numbers unchanged)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch  # only to read the machine's default thread count, in this worker

    threads = perturbed_threads(torch.get_num_threads())
    stored = nbformat.read(path, as_version=4)
    fresh = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    client = NotebookClient(fresh, timeout=300, kernel_name="python3", allow_errors=False,
                            resources={"metadata": {"path": str(Path(path).parent)}})
    with tempfile.TemporaryDirectory(prefix="perturbed-ipython-") as ipython:
        os.environ.update(kernel_environment(Path(ipython), threads, environment))   # the kernel inherits it
        try:
            client.execute()
        except Exception as error:  # a cell raised, or timed out: report it as the notebook's failure
            return {"path": path, "threads": threads, "seconds": time.perf_counter() - start,
                    "error": f"{type(error).__name__}: {str(error)[-2000:]}", "differences": []}
    rules = sanitizers()
    differences = []
    code_index = 0
    for old, new in zip(stored.cells, fresh.cells, strict=True):
        if old.cell_type != "code":
            continue
        code_index += 1
        if not is_compared(old):
            continue
        before, after = compared_outputs(old, rules), compared_outputs(new, rules)
        if before != after:
            differences.append({"cell": code_index, "source": old.source.splitlines()[:3],
                                "stored": before, "perturbed": after})
    return {"path": path, "threads": threads, "seconds": time.perf_counter() - start,
            "error": None, "differences": differences}


def run_all(paths: list[str], jobs: int) -> list[dict]:
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        return list(pool.map(run, paths, [dict(ENVIRONMENT)] * len(paths)))


def report(result: dict) -> str:
    name = os.path.relpath(result["path"], ROOT)
    if result["error"]:
        return f"FAILED TO RUN {name} ({result['seconds']:.0f} s): {result['error']}"
    if not result["differences"]:
        return f"same     {name} ({result['seconds']:.0f} s, {result['threads']} threads)"
    lines = [f"DIFFERS  {name} ({result['seconds']:.0f} s, {result['threads']} threads)"]
    for diff in result["differences"]:
        lines.append(f"  code cell {diff['cell']}: {' | '.join(diff['source'])[:100]}")
        for label in ("stored", "perturbed"):
            for field, text in diff[label]:
                body = text if len(text) < 1200 else text[:1200] + " …"
                lines.append(f"    {label:9s} [{field}] " + body.rstrip().replace("\n", "\n" + " " * 14))
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", help="notebooks to check (default: chapters/*/*.ipynb)")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="notebooks at a time")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--aten", default=ENVIRONMENT["ATEN_CPU_CAPABILITY"],
                        help="ATEN_CPU_CAPABILITY to run with (default, avx2, avx512; default: %(default)s)")
    args = parser.parse_args(argv)
    ENVIRONMENT["ATEN_CPU_CAPABILITY"] = args.aten
    paths = [str(Path(p).resolve()) for p in args.notebooks] or \
        [str(p) for p in sorted((ROOT / "chapters").glob("*/*.ipynb"))]
    if not paths:
        print("no notebooks found under chapters/", file=sys.stderr)
        return 1
    missing = [p for p in paths if not Path(p).is_file()]
    if missing:
        print(f"expected notebook files, but these do not exist: {', '.join(missing)}", file=sys.stderr)
        return 2
    print(f"re-executing {len(paths)} notebook(s), {args.jobs} at a time, with "
          + " ".join(f"{k}={v}" for k, v in ENVIRONMENT.items()) + " and another thread count", flush=True)
    results = run_all(paths, args.jobs)
    for result in results:
        print(report(result), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, ensure_ascii=False, indent=1), encoding="utf-8")
    bad = [r for r in results if r["error"] or r["differences"]]
    print(f"{len(results) - len(bad)} of {len(results)} notebooks reproduce their stored outputs")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
