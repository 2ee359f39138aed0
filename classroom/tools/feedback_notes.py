"""What grading did to a submission, said at the top of its feedback page (classroom/tools/feedback_pages.py).

The classroom script (classroom/tools/classroom.py) writes what it found into the autograded notebook,
``nb.metadata["classroom"]["notes"]``, a list of dicts:

    {"kind": "timeout", "cells": ["test_train"], "seconds": 60}
    {"kind": "delegation", "cells": ["test_train"], "calls": ["torch.nn.BatchNorm1d"]}
    {"kind": "edited", "cells": ["test_running"]}      read-only test cells edited, graded as released
    {"kind": "put_back", "cells": ["test_eval"]}       deleted test cells, put back and graded
    {"kind": "deleted", "cells": ["…"]}                deleted read-only cells nbgrader does not put back

(classroom/tools/grading_notes.py finds them). A teacher who runs ``nbgrader generate_feedback`` without that script
has no such notes; the timeout and the delegation are then read from the outputs, as the script
reads them (``grading_notes.from_outputs``: nbgrader's ``CellTimeoutError``, and the checker's
message matched with a pattern made from its templates ``ex:delegated`` and
``ex:delegated_autograd``). A note of the metadata and one read from the outputs about the same
cell and kind are said once.

Each note becomes one sentence in the page's language naming the cells, each linked to its
place on the page when the page has it (the template's ``<a name="grade_id">``).
"""

from __future__ import annotations

import html

from . import grading_notes

# kind → (Korean, English for one cell, English for several). {cells} is the linked names,
# {seconds} the limit (empty when unknown), {calls} what was called, {scores} the cells' scores.
SENTENCES = {
    "timeout": (
        "검사 셀 {cells}: 제한 시간{seconds} 안에 끝나지 않아 실행을 멈췄고, 해당 셀은 0점입니다. "
        "끝나지 않는 반복문이나 지나치게 오래 걸리는 계산이 없는지 확인하세요.",
        "Test cell {cells} ran past the time limit{seconds} and was stopped, so it scores 0: "
        "look for a loop that never ends or a computation that takes far too long.",
        "Test cells {cells} ran past the time limit{seconds} and were stopped, so they score 0: "
        "look for a loop that never ends or a computation that takes far too long."),
    "delegation": (
        "검사 셀 {cells}: 작성한 코드가 직접 작성해야 할 계산을 대신하는 함수({calls})를 불렀기 때문에 "
        "해당 셀은 0점입니다. 계산을 직접 작성하세요.",
        "Test cell {cells} scores 0: your code called {calls}, which does the computation you were "
        "asked to write yourself.",
        "Test cells {cells} score 0: your code called {calls}, which does the computation you were "
        "asked to write yourself."),
    "edited": (
        "검사 셀 {cells}: 고치면 안 되는 검사 셀의 내용이 바뀌어 있어서, 채점할 때 원래 내용으로 되돌려 "
        "실행했습니다. 고친 셀에서 '통과'를 보았더라도 점수는 원래 검사의 결과입니다. {scores}",
        "Test cell {cells} had been edited, and it is read-only: grading put its original content back "
        "and ran that. Even if your edited cell said \"passed\", the score is the original test's. {scores}",
        "Test cells {cells} had been edited, and they are read-only: grading put their original content "
        "back and ran that. Even if your edited cells said \"passed\", the score is the original tests'. {scores}"),
    "put_back": (
        "검사 셀 {cells}: 지워져 있던 검사 셀을 원래 내용으로 되살려 채점했습니다.",
        "Test cell {cells} had been deleted: grading put it back and graded it.",
        "Test cells {cells} had been deleted: grading put them back and graded them."),
    "deleted": (
        "읽기 전용 셀 {cells}: 지워져 있었습니다. nbgrader는 이런 셀을 되살리지 않으므로 그 셀 없이 채점했습니다.",
        "Read-only cell {cells} had been deleted: nbgrader does not put such a cell back, so the notebook "
        "was graded without it.",
        "Read-only cells {cells} had been deleted: nbgrader does not put such cells back, so the notebook "
        "was graded without them."),
}
WORDS = {
    "ko": {"title": "채점하면서 한 일", "seconds": "({seconds}초)", "zero": "이 셀의 점수는 0점입니다.",
           "zeros": "이 셀들의 점수는 모두 0점입니다.", "score": "점수: {items}.", "and": ", ",
           "killed": "코드가 인터럽트(KeyboardInterrupt)까지 잡아서 멈추지 않았기 때문에, 채점할 때 노트북을 실행하던 "
                     "프로세스를 강제로 끝내고 새 프로세스에서 제한 시간에 걸린 셀 앞의 셀들을 다시 실행한 뒤 나머지 검사를 채점했습니다. "
                     "인터럽트까지 잡는 <code>except:</code>나 <code>except BaseException:</code> 대신 <code>except Exception:</code>을 쓰세요."},
    "en": {"title": "What grading did to your notebook", "seconds": " of {seconds} seconds",
           "zero": "It scores 0.", "zeros": "They score 0.", "score": "Score: {items}.", "and": ", ",
           "killed": "Your code caught the interrupt (KeyboardInterrupt) too and did not stop, so grading killed the "
                     "kernel, ran the cells before it again in a new one and graded the remaining tests. Write "
                     "<code>except Exception:</code> rather than <code>except:</code> or <code>except BaseException:</code>, which catch the interrupt."},
}


