"""What ``torch.compile`` makes of the readable functions: how many graphs, and why each graph
break happened.

A graph break splits the compiled function into pieces with Python in between: each piece
is fused on its own, so fewer passes over memory are saved.
"""

from __future__ import annotations

import contextlib
import os
from typing import Dict, List, Optional, Sequence, Tuple

import torch

from .variants import ALL_OPS, ARGUMENTS, IMPLEMENTATIONS, SMALL_SIZES, Case, check_choice, check_shape

__all__ = ["graph_breaks", "compile_counts"]


def graph_breaks(op: str, shape: Optional[Sequence[int]] = None) -> Dict[str, object]:
    """What ``torch._dynamo.explain`` says about compiling ``op``'s normlib.functional function
    (training mode, with gradients): how many graphs, and why each break happened.

    >>> graph_breaks("layer_norm")["graphs"]
    1
    """
    check_choice("op", op, ALL_OPS)
    shape = check_shape(op, shape or SMALL_SIZES.get(op, [(256, 768)])[0])
    case = Case(op, shape, "forward+backward")
    args = ARGUMENTS[op](case.x, case.weight, case.bias, case.state)
    torch._dynamo.reset()
    with _graph_break_log() as messages:
        explained = torch._dynamo.explain(IMPLEMENTATIONS[op, "compiled"])(*args)
    torch._dynamo.reset()
    reasons = []
    for message in messages:
        reason = _graph_break_reason(message)
        if reason not in reasons:
            reasons.append(reason)
    if not reasons:      # no log captured: explain's own (terser) reasons
        reasons = [str(br.reason).splitlines()[0] for br in explained.break_reasons]
    return {"op": op, "graphs": explained.graph_count, "breaks": explained.graph_break_count, "reasons": reasons}


def compile_counts() -> Tuple[int, int]:
    """(graphs dynamo has made, graphs inductor compiled anew) so far in this process: torch's
    own counters, private, so only informative (-1 when missing)."""
    try:
        from torch._dynamo.utils import counters
        return int(counters["stats"]["unique_graphs"]), int(counters["inductor"]["fxgraph_cache_miss"])
    except Exception:  # pragma: no cover
        return -1, -1


@contextlib.contextmanager
def _graph_break_log():
    """Collect dynamo's graph-break messages (the ``graph_breaks`` log of ``TORCH_LOGS``), which
    name the line that broke the graph, without printing them; torch's log settings are reset
    to their defaults afterwards."""
    import logging

    import torch._dynamo.symbolic_convert  # creates the loggers

    messages: List[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    loggers = [logging.getLogger(name) for name in list(logging.root.manager.loggerDict)
               if name.startswith("torch._dynamo") and name.endswith("__graph_breaks")]
    handler = Collect()
    torch._logging.set_logs(graph_breaks=True)
    saved = [(lg, lg.propagate) for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.propagate = False          # to us only, not to torch's stderr handler
    try:
        yield messages
    finally:
        for lg, propagate in saved:
            lg.removeHandler(handler)
            lg.propagate = propagate
        torch._logging.set_logs()


def _graph_break_reason(message: str) -> str:
    """``"axes.py:139: Failed to convert args/kwargs to proxy (call_function args: …)"`` from
    one of dynamo's graph-break messages."""
    import re

    where = re.search(r"in user code at (\S+):(\d+)", message)
    lines = [line.strip() for line in message.splitlines()]
    what = next((lines[i - 1] for i, line in enumerate(lines) if line.startswith("Explanation:") and i > 0), "")
    what = what or next((line for line in lines if line), "")
    context = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("Developer debug context:")), "")
    place = f"{os.path.basename(where.group(1))}:{where.group(2)}: " if where else ""
    return place + what + (f" ({context})" if context else "")
