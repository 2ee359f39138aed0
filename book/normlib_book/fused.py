"""Chapter 12's fused CPU kernel: LayerNorm and RMSNorm, forward and backward, in C++ compiled from
the notebook, and the steps that lead to it.

The C++ is ``fused.cpp`` beside this module (:func:`source` returns it, whole or one step), plain C++ on
raw pointers: no torch header, so that it compiles in seconds, not the tens of seconds
``torch/extension.h`` alone costs. :func:`load` compiles it with
``torch.utils.cpp_extension.load_inline`` (``-O3 -march=native -fopenmp``: :data:`FLAGS`) into torch's
extension cache (``~/.cache/torch_extensions/``, or ``$TORCH_EXTENSIONS_DIR``), under a name that
is a hash of the source and the flags, so that every process (both notebooks, the tests, the
benchmark) reuses one build and a changed source never meets an old one; Python calls its
``extern "C"`` functions through :mod:`ctypes`. ``torch.compile`` on the CPU needs the same compiler:
:func:`check_compiler` says what is missing and how to get it.

The steps (each measurable against the one before; float32, rows of a 2-D tensor):

* :func:`row_sums`: one row summed one element after another (``"serial"``: each add waits for the
  one before), as one vector of partial sums (``"simd"``) or several (``"accumulators"``);
* :func:`row_moments`: mean and variance in two passes, in one pass with Welford's update in
  several lanes merged by Chan et al.'s formula, or the naive one-pass sum of squares;
* :func:`column_sums`: sums over rows (what dγ and dβ are) with per-thread partial sums then one sum
  (``"two_stage"``), or every thread adding into one vector (``"shared"``);
* :func:`layer_norm`, :func:`rms_norm` and their fused residual forms :func:`add_layer_norm`,
  :func:`add_rms_norm`: ``torch.autograd.Function``\\ s whose forward and backward are each one C++
  call (the backward: chapter 7's formula, one pass for the two row means, one to write dx; dγ and dβ
  two-stage).

``-march=native`` makes the vector width the machine's (AVX2, AVX-512): the results agree with
torch within the book's tolerances on each, not to the bit.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path
from typing import Optional, Tuple

import torch
from torch import Tensor

from normlib.messages import say

__all__ = [
    "FLAGS", "STEPS", "GRAIN", "CompilerMissing", "check_compiler", "load", "source", "build_directory",
    "threads_for", "row_sums", "row_moments", "column_sums",
    "layer_norm", "rms_norm", "add_layer_norm", "add_rms_norm",
]

SOURCE_FILE = "fused.cpp"
FLAGS = ("-O3", "-march=native", "-fopenmp")
LDFLAGS = ("-fopenmp",)

# Fewest elements worth a thread: a call on fewer than threads × GRAIN elements uses fewer threads
# (one below 2 × GRAIN). Chosen from `benchmarks/fused.py`'s measurement of 1 thread against 2 on rows
# of 768 (the docstring of threads_for says how).
GRAIN = 65536

_DTYPE_CODES = {torch.float32: 0, torch.float64: 1, torch.bfloat16: 2}
# the accumulation dtypes compiled for each storage dtype (fused.cpp, DISPATCH)
ACCUMULATE = {torch.float32: (torch.float32, torch.float64), torch.bfloat16: (torch.float32,),
              torch.float64: (torch.float64,)}


def _source_text() -> str:
    return resources.files("normlib_book").joinpath(SOURCE_FILE).read_text(encoding="utf-8")


STEPS = tuple(line.split("// === step:", 1)[1].strip(" =") for line in _source_text().splitlines()
              if line.startswith("// === step:"))


def source(step: Optional[str] = None) -> str:
    """The C++ of one step of chapter 12 (one of :data:`STEPS`), or of the whole file (``None``).

    >>> "welford_row" in source("welford")
    True
    """
    text = _source_text()
    if step is None:
        return text
    if step not in STEPS:
        raise ValueError(say(en=f"step must be one of {', '.join(STEPS)}; got {step!r}",
                             ko=f"step은 {', '.join(STEPS)} 중 하나여야 합니다. 받은 값: {step!r}"))
    section = text.split(f"// === step: {step} ===\n", 1)[1]
    return section.split("// === step:", 1)[0].rstrip() + "\n"


# --- The compiler and the build --------------------------------------------------------------------

class CompilerMissing(RuntimeError):
    """No C++ compiler, no OpenMP or no ninja: the kernel cannot be built (nor can torch.compile's CPU
    kernels)."""


_checked: list = []


def _compiler() -> str:
    return os.environ.get("CXX", "c++")        # the one torch.utils.cpp_extension uses on Linux


def _find_ninja() -> Optional[str]:
    """ninja, which torch's cpp_extension runs by name: on PATH, or beside this Python (the pip
    package ``ninja`` installs it into the virtual environment's bin/, which is not on PATH unless
    the environment is activated); found there, that folder is put on PATH for this process."""
    found = shutil.which("ninja")
    if found:
        return found
    folders = [os.path.dirname(sys.executable)]
    try:
        import ninja  # the pip package: its binary's folder
        folders.append(ninja.BIN_DIR)
    except (ImportError, AttributeError):
        pass
    for folder in folders:
        candidate = shutil.which("ninja", path=folder)
        if candidate:
            os.environ["PATH"] = folder + os.pathsep + os.environ.get("PATH", "")
            return candidate
    return None


def check_compiler() -> None:
    """Raise :class:`CompilerMissing` unless this machine can build chapter 12's kernel: a C++ compiler (the
    one torch uses: ``$CXX``, else ``c++``) that compiles and links an OpenMP program, and ninja.
    ``torch.compile`` on the CPU needs the same compiler. Checked once per process when it passes."""
    if _checked:
        return
    compiler = _compiler()
    how = say(en="Install one (Debian/Ubuntu: sudo apt-get install g++; Fedora: sudo dnf install gcc-c++; "
                 "macOS: xcode-select --install, then brew install libomp), or point the environment "
                 "variable CXX at it. torch.compile on the CPU needs the same compiler.",
              ko="컴파일러를 설치하거나(Debian/Ubuntu: sudo apt-get install g++, Fedora: sudo dnf install gcc-c++, "
                 "macOS: xcode-select --install 후 brew install libomp) 환경 변수 CXX가 그 컴파일러를 가리키게 "
                 "하세요. CPU에서 torch.compile을 쓸 때도 같은 컴파일러가 필요합니다.")
    path = shutil.which(compiler)
    if path is None:
        raise CompilerMissing(say(
            en=f"No C++ compiler: expected the program {compiler!r} ($CXX, else c++) on PATH, found none. ",
            ko=f"C++ 컴파일러가 없습니다. PATH에서 {compiler!r} 프로그램($CXX, 없으면 c++)을 찾았지만 없었습니다. ")
            + how)
    with tempfile.TemporaryDirectory(prefix="normlib-omp-") as tmp:
        test = Path(tmp) / "omp.cpp"
        test.write_text("#include <omp.h>\nint main() { return omp_get_max_threads() > 0 ? 0 : 1; }\n",
                        encoding="utf-8")
        try:
            result = subprocess.run([path, "-fopenmp", str(test), "-o", str(Path(tmp) / "omp")],
                                    capture_output=True, text=True, timeout=120, check=False)
            failed = result.returncode != 0
            detail = (result.stderr or result.stdout).strip().splitlines()[-1:] if failed else []
        except OSError as error:
            failed, detail = True, [str(error)]
        if failed:
            raise CompilerMissing(say(
                en=f"The C++ compiler {path} cannot build an OpenMP program (-fopenmp, #include <omp.h>): "
                   f"{' '.join(detail)}. Expected a compiler with OpenMP (g++, or clang++ with libomp). ",
                ko=f"C++ 컴파일러(경로: {path})로 OpenMP 프로그램(-fopenmp, #include <omp.h>)을 빌드하지 못했습니다: "
                   f"{' '.join(detail)}. OpenMP를 지원하는 컴파일러(g++, 또는 libomp와 clang++)가 필요합니다. ")
                + how)
    if _find_ninja() is None:
        raise CompilerMissing(say(
            en="No ninja: torch.utils.cpp_extension builds with the program ninja, found neither on PATH nor "
               "beside this Python. Install it: pip install ninja (the book's requirements.txt has it).",
            ko="ninja가 없습니다. torch.utils.cpp_extension은 ninja 프로그램으로 빌드하는데, PATH에도 이 "
               "파이썬 옆에도 없습니다. 설치하세요: pip install ninja (책의 requirements.txt에 들어 있습니다)."))
    _checked.append(path)


def _name() -> str:
    digest = hashlib.sha256("\n".join([_source_text(), *FLAGS, *LDFLAGS]).encode()).hexdigest()
    return f"normlib_fused_{digest[:12]}"


def build_directory() -> Path:
    """Where the build is cached: torch's extension folder (``~/.cache/torch_extensions``, or
    ``$TORCH_EXTENSIONS_DIR``), one subfolder per source and flags, outside the repository."""
    from torch.utils.cpp_extension import get_default_build_root

    return Path(os.environ.get("TORCH_EXTENSIONS_DIR") or get_default_build_root()) / _name()


_lib: list = []


def load(verbose: bool = False) -> ctypes.CDLL:
    """Chapter 12's compiled kernels (a :class:`ctypes.CDLL`), compiled on the first call on this machine
    (about 10 s on 2 cores, -O3: see ``benchmarks/results/fused.md``) and loaded once per process.
    A second process finds the build in :func:`build_directory` and does not compile again.
    Raises :class:`CompilerMissing` when the machine cannot build it."""
    if _lib:
        return _lib[0]
    check_compiler()
    from torch.utils.cpp_extension import load_inline

    folder = build_directory()
    folder.mkdir(parents=True, exist_ok=True)
    name = _name()          # before load_inline: it appends its own flags to the lists it is given
    path = load_inline(name=name, cpp_sources=[_source_text()], extra_cflags=list(FLAGS), extra_ldflags=list(LDFLAGS),
                       build_directory=str(folder), is_python_module=False, no_implicit_headers=True,
                       verbose=verbose)           # not a Python module: the path of the built library
    lib = ctypes.CDLL(path)
    p, i64, i32, f64 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.c_double
    for name in ("row_sums_serial", "row_sums_simd", "row_sums_accumulators"):
        getattr(lib, name).argtypes = [p, i64, i64, p]
        getattr(lib, name).restype = None
    lib.row_moments.argtypes = [i32, p, i64, i64, p, p]
    lib.row_moments.restype = None
    lib.column_sums.argtypes = [i32, p, i64, i64, p, i32]
    lib.column_sums.restype = None
    lib.norm_forward.argtypes = [i32, i32, i32, i64, i64, p, p, p, p, p, f64, i32, p, p, p, i32]
    lib.norm_forward.restype = i32
    lib.norm_backward.argtypes = [i32, i32, i32, i64, i64, p, p, p, p, p, p, p, p, p, i32]
    lib.norm_backward.restype = i32
    _lib.append(lib)
    return lib


# --- Checks ------------------------------------------------------------------------------------------

def _ptr(t: Optional[Tensor]) -> Optional[int]:
    return None if t is None else t.data_ptr()


def _choice(name: str, value, choices) -> int:
    if value not in choices:
        raise ValueError(say(en=f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}",
                             ko=f"{name} 값은 다음 중 하나여야 합니다: {', '.join(map(repr, choices))}. 받은 값: {value!r}"))
    return choices.index(value)


def _float32_matrix(x, what: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(say(en=f"{what} expects a Tensor; got {type(x).__name__}",
                            ko=f"{what}에는 Tensor가 필요합니다. 받은 값의 형: {type(x).__name__}"))
    if x.dtype != torch.float32 or x.dim() != 2:
        raise ValueError(say(
            en=f"{what} expects a 2-D float32 tensor (rows, D); got {x.dim()}-D {x.dtype} of shape {tuple(x.shape)}",
            ko=f"{what}에는 2차원 float32 텐서 (rows, D)가 필요합니다. 받은 것: {x.dim()}차원 {x.dtype}, "
               f"형태 {tuple(x.shape)}"))
    return x.detach().contiguous()


def _threads(threads: Optional[int]) -> int:
    if threads is None:
        return torch.get_num_threads()
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(say(en=f"threads must be a whole number ≥ 1 or None; got {threads!r}",
                             ko=f"threads는 1 이상의 정수이거나 None이어야 합니다. 받은 값: {threads!r}"))
    return threads


def threads_for(rows: int, d: int, threads: Optional[int] = None) -> int:
    """How many threads a norm call on ``rows`` rows of ``d`` uses (chapter 12): ``threads`` (None: torch's
    count), but at most one per :data:`GRAIN` elements and one per row, and at least one.

    Starting a parallel region, splitting the rows and waiting for the slower thread cost
    microseconds; a thread pays for itself only on enough elements. ``benchmarks/fused.py`` times
    LayerNorm's forward + backward on 2 to 256 rows of 768 float32 with 1 thread and with 2
    (``benchmarks/results/fused.md``, "When a thread pays"): below a few dozen rows 2 threads take as
    long as 1, and from some size on they always take less than 0.85 × the time of 1 (a clear gain,
    beyond the noise of a shared machine). A call uses 2
    threads from 2 × GRAIN elements, so GRAIN is the power of two at or above half that size, as the
    committed results suggest it.

    >>> threads_for(8, 768, 2), threads_for(16384, 768, 2), threads_for(1, 4096, 8)
    (1, 2, 1)
    """
    threads = _threads(threads)
    return max(1, min(threads, rows, (rows * d) // GRAIN))


# --- The steps --------------------------------------------------------------------------------------

ROW_SUMS = ("serial", "simd", "accumulators")
ROW_MOMENTS = ("two_pass", "welford", "sum_of_squares")
COLUMN_SUMS = ("two_stage", "shared")
STATS = ("welford", "two_pass")               # layer_norm's row statistics: index 1 is two passes


def row_sums(x: Tensor, how: str) -> Tensor:
    """Chapter 12's first step: the sum of each row of a 2-D float32 tensor, on one thread, in float32, three ways
    (``fused.cpp``, step ``row_sums``): ``"serial"`` (one accumulator, each add waiting for the one
    before: one element per add-latency), ``"simd"`` (OpenMP's simd reduction: one vector of partial
    sums) or ``"accumulators"`` (32 partial sums, several vectors: limited by the adders' throughput).
    The three differ only in rounding."""
    way = ROW_SUMS[_choice("how", how, ROW_SUMS)]
    x = _float32_matrix(x, "row_sums")
    out = torch.empty(x.shape[0], dtype=torch.float32)
    getattr(load(), f"row_sums_{way}")(_ptr(x), x.shape[0], x.shape[1], _ptr(out))
    return out


def row_moments(x: Tensor, how: str) -> Tuple[Tensor, Tensor]:
    """Chapter 12's one-pass statistics: mean and population variance of each row of a 2-D float32 tensor, in float32, on one thread
    (``fused.cpp``, step ``row_moments``): ``"two_pass"`` (the mean, then Σ(x − mean)² over the
    row again), ``"welford"`` (one pass: Welford's update in 32 lanes, the lanes merged with Chan et
    al.'s formula, chapters 2 and 9) or ``"sum_of_squares"`` (one pass, E[x²] − E[x]²: wrong when the
    mean is large against the spread, shown and never used)."""
    way = _choice("how", how, ROW_MOMENTS)
    x = _float32_matrix(x, "row_moments")
    mean, var = torch.empty(x.shape[0]), torch.empty(x.shape[0])
    load().row_moments(way, _ptr(x), x.shape[0], x.shape[1], _ptr(mean), _ptr(var))
    return mean, var


def column_sums(x: Tensor, how: str, threads: Optional[int] = None) -> Tensor:
    """Chapter 12's two-stage reduction: the sum over rows of a 2-D float32 tensor (what dγ and dβ are), the rows split among
    ``threads`` threads (None: torch's count; at most one per row) (``fused.cpp``, step
    ``column_sums``): ``"two_stage"`` (each thread into its own partial vector, then one sum) or
    ``"shared"`` (every thread adds into the one output vector, each add atomic)."""
    way = _choice("how", how, COLUMN_SUMS)
    x = _float32_matrix(x, "column_sums")
    out = torch.empty(x.shape[1], dtype=torch.float32)
    nt = max(1, min(_threads(threads), x.shape[0]))
    load().column_sums(way, _ptr(x), x.shape[0], x.shape[1], _ptr(out), nt)
    return out


# --- The norms ----------------------------------------------------------------------------------------

def _forward(x, residual, weight, bias, layer, eps, accumulate, threads, two_pass):
    """One call of fused.cpp's forward on (rows, D) contiguous tensors: (y, h or None, what the
    backward needs: the normalized rows (x or h), γ, mean, rstd)."""
    rows, d = x.shape
    w = weight if weight is not None else torch.ones(d, dtype=x.dtype)
    b = (bias if bias is not None else torch.zeros(d, dtype=x.dtype)) if layer else None
    y = torch.empty_like(x)
    h = torch.empty_like(x) if residual is not None else None
    mean = torch.empty(rows, dtype=accumulate) if layer else None
    rstd = torch.empty(rows, dtype=accumulate)
    code = load().norm_forward(int(layer), _DTYPE_CODES[x.dtype], _DTYPE_CODES[accumulate], rows, d,
                               _ptr(x), _ptr(residual), _ptr(h), _ptr(w), _ptr(b), eps, int(two_pass),
                               _ptr(y), _ptr(mean), _ptr(rstd), threads)
    assert code == 0, "fused.cpp has no such pair of dtypes"
    return y, h, (h if residual is not None else x, w, mean, rstd)


class _Norm(torch.autograd.Function):
    """One fused forward and one fused backward call of fused.cpp (steps ``forward``, ``backward``);
    the inputs are checked and made contiguous (rows, D) by :func:`_apply`."""

    @staticmethod
    def forward(ctx, x, residual, weight, bias, layer, eps, accumulate, threads, two_pass):
        y, h, saved = _forward(x, residual, weight, bias, layer, eps, accumulate, threads, two_pass)
        ctx.save_for_backward(*saved)
        ctx.layer, ctx.threads, ctx.accumulate = layer, threads, accumulate
        ctx.has = (residual is not None, weight is not None, bias is not None)
        ctx.set_materialize_grads(False)
        return (y, h) if residual is not None else y

    @staticmethod
    def backward(ctx, dy, dh=None):
        src, w, mean, rstd = ctx.saved_tensors
        rows, d = src.shape
        dy = torch.zeros_like(src) if dy is None else dy.contiguous()
        dh = None if dh is None else dh.contiguous()
        dx, dw = torch.empty_like(src), torch.empty_like(w)
        db = torch.empty_like(w) if ctx.layer else None
        code = load().norm_backward(int(ctx.layer), _DTYPE_CODES[src.dtype], _DTYPE_CODES[ctx.accumulate], rows,
                                    d, _ptr(dy), _ptr(src), _ptr(w), _ptr(mean), _ptr(rstd), _ptr(dh), _ptr(dx),
                                    _ptr(dw), _ptr(db), ctx.threads)
        assert code == 0, "fused.cpp has no such pair of dtypes"
        has_residual, has_weight, has_bias = ctx.has
        return (dx, dx if has_residual else None, dw if has_weight else None,
                db if has_bias else None, None, None, None, None, None)


def _apply(what: str, x, residual, weight, bias, eps, layer: bool, accumulate, threads, stats="welford"):
    """Check the arguments (naming what was expected and what was received), flatten to (rows, D)
    contiguous, call :class:`_Norm`, and give the outputs x's shape back."""
    if not isinstance(x, Tensor):
        raise TypeError(say(en=f"{what} expects x as a Tensor; got {type(x).__name__}",
                            ko=f"{what}의 x는 Tensor여야 합니다. 받은 값의 형: {type(x).__name__}"))
    if x.dtype not in _DTYPE_CODES:
        raise TypeError(say(
            en=f"{what} expects x of dtype float32, bfloat16 or float64; got {x.dtype}",
            ko=f"{what}의 x 자료형은 float32, bfloat16, float64 중 하나여야 합니다. 받은 자료형: {x.dtype}"))
    if x.dim() == 0 or x.shape[-1] == 0:
        raise ValueError(say(
            en=f"{what} normalizes the last axis of x: expected at least 1 dimension with a last size ≥ 1; "
               f"got shape {tuple(x.shape)}",
            ko=f"{what} 함수는 x의 마지막 축을 정규화합니다. 1차원 이상이고 마지막 크기가 1 이상이어야 합니다. "
               f"받은 형태: {tuple(x.shape)}"))
    d = x.shape[-1]
    for name, t, shape in (("residual", residual, tuple(x.shape)), ("weight", weight, (d,)), ("bias", bias, (d,))):
        if t is None:
            continue
        if not isinstance(t, Tensor):
            raise TypeError(say(en=f"{what} expects {name} as a Tensor or None; got {type(t).__name__}",
                                ko=f"{what}의 {name} 인자는 Tensor나 None이어야 합니다. 받은 값의 형: {type(t).__name__}"))
        if t.dtype != x.dtype:
            raise TypeError(say(en=f"{what} expects {name} of x's dtype {x.dtype}; got {t.dtype}",
                                ko=f"{what}의 {name} 자료형은 x의 자료형(x: {x.dtype})과 같아야 합니다. 받은 자료형: {t.dtype}"))
        if tuple(t.shape) != shape:
            raise ValueError(say(en=f"{what} expects {name} of shape {shape}; got {tuple(t.shape)}",
                                 ko=f"{what}의 {name} 형태가 맞지 않습니다. 기대한 형태: {shape}, 받은 형태: {tuple(t.shape)}"))
    if eps is None:
        eps = torch.finfo(x.dtype).eps          # RMSNorm's default, as torch's rms_norm
    if not isinstance(eps, (int, float)) or isinstance(eps, bool) or not (0 <= eps < float("inf")):
        raise ValueError(say(en=f"{what} expects eps ≥ 0 (a finite number); got {eps!r}",
                             ko=f"{what}의 eps는 0 이상의 유한한 수여야 합니다. 받은 값: {eps!r}"))
    allowed = ACCUMULATE[x.dtype]
    accumulate = allowed[0] if accumulate is None else accumulate
    if accumulate not in allowed:
        raise TypeError(say(
            en=f"{what} accumulates {x.dtype} input in {' or '.join(map(str, allowed))}; got accumulate={accumulate}",
            ko=f"{what} 함수는 {x.dtype} 입력을 다음 자료형으로만 누적합니다: {', '.join(map(str, allowed))}. "
               f"받은 accumulate 값: {accumulate}"))
    two_pass = _choice("stats", stats, STATS)
    rows = x.numel() // d
    nt = threads_for(rows, d, threads)
    flat = lambda t: None if t is None else t.contiguous().view(rows, d)   # noqa: E731  (a copy if not contiguous)
    weight = None if weight is None else weight.contiguous()
    bias = None if bias is None else bias.contiguous()
    if rows == 0:                                 # nothing to normalize: torch's own ops keep autograd's graph
        y = x * 0 if weight is None else x * weight
        return (y, x + residual) if residual is not None else y
    args = (flat(x), flat(residual), weight, bias, layer, float(eps), accumulate, nt, two_pass)
    if torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (x, residual, weight, bias)):
        out = _Norm.apply(*args)
    else:                                         # no gradient asked for: no autograd.Function around it
        y, h, _ = _forward(*args)
        out = (y, h) if residual is not None else y
    if residual is not None:
        return out[0].view(x.shape), out[1].view(x.shape)
    return out.view(x.shape)


