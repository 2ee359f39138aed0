"""Every slip the assignment texts name, written as a student writes it, against the message it gets.

Each row of ``SLIPS`` is one wrong answer: the assignment's own solution (``classroom/course/src``, the
``### BEGIN SOLUTION`` region a student replaces) with a few lines changed the way a student gets
them wrong. The notebook of each language is built as ``make assignments`` builds it
(``classroom.tools.build_assignments``); its setup cell, the answer cells and then every test cell, hidden
tests included (as grading runs them), are executed in order in one namespace, as a kernel runs
them after Run All. A row says, for each test cell, the diagnoses its failure must name, exactly
(every other diagnosis is one it must not get), and the cells not named must pass. So the table
checks both halves of the students' page's promise: a slip is named, and a diagnosis appears
only when the result equals that slip.

The expected outcome of each row comes from the slip and from the assignment's own text ("an
answer that puts the population variance into the running variance loses tests 2 and 4 only"),
never from the checker's output.
"""

from __future__ import annotations

import contextlib
import io
import linecache
from dataclasses import dataclass, field

import pytest
import torch

from classroom.tools import build_assignments
from helpers.text import has_hangul
from normlib_classroom._report import CheckFailed

LANGS = ("ko", "en")
OWN_WORDS = {"delegated", "should_raise"}      # reported as what happened, without a "Diagnosis:" line


@dataclass(frozen=True)
class Slip:
    name: str
    stem: str
    edits: tuple                 # (lines of the solution, what the student wrote instead)
    fails: dict                  # test cell's grade id -> the diagnoses its failure names, exactly
    words: dict = field(default_factory=dict)   # lang -> words the message must hold (the new diagnoses)


def slip(name, stem, edits, fails, words=None) -> Slip:
    return Slip(name, stem, tuple(edits), {k: frozenset(v) for k, v in fails.items()}, words or {})


BN_UPDATE = ("self.running_mean.mul_(1 - m).add_(m * mean)\n"
             "                self.running_var.mul_(1 - m).add_(m * var * n / (n - 1))")
BN_MOMENTUM = "m = 1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum"
BN_EVAL = ("        else:\n"
           "            mean, var = self.running_mean, self.running_var\n")

