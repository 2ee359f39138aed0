"""Open JupyterLab for a reader (copies of the chapters, no teacher tools) or for a teacher (the
assignments, with nbgrader's tools): what `make lab` and `make lab-teacher` run.

    python -m book.tools.lab reader  [--fresh] [--workdir=DIR] [--dry-run] [JUPYTER LAB OPTIONS ...]
    python -m book.tools.lab teacher [--dry-run] [JUPYTER LAB OPTIONS ...]

Running never changes the book. The chapter notebooks in ``chapters/ko`` and ``chapters/en`` are
committed with their outputs, and nbval compares those outputs on every machine; JupyterLab's
autosave rewrote them (outputs of another CPU, a new kernel's metadata) as soon as a reader ran a
cell. So the reader's JupyterLab opens copies, in ``lab/`` at the repository's root (git-ignored;
``--workdir=DIR`` elsewhere, as the tests do):

- ``lab/ko``, ``lab/en``: every file of ``chapters/<language>/`` (the notebooks and the pages beside
  them, ``index.md`` with its links to the chapters). ``lab/`` sits at the depth of ``chapters/``,
  so the notebooks' relative links (``../en/…``, ``../../glossary.md``) lead where they did, and
  what the cells read from the repository (``benchmarks/results/``, found from the notebook's folder
  upwards) is found the same way; normlib is the installed package, wherever the notebook is.
- The first ``make lab`` copies everything; a later one copies only what is missing (a chapter new
  in the book, a copy the reader deleted) and keeps the reader's edited copies. ``--fresh``
  (``make lab FRESH=1``) moves the reader's copies into ``lab/backup/<time>/`` and copies every
  chapter afresh. One printed line (Korean and English) says how to get a fresh copy.

The environment has nbgrader installed for the classroom, and nbgrader enables itself in every
JupyterLab of the environment: a reader would see "Create Assignment" and formgrader menus and a
"No nbgrader_config.py file found" log. So the reader's JupyterLab

- turns nbgrader's server extensions off on the command line (the environment's configuration
  outranks a user's, so a config file could not), and
- disables its JupyterLab extension through a page configuration kept in this repository
  (``book/tools/lab_reader/labconfig/page_config.json``), added to Jupyter's configuration path with
  ``JUPYTER_CONFIG_PATH``. Jupyter only reads that folder: what JupyterLab writes (workspaces,
  settings, the ``migrated`` mark of jupyter_core) goes to the reader's own Jupyter folder
  (``~/.jupyter``), never into the repository.

The teacher's opens ``classroom/course/``, the course folder where
``nbgrader_config.py`` lives, with Formgrader, Create Assignment, Validate and Course List on, but
without what only nbgrader's exchange serves: this course hands notebooks out and collects them
through the teachers' platform, so there is no exchange folder (``Exchange.root``, by default
``/usr/local/share/nbgrader/exchange``), and

- the student's Assignment List (server extension ``assignment_list``: fetch, submit) is off: each
  of its requests logged "[C] Unwritable directory, please contact your instructor" and a traceback,
  and the panel said "The exchange directory does not exist" (the Nbgrader menu still lists it:
  JupyterLab's side of nbgrader is one extension; opened, it stays empty);
- Formgrader does not print its configuration on Manage Assignments (``FormgradeExtension.debug``):
  the course's configuration holds Python classes, so it only logged "[W] Formgrader config is not
  serializable" on each visit.

Formgrader's own look for the exchange is kept quiet by ``nbgrader_config.py``; its Manage Assignments
page still says that the exchange directory does not exist (nbgrader's template), which only means that
its Release and Collect buttons are off. A folder given as ``--notebook-dir=DIR`` (or
``--ServerApp.root_dir=DIR``) is opened instead (JupyterLab's folder argument would outrank it), and
then nothing is copied: tests/book/test_explorer_lab.py runs a notebook of its own in a temporary folder
that way. Run as root (containers, many cloud notebooks), both add ``--allow-root`` and say so,
instead of stopping with "Running as root is not recommended".
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
READER_CONFIG = ROOT / "book" / "tools" / "lab_reader"
BOOK = ROOT / "chapters"
WORKDIR = ROOT / "lab"              # the reader's copies of the chapters (git-ignored)
NOT_COPIED = {"src", ".ipynb_checkpoints"}       # chapters/src: the sources the notebooks are built from
ROOT_OPTIONS = ("--notebook-dir", "--ServerApp.root_dir")   # the folder to open, when the caller names one
EXCHANGE_SERVER_EXTENSIONS = (      # the student's Assignment List (fetch, submit): nbgrader's exchange only
    "nbgrader.server_extensions.assignment_list",
)
NBGRADER_SERVER_EXTENSIONS = (
    "nbgrader.server_extensions.formgrader",
    "nbgrader.server_extensions.validate_assignment",
    "nbgrader.server_extensions.course_list",            # Course List: links to the formgraders
) + EXCHANGE_SERVER_EXTENSIONS


def book_files(book: Path = BOOK) -> list[Path]:
    """The files a reader's copy holds, relative to ``book``: every file of its language folders."""
    return sorted(path.relative_to(book) for path in book.rglob("*")
                  if path.is_file() and not NOT_COPIED & set(path.relative_to(book).parts))