def layer_norm(x: Tensor, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None, eps: float = 1e-5, *,
               accumulate: Optional[torch.dtype] = None, threads: Optional[int] = None,
               stats: str = "welford") -> Tensor:
    """Chapter 12's fused LayerNorm: ``F.layer_norm(x, (D,), weight, bias, eps)`` over the last axis (D = ``x.shape[-1]``), forward
    and backward each one fused C++ call (:func:`load`).

    x: float32, bfloat16 or float64, any shape with a last axis ≥ 1; weight and bias: (D,) or None,
    x's dtype. ``accumulate``: the dtype of the statistics and sums (None: float32 for float32 and
    bfloat16 input, float64 for float64; float64 is also allowed for float32). ``threads``: OpenMP
    threads for the call (None: ``torch.get_num_threads()``; fewer on small inputs: :func:`threads_for`).
    ``stats``: how each row's mean and variance are computed, ``"welford"`` (one pass, the default) or
    ``"two_pass"`` (the mean, then Σ(x − mean)² over the row again, from the cache).
    A non-contiguous x is copied to a contiguous one first (one more read and write).
    Saves x, γ, the mean and 1/σ (in ``accumulate``) for the backward; no second derivatives."""
    return _apply("layer_norm", x, None, weight, bias, eps, True, accumulate, threads, stats)