SLIPS = [
    # ---------------------------------------------------------------- assignment 1: LayerNorm
    slip("unbiased variance (x.var())", "01_layernorm",
         [("var = ((x - mean) ** 2).mean(dim=dims, keepdim=True)", "var = x.var(dim=dims, keepdim=True)")],
         {"test_layer_norm_stats": {"unbiased"}, "test_layer_norm_stats_forms": {"unbiased"},
          "test_layer_norm": {"unbiased"}, "test_layer_norm_forms": {"unbiased"}}),
    slip("keepdim forgotten", "01_layernorm",
         [("mean = x.mean(dim=dims, keepdim=True)\n    var = ((x - mean) ** 2).mean(dim=dims, keepdim=True)",
           "mean = x.mean(dim=dims)\n    var = x.var(dim=dims, unbiased=False)")],
         {"test_layer_norm_stats": {"keepdim"}, "test_layer_norm_stats_forms": {"keepdim"},
          "test_layer_norm": set(), "test_layer_norm_forms": set()}),
    slip("an int normalized_shape not handled (3 of 5)", "01_layernorm",
         [("    if isinstance(normalized_shape, int):\n        normalized_shape = (normalized_shape,)\n", "")],
         {"test_layer_norm_stats_forms": set(), "test_layer_norm_forms": set()}),
    slip("std + eps", "01_layernorm",
         [("y = (x - mean) / torch.sqrt(var + eps)", "y = (x - mean) / (torch.sqrt(var) + eps)")],
         {"test_layer_norm": {"std_eps"}, "test_layer_norm_forms": {"std_eps"}}),
    slip("eps left out", "01_layernorm",
         [("y = (x - mean) / torch.sqrt(var + eps)", "y = (x - mean) / torch.sqrt(var)")],
         {"test_layer_norm": {"no_eps"}, "test_layer_norm_forms": {"no_eps"}}),
    slip("eps fixed at 1e-5", "01_layernorm",
         [("y = (x - mean) / torch.sqrt(var + eps)", "y = (x - mean) / torch.sqrt(var + 1e-5)")],
         {"test_layer_norm": {"fixed_eps"}, "test_layer_norm_forms": {"fixed_eps"}}),
    slip("γ and β left out", "01_layernorm",
         [("    if weight is not None:\n        y = y * weight\n    if bias is not None:\n        y = y + bias\n", "")],
         {"test_layer_norm": {"no_affine"}, "test_layer_norm_forms": {"no_affine"}}),
    slip("the last axis only", "01_layernorm",
         [("dims = tuple(range(x.dim() - len(normalized_shape), x.dim()))", "dims = (-1,)")],
         {"test_layer_norm_stats": {"axes"}, "test_layer_norm_stats_forms": {"axes"},
          "test_layer_norm": {"axes"}, "test_layer_norm_forms": {"axes"}}),

    # ---------------------------------------------------------------- assignment 2: BatchNorm
    slip("forgot the momentum: running statistics overwritten by the batch's", "02_batchnorm",
         [(BN_UPDATE, "self.running_mean.copy_(mean)\n"
                      "                self.running_var.copy_(x.var(dim=dims))")],
         {"test_running": {"running_overwritten"}, "test_cumulative": {"running_overwritten"}},
         {"ko": ["덮어썼습니다", "momentum"], "en": ["overwrote", "momentum"]}),
    slip("momentum hard-coded to 0.1", "02_batchnorm",
         [(BN_MOMENTUM, "m = 1.0 / float(self.num_batches_tracked) if self.momentum is None else 0.1")],
         {"test_running": {"momentum_fixed"}},
         {"ko": ["0.1", "self.momentum"], "en": ["0.1", "self.momentum"]}),
    slip("momentum 0.1 written into the update", "02_batchnorm",
         [(BN_UPDATE, "self.running_mean.mul_(0.9).add_(0.1 * mean)\n"
                      "                self.running_var.mul_(0.9).add_(0.1 * var * n / (n - 1))")],
         {"test_running": {"momentum_fixed"}, "test_cumulative": {"momentum_none_fixed"}}),
    slip("Keras's momentum (weight of the old value)", "02_batchnorm",
         [(BN_UPDATE, "self.running_mean.mul_(m).add_((1 - m) * mean)\n"
                      "                self.running_var.mul_(m).add_((1 - m) * var * n / (n - 1))")],
         {"test_running": {"momentum_swapped"}, "test_cumulative": {"momentum_swapped"}}),
    slip("population variance into running_var (tests 2 and 4 only)", "02_batchnorm",
         [("add_(m * var * n / (n - 1))", "add_(m * var)")],
         {"test_running": {"running_biased"}, "test_cumulative": {"running_biased"}}),
    slip("momentum=None not handled", "02_batchnorm",
         [(BN_MOMENTUM, "m = self.momentum")],
         {"test_cumulative": set()}),
    slip("momentum=None weighed 1/(k + 1)", "02_batchnorm",
         [(BN_MOMENTUM, "m = 1.0 / (float(self.num_batches_tracked) + 1) if self.momentum is None else self.momentum")],
         {"test_cumulative": {"momentum_none_shifted"}}),
    slip("running statistics never updated", "02_batchnorm",
         [(BN_UPDATE, "pass")],
         {"test_running": {"not_updated"}, "test_cumulative": {"not_updated"}}),
    slip("evaluation mode with the batch's statistics", "02_batchnorm",
         [(BN_EVAL, ""), ("        if self.training:\n            mean = x.mean(dim=dims)\n"
                          "            var = ((x - mean.reshape(view)) ** 2).mean(dim=dims)\n"
                          "            n = x.numel() // x.shape[1]\n",
                          "        mean = x.mean(dim=dims)\n"
                          "        var = ((x - mean.reshape(view)) ** 2).mean(dim=dims)\n"
                          "        n = x.numel() // x.shape[1]\n"
                          "        if self.training:\n")],
         {"test_eval": {"eval_batch"}}),
    slip("no evaluation mode at all: batch statistics, and updates, in both modes", "02_batchnorm",
         [("        if self.training:\n"
           "            mean = x.mean(dim=dims)\n"
           "            var = ((x - mean.reshape(view)) ** 2).mean(dim=dims)\n"
           "            n = x.numel() // x.shape[1]\n"
           "            with torch.no_grad():\n"
           "                self.num_batches_tracked += 1\n"
           "                " + BN_MOMENTUM + "\n"
           "                " + BN_UPDATE + "\n" + BN_EVAL,
           "        mean = x.mean(dim=dims)\n"
           "        var = ((x - mean.reshape(view)) ** 2).mean(dim=dims)\n"
           "        n = x.numel() // x.shape[1]\n"
           "        with torch.no_grad():\n"
           "            self.num_batches_tracked += 1\n"
           "            " + BN_MOMENTUM + "\n"
           "            self.running_mean.mul_(1 - m).add_(m * mean)\n"
           "            self.running_var.mul_(1 - m).add_(m * var * n / (n - 1))\n")],
         {"test_eval": {"eval_batch"}, "test_running": {"eval_updated"}, "test_cumulative": {"eval_updated"}}),
    slip("unbiased variance for the output (and the running variance)", "02_batchnorm",
         [("var = ((x - mean.reshape(view)) ** 2).mean(dim=dims)", "var = x.var(dim=dims)"),
          ("add_(m * var * n / (n - 1))", "add_(m * var)")],
         {"test_train": {"unbiased"}}),
    # (N, C, L): the statistics of shape (C, L) cannot be viewed as (1, C, 1); the message names the line
    slip("statistics over the batch axis alone", "02_batchnorm",
         [("dims = (0, *range(2, x.dim()))", "dims = (0,)")],
         {"test_train": set(), "test_running": set(), "test_cumulative": set()},
         {"ko": ["RuntimeError", "번째 줄"], "en": ["RuntimeError", "raised at line"]}),
    slip("std + eps", "02_batchnorm",
         [("torch.sqrt(var.reshape(view) + self.eps)", "(torch.sqrt(var.reshape(view)) + self.eps)")],
         {"test_train": {"std_eps"}, "test_eval": {"std_eps"}}),
    slip("γ and β left out", "02_batchnorm",
         [("return x_hat * self.weight.reshape(view) + self.bias.reshape(view)", "return x_hat")],
         {"test_train": {"no_affine"}, "test_eval": {"no_affine"}}),
    slip("evaluation mode delegated to torch", "02_batchnorm",
         [(BN_EVAL, "        else:\n"
                    "            return torch.nn.functional.batch_norm(x, self.running_mean, self.running_var,\n"
                    "                                                  self.weight, self.bias, False, 0.0, self.eps)\n")],
         {"test_running": {"delegated"}, "test_eval": {"delegated"}, "test_cumulative": {"delegated"}},
         {"ko": ["평가 모드"], "en": ["evaluation mode"]}),

    # ---------------------------------------------------------------- assignment 3: backward
    slip("∂L/∂x without −mean(g)", "03_backward",
         [("grad_x = rstd * (g - g.mean(dim=dims, keepdim=True) - x_hat", "grad_x = rstd * (g - x_hat")],
         {"test_layer_norm_backward": {"dx_no_mean"}, "test_layer_norm_backward_forms": {"dx_no_mean"},
          "test_batch_norm_backward": {"dx_no_mean"}}),
    slip("∂L/∂x without −x̂·mean(g·x̂)", "03_backward",
         [(" - x_hat * (g * x_hat).mean(dim=dims, keepdim=True))", ")")],
         {"test_layer_norm_backward": {"dx_no_var"}, "test_layer_norm_backward_forms": {"dx_no_var"},
          "test_batch_norm_backward": {"dx_no_var"}}),
    slip("∂L/∂x as the direct term alone", "03_backward",
         [("grad_x = rstd * (g - g.mean(dim=dims, keepdim=True) - x_hat * (g * x_hat).mean(dim=dims, keepdim=True))",
           "grad_x = rstd * g")],
         {"test_layer_norm_backward": {"dx_direct"}, "test_layer_norm_backward_forms": {"dx_direct"},
          "test_batch_norm_backward": {"dx_direct"}}),
    slip("∂L/∂x from ∂L/∂y instead of γ·∂L/∂y", "03_backward",
         [("g = grad_output * weight\n", "g = grad_output\n")],
         {"test_layer_norm_backward": {"dx_no_gamma"}, "test_layer_norm_backward_forms": {"dx_no_gamma"}}),
    slip("∂L/∂γ without x̂", "03_backward",
         [("grad_weight = (grad_output * x_hat).sum(dim=leading)", "grad_weight = grad_output.sum(dim=leading)")],
         {"test_layer_norm_backward": {"dgamma_no_xhat"}, "test_layer_norm_backward_forms": {"dgamma_no_xhat"}}),
    slip("∂L/∂γ with x for x̂", "03_backward",
         [("grad_weight = (grad_output * x_hat).sum(dim=leading)", "grad_weight = (grad_output * x).sum(dim=leading)")],
         {"test_layer_norm_backward": {"dgamma_x"}, "test_layer_norm_backward_forms": {"dgamma_x"}}),
    slip("∂L/∂β with x̂", "03_backward",
         [("grad_bias = grad_output.sum(dim=leading)", "grad_bias = (grad_output * x_hat).sum(dim=leading)")],
         {"test_layer_norm_backward": {"dbeta_xhat"}, "test_layer_norm_backward_forms": {"dbeta_xhat"}}),
    slip("autograd inside backward", "03_backward",
         [("        x_hat = (x - mean) * rstd\n        g = grad_output * weight\n",
           "        with torch.enable_grad():\n"
           "            xr, wr, br = x.detach().requires_grad_(), weight.detach().requires_grad_(), "
           "weight.detach().requires_grad_()\n"
           "            out = (xr - xr.mean(dim=dims, keepdim=True)) * torch.rsqrt(xr.var(dim=dims, keepdim=True, "
           "unbiased=False) + 1e-5) * wr\n"
           "            return torch.autograd.grad(out, (xr,), grad_output)[0], None, None, None, None\n"
           "        x_hat = (x - mean) * rstd\n        g = grad_output * weight\n")],
         {"test_layer_norm_backward": {"delegated"}, "test_layer_norm_backward_forms": {"delegated"}}),
    slip("an int normalized_shape not handled", "03_backward",
         [("        if isinstance(normalized_shape, int):\n            normalized_shape = (normalized_shape,)\n", "")],
         {"test_layer_norm_backward_forms": set()}),

    # ---------------------------------------------------------------- assignment 4: axes, GroupNorm
    slip("InstanceNorm on (N, C) answered instead of refused", "04_axes_groupnorm",
         [('if method == "instance" and spatial:', 'if method == "instance":')],
         {"test_reduction_axes_invalid": {"should_raise"}}),
    slip("BatchNorm on (B, L, D) over dim 0 alone", "04_axes_groupnorm",
         [('"batch": (0, 1)', '"batch": (0,)')],
         {"test_reduction_axes": {"dim0"}}),
    slip("groups of every G-th channel", "04_axes_groupnorm",
         [("return [tuple(range(g * size, (g + 1) * size)) for g in range(num_groups)]",
           "return [tuple(range(g, num_channels, num_groups)) for g in range(num_groups)]")],
         {"test_channel_groups": {"interleaved"}, "test_group_norm": {"interleaved"}}),
    slip("GroupNorm as InstanceNorm (one group per channel)", "04_axes_groupnorm",
         [("for channels in channel_groups(x.shape[1], num_groups):",
           "for channels in channel_groups(x.shape[1], x.shape[1]):")],
         {"test_group_norm": {"axes"}}),
    slip("uneven channels not refused", "04_axes_groupnorm",
         [('    if num_channels % num_groups != 0:\n'
           '        raise ValueError(f"{num_channels} channels do not split into {num_groups} equal groups")\n', "")],
         {"test_channel_groups": {"should_raise"}}),

    # ---------------------------------------------------------------- assignment 5: folding
    slip("the convolution's bias left out", "05_fold",
         [("b = conv.bias if conv.bias is not None else torch.zeros_like(s)", "b = torch.zeros_like(s)")],
         {"test_fold": {"fold_no_conv_bias"}}),
    slip("batch statistics instead of the running ones", "05_fold",
         [("    return folded\n",
           "    def forward(x):                  # normalize each batch with its own mean and variance\n"
           "        y = conv(x)\n"
           "        dims, view = (0, *range(2, y.dim())), (1, -1) + (1,) * (y.dim() - 2)\n"
           "        mean, var = y.mean(dims, keepdim=True), y.var(dims, keepdim=True)\n"
           "        return (y - mean) / torch.sqrt(var + bn.eps) * bn.weight.reshape(view) + bn.bias.reshape(view)\n"
           "    folded.forward = forward\n"
           "    return folded\n")],
         {"test_fold": {"fold_batch_stats"}, "test_fold_settings": {"fold_batch_stats"}}),
    slip("running_var corrected by n/(n − 1)", "05_fold",
         [("s = bn.weight / torch.sqrt(bn.running_var + bn.eps)",
           "s = bn.weight / torch.sqrt(bn.running_var * 16 / 15 + bn.eps)")],
         {"test_scale_shift": {"fold_var_scaled"}, "test_fold": {"fold_var_scaled"},
          "test_fold_settings": {"fold_var_scaled"}}),
    slip("eps outside the square root", "05_fold",
         [("s = bn.weight / torch.sqrt(bn.running_var + bn.eps)",
           "s = bn.weight / (torch.sqrt(bn.running_var) + bn.eps)")],
         {"test_scale_shift": {"fold_std_eps"}, "test_fold": {"fold_std_eps"}, "test_fold_settings": {"fold_std_eps"}}),
    slip("eps left out", "05_fold",
         [("s = bn.weight / torch.sqrt(bn.running_var + bn.eps)", "s = bn.weight / torch.sqrt(bn.running_var)")],
         {"test_scale_shift": {"fold_no_eps"}, "test_fold": {"fold_no_eps"}, "test_fold_settings": {"fold_no_eps"}}),
    slip("the shift without s·μ", "05_fold",
         [("t = bn.bias - s * bn.running_mean", "t = bn.bias - bn.running_mean")],
         {"test_scale_shift": {"shift_unscaled_mean"}, "test_fold": {"shift_unscaled_mean"},
          "test_fold_settings": {"shift_unscaled_mean"}}),
    slip("a training-mode BatchNorm folded anyway", "05_fold",
         [('    if bn.training:\n        raise ValueError("fold needs a BatchNorm in evaluation mode: call bn.eval() first")\n',
           "")],
         {"test_fold_training": {"fold_training"}}),
    slip("a new convolution without the original's settings (test 3 only)", "05_fold",
         [("folded = copy.deepcopy(conv)",
           "folded = type(conv)(conv.in_channels, conv.out_channels, conv.kernel_size)")],
         {"test_fold_settings": set()}),
]


