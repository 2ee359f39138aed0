"""Feedback pages a student can read anywhere: what ``nbgrader generate_feedback`` writes for the
classroom assignments (README, "Classroom"; ``make feedback``).

nbgrader's own page loads MathJax 2 from a CDN, ships no Korean font, speaks English, prints the
teacher's absolute paths and shows the checker's internal traceback before its explanation. This
module keeps nbgrader's pipeline (GenerateFeedback: the autograded notebook, GetGrades, an
nbconvert HTML template) and changes two of its configurable parts, set from
``assignments/nbgrader_config.py`` through :func:`configure`, so that ``make feedback`` and a
teacher's own ``nbgrader generate_feedback`` give the same pages:

* one more preprocessor, :class:`FeedbackPage`, after GetGrades. From the assignment's name
  (``NN_name_ko`` / ``NN_name_en``) it takes the page's language and gives the template its
  words. In every output it replaces the absolute paths of the grading machine (the book's
  folder, the course folder, the Python environment, the home and temporary folders). In each
  error it drops the frames that are not the student's (normlib's checker, torch, Python: every
  ``File …`` frame; the notebook's own cells are kept, the student's line with its arrow
  included), says in one line how many were left out and where, and words the traceback's
  headings in the page's language. It also reads the book's vendored browser assets
  (tools/vendor_assets.py: MathJax 3 and NanumGothic) for the template to inline;
* the template ``assignments/templates/feedback_page/`` (nbgrader's ``feedback`` template,
  reworded): every interface word in the page's language, a failed test's explanation (the
  checker's CheckFailed message) above its traceback, and MathJax, its fonts and NanumGothic
  inlined (data: URLs), so the page is one file that makes no request at all: a student can open
  it from an e-mail, offline, on a machine without a Korean font. It weighs about 2.8 MB
  (MathJax 1.2 MB, its fonts 0.5 MB, NanumGothic regular and bold 1 MB); NanumGothic is left out
  of a page without Hangul.

Inlined rather than copied next to the page: nbgrader writes one folder per student and
assignment, and a teacher sends a page, not a folder. When the assets are not vendored (no npm:
the book then falls back to CDNs too) :func:`assets` says so, and the page loads nbgrader's CDN
MathJax, as before.
"""

from __future__ import annotations

import base64
import functools
import re
import site
import sys
import sysconfig
import tempfile
from pathlib import Path

from nbconvert.preprocessors import Preprocessor
from traitlets import Bool, Unicode

from . import vendor_assets

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = "feedback_page"                  # assignments/templates/feedback_page/
TEMPLATES = "templates"                     # under the course folder
LANGS = ("ko", "en")

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
        "coding_response": "코드 서술형 답안",
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
CHECK_FAILED = "CheckFailed"                 # normlib.exercises' exception: its message is the explanation


def language(assignment: str) -> str:
    """The language of an assignment, from its name (``01_layernorm_ko``); English otherwise."""
    suffix = assignment.rsplit("_", 1)[-1]
    return suffix if suffix in LANGS else "en"


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
_CAUSE = "The above exception was the direct cause of the following exception:"
_CONTEXT = "During handling of the above exception, another exception occurred:"


def plain(text: str) -> str:
    return ANSI.sub("", text)


def _package(path: str) -> str:
    """Where a hidden frame's file belongs: ``normlib``, ``torch``, ``Python`` (the standard library) …"""
    parts = re.split(r"[/\\]", path.strip())
    for marker in ("site-packages", "dist-packages"):
        if marker in parts and parts.index(marker) + 1 < len(parts):
            return parts[parts.index(marker) + 1].removesuffix(".py")
    if "normlib" in parts:
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


# --------------------------------------------------------------------------- assets

HANGUL_RANGE = "U+3131-318E, U+AC00-D7A3"    # as in tools/offline_book/nanum-gothic.css
NANUM = {400: "fonts/nanum-gothic-korean-400-normal.woff2", 700: "fonts/nanum-gothic-korean-700-normal.woff2"}
MATHJAX = "mathjax/tex-chtml.js"
MATHJAX_FONTS = "mathjax/output/chtml/fonts/woff-v2"