def rms_norm(x: Tensor, weight: Optional[Tensor] = None, eps: Optional[float] = None, *,
             accumulate: Optional[torch.dtype] = None, threads: Optional[int] = None) -> Tensor:
    """Chapter 12's fused RMSNorm: ``F.rms_norm(x, (D,), weight, eps)`` over the last axis; ``eps=None`` is
    ``torch.finfo(x.dtype).eps``, as torch's. Otherwise as :func:`layer_norm` (saves x, γ and 1/rms)."""
    return _apply("rms_norm", x, None, weight, None, eps, False, accumulate, threads)


def add_layer_norm(x: Tensor, residual: Tensor, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
                   eps: float = 1e-5, *, accumulate: Optional[torch.dtype] = None,
                   threads: Optional[int] = None, stats: str = "welford") -> Tuple[Tensor, Tensor]:
    """Chapter 12's fused residual add and LayerNorm: ``h = x + residual`` (rounded to x's dtype, as torch's add) and ``y = layer_norm(h)``, in one
    pass: returns ``(y, h)`` (the residual stream goes on with h). The backward adds the gradient that
    reaches h from the stream to the one through the norm, in the same pass; x and residual get that
    same gradient. Arguments as :func:`layer_norm`; residual has x's shape and dtype."""
    return _apply("add_layer_norm", x, residual, weight, bias, eps, True, accumulate, threads, stats)


def add_rms_norm(x: Tensor, residual: Tensor, weight: Optional[Tensor] = None, eps: Optional[float] = None, *,
                 accumulate: Optional[torch.dtype] = None, threads: Optional[int] = None) -> Tuple[Tensor, Tensor]:
    """Chapter 12's fused residual add and RMSNorm: ``h = x + residual`` and ``y = rms_norm(h)`` in one pass: returns ``(y, h)``; as
    :func:`add_layer_norm`, with :func:`rms_norm`'s arguments."""
    return _apply("add_rms_norm", x, residual, weight, None, eps, False, accumulate, threads)
