"""The feedback page's parts, fast, through the page's own preprocessor and template (no nbgrader
run, no kernel): the box at the top that says what grading did to the submission
(classroom/tools/feedback_notes.py), in both languages, from the classroom script's notes and, without
them, from the outputs; and the formulas as MathML, with a visible fallback
(classroom/tools/feedback_math.py); and the functions that shorten a traceback, remove the grading
machine's paths and word a page in the assignment's language, and the course's config that sets them up.
The pages of a real graded class (nbgrader, Chromium: slow) are tests/classroom/test_feedback_pages.py's.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest
from bs4 import BeautifulSoup
from nbconvert import HTMLExporter
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from traitlets.config import Config

from classroom.tools import feedback_math, feedback_pages
from helpers.paths import ROOT

HANGUL = re.compile("[\uac00-\ud7a3]")
MARKDOWN = ("## Part 2\n\nWrite $y = \\frac{x - \\mu}{\\sqrt{\\sigma^2 + \\epsilon}}$ with $W'$ and "
            "$m = 1/\\text{num\\_batches\\_tracked}$ (not `$x$`, which is code).\n\n"
            "$$\n\\hat{\\mu} \\leftarrow (1 - m)\\,\\hat{\\mu} + m\\,\\mu_B\n$$\n")


def _graded(source: str, grade_id: str, score: float, points: float = 3) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade": True, "solution": False, "locked": True, "grade_id": grade_id,
                                 "points": points, "score": score}
    return cell


def _notebook(notes: list | None = None, outputs: dict | None = None, scores: dict | None = None):
    """A graded notebook: a markdown cell with math, an answer, three test cells."""
    scores = scores or {}
    answer = nbformat.v4.new_code_cell("def train(x):\n    return x")
    answer.metadata["nbgrader"] = {"grade": False, "solution": True, "locked": False, "grade_id": "answer"}
    cells = [nbformat.v4.new_markdown_cell(MARKDOWN), answer]
    for name in ("test_train", "test_running", "test_eval"):
        cell = _graded(f"check({name!r})", name, scores.get(name, 0))
        cell.outputs = (outputs or {}).get(name, [])
        cells.append(cell)
    nb = nbformat.v4.new_notebook(cells=cells)
    if notes is not None:
        nb.metadata["classroom"] = {"notes": notes}
    return nb


def _page(nb, lang: str, tmp_path) -> BeautifulSoup:
    """The page nbgrader's GenerateFeedback would write with the course's settings (minus GetGrades,
    whose scores the cells already hold)."""
    course = Config()
    feedback_pages.configure(course, ROOT / "classroom" / "course")
    exporter_config = course.GenerateFeedback.HTMLExporter
    config = Config()
    config.HTMLExporter.template_name = exporter_config.template_name
    config.HTMLExporter.extra_template_basedirs = exporter_config.extra_template_basedirs
    config.HTMLExporter.filters = exporter_config.filters
    config.HTMLExporter.preprocessors = [CSSHTMLHeaderPreprocessor, feedback_pages.FeedbackPage]
    config.FeedbackPage.course = str(tmp_path)
    info = {"notebook": "01_batchnorm", "assignment": f"02_batchnorm_{lang}", "student": "kim", "score": 0,
            "max_score": 9, "late_penalty": 0}
    html, _ = HTMLExporter(config=config).from_notebook_node(nb, resources={"nbgrader": info})
    (tmp_path / f"page_{lang}.html").write_text(html, encoding="utf-8")
    return BeautifulSoup(html, "html.parser")


def _items(soup: BeautifulSoup) -> list:
    box = soup.select_one(".fp-notes")
    return box.select("li") if box else []


ALL_NOTES = [
    {"kind": "timeout", "cells": ["test_train"], "seconds": 60},
    {"kind": "delegation", "cells": ["test_eval"], "calls": ["torch.nn.BatchNorm1d"]},
    {"kind": "edited", "cells": ["test_running"]},
    {"kind": "put_back", "cells": ["test_eval"]},
    {"kind": "deleted", "cells": ["intro_checks"]},
]
# What each sentence must say, in the student's words (not the module's templates).
SAYS = {
    "ko": {"timeout": ["60초", "0점", "멈췄"], "delegation": ["torch.nn.BatchNorm1d", "0점"],
           "edited": ["되돌려", "통과", "0점"], "put_back": ["되살려", "채점"], "deleted": ["지워져", "되살리지"]},
    "en": {"timeout": ["60 seconds", "scores 0", "stopped"], "delegation": ["torch.nn.BatchNorm1d", "scores 0"],
           "edited": ["original content back", "passed", "scores 0"], "put_back": ["put it back", "graded"],
           "deleted": ["deleted", "does not put"]},
}


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_each_note_is_one_sentence_naming_and_linking_its_cells(lang, tmp_path):
    soup = _page(_notebook(ALL_NOTES), lang, tmp_path)
    box = soup.select_one(".fp-notes")
    assert box is not None, "no box of notes"
    html = str(soup)
    assert html.index("fp-notes") < html.index('id="notebook"'), "the box is not above the notebook"
    items = _items(soup)
    assert len(items) == len(ALL_NOTES), [i.get_text() for i in items]
    anchors = {a.get("name") for a in soup.select("a[name]")} | {t.get("id") for t in soup.select("[id]")}
    for note, item in zip(ALL_NOTES, items):
        text = re.sub(r"\s+", " ", item.get_text(" "))
        for cell in note["cells"]:
            assert cell in text, f"{note['kind']}: {cell} not named in {text!r}"
        for phrase in SAYS[lang][note["kind"]]:
            assert phrase in text, f"{lang} {note['kind']}: {phrase!r} not in {text!r}"
        links = [a["href"][1:] for a in item.select("a[href^='#']")]
        on_page = [c for c in note["cells"] if c in anchors]
        assert links == on_page, f"{note['kind']}: links {links}, cells on the page {on_page}"
        if lang == "ko":
            assert HANGUL.search(text) and not re.search(r"\b(Test|cell|scores|the)\b", text), text
        else:
            assert not HANGUL.search(text), text
    title = box.select_one("h2").get_text()
    assert bool(HANGUL.search(title)) == (lang == "ko"), title


def test_an_edited_cell_that_scored_says_its_score(tmp_path):
    notes = [{"kind": "edited", "cells": ["test_running"]}]
    text = _items(_page(_notebook(notes, scores={"test_running": 2}), "en", tmp_path))[0].get_text(" ")
    assert "2 / 3" in text and "scores 0" not in text, text


def test_no_box_when_there_is_nothing_to_say(tmp_path):
    for notes in (None, []):
        soup = _page(_notebook(notes), "ko", tmp_path)
        assert soup.select_one(".fp-notes") is None


def _delegation_message(lang: str) -> str:
    """What normlib's checker says of a layer_norm that calls torch's (the real message)."""
    import torch

    from normlib_classroom import CheckFailed, check_layer_norm

    def delegating(x, shape, weight=None, bias=None, eps=1e-5):
        return torch.nn.functional.layer_norm(x, shape, weight, bias, eps)

    with pytest.raises(CheckFailed) as failed:
        check_layer_norm(delegating, lang)
    return str(failed.value)


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_without_the_scripts_notes_the_outputs_tell(lang, tmp_path):
    """A teacher's own `nbgrader generate_feedback`: the timeout and the delegation from the outputs."""
    outputs = {
        "test_train": [nbformat.v4.new_output("error", ename="CellTimeoutError", evalue="", traceback=[
            "\x1b[0;31mCellTimeoutError\x1b[0m: No reply from kernel before timeout"])],
        "test_eval": [nbformat.v4.new_output("error", ename="CheckFailed", evalue=_delegation_message(lang),
                                             traceback=[])],
    }
    items = _items(_page(_notebook(None, outputs), lang, tmp_path))
    texts = [re.sub(r"\s+", " ", i.get_text(" ")) for i in items]
    assert len(texts) == 2, texts
    assert "test_train" in texts[0] and SAYS[lang]["timeout"][1] in texts[0], texts[0]
    assert "test_eval" in texts[1] and "torch.nn.functional.layer_norm" in texts[1], texts[1]
    # Said once when the script's note says it too.
    notes = [{"kind": "timeout", "cells": ["test_train"], "seconds": 30}]
    texts = [i.get_text(" ") for i in _items(_page(_notebook(notes, outputs), lang, tmp_path))]
    assert len(texts) == 2 and sum("test_train" in t for t in texts) == 1, texts
    assert ("30초" if lang == "ko" else "30 seconds") in texts[0], texts[0]


