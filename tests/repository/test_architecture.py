"""ARCHITECTURE.md is true to the code: four products in four folders (normlib/, book/, classroom/,
benchmarks/), its tree names every Python module of them and nothing that is not there, and the rule
of who imports whom holds for every .py file of every product (relative imports included).

- The library (normlib/) needs only torch: `import normlib` loads nothing heavy and no other
  product; a library module imports torch, the standard library and the library only.
- The book (book/: normlib_book, book/site, book/tools) imports the library. The classroom imports
  the library and, of the book, its string lookup, book/tools/bilingual and book/site/korean_font.
  The benchmarks import the library and, of the book, its strings and colours. Nothing imports the
  classroom or the benchmarks (the tests and the chapters' notebooks aside). What breaks the rule
  today is listed in ARCHITECTURE.md's "Exceptions" section, and only what is listed there passes.
- The wheel ships normlib and the three helper packages as top-level packages, and no module
  imports a helper package under a second name (``book.normlib_book``).
- From a layer's ``forward`` to the line that computes x̂ is one jump.

Files are split by idea, not by a line cap: there is no limit on a module's lines here (the caps of
400 lines for Python and 600 for the explorer's JavaScript made the string tables split by length).
"""

from __future__ import annotations

import ast
import inspect
import json
import re
import subprocess
import sys
from pathlib import Path

import tomllib

import normlib
from helpers.paths import ROOT
from normlib import modules

PRODUCTS = {"library": "normlib", "book": "book", "classroom": "classroom", "benchmarks": "benchmarks"}
LIBRARY = tuple(sorted(p.stem for p in (ROOT / "normlib").glob("*.py") if p.stem != "__init__"))
HEAVY = ("matplotlib", "ipywidgets", "anywidget", "PIL", "tqdm", "nbgrader", "IPython", "numpy.typing")
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
PACKAGE_DIRS = {name: ROOT / folder for name, folder in SETUPTOOLS["package-dir"].items()}   # normlib_book: book/normlib_book
HELPERS = tuple(name for name in PACKAGE_DIRS if name != "normlib")
# the top-level names that belong to each product: a shipped package, or the product's folder
# (book.site.website, classroom.tools.collect, benchmarks.tools.page_weight)
PRODUCT_OF_NAME = {"normlib": "library", "book": "book", "classroom": "classroom", "benchmarks": "benchmarks",
                   "normlib_book": "book", "normlib_classroom": "classroom", "normlib_benchmarks": "benchmarks"}
# What each product may import of the others: a whole product, or modules of one. ARCHITECTURE.md,
# "Who imports whom", says the same in words.
MAY_IMPORT = {
    "library": (),
    "book": ("library",),
    "classroom": ("library", "normlib_book.i18n", "book.tools.bilingual", "book.site.korean_font"),
    "benchmarks": ("library", "normlib_book.i18n", "normlib_book.viz"),
}


