"""A student's working copy of an assignment: what `make student A=<assignment>` runs.

    python -m classroom.tools.student 02_batchnorm_ko            # writes lab/assignments/02_batchnorm_ko/02_batchnorm.ipynb
    python -m classroom.tools.student 02_batchnorm_ko --out DIR  # writes DIR/02_batchnorm_ko/02_batchnorm.ipynb

The notebook written is the student version a teacher hands out (``make assignments-release``):
nbgrader's own ``generate_assignment`` strips the solutions (a stub ``raise NotImplementedError()``
takes their place) and the hidden tests, and keeps the visible test cells. It runs in a temporary
copy of the course folder (its ``nbgrader_config.py`` and the assignment's ``source/`` folder), so
the course's gradebook and ``classroom/course/release/`` are not touched, and the student never needs
to open ``classroom/course/source/``, which holds the answers.

The copy goes to ``lab/assignments/<assignment>/`` (git-ignored), the working folder that the
student's JupyterLab (``make lab``) shows. A notebook already there is the student's work: it is
never overwritten. The command then writes nothing, says where the work is, and exits with status 1;
to start again from a fresh copy, rename or delete that file first.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from book.tools.lab import WORKDIR
from classroom.tools.classroom import COURSE, assignments, nbgrader, shown

WORKING = WORKDIR / "assignments"          # in make lab's working folder, where the student's JupyterLab finds it
ANSWER_MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")


class Refused(Exception):
    """The student's copy already exists: nothing is written."""


def check_name(name: str, course: Path = COURSE) -> None:
    """Refuse a name that is no assignment, naming those that are (both languages)."""
    names = assignments(course)                     # the folders of the course's source/
    if name in names:
        return
    which = (f"There is no assignment {name!r}." if name else "Name an assignment: make student A=<assignment>.")
    korean = (f"없는 과제 이름입니다: {name!r}." if name else "과제 이름을 함께 적어 주세요(make student A=<과제>).")
    example = {lang: next((n for n in names if n.endswith(f"_{lang}")), names[0]) for lang in ("en", "ko")}
    raise SystemExit(f"{which} Assignments: {' '.join(names)}\nExample: make student A={example['en']}\n"
                     f"{korean} 있는 과제: {' '.join(names)}\n예: make student A={example['ko']}")


def student_version(name: str, into: Path, course: Path = COURSE) -> list[Path]:
    """nbgrader's student version of ``name`` (solutions and hidden tests stripped), written to
    ``into/<name>/``. Refused (:class:`Refused`) when any of its notebooks is already there."""
    assignments(course, [name])                       # the classroom's own check of the name
    target = into / name
    notebooks = sorted(p.name for p in (course / "source" / name).glob("*.ipynb"))
    existing = [target / nb for nb in notebooks if (target / nb).exists()]
    if existing:
        raise Refused("\n".join(shown(p) for p in existing))
    with tempfile.TemporaryDirectory(prefix="student-") as tmp:
        copy = Path(tmp) / "course"
        (copy / "source").mkdir(parents=True)
        shutil.copy2(course / "nbgrader_config.py", copy / "nbgrader_config.py")
        shutil.copytree(course / "source" / name, copy / "source" / name)
        result = nbgrader(copy, "generate_assignment", name, "--force", quiet=True)
        released = copy / "release" / name
        if result.returncode != 0 or not released.is_dir():
            raise RuntimeError(f"nbgrader generate_assignment {name} failed:\n{result.stdout[-3000:]}")
        files = sorted(p for p in released.iterdir() if p.is_file())
        for path in files:                            # nbgrader's promise, checked before anything is written
            text = path.read_text(encoding="utf-8", errors="replace")
            if any(marker in text for marker in ANSWER_MARKERS):
                raise RuntimeError(f"{path.name}: nbgrader's release still holds a solution or a hidden test")
        target.mkdir(parents=True, exist_ok=True)
        for path in files:
            shutil.copy2(path, target / path.name)
    return [target / path.name for path in files]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("assignment", nargs="?", default="", help="e.g. 02_batchnorm_ko (the folders of classroom/course/source/)")
    parser.add_argument("--out", type=Path, default=WORKING, help="the working folder (default: lab/assignments/)")
    args = parser.parse_args(argv)
    check_name(args.assignment)
    try:
        written = student_version(args.assignment, args.out.resolve())
    except Refused as refused:
        print(f"Your copy is already there; it is kept as it is, and nothing was written:\n{refused}\n"
              "To start again from a fresh copy, rename or delete it first.\n"
              "이미 작업 중인 사본이 있어 그대로 두었습니다(아무것도 쓰지 않았습니다). "
              "처음부터 다시 하려면 그 파일의 이름을 바꾸거나 지운 뒤 다시 실행하세요.", file=sys.stderr)
        return 1
    for path in written:
        print(f"Written / 만들었습니다: {shown(path)}")
    print("Open it in JupyterLab (make lab) and run its cells from the top; the test cells check your code.\n"
          "JupyterLab(make lab)에서 열고 위에서부터 셀을 실행하세요. 검사 셀이 작성한 코드를 확인합니다.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