# --------------------------------------------------------------------------- math

def test_the_markdowns_tex_becomes_mathml(tmp_path):
    soup = _page(_notebook(), "en", tmp_path)
    cell = soup.select(".rendered_html")[0]
    assert len(cell.select("math")) == 4 and len(cell.select('math[display="block"]')) == 1, cell
    assert cell.select_one("code").get_text() == "$x$", "math inside code must stay code"
    assert "<mtext>num_batches_tracked</mtext>" in str(cell.select("math")[2]), "\\_ inside \\text kept escaped"
    for tag in cell(["code", "math"]):
        tag.decompose()
    assert "$" not in cell.get_text() and "\\" not in cell.get_text(), cell.get_text()


@pytest.mark.parametrize("tex", ["\\foo{x}", "\\frac{1}{", "x^{", "\\begin{unknownenv}x\\end{unknownenv}"])
def test_tex_that_cannot_be_converted_is_shown_as_tex(tex):
    html = feedback_math.render(f"before ${tex}$ after")
    soup = BeautifulSoup(html, "html.parser")
    shown = soup.select_one(f".{feedback_math.TEX_CLASS} code")
    assert shown is not None and tex in shown.get_text(), html
    assert not soup.select("math"), html
    assert "before" in html and "after" in html


def test_the_converted_math_has_no_tex_left():
    for tex in ("y = \\frac{x - \\mu}{\\sqrt{\\sigma^2 + \\epsilon}} \\cdot \\gamma + \\beta",
                "\\frac{\\partial L}{\\partial x} = r \\cdot \\bigl(g - \\mathrm{mean}(g)\\bigr)",
                "W' = s \\cdot W, \\qquad b' = s \\cdot b + t", "\\hat{\\sigma}^2 \\leftarrow (1 - m)\\,\\hat{\\sigma}^2"):
        mathml = feedback_math.tex_to_mathml(tex, display=True)
        assert mathml.startswith('<math display="block">') and "\\" not in mathml, mathml