def _blocks(stem: str) -> list[dict]:
    source = build_assignments.SRC / f"{stem}.md"
    return build_assignments.parse(source.read_text(encoding="utf-8"), source.name)


def student_notebook(row: Slip, lang: str):
    """The assignment's notebook in ``lang`` (hidden tests kept, as grading runs it), with the
    student's answer: the solution with this row's lines changed."""
    nb = build_assignments.notebook(_blocks(row.stem), lang)
    answers = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
    for old, new in row.edits:
        holding = [c for c in answers if old in c.source]      # a slip made in each answer that has the line
        assert holding and all(c.source.count(old) == 1 for c in holding), \
            f"{row.name}: the solution no longer holds {old!r} (update the table)"
        for cell in holding:
            cell.source = cell.source.replace(old, new)
    return nb


def run(nb) -> dict:
    """Run the setup, answer and test cells in order, in one namespace, as a kernel after Run All
    would if every failing cell were run too: grade id -> the CheckFailed raised, or None."""
    namespace: dict = {"__name__": "__main__"}
    outcome = {}
    threads = torch.get_num_threads()
    try:
        for index, cell in enumerate(nb.cells):
            meta = cell.metadata.get("nbgrader", {})
            if cell.cell_type != "code" or meta.get("grade_id") == "install" or not meta:
                continue
            filename = f"<cell {index}>"          # its lines known to tracebacks, as IPython's cells are
            linecache.cache[filename] = (len(cell.source), None, cell.source.splitlines(True), filename)
            code = compile(cell.source, filename, "exec")
            if not meta.get("grade"):
                exec(code, namespace)                # noqa: S102 - the student's own cells
                continue
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    exec(code, namespace)            # noqa: S102 - the test cell as released
                outcome[meta["grade_id"]] = None
            except CheckFailed as failure:
                outcome[meta["grade_id"]] = failure
    finally:
        torch.set_num_threads(threads)
    return outcome


