// Chapter 12's kernels: LayerNorm and RMSNorm, forward and backward, fused, for the CPU.
//
// Plain C++ on raw pointers (no torch headers: they would cost tens of seconds of compile).
// normlib_book/fused.py compiles this file with torch.utils.cpp_extension.load_inline
// (-O3 -march=native -fopenmp) and calls the extern "C" functions through ctypes. A tensor is a
// pointer to its first element and a shape (rows, d): row r starts at r * d. Each section below,
// headed "=== step: NAME ===", is one step of the chapter (fused.source(step) returns it).

#include <cmath>
#include <cstdint>
#include <cstring>
#include <omp.h>
#include <vector>

// === step: dtypes ===
// Storage types: float, double and bfloat16 (the upper 16 bits of a float, kept in a uint16_t).
// Arithmetic is done in the accumulation type A (float or double): widen() loads, narrow() stores.
using bf16 = uint16_t;

inline float widen(float v) { return v; }
inline double widen(double v) { return v; }
inline float widen(bf16 v) {                       // bfloat16 -> float: put the bits back on top
    uint32_t bits = uint32_t(v) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

template <typename T> struct Narrow;                // A -> storage type T
template <> struct Narrow<float> {
    static float of(float v) { return v; }
    static float of(double v) { return float(v); }
};
template <> struct Narrow<double> { static double of(double v) { return v; } };
template <> struct Narrow<bf16> {
    static bf16 of(float v) {                       // float -> bfloat16, rounded to nearest even
        uint32_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        if ((bits & 0x7fffffffu) > 0x7f800000u) return bf16(0x7fc0);      // NaN stays NaN
        bits += 0x7fffu + ((bits >> 16) & 1u);
        return bf16(bits >> 16);
    }
};
template <typename T, typename A> inline T narrow(A v) { return Narrow<T>::of(v); }

// === step: row_sums ===
// One row summed three ways (float32, one thread): what the order of the additions costs.
constexpr int LANES = 32;     // independent partial sums ("accumulators"), and Welford's lanes below

// serial: one accumulator. The compiler may not reorder float additions (the rounding would change),
// so each add waits for the one before: one element per add-latency (3-4 cycles).
extern "C" void row_sums_serial(const float* x, int64_t rows, int64_t d, float* out) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* row = x + r * d;
        float s = 0.0f;
        for (int64_t i = 0; i < d; ++i) s += row[i];
        out[r] = s;
    }
}

// simd: the same loop, with permission to reorder (OpenMP's simd reduction): the compiler keeps one
// vector of partial sums, so one vector (8 or 16 floats) per add-latency.
extern "C" void row_sums_simd(const float* x, int64_t rows, int64_t d, float* out) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* row = x + r * d;
        float s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (int64_t i = 0; i < d; ++i) s += row[i];
        out[r] = s;
    }
}

// accumulators: LANES partial sums, several vectors of them: the adds into different vectors do
// not wait for each other, so the loop runs at the adder's throughput, not its latency.
extern "C" void row_sums_accumulators(const float* x, int64_t rows, int64_t d, float* out) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* row = x + r * d;
        float acc[LANES] = {};
        int64_t i = 0;
        for (; i + LANES <= d; i += LANES) {
#pragma omp simd
            for (int k = 0; k < LANES; ++k) acc[k] += row[i + k];
        }
        float s = 0.0f;
        for (; i < d; ++i) s += row[i];             // the tail, shorter than LANES
        for (int k = 0; k < LANES; ++k) s += acc[k];
        out[r] = s;
    }
}

// === step: merge ===
// A row's statistics as (count, mean, M2 = Σ(x − mean)²); two such summaries merged with Chan et al.'s
// formula (chapters 2 and 9).
template <typename A> struct Moments { A n, mean, m2; };    // count, mean, Σ(x − mean)²

template <typename A> inline Moments<A> merge(Moments<A> a, Moments<A> b) {   // Chan et al.
    if (b.n == 0) return a;
    if (a.n == 0) return b;
    A n = a.n + b.n, delta = b.mean - a.mean;
    return {n, a.mean + delta * (b.n / n), a.m2 + b.m2 + delta * delta * (a.n * b.n / n)};
}

