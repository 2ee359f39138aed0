"""Every chapter's compared outputs survive other numerics: another thread count, ATen's
non-vectorised kernels, narrow-vector matrix products (tools/perturbed_numerics.py).

nbval re-executes the notebooks on this machine only, so a printed number that depends on the
CPU (a training run, the last digits of a float32 sum) passes here and fails on a reader's
machine. This re-executes every chapter under changed numerics and compares what nbval
compares. The self-test shows that the check catches such a number.

Each chapter runs in one language, Korean and English in turn: a chapter's two notebooks have the
same code and the same numbers in their outputs (tests/test_notebooks.py checks both on every
commit), so a number that moves under other numerics moves in both. Each chapter is a test of its
own, so the two pytest-xdist workers share them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tools import perturbed_numerics

ROOT = Path(__file__).resolve().parent.parent
TOOL = Path(perturbed_numerics.__file__)
STEMS = sorted(p.stem for p in (ROOT / "chapters" / "ko").glob("*.ipynb"))
# chapter 1 in Korean, chapter 2 in English, ...
CHAPTERS = [ROOT / "chapters" / ("ko", "en")[i % 2] / f"{stem}.ipynb" for i, stem in enumerate(STEMS)]


def check(paths: list[Path], out: Path, jobs: int = 2) -> dict[str, dict]:
    """Run the tool on ``paths`` (its results to ``out``, JSON; its output to ``out``'s .log) and
    read what it wrote."""
    log = out.with_suffix(".log")
    try:
        with open(log, "w", encoding="utf-8") as stream:
            code = subprocess.run([sys.executable, str(TOOL), "--jobs", str(jobs), "--json", str(out), *map(str, paths)],
                                  stdout=stream, stderr=subprocess.STDOUT, timeout=1200, check=False).returncode
    except subprocess.TimeoutExpired:
        pytest.fail(f"{TOOL.name} did not finish within 20 minutes")
    if not out.exists():
        pytest.fail(f"{TOOL.name} wrote no results (exit {code}):\n" + log.read_text(encoding="utf-8")[-4000:])
    return {Path(r["path"]).resolve().as_posix(): r for r in json.loads(out.read_text(encoding="utf-8"))}


def test_every_chapter_is_run_in_one_language():
    assert sorted(p.stem for p in (ROOT / "chapters" / "en").glob("*.ipynb")) == STEMS
    assert len(CHAPTERS) == len(STEMS) >= 11 and all(p.exists() for p in CHAPTERS)
    assert {p.parent.name for p in CHAPTERS} == {"ko", "en"}


@pytest.mark.parametrize("path", CHAPTERS[::-1], ids=lambda p: f"{p.parent.name}/{p.name}")   # the longest (10, 11) first
def test_chapter_outputs_do_not_depend_on_the_machine(path, tmp_path):
    result = check([path], tmp_path / "results.json", jobs=1)[path.resolve().as_posix()]
    assert result["error"] is None, f"{path.name} failed under perturbed numerics: {result['error']}"
    if result["differences"]:
        cells = ", ".join(str(d["cell"]) for d in result["differences"])
        pytest.fail(
            f"{path.parent.name}/{path.name}: code cell(s) {cells} print other text under another thread count "
            f"or other kernels, so they would fail nbval on another machine. Print only what is stable "
            f"(float64, a bound such as normlib.book.examples.within, an asserted claim) or tag the raw print "
            f"nbval-ignore-output.\n" + perturbed_numerics.report(result)
        )


def test_the_thread_count_differs_from_the_chapters_and_fits_the_machine():
    for cores, default in [(1, 1), (2, 2), (2, 1), (3, 3), (4, 4), (8, 3), (64, 64)]:
        threads = perturbed_numerics.perturbed_threads(default, cores)
        assert threads != 1 and (threads <= cores or cores < 2), (cores, default, threads)
        assert threads != default or cores <= 2, (cores, default, threads)


def test_the_check_catches_a_machine_dependent_number(tmp_path):
    """A float32 sum printed to all its digits: the same on this machine run after run, but not
    under another summation order. The check must report it, and must pass the stable cell."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("import torch\ntorch.set_num_threads(1)\n"
                                  "x = torch.randn(1_000_003, generator=torch.Generator().manual_seed(0))"),
        nbformat.v4.new_code_cell("print(f'{x.sum().item():.9g}', f'{(x * x).sum().item():.9g}')"),
        nbformat.v4.new_code_cell("print(x.double().sum().item() > 0, round(x.double().mean().item(), 3))"),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    path = tmp_path / "machine_dependent.ipynb"
    nbformat.write(nb, path)
    result = check([path], tmp_path / "results.json", jobs=1)[path.resolve().as_posix()]
    assert result["error"] is None, result["error"]
    assert [d["cell"] for d in result["differences"]] == [2], perturbed_numerics.report(result)