def diagnosis_lines(message: str, lang: str) -> list[str]:
    marker = "진단:" if lang == "ko" else "Diagnosis:"
    return [line for line in message.splitlines() if marker in line]


def test_the_correct_solutions_pass_every_test_cell():
    for stem in build_assignments.stems():
        for lang in LANGS:
            outcome = run(build_assignments.notebook(_blocks(stem), lang))
            assert outcome and all(v is None for v in outcome.values()), (stem, lang, outcome)


def test_the_table_names_real_test_cells():
    for row in SLIPS:
        ids = {b["options"][0] for b in _blocks(row.stem) if b["kind"] == "tests"}
        assert set(row.fails) <= ids, (row.name, set(row.fails) - ids)


def test_every_slip_the_assignment_texts_name_has_a_row():
    """The slips the texts name (their words, in English) each have a row of the table."""
    named = {
        "01_layernorm": ["int `normalized_shape`", "`x.var()` divides by $n - 1$", "`keepdim=True`",
                         "`std + eps`", "when one is `None`"],
        "02_batchnorm": ["population variance into the running variance", "**the weight of the new batch**",
                         "**unbiased variance**", "`None`", "leave them unchanged"],
        "03_backward": ["Do not call autograd inside `backward`", "int `normalized_shape`"],
        "04_axes_groupnorm": ["never raises `ValueError`", "InstanceNorm's, LayerNorm's, groups of every G-th channel"],
        "05_fold": ["the convolution's bias left out", "batch statistics instead of the running ones",
                    "`running_var` \"corrected\" once more",
                    "$\\epsilon$ outside the square root", "a training-mode layer folded anyway",
                    "without the original's `stride` or `groups`"],
    }
    for stem, phrases in named.items():
        text = (build_assignments.SRC / f"{stem}.md").read_text(encoding="utf-8")
        for phrase in phrases:
            assert phrase in text, (stem, phrase)
    rows = {row.stem for row in SLIPS}
    assert rows == set(named)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("row", SLIPS, ids=[f"{r.stem[:2]}-{r.name}" for r in SLIPS])