// === step: welford ===
// One pass: lane k sees elements k, k + LANES, k + 2·LANES, ... and keeps its own Welford state.
// All lanes have the same count, so 1/count is one scalar and the lanes update as one vector.
template <typename T, typename A> Moments<A> welford_row(const T* row, int64_t d) {
    A mean[LANES] = {}, m2[LANES] = {};
    int64_t i = 0, blocks = 0;
    for (; i + LANES <= d; i += LANES) {
        const T* block = row + i;
        const A inv = A(1) / A(++blocks);
#pragma omp simd
        for (int k = 0; k < LANES; ++k) {
            const A v = widen(block[k]);
            const A delta = v - mean[k];
            mean[k] += delta * inv;
            m2[k] += delta * (v - mean[k]);
        }
    }
    for (int width = LANES / 2; width >= 1 && blocks > 0; width /= 2)   // merge the lanes pairwise
        for (int k = 0; k < width; ++k) {
            Moments<A> m = merge(Moments<A>{A(blocks) * (LANES / width / 2), mean[k], m2[k]},
                                 Moments<A>{A(blocks) * (LANES / width / 2), mean[k + width], m2[k + width]});
            mean[k] = m.mean;
            m2[k] = m.m2;
        }
    Moments<A> all{A(blocks * LANES), mean[0], m2[0]};
    for (; i < d; ++i) all = merge(all, Moments<A>{A(1), A(widen(row[i])), A(0)});   // the tail
    return all;
}

// === step: two_pass ===
// Two passes: the mean, then Σ(x − mean)² (the row again, from the cache); and the naive one pass
// E[x²] − E[x]², shown failing, never used. row_moments() runs one of the three on each row.
template <typename T, typename A> Moments<A> two_pass_row(const T* row, int64_t d) {
    A s = 0;
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < d; ++i) s += widen(row[i]);
    const A mean = s / A(d);
    A m2 = 0;
#pragma omp simd reduction(+ : m2)
    for (int64_t i = 0; i < d; ++i) {
        const A c = widen(row[i]) - mean;
        m2 += c * c;
    }
    return {A(d), mean, m2};
}

template <typename A> Moments<A> sum_of_squares_row(const float* row, int64_t d) {
    A s = 0, ss = 0;
#pragma omp simd reduction(+ : s, ss)
    for (int64_t i = 0; i < d; ++i) {
        s += row[i];
        ss += row[i] * row[i];
    }
    const A mean = s / A(d);
    return {A(d), mean, ss - A(d) * mean * mean};   // E[x²] − E[x]²: cancels when |mean| ≫ std
}

// how: 0 two passes, 1 Welford, 2 sum of squares. float32 in, float32 out.
extern "C" void row_moments(int how, const float* x, int64_t rows, int64_t d, float* mean, float* var) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* row = x + r * d;
        Moments<float> m = how == 0 ? two_pass_row<float, float>(row, d)
                         : how == 1 ? welford_row<float, float>(row, d)
                                    : sum_of_squares_row<float>(row, d);
        mean[r] = m.mean;
        var[r] = m.m2 / m.n;
    }
}

// === step: column_sums ===
// Sums over rows (what dγ and dβ are), rows split among threads. Two-stage: each thread adds its rows
// into its own partial vector, then the partials are summed once. Shared: every thread adds into the
// one output vector, each add atomic, so the threads wait for each other on the same cache lines.
extern "C" void column_sums(int how, const float* x, int64_t rows, int64_t d, float* out, int threads) {
    if (how == 0) {
        std::vector<float> partial(size_t(threads) * d, 0.0f);
#pragma omp parallel num_threads(threads)
        {
            float* mine = partial.data() + size_t(omp_get_thread_num()) * d;
#pragma omp for schedule(static)
            for (int64_t r = 0; r < rows; ++r) {
#pragma omp simd
                for (int64_t i = 0; i < d; ++i) mine[i] += x[r * d + i];
            }
        }
        for (int64_t i = 0; i < d; ++i) out[i] = 0.0f;
        for (int t = 0; t < threads; ++t)
            for (int64_t i = 0; i < d; ++i) out[i] += partial[size_t(t) * d + i];
    } else {
        for (int64_t i = 0; i < d; ++i) out[i] = 0.0f;
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t i = 0; i < d; ++i) {
#pragma omp atomic
                out[i] += x[r * d + i];
            }
    }
}

