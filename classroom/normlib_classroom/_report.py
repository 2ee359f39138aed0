"""What every checker shares: its arguments and seeded inputs, the comparisons, and the failure report.

A failure raises :class:`CheckFailed`, an ``AssertionError`` (so nbgrader scores the cell zero),
whose message says in Korean (``"ko"``) or English (``"en"``):

* which shape (or dtype) was expected and which was received;
* which element differs most, and by how much;
* whether the mean or the variance per group (per row, per channel, per (sample, group)) is off;
* a diagnosis, when the result equals a known slip computed on the same input (see
  :mod:`._slips`);
* the chapter section to reread (its number and its title in that language).

The student's code runs under :mod:`._guard` (:meth:`_Report.guarded`): a call to a reference
implementation of the task fails it, naming the call (``diagnoses == ("delegated",)``).

In a notebook, IPython shows a failure as its message followed by the student's own lines only,
not the checker's traceback (:mod:`._shown`).

The strings come from :mod:`normlib_classroom.words` (keys ``ex:…``).
"""

from __future__ import annotations

import contextlib
import inspect
import math
import traceback
from typing import Callable, List, Optional, Sequence, Tuple

import torch
from torch import Tensor

from normlib.axes import _fmt
from normlib_classroom.words import check_lang, text

from ._guard import Watch
from ._shown import render, student_frames

# |yours − expected| ≤ tol·(1 + |expected|): far below the size of any slip the checkers name
# (eps = 0.01 against variances of order 1 moves results by 1e-3 and more).
_TOL = {torch.float64: 1e-7, torch.float32: 1e-4}


class CheckFailed(AssertionError):
    """Raised by a checker when the student's result differs from torch's.

    The message is in the student's language; ``diagnoses`` names the slips recognised
    (empty when none explains the difference). An ``AssertionError``, so a failing test
    cell scores zero in nbgrader. IPython shows it as the message, then the student's own lines
    (:func:`._shown.render`); the full traceback stays on the exception, and ``%tb verbose``
    shows it.
    """

    def __init__(self, message: str, diagnoses: Sequence[str] = (), lang: str = "en"):
        super().__init__(message)
        self.diagnoses = tuple(diagnoses)
        self.lang = lang

    def _render_traceback_(self) -> List[str]:
        return render(self, self.lang)


class _Report:
    """Collects the lines of one failure message, then raises it."""

    def __init__(self, lang: str, name: str, case: str, section: str, autograd: bool = False):
        self.lang, self.name, self.case = lang, name, case
        self.autograd = autograd                # the backward task: torch's autograd is a reference too
        self.backward_ran = False               # did the last guarded call run a custom Function's backward?
        self.default_section = section          # reread this when no diagnosis names another
        self.lines: List[str] = []
        self.diagnoses: List[str] = []
        self.sections: List[str] = []
        self.values_differ = False              # numbers compared and found different: worth a diagnosis
        self.during: Optional[str] = None       # key of a line naming the call under way (a test mixing modes)

    def t(self, key: str, **kwargs) -> str:
        return text(key, self.lang).format(**kwargs)

    def add(self, key: str, **kwargs) -> None:
        self.lines.append(self.t(key, **kwargs))

    def diagnose(self, name: str, key: str, section: str, **kwargs) -> None:
        self.diagnoses.append(name)
        self.lines.append(self.t("ex:diagnosis", text=self.t(key, **kwargs)))
        if section not in self.sections:
            self.sections.append(section)

    def fail(self, cause: Optional[BaseException] = None):
        if self.values_differ and not self.diagnoses:
            self.add("ex:no_diagnosis")
        sections = self.sections or [self.default_section]
        message = "\n".join(
            [self.t("ex:title", name=self.name, case=self.case)]
            + [f"  • {line}" for line in self.lines]
            + [self.t("ex:reread", chapter=int(s.split(":")[-1][:2]), section=text(s, self.lang).replace("`", ""))
               for s in sections]
        )
        raise CheckFailed(message, self.diagnoses, self.lang) from cause

    @contextlib.contextmanager
    def guarded(self):
        """Run the student's code in this block under the guard (:mod:`._guard`): when it called a
        reference implementation of the task, the task fails with a message naming the call,
        whatever else happened."""
        watch = Watch(self.autograd)
        try:
            with watch:
                yield
        except Exception as error:
            if watch.found is None:
                raise
            self._delegated(*watch.found, cause=error)
        finally:
            self.backward_ran = watch.backward_ran
        if watch.found is not None:
            self._delegated(*watch.found)

    def _delegated(self, call: str, autograd: bool, cause: Optional[BaseException] = None):
        self.lines = [self.t("ex:delegated_autograd" if autograd else "ex:delegated", call=call)]
        if self.during:
            self.lines.append(self.t(self.during))
        self.diagnoses, self.sections, self.values_differ = ["delegated"], [], False
        self.fail(cause)

    def call(self, fn: Callable, *args, **kwargs):
        """Run the student's code, guarded; an exception becomes a failure that names the inputs."""
        try:
            with self.guarded():
                return fn(*args, **kwargs)
        except CheckFailed:
            raise
        except NotImplementedError as error:
            self.add("ex:not_implemented")
            self.fail(error)
        except Exception as error:   # noqa: BLE001 - any error in student code is reported, not hidden
            self.add("ex:raised", error=f"{type(error).__name__}: {error}")
            where = _student_line(error)
            if where is not None:
                self.add("ex:raised_at", line=where.lineno, code=where.line)
            self.fail(error)


