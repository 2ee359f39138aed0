"""Feedback pages of a graded class (slow: nbgrader and Chromium), pages a student can read anywhere (classroom/tools/feedback_pages.py, the template
classroom/course/templates/feedback_page/, set up by classroom/course/nbgrader_config.py).

A small class hands in assignment 1 in both languages (01_layernorm_ko and _en): a correct
student, a partial one (ε added outside the square root) and one whose code raises. The course is
a copy of classroom/course/, released (generate_assignment: tests/classroom/test_assignments.py validates every
release), then driven as a teacher does, through classroom/tools/classroom.py's command line (autograde →
feedback); a grader's comment is added to the gradebook before the
feedback, as the formgrader would. Then every page written to
feedback/<student>/<assignment>/01_layernorm.html

* speaks the assignment's language: nbgrader's interface words ("Student's answer", "Score",
  "Comments", the test cells' headings …) and the traceback's headings, <html lang>;
* shows no absolute path of the grading machine (the book's folder, the course's, the Python
  environment's, the home and temporary folders, or any other);
* shows, for each failed test, the checker's explanation (CheckFailed's message, in the student's
  language) before the traceback, whose frames are the notebook's cells only: normlib's and
  torch's are replaced by one line saying so, the student's line and its arrow stay;
* has its formulas as MathML (no TeX left in the prose, no script at all) and NanumGothic cut to
  its own Hangul (every Hangul character the page shows is in the cut font's cmap);
* is one file of at most 600 kB (the Korean pages, with formulas and tracebacks, included) that,
  opened from disk in headless Chromium with every request but the page itself refused, makes no
  request, draws its MathML formulas (each a box of real size) and draws every visible Hangul with
  the inlined NanumGothic (asked of Chromium through the DevTools protocol, as
  tests/book/test_browser.py does), at a desktop's width and a phone's (390 px: nothing wider than the
  screen but inside a scrolling code box, the score beside no other text).

Without Chromium or Playwright the browser test skips, except on CI (CI=true), where it fails.
A screenshot of each page, desktop and phone, goes to test-artifacts/feedback/. The page's parts alone
(the notes at its top, the math, the shortened traceback, the paths removed, the preprocessor's
words, the course's config) are tested fast, without nbgrader, in tests/classroom/test_feedback_parts.py.
"""

from __future__ import annotations

import base64
import io
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from classroom.tools import classroom as course_tools
from classroom.tools import feedback_pages
from helpers.background import early
from helpers.browser import hangul_without_nanum
from helpers.paths import ROOT

STEM = "01_layernorm"
NAMES = [f"{STEM}_ko", f"{STEM}_en"]
TIMEOUT = 20                       # seconds per cell while grading (a correct test cell takes well under one)
MAX_PAGE_KB = 600                  # the limit (a page weighed 2.8 MB with MathJax and the whole font)
ARTIFACTS = ROOT / "test-artifacts" / "feedback"
COMMENT = {"ko": "eps를 어디에 더하는지 4장의 공식과 비교해 보세요.", "en": "Compare where you add eps with chapter 4's formula."}

# nbgrader's and IPython's English words: none may be left on a Korean page.
ENGLISH_WORDS = ["Student's answer", "Score", "Comments", "Grade cell", "Test cell", "(Top)", "Coding free-response",
                 "Written response", "Late submission", "No response", "Traceback (most recent call last)",
                 "The above exception", "During handling", "Cell In[", "In\xa0[", "Out["]
nbgrader = pytest.mark.nbgrader


def _source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _solutions(course: Path, name: str) -> dict[str, str]:
    """The teacher's answers: each solution cell of the source without the markers."""
    source = json.loads((course / "source" / name / f"{STEM}.ipynb").read_text(encoding="utf-8"))
    return {c["metadata"]["nbgrader"]["grade_id"]: "\n".join(
                line for line in _source(c).splitlines() if "### BEGIN SOLUTION" not in line
                and "### END SOLUTION" not in line)
            for c in source["cells"] if c["metadata"].get("nbgrader", {}).get("solution")}