def test_a_kernel_killed_for_ignoring_the_interrupt_is_said_in_both_languages():
    """The timeout whose kernel was killed (classroom/tools/grading_execute.py): read from the output, said on the
    page (the student learns why, and what to write instead) and in grades.csv's note."""
    from classroom.tools import feedback_notes, grading_notes
    error = nbformat.v4.new_output("error", ename="CellTimeoutError", evalue=grading_notes.KILLED, traceback=[])
    nb = _notebook(outputs={"test_train": [error]})
    (note,) = grading_notes.from_outputs(nb, 8)
    assert note == {"kind": "timeout", "cells": ["test_train"], "seconds": 8, "killed": True}
    assert grading_notes.describe(note) == ("stopped at the time limit (8 s), 0 points: test_train; it ignored the "
                                            "interrupt, so its kernel was killed and the cells before run again in a "
                                            "new one")
    ko, en = (feedback_notes.sentences(nb, lang)[0] for lang in ("ko", "en"))
    assert "except Exception:" in ko and "인터럽트" in ko and "새 프로세스에서" in ko
    assert "killed the kernel" in en and not HANGUL.search(en)
    plain = nbformat.v4.new_output("error", ename="CellTimeoutError", evalue="", traceback=[])
    assert "killed" not in grading_notes.from_outputs(_notebook(outputs={"test_train": [plain]}), 8)[0]


# --------------------------------------------------------------------------- the traceback, the paths, the preprocessor, the config

SHELL = """
import json, sys
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config
config = Config()
config.HistoryManager.enabled = False
shell = InteractiveShell.instance(config=config)
captured = {}
shell._showtraceback = lambda etype, evalue, stb: captured.update(ename=etype.__name__, evalue=str(evalue), traceback=stb)
shell.run_cell(sys.stdin.read(), store_history=True)
print(json.dumps(captured))
"""


def _traceback_of(code: str, tmp_path: Path) -> dict:
    """The error output IPython gives for ``code`` run as a notebook cell (in a separate
    process: IPython's shell is a singleton with a history file)."""
    result = subprocess.run([sys.executable, "-c", SHELL], input=code, cwd=ROOT, capture_output=True, text=True,
                            timeout=300, check=True, env=dict(os.environ, IPYTHONDIR=str(tmp_path)))
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_the_traceback_keeps_the_notebooks_cells_only(tmp_path):
    """A real IPython traceback through normlib's checker: the notebook's lines stay, the
    checker's frames become one line naming normlib, the headings are translated."""
    error = _traceback_of(
        "from normlib_classroom import check_layer_norm_stats\n"
        "from normlib_classroom._report import CheckFailed\n"
        "del CheckFailed._render_traceback_\n"      # IPython's own traceback, as without normlib's renderer
        "def stats(x, shape):\n"
        "    raise ValueError('not finished')\n"
        "check_layer_norm_stats(stats, 'ko')\n", tmp_path)
    assert error["ename"] == "CheckFailed", error
    before = "\n".join(feedback_pages.plain(e) for e in error["traceback"])
    assert "_report.py" in before and "Traceback (most recent call last)" in before
    after = "\n".join(feedback_pages.plain(e) for e in feedback_pages.filter_traceback(error["traceback"], "CheckFailed", "ko"))
    assert "_report.py" not in after and "File " not in after and "normlib/" not in after, after
    assert "normlib 안의 단계" in after and "생략했습니다" in after, after
    assert "raise ValueError('not finished')" in after and "---->" in after, after
    assert "트레이스백 (가장 최근 호출이 마지막)" in after and "위 예외가 아래 예외의 직접 원인입니다:" in after, after
    assert after.rstrip().endswith("CheckFailed: 위의 설명을 보세요"), after
    english = "\n".join(feedback_pages.plain(e) for e in feedback_pages.filter_traceback(error["traceback"], "CheckFailed", "en"))
    assert re.search(r"⋯ \d frames? inside normlib hidden", english) and "Traceback (most recent call last)" in english