// === step: forward ===
// LayerNorm (LAYER) or RMSNorm, rows split among threads. Per row: the statistics in one pass over
// memory (Welford, or two passes with the second from the cache; RMSNorm: Σx²), then y from the
// cached row. With a residual, h = x + residual is written out (the stream goes on with it) and
// normalized while still in the cache.
template <typename T, typename A, bool LAYER>
void forward_rows(int64_t rows, int64_t d, const T* x, const T* residual, T* h, const T* w, const T* b,
                  double eps, int two_pass, T* y, A* mean_out, A* rstd_out, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
        const T* src = x + r * d;
        if (residual) {                                             // h = x + residual, rounded to T
            T* hr = h + r * d;
            const T* rr = residual + r * d;
#pragma omp simd
            for (int64_t i = 0; i < d; ++i) hr[i] = narrow<T>(A(widen(src[i])) + A(widen(rr[i])));
            src = hr;
        }
        A mean = 0, ms;                                             // ms: mean square about the mean
        if constexpr (LAYER) {
            const Moments<A> m = two_pass ? two_pass_row<T, A>(src, d) : welford_row<T, A>(src, d);
            mean = m.mean;
            ms = m.m2 / A(d);
        } else {
            A ss = 0;
#pragma omp simd reduction(+ : ss)
            for (int64_t i = 0; i < d; ++i) ss += A(widen(src[i])) * A(widen(src[i]));
            ms = ss / A(d);
        }
        const A rstd = A(1) / std::sqrt(ms + A(eps));
        if constexpr (LAYER) mean_out[r] = mean;
        rstd_out[r] = rstd;
        // y, one cache line at a time, each time asking for a line of the next row: the reads of the
        // next row then overlap these writes, as in a copy, instead of waiting until they are done.
        T* yr = y + r * d;
        const T* next = r + 1 < rows ? x + (r + 1) * d : nullptr;
        const T* next_residual = residual && next ? residual + (r + 1) * d : nullptr;
        constexpr int64_t LINE = 64 / sizeof(T);
        for (int64_t i0 = 0; i0 < d; i0 += LINE) {
            if (next) __builtin_prefetch(next + i0);
            if (next_residual) __builtin_prefetch(next_residual + i0);
            const int64_t i1 = i0 + LINE < d ? i0 + LINE : d;
#pragma omp simd
            for (int64_t i = i0; i < i1; ++i) {
                const A xhat = (A(widen(src[i])) - mean) * rstd;
                A v = xhat * A(widen(w[i]));
                if constexpr (LAYER) v += A(widen(b[i]));
                yr[i] = narrow<T>(v);
            }
        }
    }
}

