"""A failing check speaks first (issue 29, point 4): in a notebook, a test cell whose check fails
shows the checker's explanation (CheckFailed's message, in the notebook's language, the text the
feedback page shows as the error's value), then only the student's own lines: the test cell's
call and, when their code raised, the line that raised. No frame of normlib's checker, torch,
IPython or Python, and a few lines in all, where IPython's own traceback was about 20 to 40.

A wrong solution of one assignment per language is executed in a real kernel (nbclient, as
nbgrader's autograde does) and its stored error output read; the full traceback is still there for
a teacher through ``%tb verbose``. normlib_classroom._shown.render is also tested alone, in
plain Python.
"""

from __future__ import annotations

import re
import traceback

import nbformat
import pytest
from nbclient import NotebookClient

from classroom.tools import feedback_pages
from helpers.paths import ROOT
from normlib_classroom import check_layer_norm_stats
from normlib_classroom._report import CheckFailed
from normlib_classroom._shown import render

# what this module needs beyond Python (tests/conftest.py: not in make test-fast)
pytestmark = pytest.mark.nbgrader

ANSI = re.compile(r"\x1b\[[0-9;]*m")
# IPython's own traceback of these failures is 19 lines (a wrong value) to 40 (code that raised);
# the explanation alone is 4 to 6 lines here, each frame of the student's 2.
MAX_LINES = 12
# What no displayed line may mention: the checker's files, the Python environment, normlib's folder.
INTERNALS = ("_slips.py", "_report.py", "_guard.py", "_shown.py", "site-packages", "dist-packages",
             str(ROOT / "normlib"), "classroom/normlib_classroom", "Traceback (most recent call last)", "torch/")

WRONG_VARIANCE = ("def layer_norm_stats(x, normalized_shape):\n"
                  "    mean = x.mean(dim=-1, keepdim=True)\n"
                  "    var = x.var(dim=-1, keepdim=True)\n"
                  "    return mean, var\n")
RAISES = ("def layer_norm_stats(x, normalized_shape):\n"
          "    mean = x.mean(dim=-1, keepdim=True)\n"
          "    return mean, x.variance()\n")
RAISING_LINE = "return mean, x.variance()"


def plain(entries: list[str]) -> list[str]:
    return ANSI.sub("", "\n".join(entries)).split("\n")


def run_assignment(lang: str, solution: str, extra: str = "") -> tuple[dict, str]:
    """Run assignment 1's setup, ``solution`` as its first answer cell and its first test cell (in
    ``lang``), then ``extra`` when given; the test cell's error output and the extra cell's text."""
    nb = nbformat.read(ROOT / "classroom" / "course" / "source" / f"01_layernorm_{lang}" / "01_layernorm.ipynb", 4)
    by_id = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in nb.cells}
    test = by_id["test_layer_norm_stats"]
    test.source = re.sub(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS\n?", "", test.source, flags=re.S)
    by_id["layer_norm_stats"].source = solution
    nb.cells = [by_id["setup"], by_id["layer_norm_stats"], test]
    if extra:
        nb.cells.append(nbformat.v4.new_code_cell(extra))
    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True).execute()
    errors = [o for o in test.outputs if o.output_type == "error"]
    assert len(errors) == 1, test.outputs
    shown = "\n".join(ANSI.sub("", "\n".join(o.get("traceback", [o.get("text", "")]))) for o in nb.cells[-1].outputs) \
        if extra else ""
    return errors[0], shown


