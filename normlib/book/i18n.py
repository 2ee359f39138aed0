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

from normlib.book.i18n_checkers import PAIRS as CHECKER_PAIRS

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
    "last50_loss": ("마지막 50단계 평균 손실", "mean loss of the last 50 steps"),
    "gain": ("배율", "gain"),
    # chapter 3's printed lines
    "w_values": ("값", "values"),
    "w_mean": ("평균", "mean"),
    "w_variance": ("분산", "variance"),
    "mean_per_feature": ("특성별 평균:", "mean per feature:"),
    "var_per_feature": ("특성별 분산:", "variance per feature:"),
    "maxdiff_inline_normlib": ("인라인 계산과 normlib의 최대 절대 차이:", "max abs difference inline vs normlib:"),
    "maxdiff_normlib_bn1d": ("normlib과 nn.BatchNorm1d의 최대 절대 차이:", "max abs difference normlib vs nn.BatchNorm1d:"),
    "maxdiff_restored": ("복원한 값과 입력의 최대 절대 차이:", "max abs difference restored vs input:"),
    "sample_var_per_feature": ("특성별 표본분산:", "sample variance per feature:"),
    "running_mean_by_hand": ("손계산 running_mean:", "running_mean by hand:"),
    "running_var_by_hand": ("손계산 running_var: ", "running_var  by hand:"),
    "momentum_conventions": ("PyTorch 모멘텀 {m} = 옛 값의 가중치 {old:.1f}. 다른 규약에서 흔한 0.99 = PyTorch 모멘텀 {pytorch:.2f}",
                             "PyTorch momentum {m} = weight {old:.1f} on the old value; the other convention's usual 0.99 = PyTorch momentum {pytorch:.2f}"),
    "eval_feature1": ("평가 모드, 특성 1:", "evaluation mode, feature 1:"),
    "by_hand_eval": ("손계산 (x - 0.5) / sqrt(1.5667 + eps):", "by hand (x - 0.5) / sqrt(1.5667 + eps):"),
    "train_feature1": ("학습 모드, 특성 1:", "training mode, feature 1:  "),
    "after_steps": ("{step:2d}단계 뒤: 특성 1의 running_mean = {running:.4f}  남은 차이 {gap:.4f}  0.9^k = {decay:.4f}",
                    "after {step:2d} steps: running_mean of feature 1 = {running:.4f}  gap left {gap:.4f}  0.9^k = {decay:.4f}"),
    "running_mean_feature1": ("특성 1의 running_mean =", "running_mean of feature 1 ="),
    "batch_means_feature1": ("특성 1의 배치 평균:", "batch means of feature 1:"),
    "their_average": ("그 평균:", "their average:"),
    "reduces_axes": ("{name}  입력 {shape}: 줄이는 축 {axes}, 값 {count}개짜리 통계 {n}개",
                     "{name}  input {shape}: reduces axes {axes}, {n} statistics of {count} values each"),
    "stats_of": ("값 {count}개짜리 통계 {n}개", "{n} statistics of {count} values each"),
    "maxdiff_dim0_bn1d": ("dim=0만 줄인 것과 nn.BatchNorm1d의 최대 절대 차이:", "max abs difference dim=0-only vs nn.BatchNorm1d:"),
    "bld_l_ne_d": ("L != D인 (B, L, D):", "(B, L, D) with L != D:"),
    "bld_l_eq_d": ("L == D인 (B, L, D): 오류 없이 돌고, 전치해서 부른 결과와 {diff:.3f}만큼 다릅니다",
                   "(B, L, D) with L == D: no error, and it differs from the transposed call by {diff:.3f}"),
    "two_batches": ("{mode:5s} 모드: 같은 샘플을 서로 다른 배치 둘에 넣으면 출력이 {diff:.3f}만큼 다릅니다",
                    "{mode:5s} mode: one sample, two different batches, outputs differ by {diff:.3f}"),
    "data_mean": ("데이터 평균", "data mean"),
    "stale_off": ("뒤처진 이동 통계: 평가 출력이 최대 {diff:.3f} 어긋납니다", "stale running statistics: eval output off by up to {diff:.3f}"),
    # chapter 1's printed lines
    "shape_samples_features": ("모양: {shape} = (샘플, 특성)", "shape: {shape} = (samples, features)"),
    "ln_one_sample": ("샘플 하나에 LayerNorm:", "LayerNorm on one sample:"),
    "mean_real_tokens": ("진짜 토큰들에서 낸 특성 1의 평균:          ", "mean of feature 1 over the real tokens:     "),
    "mean_bn_sees": ("BatchNorm이 보는 (B, L) 전체의 특성 1 평균:", "mean of feature 1 that BatchNorm sees (B, L):"),
    "ln_unchanged_padding": ("패딩을 붙여도 짧은 시퀀스의 LayerNorm 출력이 그대로:", "LayerNorm of the short sequence unchanged by padding:"),
    "whole_batch": ("배치 전체:", "whole batch:"),
    "device_0": ("장치 0 (A, B):", "device 0 (A, B):"),
    "device_1": ("장치 1 (C, D):", "device 1 (C, D):"),
    "sample_a_train": ("샘플 A, 학습 모드:", "sample A, training mode:  "),
    "sample_a_eval": ("샘플 A, 평가 모드:", "sample A, evaluation mode:"),
    # chapter 2's printed lines
    "w_sum": ("합", "sum"),
    "deviations": ("편차:", "deviations:"),
    "squared": ("제곱:", "squared:"),
    "sum_of_squares": ("제곱합:", "sum of squares:"),
    "population_variance_eq": ("모분산   = {sum} / {n} = {value:.4f}", "population variance = {sum} / {n} = {value:.4f}"),
    "sample_variance_eq": ("표본분산 = {sum} / {n} = {value:.4f}", "sample variance     = {sum} / {n} = {value:.4f}"),
    "default_sample": ("<- 기본값: 표본분산", " <- default: sample variance"),
    "numpy_default": ("<- NumPy의 기본값: 모분산", " <- NumPy's default: population variance"),
    "population_variance": ("모분산", "population variance"),
    "by_hand": ("손계산:      ", "by hand:     "),
    "maxdiff_normlib_torch": ("normlib과 torch의 최대 절대 차이:  ", "max abs difference normlib vs torch:  "),
    "maxdiff_float32_hand": ("float32와 손계산의 최대 절대 차이:", "max abs difference float32 vs by hand:"),
    "with_sample_variance": ("표본분산으로 나누면:", "with the sample variance:"),
    "ratio_right": ("올바른 값과의 비: {ratio:.4f}  (sqrt(2/3) = {root:.4f})", "ratio to the right answer: {ratio:.4f}  (sqrt(2/3) = {root:.4f})"),
    "ex2_about": ("오프셋 근처 데이터의 E[x^2]는 약", "E[x^2] for data near the offset is about"),
    "spacing_1e8": ("1e8 근처 float32 수의 간격:", "spacing of float32 numbers near 1e8:"),
    "naive_three": ("[9999, 10000, 10001]의 float32 E[x^2] - E[x]^2:", "E[x^2] - E[x]^2 in float32 for [9999, 10000, 10001]:"),
    "true_variance": ("실제 모분산: 2/3", "true population variance: 2/3"),
    "merged": ("병합:", "merged:"),
    # chapter 5's printed lines
    "mean_square": ("제곱평균", "mean square"),
    "maxdiff_normlib_rms": ("normlib과 nn.RMSNorm의 최대 절대 차이:", "max abs difference normlib vs nn.RMSNorm:"),
    "parameters": ("매개변수:", "parameters:"),
    "no_bias": ("(bias 없음)", "(no bias)"),
    "rms_default_eps": ("float32에서 nn.RMSNorm의 기본 eps: {eps:.3g}", "nn.RMSNorm's default eps for float32: {eps:.3g}"),
    "eps_change": ("입력 RMS {rms:g}: eps 1e-6이면 출력이 {six:.1e}, eps 1e-5이면 {five:.1e} 바뀝니다",
                   "input RMS {rms:g}: output changes by {six:.1e} with eps 1e-6, {five:.1e} with eps 1e-5"),
    "row_centred": ("행마다 중심화한 데이터: 최대 절대 차이", "row-centred data: max abs difference"),
    "offset_diff": ("오프셋 {offset:4}: 최대 절대 차이 {diff:.3f}", "offset {offset:4}: max abs difference {diff:.3f}"),
    "no_bench_results": ("여기에는 `make bench`의 결과가 없습니다(책의 저장소에서 실행하면 보입니다).",
                         "No results of `make bench` here (run it in the book's repository to see them)."),
    "last_bench": ("마지막 `make bench`: {cpu}, 입력 {rows} x {cols}, 순전파, 중앙값 시간",
                   "last `make bench`: {cpu}, input {rows} x {cols}, forward, median times"),
    "variant_readable": ("읽기 쉬운 구현", "readable"),
    "variant_torch": ("PyTorch 내장", "torch"),
    # chapter 6's printed lines
    "family_header": ("입력 형태       방법             축    개수   통계", "layout        method           axes  count  stats"),
    "max_abs_difference": ("최대 절대 차이", "max abs difference"),
    "n_values": ("값 {n}개", "{n} values"),
    "gamma_spread": ("채널의 γ를 위치마다 펼치면: {same} | 원소마다 다른 γ: 차이 {differ:.2f}",
                     "channel γ spread over positions: {same} | a γ per element: differs by {differ:.2f}"),
    "group_by_hand": ("그룹 {g} (채널 {a}, {b}): {values}  평균 {mean:g}  분산 {var:g}  -> {out}",
                      "group {g} (channels {a}, {b}): {values}  mean {mean:g}  variance {var:g}  -> {out}"),
    "equal": ("같음:", "equal:"),
    "silent_instance": ("(4, 3)에 nn.InstanceNorm1d(4): 오류 없음, 행마다 LayerNorm과 같음:",
                        "nn.InstanceNorm1d(4) on (4, 3): no error; equal to LayerNorm over each row:"),
    "equal_bn_columns": ("열마다 BatchNorm과 같음:", "equal to BatchNorm over each column:"),
    "instance_refuses": ("F.instance_norm은 거절합니다:", "F.instance_norm refuses it:"),
    "fact1": ("(1) 배치 {batch:3}: 배치 평균이 배치마다 표준편차 {std:.3f}로 흔들립니다",
              "(1) batch {batch:3}: the batch mean varies from batch to batch with std {std:.3f}"),
    "fact2": ("(2) 배치 짝꿍이 바뀌면: BatchNorm 출력은 {bn:.3f}, GroupNorm은 {gn} 바뀝니다",
              "(2) another partner in the batch: BatchNorm output changes by {bn:.3f}, GroupNorm by {gn}"),
    "fact3": ("(3) 입력이 최대 {inp:.2f} 바뀌어도 InstanceNorm 출력은 {out:.1e}만큼 바뀝니다",
              "(3) input changed by up to {inp:.2f}, InstanceNorm output by {out:.1e}"),
    "fact4": ("(4) 패딩 토큰 3개를 붙이면: LayerNorm 출력은 {ln}, BatchNorm은 {bn:.3f} 바뀝니다",
              "(4) 3 padding tokens appended: LayerNorm output changes by {ln}, BatchNorm's by {bn:.3f}"),
    # chapter 4's printed lines
    "d3_both": ("샘플 D, 특성 3: BatchNorm {bn:+.2f} | LayerNorm {ln:+.2f}", "sample D, feature 3: BatchNorm {bn:+.2f} | LayerNorm {ln:+.2f}"),
    "mean_per_sample": ("샘플별 평균:", "mean per sample:"),
    "var_per_sample": ("샘플별 분산:", "variance per sample:"),
    "maxdiff_normlib_ln": ("normlib과 nn.LayerNorm의 최대 절대 차이:", "max abs difference normlib vs nn.LayerNorm:"),
    "alone_equals_batch": ("샘플 0을 혼자 넣은 결과 == 배치 안의 샘플 0:", "sample 0 alone == sample 0 in the batch:"),
    "bn_with_without": ("BatchNorm: 같은 두 샘플이 다른 샘플과 함께일 때와 아닐 때 {diff:.3f}만큼 다릅니다",
                        "BatchNorm: same two samples with and without the others differ by {diff:.3f}"),
    "shape_report": ("축 {axes}, 값 {count}개짜리 통계 {n}개, weight {weight}, 최대 절대 차이 {diff}",
                     "axes {axes}, {n} statistics of {count} values, weight {weight}, max abs difference {diff}"),
    "gap_population": ("모표준편차: 첫 입력 {first:.1e}, 1000번의 중앙값 {median:.1e}, 10%-90% {low:.1e}-{high:.1e}",
                       "population std: first draw {first:.1e}, median of 1000 draws {median:.1e}, 10%-90% {low:.1e}-{high:.1e}"),
    "gap_below": ("차이가 1e-4보다 작은 입력: {share:.0%}", "draws whose gap is below 1e-4: {share:.0%}"),
    "uniform_std": ("균등분포 [0, 1)의 표준편차 = 1/sqrt(12) = {std:.2f}, float64의 반올림 단위 {unit:.0e}",
                    "uniform [0, 1) std = 1/sqrt(12) = {std:.2f}; float64 rounding unit {unit:.0e}"),
    "gap_sample_std": ("표본표준편차(torch의 기본값): 첫 입력 {gap:.1e}", "sample std (torch's default): first draw {gap:.1e}"),
    "gap_shrunk": ("같은 입력을 {shrink:g}배로: {gap:.1e}", "the same draw times {shrink:g}: {gap:.1e}"),
    "loss_before": ("갱신 전 손실:                  {loss:.4f}", "loss before the step:               {loss:.4f}"),
    "loss_stale": ("갱신 뒤의 loss.item() (낡은 값): {loss:.4f}  <- 같은 숫자: 갱신 전에 계산한 값",
                   "loss.item() after the step (stale): {loss:.4f}  <- the same number: computed before the step"),
    "loss_after": ("갱신 뒤 다시 계산한 손실:       {loss:.4f}", "loss recomputed after the step:     {loss:.4f}"),
    "gamma_zero": ("γ = 0에서 시작: 입력 기울기의 최댓값 {grad:g}", "γ = 0 at the start: largest input gradient {grad:g}"),
    "gamma_grads": ("γ의 기울기:      ", "γ gradients:     "),
    "gamma_moved": ("한 단계 뒤 γ 변화:", "γ after one step:"),
    "three_checks_passed": ("평균 ≈ 0, 분산 ≈ 1, nn.LayerNorm과 같음, γ와 β에 기울기: 검사를 모두 통과했습니다",
                            "mean ≈ 0, variance ≈ 1, equal to nn.LayerNorm, gradients reach γ and β: all checks passed"),
    "recalibrated_off": ("다시 맞춘 뒤(momentum=None으로 한 번): 최대 {diff:.3f} 어긋납니다",
                         "recalibrated (one pass, momentum=None): off by up to {diff:.3f}"),
    "share_count": ("원소 {count}개가 원소 {element}의 통계를 함께 씁니다", "{count} elements share the statistic of element {element}"),
    "std_after_layers": ("1, 5, 10, 20층 뒤 표준편차:", "std after layer 1, 5, 10, 20:"),
    "cmp:summary": ("{name}: 학습 {train} | 평가 {eval} | state_dict 키 일치 {keys} | 값 차이 {values} | torch의 state_dict 불러오기 {loads}",
                    "{name}: train {train} | eval {eval} | state_dict keys equal {keys} | values {values} | loads torch's: {loads}"),
    "cmp:keys": ("  키:", "  keys:"),
    "accuracy": ("정확도", "accuracy"),
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
    "live_caption": ("통계 {which}번을 공유하는 원소 {count}개:", "the {count} elements that share statistic {which}:"),
    "train_mode": ("학습 모드 (배치 통계)", "training mode (batch statistics)"),
    "eval_mode": ("평가 모드 (이동 통계)", "evaluation mode (running statistics)"),
    "term_direct": ("직접 항 r·g", "direct term r·g"),
    "term_mean": ("평균을 거친 항 −r·mean(g)", "through the mean −r·mean(g)"),
    "term_var": ("분산을 거친 항 −r·x̂·mean(g·x̂)", "through the variance −r·x̂·mean(g·x̂)"),
    "term_total": ("합 = ∂L/∂x", "sum = ∂L/∂x"),
    "grad_terms_title": ("샘플 A, ∂L/∂y = (1, 0, 0)일 때 ∂L/∂x의 세 항", "The three terms of ∂L/∂x for sample A, ∂L/∂y = (1, 0, 0)"),
    "saved_mb": ("역전파용으로 저장된 메모리 (MB)", "memory saved for backward (MB)"),
    "impl_reference": ("읽기 쉬운 구현 + autograd", "readable + autograd"),
    "impl_hand": ("손으로 유도한 역전파", "hand-derived backward"),
    "impl_torch": ("PyTorch 내장", "PyTorch built-in"),
    # chapter 9: statistics across devices
    "per_device_batch": ("장치당 배치 크기 b (로그 눈금)", "per-device batch size b (log scale)"),
    "drift_mean": ("장치 평균의 어긋남 (σ 단위, RMS)", "drift of the device's mean (in σ, RMS)"),
    "drift_predicted": ("예측 √(1/b − 1/B)", "predicted √(1/b − 1/B)"),
    "drift_var": ("장치 분산의 상대 어긋남 (RMS)", "relative drift of the device's variance (RMS)"),
    "drift_output": ("출력의 차이 (RMS)", "difference of the outputs (RMS)"),
    "drift_axis": ("전체 배치와의 차이 (로그 눈금)", "difference from the full batch (log scale)"),
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

def _merged(*tables: dict) -> dict:
    """One table from several, refusing a key defined twice (a later copy would silently win)."""
    merged: dict = {}
    for table in tables:
        twice = sorted(set(merged) & set(table))
        if twice:
            raise ValueError(f"strings defined twice: {', '.join(twice)}")
        merged.update(table)
    return merged


_ALL = _merged(_PAIRS, CHECKER_PAIRS)
STRINGS = {
    "ko": {key: pair[0] for key, pair in _ALL.items()},
    "en": {key: pair[1] for key, pair in _ALL.items()},
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