// === step: backward ===
// With x̂ = (x − μ)·r and g = γ·dy (chapter 7): dx = r·(g − mean(g) − x̂·mean(g·x̂)) per row (RMSNorm:
// x̂ = x·r, no mean(g) term), dγ = Σ_rows dy·x̂, dβ = Σ_rows dy. One pass over x and dy gives both means
// and adds dy·x̂ and dy into this thread's partial dγ, dβ; a second pass over the cached row writes dx
// (plus dh, the gradient that comes to h from the residual stream, when there is one). The partials
// are summed once at the end: no two threads ever add into the same vector.
template <typename T, typename A, bool LAYER>
void backward_rows(int64_t rows, int64_t d, const T* dy, const T* x, const T* w, const A* mean_in,
                   const A* rstd_in, const T* dh, T* dx, T* dw, T* db, int threads) {
    // Per thread: its partial dγ, then dβ. They are placed half and a quarter of a page away from where
    // x's rows start within a page: a store to pw[i] and a load of x[i] whose addresses agree in the
    // last 12 bits make the processor suspect a dependence (4K aliasing) and wait.
    constexpr int64_t PAGE = 4096 / sizeof(A);
    const int64_t shift = int64_t((reinterpret_cast<uintptr_t>(x) + 2048) % 4096) / int64_t(sizeof(A));
    const int64_t stride = (2 * d + PAGE / 4 + PAGE + PAGE - 1) / PAGE * PAGE;
    std::vector<A> partial(size_t(threads) * stride + 2 * PAGE, A(0));
    A* base = partial.data() + (PAGE - int64_t(reinterpret_cast<uintptr_t>(partial.data()) % 4096) / int64_t(sizeof(A))) % PAGE;
#pragma omp parallel num_threads(threads)
    {
        A* pw = base + omp_get_thread_num() * stride + shift;
        A* pb = pw + d + PAGE / 4;
#pragma omp for schedule(static)
        for (int64_t r = 0; r < rows; ++r) {
            const T *xr = x + r * d, *dyr = dy + r * d;
            const A mean = LAYER ? A(mean_in[r]) : A(0), rstd = rstd_in[r];
            A sum_g = 0, sum_gx = 0;
#pragma omp simd reduction(+ : sum_g, sum_gx)
            for (int64_t i = 0; i < d; ++i) {
                const A xhat = (A(widen(xr[i])) - mean) * rstd, dyi = widen(dyr[i]);
                const A g = dyi * A(widen(w[i]));
                sum_g += g;
                sum_gx += g * xhat;
                pw[i] += dyi * xhat;
                pb[i] += dyi;
            }

            const A c1 = sum_gx / A(d), c2 = LAYER ? sum_g / A(d) : A(0);
            T* dxr = dx + r * d;
#pragma omp simd
            for (int64_t i = 0; i < d; ++i) {
                const A xhat = (A(widen(xr[i])) - mean) * rstd;
                const A g = A(widen(dyr[i])) * A(widen(w[i]));
                A v = rstd * (g - c2 - xhat * c1);
                if (dh) v += A(widen(dh[r * d + i]));
                dxr[i] = narrow<T>(v);
            }
        }
    }
    for (int64_t i = 0; i < d; ++i) {                               // the second stage: one sum
        A sw = 0, sb = 0;
        for (int t = 0; t < threads; ++t) {
            sw += base[t * stride + shift + i];
            sb += base[t * stride + shift + d + PAGE / 4 + i];
        }
        dw[i] = narrow<T>(sw);
        if (LAYER) db[i] = narrow<T>(sb);
    }
}

// === step: entry_points ===
// One function per kernel for Python (ctypes), the storage and accumulation types as codes:
// 0 float32, 1 float64, 2 bfloat16. Returns 0, or -1 for a pair of types not compiled.
#define DISPATCH(CALL)                                                                          \
    if (dtype == 0 && acc == 0) { CALL(float, float); return 0; }                               \
    if (dtype == 0 && acc == 1) { CALL(float, double); return 0; }                              \
    if (dtype == 1 && acc == 1) { CALL(double, double); return 0; }                             \
    if (dtype == 2 && acc == 0) { CALL(bf16, float); return 0; }                                \
    return -1;

extern "C" int norm_forward(int layer, int dtype, int acc, int64_t rows, int64_t d, const void* x,
                            const void* residual, void* h, const void* w, const void* b, double eps,
                            int two_pass, void* y, void* mean, void* rstd, int threads) {
#define FORWARD(T, A)                                                                           \
    (layer ? forward_rows<T, A, true> : forward_rows<T, A, false>)(                             \
        rows, d, (const T*)x, (const T*)residual, (T*)h, (const T*)w, (const T*)b, eps, two_pass, \
        (T*)y, (A*)mean, (A*)rstd, threads)
    DISPATCH(FORWARD)
}

extern "C" int norm_backward(int layer, int dtype, int acc, int64_t rows, int64_t d, const void* dy,
                             const void* x, const void* w, const void* mean, const void* rstd,
                             const void* dh, void* dx, void* dw, void* db, int threads) {
#define BACKWARD(T, A)                                                                          \
    (layer ? backward_rows<T, A, true> : backward_rows<T, A, false>)(                           \
        rows, d, (const T*)dy, (const T*)x, (const T*)w, (const A*)mean, (const A*)rstd,        \
        (const T*)dh, (T*)dx, (T*)dw, (T*)db, threads)
    DISPATCH(BACKWARD)
}
