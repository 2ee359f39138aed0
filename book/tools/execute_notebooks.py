"""Execute chapter notebooks in place, in a fresh kernel each, and store their outputs.

    python book/tools/execute_notebooks.py                 # every notebook under chapters/
    python book/tools/execute_notebooks.py chapters/ko/01_why_normalize.ipynb

The notebooks are committed with these outputs: nbval re-runs them and compares, and the
book is built from them. Widget state is stored too, so widgets render on the static page.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]


def execute(path: Path, timeout: int = 120) -> float:
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        store_widget_state=True,
    )
    client.execute()
    nbformat.write(nb, path)
    return time.perf_counter() - start


def main(args: list[str]) -> int:
    paths = [Path(a) for a in args] or sorted((ROOT / "chapters").glob("*/*.ipynb"))
    if not paths:
        print("no notebooks found under chapters/", file=sys.stderr)
        return 1
    for path in paths:
        seconds = execute(path)
        print(f"executed {path.relative_to(ROOT) if path.is_absolute() else path} in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
