"""Feedback pages a student can read anywhere: what ``nbgrader generate_feedback`` writes for the
classroom assignments (classroom/GUIDE.md; ``make feedback``).

nbgrader's own page loads MathJax 2 from a CDN, ships no Korean font, speaks English, prints the
teacher's absolute paths and shows the checker's internal traceback before its explanation. This
module keeps nbgrader's pipeline (GenerateFeedback: the autograded notebook, GetGrades, an
nbconvert HTML template) and changes three of its configurable parts, set from
``classroom/course/nbgrader_config.py`` through :func:`configure`, so that ``make feedback`` and a
teacher's own ``nbgrader generate_feedback`` give the same pages:

* one more preprocessor, :class:`FeedbackPage`, after GetGrades. From the assignment's name
  (``NN_name_ko`` / ``NN_name_en``) it takes the page's language and gives the template its
  words. In every output it replaces the absolute paths of the grading machine (the book's
  folder, the course folder, the Python environment, the home and temporary folders). In each
  error it drops the frames that are not the student's (normlib's checker, torch, Python: every
  ``File …`` frame; the notebook's own cells are kept, the student's line with its arrow
  included), says in one line how many were left out and where, and words the traceback's
  headings in the page's language. It says what grading did to the submission (a timeout, a
  call to a reference implementation, an edited or deleted test cell: classroom/tools/feedback_notes.py)
  and cuts NanumGothic to the Hangul the page can show (book/site/korean_font.py's subsetter);
* the template ``classroom/course/templates/feedback_page/`` (nbgrader's ``feedback`` template,
  reworded, its own small stylesheet instead of Bootstrap, readable on a phone): every interface
  word in the page's language, the notes in a box at the top, a failed test's explanation (the
  checker's CheckFailed message) above its traceback, and the cut font inlined (data: URLs);
* the filter ``markdown2html`` of classroom/tools/feedback_math.py: the markdown's TeX as MathML, which
  the browsers draw themselves, so the page carries no MathJax and no script at all.

The page is one file that makes no request: a student can open it from an e-mail, offline, on
a machine without a Korean font. A Korean page of assignment 1 weighs 100–120 kB, about half of
it the two cut faces of NanumGothic (it weighed 2.8 MB with MathJax, its fonts and the whole
NanumGothic inlined); an English one 40–55 kB.
Inlined rather than copied next to the page: nbgrader writes one folder per student and
assignment, and a teacher sends a page, not a folder.
"""

from __future__ import annotations

import base64
import functools
import importlib.util
import json
import re
import site
import sys
import sysconfig
import tempfile
from pathlib import Path

from nbconvert.preprocessors import Preprocessor
from traitlets import Bool, Unicode

from book.site import korean_font
from book.tools.bilingual import assignment_language as language

from . import feedback_math, feedback_notes, grading_notes

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = "feedback_page"                  # classroom/course/templates/feedback_page/
TEMPLATES = "templates"                     # under the course folder

# The words of the page. nbgrader's English ones are its feedback template's; `cell_line` and
# the three traceback phrases are IPython's.
STRINGS = {
    "ko": {
        "title": "피드백",
        "assignment": "과제",
        "student": "학생",
        "score": "점수",
        "top": "맨 위로",
        "your_answer": "작성한 답안",
        "your_task": "과제",
        "test_cell": "검사 셀",
        "coding_response": "코드 답안",
        "written_response": "서술형 답안",
        "task": "과제",
        "comment": "코멘트",
        "late_penalty": "늦은 제출 감점",
        "check_says": "검사 결과",
        "error": "오류",
        "where": "오류가 난 곳",
        "timeout": "이 셀은 제한 시간 안에 끝나지 않아 중단되었습니다. 끝나지 않는 반복문이 있는지 확인하세요.",
        "no_response": "답안이 없습니다 (배포된 코드 그대로입니다).",
        "interrupted": "제한 시간을 넘어 실행이 중단되었습니다.",
        "traceback": "트레이스백 (가장 최근 호출이 마지막)",
        "cause": "위 예외가 아래 예외의 직접 원인입니다:",
        "context": "위 예외를 처리하는 중에 다른 예외가 발생했습니다:",
        "cell_line": "셀 [{cell}]의 {line}번째 줄",
        "in_function": ", 함수 {function}",
        "hidden": "⋯ {where} 안의 단계 {n}개는 생략했습니다",
        "see_above": "위의 설명을 보세요",
    },
    "en": {
        "title": "feedback",
        "assignment": "Assignment",
        "student": "Student",
        "score": "Score",
        "top": "Top",
        "your_answer": "Your answer",
        "your_task": "Your task",
        "test_cell": "Test cell",
        "coding_response": "Coding free-response",
        "written_response": "Written response",
        "task": "Task",
        "comment": "Comments",
        "late_penalty": "Late submission penalty",
        "check_says": "What the check found",
        "error": "Error",
        "where": "Where it happened",
        "timeout": "This cell did not finish within the time limit and was stopped: look for a loop that never ends.",
        "no_response": "No response (the code is still as handed out).",
        "interrupted": "stopped: the cell ran past the time limit.",
        "traceback": "Traceback (most recent call last)",
        "cause": "The above exception was the direct cause of the following exception:",
        "context": "During handling of the above exception, another exception occurred:",
        "cell_line": "Cell [{cell}], line {line}",
        "in_function": ", in {function}",
        "hidden": "⋯ {n} {frames} inside {where} hidden",
        "see_above": "see the explanation above",
    },
}
NO_RESPONSE = "No response."                 # nbgrader's comment on an unanswered solution cell
CHECK_FAILED = "CheckFailed"                 # normlib_classroom's exception: its message is the explanation