def copy_chapters(workdir: Path, book: Path = BOOK, fresh: bool = False) -> tuple[list[Path], Path | None]:
    """Copy into ``workdir`` the files of ``book`` it lacks, keeping the ones it has (the reader's);
    with ``fresh``, first move what it has of the book's folders into ``workdir/backup/<time>/``.
    Returns the files copied (relative) and the backup folder (None when nothing was moved)."""
    files = book_files(book)
    backup = None
    if fresh:
        present = sorted({rel.parts[0] for rel in files if (workdir / rel.parts[0]).exists()})
        if present:
            stamp = time.strftime("%Y-%m-%d_%H%M%S")
            backup = workdir / "backup" / stamp
            n = 1
            while backup.exists():
                n += 1
                backup = workdir / "backup" / f"{stamp}_{n}"
            backup.mkdir(parents=True)
            for name in present:
                shutil.move(workdir / name, backup / name)
    copied = []
    for rel in files:
        target = workdir / rel
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(book / rel, target)      # the content only: the copy is the reader's to write
            copied.append(rel)
    return copied, backup


def _shown(path: Path) -> str:
    return f"{path.relative_to(ROOT)}/" if path.is_relative_to(ROOT) else f"{path}/"


def copy_notes(workdir: Path, copied: list[Path], backup: Path | None, total: int) -> list[str]:
    """What to print after :func:`copy_chapters`: what happened, and how to get a fresh copy."""
    where = _shown(workdir)
    notes = []
    if backup is not None:
        notes.append(f"Your copies were moved to {_shown(backup)}; {where} holds fresh copies of the chapters. "
                     f"지금까지의 사본은 {_shown(backup)}에 옮겨 두었고, {where}에는 새 사본이 있습니다.")
    elif copied and len(copied) == total:
        notes.append(f"The chapters were copied into {where} (not in git): running and saving there never "
                     f"changes the book in chapters/. 장들을 {where}에 복사했습니다(git에는 들어가지 않음). "
                     f"여기서 실행하고 저장해도 chapters/의 책은 바뀌지 않습니다.")
    elif copied:
        names = ", ".join(str(rel) for rel in copied)
        notes.append(f"Copied into {where} (new in the book, or deleted there): {names}. "
                     f"{where}에 없던 파일을 복사했습니다(책에 새로 생겼거나 지운 파일): {names}")
    notes.append(f"A fresh copy of a chapter: delete its file in {where} and run make lab again; make lab FRESH=1 "
                 f"copies every chapter afresh and keeps yours in {where}backup/. "
                 f"장 하나를 새로 받으려면 {where}에서 그 파일을 지우고 다시 실행하세요(make lab). 모든 장을 한꺼번에 "
                 f"새로 받으려면 make lab FRESH=1 (지금 사본은 {where}backup/에 보관됩니다).")
    return notes


