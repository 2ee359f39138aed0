"""Open JupyterLab for a reader (the chapters, no teacher tools) or for a teacher (the assignments, with
nbgrader's tools): what `make lab` and `make lab-teacher` run.

    python -m tools.lab reader  [--dry-run] [JUPYTER LAB OPTIONS ...]
    python -m tools.lab teacher [--dry-run] [JUPYTER LAB OPTIONS ...]

The environment has nbgrader installed for the classroom, and nbgrader enables itself in every
JupyterLab of the environment: a reader would see "Create Assignment" and formgrader menus and a
"No nbgrader_config.py file found" log. So the reader's JupyterLab

- turns nbgrader's server extensions off on the command line (the environment's configuration
  outranks a user's, so a config file could not), and
- disables its JupyterLab extension through a page configuration kept in this repository
  (``tools/lab_reader/labconfig/page_config.json``, found through ``JUPYTER_CONFIG_DIR``; the
  reader's workspaces and settings, which JupyterLab keeps under that folder too, stay in the
  reader's own Jupyter folder, ``~/.jupyter/lab``, so that reading never writes into the repository),

and opens ``chapters/``. The teacher's opens ``assignments/``, the course folder where
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
``--ServerApp.root_dir=DIR``) is opened instead (JupyterLab's folder argument would outrank it):
tests/test_explorer_lab.py runs a notebook of its own in a temporary folder that way. Run as root
(containers, many cloud notebooks), both add ``--allow-root`` and say so, instead of stopping with
"Running as root is not recommended".
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
READER_CONFIG = ROOT / "tools" / "lab_reader"
ROOT_OPTIONS = ("--notebook-dir", "--ServerApp.root_dir")   # the folder to open, when the caller names one
EXCHANGE_SERVER_EXTENSIONS = (      # the student's Assignment List (fetch, submit): nbgrader's exchange only
    "nbgrader.server_extensions.assignment_list",
)
NBGRADER_SERVER_EXTENSIONS = (
    "nbgrader.server_extensions.formgrader",
    "nbgrader.server_extensions.validate_assignment",
    "nbgrader.server_extensions.course_list",            # Course List: links to the formgraders
) + EXCHANGE_SERVER_EXTENSIONS


def _own_lab_folders() -> dict[str, str]:
    """Where JupyterLab keeps workspaces and settings for this user (``<jupyter_config_dir>/lab/…``,
    before JUPYTER_CONFIG_DIR points at tools/lab_reader), unless the environment already says."""
    from jupyter_core.paths import jupyter_config_dir

    lab = Path(jupyter_config_dir()) / "lab"
    wanted = {"JUPYTERLAB_WORKSPACES_DIR": lab / "workspaces", "JUPYTERLAB_SETTINGS_DIR": lab / "user-settings"}
    return {name: str(path) for name, path in wanted.items() if not os.environ.get(name)}


def command(role: str, extra: list[str], is_root: bool) -> tuple[list[str], dict[str, str], list[str]]:
    """The JupyterLab command line, the environment changes and the notes to print for ``role``."""
    if role not in ("reader", "teacher"):
        raise ValueError(f"role must be 'reader' or 'teacher'; got {role!r}")
    jupyter = str(Path(sys.executable).parent / "jupyter")
    env: dict[str, str] = {}
    notes: list[str] = []
    folder = "chapters" if role == "reader" else "assignments"
    chosen = any(arg.split("=", 1)[0] in ROOT_OPTIONS for arg in extra)
    argv = [jupyter, "lab"] + ([] if chosen else [str(ROOT / folder)])
    off = ", ".join(f"'{name}': False" for name in
                    (NBGRADER_SERVER_EXTENSIONS if role == "reader" else EXCHANGE_SERVER_EXTENSIONS))
    argv.append(f"--ServerApp.jpserver_extensions={{{off}}}")
    if role == "teacher":
        argv.append("--FormgradeExtension.debug=False")
    if role == "reader":
        env["JUPYTER_CONFIG_DIR"] = str(READER_CONFIG)
        env.update(_own_lab_folders())
        notes.append("Start with ko/01_why_normalize.ipynb (한국어) or en/01_why_normalize.ipynb (English); "
                     "teachers: make lab-teacher opens the assignments with nbgrader's tools.")
        notes.append("시작은 ko/01_why_normalize.ipynb(한국어) 또는 en/01_why_normalize.ipynb(English)입니다. "
                     "교사용 도구(nbgrader)는 make lab-teacher로 엽니다.")
    else:
        notes.append("The course folder assignments/ with nbgrader's tools (Formgrader, Create Assignment); "
                     "README, Classroom. 과제 폴더 assignments/를 nbgrader 도구와 함께 엽니다.")
    if is_root:
        argv.append("--allow-root")
        notes.append("Running as root (a container or a cloud notebook): --allow-root added. "
                     "root로 실행 중이므로 --allow-root를 붙였습니다.")
    return argv + extra, env, notes


def main(args: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("role", choices=("reader", "teacher"))
    parser.add_argument("--dry-run", action="store_true", help="print the command and exit")
    known, extra = parser.parse_known_args(args)
    is_root = hasattr(os, "geteuid") and os.geteuid() == 0
    argv, env, notes = command(known.role, extra, is_root)
    for note in notes:
        print(note, flush=True)
    shown = " ".join(f"{k}={v}" for k, v in env.items())
    print(f"$ {shown + ' ' if shown else ''}{' '.join(argv)}", flush=True)
    if known.dry_run:
        return 0
    cwd = ROOT / "assignments" if known.role == "teacher" else ROOT
    os.chdir(cwd)
    os.execve(argv[0], argv, dict(os.environ, **env))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
