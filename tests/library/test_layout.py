"""What `import normlib` loads: the layers and their maths, at most LINE_BUDGET lines a reader could
be asked to read (issue 38). Chapter 7's and chapter 9's other ways of doing the same layers
(normlib.autograd, normlib.distributed) load when first named; the error texts (normlib.errors)
when an error is raised."""

from __future__ import annotations

import json
import subprocess
import sys

LINE_BUDGET = 2000

# A fresh interpreter that has imported what torch itself brings, then normlib: the normlib modules
# that import adds, with their lengths in lines.
LOADED = """
import json, sys
import torch, torch.distributed, torch.autograd.forward_ad
before = set(sys.modules)
import normlib
{after}
new = sorted(m for m in set(sys.modules) - before if m.startswith("normlib"))
print(json.dumps({{m: sum(1 for _ in open(sys.modules[m].__file__, encoding="utf-8")) for m in new}}))
"""


def loaded(after: str = "") -> dict:
    result = subprocess.run([sys.executable, "-c", LOADED.format(after=after)], capture_output=True, text=True,
                            timeout=120, check=True)
    return json.loads(result.stdout)


def test_import_normlib_loads_at_most_the_line_budget():
    lines = loaded()
    assert {"normlib", "normlib.functional", "normlib.modules", "normlib.axes"} <= set(lines), \
        f"the count saw no library module load: {sorted(lines)}"
    total = sum(lines.values())
    assert total <= LINE_BUDGET, f"import normlib loads {total} lines (budget {LINE_BUDGET}): {lines}"


def test_the_error_texts_load_with_the_first_error_only():
    assert "normlib.errors" not in loaded()
    raised = ("import torch.nn.functional\ntry:\n    normlib.functional.layer_norm(torch.zeros(2, 4), 3)\n"
              "except normlib.NormInputError:\n    pass")
    assert "normlib.errors" in loaded(raised)


def test_autograd_and_distributed_load_when_first_named():
    lines = loaded()
    assert "normlib.autograd" not in lines and "normlib.distributed" not in lines
    named = loaded("normlib.autograd.layer_norm\nfrom normlib import distributed")
    assert {"normlib.autograd", "normlib.distributed"} <= set(named)
    assert "normlib.errors" not in named


def test_a_name_normlib_does_not_have_is_an_attribute_error():
    import pytest

    import normlib
    assert not hasattr(normlib, "no_such_module") and hasattr(normlib, "autograd")
    with pytest.raises(AttributeError, match="no_such_module"):
        normlib.__getattr__("no_such_module")
    assert {"autograd", "distributed", "LayerNorm"} <= set(dir(normlib))