def assert_speaks_first(error: dict, lang: str, student_lines: list[str]) -> list[str]:
    assert error.ename == "CheckFailed", error.ename          # nbgrader and the feedback page read these
    lines = plain(error.traceback)
    explanation = error.evalue.split("\n")
    assert lines[:len(explanation)] == explanation, lines     # the explanation first, whole
    title = {"en": "layer_norm_stats is not right yet", "ko": "layer_norm_stats: 아직 맞지 않습니다"}[lang]
    assert lines[0].startswith(title), lines[0]
    leaked = [line for line in lines if any(word in line for word in INTERNALS)]
    assert not leaked, leaked
    frames = lines[len(explanation):]
    arrows = [line.split(" ", 2)[2] for line in frames if line.startswith("---->")]
    assert arrows == student_lines, frames                    # the student's lines, outermost first
    assert len(lines) <= MAX_LINES, f"{len(lines)} lines:\n" + "\n".join(lines)
    if lang == "ko":
        assert not any("Cell In" in line or ", in " in line for line in frames), frames
        assert any(re.fullmatch(r"셀 \[\d+\]의 \d+번째 줄(, 함수 \w+)?", line) for line in frames), frames
    else:
        assert any(re.fullmatch(r"Cell In\[\d+\], line \d+(, in \w+)?", line) for line in frames), frames
    return lines


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_wrong_value_shows_the_explanation_then_the_test_cells_line(lang):
    error, full = run_assignment(lang, WRONG_VARIANCE, extra="%tb verbose")
    lines = assert_speaks_first(error, lang, ["check_layer_norm_stats(layer_norm_stats, LANG)"])
    assert {"en": "unbiased variance", "ko": "표본분산"}[lang] in error.evalue, error.evalue
    # the teacher's way to the whole traceback: IPython's Verbose mode shows the checker's frames
    assert "_report.py" in full and "report.fail()" in full, full[:3000]
    # the feedback page's filter keeps the short traceback's lines: nothing of it is hidden
    kept = plain(feedback_pages.filter_traceback(list(error.traceback), error.ename, lang))
    assert "check_layer_norm_stats(layer_norm_stats, LANG)" in "\n".join(kept), kept
    assert not any("⋯" in line for line in kept), kept
    assert len(kept) <= len(lines), kept


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_code_that_raises_shows_the_line_that_raised(lang):
    error, _ = run_assignment(lang, RAISES)
    assert_speaks_first(error, lang, ["check_layer_norm_stats(layer_norm_stats, LANG)", RAISING_LINE])
    assert "AttributeError" in error.evalue and RAISING_LINE in error.evalue, error.evalue


# --------------------------------------------------------------------------- render, in plain Python

def _stats_that_raise(x, normalized_shape):
    raise ValueError("not finished")          # the student's line


def _failure(lang: str, fn) -> CheckFailed:
    with pytest.raises(CheckFailed) as caught:
        check_layer_norm_stats(fn, lang)      # the test cell's line
    return caught.value


def test_render_gives_the_message_then_the_students_frames():
    error = _failure("en", _stats_that_raise)
    entries = render(error, "en")
    assert entries[0] == str(error) and entries[1] == "", entries
    lines = plain(entries)
    assert "check_layer_norm_stats(fn, lang)      # the test cell's line" in "\n".join(lines), lines
    assert 'raise ValueError("not finished")          # the student\'s line' in "\n".join(lines), lines
    assert not [line for line in lines if any(word in line for word in INTERNALS)], lines
    # outside a notebook a frame is named by its file: this test's, with the function's name
    headings = [line for line in lines if line.startswith(__file__)]
    assert headings and headings[-1].endswith(", in _stats_that_raise"), lines
    # the whole traceback is still the exception's
    assert "_report.py" in "".join(traceback.format_exception(error))
    assert isinstance(error, AssertionError)                       # nbgrader scores the cell zero


def test_render_speaks_korean_for_a_korean_check():
    error = _failure("ko", _stats_that_raise)
    lines = plain(render(error, "ko"))
    assert lines[0].startswith("_stats_that_raise: 아직 맞지 않습니다"), lines
    assert any(line.endswith("번째 줄, 함수 _stats_that_raise") for line in lines), lines
    assert not any(", line " in line or ", in " in line for line in lines), lines


def test_a_wrong_value_has_no_frame_of_the_checker():
    def wrong(x, normalized_shape):
        return x.mean(dim=-1, keepdim=True), x.var(dim=-1, keepdim=True)
    lines = plain(render(_failure("en", wrong), "en"))
    arrows = [line for line in lines if line.startswith("---->")]
    assert len(arrows) == 1 and arrows[0].endswith("# the test cell's line"), lines


def test_render_without_a_student_frame_is_the_message_alone():
    try:
        raise CheckFailed("explanation", lang="en")
    except CheckFailed as error:
        error.__traceback__ = None
        assert render(error, "en") == ["explanation"]


def test_the_renderer_is_what_ipython_asks_for():
    error = _failure("ko", _stats_that_raise)
    assert error.lang == "ko" and error._render_traceback_() == render(error, "ko")