def notes_of(nb) -> list[dict]:
    """The script's notes, then those read from the outputs that they do not already say."""
    given = [n for n in ((nb.get("metadata", {}).get("classroom") or {}).get("notes") or [])
             if isinstance(n, dict) and n.get("kind") in grading_notes.KINDS and n.get("cells")]
    said = {(n["kind"], c) for n in given for c in n["cells"]}
    found = []
    for note in grading_notes.from_outputs(nb):
        cells = [c for c in note["cells"] if (note["kind"], c) not in said]
        if cells:
            found.append(dict(note, cells=cells))
    return given + found


def sentences(nb, lang: str) -> list[str]:
    """One HTML sentence per note, in ``lang`` ("ko" or "en"); empty when there is nothing to say."""
    words = WORDS[lang]
    meta = [c.get("metadata", {}).get("nbgrader") or {} for c in nb.cells]
    graded = {m["grade_id"]: m for m in meta if m.get("grade") and m.get("grade_id")}
    out = []
    for note in notes_of(nb):
        cells = [str(c) for c in note["cells"]]
        names = words["and"].join(
            f'<a href="#{html.escape(c)}"><code>{html.escape(c)}</code></a>' if c in graded
            else f"<code>{html.escape(c)}</code>" for c in cells)
        seconds = note.get("seconds")
        fields = {
            "cells": names,
            "seconds": words["seconds"].format(seconds=seconds) if seconds else "",
            "calls": words["and"].join(f"<code>{html.escape(str(c))}</code>" for c in note.get("calls") or []) or "?",
            "scores": _scores(cells, graded, words),
        }
        ko, one, many = SENTENCES[note["kind"]]
        template = ko if lang == "ko" else one if len(cells) == 1 else many
        out.append(template.format(**fields).strip() + (" " + words["killed"] if note.get("killed") else ""))
    return out


def _scores(cells: list[str], graded: dict, words: dict) -> str:
    """What the edited cells scored: "0" said plainly when that is all of them."""
    scored = [(c, graded[c]) for c in cells if c in graded and graded[c].get("score") is not None]
    if not scored:
        return ""
    if all(float(m["score"]) == 0 for _, m in scored):
        return words["zero"] if len(scored) == 1 else words["zeros"]
    return words["score"].format(items=words["and"].join(
        f"<code>{html.escape(c)}</code> {float(m['score']):g} / {float(m.get('points') or 0):g}" for c, m in scored))