def test_paths_of_the_machine_are_removed():
    course = Path(tempfile.gettempdir()) / "class" / "assignments"
    prefixes = feedback_pages._prefixes(course)
    torch_file = next(Path(p) for p in sys.path if (Path(p) / "torch" / "__init__.py").exists()) / "torch" / "nn" / "functional.py"
    text = (f"File {ROOT / 'classroom' / 'normlib_classroom' / '_report.py'}:80\n"
            f"{torch_file}:2900: UserWarning\n"
            f"cwd {course / 'autograded' / 'kim' / 'x.ipynb'}\n"
            f"home {Path.home() / 'notes.txt'}\n"
            "elsewhere /srv/school/2025/grades.csv and C:\\Users\\teacher\\class\\a.ipynb\n"
            "coloured \x1b[32m/srv/school/notes.py:3\x1b[39m\n"
            "kept: https://github.com/normlib-book/normalization-layers/a/b, 1/2/3, (x − μ) / sqrt(σ² + eps)")
    clean = feedback_pages.scrub_paths(text, prefixes)
    assert "File classroom/normlib_classroom/_report.py:80" in clean, clean
    assert "torch/nn/functional.py:2900" in clean and "autograded/kim/x.ipynb" in clean, clean
    assert "~/notes.txt" in clean and "…/grades.csv" in clean and "…\\a.ipynb" in clean, clean
    assert "\x1b[32m…/notes.py:3\x1b[39m" in clean, clean
    assert "https://github.com/normlib-book/normalization-layers/a/b, 1/2/3, (x − μ) / sqrt(σ² + eps)" in clean
    for secret in (str(ROOT), str(course), sys.prefix, str(Path.home()) + "/", "/srv/", "C:\\Users"):
        assert secret not in clean, (secret, clean)


def test_the_preprocessor_words_a_page_in_the_assignments_language():
    nb = nbformat.v4.new_notebook()
    answer = nbformat.v4.new_code_cell("raise NotImplementedError()")
    answer.metadata["nbgrader"] = {"solution": True, "grade": False, "grade_id": "stats", "comment": "No response."}
    test = nbformat.v4.new_code_cell("check(stats)")
    test.outputs = [nbformat.v4.new_output("error", ename="CellTimeoutError", evalue="A cell timed out …",
                                           traceback=[]),
                    nbformat.v4.new_output("stream", name="stderr", text=f"{sys.prefix}/lib/x.py:1: UserWarning")]
    nb.cells = [answer, test]
    for lang in ("ko", "en"):
        page = json.loads(json.dumps(nb))
        page = nbformat.from_dict(page)
        _, resources = feedback_pages.FeedbackPage().preprocess(page, {"nbgrader": {"assignment": f"01_layernorm_{lang}"}})
        words = feedback_pages.STRINGS[lang]
        assert resources["feedback_page"]["lang"] == lang and resources["feedback_page"]["t"] is words
        assert page.cells[0].metadata.nbgrader.comment == words["no_response"]
        assert page.cells[1].outputs[0].evalue == words["timeout"] and page.cells[1].outputs[0].traceback == []
        assert sys.prefix not in page.cells[1].outputs[1].text
    assert feedback_pages.language("04_axes_groupnorm_ko") == "ko"
    assert feedback_pages.language("04_axes_groupnorm_en") == "en"


def test_the_course_config_sets_the_feedback_pipeline():
    from traitlets.config.loader import PyFileConfigLoader
    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT / "classroom" / "course")).load_config()
    assert feedback_pages.FeedbackPage in config.GenerateFeedback.preprocessors
    assert config.GenerateFeedback.preprocessors[0].__name__ == "GetGrades"
    assert config.GenerateFeedback.HTMLExporter.template_name == feedback_pages.TEMPLATE
    folder = Path(config.GenerateFeedback.HTMLExporter.extra_template_basedirs[0]) / feedback_pages.TEMPLATE
    assert (folder / "index.html.j2").exists() and (folder / "conf.json").exists()
    assert config.GenerateFeedback.HTMLExporter.filters["markdown2html"] is feedback_math.markdown2html
    assert "template_name" not in config.HTMLExporter, "the formgrader's templates must stay nbgrader's"
    assert "filters" not in config.HTMLExporter
