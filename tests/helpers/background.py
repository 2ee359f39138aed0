"""Slow set-up started early, in a background thread, on the second core (conftest.py starts it;
the modules' fixtures wait for it: tests/classroom)."""

from __future__ import annotations

from pathlib import Path

# A test module may name set-up work that is mostly other processes (nbgrader runs) in a dict
# EARLY = {name: work}, work(folder) -> result. conftest.py starts each in a background thread once
# collection ends, so it runs beside the rest of the session; the module's fixture takes the result
# with early(name, work), which waits for it, or runs work itself when nothing was started (one
# module run alone, pytest-xdist).
_EARLY: dict = {}   # name -> concurrent.futures.Future


def start_early(name: str, work) -> None:
    import tempfile
    import threading
    from concurrent.futures import Future

    future: Future = Future()
    folder = Path(tempfile.mkdtemp(prefix=f"early-{name.replace(' ', '-')}-"))

    def run() -> None:
        try:
            future.set_result(work(folder))
        except BaseException as error:   # handed to the fixture that waits for it
            future.set_exception(error)

    _EARLY[name] = future
    threading.Thread(target=run, name=f"early {name}", daemon=True).start()


def early(name: str, work):
    future = _EARLY.pop(name, None)
    if future is None:
        import tempfile
        return work(Path(tempfile.mkdtemp(prefix=f"early-{name.replace(' ', '-')}-")))
    return future.result()
