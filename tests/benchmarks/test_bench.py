"""normlib_benchmarks: what the benchmark measures is measured right. No timing is asserted here
(timings are noisy and belong to `make bench`); these check that the variants compute the
same thing, the bytes model, the peak-memory helper, the table, the targets' reading and
the errors. The one torch.compile below is the slowest test (about 20 s on 2 cores; marked
`slow`, so `make test-fast` leaves it out)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import normlib_benchmarks as bench
from normlib_benchmarks import variants
from normlib_benchmarks.report import shape_label

TINY = {"layer_norm": (6, 16), "rms_norm": (6, 16), "batch_norm2d": (4, 3, 5, 5), "dyt": (6, 16)}


def outputs_and_grads(op, variant, mode="forward+backward"):
    """y and the gradients of x, γ, β that one benchmark call of ``variant`` produces."""
    case = variants.Case(op, TINY[op], mode, seed=1)
    fn = variants.function(op, variant)
    if mode == "forward":
        with torch.no_grad():
            return [case.forward(fn)], case.state
    y = case.forward(fn)
    y.backward(case.dy)
    return [y.detach()] + [t.grad for t in case.leaves], case.state


def assert_same(ours, ref, what):
    for k, (a, b) in enumerate(zip(ours, ref)):
        diff = (a - b).abs().max().item()
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-5), f"{what}, tensor {k}: max abs difference {diff:.2e}"


# ------------------------------------------------------------------ the package

def test_the_variant_table_has_every_op_and_variant():
    assert set(variants.IMPLEMENTATIONS) == {(op, v) for op in bench.ALL_OPS for v in bench.VARIANTS_OF[op]}
    assert set(variants.ARGUMENTS) == set(bench.ALL_OPS)
    # chapter 8's suite is unchanged by chapter 11's DyT, which has no hand-derived backward and no built-in
    assert bench.OPS == ("layer_norm", "rms_norm", "batch_norm2d") and bench.ALL_OPS == bench.OPS + ("dyt",)
    assert all(bench.VARIANTS_OF[op] == bench.VARIANTS for op in bench.OPS)
    assert bench.VARIANTS_OF["dyt"] == ("readable", "compiled")
    assert all(hasattr(bench, name) for name in bench.__all__)


def test_each_module_of_the_package_stays_small():
    lines = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in Path(bench.__file__).parent.glob("*.py")}
    assert len(lines) > 1 and max(lines.values()) < 400, lines


# ------------------------------------------------------------------ like is compared with like

@pytest.mark.parametrize("op", bench.OPS)
@pytest.mark.parametrize("variant", ["readable", "hand"])
@pytest.mark.parametrize("mode", bench.MODES)
def test_variants_compute_what_torch_computes(op, variant, mode):
    ours, state = outputs_and_grads(op, variant, mode)
    ref, ref_state = outputs_and_grads(op, "torch", mode)
    assert len(ours) == len(ref) == (1 if mode == "forward" else (3 if op == "rms_norm" else 4))
    assert_same(ours, ref, f"{op} {variant} {mode}")
    if op == "batch_norm2d":   # training mode: the running statistics move the same way
        assert_same(state, ref_state, f"{op} {variant} running statistics")


@pytest.mark.parametrize("mode", bench.MODES)
def test_dyt_computes_its_formula_with_alpha_a_leaf(mode):
    """The DyT case: y = γ·tanh(α x) + β written out here, α = 0.5 a leaf whose gradient the
    benchmark computes too (forward+backward: x, γ, β and α)."""
    ours, alpha = outputs_and_grads("dyt", "readable", mode)
    case = variants.Case("dyt", TINY["dyt"], mode, seed=1)
    leaves = [t.detach().clone().requires_grad_(True) for t in (case.x, case.weight, case.bias)]
    a = torch.tensor([0.5], requires_grad=True)
    x, w, b = leaves
    y = w * torch.tanh(a * x) + b
    ref = [y.detach()]
    if mode == "forward+backward":
        y.backward(case.dy)
        ref += [x.grad, w.grad, b.grad, a.grad]
    assert len(ours) == len(ref) == (1 if mode == "forward" else 5)
    assert_same(ours, ref, f"dyt {mode}")
    assert alpha.shape == (1,) and alpha.item() == 0.5


@pytest.mark.slow   # torch.compile with inductor: 20 s on 2 cores; not in `make test-fast`
def test_compiled_layer_norm_computes_what_torch_computes():
    ours, _ = outputs_and_grads("layer_norm", "compiled")
    ref, _ = outputs_and_grads("layer_norm", "torch")
    assert_same(ours, ref, "compiled layer_norm forward+backward")


def test_inputs_are_seeded_and_not_trivial():
    a, b = (variants.Case("layer_norm", (4, 8), "forward+backward") for _ in range(2))
    assert torch.equal(a.x, b.x) and torch.equal(a.dy, b.dy)
    assert not torch.equal(a.weight, torch.ones(8)) and not torch.equal(a.bias, torch.zeros(8))
    assert a.x.dtype == torch.float32 and a.x.device.type == "cpu"


# ------------------------------------------------------------------ the models and the helpers

def test_minimal_bytes_by_hand():
    # (3, 5) float32: 15 elements of 4 bytes = 60 bytes per pass.
    # forward: read x, write y = 120; forward+backward: + read x, read dy, write dx = 300.
    assert bench.minimal_bytes((3, 5), "forward") == 120
    assert bench.minimal_bytes((3, 5), "forward+backward") == 300
    assert bench.minimal_bytes((3, 5), "forward", element_size=8) == 240


def test_gbps_follows_from_the_bytes_model():
    row = bench.measure("rms_norm", "torch", (8, 32), "forward+backward", repeats=2, warmup=0, bandwidth=4.0)
    assert row.gbps == pytest.approx(5 * 8 * 32 * 4 / row.seconds / 1e9)
    assert row.fraction == pytest.approx(row.gbps / 4.0)
    assert row.gflops == pytest.approx(13 * 8 * 32 / row.seconds / 1e9)
    assert len(row.times) == 2 and row.seconds > 0


def test_peak_memory_sees_a_known_allocation():
    four_mb = 4 * 2 ** 20

    def allocate():
        t = torch.empty(four_mb // 4)
        t.fill_(1.0)

    peak = bench.peak_memory(allocate)
    assert four_mb <= peak < 3 * four_mb


def test_peak_memory_is_the_highest_point_in_time_order():
    mib = 2 ** 20

    def steps():
        a = torch.empty(4 * mib // 4)      # 4 MiB
        b = torch.empty(4 * mib // 4)      # 8 MiB live
        del a                              # 4 MiB live
        c = torch.empty(8 * mib // 4)      # 12 MiB live: the peak
        return b, c

    assert bench.peak_memory(steps) == 12 * mib


def test_saved_bytes_and_peak_are_recorded_per_mode():
    rows = bench.compare("layer_norm", (4, 8), "forward+backward", variants=("hand", "torch"), repeats=1, warmup=0)
    assert all(r.saved_bytes > 0 and r.peak_bytes > 0 for r in rows)
    row = bench.measure("layer_norm", "hand", (4, 8), "forward", repeats=1, warmup=0)
    assert row.saved_bytes is None and row.compile_seconds is None


def test_affine_false_leaves_out_gamma_and_beta():
    with_params = bench.compare("layer_norm", (4, 8), "forward+backward", variants=("hand",), repeats=1, warmup=0)
    without = bench.compare("layer_norm", (4, 8), "forward+backward", variants=("hand",), repeats=1, warmup=0,
                            affine=False)
    # hand-derived backward saves x (4·8 floats), μ and 1/σ (4 each), and γ (8) only with the affine step
    assert with_params[0].saved_bytes == 4 * (32 + 4 + 4 + 8)
    assert without[0].saved_bytes == 4 * (32 + 4 + 4)


# ------------------------------------------------------------------ the table, the targets, a run

def test_table_has_every_row_and_torch_over_itself_is_one():
    rows = bench.compare("layer_norm", (4, 8), "forward", variants=("readable", "hand", "torch"), repeats=2)
    rows += bench.compare("batch_norm2d", (2, 3, 4, 4), "forward+backward", variants=("hand", "torch"), repeats=2)
    table = bench.markdown_table(rows, bandwidth=10.0)
    body = [line.split(" | ") for line in table.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert [(cells[0][2:], cells[1], cells[2], cells[3]) for cells in body] == \
        [(r.op, shape_label(r.shape), r.mode, r.variant) for r in rows]
    header = table.splitlines()[0].split(" | ")
    for cells in body:
        if cells[3] == "torch":
            assert cells[header.index("time ÷ torch")] == "1.00"
            assert cells[header.index("peak ÷ torch")] == "1.00"


def fake_row(op, variant, shape, mode, seconds, saved=None, fraction=0.6):
    return bench.Row(op=op, variant=variant, shape=shape, mode=mode, seconds=seconds, times=[seconds],
                     gbps=fraction * 10.0, gflops=1.0, fraction=fraction, peak_bytes=100, saved_bytes=saved)


def test_targets_read_met_and_missed():
    fb = "forward+backward"
    rows = [
        fake_row("layer_norm", "torch", (8, 64), fb, 1.0, saved=1000, fraction=0.7),
        fake_row("layer_norm", "hand", (8, 64), fb, 3.0, saved=1040),          # 1.04 × torch: met
        fake_row("layer_norm", "compiled", (8, 64), fb, 1.5, saved=1000, fraction=0.45),  # 1.5 ×: missed
        fake_row("layer_norm", "torch", (4, 64), fb, 1.0, saved=500, fraction=0.9),      # smaller size
        fake_row("layer_norm", "hand", (4, 64), fb, 1.0, saved=600),           # 1.2 × torch: missed
        fake_row("layer_norm", "compiled", (4, 64), fb, 1.2, saved=500, fraction=0.1),
    ]
    result = {t["name"]: t for t in bench.targets(rows)}
    memory, speed, bandwidth = result.values()
    assert not memory["met"] and [round(v, 2) for *_, v in memory["values"]] == [1.04, 1.2]
    assert not speed["met"] and [round(v, 2) for *_, v in speed["values"]] == [1.5, 1.2]
    # only the largest size (8 × 64) counts for the bandwidth target: torch 70 %, compiled 45 %
    assert not bandwidth["met"] and [round(v, 2) for *_, v in bandwidth["values"]] == [0.7, 0.45]
    text = bench.targets_markdown(rows)
    assert "MISSED" in text and "missed by 15%" in text and "missed by 5 points" in text


def test_run_with_tiny_sizes_returns_every_row_and_reports_progress():
    calls = []
    sizes = {"layer_norm": [(4, 8), (4, 16)], "batch_norm2d": [(2, 3, 4, 4)]}
    res = bench.run(sizes, variants=("readable", "hand", "torch"), repeats=1, warmup=0,
                    bandwidth=10.0, gflops=100.0, progress=lambda done, total, what: calls.append((done, total)))
    assert len(res.rows) == 3 * 2 * 3      # shapes × modes × variants
    assert calls[-1][0] == calls[-1][1] and [d for d, _ in calls] == sorted(d for d, _ in calls)
    again = bench.Results.from_json(res.to_json())
    assert again.rows == res.rows and again.machine == res.machine
    assert {"cpu", "threads", "torch", "date"} <= set(json.loads(res.to_json())["machine"])
    quiet = bench.run({"rms_norm": [(4, 8)]}, variants=("torch",), modes=("forward",), repeats=1, warmup=0,
                      bandwidth=10.0, gflops=100.0, progress=False)
    assert len(quiet.rows) == 1


def test_figures_have_a_panel_per_op_and_mode():
    import matplotlib.legend
    import matplotlib.pyplot as plt

    rows = bench.compare("layer_norm", (4, 8), "forward", variants=("hand", "torch"), repeats=1)
    rows += bench.compare("rms_norm", (4, 8), "forward+backward", variants=("hand", "torch"), repeats=1)
    fig = bench.plot(rows, lang="ko")
    assert len(fig.axes) == 2 * 2
    plt.close(fig)
    fig = bench.roofline(rows, bandwidth=10.0, gflops=100.0)
    assert len(fig.axes[0].collections) == len(rows)
    # the legends give every marker shape one meaning (an op): colours and modes are swatches
    from matplotlib.lines import Line2D
    legends = [a for a in fig.axes[0].get_children() if isinstance(a, matplotlib.legend.Legend)]
    markers = [h.get_marker() for legend in legends for h in legend.legend_handles if isinstance(h, Line2D)]
    assert markers and len(markers) == len(set(markers)), markers
    plt.close(fig)


# ------------------------------------------------------------------ bad inputs

@pytest.mark.parametrize("kwargs,expected", [
    (dict(op="group_norm"), "op must be one of 'layer_norm', 'rms_norm', 'batch_norm2d', 'dyt'; got 'group_norm'"),
    (dict(op="dyt", variant="hand"), "variant must be one of 'readable', 'compiled'; got 'hand'"),
    (dict(variant="fast"), "variant must be one of 'readable', 'hand', 'compiled', 'torch'; got 'fast'"),
    (dict(mode="backward"), "mode must be one of 'forward', 'forward+backward'; got 'backward'"),
    (dict(op="batch_norm2d", shape=(4, 8)), "batch_norm2d expects a shape (N, C, H, W); got (4, 8)"),
    (dict(shape=(8,)), "layer_norm expects a shape (rows, D)"),
    (dict(repeats=0), "repeats must be >= 1"),
])
def test_bad_inputs_name_what_was_expected_and_received(kwargs, expected):
    args = dict(op="layer_norm", variant="torch", shape=(4, 8), mode="forward", repeats=1, warmup=0)
    args.update(kwargs)
    with pytest.raises(ValueError) as err:
        bench.measure(**args)
    assert expected in str(err.value)


def test_run_checks_before_measuring():
    with pytest.raises(ValueError, match="got 'layernorm'"):
        bench.run({"layernorm": [(4, 8)]}, bandwidth=1.0, gflops=1.0, progress=False)


# ------------------------------------------------------------------ across ops, and counting passes

def test_compare_ops_times_each_pair_on_its_own_ops_input():
    rows = bench.compare_ops([("dyt", "readable"), ("layer_norm", "torch"), ("rms_norm", "readable")], (8, 16),
                             "forward+backward", repeats=3, warmup=1, bandwidth=10.0)
    assert [(r.op, r.variant) for r in rows] == [("dyt", "readable"), ("layer_norm", "torch"), ("rms_norm", "readable")]
    assert all(len(r.times) == 3 and r.seconds > 0 and r.fraction is not None for r in rows)
    assert all(r.saved_bytes and r.saved_bytes >= 8 * 16 * 4 for r in rows)   # each keeps at least x for its backward
    with pytest.raises(ValueError, match="got none"):
        bench.compare_ops([], (8, 16), "forward")
    with pytest.raises(ValueError, match="got 'torch'"):
        bench.compare_ops([("dyt", "torch")], (8, 16), "forward")


def test_passes_are_counted_by_hand():
    """Chapter 8's counts, by hand: a copy reads once and writes once; a view moves nothing; torch's
    fused LayerNorm is 1 read + 1 write forward and dy, x read + dx written backward; the readable one
    reads 8 times and writes 6 (chapter 8 lists its eight operations; the square ``c * c`` reads its
    one tensor once)."""
    import normlib

    x = torch.randn(32, 16, requires_grad=True)
    w, b = torch.rand(16, requires_grad=True), torch.randn(16, requires_grad=True)
    copy, _ = bench.passes(lambda: x.clone(), [x])
    assert (copy.reads, copy.writes, copy.kernels) == (1, 1, 1)
    with bench.Traffic(x.numel()) as views:
        x.view(16, 32).t().detach()
    assert views.total == 0 and views.ops == []
    fwd, bwd = bench.passes(lambda: torch.nn.functional.layer_norm(x, (16,), w, b), [x, w, b])
    assert (fwd.reads, fwd.writes, bwd.reads, bwd.writes) == (1, 1, 2, 1)
    fwd, _ = bench.passes(lambda: normlib.functional.layer_norm(x, (16,), w, b), [x, w, b])
    assert (fwd.reads, fwd.writes, fwd.kernels) == (8, 6, 8)
    with bench.Traffic(x.numel()) as square:
        c = x.detach()
        c * c                                      # one tensor, given twice: one read
    assert (square.reads, square.writes) == (1, 1)
    fwd, _ = bench.passes(lambda: normlib.functional.dyt(x, 0.5, w, b), [x, w, b])   # α·x, tanh, ·γ, +β
    assert (fwd.reads, fwd.writes, fwd.kernels) == (4, 4, 4)
    with pytest.raises(ValueError, match="got none"):
        bench.passes(lambda: x, [])


def test_a_benchmark_run_is_saved_where_the_chapters_read_it(tmp_path, capsys):
    """save_results writes <name>.json (a dict with the given indent, or JSON text as given) and
    <name>.md ending in one newline, prints the report, and committed_results reads the JSON back."""
    from normlib_benchmarks.report import committed_results, save_results

    save_results(tmp_path / "benchmarks" / "results", "fold", {"rows": [1, 2], "cpu": "é"}, "# fold\n", indent=1)
    save_results(tmp_path / "benchmarks" / "results", "dyt", '{"b": 1}', "# dyt")
    folder = tmp_path / "benchmarks" / "results"
    assert (folder / "fold.json").read_text(encoding="utf-8") == '{\n "rows": [\n  1,\n  2\n ],\n "cpu": "é"\n}\n'
    assert (folder / "fold.md").read_text(encoding="utf-8") == "# fold\n"
    assert (folder / "dyt.json").read_text(encoding="utf-8") == '{"b": 1}\n'
    assert (folder / "dyt.md").read_text(encoding="utf-8") == "# dyt\n"
    assert capsys.readouterr().out == "# fold\n\n# dyt\n"
    assert committed_results("fold", "bench-fold", tmp_path / "chapters" / "ko") == {"rows": [1, 2], "cpu": "é"}


# ------------------------------------------------------------------ chapter 8's checks of a run (issue 39)

def test_size_check_flags_a_pair_that_did_not_grow_and_keeps_its_rows():
    """The first reference run's 8192×768 rows took longer than 8192×1024: such a pair is listed and
    both its rows are marked ⚠ in the table, and nothing is dropped."""
    rows = [fake_row("layer_norm", "torch", (8, 64), "forward", 2.0),
            fake_row("layer_norm", "torch", (16, 64), "forward", 1.0),      # faster than the smaller size
            fake_row("layer_norm", "torch", (32, 64), "forward", 3.0),
            fake_row("layer_norm", "readable", (8, 64), "forward", 1.0),
            fake_row("layer_norm", "readable", (16, 64), "forward", 2.0)]
    flagged = bench.report.size_check(rows)
    assert [(d["variant"], d["shape"], d["larger"]) for d in flagged] == [("torch", (8, 64), (16, 64))]
    table = bench.markdown_table(rows, bandwidth=10.0)
    marked = [line.split(" | ")[:4] for line in table.splitlines() if "⚠" in line]
    assert marked == [["| layer_norm", "8×64", "forward", "torch"], ["| layer_norm", "16×64", "forward", "torch"]]
    assert len([line for line in table.splitlines() if line.startswith("| layer_norm")]) == len(rows)
    growing = [fake_row("rms_norm", "hand", (n, 64), "forward+backward", n / 8) for n in (8, 16, 32)]
    assert bench.report.size_check(growing) == []


def test_in_core_ceiling_by_hand():
    # BatchNorm2d forward: 8 FLOPs per element, 2 dependent additions per element (mean, variance)
    assert bench.work.in_core_ceiling("batch_norm2d", "forward", 0.5) == pytest.approx(8 / (2 * 0.5))
    assert bench.work.in_core_ceiling("batch_norm2d", "forward", 0.5, threads=2) == pytest.approx(16.0)
    assert bench.work.in_core_ceiling("batch_norm2d", "forward+backward", 1.0) == pytest.approx(21 / 2)
    with pytest.raises(ValueError, match="got 'layer_norm'"):
        bench.work.in_core_ceiling("layer_norm", "forward", 1.0)
    with pytest.raises(ValueError, match="ns_per_add=0"):
        bench.work.in_core_ceiling("batch_norm2d", "forward", 0)


def test_roofline_draws_the_in_core_ceilings_across_batch_norms_forward_point():
    import matplotlib.pyplot as plt

    bn = bench.compare("batch_norm2d", (2, 3, 4, 4), "forward", variants=("torch",), repeats=1)
    ln = bench.compare("layer_norm", (4, 8), "forward", variants=("torch",), repeats=1)
    fig = bench.roofline(bn + ln, bandwidth=10.0, gflops=100.0, ceilings={"serial": 1.0, "simd": 0.05})
    ax = fig.axes[0]
    levels = sorted(line.get_ydata()[0] for line in ax.lines[1:])
    assert len(ax.lines) == 3 and levels == pytest.approx([4.0, 80.0])       # 8 FLOP ÷ (2 × ns)
    assert any("4.0 GFLOP/s" in t.get_text() for t in ax.texts)
    plt.close(fig)
    for rows, ceilings in ((ln, {"serial": 1.0}), (bn, None)):       # no BatchNorm point, or no ceiling given
        fig = bench.roofline(rows, bandwidth=10.0, gflops=100.0, ceilings=ceilings)
        assert len(fig.axes[0].lines) == 1
        plt.close(fig)


def test_frozen_affine_keeps_gamma_and_beta_without_their_gradients():
    fn = variants.function("layer_norm", "torch")
    learned = variants.Case("layer_norm", (4, 8), "forward+backward")
    frozen = variants.Case("layer_norm", (4, 8), "forward+backward", affine="frozen")
    bare = variants.Case("layer_norm", (4, 8), "forward+backward", affine=False)
    y = frozen.forward(fn)
    assert torch.equal(y, learned.forward(fn)) and not torch.equal(y, bare.forward(fn))
    y.backward(frozen.dy)
    assert frozen.x.grad is not None and frozen.weight.grad is None and frozen.bias.grad is None
    with pytest.raises(ValueError, match="got 'yes'"):
        variants.Case("layer_norm", (4, 8), "forward", affine="yes")


def test_variant_passes_are_chapter_8s_counts():
    from normlib_benchmarks.traffic import variant_passes

    # torch's LayerNorm: x read, y written; backward x and dy read, dx written. The readable forward:
    # 8 reads and 6 writes (test_passes_are_counted_by_hand lists them).
    assert variant_passes("layer_norm", "torch") == (2, 5)
    assert variant_passes("layer_norm", "readable")[0] == 14
    with pytest.raises(ValueError, match="got 'compiled'"):
        variant_passes("layer_norm", "compiled")
