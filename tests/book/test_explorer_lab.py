"""The explorer (normlib_book.explorer.Explorer, an anywidget) live in the reader's JupyterLab, its
state in the kernel's traitlets: `make lab`'s server (python -m book.tools.lab reader) on a free port,
a notebook of the test's own in a temporary folder (never in the repository: git status is the
same afterwards), driven in headless Chromium as a reader drives it.

The reader types into the table and steps BatchNorm in the browser; the kernel then holds what was
typed and stepped (the running mean is torch's, computed here with torch.nn.functional.batch_norm),
and Explorer.check() finds every number the JavaScript computed equal to normlib's. A trait set in
Python (e.method = "layer") redraws the widget in the browser.
"""

from __future__ import annotations

import re
import subprocess
import time

import nbformat
import pytest
import torch
import torch.nn.functional as TF

from helpers.lab_server import Lab
from helpers.paths import ROOT

# what this module needs beyond Python (tests/conftest.py: not in make test-fast)
pytestmark = pytest.mark.browser

ARTIFACTS = ROOT / "test-artifacts" / "explorer"
CELLS = (
    'from normlib_book.explorer import Explorer\ne = Explorer("ko", layouts=("table",))\ne',
    "print(e.table[6], e.steps, repr(e.running_mean[0]), e.check())",
    'e.method = "layer"',
    "print(e.check(), e.selected)\nprint(e.report())",
)
TABLE = [[2.0, 3, 4], [4, 10, 20], [6, 5, 12], [8, 2, 36]]     # normlib_book.examples.TABLE, chapter 3's
TYPED = 7.0                                                   # typed over sample C's feature 1 (index 6)


def git_status() -> str:
    return subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout


def cell(page, index: int):
    return page.locator(".jp-Notebook .jp-Cell").nth(index)


def kernel_frames(page) -> list[str]:
    """The frames the page receives on its kernels' websockets, as text, as they arrive."""
    frames: list[str] = []

    def watch(ws) -> None:
        ws.on("framereceived", lambda p: frames.append(p if isinstance(p, str) else p.decode("utf-8", "replace")))
    page.on("websocket", watch)
    return frames


def wait_for_the_kernel(page, frames: list[str], timeout: float = 60) -> None:
    """Until the kernel has answered the page's kernel_info_request on its websocket. JupyterLab
    shows "Idle" before that, and a cell run then is dropped (its prompt stays "[ ]")."""
    deadline = time.time() + timeout
    while not any("kernel_info_reply" in frame for frame in frames):
        assert time.time() < deadline, f"the kernel did not answer on the page's websocket in {timeout} s"
        page.wait_for_timeout(100)
    page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for()


def run_cell(page, index: int, timeout: float = 30_000) -> str:
    """Run cell ``index`` as a reader does (click into it, Ctrl+Enter), wait for its execution
    count, and return its output's text."""
    from playwright.sync_api import expect

    target = cell(page, index)
    target.locator(".jp-InputArea-editor .cm-content").click()
    page.keyboard.press("Control+Enter")
    try:
        expect(target.locator(".jp-InputArea-prompt")).to_have_text(re.compile(r"\[\d+\]"), timeout=timeout)
    except AssertionError:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "jupyterlab_explorer_failed.png"))
        raise
    return "\n".join(target.locator(".jp-OutputArea-output").all_inner_texts())


