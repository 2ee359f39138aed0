"""ARCHITECTURE.md's rule of who imports whom: the library needs only torch, and the book's,
the classroom's and the measurements' modules use the library, never the reverse."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

from helpers import ROOT

LIBRARY = ("axes", "stats", "functional", "modules", "autograd", "distributed")
HELPERS = ("i18n", "examples", "viz", "widgets", "exercises", "bench")
HEAVY = ("matplotlib", "ipywidgets", "PIL", "tqdm", "nbgrader", "IPython", "numpy.typing")


def imports_of(path) -> set[str]:
    """Every module a file imports, relative imports as normlib.<name>."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = "normlib" + (f".{node.module}" if node.module else "")
                found.update([base] if node.module else [f"normlib.{a.name}" for a in node.names])
            elif node.module:
                found.add(node.module)
    return found


def test_import_normlib_loads_the_library_only():
    """What `import normlib` adds to what torch itself loads (torch.hub imports tqdm when it is
    installed: that is torch's, not the library's)."""
    code = ("import json, sys; import torch, torch.distributed, torch.autograd.forward_ad; "
            "before = set(sys.modules); import normlib; "
            "print(json.dumps(sorted(m for m in set(sys.modules) - before if m.startswith('normlib') or "
            f"m.split('.')[0] in {list(HEAVY)!r})))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    loaded = set(json.loads(result.stdout))
    assert "normlib.functional" in loaded, f"the check saw no library module load: {sorted(loaded)}"
    heavy = sorted(m for m in loaded if not m.startswith("normlib"))
    assert not heavy, f"import normlib loads {heavy}: the library must need only torch"
    helpers = sorted(m for m in loaded if m.split(".")[-1] in HELPERS)
    assert not helpers, f"import normlib loads the helper modules {helpers}"


def test_library_modules_import_only_torch_the_standard_library_and_each_other():
    allowed_top = set(sys.stdlib_module_names) | {"torch", "normlib"}
    problems = []
    for name in LIBRARY:
        for module in sorted(imports_of(ROOT / "normlib" / f"{name}.py")):
            top = module.split(".")[0]
            if top not in allowed_top:
                problems.append(f"normlib/{name}.py imports {module}")
            elif top == "normlib" and module != "normlib" and module.split(".")[1] not in LIBRARY:
                problems.append(f"normlib/{name}.py imports the helper {module}")
    assert not problems, "; ".join(problems)


def test_the_rule_sees_a_helper_import(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("from . import viz\nfrom .axes import Sharing\nimport matplotlib.pyplot\n", encoding="utf-8")
    assert imports_of(sample) == {"normlib.viz", "normlib.axes", "matplotlib.pyplot"}
