"""ARCHITECTURE.md's rules: the library (the modules directly in normlib/) needs only torch; the
book's, the classroom's and the measurements' packages (book/normlib_book, classroom/normlib_classroom,
benchmarks/normlib_benchmarks) use the library, never the reverse; no module is too long to read; and from a layer's
``forward`` to the line that computes x̂ is one jump."""

from __future__ import annotations

import ast
import inspect
import json
import re
import subprocess
import sys

import normlib
from helpers.paths import ROOT
from normlib import modules

PACKAGE = ROOT / "normlib"
LIBRARY = tuple(sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"))
HELPERS = ("book", "exercises", "bench")
HEAVY = ("matplotlib", "ipywidgets", "anywidget", "PIL", "tqdm", "nbgrader", "IPython", "numpy.typing")
MAX_LINES = 400
MAX_JS_LINES = 600   # the explorer's front end: its arithmetic, then its drawing


def module_name(path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path, package: str = "normlib") -> set[str]:
    """Every module a file imports; a relative import is resolved against ``package`` (the
    package the file is in): ``from .. import axes`` in normlib_book gives normlib.axes."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1])
                if node.module:
                    found.add(f"{base}.{node.module}")
                else:
                    found.update(f"{base}.{a.name}" for a in node.names)
            elif node.module:
                found.add(node.module)
    return found


def test_the_library_is_the_modules_directly_in_normlib_and_the_helpers_are_packages():
    assert {"axes", "stats", "checks", "functional", "modules", "autograd", "distributed"} <= set(LIBRARY)
    packages = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists())
    assert packages == sorted(HELPERS), f"normlib's subpackages are {packages}; ARCHITECTURE.md names {HELPERS}"


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
    helpers = sorted(m for m in loaded if m.split(".")[1:2] and m.split(".")[1] in HELPERS)
    assert not helpers, f"import normlib loads the helper modules {helpers}"


def test_library_modules_import_only_torch_the_standard_library_and_each_other():
    allowed_top = set(sys.stdlib_module_names) | {"torch", "normlib"}
    problems = []
    for name in ("__init__", *LIBRARY):
        for module in sorted(imports_of(PACKAGE / f"{name}.py")):
            top = module.split(".")[0]
            if top not in allowed_top:
                problems.append(f"normlib/{name}.py imports {module}")
            elif top == "normlib" and module != "normlib" and module.split(".")[1] not in LIBRARY:
                problems.append(f"normlib/{name}.py imports the helper {module}")
    assert not problems, "; ".join(problems)


def test_helpers_use_the_library_and_the_books_strings_only():
    """The book imports neither the classroom nor the measurements; the classroom needs no drawing
    (it runs where nbgrader runs): of the book it uses the strings (normlib_book.i18n) only."""
    problems = []
    for path in sorted(PACKAGE.glob("*/*.py")):
        package = module_name(path) if path.stem == "__init__" else module_name(path.parent / "__init__.py")
        helper = path.parent.name
        for module in imports_of(path, package):
            parts = module.split(".")
            if parts[0] == "normlib" and len(parts) > 1 and parts[1] in HELPERS and parts[1] != helper:
                if helper == "book" or (helper == "exercises" and module != "normlib_book.i18n"):
                    problems.append(f"{path.relative_to(ROOT)} imports {module}")
            if helper == "exercises" and parts[0] in HEAVY:
                problems.append(f"{path.relative_to(ROOT)} imports {module}")
    assert not problems, "; ".join(problems)


def test_the_rule_sees_a_helper_import(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("from . import viz\nfrom .axes import Sharing\nfrom .. import stats\nimport matplotlib.pyplot\n",
                      encoding="utf-8")
    assert imports_of(sample, "normlib_book") == {"normlib_book.viz", "normlib_book.axes", "normlib.stats",
                                                  "matplotlib.pyplot"}
    sample.write_text("from . import viz\nfrom .axes import Sharing\n", encoding="utf-8")
    assert imports_of(sample) == {"normlib.viz", "normlib.axes"}


def test_no_module_is_too_long_to_read():
    limit = {".py": MAX_LINES, ".js": MAX_JS_LINES}
    long = {str(p.relative_to(ROOT)): n for p in sorted([*PACKAGE.rglob("*.py"), *PACKAGE.rglob("*.js")])
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > limit[p.suffix]}
    assert not long, f"modules over {MAX_LINES} lines (a front-end module: {MAX_JS_LINES}): {long}"


# The book's JavaScript lives beside the Python it serves (book/normlib_book/explorer.js for explorer.py).
JS_IMPORT = re.compile(r"^\s*import\b|\bimport\s*\(|\brequire\s*\(", re.MULTILINE)


def test_the_books_javascript_imports_nothing_and_is_shipped():
    """explorer.js is one self-contained ES module: it imports nothing (the static page mounts it from
    the stored widget state, offline, with no bundler and no CDN), and the package ships it and its
    stylesheet (Colab installs normlib[book] from git)."""
    import tomllib
    scripts = sorted(PACKAGE.rglob("*.js"))
    assert [p.name for p in scripts] == ["explorer.js"], scripts
    for path in scripts:
        found = JS_IMPORT.findall(path.read_text(encoding="utf-8"))
        assert not found, f"{path.relative_to(ROOT)} imports {found}"
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-data"]
    assert set(data["normlib_book"]) == {"explorer.js", "explorer.css"}, data


def test_the_javascript_import_rule_sees_an_import():
    assert JS_IMPORT.search('import * as d3 from "https://esm.sh/d3";')
    assert JS_IMPORT.search("const m = await import(url);")
    assert not JS_IMPORT.search("// the module imports nothing; export default { render };")


def assigns_x_hat(function) -> bool:
    tree = ast.parse(inspect.cleandoc("\n" + inspect.getsource(function)))
    return any(isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "x_hat" for t in node.targets)
               for node in ast.walk(tree))


def called_functions(method):
    """The module-level functions ``method`` calls (``F.layer_norm(...)``: normlib.functional.layer_norm)."""
    tree = ast.parse(inspect.cleandoc("\n" + inspect.getsource(method)))
    scope = vars(inspect.getmodule(method))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            chain, f = [], node.func
            while isinstance(f, ast.Attribute):
                chain.insert(0, f.attr)
                f = f.value
            if isinstance(f, ast.Name) and f.id in scope:
                target = scope[f.id]
                for attr in chain:
                    target = getattr(target, attr, None)
                found.append(target)
    return [f for f in found if inspect.isfunction(f)]


LAYERS = [normlib.LayerNorm, normlib.RMSNorm, normlib.GroupNorm, normlib.BatchNorm1d, normlib.InstanceNorm1d,
          normlib.DyT]   # (normlib.dyt: its x̂ = tanh(αx) stands where the statistics were)


def test_from_a_layers_forward_to_x_hat_is_one_jump():
    """Each layer's forward calls one normlib function, and that function computes x̂ itself."""
    for layer in LAYERS:
        called = [f for f in called_functions(layer.forward)   # (an error message's say() is no step of the maths)
                  if f.__module__.startswith("normlib") and f.__module__ != "normlib.messages"]
        assert len(called) == 1, f"{layer.__name__}.forward calls {[f.__qualname__ for f in called]}"
        assert assigns_x_hat(called[0]), f"{called[0].__module__}.{called[0].__qualname__} does not compute x_hat"


def test_the_jump_check_can_fail():
    class Indirect(modules.LayerNorm):
        def forward(self, input):
            return modules.F.layer_norm(input, self.normalized_shape)   # one jump, then x̂: fine
    assert assigns_x_hat(called_functions(Indirect.forward)[0])
    assert not assigns_x_hat(normlib.stats.moments)


def test_the_package_ships_its_helper_packages():
    """pyproject.toml's package list takes the subpackages too (a plain `pip install .` has them)."""
    import tomllib
    from setuptools import find_packages
    find = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"]["find"]
    shipped = set(find_packages(str(ROOT), include=find["include"]))
    assert shipped == {"normlib", *(f"normlib.{h}" for h in HELPERS)}, shipped
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert {"book", "classroom", "bench"} <= set(extras), f"an extra per helper package: {sorted(extras)}"
