"""The explorer (normlib_book.explorer: an anywidget whose front end, explorer.js, computes in the
browser), checked against torch.nn.functional in float64, never against itself:

- in Python: which statistic each element uses is what torch's gradients say it pools; the numbers
  normlib gives (``Explorer.expected``) are torch's; a training step moves the running statistics
  as torch's BatchNorm does; bad state is refused with the expected and received values named;
- in Node (the module's pure arithmetic, imported as the page imports it): 240 random cases (layouts,
  sizes, methods, G, values, γ, β, ε, training or evaluation after 0-3 training steps, momentum or
  None), every number compared with torch;
- in Chromium, on the built book with no kernel: the wiring, one of those cases for each layout and
  method and one torch refuses, driven through the mounted widget (every number it exposes, the cells
  it lights, what it prints); then a reader's way in, typing into chapter 3's table, stepping a batch,
  and setting N, C, H·W and G in chapter 6 on a 390 px wide screen (the random and keyboard walks of
  test_explorer_ui.py go further). Relative error ≤ 1e-12 (absolute below 1).
"""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess

import pytest
import torch
import torch.nn.functional as TF
from playwright.sync_api import expect

from helpers.explorer_oracle import normalize, sizes, statistic_rows, values
from helpers.paths import ROOT, running_in_ci
from normlib_book import explorer as X
from normlib_book.i18n import STRINGS
from normlib_book.instruments import labels

TOL = 1e-12
MODULE = ROOT / "book" / "normlib_book" / "explorer.js"
LIMITS = {"image": ((1, 4), (1, 8), (1, 9)), "sequence": ((1, 4), (1, 6), (1, 8))}
METHODS = {"image": ("batch", "layer", "instance", "group", "rms"), "sequence": ("batch", "layer", "rms", "batch_dim0"),
           "table": ("batch", "layer", "rms")}


# -- the oracle: torch.nn.functional in float64 ------------------------------------------------------
def reference(case) -> dict:
    """What the explorer must show for ``case`` after ``case['train_steps']`` training steps."""
    x3 = values(case)
    channels = x3.shape[1] if case["layout"] == "image" else x3.shape[2]
    rm, rv = torch.zeros(channels, dtype=torch.float64), torch.ones(channels, dtype=torch.float64)
    rows = statistic_rows(case, x3)
    pooled = rows.shape[1]
    out = {"count": rows.shape[0], "pooled": pooled}
    if case["method"] == "batch":
        one_value = x3.numel() // channels < 2          # torch cannot train on it: no step happens
        out["steps"] = 0 if one_value else case.get("train_steps", 0)
        for step in range(out["steps"]):
            m = case["momentum"] if case["momentum"] is not None else 1 / (step + 1)
            normalize(case, x3, False, rm, rv, training=True, momentum=m)       # updates rm, rv in place
        out["running_mean"], out["running_var"] = rm.tolist(), rv.tolist()
        if case["training"] and one_value:
            with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
                normalize(case, x3, False, rm.clone(), rv.clone())
            out["error"] = True
            return out
    if case["method"] == "instance" and x3.shape[2] < 2:
        with pytest.raises(ValueError, match="Expected more than 1 spatial element"):
            normalize(case, x3, False)
        out["error"] = True
        return out
    if case["method"] == "rms":
        out["mean"], out["variance"] = rows.square().mean(1).tolist(), None
    else:
        out["mean"], out["variance"] = rows.mean(1).tolist(), rows.var(1, unbiased=False).tolist()
    out["xhat"] = normalize(case, x3, False, rm.clone(), rv.clone()).flatten().tolist()
    out["y"] = normalize(case, x3, True, rm.clone(), rv.clone()).flatten().tolist()
    return out