def _student_line(error: BaseException) -> Optional[traceback.FrameSummary]:
    """The last line of the traceback in the student's files (outside normlib, torch and Python):
    where the student's code failed."""
    theirs = student_frames(error)
    return theirs[-1] if theirs and theirs[-1].line else None


# --------------------------------------------------------------------------- comparisons

def _num(v: float) -> str:
    return f"{v:.6g}"


def _name(obj, default: str) -> str:
    return getattr(obj, "__name__", None) or default


def _tol(dtype: torch.dtype) -> float:
    return _TOL.get(dtype, 1e-4)


def _close(got: Tensor, expected: Tensor, tol: float) -> bool:
    return got.shape == expected.shape and bool(
        ((got.detach().double() - expected.detach().double()).abs() <= tol * (1 + expected.detach().double().abs())).all())


def _compare(report: _Report, what: str, got, expected: Tensor, tol: float, check_dtype: bool = True) -> str:
    """Add what differs between ``got`` and ``expected`` to the report.

    Returns ``"ok"``, ``"values"`` (same shape, different numbers) or ``"shape"`` (not a tensor
    of the right shape and dtype: nothing more to compare)."""
    if not isinstance(got, Tensor):
        hint = report.t("ex:return_missing") if got is None else ""
        report.add("ex:not_tensor", what=what, got=type(got).__name__)
        report.lines[-1] += hint                    # after the sentence, not inside it
        return "shape"
    if tuple(got.shape) != tuple(expected.shape):
        report.add("ex:shape", what=what, expected=_fmt(expected.shape), got=_fmt(got.shape))
        return "shape"
    if check_dtype and got.dtype != expected.dtype:
        report.add("ex:dtype", what=what, expected=str(expected.dtype), got=str(got.dtype))
        return "shape"
    g, e = got.detach().double(), expected.detach().double()
    diff = (g - e).abs()
    over = ~(diff <= tol * (1 + e.abs()))          # NaN counts as over
    if not over.any():
        return "ok"
    worst = torch.where(over, torch.nan_to_num(diff, nan=math.inf), torch.zeros_like(diff))
    idx = tuple(int(i) for i in torch.unravel_index(worst.argmax(), g.shape)) if g.dim() else ()
    report.values_differ = True
    report.add("ex:max_diff", what=what, index=_fmt(idx), diff=_num(float(diff[idx])), got=_num(float(g[idx])),
               expected=_num(float(e[idx])), count=int(over.sum()), total=g.numel(), tol=f"{tol:g}")
    return "values"


# --------------------------------------------------------------------------- arguments and inputs

def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _input(shape: Sequence[int], gen: torch.Generator, dtype: torch.dtype, offset: float = 0.0) -> Tensor:
    """Values with a different spread and centre in every region, so that no two poolings agree."""
    shape = tuple(shape)
    spread = 0.5 + 2 * torch.rand(shape, generator=gen, dtype=torch.float64)
    centre = 3 * torch.randn(shape[:1] + (1,) * (len(shape) - 1), generator=gen, dtype=torch.float64)
    x = torch.randn(shape, generator=gen, dtype=torch.float64) * spread + centre + offset
    return x.to(dtype)


def _params(shape: Sequence[int], gen: torch.Generator, dtype: torch.dtype) -> Tuple[Tensor, Tensor]:
    """Random γ (kept away from 0 and 1) and β (kept away from 0): ones and zeros hide bugs."""
    weight = (1.5 + torch.rand(tuple(shape), generator=gen, dtype=torch.float64)) * \
        torch.where(torch.rand(tuple(shape), generator=gen) < 0.3, -1.0, 1.0).double()
    bias = torch.randn(tuple(shape), generator=gen, dtype=torch.float64) + 0.5
    return weight.to(dtype), bias.to(dtype)


def _start(lang: str, target, seed: int = 0, module: bool = False) -> torch.Generator:
    """Check the checker's arguments (a clear error naming what was received) and seed the inputs."""
    check_lang(lang)
    if module and not (inspect.isclass(target) and issubclass(target, torch.nn.Module)):
        raise TypeError(text("ex:not_module", lang).format(got=f"{type(target).__name__} {target!r}"))
    if not callable(target):
        raise TypeError(text("ex:not_callable", lang).format(got=f"{type(target).__name__} {target!r}"))
    return _generator(seed)


def _passed(lang: str, name: str, count: int) -> None:
    print(text("ex:passed", lang).format(name=name, count=count))


def _case(lang: str, shape, affine: Optional[bool] = None, **more) -> str:
    parts = [text("ex:case_input", lang).format(shape=_fmt(shape))]
    parts += [f"{key}={value}" for key, value in more.items()]
    if affine is not None:
        parts.append(text("ex:case_random_affine" if affine else "ex:case_no_affine", lang))
    return ", ".join(parts)