def _edit(code: str, old: str, new: str) -> str:
    assert old in code, f"the solution no longer contains {old!r}: update the synthetic class"
    return code.replace(old, new)


def _class(course: Path, name: str) -> dict[str, tuple[dict[str, str], int]]:
    """student → (solution cells as handed in, expected points of 5)."""
    right = _solutions(course, name)
    partial = dict(right, layer_norm=_edit(right["layer_norm"], "torch.sqrt(var + eps)", "(torch.sqrt(var) + eps)"))
    raises = dict(right, layer_norm_stats=_edit(right["layer_norm_stats"], "    mean = x.mean(",
                                                "    raise ValueError('not finished')\n    mean = x.mean("))
    return {"correct": (right, 5), "partial": (partial, 2), "raises": (raises, 0)}


def _classroom(course: Path, *args: str) -> str:
    """``python classroom/tools/classroom.py ARGS --course COURSE`` (what the Makefile's targets run)."""
    result = subprocess.run([sys.executable, str(ROOT / "classroom" / "tools" / "classroom.py"), *args, "--course", str(course)],
                            cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
    assert result.returncode == 0, f"classroom.py {' '.join(args)} failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
    return result.stdout


def _comment(course: Path, student: str, name: str, text: str) -> None:
    """A grader's comment on the student's layer_norm, as the formgrader would save it."""
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        comment = gradebook.find_comment("layer_norm", STEM, name, student)
        comment.manual_comment = text
        gradebook.db.commit()


def _graded_course(folder: Path) -> Path:
    """A copy of classroom/course/ (sources, config, templates), released (nbgrader's generate_assignment,
    without release's validation), handed in, autograded, commented and given feedback through
    classroom/tools/classroom.py's command line (nbgrader's processes: started early, beside the rest of a
    single-process session, see EARLY)."""
    course = folder / "assignments"
    shutil.copytree(ROOT / "classroom" / "course", course, ignore=shutil.ignore_patterns(
        "release", "submitted", "autograded", "feedback", "gradebook.db*", "*.csv", ".ipynb_checkpoints"))
    # generated only: make test validates every release once, in tests/classroom/test_assignments.py
    assert course_tools.generate(course, NAMES) == {}
    for name in NAMES:
        release = json.loads((course / "release" / name / f"{STEM}.ipynb").read_text(encoding="utf-8"))
        for student, (answers, _) in _class(course, name).items():
            nb = json.loads(json.dumps(release))
            for cell in nb["cells"]:
                grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
                if grade_id in answers:
                    cell["source"] = answers[grade_id]
            folder = course / "submitted" / f"{student}_{name[-2:]}" / name
            folder.mkdir(parents=True)
            (folder / f"{STEM}.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    _classroom(course, "autograde", *NAMES, "--timeout", str(TIMEOUT))
    for name in NAMES:
        _comment(course, f"partial_{name[-2:]}", name, COMMENT[name[-2:]])
    _classroom(course, "feedback", *NAMES)
    return course


EARLY = {"feedback course": _graded_course}


@pytest.fixture(scope="module")
def course() -> Path:
    return early("feedback course", _graded_course)


@pytest.fixture(scope="module")
def pages(course) -> dict[tuple[str, str], Path]:
    """(student, language) → the feedback page."""
    found = {}
    for name in NAMES:
        for student in _class(course, name):
            found[(student, name[-2:])] = course / "feedback" / f"{student}_{name[-2:]}" / name / f"{STEM}.html"
    return found


def _soup(page: Path) -> BeautifulSoup:
    return BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")


def _visible_text(soup: BeautifulSoup) -> str:
    for tag in soup(["script", "style"]):
        tag.decompose()
    return soup.get_text(" ")


# --------------------------------------------------------------------------- the pages, read

@nbgrader
def test_every_student_gets_a_page_with_the_score(course, pages):
    for (student, lang), page in pages.items():
        assert page.exists(), f"no feedback page for {student}_{lang}: {sorted(p.name for p in page.parent.parent.glob('*'))}"
        expected = _class(course, f"{STEM}_{lang}")[student][1]
        word = feedback_pages.STRINGS[lang]["score"]
        heading = _soup(page).select_one("h1.fp-title").get_text(" ")
        assert re.search(rf"{word}: {expected}(\.0)? / 5(\.0)?", heading), f"{student}_{lang}: {heading!r}"


@nbgrader
def test_interface_words_are_in_the_assignments_language(pages):
    for (student, lang), page in pages.items():
        soup = _soup(page)
        assert soup.html.get("lang") == lang, f"{student}_{lang}: <html lang={soup.html.get('lang')!r}>"
        text = _visible_text(soup)
        words = feedback_pages.STRINGS[lang]
        for key in ("score", "top", "your_answer", "test_cell", "assignment", "student"):
            assert words[key] in text, f"{student}_{lang}: {words[key]!r} ({key}) is not on the page"
        if lang == "ko":
            left = [w for w in ENGLISH_WORDS if w in text]
            assert not left, f"{student}_ko: English interface words on the Korean page: {left}"
        else:
            other = feedback_pages.STRINGS["ko"]
            left = [other[k] for k in ("score", "your_answer", "test_cell", "check_says", "where") if other[k] in text]
            assert not left, f"{student}_en: Korean interface words on the English page: {left}"
        if student != "correct":
            for key in ("check_says", "where"):
                assert words[key] in text, f"{student}_{lang}: {words[key]!r} ({key}) is not on the page"


@nbgrader
def test_a_graders_comment_is_shown_under_its_label(pages):
    for lang in ("ko", "en"):
        text = _visible_text(_soup(pages[("partial", lang)]))
        label = feedback_pages.STRINGS[lang]["comment"]
        assert f"{label}: {COMMENT[lang]}" in re.sub(r"\s+", " ", text), f"partial_{lang}: the comment is missing"


@nbgrader
def test_no_absolute_path_of_the_grading_machine(course, pages):
    machine = {str(ROOT), str(ROOT.resolve()), str(course), str(course.resolve()), sys.prefix, sys.base_prefix,
               str(Path.home()), tempfile.gettempdir() + "/", "site-packages", "dist-packages"}
    machine = {m for m in machine if len(m) > 2}
    absolute = re.compile(r"(?<![\w.:/\\-])/(?:home|root|tmp|work|usr|opt|Users|var|mnt|srv|private|nix)/"
                          r"|\b[A-Za-z]:\\\\?[\w .-]+\\")
    for (student, lang), page in pages.items():
        html = page.read_text(encoding="utf-8")
        found = sorted(m for m in machine if m in html)
        assert not found, f"{student}_{lang}: the page holds {found}"
        text = _visible_text(BeautifulSoup(html, "html.parser"))
        assert not absolute.findall(text), f"{student}_{lang}: absolute paths {absolute.findall(text)[:5]}"


def _errors(page: Path) -> list[dict]:
    """Each error output: its explanation, its traceback, and which comes first."""
    out = []
    for block in _soup(page).select("div.output_error"):
        explanation, traceback = block.select_one(".fp-explanation"), block.select_one("pre.fp-traceback")
        html = str(block)
        out.append({
            "explanation": explanation.get_text() if explanation else "",
            "traceback": traceback.get_text() if traceback else "",
            "first": explanation is not None and traceback is not None
            and html.index("fp-explanation") < html.index("fp-traceback"),
        })
    return out


@nbgrader
def test_a_failed_test_explains_first_and_hides_the_checkers_frames(pages):
    diagnosis = {"ko": "eps는 제곱근 안에 들어갑니다", "en": "eps belongs under the square root"}
    raised = {"ko": "호출하자 예외가 발생했습니다: ValueError: not finished",
              "en": "ValueError: not finished"}
    for lang in ("ko", "en"):
        words = feedback_pages.STRINGS[lang]
        errors = {s: _errors(pages[(s, lang)]) for s in ("correct", "partial", "raises")}
        assert errors["correct"] == [], f"correct_{lang}: {errors['correct']}"
        assert len(errors["partial"]) >= 1 and len(errors["raises"]) >= 2, (lang, errors)
        for student in ("partial", "raises"):
            for error in errors[student]:
                assert error["first"], f"{student}_{lang}: the traceback comes before the explanation"
                tb = error["traceback"]
                for frame in ("exercises/", "_report.py", "layernorm.py", "torch/", "File "):
                    assert frame not in tb, f"{student}_{lang}: the traceback still shows {frame!r}:\n{tb}"
                if error["explanation"].lstrip().startswith(words["check_says"]):     # a CheckFailed
                    said = error["explanation"].strip().split("\n")[1].strip()          # its first line
                    assert said not in tb, f"{student}_{lang}: the explanation is shown twice:\n{tb}"
                    assert "Traceback" not in tb and words["traceback"] not in tb, tb
        partial = errors["partial"][0]
        assert partial["explanation"].lstrip().startswith(words["check_says"])
        assert diagnosis[lang] in partial["explanation"], partial["explanation"]
        assert re.search(r"----> \d+ check_layer_norm\(layer_norm, LANG\)", partial["traceback"]), partial["traceback"]
        assert partial["traceback"].rstrip().endswith("check_layer_norm(layer_norm, LANG)"), partial["traceback"]
        for error in errors["raises"][:2]:           # the two tests: the student's line, with its arrow
            assert raised[lang] in error["explanation"], error["explanation"]
            assert re.search(r"----> \d+\s+raise ValueError\('not finished'\)", error["traceback"]), error["traceback"]
            cell_line = re.escape(words["cell_line"]).replace(re.escape("{cell}"), r"\d+").replace(re.escape("{line}"), r"\d+")
            assert re.search(cell_line, error["traceback"]), error["traceback"]
            assert len(error["traceback"].strip().splitlines()) <= 6, error["traceback"]


def _nanum_faces(html: str) -> dict[int, set[int]]:
    """weight → the code points of the page's inlined NanumGothic face of that weight."""
    from fontTools.ttLib import TTFont

    faces = {}
    for rule in re.findall(r"@font-face \{[^}]*NanumGothic[^}]*\}", html):
        weight = int(re.search(r"font-weight: (\d+)", rule).group(1))
        data = base64.b64decode(re.search(r"data:font/woff2;base64,([A-Za-z0-9+/=]+)", rule).group(1))
        faces[weight] = set(TTFont(io.BytesIO(data)).getBestCmap())
    return faces


@nbgrader
def test_each_page_is_one_small_file_loading_nothing(pages):
    for (student, lang), page in pages.items():
        beside = [p.name for p in page.parent.iterdir() if p != page and p.name != "timestamp.txt"]   # nbgrader's
        assert not beside, f"{student}_{lang}: the page needs {beside} beside it"
        size = page.stat().st_size
        assert size <= MAX_PAGE_KB * 1000, f"{student}_{lang}: {size / 1000:.0f} kB"
        soup = _soup(page)
        loading = [(t.name, t.get("src") or t.get("href")) for t in soup.find_all(["script", "link", "img", "iframe"])
                   if t.get("src") or (t.name == "link" and t.get("href"))]
        assert not loading, f"{student}_{lang}: the page loads {loading}"
        assert not soup.find_all("script"), f"{student}_{lang}: the page has a script"
        html = page.read_text(encoding="utf-8")
        assert not re.search(r"mathjax|https?://cdn", html, re.IGNORECASE), f"{student}_{lang}: MathJax is named"
        assert not re.search(r"url\((?!\"?data:)", html), f"{student}_{lang}: a stylesheet refers to a file"
    sizes = {f"{s}_{lang}": round(p.stat().st_size / 1000) for (s, lang), p in pages.items()}
    print(f"\nfeedback page sizes (kB): {sizes}")


@nbgrader
def test_the_font_is_cut_to_the_pages_hangul(pages):
    """Every Hangul character the page shows is in both inlined faces; a page without Hangul has none."""
    for (student, lang), page in pages.items():
        html = page.read_text(encoding="utf-8")
        shown = {ord(c) for c in _visible_text(BeautifulSoup(html, "html.parser")) if re.match("[\u3131-\u318e\uac00-\ud7a3]", c)}
        faces = _nanum_faces(html)
        if not shown:
            assert not faces, f"{student}_{lang}: NanumGothic inlined on a page without Hangul"
            continue
        assert set(faces) == {400, 700}, f"{student}_{lang}: NanumGothic faces {sorted(faces)}"
        for weight, cmap in faces.items():
            missing = "".join(sorted(chr(c) for c in shown - cmap))
            assert not missing, f"{student}_{lang}: NanumGothic {weight} lacks {missing!r}"
            hangul = {c for c in cmap if 0xAC00 <= c <= 0xD7A3}
            assert len(hangul) < 2000, f"{student}_{lang}: {len(hangul)} syllables: the font is not cut"
        if lang == "ko":
            assert len(shown) > 150, f"{student}_ko: only {len(shown)} Hangul characters"


@nbgrader
def test_the_math_is_mathml(pages):
    for (student, lang), page in pages.items():
        soup = _soup(page)
        formulas = soup.select(".rendered_html math")
        assert len(formulas) >= 4 and soup.select('.rendered_html math[display="block"]'), \
            f"{student}_{lang}: {len(formulas)} MathML formulas"
        assert not soup.select(".fp-tex"), f"{student}_{lang}: TeX shown as code: {soup.select('.fp-tex')}"
        for block in soup.select(".rendered_html"):
            for tag in block(["code", "pre", "math"]):
                tag.decompose()
            prose = block.get_text(" ")
            assert not re.search(r"\$|\\frac|\\sqrt|\\mu\b", prose), f"{student}_{lang}: TeX left: {prose[:300]!r}"


# --------------------------------------------------------------------------- the pages, in Chromium

MEASURE = """async () => {
  await document.fonts.ready;
  const rendered = Array.from(document.querySelectorAll('.rendered_html'));
  const width = document.documentElement.clientWidth;
  // What sticks out of the screen, not inside a box that scrolls sideways.
  const scrolls = e => { for (; e; e = e.parentElement) { const o = getComputedStyle(e).overflowX;
                         if ((o === 'auto' || o === 'scroll') && e !== document.documentElement && e !== document.body) return true; }
                         return false; };
  const wide = Array.from(document.body.querySelectorAll('*')).filter(e => {
    const r = e.getBoundingClientRect(); return r.width > 0 && r.right > width + 1 && !scrolls(e.parentElement);
  }).map(e => e.tagName + '.' + e.className + ': ' + (e.textContent || '').slice(0, 40));
  // The parts of a cell's heading (its label, its score) overlapping each other, or sticking out
  // of the heading over the cell's code.
  const overlaps = [];
  for (const h of document.querySelectorAll('.panel-heading')) {
    const box = h.getBoundingClientRect();
    const parts = Array.from(h.children).map(c => c.getBoundingClientRect()).filter(r => r.width > 0);
    if (parts.some(r => r.bottom > box.bottom + 1 || r.right > box.right + 1))
      overlaps.push(h.textContent.replace(/\\s+/g, ' ').trim().slice(0, 60) + ' (out of its heading)');
    for (let i = 0; i < parts.length; i++) for (let j = i + 1; j < parts.length; j++) {
      const a = parts[i], b = parts[j];
      if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1)
        overlaps.push(h.textContent.replace(/\\s+/g, ' ').trim().slice(0, 60));
    }
  }
  const code = Array.from(document.querySelectorAll('.panel .input_area pre')).map(e => e.getBoundingClientRect().width);
  return {
    scripts: document.scripts.length,
    math: Array.from(document.querySelectorAll('.rendered_html math')).map(m => {
      const r = m.getBoundingClientRect(); return [r.width, r.height]; }),
    rawTex: rendered.map(e => e.innerText).filter(t => /\\$\\$|\\\\frac|\\\\sqrt/.test(t)).map(t => t.slice(0, 80)),
    hangul: (document.body.innerText.match(/[\\uac00-\\ud7a3]/g) || []).length,
    nanum: Array.from(document.fonts).filter(f => f.family.replace(/["']/g, '') === 'NanumGothic').map(f => f.status),
    wide, overlaps, narrowestCode: code.length ? Math.min(...code) : null, width,
  };
}"""
VIEWPORTS = {"desktop": (1280, 900), "phone": (390, 844)}


def _visit(browser, path: Path, screenshot: Path, viewport=VIEWPORTS["desktop"]) -> dict:
    """Open ``path`` from disk, as a student opens an attachment, every request but the page
    refused: what the page reported, the requests it made, its JavaScript errors, its Hangul."""
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]}, device_scale_factor=1,
                                  service_workers="block")
    url = path.as_uri()
    requests, errors = [], []
    elsewhere = lambda u: u != url and not u.startswith(("data:", "blob:"))
    context.route(elsewhere, lambda route: route.abort())       # nothing leaves the machine
    try:
        page = context.new_page()
        page.set_default_timeout(20_000)
        page.on("request", lambda r: elsewhere(r.url) and requests.append(r.url))
        page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
        on_console = lambda m: m.type == "error" and errors.append(f"console.error: {m.text}")
        page.on("console", on_console)
        page.goto(url, wait_until="load")
        facts = page.evaluate(MEASURE)
        # The page's own errors are in by now. The font probe's DevTools CSS domain makes Chromium
        # (150, Debian's) fetch the file:// document again and log "Unsafe attempt to load URL"
        # for the page itself: the probe's doing, not the page's, so it is not counted.
        page.remove_listener("console", on_console)
        texts, facts["tofu"] = hangul_without_nanum(page)
        facts["probed"] = len(texts)
        page.screenshot(path=str(screenshot), full_page=True)
    finally:
        context.close()
    return dict(facts, requests=requests, errors=errors)