# --------------------------------------------------------------------------- paths

def _prefixes(course: Path | None) -> list[tuple[str, str]]:
    """(absolute folder, what replaces it), longest first: where the grading machine's paths
    come from. A file under the book or the course becomes relative to it, a library file
    relative to site-packages (``torch/nn/functional.py``), the home folder ``~``."""
    pairs: list[tuple[str, str]] = []
    libraries = [sysconfig.get_paths().get(k) for k in ("purelib", "platlib", "stdlib", "platstdlib")]
    try:
        libraries += site.getsitepackages() + [site.getusersitepackages()]
    except AttributeError:      # virtualenv's old site.py
        pass
    pairs += [(p, "") for p in libraries if p]
    pairs += [(str(ROOT), ""), (sys.prefix, ""), (sys.base_prefix, ""), (tempfile.gettempdir(), "")]
    if course is not None:
        pairs.append((str(course), ""))
    pairs.append((str(Path.home()), "~"))
    for prefix, _ in list(pairs):        # the same folders reached through a symlink
        real = str(Path(prefix).resolve()) if prefix else ""
        if real and real != prefix:
            pairs.append((real, dict(pairs)[prefix]))
    unique = {p.rstrip("/\\"): r for p, r in pairs if p and len(p.rstrip("/\\")) > 1}
    return sorted(unique.items(), key=lambda pr: len(pr[0]), reverse=True)


# Any other absolute path (POSIX, or Windows with a drive letter): its folders are replaced by "…".
# Not preceded by a word character, a dot or a slash, so "https://host/a/b" and "1/2/3" stay.
_POSIX_PATH = re.compile(r"(?<![\w.~:/\\-])/(?:[^\s/\\'\"<>():,]+/)+(?=[^\s/\\'\"<>():,]+)")
_ANSI_SPLIT = re.compile(r"(\x1b\[[0-9;]*m)")
_WINDOWS_PATH = re.compile(r"\b[A-Za-z]:\\(?:[^\s\\/'\"<>:]+\\)+(?=[^\s\\/'\"<>:]+)")


def scrub_paths(text: str, prefixes: list[tuple[str, str]], others: bool = True) -> str:
    """``text`` without the grading machine's absolute paths: the known folders of ``prefixes``
    and, with ``others``, any other absolute path (its folders become "…")."""
    for prefix, replacement in prefixes:
        if prefix in text:
            text = re.sub(re.escape(prefix) + r"[/\\]", replacement + ("/" if replacement else ""), text)
            text = re.sub(re.escape(prefix) + r"(?![\w.-])", replacement or ".", text)
    if others:                           # piece by piece between ANSI colour codes ("\x1b[32m/home/…")
        pieces = _ANSI_SPLIT.split(text)
        text = "".join(piece if i % 2 else _WINDOWS_PATH.sub("…\\\\", _POSIX_PATH.sub("…/", piece))
                       for i, piece in enumerate(pieces))
    return text


# --------------------------------------------------------------------------- tracebacks

ANSI = re.compile(r"\x1b\[[0-9;]*m")
_HEADER = re.compile(r"^(\S+)\s+Traceback \(most recent call last\)\s*$")
_CELL = re.compile(r"^(?:Cell In|Input In ?)\[(\d*)\], line (\d+)(?:, in (.*))?$")
_FILE = re.compile(r"^File (.+?)(?::\d+)?(?:, in .*)?$")
_RULE = re.compile(r"-{20,}")
_CAUSE = "The above exception was the direct cause of the following exception:"
_CONTEXT = "During handling of the above exception, another exception occurred:"


def plain(text: str) -> str:
    return ANSI.sub("", text)


NORMLIB_PACKAGES = {"normlib", "normlib_book", "normlib_classroom", "normlib_benchmarks"}