def command(role: str, extra: list[str], is_root: bool,
            workdir: Path = WORKDIR) -> tuple[list[str], dict[str, str], list[str]]:
    """The JupyterLab command line, the environment changes and the notes to print for ``role``."""
    if role not in ("reader", "teacher"):
        raise ValueError(f"role must be 'reader' or 'teacher'; got {role!r}")
    jupyter = str(Path(sys.executable).parent / "jupyter")
    env: dict[str, str] = {}
    notes: list[str] = []
    folder = workdir if role == "reader" else ROOT / "classroom" / "course"
    chosen = any(arg.split("=", 1)[0] in ROOT_OPTIONS for arg in extra)
    argv = [jupyter, "lab"] + ([] if chosen else [str(folder)])
    off = ", ".join(f"'{name}': False" for name in
                    (NBGRADER_SERVER_EXTENSIONS if role == "reader" else EXCHANGE_SERVER_EXTENSIONS))
    argv.append(f"--ServerApp.jpserver_extensions={{{off}}}")
    if role == "teacher":
        argv.append("--FormgradeExtension.debug=False")
    if role == "reader":
        # read only: Jupyter writes into its configuration *directory* (~/.jupyter), not its path
        env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(
            [str(READER_CONFIG)] + ([os.environ["JUPYTER_CONFIG_PATH"]] if os.environ.get("JUPYTER_CONFIG_PATH") else []))
        notes.append("Start with ko/01_why_normalize.ipynb (한국어) or en/01_why_normalize.ipynb (English); "
                     "teachers: make lab-teacher opens the assignments with nbgrader's tools.")
        notes.append("시작은 ko/01_why_normalize.ipynb(한국어) 또는 en/01_why_normalize.ipynb(English)입니다. "
                     "교사용 도구(nbgrader)는 make lab-teacher로 엽니다.")
    else:
        notes.append("The course folder classroom/course/ with nbgrader's tools (Formgrader, Create Assignment); "
                     "the teachers' guide: chapters/en/teachers.md. 과제 폴더 classroom/course/를 nbgrader 도구와 함께 엽니다.")
    if is_root:
        argv.append("--allow-root")
        notes.append("Running as root (a container or a cloud notebook): --allow-root added. "
                     "root로 실행 중이므로 --allow-root를 붙였습니다.")
    return argv + extra, env, notes


def main(args: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("role", choices=("reader", "teacher"))
    parser.add_argument("--dry-run", action="store_true", help="print the command and exit")
    parser.add_argument("--fresh", action="store_true",
                        help="reader: move the copies into <workdir>/backup/<time>/ and copy every chapter afresh")
    parser.add_argument("--workdir", type=Path, default=WORKDIR,
                        help="reader: where the copies of the chapters are (default: lab/)")
    known, extra = parser.parse_known_args(args)
    if known.role == "teacher" and (known.fresh or known.workdir != WORKDIR):
        parser.error("--fresh and --workdir are the reader's (make lab); the teacher opens classroom/course/")
    is_root = hasattr(os, "geteuid") and os.geteuid() == 0
    workdir = known.workdir.resolve()
    argv, env, notes = command(known.role, extra, is_root, workdir)
    chosen = any(arg.split("=", 1)[0] in ROOT_OPTIONS for arg in extra)
    if known.role == "reader" and not chosen and not known.dry_run:
        copied, backup = copy_chapters(workdir, fresh=known.fresh)
        notes += copy_notes(workdir, copied, backup, len(book_files()))
    for note in notes:
        print(note, flush=True)
    shown = " ".join(f"{k}={v}" for k, v in env.items())
    print(f"$ {shown + ' ' if shown else ''}{' '.join(argv)}", flush=True)
    if known.dry_run:
        return 0
    cwd = ROOT / "classroom" / "course" if known.role == "teacher" else ROOT
    os.chdir(cwd)
    os.execve(argv[0], argv, dict(os.environ, **env))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