def random_case(rng: random.Random) -> dict:
    layout = rng.choice(("image", "image", "sequence", "table"))
    case = {"layout": layout, "method": rng.choice(METHODS[layout]),
            "image_shape": [rng.randint(lo, hi) for lo, hi in LIMITS["image"]],
            "sequence_shape": [rng.randint(lo, hi) for lo, hi in LIMITS["sequence"]],
            "gamma": rng.choice((1.0, rng.uniform(-3, 3))), "beta": rng.choice((0.0, rng.uniform(-3, 3))),
            "eps": rng.choice((1e-5, 1e-3, 0.5, 10 ** rng.uniform(-8, 0))),
            "training": rng.random() < 0.6, "momentum": rng.choice((0.1, None, rng.uniform(0, 1))),
            "train_steps": rng.randint(0, 3)}
    case["groups"] = rng.choice([g for g in range(1, 9) if case["image_shape"][1] % g == 0])
    # |offset| / scale ≤ 30: far off-centre inputs (|μ| ≫ σ) lose digits in x − μ in torch's own reductions
    # (at |μ|/σ ≈ 900 torch's batch_norm is 1e-12 from the exact value where explorer.js's compensated
    # sums are 5e-14 from it), so beyond that the comparison would measure torch, not the explorer
    scale = 10 ** rng.uniform(-2, 2)
    offset = scale * rng.uniform(-30, 30)
    for key, shape in (("image_x", case["image_shape"]), ("sequence_x", case["sequence_shape"]), ("table", (4, 1, 3))):
        n = shape[0] * shape[1] * shape[2]
        case[key] = [rng.choice((round(offset + scale * rng.gauss(0, 1), 2), offset + scale * rng.gauss(0, 1))) for _ in range(n)]
    return case


def close(got, want) -> float:
    """The largest error of ``got`` against ``want`` (relative, absolute below 1); fails if > TOL."""
    assert got is not None and len(got) == len(want), (got, want)
    worst = 0.0
    for a, b in zip(got, want):
        error = abs(a - b) / max(1.0, abs(b))
        worst = max(worst, error)
    assert worst <= TOL, f"error {worst:.2e}: {got} vs torch {want}"
    return worst


def compare(shown: dict, want: dict, what: str) -> float:
    if want.get("error"):
        assert shown.get("error"), f"{what}: torch refuses this input, the explorer shows numbers"
        worst = 0.0
    else:
        assert not shown.get("error"), f"{what}: the explorer shows an error, torch computes: {shown.get('error')}"
        worst = max(close(shown[k], want[k]) for k in ("mean", "xhat", "y"))
        if want["variance"] is not None:
            worst = max(worst, close(shown["variance"], want["variance"]))
        assert shown["count"] == want["count"] and shown["pooled"] == want["pooled"], what
    if "running_mean" in want:
        worst = max(worst, close(shown["running_mean"], want["running_mean"]), close(shown["running_var"], want["running_var"]))
    return worst


CASES = [random_case(random.Random(seed)) for seed in range(240)]


# -- Python: normlib's numbers and the sharing are torch's ----------------------------------------
def explorer_for(case) -> X.Explorer:
    state = {k: case[k] for k in ("method", "groups", "image_shape", "sequence_shape", "image_x", "sequence_x", "table",
                                  "gamma", "beta", "eps", "training", "momentum")}
    return X.Explorer("en", layouts=("image", "sequence", "table"), form=case["layout"], **state)


@pytest.mark.parametrize("case", CASES[:60], ids=lambda c: f"{c['layout']}-{c['method']}")
def test_normlib_numbers_are_torchs(case):
    e = explorer_for(case)
    want = reference(case)
    for _ in range(want.get("steps", 0)):
        e.train_step()
    if want.get("error"):
        with pytest.raises(ValueError):
            e.expected()
        return
    got = e.expected()
    got.update(count=len(got["mean"]), pooled=want["pooled"], running_mean=e.running_mean, running_var=e.running_var)
    if case["method"] != "batch":
        got.pop("running_mean"), got.pop("running_var")
    compare(got, want, "normlib")


