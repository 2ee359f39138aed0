"""The Korean and English strings that normlib shows to readers (figure labels, legends).

Code in the chapters is the same in both languages; only ``LANG`` differs, and every
string a reader sees goes through :func:`text`.

>>> text("sample", "ko"), text("sample", "en")
('샘플', 'sample')
>>> text("sample", "fr")
Traceback (most recent call last):
    ...
ValueError: lang must be one of 'ko', 'en'; got 'fr'
"""

from __future__ import annotations

__all__ = ["LANGS", "STRINGS", "check_lang", "text"]

LANGS = ("ko", "en")

# key: (Korean, English)
_PAIRS = {
    "sample": ("샘플", "sample"),
    "feature": ("특성", "feature"),
    "layer": ("층", "layer"),
    "step": ("학습 단계", "training step"),
    "loss": ("손실", "loss"),
    "activation": ("활성값", "activation"),
    "count": ("개수", "count"),
    "input": ("입력", "input"),
    "normalized": ("정규화 결과", "normalized"),
    "no_norm": ("정규화 없음", "no normalization"),
    "with_batch": ("BatchNorm 사용", "with BatchNorm"),
    "with_layer": ("LayerNorm 사용", "with LayerNorm"),
    "std_per_layer": ("층별 활성값 표준편차", "std of activations per layer"),
    "batch_shares": ("BatchNorm: 같은 색 = 평균·분산 공유 (열 단위)", "BatchNorm: same colour = one mean and variance (per column)"),
    "layer_shares": ("LayerNorm: 같은 색 = 평균·분산 공유 (행 단위)", "LayerNorm: same colour = one mean and variance (per row)"),
    "rms_shares": ("RMSNorm: 같은 색 = 제곱평균 공유 (행 단위)", "RMSNorm: same colour = one mean square (per row)"),
    "instance_shares": ("InstanceNorm: 같은 색 = 평균·분산 공유", "InstanceNorm: same colour = one mean and variance"),
    "group_shares": ("GroupNorm: 같은 색 = 평균·분산 공유", "GroupNorm: same colour = one mean and variance"),
    "offset": ("데이터의 오프셋 (평균값)", "offset of the data (its mean)"),
    "rel_error_var": ("분산의 상대 오차", "relative error of the variance"),
    "naive": ("E[x²] − E[x]² (단순 공식)", "E[x²] − E[x]² (naive)"),
    "two_pass": ("두 번 읽기 (two-pass)", "two-pass"),
    "welford": ("Welford (한 번 읽기)", "Welford (one pass)"),
    "input_scale": ("입력의 크기 (표준편차)", "scale of the input (its std)"),
    "max_abs_diff": ("최대 절대 차이", "max abs difference"),
    "eps": ("eps", "eps"),
    "input_offset": ("입력의 오프셋 (평균)", "offset of the input (its mean)"),
    "rms_vs_layer": ("RMSNorm과 LayerNorm의 차이", "RMSNorm vs LayerNorm"),
    "variant_vs_torch": ("x/(rms+eps)와 nn.RMSNorm의 차이", "x/(rms+eps) vs nn.RMSNorm"),
    "stdeps_vs_torch": ("(x−μ)/(σ+eps)와 nn.LayerNorm의 차이", "(x−μ)/(σ+eps) vs nn.LayerNorm"),
    "block_batch": ("BatchNorm: 채널 하나 = 통계 하나", "BatchNorm: one statistic per channel"),
    "block_layer": ("LayerNorm: 샘플 하나 = 통계 하나", "LayerNorm: one statistic per sample"),
    "block_instance": ("InstanceNorm: (샘플, 채널)마다 통계 하나", "InstanceNorm: one per (sample, channel)"),
    "block_group": ("GroupNorm: (샘플, 그룹)마다 통계 하나", "GroupNorm: one per (sample, group)"),
    "seq_batch": ("BatchNorm: 특성 하나 = 통계 하나 (B, L에 걸쳐)", "BatchNorm: one statistic per feature (over B, L)"),
    "seq_layer": ("LayerNorm: 토큰 하나 = 통계 하나", "LayerNorm: one statistic per token"),
    "seq_rms": ("RMSNorm: 토큰 하나 = 제곱평균 하나", "RMSNorm: one mean square per token"),
    "block_rms": ("RMSNorm: 샘플 하나 = 제곱평균 하나", "RMSNorm: one mean square per sample"),
    "block_batch_dim0": ("실수: dim 0으로만 평균 (위치·특성마다 통계 하나)", "Slip: mean over dim 0 only (per position, feature)"),
    "block_count": ("칠한 {count}개 원소가 통계 하나를 공유 · 통계 {total}개", "the {count} filled elements share one statistic · {total} statistics"),
    "axis_N": ("N (샘플)", "N (samples)"),
    "axis_C": ("C (채널)", "C (channels)"),
    "axis_HW": ("H·W (위치)", "H·W (positions)"),
    "axis_L_spatial": ("L (위치)", "L (positions)"),
    "axis_none": ("(공간 축 없음)", "(no spatial axis)"),
    "axis_B": ("B (시퀀스)", "B (sequences)"),
    "axis_L": ("L (토큰)", "L (tokens)"),
    "axis_D": ("D (특성)", "D (features)"),
    "slip_dim0": ("실수: dim 0만", "slip: dim 0 only"),
    "which_group": ("칠할 통계 번호", "statistic shown"),
    "layout_image": ("이미지 (N, C, H, W)", "images (N, C, H, W)"),
    "layout_sequence": ("시퀀스 (B, L, D)", "sequences (B, L, D)"),
    "layout_table": ("4 × 3 표", "4 × 3 table"),
    "live_error": ("계산할 수 없음:", "cannot normalize:"),
    "mean": ("평균", "mean"),
    "variance": ("분산", "variance"),
    "mean_square": ("제곱평균", "mean square"),
    "live_caption": ("통계 {which}번을 공유하는 원소 {count}개:", "the {count} elements that share statistic {which}:"),
    "train_mode": ("학습 모드 (배치 통계)", "training mode (batch statistics)"),
    "eval_mode": ("평가 모드 (누적 통계)", "evaluation mode (running statistics)"),
    "term_direct": ("직접 항 r·g", "direct term r·g"),
    "term_mean": ("평균을 거친 항 −r·mean(g)", "through the mean −r·mean(g)"),
    "term_var": ("분산을 거친 항 −r·x̂·mean(g·x̂)", "through the variance −r·x̂·mean(g·x̂)"),
    "term_total": ("합 = ∂L/∂x", "sum = ∂L/∂x"),
    "grad_terms_title": ("샘플 A, ∂L/∂y = (1, 0, 0)일 때 ∂L/∂x의 세 항", "The three terms of ∂L/∂x for sample A, ∂L/∂y = (1, 0, 0)"),
    "saved_mb": ("역전파용으로 저장된 메모리 (MB)", "memory saved for backward (MB)"),
    "impl_reference": ("읽기 쉬운 구현 + autograd", "readable + autograd"),
    "impl_hand": ("손으로 유도한 역전파", "hand-derived backward"),
    "impl_torch": ("PyTorch 내장", "PyTorch built-in"),
    # normlib.bench's figures (chapter 8)
    "bench:readable": ("읽기 쉬운 구현 + autograd", "readable + autograd"),
    "bench:hand": ("손으로 유도한 역전파", "hand-derived backward"),
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
    "bench:layer_norm": ("LayerNorm", "LayerNorm"),
    "bench:rms_norm": ("RMSNorm", "RMSNorm"),
    "bench:batch_norm2d": ("BatchNorm2d", "BatchNorm2d"),
}

STRINGS = {
    "ko": {key: pair[0] for key, pair in _PAIRS.items()},
    "en": {key: pair[1] for key, pair in _PAIRS.items()},
}


def check_lang(lang: str) -> str:
    """Return ``lang`` if it is ``"ko"`` or ``"en"``; otherwise raise a ``ValueError`` naming both."""
    if lang not in LANGS:
        raise ValueError(f"lang must be one of 'ko', 'en'; got {lang!r}")
    return lang


def text(key: str, lang: str) -> str:
    """The reader-facing string ``key`` in ``lang`` (``"ko"`` or ``"en"``)."""
    check_lang(lang)
    try:
        return STRINGS[lang][key]
    except KeyError:
        raise KeyError(f"no string {key!r}; known keys: {', '.join(sorted(STRINGS[lang]))}") from None
