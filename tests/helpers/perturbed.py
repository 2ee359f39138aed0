"""Perturbed numerics for nbval's kernels (book/tools/perturbed_numerics.py): which chapters, and the
pytest plugin that runs them so (conftest.py, tests/book/test_perturbed_numerics.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from helpers.paths import ROOT


def perturbed_chapters(root: Path = ROOT) -> list[Path]:
    """The chapter notebooks that nbval runs under perturbed numerics: each chapter in one language,
    Korean and English in turn (chapter 1 in Korean, chapter 2 in English, ...). A chapter's two
    notebooks have the same code and the same numbers in their outputs (test_notebooks.py), so
    one runs as on this machine and the other as on another CPU."""
    stems = sorted(p.stem for p in (root / "chapters" / "ko").glob("*.ipynb"))
    return [root / "chapters" / ("ko", "en")[i % 2] / f"{stem}.ipynb" for i, stem in enumerate(stems)]


class PerturbedKernels:
    """A pytest plugin (conftest.py registers it when nbval runs). nbval starts the kernel of each
    of ``notebooks`` (make test: perturbed_chapters, each chapter in one language) under
    book/tools/perturbed_numerics.py's kernel_environment: ATen's non-vectorised kernels, narrow-vector
    matrix products, another thread count. Its stored outputs are then compared as on another
    machine, in the run that checks them anyway; the chapter's other language runs as on this one.
    (nbval starts a notebook's kernel in the set-up of its first cell, in this process, and the
    kernel inherits the environment of that moment. In a single-process run, a process that a
    background EARLY thread starts in that moment inherits it too: an nbgrader kernel then grades
    under the perturbation, with the same grades.)"""

    def __init__(self, folder: Path, notebooks: list[Path]):
        from book.tools.perturbed_numerics import kernel_environment, perturbed_threads

        self.paths = {Path(p).resolve() for p in notebooks}
        threads = perturbed_threads(torch.get_num_threads())
        self.environment = kernel_environment(folder, threads)
        self.settings = "perturbed numerics (" + " ".join(
            f"{k}={v}" for k, v in self.environment.items() if k != "IPYTHONDIR") + f", {threads} threads)"

    def applies(self, item) -> bool:
        return Path(str(item.path)).resolve() in self.paths

    def describe(self) -> str:
        names = ", ".join(sorted(f"{p.parent.name}/{p.stem}" for p in self.paths))
        return f"{self.settings} for nbval's kernels of {names}"

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item):
        if not self.applies(item):
            return (yield)
        with pytest.MonkeyPatch.context() as patch:      # the environment as it was, once set up
            for name, value in self.environment.items():
                patch.setenv(name, value)
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        if report.failed and self.applies(item):
            report.sections.append((
                "perturbed numerics",
                f"This notebook ran under {self.settings}: an output that differs "
                "here but not in the chapter's other language would differ on another machine. Print only "
                "what is stable (float64, a bound such as normlib_book.examples.within, an asserted claim) or "
                "tag the raw print nbval-ignore-output. `make perturbed CH=<chapter>` re-runs it alone."))
        return report