@nbgrader
@pytest.mark.browser
def test_pages_render_offline_in_chromium(browser, pages):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    problems = []
    for (student, lang), path in pages.items():
        for device, viewport in VIEWPORTS.items():
            name = f"{student}_{lang} ({device})"
            facts = _visit(browser, path, ARTIFACTS / f"{student}_{lang}_{device}.png", viewport)
            problems += [f"{name}: request {u}" for u in facts["requests"]] + [f"{name}: {e}" for e in facts["errors"]]
            if facts["scripts"]:
                problems.append(f"{name}: {facts['scripts']} scripts")
            if len(facts["math"]) < 4 or any(w < 5 or h < 5 for w, h in facts["math"]):
                problems.append(f"{name}: MathML formulas drawn as {facts['math']}")
            problems += [f"{name}: TeX left raw: {t!r}" for t in facts["rawTex"]]
            problems += [f"{name}: wider than the screen: {w}" for w in facts["wide"][:5]]
            problems += [f"{name}: a cell's heading overlaps itself: {o}" for o in facts["overlaps"][:5]]
            if facts["narrowestCode"] is not None and facts["narrowestCode"] < 0.6 * facts["width"]:
                problems.append(f"{name}: a code box is squeezed to {facts['narrowestCode']:.0f} px of {facts['width']}")
            if lang == "ko":
                if facts["hangul"] < 200 or facts["probed"] < 20:
                    problems.append(f"{name}: hardly any Hangul on the Korean page ({facts['hangul']} characters)")
                if not facts["nanum"] or any(s != "loaded" for s in facts["nanum"]):
                    problems.append(f"{name}: NanumGothic faces {facts['nanum']}")
            problems += [f"{name}: Hangul not in NanumGothic: {t}" for t in facts["tofu"]]
    assert not problems, "\n".join(problems)


@pytest.mark.browser
def test_the_visit_still_reports_a_pages_own_errors(browser, tmp_path):
    """Leaving the font probe's DevTools noise out must not leave out the page's own errors."""
    page = tmp_path / "doctored.html"
    page.write_text('<html lang="ko"><body><p>정규화 층</p><script>console.error("boom"); missing();</script>'
                    '<img src="https://example.org/x.png" alt=""></body></html>', encoding="utf-8")
    facts = _visit(browser, page, tmp_path / "doctored.png")
    assert "console.error: boom" in facts["errors"], facts["errors"]
    assert any(e.startswith("uncaught:") and "missing" in e for e in facts["errors"]), facts["errors"]
    assert facts["requests"] == ["https://example.org/x.png"]
