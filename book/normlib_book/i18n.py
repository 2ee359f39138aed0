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

from normlib_book.i18n_ch2_3 import PAIRS as CH2_3_PAIRS
from normlib_book.i18n_ch7_9 import PAIRS as CH7_9_PAIRS
from normlib_book.i18n_ch10 import PAIRS as CH10_PAIRS
from normlib_book.i18n_ch11 import PAIRS as CH11_PAIRS
from normlib_book.i18n_checkers import PAIRS as CHECKER_PAIRS
from normlib_book.i18n_explorer import PAIRS as EXPLORER_PAIRS

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
    "gain": ("배율", "gain"),
    # chapter 1's printed lines
    "learning_rate": ("학습률", "learning rate"),
    "held_out_accuracy": ("검증 데이터 정확도", "validation accuracy"),
    "growth_per_layer": ("6층에서 48층까지 층 하나를 더할 때마다 기울기에 곱해지는 배율, 평균 ± 표준오차 (최솟값–최댓값):",
                         "the factor the gradient is multiplied by per layer added, 6 to 48 layers: mean ± standard error (min–max):"),
    "diverged": ("발산", "diverged"),
    "raw_inputs": ("표준화하지 않은 입력", "inputs not standardized"),
    "layers_count": ("{depth}층", "{depth} layers"),
    "first_layer_grad": ("초기화 직후 첫 층 가중치의 기울기 크기(노름), 시드 {n}개의 기하평균 (최솟값–최댓값):",
                         "gradient norm of the first layer's weights at initialization, geometric mean over {n} seeds (min–max):"),
    "shape_samples_features": ("모양: {shape} = (샘플, 특성)", "shape: {shape} = (samples, features)"),
    "ln_one_sample": ("샘플 하나에 LayerNorm:", "LayerNorm on one sample:"),
    "mean_real_tokens": ("실제 토큰들에서 낸 특성 1의 평균:          ", "mean of feature 1 over the real tokens:     "),
    "mean_bn_sees": ("BatchNorm이 보는 (B, L) 전체의 특성 1 평균:", "mean of feature 1 that BatchNorm sees (B, L):"),
    "ln_unchanged_padding": ("패딩을 붙여도 짧은 시퀀스의 LayerNorm 출력이 그대로:", "LayerNorm of the short sequence unchanged by padding:"),
    "whole_batch": ("배치 전체:", "whole batch:"),
    "device_0": ("장치 0 (A, B):", "device 0 (A, B):"),
    "device_1": ("장치 1 (C, D):", "device 1 (C, D):"),
    "sample_a_train": ("샘플 A, 학습 모드:", "sample A, training mode:"),
    "sample_a_eval": ("샘플 A, 평가 모드:", "sample A, evaluation mode:"),
    "ch1:sweep_source": ("커밋된 학습 실험 benchmarks/results/lr_sweep.json: {date}, {cpu}, float64",
                         "committed sweep benchmarks/results/lr_sweep.json: {date}, {cpu}, float64"),
    "ch1:live_check": ("이 노트북에서 다시 돌린 시드 0, 학습률 0.03의 검증 데이터 정확도(커밋된 결과와 같음):",
                       "seed 0 at learning rate 0.03, trained again here, validation accuracy (as in the committed sweep):"),
    "ch1:accuracy_header": ("검증 데이터 정확도: 평균 ± 표준오차 (최솟값–최댓값), 발산한 시드 수",
                            "validation accuracy: mean ± standard error (min–max), seeds that diverged"),
    "ch1:diverged_count": ("발산 {k}/{n}", "diverged {k}/{n}"),
    "ch1:paired": ("같은 시드끼리의 차이, {a} − {b}:", "paired difference, {a} − {b}:"),
    "ch1:best_rate": ("한 시드도 발산하지 않은 학습률 가운데 평균이 가장 높은 학습률:", "the learning rate with the best mean among those where no seed diverged:"),
    "ch1:at_best": ("각자 가장 좋은 학습률에서", "each at its best learning rate"),
    "ch1:median_loss": ("학습 손실, 시드 중앙값", "training loss, median over seeds"),
    "ch1:collapse_header": ("학습률 1.0, {step}단계 뒤, 학습 데이터 전체에서 잰 값(시드별 중앙값, 최솟값–최댓값):",
                            "learning rate 1.0, after {step} steps, measured over the whole training set (median over seeds, min–max):"),
    "ch1:logit_std": ("로짓의 표준편차", "std of the logits"),
    "ch1:constant_seeds": ("로짓 표준편차가 0.01보다 작은(상수를 예측하는) 시드 {k}/{n}", "seeds predicting a constant (logit std below 0.01): {k}/{n}"),
    "ch1:dead_relu": ("층 8–12에서 죽은 ReLU(모든 샘플에서 0)의 비율", "share of dead ReLUs in layers 8–12 (0 for every sample)"),
    "ch1:between_share": ("마지막 정규화 층의 입력 중 샘플마다 다른 부분(노름의 비율)", "share of the last norm's input that differs between samples (of its norm)"),
    "ch1:scaled_layer": ("여섯째 선형 층의 가중치와 편향 × {a:g}:", "weights and bias of the sixth linear layer × {a:g}:"),
    "ch1:scaled_effect": ("로짓의 표준편차 ×{logits:#.3g}, 이 층의 기울기 ×{this:#.3g}, 첫 층의 기울기 ×{first:#.3g}",
                          "std of the logits ×{logits:#.3g}, this layer's gradient ×{this:#.3g}, the first layer's gradient ×{first:#.3g}"),
    "ch1:weight_growth": ("학습 뒤 선형 층 가중치의 노름 ÷ 처음 노름(층별 기하평균), 시드별 값의 평균 ± 표준오차 (최솟값–최댓값):",
                          "norm of the linear layers' weights after training ÷ at the start (geometric mean over layers), mean ± standard error over seeds (min–max):"),
    "ch1:raw_without_x100": ("×100 특성 둘만 크기 1로 되돌린 입력", "inputs with the two ×100 features back at scale 1"),
    "ch1:raw_all_scale_1": ("모든 특성이 크기 1인 입력(표준화는 하지 않음)", "every feature at scale 1 (not standardized)"),
    "ch1:bn2d_one_sample": ("BatchNorm2d, 샘플 하나 (1, 3, 4, 4), 학습 모드: 오류 없음, 채널마다 위치 16개로 통계를 냅니다. 출력 모양",
                            "BatchNorm2d, one sample (1, 3, 4, 4), training mode: no error, each channel's statistics come from 16 positions; output shape"),
    "ch1:layer20_header": ("층 20의 표준편차, 가중치 시드 {n}개의 기하평균 (최솟값–최댓값):",
                           "std at layer 20, geometric mean over {n} weight seeds (min–max):"),
    "ch1:init_loss": ("초기화 직후의 손실(학습 데이터 전체), 시드 {n}개의 평균 (최솟값–최댓값):",
                      "loss at initialization (whole training set), mean over {n} seeds (min–max):"),
    "ch1:layers_1_20": ("배율 1.0, 가중치 시드 1: 층 1과 층 20의 표준편차", "gain 1.0, weight seed 1: std at layer 1 and at layer 20"),
    "ch1:ratio_sorted": ("층 20 ÷ 층 1, 가중치 시드마다(정렬):", "layer 20 ÷ layer 1, one per weight seed (sorted):"),
    "ch1:log_ratio": ("log(층 20 ÷ 층 1): 평균 {mean:.2f} ± {se:.2f}(표준오차), 표준편차 {sd:.2f}, 무작위 걸음의 예측 √(19·5/(4·128)) = {pred:.2f}",
                      "log(layer 20 ÷ layer 1): mean {mean:.2f} ± {se:.2f} (standard error), std {sd:.2f}; the random walk predicts √(19·5/(4·128)) = {pred:.2f}"),
    # chapter 5's printed lines
    "half_given_eps": ("eps = torch.finfo({dtype}).eps = {eps:.4g}: 샘플 A -> {row} | eps=None의 출력과 같음: {same}",
                       "eps = torch.finfo({dtype}).eps = {eps:.4g}: sample A -> {row} | same output as eps=None: {same}"),
    "normlib_default_eps": ("eps=None에서 normlib.functional.rms_norm과 같음:", "normlib.functional.rms_norm the same with eps=None:"),
    "run_time_ratio": ("LayerNorm / RMSNorm 실행 시간 비, {library}: {ratio:.2f}", "LayerNorm / RMSNorm run time, {library}: {ratio:.2f}"),
    "live_timing": ("{name:26} 중앙값 {median:7.2f} ms (반복 15번: {low:.2f}–{high:.2f} ms)",
                    "{name:26} median {median:7.2f} ms (15 repeats: {low:.2f}–{high:.2f} ms)"),
    "ops_whole": ("{name}: 실행한 연산 {every} | 그중 입력 크기의 텐서를 읽거나 쓰는 연산 {whole}: 읽기 {reads}번, 쓰기 {writes}번",
                  "{name}: aten operations run {every} | those reading or writing an input-sized tensor {whole}: reads {reads}, writes {writes}"),
    "plus_constant": ("모든 특성에 3을 더하면: LayerNorm 출력이 그대로(변화 1e-12 미만) {ln} | RMSNorm 출력의 최대 변화 {rms:.2f}",
                      "3 added to every feature: LayerNorm's output unchanged (change below 1e-12) {ln} | largest change of RMSNorm's output {rms:.2f}"),
    "rms_scale_gradient": ("RMSNorm, 가중치 ×{a:<5g}: 기울기 크기 {grad:.3e}, a × 기울기 크기 {times:.4f}",
                           "RMSNorm, weights ×{a:<5g}: gradient norm {grad:.3e}, a × gradient norm {times:.4f}"),
    "mean_square": ("제곱평균", "mean square"),
    "maxdiff_normlib_rms": ("normlib과 nn.RMSNorm의 최대 절대 차이:", "max abs difference normlib vs nn.RMSNorm:"),
    "parameters": ("매개변수:", "parameters:"),
    "no_bias": ("(bias 없음)", "(no bias)"),
    "rms_default_eps": ("float32에서 nn.RMSNorm의 기본 eps: {eps:.3g}", "nn.RMSNorm's default eps for float32: {eps:.3g}"),
    "eps_change": ("입력 RMS {rms:g}: eps 1e-6이면 출력이 {six:.1e}, eps 1e-5이면 {five:.1e} 바뀝니다",
                   "input RMS {rms:g}: output changes by {six:.1e} with eps 1e-6, {five:.1e} with eps 1e-5"),
    "row_centred": ("행마다 중심화한 데이터: 최대 절대 차이", "row-centred data: max abs difference"),
    "offset_diff": ("오프셋 {offset:4}: 최대 절대 차이 {diff:.3f} | RMSNorm 출력의 범위 [{low:6.3f}, {high:.3f}], 표준편차 {std:.3f}",
                    "offset {offset:4}: max abs difference {diff:.3f} | RMSNorm output range [{low:6.3f}, {high:.3f}], std {std:.3f}"),
    "no_bench_results": ("여기에는 벤치마크(benchmarks/normalization.py)의 결과가 없습니다(책의 저장소에서 실행하면 보입니다).",
                         "No results of make bench here (run it in the book's repository to see them)."),
    "last_bench": ("마지막 벤치마크 실행(benchmarks/normalization.py): {cpu}, 입력 {rows} x {cols}, 순전파, 중앙값 시간",
                   "last make bench run: {cpu}, input {rows} x {cols}, forward, median times"),
    "variant_readable": ("읽기 쉬운 구현", "readable"),
    "variant_torch": ("PyTorch 내장", "PyTorch built-in"),
    # chapter 6's printed lines
    "gn_versus": ("G = {g}인 GroupNorm과 {other}의 최대 절대 차이: {diff}", "G = {g} vs {other}: max abs difference {diff}"),
    "diff_output": ("출력", "output"),
    "diff_input_grad": ("입력 기울기", "input grad"),
    "diff_weight_grad": ("weight 기울기", "weight grad"),
    "diff_bias_grad": ("bias 기울기", "bias grad"),
    "fact2_other_sample": ("(2) 같은 배치의 다른 샘플이 바뀌면: BatchNorm 출력은 {bn:.3f}, GroupNorm 출력은 {gn} 바뀝니다",
                           "(2) another sample in the batch: BatchNorm output changes by {bn:.3f}, GroupNorm output by {gn}"),
    "per_statistic": ("{method!r:11} 통계 하나에 원소 {count:5}개, 통계 {n:4}개", "{method!r:11} {count:5} elements per statistic, {n:4} statistics"),
    "family_header": ("입력 형태     방법                축   개수   통계", "layout        method            axes  count  stats"),
    "max_abs_difference": ("최대 절대 차이", "max abs difference"),
    "n_values": ("값 {n}개", "{n} values"),
    "gamma_spread": ("채널의 γ를 위치마다 펼치면: {same} | 원소마다 다른 γ: 차이 {differ:.2f}",
                     "channel γ spread over positions: {same} | a γ per element: differs by {differ:.2f}"),
    "group_by_hand": ("그룹 {g} (채널 {a}, {b}): {values}  평균 {mean:g}  분산 {var:g}  -> {out}",
                      "group {g} (channels {a}, {b}): {values}  mean {mean:g}  variance {var:g}  -> {out}"),
    "equal": ("같음:", "equal:"),
    "equal_torch_group_norm": ("torch.nn.functional.group_norm과 같음:", "equal to torch.nn.functional.group_norm:"),
    "book_tolerance": ("이 책의 float32 허용 오차 {tol:g}는 float32의 반올림 단위 u = {u:.0e}의 {ratio:.0f}배입니다",
                       "the book's float32 tolerance {tol:g} is {ratio:.0f} times float32's unit roundoff u = {u:.0e}"),
    "slip_warns": ("(4, 3)에 nn.InstanceNorm1d(3), 곧 num_features = C (affine=False): 경고만 냅니다(dim 0의 크기가 num_features와 다르다는 PyTorch 경고):",
                   "nn.InstanceNorm1d(3), num_features = C, on (4, 3) (affine=False): only a warning:"),
    "slip_result": ("그래도 실행되며 행마다 LayerNorm과 같음:", "it runs anyway, equal to LayerNorm over each row:"),
    "slip_raises": ("(4, 3)에 nn.InstanceNorm1d(3, affine=True): 오류(dim 0의 크기가 num_features와 달라 멈춘다는 PyTorch 오류):", "nn.InstanceNorm1d(3, affine=True) on (4, 3): error:"),
    "silent_instance": ("(4, 3)에 nn.InstanceNorm1d(4), 곧 num_features = N: 경고 {warnings}개, 오류 없음, 행마다 LayerNorm과 같음:",
                        "nn.InstanceNorm1d(4), num_features = N, on (4, 3): {warnings} warnings, no error; equal to LayerNorm over each row:"),
    "equal_bn_columns": ("열마다 BatchNorm과 같음:", "equal to BatchNorm over each column:"),
    "instance_refuses": ("nn.functional.instance_norm은 거절합니다(학습 중에는 위치가 2개 이상이어야 함):",
                         "nn.functional.instance_norm refuses it:"),
    "fact1_header": ("(1) 배치 평균의 표준편차: 시드 {n}개의 평균 ± 표준오차 (괄호 안은 예측)",
                     "(1) std of the batch mean: mean ± standard error over {n} seeds (predicted in parentheses)"),
    "fact1": ("    배치 {batch:3}: 위치가 독립 {iid:.3f} ± {iid_se:.3f} ({iid_pred:.3f}) | 위치가 분산의 절반을 공유 {corr:.3f} ± {corr_se:.3f} ({corr_pred:.3f})",
              "    batch {batch:3}: independent positions {iid:.3f} ± {iid_se:.3f} ({iid_pred:.3f}) | positions sharing half their variance {corr:.3f} ± {corr_se:.3f} ({corr_pred:.3f})"),
    "fact5": ("(5) 채널별 표준편차가 {scales}인 이미지를 정규화한 출력의 채널별 표준편차:",
              "(5) an image with channel stds {scales}; each channel's std after normalization:"),
    "fact3": ("(3) 입력이 최대 {inp:.2f} 바뀌어도 InstanceNorm 출력은 {out:.1e}밖에 바뀌지 않습니다",
              "(3) input changed by up to {inp:.2f}, InstanceNorm output by {out:.1e}"),
    "fact4": ("(4) 패딩 토큰 3개를 붙이면: LayerNorm 출력은 {ln}, BatchNorm은 {bn:.3f} 바뀝니다",
              "(4) 3 padding tokens appended: LayerNorm output changes by {ln}, BatchNorm's by {bn:.3f}"),
    # chapter 4's printed lines
    "ln_shape_mismatch": ("모양이 맞지 않는 입력 ->", "mismatched input ->"),
    "std_of_rows": ("D = 512: 행마다 .std() {std:.6f} = sqrt(512/511) {root:.6f}; .std(unbiased=False) {population:.6f}",
                    "D = 512: .std() of each row {std:.6f} = sqrt(512/511) {root:.6f}; .std(unbiased=False) {population:.6f}"),
    "approx_measured": ("근사 {approx:.2e} | 측정 {measured:.2e}", "approximation {approx:.2e} | measured {measured:.2e}"),
    "rnn_step": ("시점 {t:3}: 실제 샘플 평균 {n:4.1f}개, 실제 샘플이 2개 미만인 배치 {few:4.0%} | 배치 평균의 퍼짐 {spread:.3f}, 예측 √(1/n의 평균) {expected:.3f}",
                 "step {t:3}: {n:4.1f} real samples on average, batches with fewer than 2: {few:4.0%} | spread of the batch mean {spread:.3f}, predicted √(mean of 1/n) {expected:.3f}"),
    "rnn_longest": ("가장 긴 학습 시퀀스의 길이 {longest}: 시점 {next}부터는 모아 둔 통계가 없습니다",
                    "longest training sequence {longest}: no statistics from step {next} on"),
    "rnn_token_bn": ("같은 토큰, 시점별 BatchNorm: 배치 A의 시점 {ta}(실제 샘플 {na}개), 배치 B의 시점 {tb}(실제 샘플 {nb}개): 출력이 최대 {diff:.3f} 다릅니다",
                     "the same token, per-step BatchNorm: step {ta} of batch A ({na} real samples), step {tb} of batch B ({nb} real samples): outputs differ by up to {diff:.3f}"),
    "rnn_token_ln": ("같은 토큰, LayerNorm: 배치 A의 시점 {ta} == 배치 B의 시점 {tb} == 길이 {long} 테스트 시퀀스의 시점 {long} == 토큰 하나만: {same}",
                     "the same token, LayerNorm: step {ta} of batch A == step {tb} of batch B == step {long} of a test sequence of length {long} == the token alone: {same}"),
    "d3_both": ("샘플 D, 특성 3: BatchNorm {bn:+.2f} | LayerNorm {ln:+.2f}", "sample D, feature 3: BatchNorm {bn:+.2f} | LayerNorm {ln:+.2f}"),
    "mean_per_sample": ("샘플별 평균:", "mean per sample:"),
    "var_per_sample": ("샘플별 분산:", "variance per sample:"),
    "maxdiff_normlib_ln": ("normlib과 nn.LayerNorm의 최대 절대 차이:", "max abs difference normlib vs nn.LayerNorm:"),
    "alone_equals_batch": ("샘플 0을 혼자 넣은 결과 == 배치 안의 샘플 0:", "sample 0 alone == sample 0 in the batch:"),
    "bn_with_without": ("BatchNorm: 같은 두 샘플의 출력이 다른 샘플과 함께 넣을 때와 둘만 넣을 때 최대 {diff:.3f} 다릅니다",
                        "BatchNorm: the same two samples, fed with and without the others, differ by up to {diff:.3f}"),
    "bn_pools_image": ("같은 입력의 BatchNorm2d: 축 {axes}, 값 {count}개짜리 통계 {n}개",
                       "BatchNorm2d on the same input: axes {axes}, {n} statistics of {count} values"),
    "scale_gradient": ("가중치 ×{a:<5g}: 출력이 같음 {same} | 기울기 크기 {grad:.3e}, a × 기울기 크기 {times:.4f} | 기울기 크기 / 가중치 크기 {relative:.1e}",
                       "weights ×{a:<5g}: same output {same} | gradient norm {grad:.3e}, a × gradient norm {times:.4f} | gradient norm / weight norm {relative:.1e}"),
    "shape_report": ("축 {axes}, 값 {count}개짜리 통계 {n}개, weight {weight}, 최대 절대 차이 {diff}",
                     "axes {axes}, {n} statistics of {count} values, weight {weight}, max abs difference {diff}"),
    "gap_population": ("모표준편차: 첫 입력 {first:.1e}, 1000번의 중앙값 {median:.1e}, 10%–90%: {low:.1e} ~ {high:.1e}",
                       "population std: first draw {first:.1e}, median of 1000 draws {median:.1e}, 10%–90%: {low:.1e} to {high:.1e}"),
    "gap_below": ("차이가 1e-4보다 작은 입력: {share:.0%}", "draws whose gap is below 1e-4: {share:.0%}"),
    "uniform_std": ("균등분포 [0, 1)의 표준편차 = 1/sqrt(12) = {std:.2f}, float64의 반올림 단위 u = 2^-53 = {unit:.1e}",
                    "uniform [0, 1) std = 1/sqrt(12) = {std:.2f}; float64 unit roundoff u = 2^-53 = {unit:.1e}"),
    "gap_sample_std": ("표본표준편차(torch의 기본값): 첫 입력 {gap:.1e}", "sample std (torch's default): first draw {gap:.1e}"),
    "gap_shrunk": ("같은 입력을 {shrink:g}배로: {gap:.1e}", "the same draw times {shrink:g}: {gap:.1e}"),
    "loss_before": ("갱신 전 손실:                  {loss:.4f}", "loss before the step:               {loss:.4f}"),
    "loss_stale": ("갱신 후의 loss.item() (낡은 값): {loss:.4f}  <- 같은 숫자: 갱신 전에 계산한 값",
                   "loss.item() after the step (stale): {loss:.4f}  <- the same number: computed before the step"),
    "loss_after": ("갱신 후 다시 계산한 손실:       {loss:.4f}", "loss recomputed after the step:     {loss:.4f}"),
    "gamma_zero": ("γ = 0에서 시작한 LayerNorm: 입력 기울기의 최댓값 {grad:g}, γ 기울기의 최댓값 {gamma:.3f}",
                   "LayerNorm with γ = 0 at the start: largest input gradient {grad:g}, largest γ gradient {gamma:.3f}"),
    "gamma_grads": ("γ의 기울기:      ", "γ gradients:     "),
    "gamma_moved": ("한 단계 뒤 γ 변화:", "change of γ after one step:"),
    "beta_grads": ("β의 기울기:      ", "β gradients:     "),
    "beta_moved": ("한 단계 뒤 β 변화:", "change of β after one step:"),
    "smallest_grad": ("γ와 β의 기울기 중 가장 작은 |g|: {g:.2e}, 옵티마이저의 eps: {eps:g}",
                      "smallest |g| among the γ and β gradients: {g:.2e}; Adam's eps: {eps:g}"),
    "adam_first_step": ("기울기 {g:g}: 첫 단계의 이동 {move:.4f} | 학습률·g/(|g| + eps) = {formula:.4f}",
                        "gradient {g:g}: first step moves {move:.4f} | lr·g/(|g| + eps) = {formula:.4f}"),
    "zero_block": ("γ = 0으로 끝나는 잔차 블록: 출력 == 입력 {identity} | 입력의 기울기 == 위에서 온 기울기 {passes}",
                   "residual block ending in γ = 0: output == input {identity} | input gradient == upstream gradient {passes}"),
    "zero_block_grads": ("γ 기울기의 최댓값 {gamma:.3f}, 손으로 계산한 Σ g·x̂와 같음 {by_hand} | 안쪽 선형 층 기울기의 최댓값 {inner:g}",
                         "largest γ gradient {gamma:.3f}, equal to Σ g·x̂ by hand {by_hand} | largest inner linear-layer gradient {inner:g}"),
    "zero_block_step": ("SGD 한 단계 뒤: |γ|의 최댓값 {gamma:.3f}, 갈래 출력의 최댓값 {branch:.3f}",
                        "after one SGD step: largest |γ| {gamma:.3f}, largest branch output {branch:.3f}"),
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
    "welford": ("Welford, shift=True (stats.welford 기본값)", "Welford, shift=True (stats.welford default)"),
    "welford_plain": ("Welford, shift=False (책에 적힌 그대로)", "Welford, shift=False (as written)"),
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
    "block_batch_dim0": ("실수: dim 0만 줄인 평균 (위치·특성마다 통계 하나)", "Slip: mean over dim 0 only (per position, feature)"),
    "block_count": ("칠한 원소 {count}개가 통계 하나를 공유 · 통계 {total}개", "the {count} filled elements share one statistic · {total} statistics"),
    "axis_N": ("N (샘플)", "N (samples)"),
    "axis_C": ("C (채널)", "C (channels)"),
    "axis_HW": ("H·W (위치)", "H·W (positions)"),
    "axis_L_spatial": ("L (위치)", "L (positions)"),
    "axis_none": ("(공간 축 없음)", "(no spatial axis)"),
    "axis_B": ("B (시퀀스)", "B (sequences)"),
    "axis_L": ("L (토큰)", "L (tokens)"),
    "axis_D": ("D (특성)", "D (features)"),
    "layout_image": ("이미지 (N, C, H, W)", "images (N, C, H, W)"),
    "layout_sequence": ("시퀀스 (B, L, D)", "sequences (B, L, D)"),
    "layout_table": ("4 × 3 표", "4 × 3 table"),
    # the explorers' selectors, and the alt text of their pictures (what a screen reader says)
    "choose_layout": ("입력 형태", "input layout"), "choose_method": ("정규화 방법", "method"), "choose_groups": ("그룹 수", "groups"),
    "block_alt": ("{title}. {dims}인 블록에서 통계 {which}번을 공유하는 원소 {count}개를 칠한 그림 (통계는 모두 {total}개).",
                  "{title}. A block of {dims}; the {count} filled elements share statistic {which} ({total} statistics in all)."),
    "table_alt": ("{title}. {what}을 적은 {rows}행 {cols}열 표: {cells}.", "{title}. A {rows}-by-{cols} table of the {what}: {cells}."),
    "table_input_values": ("입력값", "input values"), "table_normalized_values": ("정규화한 값", "normalized values"),
    "mean": ("평균", "mean"),
    "variance": ("분산", "variance"),
    "train_mode": ("학습 모드 (배치 통계)", "training mode (batch statistics)"),
    "eval_mode": ("평가 모드 (이동 통계)", "evaluation mode (running statistics)"),
    "term_direct": ("직접 항 r·g", "direct term r·g"),
    "term_mean": ("평균을 거친 항 −r·mean(g)", "through the mean −r·mean(g)"),
    "term_var": ("분산을 거친 항 −r·x̂·mean(g·x̂)", "through the variance −r·x̂·mean(g·x̂)"),
    "term_total": ("합 = ∂L/∂x", "sum = ∂L/∂x"),
    "grad_terms_title": ("샘플 A, ∂L/∂y = (1, 0, 0)일 때 ∂L/∂x의 세 항", "The three terms of ∂L/∂x for sample A, ∂L/∂y = (1, 0, 0)"),
    "saved_mb": ("역전파용으로 저장된 메모리 (MB)", "memory saved for backward (MB)"),
    # normlib_benchmarks's figures (chapter 8)
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


_ALL = _merged(_PAIRS, CHECKER_PAIRS, CH2_3_PAIRS, CH7_9_PAIRS, CH10_PAIRS, CH11_PAIRS, EXPLORER_PAIRS)
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