def text(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


# --- Modules and their imports ------------------------------------------------------------------------

def product_files(root: Path = ROOT) -> dict[str, list[Path]]:
    """Every .py file of each product's folder."""
    return {product: sorted(p for p in (root / folder).rglob("*.py") if "__pycache__" not in p.parts)
            for product, folder in PRODUCTS.items()}


def module_name(path: Path, root: Path = ROOT) -> str:
    """The name a file is imported by: under a shipped package's folder, the package's name
    (book/normlib_book/viz.py: normlib_book.viz), else its path from the root (book/site/website.py:
    book.site.website)."""
    for name, folder in PACKAGE_DIRS.items():
        folder = root / folder.relative_to(ROOT)
        if path.is_relative_to(folder):
            parts = (name, *path.relative_to(folder).with_suffix("").parts)
            break
    else:
        parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def known_modules(root: Path = ROOT) -> set[str]:
    return {module_name(p, root) for files in product_files(root).values() for p in files}


def imports_of(path: Path, package: str, known: set[str] = frozenset()) -> set[str]:
    """Every module a file imports. A relative import is resolved against ``package`` (the package
    the file is in: ``from .. import stats`` in normlib.x gives normlib.stats); ``from X import a``
    gives X.a when that is a module of the repository (``known``), else X."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1])
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module
            for alias in node.names:
                found.add(f"{source}.{alias.name}" if f"{source}.{alias.name}" in known or not node.module else source)
    return found


def package_of(path: Path, root: Path = ROOT) -> str:
    name = module_name(path, root)
    return name if path.stem == "__init__" else name.rpartition(".")[0]


def allowed(importer: str, module: str) -> bool:
    """Whether a module of the product ``importer`` may import ``module``."""
    product = PRODUCT_OF_NAME.get(module.split(".")[0])
    if product is None or product == importer:
        return True
    for rule in MAY_IMPORT[importer]:
        if rule == product or module == rule:
            return True
    return False


def crossings(root: Path = ROOT) -> set[tuple[str, str]]:
    """(file, module) for every import of one product by another that the rule does not allow."""
    known = known_modules(root)
    found = set()
    for product, files in product_files(root).items():
        for path in files:
            for module in imports_of(path, package_of(path, root), known):
                if not allowed(product, module):
                    found.add((path.relative_to(root).as_posix(), module))
    return found


EXCEPTION = re.compile(r"^- `([\w/.-]+\.py)` imports `([\w.]+)`", re.MULTILINE)


def listed_exceptions() -> set[tuple[str, str]]:
    """The imports ARCHITECTURE.md's "Exceptions" section lists as breaking the rule today."""
    section = text("ARCHITECTURE.md").partition("\n## Exceptions")[2].partition("\n## ")[0]
    return set(EXCEPTION.findall(section))


def test_every_import_between_products_follows_the_rule():
    found, listed = crossings(), listed_exceptions()
    unlisted = sorted(found - listed)
    assert not unlisted, ("imports that break ARCHITECTURE.md's rule (fix them, or list them under "
                          f"'## Exceptions' with the reason): {unlisted}")
    gone = sorted(listed - found)
    assert not gone, f"ARCHITECTURE.md lists exceptions that no longer exist (remove them): {gone}"


def write(root: Path, relative: str, source: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source, encoding="utf-8")


def test_the_import_rule_can_fail(tmp_path):
    """Each rule, broken once in a sample tree laid out as the repository is."""
    write(tmp_path, "normlib/__init__.py", "from . import stats\n")
    write(tmp_path, "normlib/stats.py", "import torch\n")
    write(tmp_path, "book/normlib_book/__init__.py", "from normlib import stats\n")
    write(tmp_path, "book/normlib_book/i18n.py", "")
    write(tmp_path, "book/normlib_book/viz.py", "import normlib_classroom\n")   # the book: no classroom
    write(tmp_path, "book/site/website.py", "from benchmarks.tools import page_weight\n")              # nor benchmarks
    write(tmp_path, "book/tools/bilingual.py", "")
    write(tmp_path, "book/tools/lab.py", "")
    write(tmp_path, "classroom/normlib_classroom/__init__.py", "from normlib_book.i18n import text\n")    # allowed
    write(tmp_path, "classroom/normlib_classroom/_report.py", "from normlib_book import viz\n")           # drawing: not
    write(tmp_path, "classroom/tools/student.py", "from book.tools import bilingual, lab\n")              # lab: not
    write(tmp_path, "benchmarks/normlib_benchmarks/__init__.py", "from normlib_book import i18n, viz\n")  # allowed
    write(tmp_path, "benchmarks/normlib_benchmarks/work.py", "from normlib_classroom import _report\n")   # not
    write(tmp_path, "benchmarks/tools/page_weight.py", "from book.site import website\n")                 # not
    assert crossings(tmp_path) == {
        ("book/normlib_book/viz.py", "normlib_classroom"),
        ("book/site/website.py", "benchmarks.tools.page_weight"),
        ("classroom/normlib_classroom/_report.py", "normlib_book.viz"),
        ("classroom/tools/student.py", "book.tools.lab"),
        ("benchmarks/normlib_benchmarks/work.py", "normlib_classroom._report"),
        ("benchmarks/tools/page_weight.py", "book.site.website"),
    }
    assert not allowed("library", "normlib_book.i18n") and allowed("library", "torch.nn")


def test_relative_imports_resolve_to_their_package(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("from . import viz\nfrom .axes import Sharing\nimport matplotlib.pyplot\n", encoding="utf-8")
    assert imports_of(sample, "normlib_book") == {"normlib_book.viz", "normlib_book.axes", "matplotlib.pyplot"}
    sample.write_text("from .. import tools\nfrom ..tools.lab import WORKDIR\n", encoding="utf-8")
    assert imports_of(sample, "book.site") == {"book.tools", "book.tools.lab"}
    assert module_name(ROOT / "book/normlib_book/viz.py") == "normlib_book.viz"
    assert module_name(ROOT / "book/site/website.py") == "book.site.website"
    assert package_of(ROOT / "classroom/normlib_classroom/__init__.py") == "normlib_classroom"


def test_the_exceptions_are_read_from_architecture():
    assert EXCEPTION.findall("- `benchmarks/x.py` imports `normlib_book.viz`: why\n- not one\n") == [
        ("benchmarks/x.py", "normlib_book.viz")]


# --- ARCHITECTURE.md's tree is the tree -----------------------------------------------------------------

TREE_NAME = re.compile(r"[^\s│├└─]")


def tree_paths(page: str) -> list[str]:
    """The paths drawn by the page's trees (fenced blocks drawn with ├── and └──): a line's depth is
    the column its name starts at, four per level; its comment follows two spaces."""
    paths = []
    for block in re.findall(r"^```text\n(.*?)^```", page, re.MULTILINE | re.DOTALL):
        if "── " not in block:
            continue
        stack: list[str] = []
        for line in block.splitlines():
            start = TREE_NAME.search(line)
            if not start or line.lstrip().startswith("#"):
                continue
            depth = start.start() // 4
            name = re.split(r"\s{2,}", line[start.start():].rstrip())[0]
            stack = stack[:depth] + [name.rstrip("/")]
            paths.append("/".join(stack) + ("/" if name.endswith("/") else ""))
    return paths


def python_modules(root: Path = ROOT) -> set[str]:
    """The .py files of the four products (an empty ``__init__.py`` only marks a package: it may go unnamed)."""
    return {p.relative_to(root).as_posix() for files in product_files(root).values() for p in files
            if p.name != "__init__.py" or p.read_text(encoding="utf-8").strip()}


def test_the_tree_names_every_module_and_nothing_else():
    drawn = tree_paths(text("ARCHITECTURE.md"))
    assert {f"{folder}/" for folder in PRODUCTS.values()} <= set(drawn), "the tree draws the four products"
    missing = sorted(python_modules() - set(drawn))
    assert not missing, f"modules ARCHITECTURE.md's tree does not name: {missing}"
    unreal = sorted(p for p in drawn if not (ROOT / p).exists())
    assert not unreal, f"ARCHITECTURE.md's tree names what is not there: {unreal}"


def test_the_tree_check_can_fail():
    page = "```text\nnormlib/\n├── axes.py       which elements\n└── sub/\n    └── x.py  a comment\nbook/\n```\n"
    assert tree_paths(page) == ["normlib/", "normlib/axes.py", "normlib/sub/", "normlib/sub/x.py", "book/"]
    assert "normlib/stats.py" in python_modules() - set(tree_paths(page))


# --- The library needs only torch ------------------------------------------------------------------------

def newly_loaded(code: str) -> dict[str, list[str]]:
    """Run ``code`` after torch's own imports in a fresh interpreter; it prints a JSON dict of lists."""
    prelude = ("import json, sys; import torch, torch.distributed, torch.autograd.forward_ad; "
               "before = set(sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True, timeout=120,
                            check=True, cwd=ROOT)
    return json.loads(result.stdout)


def test_import_normlib_loads_the_library_only():
    """What `import normlib` adds to what torch itself loads (torch.hub imports tqdm when it is
    installed: that is torch's, not the library's); and the classroom's checkers, which run wherever
    nbgrader runs, load no drawing either."""
    watched = [*HEAVY, *HELPERS, "book", "classroom", "benchmarks"]
    loaded = newly_loaded(
        "def new(): return sorted(m for m in set(sys.modules) - before if m.split('.')[0] in WATCHED or m.startswith('normlib'))\n"
        f"WATCHED = {watched!r}\n"
        "import normlib; library = new(); import normlib_classroom; classroom = new()\n"
        "print(json.dumps({'library': library, 'classroom': classroom}))")
    assert "normlib.functional" in loaded["library"], f"the check saw no library module load: {loaded['library']}"
    other = [m for m in loaded["library"] if m.split(".")[0] != "normlib"]
    assert not other, f"import normlib loads {other}: the library must need only torch and load no other product"
    heavy = [m for m in loaded["classroom"] if m.split(".")[0] in HEAVY]
    assert not heavy, f"import normlib_classroom loads {heavy}"


def test_library_modules_import_only_torch_the_standard_library_and_each_other():
    allowed_top = set(sys.stdlib_module_names) | {"torch", "normlib"}
    problems = []
    for name in ("__init__", *LIBRARY):
        for module in sorted(imports_of(ROOT / "normlib" / f"{name}.py", "normlib")):
            top = module.split(".")[0]
            if top not in allowed_top:
                problems.append(f"normlib/{name}.py imports {module}")
            elif top == "normlib" and module != "normlib" and module.split(".")[1] not in LIBRARY:
                problems.append(f"normlib/{name}.py imports {module}, which is not a library module")
    assert not problems, "; ".join(problems)
    assert not [p for p in (ROOT / "normlib").iterdir() if p.is_dir() and p.name != "__pycache__"], \
        "normlib/ holds the library's modules only, no subpackage"


# --- The wheel, and one name per package --------------------------------------------------------------

def test_the_wheel_ships_the_library_and_the_three_helper_packages():
    packages = SETUPTOOLS["packages"]
    assert sorted(packages) == sorted(["normlib", "normlib_book", "normlib_classroom", "normlib_benchmarks"]), packages
    assert set(SETUPTOOLS["package-dir"]) == set(packages)
    for name, folder in PACKAGE_DIRS.items():
        assert (folder / "__init__.py").is_file(), f"{name}'s folder {folder.relative_to(ROOT)} is no package"
        nested = [p.relative_to(ROOT).as_posix() for p in folder.rglob("__init__.py") if p.parent != folder]
        assert not nested, f"{name} has subpackages the wheel's package list leaves out: {nested}"
    extras = tomllib.loads(text("pyproject.toml"))["project"]["optional-dependencies"]
    assert {"book", "classroom", "bench"} <= set(extras), f"an extra per helper package: {sorted(extras)}"


DOUBLE = re.compile(r"\b(?:book\.normlib_book|classroom\.normlib_classroom|benchmarks\.normlib_benchmarks)\b")


def double_names(source: str) -> list[str]:
    """Imports of a helper package through its folder (``book.normlib_book``): a second module
    object, with its own copy of every table and setting."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if DOUBLE.match(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [f"{node.module}.{a.name}" for a in node.names if DOUBLE.match(f"{node.module}.{a.name}")]
    return found


def test_no_helper_package_is_imported_under_its_folders_name():
    files = [p for files in product_files().values() for p in files]
    files += [p for p in (ROOT / "tests").rglob("*.py") if "__pycache__" not in p.parts]
    problems = {p.relative_to(ROOT).as_posix(): found for p in files if (found := double_names(p.read_text(encoding="utf-8")))}
    for source in sorted([*(ROOT / "chapters" / "src").glob("*.md"), *(ROOT / "classroom" / "course" / "src").glob("*.md")]):
        if found := DOUBLE.findall(source.read_text(encoding="utf-8")):
            problems[source.relative_to(ROOT).as_posix()] = found
    assert not problems, f"a helper package imported under its folder's name: {problems}"
    assert double_names("from book.normlib_book import viz\nimport classroom.normlib_classroom\nfrom book.site import x\n") == [
        "book.normlib_book.viz", "classroom.normlib_classroom"]


# --- The explorer's JavaScript ---------------------------------------------------------------------------

JS_IMPORT = re.compile(r"^\s*import\b|\bimport\s*\(|\brequire\s*\(", re.MULTILINE)


def test_the_books_javascript_imports_nothing_and_is_shipped():
    """explorer.js is one self-contained ES module: it imports nothing (the static page mounts it from
    the stored widget state, offline, with no bundler and no CDN), and the package ships it and its
    stylesheet (Colab installs normlib[book] from git), and chapter 12's C++ source beside them."""
    scripts = sorted(PACKAGE_DIRS["normlib_book"].rglob("*.js"))
    assert [p.name for p in scripts] == ["explorer.js"], scripts
    for path in scripts:
        found = JS_IMPORT.findall(path.read_text(encoding="utf-8"))
        assert not found, f"{path.relative_to(ROOT)} imports {found}"
    data = SETUPTOOLS["package-data"]
    assert set(data["normlib_book"]) == {"explorer.js", "explorer.css", "fused.cpp"}, data
    assert all((PACKAGE_DIRS["normlib_book"] / name).is_file() for name in data["normlib_book"])


def test_the_javascript_import_rule_sees_an_import():
    assert JS_IMPORT.search('import * as d3 from "https://esm.sh/d3";')
    assert JS_IMPORT.search("const m = await import(url);")
    assert not JS_IMPORT.search("// the module imports nothing; export default { render };")


# --- The maths one jump from a layer ---------------------------------------------------------------------

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
MESSAGES = ("normlib.messages", "normlib.errors")   # an error message is no step of the maths


def test_from_a_layers_forward_to_x_hat_is_one_jump():
    """Each layer's forward calls one normlib function, and that function computes x̂ itself."""
    for layer in LAYERS:
        called = [f for f in called_functions(layer.forward)
                  if f.__module__.startswith("normlib") and f.__module__ not in MESSAGES]
        assert len(called) == 1, f"{layer.__name__}.forward calls {[f.__qualname__ for f in called]}"
        assert assigns_x_hat(called[0]), f"{called[0].__module__}.{called[0].__qualname__} does not compute x_hat"


def test_the_jump_check_can_fail():
    class Indirect(modules.LayerNorm):
        def forward(self, input):
            return modules.F.layer_norm(input, self.normalized_shape)   # one jump, then x̂: fine
    assert assigns_x_hat(called_functions(Indirect.forward)[0])
    assert not assigns_x_hat(normlib.stats.moments)