def test_a_slip_gets_its_diagnosis_and_no_other(row: Slip, lang: str):
    outcome = run(student_notebook(row, lang))
    failed = {gid for gid, failure in outcome.items() if failure is not None}
    assert failed == set(row.fails), f"cells that failed: {sorted(failed)}, expected {sorted(row.fails)}"
    for gid, expected in row.fails.items():
        failure = outcome[gid]
        message = str(failure)
        assert set(failure.diagnoses) == expected, f"{gid}: {failure.diagnoses}\n{message}"
        lines = diagnosis_lines(message, lang)
        if expected & OWN_WORDS:
            assert not lines, message                  # said in their own words, not as a diagnosis
        else:
            assert len(lines) == len(expected), message
        assert has_hangul(message) == (lang == "ko"), message
        lines = message.splitlines()
        said = "\n".join([lines[0]] + [line for line in lines if line.startswith("  • ")])  # not the reread line
        for word in row.words.get(lang, []):
            assert word in said, f"{gid}: {word!r} missing\n{message}"


@pytest.mark.parametrize("lang", LANGS)
def test_forgetting_the_momentum_is_not_called_unchanged_or_keras(lang):
    row = next(r for r in SLIPS if r.name.startswith("forgot the momentum"))
    outcome = run(student_notebook(row, lang))
    for gid in ("test_running", "test_cumulative"):
        message = str(outcome[gid])
        assert "not_updated" not in outcome[gid].diagnoses
        assert "momentum_swapped" not in outcome[gid].diagnoses
        if lang == "ko":
            assert "바뀌지 않았습니다" not in message and "momentum·running + (1 − momentum)" not in message
        else:
            assert "did not change" not in message and "momentum·running + (1 − momentum)" not in message