def test_the_explorer_runs_live_in_jupyterlab_with_its_state_in_the_kernel(browser, tmp_path):
    from playwright.sync_api import expect

    from normlib_book import examples
    from normlib_book.i18n import text

    assert [float(v) for row in examples.TABLE for v in row] == [v for row in TABLE for v in row]
    before = git_status()
    folder = tmp_path / "notebooks"
    folder.mkdir()
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in CELLS])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(notebook, folder / "explorer.ipynb")

    start = time.time()
    lab = Lab("reader", tmp_path, extra=(f"--notebook-dir={folder}",))
    context = browser.new_context(viewport={"width": 1280, "height": 1500})
    errors: list[str] = []
    try:
        root_dir = lab.page_config()["serverRoot"].rstrip("/")            # "~/notebooks": HOME is tmp_path
        assert root_dir.endswith(f"/{folder.name}"), f"the server opened {root_dir}, not {folder}"
        page = context.new_page()
        page.set_default_timeout(30_000)
        page.on("pageerror", lambda e: errors.append(str(e)))
        frames = kernel_frames(page)
        page.goto(lab.url("/lab/tree/explorer.ipynb"))
        wait_for_the_kernel(page, frames)

        # 1. the widget renders in the cell's output
        out = run_cell(page, 0, timeout=60_000)      # the kernel imports torch
        explorer = cell(page, 0).locator(".nx")
        try:
            explorer.locator("input[data-index='11']").wait_for()
        except Exception:
            raise AssertionError(f"no explorer in the output (page errors {errors}):\n{out}") from None
        root = explorer.locator("xpath=..")
        assert root.evaluate("el => typeof el.normlibExplorer.numbers") == "function"
        summary_before = explorer.locator(".nx-summary").inner_text()

        # 2. the reader types 7 over sample C's feature 1, moves on, and trains one step. The click
        # comes first: focusing a cell other than the chosen one redraws the table (explorer.js's
        # onfocus commits `selected`) with the caret before the old value, so typing at once gives "76".
        explorer.locator("input[data-index='6']").click()
        box = explorer.locator("input[data-index='6']")
        box.fill("7")
        box.press("Tab")
        expect(explorer.locator("input[data-index='6']")).to_have_value("7")
        explorer.locator("button.nx-button").first.click()
        expect(explorer.locator(".nx-running")).to_contain_text(text("nx_steps", "ko").format(steps=1))
        assert root.evaluate("el => el.normlibExplorer.state().table[6]") == TYPED

        # 3. the kernel got both, and normlib's numbers are the ones the browser computed
        table = torch.tensor(TABLE, dtype=torch.float64)
        table[2, 0] = TYPED
        running_mean, running_var = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
        TF.batch_norm(table, running_mean, running_var, training=True, momentum=0.1, eps=1e-5)
        out = run_cell(page, 1)
        printed = re.fullmatch(r"(\S+) (\d+) (\S+) (\S+)", out.strip())
        assert printed, f"unexpected output of {CELLS[1]!r}:\n{out}"
        assert float(printed[1]) == TYPED, f"the kernel's table[6] is {printed[1]}, the reader typed {TYPED}"
        assert int(printed[2]) == 1, f"the kernel counts {printed[2]} steps after one click"
        assert float(printed[3]) == pytest.approx(running_mean[0].item(), rel=1e-12, abs=1e-12), \
            f"running_mean[0] in the kernel {printed[3]}, torch's {running_mean[0].item()!r}"
        compared = 2 * 3 + 2 * 12               # BatchNorm on 4 × 3: μ and σ² per feature, x̂ and y per cell
        assert printed[4] == str(compared), f"e.check() returned {printed[4]} (None: the browser's numbers never reached the kernel)"

        # 4. a trait set in Python redraws the browser's widget
        out = run_cell(page, 2)
        assert "Error" not in out, out
        method = explorer.locator("select[id$='-method']")
        expect(method).to_have_value("layer")
        assert method.evaluate("el => el.options[el.selectedIndex].text") == "LayerNorm"
        # one statistic per sample (which one is lit follows the mouse: not asserted)
        summary = text("nx_summary", "ko").split("{which}")[0].format(method="LayerNorm", total=4, pooled=3)
        expect(explorer.locator(".nx-summary")).to_contain_text(summary)
        assert explorer.locator(".nx-summary").inner_text() != summary_before
        expect(explorer.locator(".nx-batch")).to_be_hidden()       # no running statistics for LayerNorm
        out = run_cell(page, 3)
        selected = root.evaluate("el => el.normlibExplorer.state().selected")
        lines = out.strip().splitlines()
        assert len(lines) == 3, out
        compared = 2 * 4 + 2 * 12               # LayerNorm on 4 × 3: μ and σ² per sample, x̂ and y per cell
        assert lines[0] == f"{compared} {selected}", f"e.check(), e.selected after the redraw: {out}"
        assert lines[2] == text("nx_report_checked", "ko").format(count=compared), out
        y = TF.layer_norm(table, (3,), eps=1e-5).flatten()[selected].item()
        assert f"y = {f'{y:.4f}'.rstrip('0').rstrip('.').replace('-', '−')}" in lines[1], (out, y)

        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        cell(page, 0).scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "jupyterlab_explorer.png"))
        assert not errors, errors
    finally:
        context.close()
        log = lab.stop()
    elapsed = time.time() - start
    # while the server ran (what follows its "received signal 15" is tornado closing the page's
    # websocket after the stop: a race of the shutdown, not of the explorer)
    running = log.split("received signal")[0]
    assert "Traceback" not in running, running[-4000:]
    assert git_status() == before, "running the notebook changed the repository:\n" + git_status()
    print(f"\nthe explorer live in JupyterLab: {elapsed:.1f} s")