def _data_url(path: Path, mime: str) -> str:
    return f"data:{mime};base64," + base64.b64encode(path.read_bytes()).decode("ascii")


NOT_VENDORED = ("feedback pages: the book's MathJax and Korean font are not vendored (install Node.js/npm, then "
                "run `make assets`); these pages load MathJax from a CDN and have no Korean font")


def assets(log=print) -> dict | None:
    """The book's vendored MathJax (its fonts inlined as data: URLs) and NanumGothic faces, ready
    to inline: ``{"mathjax": js, "nanum": css}``. When they are missing they are vendored as
    `make assets` does (npm ci when needed); None, said through ``log``, when that cannot be done."""
    folder = vendor_assets.OUT
    if not all((folder / p).exists() for p in (MATHJAX, *NANUM.values())):
        vendor_assets.vendor(log=log)
    found = _read_assets(folder)
    if found is None:
        log(NOT_VENDORED)
    return found


@functools.lru_cache(maxsize=2)
def _read_assets(folder: Path) -> dict | None:
    if not all((folder / p).exists() for p in (MATHJAX, *NANUM.values())):
        return None
    js = (folder / MATHJAX).read_text(encoding="utf-8")
    for font in sorted((folder / MATHJAX_FONTS).glob("*.woff")):
        placeholder = f"%%URL%%/{font.name}"      # as MathJax's CHTML font data names it (some are unused)
        if placeholder in js:
            js = js.replace(placeholder, _data_url(font, "font/woff"))
    if re.search(r"%%URL%%/\w", js):
        raise RuntimeError(f"{folder / MATHJAX} names a font that is not in {folder / MATHJAX_FONTS}")
    # Inside <script>, "</script" would end the element, and "<!--" followed by "<script" would keep
    # the next "</script>" from ending it (HTML's script data states). MathJax 3.2 has one "<!--".
    if re.search(r"</script", js, re.IGNORECASE) or ("<!--" in js and re.search(r"<script", js, re.IGNORECASE)):
        raise RuntimeError(f"{folder / MATHJAX} cannot be inlined in a <script> element")
    nanum = "\n".join(
        f'@font-face {{ font-family: "NanumGothic"; font-style: normal; font-weight: {weight}; '
        f'font-display: block; src: url("{_data_url(folder / name, "font/woff2")}") format("woff2"); '
        f"unicode-range: {HANGUL_RANGE}; }}" for weight, name in NANUM.items())
    return {"mathjax": js, "nanum": nanum}


def has_hangul(text: str) -> bool:
    return re.search("[\u3131-\u318e\uac00-\ud7a3]", text) is not None


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
        hangul = False
        for cell in nb.cells:
            cell.source = scrub_paths(cell.source, prefixes, others=False)
            hangul = hangul or has_hangul(cell.source)
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("comment") == NO_RESPONSE:
                meta["comment"] = STRINGS[lang]["no_response"]
            for output in cell.get("outputs", []):
                self._output(output, lang, prefixes)
                hangul = hangul or has_hangul(str(output))
        found = assets(self.log.warning)
        resources["feedback_page"] = {
            "lang": lang,
            "t": STRINGS[lang],
            "mathjax": found and found["mathjax"],
            "nanum": found and hangul and found["nanum"],
        }
        return nb, resources

    @staticmethod
    def _output(output, lang: str, prefixes) -> None:
        if output.output_type == "stream":
            output.text = scrub_paths(output.text, prefixes)
        elif output.output_type == "error":
            output.evalue = scrub_paths(output.evalue, prefixes)
            entries = filter_traceback(list(output.get("traceback", [])), output.ename, lang)
            output.traceback = [scrub_paths(e, prefixes) for e in entries]
            if output.ename == "CellTimeoutError":       # nbgrader's: the traceback is nbclient's English line
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
    c.FeedbackPage.course = str(course)