@pytest.mark.parametrize("layout,method", [(lay, m) for lay, ms in METHODS.items() for m in ms])
def test_each_element_uses_the_statistic_torch_pools_it_with(layout, method):
    """The cells lit together are exactly the inputs torch's output at the hovered cell depends on."""
    case = random_case(random.Random(5)) | {"layout": layout, "method": method, "image_shape": [2, 6, 3], "groups": 3,
                                             "sequence_shape": [2, 3, 4], "training": True}
    case["image_x"] = torch.randn(36, generator=torch.Generator().manual_seed(1), dtype=torch.float64).tolist()
    case["sequence_x"] = torch.randn(24, generator=torch.Generator().manual_seed(2), dtype=torch.float64).tolist()
    e = explorer_for(case)
    x3 = values(case).requires_grad_()
    y = normalize(case, x3, False, torch.zeros(x3.shape[1 if layout == "image" else 2], dtype=torch.float64),
                  torch.ones(x3.shape[1 if layout == "image" else 2], dtype=torch.float64))
    ids = labels(e.sharing()).flatten().tolist()
    for i in range(x3.numel()):
        (grad,) = torch.autograd.grad(y.flatten()[i], x3, retain_graph=True)
        pooled = {j for j in range(x3.numel()) if grad.flatten()[j] != 0}
        assert pooled == {j for j in range(x3.numel()) if ids[j] == ids[i]}, (layout, method, i)


def test_one_training_step_gives_chapter_3s_running_statistics():
    e = X.Explorer("en", layouts=("table",))
    e.train_step()
    assert [round(v, 4) for v in e.running_mean] == [0.5, 0.5, 1.8]
    assert round(e.running_var[0], 4) == 1.5667
    e.momentum = None
    e.train_step()      # cumulative average of two identical batches: the batch's statistics
    assert e.running_mean[0] == pytest.approx((0.5 + 5) / 2)


@pytest.mark.parametrize("kwargs,needle", [
    ({"layouts": ("image", "tokens")}, "layouts must be a non-empty selection"),
    ({"layouts": ()}, "layouts must be a non-empty selection"),
    ({"method": "instance", "form": "table", "layouts": ("table",)}, "method must be one of ('batch', 'layer', 'rms') for the table layout; got 'instance'"),
    ({"image_shape": [5, 6, 4]}, "image_shape must be 3 sizes within"),
    ({"groups": 4}, "groups must divide C = 6; got 4"),
    ({"eps": -1.0}, "batch_norm eps must be positive during training, but got -1.0"),     # torch's words
    ({"eps": 0.0, "training": False, "form": "table", "layouts": ("table",)}, None),           # torch computes it
    ({"eps": -1.0, "method": "layer"}, None),                                                  # torch computes it
    ({"eps": float("nan")}, "eps must be a finite number; got nan"),
    ({"table": [1.0, 2.0]}, "table must hold 12 values (4 × 3); got 2"),
])
def test_bad_state_is_refused_naming_what_was_expected(kwargs, needle):
    if needle is None:
        X.Explorer("en", **kwargs).expected()
        return
    with pytest.raises(ValueError) as info:
        X.Explorer("en", **kwargs)
    assert needle in str(info.value)


def test_every_word_the_module_uses_exists_in_both_languages():
    used = set(re.findall(r'\bw\("([a-z_0-9]+)"', MODULE.read_text(encoding="utf-8")))
    used |= {"nx_method_batch_dim0"} | {f"layout_{lay}" for lay in METHODS}
    assert used, "no word found in explorer.js"
    assert used <= set(X.WORD_KEYS), sorted(used - set(X.WORD_KEYS))
    for lang in ("ko", "en"):
        assert X.Explorer(lang).words.keys() == set(X.WORD_KEYS)
        assert all(STRINGS[lang][k] for k in X.WORD_KEYS)


def test_check_compares_what_a_front_end_reported():
    e = X.Explorer("en", layouts=("table",))
    assert e.check() is None                           # nothing drawn: nothing to compare
    want = e.expected()
    state = {k: getattr(e, "form" if k == "layout" else k) for k in X.STATE_KEYS}
    e.shown = {**want, "state": json.dumps(state)}
    assert e.check() == 3 + 3 + 12 + 12
    e.shown = {**want, "y": [v + 1e-9 for v in want["y"]], "state": json.dumps(state)}
    with pytest.raises(AssertionError, match=r"y\[0\]"):
        e.check()
    e.gamma = 2.0                                        # the drawn state is no longer the current one
    assert e.check() is None


