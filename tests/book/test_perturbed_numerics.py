"""Every chapter's compared outputs survive other numerics: another thread count, ATen's
non-vectorised kernels, narrow-vector matrix products (book/tools/perturbed_numerics.py).

nbval re-executes the notebooks on this machine only, so a printed number that depends on the
CPU (a training run, the last digits of a float32 sum) would pass here and fail on a reader's
machine. So nbval runs each chapter in one language, Korean and English in turn, under changed
numerics (helpers.PerturbedKernels, registered by conftest.py): a chapter's two notebooks have the
same code and the same numbers in their outputs (tests/book/test_notebooks.py), so a number that moves
under other numerics fails the perturbed one. The tests here show that the perturbation reaches
nbval's kernels and catches such a number, and that `make perturbed`'s tool catches it too.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from book.tools import perturbed_numerics
from helpers.paths import ROOT
from helpers.perturbed import perturbed_chapters

# what this module needs beyond Python (tests/conftest.py: not in make test-fast)
pytestmark = pytest.mark.notebooks

TOOL = Path(perturbed_numerics.__file__)
STEMS = sorted(p.stem for p in (ROOT / "chapters" / "ko").glob("*.ipynb"))
SUM = "print(f'{x.sum().item():.9g}', f'{(x * x).sum().item():.9g}')"
STABLE = "print(x.double().sum().item() > 0, round(x.double().mean().item(), 3))"


def test_every_chapter_runs_perturbed_in_exactly_one_language():
    chapters = perturbed_chapters()
    assert sorted(p.stem for p in (ROOT / "chapters" / "en").glob("*.ipynb")) == STEMS
    assert sorted(p.stem for p in chapters) == STEMS and len(STEMS) >= 11
    assert all(p.exists() for p in chapters)
    assert [p.parent.name for p in chapters[:4]] == ["ko", "en", "ko", "en"]


def test_the_thread_count_differs_from_the_chapters_and_fits_the_machine():
    for cores, default in [(1, 1), (2, 2), (2, 1), (3, 3), (4, 4), (8, 3), (64, 64)]:
        threads = perturbed_numerics.perturbed_threads(default, cores)
        assert threads != 1 and (threads <= cores or cores < 2), (cores, default, threads)
        assert threads != default or cores <= 2, (cores, default, threads)


@pytest.fixture(scope="module")
def machine_dependent(tmp_path_factory) -> Path:
    """A float32 sum printed to all its digits: the same on this machine run after run, but not
    under another summation order; then a stable cell, and the kernel's thread count."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("import torch\ntorch.set_num_threads(1)\n"
                                  "x = torch.randn(1_000_003, generator=torch.Generator().manual_seed(0))"),
        nbformat.v4.new_code_cell(SUM),
        nbformat.v4.new_code_cell(STABLE),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    path = tmp_path_factory.mktemp("perturbed") / "machine_dependent.ipynb"
    nbformat.write(nb, path)
    return path


def test_nbval_runs_the_chosen_notebooks_perturbed_and_fails_a_machine_dependent_number(machine_dependent):
    """nbval on two copies of the notebook, with helpers.PerturbedKernels registered as conftest.py
    does, naming one: there the float32 sum fails, with the plugin's explanation, and the float64
    cell passes; the other copy passes whole (its kernel ran as on this machine)."""
    folder = machine_dependent.parent
    plain = folder / "plain.ipynb"
    shutil.copyfile(machine_dependent, plain)
    (folder / "perturb_plugin.py").write_text(
        "import os, tempfile\nfrom pathlib import Path\nfrom helpers.perturbed import PerturbedKernels\n"
        "def pytest_configure(config):\n"
        "    config.pluginmanager.register(PerturbedKernels(Path(tempfile.mkdtemp()), [os.environ['PERTURB']]))\n",
        encoding="utf-8")
    env = {**os.environ, "PERTURB": str(machine_dependent),
           "PYTHONPATH": os.pathsep.join([str(folder), str(ROOT / "tests"), str(ROOT)])}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "perturb_plugin", "-p", "no:cacheprovider", "-p", "no:xdist",
         "--rootdir", str(folder), "-c", os.devnull, "--nbval", "--nbval-current-env", "-rA",
         machine_dependent.name, plain.name],
        cwd=folder, env=env, capture_output=True, text=True, timeout=300, check=False)
    out = result.stdout
    assert result.returncode == 1, out[-3000:] + result.stderr[-2000:]
    outcomes = {cell: outcome for outcome, cell in re.findall(r"^(PASSED|FAILED) (\S+::Cell \d+)", out, re.M)}
    assert outcomes == {"machine_dependent.ipynb::Cell 0": "PASSED", "machine_dependent.ipynb::Cell 1": "FAILED",
                        "machine_dependent.ipynb::Cell 2": "PASSED", "plain.ipynb::Cell 0": "PASSED",
                        "plain.ipynb::Cell 1": "PASSED", "plain.ipynb::Cell 2": "PASSED"}, out[-3000:]
    assert "perturbed numerics" in out and "ATEN_CPU_CAPABILITY=default" in out, out[-3000:]


def test_the_tool_catches_a_machine_dependent_number(machine_dependent, tmp_path):
    """`make perturbed`'s tool, on the same notebook: the float32 sum differs, the stable cell not."""
    out = tmp_path / "results.json"
    log = tmp_path / "results.log"
    with open(log, "w", encoding="utf-8") as stream:
        subprocess.run([sys.executable, str(TOOL), "--jobs", "1", "--json", str(out), str(machine_dependent)],
                       stdout=stream, stderr=subprocess.STDOUT, timeout=300, check=False)
    assert out.exists(), f"{TOOL.name} wrote no results:\n" + log.read_text(encoding="utf-8")[-4000:]
    [result] = json.loads(out.read_text(encoding="utf-8"))
    assert result["error"] is None, result["error"]
    assert [d["cell"] for d in result["differences"]] == [2], perturbed_numerics.report(result)
