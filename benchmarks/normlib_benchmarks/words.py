"""The words of the benchmarks' figures and reports (:mod:`normlib_benchmarks.plots`), in Korean and
English; the keys all start with ``bench:``. :func:`text` looks them up with the book's lookup
(:mod:`normlib_book.i18n`).
"""

from normlib_book.i18n import check_lang, strings_of
from normlib_book.i18n import text as _text

__all__ = ["PAIRS", "STRINGS", "check_lang", "text"]

# key: (Korean, English)
PAIRS = {
    "bench:readable": ("읽기 쉬운 구현", "readable"),
    "bench:hand": ("손으로 유도한 구현", "hand-derived"),
    "bench:compiled": ("읽기 쉬운 구현 + torch.compile", "readable + torch.compile"),
    "bench:torch": ("PyTorch 내장", "PyTorch built-in"),
    "bench:forward": ("순전파", "forward"),
    "bench:forward+backward": ("순전파 + 역전파", "forward + backward"),
    "bench:time_ratio": ("시간 ÷ PyTorch 내장 (로그 눈금)", "time ÷ PyTorch built-in (log scale)"),
    "bench:shape": ("입력 크기", "input shape"),
    "bench:intensity": ("산술 강도 (FLOP / 최소 바이트)", "arithmetic intensity (FLOP per minimal byte)"),
    "bench:gflops": ("달성한 GFLOP/s", "achieved GFLOP/s"),
    "bench:memory_roof": ("메모리 복사 {bw:.1f} GB/s", "memory copy {bw:.1f} GB/s"),
    "bench:compute_roof": ("float32 행렬곱 {gf:.0f} GFLOP/s", "float32 matmul {gf:.0f} GFLOP/s"),
    "bench:ceiling_serial": ("의존 덧셈 사슬, 캐시의 데이터: 덧셈당 {ns:.2f} ns → {gf:.1f} GFLOP/s",
                             "chain of dependent adds, data in cache: {ns:.2f} ns/add → {gf:.1f} GFLOP/s"),
    "bench:ceiling_serial_memory": ("같은 사슬, 메모리의 데이터: 덧셈당 {ns:.2f} ns → {gf:.1f} GFLOP/s",
                                    "the same chain, data from memory: {ns:.2f} ns/add → {gf:.1f} GFLOP/s"),
    "bench:ceiling_simd": ("벡터화한 합, 캐시의 데이터: 덧셈당 {ns:.3f} ns → {gf:.0f} GFLOP/s",
                           "vectorized sum, data in cache: {ns:.3f} ns/add → {gf:.0f} GFLOP/s"),
    "bench:layer_norm": ("LayerNorm", "LayerNorm"),
    "bench:rms_norm": ("RMSNorm", "RMSNorm"),
    "bench:batch_norm2d": ("BatchNorm2d", "BatchNorm2d"),
}

STRINGS = strings_of(PAIRS)


def text(key: str, lang: str) -> str:
    """A benchmarks' string ``key`` in ``lang`` (``"ko"`` or ``"en"``)."""
    return _text(key, lang, STRINGS)