# -- Node: the module's arithmetic, as the page imports it ------------------------------------------
NODE_SCRIPT = """
import * as X from %s;
const cases = JSON.parse(await new Promise((ok) => { let s = ""; process.stdin.on("data", (d) => s += d); process.stdin.on("end", () => ok(s)); }));
const out = cases.map((c) => {
  let state = X.settle({ layouts: ["image", "sequence", "table"], running_mean: [], running_var: [], steps: 0, selected: 0, ...c });
  for (let k = 0; state.method === "batch" && k < c.train_steps; k++) { const next = X.trainStep(state); if (!next) break; state = { ...state, ...next }; }
  const r = X.compute(state);
  return { error: r.error, mean: r.mean, variance: r.variance, xhat: r.xhat, y: r.y, count: r.share.count,
           pooled: r.share.pooled, running_mean: state.running_mean, running_var: state.running_var,
           samples: X.sampleValues(c.layout === "image" ? "image" : "sequence", X.sizes(state)) };
});
process.stdout.write(JSON.stringify(out));
"""


def run_node(tmp_path, script: str, *args: str, stdin: str | None = None, timeout: int = 60) -> str:
    """Run ``script`` (an ES module, ``%s`` standing for the explorer module's URL) in Node and return what it
    printed; without Node the test fails under CI and is skipped here."""
    node = shutil.which("node")
    if node is None:
        if running_in_ci():
            pytest.fail("node is missing: the explorer's JavaScript cannot be tested")
        pytest.skip("node is not installed: the explorer's JavaScript is checked in Chromium only")
    path = tmp_path / "script.mjs"
    path.write_text(script % json.dumps(MODULE.as_uri()), encoding="utf-8")
    result = subprocess.run([node, str(path), *args], input=stdin, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_the_modules_arithmetic_in_node_is_torchs(tmp_path):
    stdout = run_node(tmp_path, NODE_SCRIPT, stdin=json.dumps(CASES), timeout=120)
    worst = 0.0
    for case, shown in zip(CASES, json.loads(stdout), strict=True):
        want = reference(case)
        if case["method"] != "batch":
            shown.pop("running_mean"), shown.pop("running_var")
        worst = max(worst, compare(shown, want, f"{case['layout']}/{case['method']}"))
        if case["layout"] != "table":
            assert shown["samples"] == X.sample_values(case["layout"], sizes(case))
    print(f"\nnode: {len(CASES)} cases, worst error {worst:.2e}")


@pytest.mark.parametrize("lang", ["ko", "en"])
@pytest.mark.parametrize("chapter", ["03_batchnorm", "04_layernorm", "05_rmsnorm", "06_family"])
def test_the_chapters_store_the_current_module(lang, chapter):
    """The static page runs the module the notebook stored when it was executed: after a change of
    explorer.js or explorer.css the chapters must be executed again (make chapters CH=...)."""
    nb = json.loads((ROOT / "chapters" / lang / f"{chapter}.ipynb").read_text(encoding="utf-8"))
    state = nb["metadata"].get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    explorers = [m["state"] for m in state.values() if m["model_name"] == "AnyModel"]
    assert explorers, f"{lang}/{chapter} stores no explorer"
    for stored in explorers:
        assert stored["_esm"] == MODULE.read_text(encoding="utf-8"), f"{lang}/{chapter}: stale explorer.js; run make chapters CH={chapter}"
        assert stored["_css"] == MODULE.with_suffix(".css").read_text(encoding="utf-8"), f"{lang}/{chapter}: stale explorer.css"
        assert stored["lang"] == lang
    assert not [m for m in state.values() if m["model_name"] not in ("AnyModel", "LayoutModel")], "widgets other than the explorer"


# -- Chromium: the built book's pages, no kernel ----------------------------------------------------
ARTIFACTS = ROOT / "test-artifacts" / "explorer"

# Drives the page's first explorer through the handle it exposes (el.normlibExplorer) and returns,
# per case, every number it computed and what it printed of them.
DRIVE = """async (cases) => {
  const el = document.querySelector('.anywidget-view');
  const api = el.normlibExplorer, out = [];
  for (const c of cases) {
    api.set({ layout: c.layout, method: c.method, groups: c.groups, image_shape: c.image_shape,
              sequence_shape: c.sequence_shape, image_x: c.image_x, sequence_x: c.sequence_x, table: c.table,
              gamma: c.gamma, beta: c.beta, eps: c.eps, momentum: c.momentum, training: c.training,
              running_mean: [], running_var: [], steps: 0, selected: c.selected });
    for (let k = 0; c.method === 'batch' && k < c.train_steps; k++) if (!api.step()) break;
    await Promise.resolve();                       // the widget draws a change once, in a microtask
    const r = api.numbers(), s = api.state();
    const stats = Array.from(el.querySelectorAll('.nx-stats tbody tr')).map((tr) =>
      Array.from(tr.querySelectorAll('td')).map((td) => td.textContent));
    out.push({ error: r.error, mean: r.mean, variance: r.variance, xhat: r.xhat, y: r.y, count: r.share.count,
             pooled: r.share.pooled, running_mean: s.running_mean, running_var: s.running_var, stats,
             formula: (el.querySelector('.nx-formula') || {}).textContent || '',
             lit: el.querySelectorAll('.nx-lit[data-index]').length, shown: el.querySelector('.nx-error') ? 'error' : 'numbers' });
  }
  return out;
}"""


def printed(s: str) -> float:
    return float(s.replace("−", "-"))


@pytest.fixture
def page_of(browser, book_url):
    """A fresh page of the built book (no kernel) at a width: page_of(docname, width) -> page."""
    from book.site.local_site import isolated_context

    contexts, errors, foreign = [], [], []

    def open_page(docname: str, width: int = 1280):
        context = isolated_context(browser, book_url, foreign, width=width)
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(15_000)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(f"{book_url}/{docname}.html", wait_until="load")
        page.wait_for_selector(".anywidget-view .nx [data-stat]")
        return page

    yield open_page
    for context in contexts:
        context.close()
    assert not errors and not foreign, errors + foreign


def wiring_cases() -> list[dict]:
    """The first random case of each layout and method, and the first torch refuses (an error shown)."""
    chosen, seen = [], set()
    for case in CASES:
        if (case["layout"], case["method"]) not in seen:
            seen.add((case["layout"], case["method"]))
            chosen.append(case)
    return chosen + [next(c for c in CASES if reference(c).get("error") and c not in chosen)]


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_the_widget_shows_torchs_numbers_for_each_layout_and_method(page_of, lang):
    """The wiring, not the arithmetic (all 240 random cases: test_the_modules_arithmetic_in_node_is_torchs,
    the same module in Node): one random case of each layout and method, and one torch refuses, through the
    widget on chapter 6's static page. Every number it computes (per statistic μ, σ²; per element x̂, y; the
    running statistics after 0-3 steps) is torch.nn.functional's in float64, the cells it lights are those
    torch pools, and what it prints (the statistics, the chosen cell's formula, or the error) is torch's, rounded."""
    page = page_of(f"{lang}/chapters/{lang}/06_family")
    rng = random.Random(2026)
    cases = [c | {"selected": rng.randrange(sizes(c)[0] * sizes(c)[1] * sizes(c)[2])} for c in wiring_cases()]
    assert any(reference(c).get("error") for c in cases)
    worst, methods = 0.0, set()
    for case, shown in zip(cases, page.evaluate(DRIVE, cases), strict=True):
        what = f"{case['layout']}/{case['method']} {sizes(case)} G={case['groups']} training={case['training']}"
        want = reference(case)
        if case["method"] != "batch":
            want.pop("running_mean", None), want.pop("running_var", None)
            shown.pop("running_mean"), shown.pop("running_var")
        worst = max(worst, compare(shown, want, what))
        methods.add((case["layout"], case["method"]))
        assert shown["shown"] == ("error" if want.get("error") else "numbers"), what
        if want.get("error"):
            continue
        assert shown["lit"] == want["pooled"], f"{what}: {shown['lit']} cells lit, torch pools {want['pooled']}"
        for row, mean in zip(shown["stats"], want["mean"]):        # the statistics as printed
            assert abs(printed(row[0]) - mean) <= 5.1e-5 * max(1, abs(mean)), (what, row, mean)
        i = case["selected"]
        assert printed(shown["formula"].split("=")[-1].strip()) == pytest.approx(want["y"][i], abs=5.1e-5, rel=5.1e-5), \
            (what, shown["formula"], want["y"][i])
    assert len(methods) == sum(len(m) for m in METHODS.values()), sorted(methods)
    print(f"\n{lang}: {len(cases)} cases in Chromium, worst error against torch {worst:.2e}")


def cell_texts(page, index: int) -> list[str]:
    return page.locator(f'.nx input[data-index="{index}"]').locator("xpath=..").locator(".nx-out div").all_inner_texts()


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_a_reader_types_into_chapter_3s_table_on_a_phone_and_gets_torchs_numbers(page_of, lang):
    page = page_of(f"{lang}/chapters/{lang}/03_batchnorm", width=390)
    explorer = page.locator(".nx").first
    explorer.scroll_into_view_if_needed()
    # one training step on the table: chapter 3's running statistics
    explorer.locator("button.nx-button").first.click()
    # the page draws a change made by a click once the click is over (a task later): wait for it, as a reader would
    expect(explorer.locator(".nx-running")).to_contain_text("running_mean = [0.5, 0.5, 1.8]")
    running = explorer.locator(".nx-running").inner_text()
    assert "running_mean = [0.5, 0.5, 1.8]" in running and "running_var = [1.5667, 2.1667, 19.567]" in running, running
    # the reader types 7 over sample C's feature 1 (the 6) and moves on
    box = explorer.locator('input[data-index="6"]')
    box.fill("7")
    box.press("Enter")
    page.wait_for_function("() => document.querySelector('.nx-formula').textContent.includes('(7 −')")
    table = torch.tensor([[2.0, 3, 4], [4, 10, 20], [7, 5, 12], [8, 2, 36]], dtype=torch.float64)
    want = TF.batch_norm(table, None, None, training=True, eps=1e-5)
    for i in range(12):
        texts = cell_texts(page, i)
        assert printed(texts[0].split()[-1]) == pytest.approx(want.flatten()[i].item(), abs=5.1e-4), (i, texts)
    formula = explorer.locator(".nx-formula").inner_text()
    mean, var = table[:, 0].mean().item(), table[:, 0].var(unbiased=False).item()
    assert f"(7 − {mean:g}) / √({var:g} + 0.00001)" in formula, formula
    # then clicks sample D's feature 3 (36), types 30 over it and presses Enter: 30, not 3036
    other = explorer.locator('input[data-index="11"]')
    other.click()
    page.wait_for_function("() => document.activeElement.dataset.index === '11' && "
                           "document.querySelector('.nx-formula').textContent.includes('(36 −')")
    page.keyboard.type("30")
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.querySelector('.nx-formula').textContent.includes('(30 −')")
    assert explorer.locator('input[data-index="11"]').input_value() == "30"
    assert page.evaluate("document.activeElement.dataset.index") == "11", "the focus left the edited cell"
    assert page.evaluate("document.querySelector('.anywidget-view').normlibExplorer.state().table")[6::5] == [7, 30]
    assert page.evaluate("document.documentElement.scrollWidth") <= 390, "the page is wider than the phone"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    explorer.screenshot(path=str(ARTIFACTS / f"{lang}_03_table_phone.png"))


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_a_reader_sets_n_c_hw_and_g_in_chapter_6_on_a_phone_and_the_group_lights_up(page_of, lang):
    page = page_of(f"{lang}/chapters/{lang}/06_family", width=390)
    explorer = page.locator(".nx").first
    explorer.scroll_into_view_if_needed()
    for axis, value in ((0, "3"), (1, "8"), (2, "5")):
        box = explorer.locator(f'input[id$="-size{axis}"]')
        box.fill(value)
        box.press("Enter")
    explorer.locator('select[id$="-groups"]').select_option("4")
    expect(explorer.locator(".nx-summary")).to_contain_text("12")
    summary = explorer.locator(".nx-summary").inner_text()
    assert ("통계 12개" in summary and "원소 10개" in summary) if lang == "ko" else \
        ("12 statistics, each pooling 10 elements" in summary), summary
    # hover the cell (sample 2, channel 3, position 4): the lit cells are those torch pools it with
    index = (1 * 8 + 2) * 5 + 3
    explorer.locator(f'rect[data-index="{index}"]').hover()
    lit = sorted(int(i) for i in explorer.locator("rect.nx-lit").evaluate_all("els => els.map(e => e.dataset.index)"))
    x = torch.randn(3, 8, 5, dtype=torch.float64, requires_grad=True)
    (grad,) = torch.autograd.grad(TF.group_norm(x, 4).flatten()[index], x)
    assert lit == (grad.flatten() != 0).nonzero().flatten().tolist()
    explorer.locator(f'rect[data-index="{index}"]').click()
    page.keyboard.press("ArrowRight")                  # the keyboard moves the chosen cell
    expect(explorer.locator(f'rect[data-index="{index + 1}"]')).to_have_attribute("aria-pressed", "true")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390, "the page is wider than the phone"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    explorer.screenshot(path=str(ARTIFACTS / f"{lang}_06_groups_phone.png"))


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_the_pages_share_the_module_instead_of_storing_it(offline_site, lang):
    """Chapters 3-6 carry the explorer's traits only; its module comes once, from the shared
    anywidget-modules.js (book/site/vendor_assets.py), which holds the current explorer.js (the pages'
    budgets, chapter 6's HTML among them: test_page_weight.py)."""
    shared = (offline_site / lang / "_static" / "offline" / "widgets" / "anywidget-modules.js").read_text(encoding="utf-8")
    assert json.dumps(MODULE.read_text(encoding="utf-8"), ensure_ascii=False).replace("</", "<\\/") in shared
    for chapter in ("03_batchnorm", "04_layernorm", "05_rmsnorm", "06_family"):
        html = (offline_site / lang / "chapters" / lang / f"{chapter}.html").read_text(encoding="utf-8")
        state = re.search(r'<script type="application/vnd.jupyter.widget-state\+json">(.*?)</script>', html, re.S)
        assert state, f"{lang}/{chapter}: no widget state"
        models = json.loads(state.group(1))["state"].values()
        assert [m for m in models if m["model_name"] == "AnyModel"], f"{lang}/{chapter}: no explorer"
        assert not [m for m in models if "_esm" in m["state"]], f"{lang}/{chapter}: the page stores the module itself"
        assert html.index("anywidget-modules.js") < html.index("anywidget-loader.js")


def test_the_explorer_draws_on_a_page_opened_from_disk(browser, offline_site):
    """`make book` says to open _build/html/index.html: from file://, with no server, the explorer
    still mounts (its module is imported from a blob: URL, not fetched)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    try:
        page = context.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto((offline_site / "en" / "chapters" / "en" / "06_family.html").as_uri(), wait_until="load")
        page.wait_for_selector(".nx rect[data-stat]", timeout=15_000)
        assert page.locator(".nx rect[data-stat]").count() == 2 * 6 * 4
    finally:
        context.close()
    assert not errors, errors


# -- Node: what a person types, and how the page prints numbers -------------------------------------
READING = [("1,5", 1.5), ("−2", -2.0), ("-0", 0.0), ("  2.5 ", 2.5), ("１２", 12.0), ("1e−3", 1e-3), ("0,001", 0.001),
           (".5", 0.5), ("1e200", 1e200), ("abc", "nx_bad_number"), ("1.5.2", "nx_bad_number"), ("0x10", "nx_bad_number"),
           ("", "nx_bad_empty"), ("1,000", "nx_bad_ambiguous"), ("1,2,3", "nx_bad_number"), ("1e400", "nx_bad_huge"),
           ("1.5,2", "nx_bad_number"), ("−", "nx_bad_number")]
PRINTING = """
import * as X from %s;
const read = JSON.parse(process.argv[2]).map((s) => X.parseNumber(s));
const values = [1.25e-4, -4.63e-18, 2.5e200, 12.5, -1.5e-5, 1e-5, 19.566666666, -0.001460, 0, -0, NaN, -Infinity, 123456.78];
const printed = values.map((v) => X.fmt(v)), noise = X.fmt(-4.63e-18, 5, 3.4), exact = [12.5, 1e-5, -2e-7].map(X.exact);
process.stdout.write(JSON.stringify({ read, printed, noise, exact }));
"""


def test_the_module_reads_typing_as_meant_and_prints_every_minus_alike(tmp_path):
    stdout = run_node(tmp_path, PRINTING, json.dumps([t for t, _ in READING]))
    out = json.loads(stdout)
    for (typed, meant), got in zip(READING, out["read"], strict=True):
        assert got == ({"error": meant} if isinstance(meant, str) else {"value": meant}), (typed, got)
    assert out["printed"] == ["0.000125", "−4.63e−18", "2.5e200", "12.5", "−1.5e−5", "1e−5", "19.567", "−0.00146",
                              "0", "0", "NaN", "−∞", "123457"]
    assert out["noise"] == "0", "float noise against data of size 3.4 prints as 0"
    assert out["exact"] == ["12.5", "0.00001", "−2e−7"], "ε, γ and β print as typed"
    assert not any("-" in s or "e+" in s for s in out["printed"] + out["exact"]), "a hyphen-minus or e+ in print"


OVERFLOW = """
import * as X from %s;
const table = [1e200, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];     // column 1 and row 1 hold 1e200
const out = ["batch", "layer", "rms"].map((method) => {
  const state = X.settle({ layouts: ["table"], layout: "table", method, table, eps: 1e-5, gamma: 1, beta: 0, training: true,
                           running_mean: [], running_var: [], steps: 0, selected: 0 });
  const r = X.compute(state);
  return { method, xhat0: r.xhat[0], why: X.why(state, r).map(([key]) => key) };
});
process.stdout.write(JSON.stringify(out));
"""


def test_an_overflowing_statistic_is_explained_and_where_torch_differs_it_says_so(tmp_path):
    """1e200 in the table: σ² (or E[x²]) is ∞ and x̂ = finite/∞ = 0, which is torch's float64 result for
    batch_norm and rms_norm. torch's layer_norm gathers its statistics in one pass and gives NaN here: the page
    keeps the two-pass value and its sentence says torch's kernel differs, so nothing on screen is silently off."""
    stdout = run_node(tmp_path, OVERFLOW)
    got = {row["method"]: row for row in json.loads(stdout)}
    x = torch.tensor([1e200, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], dtype=torch.float64).view(4, 3)
    assert TF.batch_norm(x, None, None, training=True)[0, 0].item() == got["batch"]["xhat0"] == 0.0
    assert TF.rms_norm(x, (3,))[0, 0].item() == got["rms"]["xhat0"] == 0.0
    assert got["batch"]["why"] == got["rms"]["why"] == ["nx_why_overflow"]
    assert torch.isnan(TF.layer_norm(x, (3,))[0, 0]), "torch's layer_norm gives NaN: the sentence below must say so"
    assert got["layer"]["xhat0"] == 0.0 and got["layer"]["why"] == ["nx_why_overflow_onepass"]
    assert all("NaN" in STRINGS[lang]["nx_why_overflow_onepass"] for lang in ("ko", "en"))
