"""nbgrader's Execute preprocessor, except that after a timeout the ungraded cells at the end of a
notebook are not run (classroom/course/nbgrader_config.py puts it in ``Autograde.autograde_preprocessors``).

Every assignment may end with an ungraded "Try it yourself / 스스로 확인하기" cell that calls the
student's function once more. When a graded cell has run past ``Execute.timeout`` (nbgrader
interrupts the kernel and the cell keeps a ``CellTimeoutError``), a looping function would loop
there too: one more timeout, a minute of the teacher's grading per looping notebook, for a cell
that gives no points. So, once a cell has timed out, a later code cell that is

- neither graded nor a solution (``grade``/``solution`` false or no nbgrader metadata at all), and
- followed by no graded or solution code cell (nothing that is graded can depend on what it defines:
  a cell a student added between two tests to define a helper still runs),

is not sent to the kernel: it gets one stream output saying, in the assignment's language (the name
ends in ``_ko`` or ``_en``), that it was skipped because an earlier cell ran out of time. Graded and
solution cells after the timeout run as before, so that the later tests are graded.

A cell that does not stop when interrupted (a loop inside a bare ``except:`` or ``except
BaseException:`` catches the KeyboardInterrupt that nbgrader's interrupt raises) would keep the kernel
busy: every later cell would time out too and nbgrader would then fail the whole notebook ("Timeout
waiting for IOPub output"), nothing graded. So, when no reply comes within ``GRACE`` seconds of the
interrupt, the kernel's process is killed (a kill is not an exception: no ``except:`` catches it), a new
kernel is started, and the code cells before the one that timed out are run again in it, their outputs
kept as they were, so that the later cells run on the student's definitions and are graded. The cell
that timed out keeps its ``CellTimeoutError`` (0 points), its value ``KILLED``, which
classroom/tools/grading_notes.py reads ("the kernel was restarted") for grades.csv and the feedback page.

The hooks are ``preprocess_cell``, ExecutePreprocessor's per-cell step, and ``_async_handle_timeout``,
which nbclient calls through ``self``: nbclient's ``execute_cell`` is ``run_sync`` of NotebookClient's
own ``async_execute_cell`` function, so an ``async_execute_cell`` defined here would not be called by it.
"""

from __future__ import annotations

import copy
from queue import Empty

from nbclient.util import ensure_async, run_sync
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import Execute

from book.tools.bilingual import assignment_language
from classroom.tools.grading_notes import KILLED

SKIPPED = {
    "ko": ("[채점 중 건너뜀] 앞의 셀이 제한 시간(셀마다 {timeout}) 안에 끝나지 않아서, 채점할 때는 "
           "이 셀을 실행하지 않았습니다. 채점하지 않는 셀이므로 점수와는 관계가 없습니다.\n"),
    "en": ("[Skipped during grading] An earlier cell did not finish within the time limit "
           "({timeout} per cell), so this cell was not run while grading. "
           "It is not graded: the score does not depend on it.\n"),
}
SECONDS = {"ko": "{n}초", "en": "{n} s"}
GRACE = 5               # seconds the kernel has to stop after the interrupt before its process is killed


def _nbgrader(cell: NotebookNode) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def is_graded_or_solution(cell: NotebookNode) -> bool:
    meta = _nbgrader(cell)
    return bool(meta.get("grade") or meta.get("solution"))


def skip_message(lang: str, timeout: int | None) -> str:
    shown = SECONDS[lang].format(n=timeout) if timeout else "?"
    return SKIPPED[lang].format(timeout=shown)


class ExecuteSkippingAfterTimeout(Execute):
    """Execute, but a trailing ungraded cell is not run once an earlier cell has timed out."""

    def preprocess(self, nb, resources=None, km=None):
        self._timed_out = False
        self._deaf = False
        self._stalled = set()           # the cells that timed out: not run again after a restart
        code = [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code" and is_graded_or_solution(cell)]
        self._last_graded = code[-1] if code else -1
        return super().preprocess(nb, resources, km)

    def _timeout_ename(self) -> str:
        return (self.error_on_timeout or {}).get("ename", "CellTimeoutError")

    def preprocess_cell(self, cell, resources, index):
        if (getattr(self, "_timed_out", False) and cell.cell_type == "code" and cell.source.strip()
                and not is_graded_or_solution(cell) and index > getattr(self, "_last_graded", len(self.nb.cells))):
            info = (resources if resources else getattr(self, "resources", None) or {}).get("nbgrader") or {}
            lang = assignment_language(info.get("assignment") or "")
            self.log.info("Cell %s not run: an earlier cell timed out and this one is not graded", index)
            cell.outputs = [NotebookNode(output_type="stream", name="stdout",
                                         text=skip_message(lang, self._get_timeout(cell)))]
            cell.execution_count = None
            return cell, self.resources
        raise_on_iopub_timeout = self.raise_on_iopub_timeout
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
        finally:
            self.raise_on_iopub_timeout = raise_on_iopub_timeout
        if any(o.get("output_type") == "error" and o.get("ename") == self._timeout_ename()
               for o in cell.get("outputs", [])):
            self._timed_out = True
            self._stalled.add(index)
        if self._deaf:
            self._deaf = False
            self._restart(index)
        return cell, resources

    async def _async_handle_timeout(self, timeout, cell=None):
        """nbclient's (interrupt, and nbgrader's CellTimeoutError as the reply), then: when the kernel does not
        answer within GRACE seconds, the reply says KILLED and the kernel is killed after this cell."""
        reply = await super()._async_handle_timeout(timeout, cell)
        if not self.interrupt_on_timeout or reply is None:
            return reply
        try:
            await ensure_async(self.kc.shell_channel.get_msg(timeout=GRACE))     # the interrupted cell's reply
            return reply
        except Empty:
            pass
        self.log.warning("The kernel did not stop when interrupted (a loop that catches KeyboardInterrupt, e.g. a bare "
                         "except:?): killing it, then running the cells before this one again in a new kernel")
        self._deaf = True
        self.raise_on_iopub_timeout = False         # the killed kernel's last messages never come
        content = dict(reply["content"], evalue=KILLED)
        return dict(reply, content=content)

    def _restart(self, index: int) -> None:
        """Kill the kernel, start a new one, and run the code cells before ``index`` again (copies: the
        notebook keeps the outputs of their first run), except those that timed out."""
        run_sync(self.km.restart_kernel)(now=True)
        run_sync(self.kc.wait_for_ready)(timeout=self.startup_timeout)
        for i, earlier in enumerate(self.nb.cells[:index]):
            if earlier.cell_type == "code" and earlier.source.strip() and i not in self._stalled:
                self.execute_cell(copy.deepcopy(earlier), i, store_history=False)
        self.log.info("Kernel restarted; cells before %s run again", index)


def configure(c) -> None:
    """Put this Execute in place of nbgrader's in autograde (called by nbgrader_config.py), in the list
    the configuration already sets, else in nbgrader's default list."""
    from nbgrader.converters.autograde import Autograde

    current = c.Autograde["autograde_preprocessors"] if "autograde_preprocessors" in c.Autograde \
        else Autograde.class_traits()["autograde_preprocessors"].default()
    c.Autograde.autograde_preprocessors = [ExecuteSkippingAfterTimeout if p is Execute else p for p in current]