def _package(path: str) -> str:
    """Where a hidden frame's file belongs: ``normlib``, ``torch``, ``Python`` (the standard library) …
    (the library and the packages shipped beside it, normlib_classroom's checkers included: ``normlib``)"""
    parts = re.split(r"[/\\]", path.strip())
    for marker in ("site-packages", "dist-packages"):
        if marker in parts and parts.index(marker) + 1 < len(parts):
            name = parts[parts.index(marker) + 1].removesuffix(".py")
            return "normlib" if name in NORMLIB_PACKAGES else name
    if NORMLIB_PACKAGES & set(parts):
        return "normlib"
    if path.startswith("<") or any(re.fullmatch(r"python\d[\d.]*", p) for p in parts):
        return "Python"
    return parts[-1] if parts else path


def _join(names: list[str]) -> str:
    return ", ".join(dict.fromkeys(names))


def filter_traceback(entries: list[str], ename: str, lang: str) -> list[str]:
    """IPython's traceback (one entry per frame, ANSI-coloured) as the student should see it:
    the notebook's cells only, one line saying which frames were left out, the headings in
    ``lang``; for a CheckFailed, the last line points to the explanation above it."""
    t = STRINGS[lang]
    out: list[str] = []
    hidden: list[str] = []

    def flush() -> None:
        if hidden:
            note = t["hidden"].format(n=len(hidden), frames="frame" if len(hidden) == 1 else "frames", where=_join(hidden))
            out.append(f"\x1b[90m{note}\x1b[39m")
            hidden.clear()

    for index, entry in enumerate(entries):
        text = plain(entry)
        first = text.strip("\n").split("\n", 1)[0]
        if (m := _FILE.match(first)) and not _CELL.match(first):
            hidden.append(_package(m.group(1)))
            continue
        if _RULE.fullmatch(text.strip()):     # IPython's line of dashes above the heading
            continue
        flush()
        if m := _HEADER.match(text.strip("\n")):
            entry = f"\x1b[31m{m.group(1)}\x1b[39m    {t['traceback']}"
        elif m := _CELL.match(first):
            cell, line, function = m.groups()
            head = "\x1b[36m" + t["cell_line"].format(cell=cell or " ", line=line) + "\x1b[39m"
            if function:
                head += t["in_function"].format(function=f"\x1b[36m{function}\x1b[39m")
            rest = entry.strip("\n").split("\n", 1)
            entry = head + ("\n" + rest[1] if len(rest) > 1 else "")
        elif _CAUSE in text:
            entry = "\n" + t["cause"] + "\n"
        elif _CONTEXT in text:
            entry = "\n" + t["context"] + "\n"
        elif index == len(entries) - 1 and ename == CHECK_FAILED and text.startswith(CHECK_FAILED):
            entry = f"\x1b[31m{CHECK_FAILED}\x1b[39m: {t['see_above']}"
        out.append(entry)
    flush()
    return out


# --------------------------------------------------------------------------- the Korean font

HANGUL_RANGE = "U+3131-318E, U+AC00-D7A3"    # as in book/site/offline_book/nanum-gothic.css
# Where NanumGothic comes from: the book's vendored faces (book/site/korean_font.py), else the
# TrueType files of koreanize-matplotlib (requirements.txt), so a page always has its font.
KOREANIZE = {400: "NanumGothic.ttf", 700: "NanumGothicBold.ttf"}


def nanum_source(weight: int) -> Path | None:
    found = korean_font.source_font(weight)
    if found is None:
        spec = importlib.util.find_spec("koreanize_matplotlib")
        if spec and spec.origin:
            path = Path(spec.origin).parent / "fonts" / KOREANIZE[weight]
            found = path if path.exists() else None
    return found


@functools.lru_cache(maxsize=64)
def _subset(source: Path, chars: str) -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "subset.woff2"
        korean_font.subset(source, target, set(chars))
        return target.read_bytes()


@functools.lru_cache(maxsize=1)
def _common_hangul() -> frozenset[str]:
    """The Hangul any Korean page may show whoever the student: the checkers' messages, the page's
    and the notes' words. Cutting the font to these and the page's own makes most pages of an
    assignment ask for the same cut, made once per nbgrader process (a cut takes seconds)."""
    from normlib_classroom.words import PAIRS
    text = json.dumps([[ko for ko, _ in PAIRS.values()], STRINGS["ko"], feedback_notes.WORDS["ko"],
                       feedback_notes.SENTENCES], ensure_ascii=False)
    return frozenset(c for c in text if korean_font.HANGUL.match(c))


