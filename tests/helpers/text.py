"""The text of the chapters: Hangul in a string, a notebook cell's text outputs (tests/book,
tests/classroom)."""

from __future__ import annotations


def has_hangul(text: str) -> bool:
    return any("\uac00" <= ch <= "\ud7a3" for ch in text)


def text_outputs(cell) -> list[str]:
    """The cell's text outputs; consecutive chunks of one stream are joined (a kernel may flush
    one print in several pieces, differently from run to run)."""
    out: list[str] = []
    previous = None
    for o in cell.get("outputs", []):
        if o.output_type == "stream":
            if previous == o.name:
                out[-1] += o.text
            else:
                out.append(o.text)
            previous = o.name
            continue
        previous = None
        if o.output_type in ("execute_result", "display_data") and "text/plain" in o.get("data", {}):
            out.append(o.data["text/plain"])
        elif o.output_type == "error":
            out.append(f"{o.ename}: {o.evalue}")
    return out
