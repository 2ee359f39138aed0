"""The strings of the explorer (:mod:`normlib.book.explorer`), in Korean and English.

Kept apart from :mod:`normlib.book.i18n`, which merges every table and refuses a key defined twice;
the keys all start with ``nx_``. The widget receives the words of its language as its ``words``
trait, and ``explorer.js`` fills in the ``{…}`` fields.
"""

# key: (Korean, English)
PAIRS = {
    "nx_method_batch_dim0": ("실수(dim 0만 줄이기)", "slip: reducing dim 0 only"),
    "nx_summary": ("{method}: 통계 {total}개가 각각 원소 {pooled}개를 묶습니다. 강조한 칸은 통계 {which}번을 함께 쓰는 원소 {count}개입니다.",
                   "{method}: {total} statistics, each pooling {pooled} elements. The lit cells are the {count} elements that share statistic {which}."),
    "nx_selected": ("고른 칸({where}): x = {x}, y = {y}", "The chosen cell is {where}: x = {x}, y = {y}."),
    "nx_where_image": ("샘플 {n}, 채널 {c}, 위치 {s}", "sample {n}, channel {c}, position {s}"),
    "nx_where_sequence": ("시퀀스 {b}, 토큰 {l}, 특성 {d}", "sequence {b}, token {l}, feature {d}"),
    "nx_where_table": ("샘플 {n}, 특성 {d}", "sample {n}, feature {d}"),
    "nx_cell": ("{where}: x = {x}, y = {y}, 통계 {which}번", "{where}: x = {x}, y = {y}, statistic {which}"),
    "nx_block_image": ("샘플 {n}: 행은 채널, 열은 위치", "sample {n}: rows are channels, columns positions"),
    "nx_block_sequence": ("시퀀스 {b}: 행은 토큰, 열은 특성", "sequence {b}: rows are tokens, columns features"),
    "nx_feature": ("특성 {d}", "feature {d}"),
    "nx_sample": ("샘플 {n}", "sample {n}"),
    "nx_table_input": ("샘플 {n}, 특성 {d}의 입력값", "input of sample {n}, feature {d}"),
    "nx_table_caption": ("입력값은 직접 고쳐 쓸 수 있습니다. 입력값 아래에는 그 칸의 x̂, y가 나옵니다.",
                         "Type over any input; under each cell are its x̂ and y."),
    "nx_stats_caption": ("통계 {total}개 (각각 원소 {pooled}개)", "{total} statistics ({pooled} elements each)"),
    "nx_statistic": ("통계", "statistic"),
    "nx_running": ("BatchNorm의 이동 통계", "BatchNorm's running statistics"),
    "nx_momentum": ("모멘텀", "momentum"),
    "nx_momentum_none": ("None (누적 평균)", "None (cumulative average)"),
    "nx_step": ("이 배치로 한 번 학습", "train one step on this batch"),
    "nx_reset": ("이동 통계 초기화", "reset running statistics"),
    "nx_steps": ("학습한 배치: {steps}개", "batches trained on: {steps}"),
    "nx_error_one_value": ("학습 모드의 BatchNorm은 통계마다 값이 두 개 이상 있어야 합니다. 크기를 늘리거나 평가 모드로 바꾸세요.",
                           "BatchNorm in training mode needs more than one value per statistic: make a size larger or switch to evaluation mode."),
    "nx_error_one_position": ("InstanceNorm은 (샘플, 채널)마다 위치가 두 개 이상 있어야 합니다(H·W ≥ 2). H·W를 늘리세요.",
                              "InstanceNorm needs more than one position per (sample, channel) (H·W ≥ 2): make H·W larger."),
    "nx_gamma": ("γ (스케일)", "γ (scale)"),
    "nx_beta": ("β (시프트)", "β (shift)"),
    "nx_eps": ("ε (분산에 더하는 값)", "ε (added to σ²)"),
    "nx_report": ("고른 칸({where})을 normlib으로 계산한 값: {stat}, x̂ = {xhat}, y = {y}",
                  "the chosen cell ({where}) computed by normlib: {stat}, x̂ = {xhat}, y = {y}"),
    "nx_report_checked": ("탐색기가 보여 준 값 {count}개가 모두 normlib의 값과 같습니다(1보다 큰 값은 상대 오차, 나머지는 절대 오차 1e-12 이내).",
                          "the {count} values the explorer showed equal normlib's (within 1e-12: relative above 1, absolute below)."),
}