@pytest.mark.parametrize("lang", LANGS)
def test_a_delegation_in_a_mixed_test_says_which_mode_called(lang):
    """Test 2 runs training batches, then one call in evaluation mode: a delegation in the training
    branch is reported as the training call's, one in the evaluation branch as the evaluation call's."""
    evaluation = next(r for r in SLIPS if r.name == "evaluation mode delegated to torch")
    bullets = [line for line in str(run(student_notebook(evaluation, lang))["test_running"]).splitlines()
               if line.startswith("  • ")]
    assert any(("평가 모드" if lang == "ko" else "evaluation mode") in line for line in bullets), bullets
    training = slip("training mode delegated", "02_batchnorm",
                    [("x_hat = (x - mean.reshape(view)) / torch.sqrt(var.reshape(view) + self.eps)",
                      "if self.training:\n"
                      "            return torch.nn.functional.batch_norm(x, self.running_mean, self.running_var,\n"
                      "                self.weight, self.bias, True, self.momentum or 0.1, self.eps)\n"
                      "        x_hat = (x - mean.reshape(view)) / torch.sqrt(var.reshape(view) + self.eps)")],
                    {})
    bullets = [line for line in str(run(student_notebook(training, lang))["test_running"]).splitlines()
               if line.startswith("  • ")]
    assert any(("학습 모드" if lang == "ko" else "training mode") in line for line in bullets), bullets
    assert not any(("평가 모드" if lang == "ko" else "evaluation mode") in line for line in bullets), bullets