def nanum_faces(chars: set[str], log=print) -> str:
    """@font-face rules for NanumGothic regular and bold, cut to ``chars`` and the Hangul every
    Korean page may show (Hangul only), inlined as data: URLs; "" when there is no Hangul, or no
    font to cut (said through ``log``)."""
    page = {c for c in chars if korean_font.HANGUL.match(c)}
    hangul = "".join(sorted(page | _common_hangul())) if page else ""
    if not hangul:
        return ""
    rules = []
    for weight in korean_font.WEIGHTS:
        source = nanum_source(weight)
        if source is None:
            log("feedback pages: NanumGothic not found (make assets, or pip install -r requirements.txt): "
                "the Korean pages have no font of their own")
            return ""
        data = base64.b64encode(_subset(source, hangul)).decode("ascii")
        rules.append(f'@font-face {{ font-family: "NanumGothic"; font-style: normal; font-weight: {weight}; '
                     f'font-display: block; src: url("data:font/woff2;base64,{data}") format("woff2"); '
                     f"unicode-range: {HANGUL_RANGE}; }}")
    return "\n".join(rules)


def has_hangul(text: str) -> bool:
    return korean_font.HANGUL.search(text) is not None


# --------------------------------------------------------------------------- the preprocessor

class FeedbackPage(Preprocessor):
    """After nbgrader's GetGrades: the page's language and words, outputs without the grading
    machine's paths, tracebacks the student can read, and the assets to inline
    (``resources["feedback_page"]``, read by the template ``feedback_page``)."""

    enabled = Bool(True, help="nbconvert runs a preprocessor only when it is enabled").tag(config=True)
    course = Unicode("", help="The course folder (default: the working folder, where nbgrader runs)").tag(config=True)

    def preprocess(self, nb, resources):
        info = resources.get("nbgrader", {})
        lang = language(info.get("assignment", ""))
        prefixes = _prefixes(Path(self.course or Path.cwd()))
        notes = feedback_notes.sentences(nb, lang)       # before the outputs are reworded
        for cell in nb.cells:
            cell.source = scrub_paths(cell.source, prefixes, others=False)
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("comment") == NO_RESPONSE:
                meta["comment"] = STRINGS[lang]["no_response"]
            for output in cell.get("outputs", []):
                self._output(output, lang, prefixes)
        # Every character the page can show: the notebook, the page's words, the notes, the names.
        shown = json.dumps([nb, STRINGS[lang], feedback_notes.WORDS[lang], notes, info], ensure_ascii=False,
                           default=str)
        resources["feedback_page"] = {
            "lang": lang,
            "t": STRINGS[lang],
            "notes": notes,
            "notes_title": feedback_notes.WORDS[lang]["title"],
            "nanum": nanum_faces(set(shown), self.log.warning),
        }
        return nb, resources

    @staticmethod
    def _output(output, lang: str, prefixes) -> None:
        if output.output_type == "stream":
            output.text = scrub_paths(output.text, prefixes)
        elif output.output_type == "error":
            entries = list(output.get("traceback", []))
            if output.ename == CHECK_FAILED and entries and plain(entries[0]).strip() == output.evalue.strip():
                entries = [e for e in entries[1:] if plain(e).strip()]   # the explanation is the page's own block
            output.evalue = scrub_paths(output.evalue, prefixes)
            entries = filter_traceback(entries, output.ename, lang)
            output.traceback = [scrub_paths(e, prefixes) for e in entries]
            if output.ename == grading_notes.TIMEOUT_ERROR:   # nbgrader's: the traceback is nbclient's English line
                output.evalue, output.traceback = STRINGS[lang]["timeout"], []
            elif output.ename == "KeyboardInterrupt" and not output.evalue.strip():   # the timeout's interrupt
                output.evalue = STRINGS[lang]["interrupted"]
        elif "data" in output:
            for mime, value in output.data.items():
                if mime.startswith("text/") and isinstance(value, str):
                    output.data[mime] = scrub_paths(value, prefixes)


# --------------------------------------------------------------------------- nbgrader's configuration

def configure(c, course: Path) -> None:
    """Make ``nbgrader generate_feedback`` write these pages (called by nbgrader_config.py).

    Everything is set for GenerateFeedback alone (``c.GenerateFeedback.HTMLExporter``, which
    outranks the ``c.HTMLExporter`` nbgrader sets itself), so the formgrader's templates stay
    nbgrader's."""
    from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
    from nbgrader.preprocessors import GetGrades

    c.GenerateFeedback.preprocessors = [GetGrades, CSSHTMLHeaderPreprocessor, FeedbackPage]
    c.GenerateFeedback.HTMLExporter.template_name = TEMPLATE
    c.GenerateFeedback.HTMLExporter.extra_template_basedirs = [str(Path(course) / TEMPLATES)]
    # The markdown's math as MathML (classroom/tools/feedback_math.py), in this exporter only.
    c.GenerateFeedback.HTMLExporter.filters = {"markdown2html": feedback_math.markdown2html}
    c.FeedbackPage.course = str(course)
