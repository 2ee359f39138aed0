"""The strings chapter 11 prints and draws, in Korean and English: does a network need normalization?.

Kept apart from :mod:`normlib.book.i18n`, which merges every table and refuses a key defined twice;
the keys all start with ``ch11:``.
"""

# key: (Korean, English)
PAIRS = {
    # the trained transformer and its LayerNorms
    "ch11:model": ("작은 트랜스포머: 블록 {depth}개, 폭 {d}, LayerNorm {n}개, 매개변수 {params}개",
                   "the tiny transformer: {depth} blocks, width {d}, {n} LayerNorms, {params} parameters"),
    "ch11:trained": ("{steps}단계 학습한 뒤: 손실 {loss:.1e}, 정확도 {acc:.0%}",
                     "after {steps} training steps: loss {loss:.1e}, accuracy {acc:.0%}"),
    "ch11:caught": ("LayerNorm {layers}개의 입력을 잡았습니다. 층마다 토큰 {tokens}개 × 채널 {d}개 = 점 {points}개",
                    "caught the inputs of {layers} LayerNorms: per layer {tokens} tokens × {d} channels = {points} points"),
    "ch11:norm1": ("블록 {block}, 어텐션 앞", "block {block}, before attention"),
    "ch11:norm2": ("블록 {block}, MLP 앞", "block {block}, before the MLP"),
    "ch11:final": ("맨 끝, 헤드 앞", "last, before the head"),
    "ch11:layer_head": ("토큰 σ 범위 (최대÷최소)   상위 1% 토큰의 σ÷중앙값   최대 |x̂|   a·tanh(b·x) 오차÷직선 오차   위치",
                        "token σ range (max÷min)   top-1% tokens' σ ÷ median   largest |x̂|   a·tanh(b·x) error ÷ line error   where"),
    # the Korean columns are spaced for the book's font, where a Hangul syllable is about 1.5 columns wide
    "ch11:layer_row": ("{lo:5.2f}–{hi:5.2f} ({spread:.2f}배)   {owners:.2f}배                {top:.2f}      {ratio:.2f}                       {label}",
                       "{lo:5.2f}–{hi:5.2f} ({spread:.2f}×)      {owners:.2f}×                       {top:.2f}           {ratio:.2f}                             {label}"),
    "ch11:bound": ("입력이 아무리 커도 넘지 못하는 LayerNorm 출력의 한계: |x̂| ≤ √(d − 1) = {bound:.2f}\n"
                   "  한 원소만 {spike:g}이고 나머지는 0인 토큰: 그 원소의 x̂ = {reached:.2f}\n"
                   "  이 모델에서 가장 큰 |x̂|: {top:.2f} (한계의 {share:.0%})",
                   "the limit LayerNorm's output never exceeds, however large the input: |x̂| ≤ √(d − 1) = {bound:.2f}\n"
                   "  a token with one element at {spike:g} and the rest 0: that element's x̂ = {reached:.2f}\n"
                   "  the largest |x̂| in this model: {top:.2f} ({share:.0%} of the limit)"),
    "ch11:token_lines": ("{label}: σ가 가장 작은 토큰은 기울기 1/σ = {steep:.3f}인 직선, 가장 큰 토큰은 {flat:.3f}인 직선 위에 있습니다 (직선에서 벗어난 정도 {off})",
                         "{label}: the token with the smallest σ lies on a line of slope 1/σ = {steep:.3f}, the one with the largest on one of slope {flat:.3f} (off the line by {off})"),
    "ch11:ln_input": ("LayerNorm의 입력 x", "LayerNorm input x"),
    "ch11:ln_output": ("출력 (γ, β 전)", "output (before γ, β)"),
    "ch11:tanh_fit": ("맞춘 a·tanh(b·x)", "fitted a·tanh(b·x)"),
    "ch11:limit": ("출력의 한계 ±√(d − 1)", "the output's limit ±√(d − 1)"),
    "ch11:sigma_rank": ("토큰 σ의 순위 (0 가장 작음, 1 가장 큼)", "rank of the token's σ (0 smallest, 1 largest)"),
    # DyT, written out and in normlib
    "ch11:inline_vs_functional": ("공식을 그대로 옮긴 식과 normlib.functional.dyt의 최대 절대 차이:",
                                  "max abs difference, the formula written out vs normlib.functional.dyt:"),
    "ch11:functional_vs_module": ("normlib.functional.dyt와 normlib.DyT의 최대 절대 차이:",
                                  "max abs difference, normlib.functional.dyt vs normlib.DyT:"),
    "ch11:dyt_layer": ("normlib.DyT(32): α의 초깃값 {alpha}, 매개변수 {shapes}, 합 {n}개 (LayerNorm(32)은 {ln}개)",
                       "normlib.DyT(32): α starts at {alpha}, parameters {shapes}, {n} in all (LayerNorm(32): {ln})"),
    # LayerNorm against DyT over seeds
    "ch11:runs_head": ("                시드   정확도 99%에 처음 닿은 단계   마지막 50단계: 손실 중앙값   한 단계 사이 가장 큰 상승",
                       "                seed   first step at 99% accuracy   last 50 steps: median loss   largest rise between two steps"),
    "ch11:run_row": ("{name:15s} {seed}      {first:3d}                          {median:.1e}                      {rise:6.1f}배",
                     "{name:15s} {seed}      {first:3d}                          {median:.1e}                       {rise:6.1f}×"),
    "ch11:claims": ("모든 시드에서 확인: 둘 다 {steps}단계 안에 정확도 99%에 닿고, DyT가 먼저 닿습니다. 마지막 50단계에서 LayerNorm의 손실은 한 단계 사이에 {smooth}배 넘게 오른 적이 없고, DyT의 손실은 {bumpy}배 넘게 오른 적이 한 번 이상 있습니다.",
                    "checked for every seed: both reach 99% accuracy within {steps} steps, DyT first; over the last 50 steps the loss never rises by more than {smooth}× from one step to the next with LayerNorm, and always somewhere by more than {bumpy}× with DyT."),
    "ch11:lr_claim": ("학습률을 1/3로 낮춘 DyT(시드 0): 튐이 없습니다(가장 큰 상승 {rise:.2f}배 < {smooth}배). 정확도 99%에는 {first}단계에 닿습니다.",
                      "DyT with a third of the learning rate (seed 0): no bounces (largest rise {rise:.2f}× < {smooth}×); it reaches 99% accuracy at step {first}."),
    "ch11:scaled_input": ("입력을 10배로 키우면 출력의 최대 변화: LayerNorm {ln} (ε의 몫), DyT(α = 1/σ) {dyt:.2f}",
                          "multiplying the input by 10 changes the output by at most: LayerNorm {ln} (eps's share), DyT (α = 1/σ) {dyt:.2f}"),
    "ch11:alpha_head": ("학습된 α (시드 0, 1, 2)     α·σ (평균)   |αx| > 2인 입력 (평균)           위치",
                        "learned α (seeds 0, 1, 2)   α·σ (mean)   inputs with |αx| > 2 (mean)   where"),
    # no Hangul: the same in both languages (the pair test reads a Korean line back only through Hangul)
    "ch11:alpha_row": ("{a0:.2f}  {a1:.2f}  {a2:.2f}            {typical:4.2f}         {saturated:4.0%}                          {label}",
                       "{a0:.2f}  {a1:.2f}  {a2:.2f}            {typical:4.2f}         {saturated:4.0%}                          {label}"),
    "ch11:layer_index": ("층 (입력에서 출력 쪽으로)", "layer (from the input towards the output)"),
    "ch11:alpha_sigma": ("학습된 α × 입력의 σ", "learned α × the input's σ"),
    "ch11:seed": ("시드", "seed"),
    "ch11:linear_part": ("α·σ = 1: σ만 한 입력이 tanh가 거의 직선인 범위의 끝(αx = 1)에 놓인다",
                         "α·σ = 1: an input of size σ sits at the end of tanh's nearly straight part (αx = 1)"),
    # cost
    "ch11:passes_head": ("순전파: 읽기 + 쓰기 (연산 수)   역전파: 읽기 + 쓰기 (연산 수)    구현",
                         "forward: reads + writes (ops)   backward: reads + writes (ops)   implementation"),
    # no Hangul: the same in both languages
    "ch11:passes_row": ("{fr:2d} + {fw:2d} ({fk:2d})                    {br:2d} + {bw:2d} ({bk:2d})                     {name} · {variant}",
                        "{fr:2d} + {fw:2d} ({fk:2d})                    {br:2d} + {bw:2d} ({bk:2d})                     {name} · {variant}"),
    "ch11:dyt_ops": ("DyT 순전파의 연산: {ops}", "DyT's forward operations: {ops}"),
    "ch11:no_dyt_bench": ("여기에는 `make bench-dyt`의 결과가 없습니다(책의 저장소에서 실행하면 보입니다).",
                          "No `make bench-dyt` results here (they are in the book's repository)."),
    "ch11:last_dyt_bench": ("마지막 `make bench-dyt`: {date} UTC, {cpu}, 스레드 {threads}개, torch {torch}, 부하(1분 평균) {before:.1f} → {after:.1f}",
                            "last `make bench-dyt`: {date} UTC, {cpu}, {threads} threads, torch {torch}, load (1-minute average) {before:.1f} → {after:.1f}"),
    "ch11:kernels": ("커널 하나, {size}: 복사 {copy:.1f} ms, 곱셈 {mul:.1f} ms, tanh(x) {tanh:.1f} ms (복사의 {ratio:.1f}배)",
                     "one kernel, {size}: copy {copy:.1f} ms, multiply {mul:.1f} ms, tanh(x) {tanh:.1f} ms ({ratio:.1f}× the copy)"),
    "ch11:bench_group": ("{shape}, {mode}: 중앙값 시간, torch의 LayerNorm에 대한 비", "{shape}, {mode}: median time, ratio to torch's LayerNorm"),
    "ch11:bench_row": ("  {ms:7.1f} ms   {ratio:5.2f}배   {name} · {variant}", "  {ms:7.1f} ms   {ratio:5.2f}×   {name} · {variant}"),
    "ch11:like_for_like": ("  DyT ÷ LayerNorm: 읽기 쉬운 구현끼리 {readable:.2f}, 컴파일한 것끼리 {compiled:.2f}",
                           "  DyT ÷ LayerNorm: readable against readable {readable:.2f}, compiled against compiled {compiled:.2f}"),
    "ch11:ratio_to_ln": ("시간 ÷ torch의 LayerNorm (로그 눈금)", "time ÷ torch's LayerNorm (log scale)"),
    "ch11:live_row": ("{ms:7.2f} ms   {what}", "{ms:7.2f} ms   {what}"),
    "ch11:copy": ("복사", "copy"),
    "ch11:tanh": ("tanh(x) 하나", "tanh(x) alone"),
    # the other roads
    "ch11:ws_std": ("출력의 표준편차: 가중치 그대로 {raw:.2f}, 표준화한 가중치 {ws:.2f} (√(입력 수) = {root:.2f}), √(입력 수)로 한 번 더 나눈 가중치 {scaled:.2f}",
                    "std of the output: raw weights {raw:.2f}, standardized weights {ws:.2f} (√fan-in = {root:.2f}), divided by √fan-in as well {scaled:.2f}"),
    "ch11:ws_invariant": ("가중치에 10을 곱하고 3을 더해도 출력의 최대 절대 차이: {diff}; 샘플 하나만 넣어도: {alone}",
                          "max abs difference of the output after multiplying the weights by 10 and adding 3: {diff}; for one sample on its own: {alone}"),
    # exercises
    "ch11:what_if": ("토큰 {share:.0%}를 {factor}배로 키우면: a·tanh(b·x)의 오차÷직선의 오차 {before:.2f} → {after:.2f}",
                     "{share:.0%} of the tokens made {factor}× larger: a·tanh(b·x) error ÷ line error {before:.2f} → {after:.2f}"),
    "ch11:state_keys": ("state_dict 키: RMSNorm {rms}, DyT(bias=False) {dyt}", "state_dict keys: RMSNorm {rms}, DyT(bias=False) {dyt}"),
    "ch11:converted": ("RMSNorm {n}개를 DyT로 바꿨습니다: 매개변수 {before}개 → {after}개. 원래 state_dict는 strict=True로는 거부되고, strict=False로 불러오면 키 {n}개가 빠집니다(예: {example})",
                       "replaced {n} RMSNorms by DyTs: {before} → {after} parameters. The original state_dict is refused with strict=True; with strict=False, {n} keys are missing (e.g. {example})"),
    "ch11:alpha_by_scale": ("|x|의 95% 분위수 {q:6.2f}   → α₀ = 1/분위수 = {alpha:.3f}   {label}",
                            "95th percentile of |x| {q:6.2f}   → α₀ = 1/percentile = {alpha:.3f}   {label}"),
}
