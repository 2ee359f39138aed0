// The normalization explorer: which elements share one statistic, and what every element becomes.
//
// One ES module, the front end of the anywidget `normlib.book.explorer.Explorer`. It runs wherever
// anywidget runs (JupyterLab, Notebook 7, VS Code, Colab: the state lives in the Python object's
// traitlets) and on the book's static page with no kernel (tools/offline_book/anywidget-loader.js
// mounts it from the notebook's stored widget state). It computes in the browser, in float64
// (JavaScript numbers), and draws with SVG and HTML: nothing is drawn in advance.
//
// The first half is pure arithmetic (no DOM), exported so that tests can call it; the second half
// draws. tests/test_explorer.py checks the arithmetic against torch.nn.functional in Chromium.
//
// Layouts and the flat index of an element (every layout is held as three sizes [A, B, K]):
//   image    (N, C, H·W)  i = (n·C + c)·HW + s      channel (γ, β, running statistics): c
//   sequence (B, L, D)    i = (b·L + l)·D + d        channel: d
//   table    (N, D)       i = n·D + d   (held as [N, 1, D])   channel: d

export const METHODS = {
  image: ["batch", "layer", "instance", "group", "rms"],
  sequence: ["batch", "layer", "rms", "batch_dim0"],
  table: ["batch", "layer", "rms"],
};
// The methods' names are the same in every language; the slip's is a description (words).
const NAMES = { batch: "BatchNorm", layer: "LayerNorm", instance: "InstanceNorm", group: "GroupNorm", rms: "RMSNorm" };
const methodName = (m, w) => NAMES[m] ?? w(`nx_method_${m}`);

export const LIMITS = {            // sizes that stay legible on a phone
  image: { min: [1, 1, 1], max: [4, 8, 9] },
  sequence: { min: [1, 1, 1], max: [4, 6, 8] },
  table: { min: [4, 1, 3], max: [4, 1, 3] },
};

export function divisors(n) {
  const out = [];
  for (let d = 1; d <= n; d++) if (n % d === 0) out.push(d);
  return out;
}

// The three sizes [A, B, K] of a layout from the model's state.
export function sizes(state) {
  if (state.layout === "table") return [4, 1, 3];
  return state.layout === "image" ? state.image_shape.slice() : state.sequence_shape.slice();
}

// Deterministic inputs for a shape (the same generator as explorer.py's `sample_values`): the
// minimal standard LCG, integers only (exact in float64), one decimal, channel c shifted by c/2 so
// that the channels differ in mean.
export function sampleValues(layout, shape, seed = 1) {
  const [A, B, K] = shape;
  const out = [];
  let s = seed;
  for (let i = 0; i < A * B * K; i++) {
    s = (48271 * s) % 2147483647;
    const channel = layout === "image" ? Math.floor(i / K) % B : i % K;
    out.push(((s % 61) - 30) / 10 + channel / 2);
  }
  return out;
}

// Which statistic each element uses: {ids, count, channel, channels, pooled}.
export function sharing(layout, method, shape, groups) {
  const [A, B, K] = shape;
  const size = A * B * K;
  const ids = new Array(size);
  const channel = new Array(size);
  const channels = layout === "image" ? B : K;
  let count = 0;
  for (let i = 0; i < size; i++) {
    const a = Math.floor(i / (B * K)), b = Math.floor(i / K) % B, k = i % K;
    const c = layout === "image" ? b : k;
    channel[i] = c;
    let id;
    if (method === "batch") id = c;
    else if (method === "layer" || method === "rms") id = layout === "image" ? a : a * B + b;
    else if (method === "instance") id = a * B + b;
    else if (method === "group") id = a * groups + Math.floor(b / (B / groups));
    else if (method === "batch_dim0") id = b * K + k;
    else throw new Error(`unknown method ${method}`);
    ids[i] = id;
    count = Math.max(count, id + 1);
  }
  return { ids, count, channel, channels, pooled: size / count };
}

// n running sums, each compensated (Neumaier): a mean of values far from 0 stays exact to the last
// bit or so, as torch's float64 reductions are, so that x̂ = (x − μ)/σ agrees even when σ ≪ |x|.
function sums(n) {
  const total = new Array(n).fill(0), carry = new Array(n).fill(0);
  return {
    add(k, v) {
      const t = total[k] + v;
      carry[k] += Math.abs(total[k]) >= Math.abs(v) ? (total[k] - t) + v : (v - t) + total[k];
      total[k] = t;
    },
    totals: () => total.map((t, k) => t + carry[k]),
  };
}

// Everything the explorer shows, from its state: per statistic mean and variance (RMSNorm: mean
// square), per element x̂ and y, and BatchNorm's statistics in use. `error` names what cannot be
// computed (BatchNorm in training mode with one value per channel, as torch refuses it).
export function compute(state) {
  const shape = sizes(state);
  const x = valuesOf(state);
  const { layout, method, eps, gamma } = state;
  const beta = method === "rms" ? 0 : state.beta;
  const share = sharing(layout, method, shape, state.groups);
  const n = share.count, size = x.length;
  const sum = sums(n), m2 = sums(n);
  for (let i = 0; i < size; i++) sum.add(share.ids[i], method === "rms" ? x[i] * x[i] : x[i]);
  const mean = sum.totals().map((s) => s / share.pooled);
  let variance = null;
  if (method !== "rms") {                                     // two passes: σ² = E[(x − μ)²]
    for (let i = 0; i < size; i++) m2.add(share.ids[i], (x[i] - mean[share.ids[i]]) ** 2);
    variance = m2.totals().map((s) => s / share.pooled);
  }
  const evaluating = method === "batch" && !state.training;
  if (method === "batch" && state.training && share.pooled < 2) {
    return { shape, x, share, mean, variance, error: "nx_error_one_value" };
  }
  if (method === "instance" && shape[2] < 2) {               // torch refuses it too
    return { shape, x, share, mean, variance, error: "nx_error_one_position" };
  }
  // the statistics each element is normalized with
  const useMean = evaluating ? state.running_mean : mean;
  const useVar = evaluating ? state.running_var : variance;
  const xhat = new Array(size), y = new Array(size);
  for (let i = 0; i < size; i++) {
    const id = share.ids[i], c = share.channel[i];
    xhat[i] = method === "rms"
      ? x[i] / Math.sqrt(mean[id] + eps)                      // x / √(E[x²] + ε)
      : evaluating
        ? (x[i] - useMean[c]) / Math.sqrt(useVar[c] + eps)   // running statistics
        : (x[i] - mean[id]) / Math.sqrt(variance[id] + eps); // (x − μ) / √(σ² + ε)
    y[i] = gamma * xhat[i] + beta;                            // y = γ·x̂ + β
  }
  return { shape, x, share, mean, variance, xhat, y, evaluating, error: null };
}

// One training step of BatchNorm on the current batch: torch's update of the running statistics,
// with the unbiased (sample) variance; momentum null is the cumulative average (m = 1/k).
export function trainStep(state) {
  const result = compute({ ...state, training: true });
  if (result.error) return null;
  const steps = state.steps + 1;
  const m = state.momentum === null ? 1 / steps : state.momentum;
  const unbiased = result.share.pooled / (result.share.pooled - 1);
  return {
    steps,
    running_mean: state.running_mean.map((r, c) => (1 - m) * r + m * result.mean[c]),
    running_var: state.running_var.map((r, c) => (1 - m) * r + m * result.variance[c] * unbiased),
  };
}

export function valuesOf(state) {
  if (state.layout === "table") return state.table.slice();
  return state.layout === "image" ? state.image_x.slice() : state.sequence_x.slice();
}

// Numbers as the page prints them: at most 4 decimals, no trailing zeros, a true minus sign.
export function fmt(v, digits = 4) {
  if (!Number.isFinite(v)) return String(v);
  let s = Math.abs(v) !== 0 && Math.abs(v) < 1e-4 ? v.toExponential(2) : v.toFixed(digits);
  if (s.includes(".") && !s.includes("e")) s = s.replace(/0+$/, "").replace(/\.$/, "");
  if (s === "-0") s = "0";
  return s.replace("-", "−");
}
// eps exactly as typed (1e-5 reads 0.00001)
export function fmtEps(v) {
  return v >= 1e-6 ? v.toFixed(Math.max(0, -Math.floor(Math.log10(v)) + 1)).replace(/0+$/, "").replace(/\.$/, "") : String(v);
}

// The formula of one element with its numbers.
export function formula(state, result, i) {
  const { x, xhat, y, share, mean, variance } = result;
  const id = share.ids[i], c = share.channel[i];
  const e = fmtEps(state.eps);
  let first;
  if (state.method === "rms") {
    first = `x̂ = ${fmt(x[i])} / √(${fmt(mean[id])} + ${e}) = ${fmt(xhat[i])}`;
  } else if (result.evaluating) {
    first = `x̂ = (${fmt(x[i])} − ${fmt(state.running_mean[c])}) / √(${fmt(state.running_var[c])} + ${e}) = ${fmt(xhat[i])}`;
  } else {
    first = `x̂ = (${fmt(x[i])} − ${fmt(mean[id])}) / √(${fmt(variance[id])} + ${e}) = ${fmt(xhat[i])}`;
  }
  const second = state.method === "rms"
    ? `y = γ·x̂ = ${fmt(state.gamma)} · ${fmt(xhat[i])} = ${fmt(y[i])}`
    : `y = γ·x̂ + β = ${fmt(state.gamma)} · ${fmt(xhat[i])} + ${fmt(state.beta)} = ${fmt(y[i])}`;
  return [first, second];
}

// Where element i sits, in the layout's own words: [a, b, k] one-based.
export function position(shape, i) {
  const [, B, K] = shape;
  return [Math.floor(i / (B * K)) + 1, (Math.floor(i / K) % B) + 1, (i % K) + 1];
}

// ---------------------------------------------------------------------------------------------
// Drawing. `model` is anywidget's (get / set / save_changes / on).

const PALETTE = ["#9ecae9", "#fdd0a2", "#b8e3b0", "#f4b6c2", "#d4c4ec", "#f9e79f", "#a9dfd8", "#e0c9a6"];
const STRONG = ["#1f5f99", "#a64d00", "#2a7a2a", "#a3284a", "#5e3c99", "#7d6608", "#1b6f66", "#6e4b1f"];
const SVGNS = "http://www.w3.org/2000/svg";

function h(tag, attrs = {}, children = []) {
  const el = tag.startsWith("svg:") ? document.createElementNS(SVGNS, tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "text") el.textContent = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const child of [].concat(children)) if (child) el.append(child);
  return el;
}

function words(model) {
  const table = model.get("words") || {};
  return (key, vars = {}) => {
    let s = table[key] ?? key;
    for (const [k, v] of Object.entries(vars)) s = s.split(`{${k}}`).join(String(v));
    return s;
  };
}

export const STATE_KEYS = ["layout", "layouts", "image_shape", "sequence_shape", "image_x", "sequence_x", "table",
  "method", "groups", "eps", "gamma", "beta", "training", "momentum", "running_mean", "running_var", "steps", "selected"];

// The trait behind a state key: ipywidgets' DOMWidget already has a trait named `layout`.
const trait = (key) => (key === "layout" ? "form" : key);

function stateOf(model) {
  return Object.fromEntries(STATE_KEYS.map((k) => [k, model.get(trait(k))]));
}

// Keep the state consistent after a change: method allowed for the layout, G divides C, the
// running statistics one per channel, the selected element inside the tensor.
export function settle(state) {
  const s = { ...state };
  if (!s.layouts.includes(s.layout)) s.layout = s.layouts[0];
  if (!METHODS[s.layout].includes(s.method)) s.method = METHODS[s.layout][0];
  const shape = sizes(s);
  const channels = s.layout === "image" ? shape[1] : shape[2];
  if (s.layout === "image" && shape[1] % s.groups !== 0) {
    s.groups = Math.max(...divisors(shape[1]).filter((d) => d <= s.groups));
  }
  if (s.running_mean.length !== channels) {
    s.running_mean = new Array(channels).fill(0);
    s.running_var = new Array(channels).fill(1);
    s.steps = 0;
  }
  const size = shape[0] * shape[1] * shape[2];
  if (!(s.selected >= 0 && s.selected < size)) s.selected = 0;
  return s;
}

function commit(model, patch) {
  const next = settle({ ...stateOf(model), ...patch });
  for (const [k, v] of Object.entries(next)) {
    if (JSON.stringify(v) !== JSON.stringify(model.get(trait(k)))) model.set(trait(k), v);
  }
  model.save_changes();
}

let counter = 0;

function render({ model, el }) {
  const uid = `nx${++counter}`;
  const root = h("div", { class: "nx", lang: model.get("lang") });
  el.append(root);
  let hovered = null;          // the statistic lit by hovering or touching
  let current = null;          // the last computed result
  let focusAfter = null;       // keep the keyboard focus on a redrawn control

  function draw() {
    const w = words(model);
    const state = settle(stateOf(model));
    const result = compute(state);
    current = result;
    const active = hovered ?? result.share.ids[state.selected];
    // the control that has the focus, to give it back once it is drawn again
    const was = document.activeElement;
    const keep = !was || !root.contains(was) ? null : was.id ? `#${was.id}`
      : was.dataset.index !== undefined ? `${was.tagName.toLowerCase()}[data-index="${was.dataset.index}"]` : null;
    root.replaceChildren(...[
      controls(state, w),
      result.error ? null : summary(state, result, w, active),
      state.layout === "table" ? tableView(state, result, w, active) : blocks(state, result, w, active),
      result.error ? h("p", { class: "nx-error", role: "alert", text: w(result.error) }) : details(state, result, w),
      state.method === "batch" ? batchPanel(state, result, w) : null,
    ].filter(Boolean));
    report(state, result);
    const target = root.querySelector(focusAfter ?? keep ?? ":not(*)");
    focusAfter = null;
    if (target && document.activeElement !== target) {
      target.focus({ preventScroll: true });
      if (target.matches("input.nx-in")) target.select();     // typing replaces the value, as in a sheet
    }
  }

  // What the widget computed, for Python to read back (`Explorer.shown`).
  function report(state, result) {
    const shown = result.error ? { error: result.error } : {
      mean: result.mean, variance: result.variance, xhat: result.xhat, y: result.y,
    };
    shown.state = JSON.stringify(state);
    model.set("shown", shown);
    model.save_changes();
  }

  function field(label, input) {
    return h("label", { class: "nx-field" }, [h("span", { text: label }), input]);
  }

  function select(id, options, value, onchange) {
    return h("select", { id: `${uid}-${id}`, onchange: (e) => { focusAfter = `#${uid}-${id}`; onchange(e.target.value); } },
      options.map(([v, label]) => h("option", { value: v, selected: String(v) === String(value), text: label })));
  }

  function number(id, value, attrs, onchange) {
    return h("input", {
      id: `${uid}-${id}`, type: "number", value, inputmode: "decimal", ...attrs,
      onchange: (e) => {
        const v = Number(e.target.value);
        if (e.target.value.trim() === "" || !Number.isFinite(v)) { e.target.value = value; return; }
        focusAfter = `#${uid}-${id}`;
        onchange(v);
      },
    });
  }

  function controls(state, w) {
    const shape = sizes(state);
    const row = [];
    if (state.layouts.length > 1) {
      row.push(field(w("choose_layout"), select("layout", state.layouts.map((l) => [l, w(`layout_${l}`)]), state.layout,
        (v) => commit(model, { layout: v }))));
    }
    row.push(field(w("choose_method"), select("method",
      METHODS[state.layout].map((m) => [m, methodName(m, w)]), state.method, (v) => commit(model, { method: v }))));
    if (state.layout !== "table") {
      const names = state.layout === "image" ? ["axis_N", "axis_C", "axis_HW"] : ["axis_B", "axis_L", "axis_D"];
      const key = `${state.layout}_shape`;
      names.forEach((name, axis) => {
        const { min, max } = LIMITS[state.layout];
        row.push(field(`${w(name)}, ${min[axis]}–${max[axis]}`, number(`size${axis}`, shape[axis],
          { min: min[axis], max: max[axis], step: 1, class: "nx-size" }, (v) => {
            const next = shape.slice();
            next[axis] = Math.min(max[axis], Math.max(min[axis], Math.round(v)));
            commit(model, { [key]: next, [`${state.layout}_x`]: sampleValues(state.layout, next) });
          })));
      });
    }
    if (state.method === "group") {
      row.push(field(w("choose_groups"), select("groups", divisors(shape[1]).map((g) => [g, groupLabel(g, shape[1], w)]),
        state.groups, (v) => commit(model, { groups: Number(v) }))));
    }
    row.push(field(w("nx_gamma"), number("gamma", state.gamma, { step: "any", class: "nx-param" }, (v) => commit(model, { gamma: v }))));
    if (state.method !== "rms") {
      row.push(field(w("nx_beta"), number("beta", state.beta, { step: "any", class: "nx-param" }, (v) => commit(model, { beta: v }))));
    }
    row.push(field(w("nx_eps"), number("eps", state.eps, { step: "any", min: 0, class: "nx-param" },
      (v) => commit(model, { eps: Math.max(0, v) }))));
    return h("div", { class: "nx-controls" }, row);
  }

  function groupLabel(g, channels, w) {
    if (g === 1) return `G = 1 (= LayerNorm)`;
    if (g === channels) return `G = ${g} (= InstanceNorm)`;
    return `G = ${g}`;
  }

  // How many statistics, how many elements each pools, and the lit one (the text alternative).
  function summary(state, result, w, active) {
    const { share } = result;
    const members = share.ids.filter((id) => id === active).length;
    const [a, b, k] = position(result.shape, state.selected);
    const where = state.layout === "image" ? w("nx_where_image", { n: a, c: b, s: k })
      : state.layout === "sequence" ? w("nx_where_sequence", { b: a, l: b, d: k }) : w("nx_where_table", { n: "ABCDEF"[a - 1], d: k });
    const text = w("nx_summary", {
      method: methodName(state.method, w), total: share.count, pooled: share.pooled, which: active + 1, count: members,
    });
    return h("p", { class: "nx-summary", "aria-live": "polite" }, [
      h("strong", { text }), " ",
      h("span", { text: w("nx_selected", { where, x: fmt(result.x[state.selected]), y: fmt(result.y[state.selected]) }) }),
    ]);
  }

  function light(id) {
    hovered = id;
    for (const cell of root.querySelectorAll("[data-stat]")) {
      cell.classList.toggle("nx-lit", Number(cell.dataset.stat) === id);
    }
  }

  // Pointing at a cell lights its statistic; leaving it lights the chosen cell's again.
  function hover(id) {
    return {
      onmouseenter: () => light(id),
      onmouseleave: () => { light(current.share.ids[model.get("selected")]); hovered = null; },
    };
  }

  function cellEvents(i, id) {
    return {
      ...hover(id),
      onclick: () => { focusAfter = `[data-index="${i}"]`; commit(model, { selected: i }); },
      onfocus: () => light(id),
    };
  }

  // The image and sequence layouts: one SVG block per sample, cells coloured by statistic.
  function blocks(state, result, w, active) {
    const [A, B, K] = result.shape;
    const cell = 22, pad = 26;
    const rowName = state.layout === "image" ? "c" : "l";
    const colName = state.layout === "image" ? "hw" : "d";
    const out = [];
    for (let a = 0; a < A; a++) {
      const svg = h("svg:svg", {
        viewBox: `0 0 ${pad + K * cell + 2} ${pad + B * cell + 2}`, width: pad + K * cell + 2, height: pad + B * cell + 2,
        role: "group", "aria-label": w(state.layout === "image" ? "nx_block_image" : "nx_block_sequence", { n: a + 1 }),
        class: "nx-block",
      });
      svg.append(h("svg:text", { x: 2, y: 14, class: "nx-axis", text: `${state.layout === "image" ? "n" : "b"}=${a + 1}` }));
      svg.append(h("svg:text", { x: pad + (K * cell) / 2, y: 14, class: "nx-axis", "text-anchor": "middle", text: `${colName} →` }));
      svg.append(h("svg:text", { x: 4, y: pad + (B * cell) / 2 + 4, class: "nx-axis", text: `${rowName}↓` }));
      for (let b = 0; b < B; b++) {
        for (let k = 0; k < K; k++) {
          const i = (a * B + b) * K + k, id = result.share.ids[i];
          const label = w("nx_cell", {
            where: state.layout === "image" ? w("nx_where_image", { n: a + 1, c: b + 1, s: k + 1 })
              : w("nx_where_sequence", { b: a + 1, l: b + 1, d: k + 1 }),
            x: fmt(result.x[i]), y: result.error ? "—" : fmt(result.y[i]), which: id + 1,
          });
          const rect = h("svg:rect", {
            x: pad + k * cell + 1, y: pad + b * cell + 1, width: cell - 2, height: cell - 2, rx: 3,
            fill: PALETTE[id % PALETTE.length], stroke: STRONG[id % STRONG.length],
            class: `nx-cell${id === active ? " nx-lit" : ""}${i === state.selected ? " nx-selected" : ""}`,
            "data-stat": id, "data-index": i, tabindex: i === state.selected ? 0 : -1,
            role: "button", "aria-label": label, "aria-pressed": i === state.selected ? "true" : "false",
            ...cellEvents(i, id),
            onkeydown: (e) => move(e, i, result.shape),
          }, [h("svg:title", { text: label })]);
          svg.append(rect);
        }
      }
      out.push(svg);
    }
    return h("div", { class: "nx-blocks" }, out);
  }

  // Arrow keys move the selected element; Home/End jump to the first and last.
  function move(e, i, shape) {
    const [A, B, K] = shape, size = A * B * K;
    const step = { ArrowRight: 1, ArrowLeft: -1, ArrowDown: K, ArrowUp: -K, PageDown: B * K, PageUp: -B * K }[e.key];
    let next = step === undefined ? null : i + step;
    if (e.key === "Home") next = 0;
    if (e.key === "End") next = size - 1;
    if (next === null) return;
    e.preventDefault();
    next = Math.min(size - 1, Math.max(0, next));
    focusAfter = `[data-index="${next}"]`;
    commit(model, { selected: next });
  }

  // The 4 × 3 table: the inputs typed in place, then x̂ and y of every cell.
  function tableView(state, result, w, active) {
    const [N, , D] = result.shape;
    const head = h("tr", {}, [h("th", { scope: "col", text: "" }),
      ...Array.from({ length: D }, (_, d) => h("th", { scope: "col", text: w("nx_feature", { d: d + 1 }) }))]);
    const rows = [];
    for (let n = 0; n < N; n++) {
      const cells = [h("th", { scope: "row", text: w("nx_sample", { n: "ABCDEF"[n] }) })];
      for (let d = 0; d < D; d++) {
        const i = n * D + d, id = result.share.ids[i];
        const input = h("input", {
          type: "number", step: "any", inputmode: "decimal", value: result.x[i], "data-index": i, "data-stat": id,
          class: `nx-in${id === active ? " nx-lit" : ""}`,
          style: `background:${PALETTE[id % PALETTE.length]};border-color:${STRONG[id % STRONG.length]}`,
          "aria-label": w("nx_table_input", { n: "ABCDEF"[n], d: d + 1 }),
          // Choosing and editing wait for the focus to settle (setTimeout): redrawing while it moves
          // to another cell would take the focus from under the reader's click.
          onfocus: () => {
            light(id);
            if (model.get("selected") !== i) setTimeout(() => commit(model, { selected: i }), 0);
          },
          ...hover(id),
          onchange: (e) => {
            const v = Number(e.target.value);
            if (e.target.value.trim() === "" || !Number.isFinite(v)) { e.target.value = result.x[i]; return; }
            setTimeout(() => {
              const table = model.get("table").slice();
              table[i] = v;
              commit(model, { table });
            }, 0);
          },
        });
        const out = result.error ? [h("div", { text: "—" })]
          : [h("div", { text: `x̂ ${fmt(result.xhat[i], 3)}` }), h("div", { text: `y ${fmt(result.y[i], 3)}` })];
        cells.push(h("td", { class: i === state.selected ? "nx-selected" : null }, [input, h("div", { class: "nx-out" }, out)]));
      }
      rows.push(h("tr", {}, cells));
    }
    return h("div", {}, [
      h("p", { class: "nx-note", id: `${uid}-note`, text: w("nx_table_caption") }),
      h("div", { class: "nx-scroll" }, h("table", { class: "nx-table", "aria-describedby": `${uid}-note` }, [
        h("thead", {}, head), h("tbody", {}, rows),
      ])),
    ]);
  }

  // The chosen element's formula with its numbers, then every statistic.
  function details(state, result, w) {
    const [first, second] = formula(state, result, state.selected);
    const statName = state.method === "rms" ? w("mean_square") : "μ";
    const rows = result.mean.map((m, id) => h("tr", { "data-stat": id, class: id === result.share.ids[state.selected] ? "nx-lit" : null }, [
      h("th", { scope: "row", text: `${id + 1}` }),
      h("td", { text: fmt(m) }),
      state.method === "rms" ? null : h("td", { text: fmt(result.variance[id]) }),
    ]));
    return h("div", { class: "nx-details" }, [
      h("p", { class: "nx-formula" }, [h("code", { text: first }), h("br"), h("code", { text: second })]),
      h("p", { class: "nx-note", id: `${uid}-stats`, text: w("nx_stats_caption", { total: result.share.count, pooled: result.share.pooled }) }),
      h("div", { class: "nx-scroll" }, h("table", { class: "nx-stats", "aria-labelledby": `${uid}-stats` }, [
        h("thead", {}, h("tr", {}, [h("th", { scope: "col", text: w("nx_statistic") }), h("th", { scope: "col", text: statName }),
          state.method === "rms" ? null : h("th", { scope: "col", text: "σ²" })])),
        h("tbody", {}, rows),
      ])),
    ]);
  }

  // BatchNorm: training or evaluation, momentum (or None), and stepping through batches.
  function batchPanel(state, result, w) {
    const name = `${uid}-mode`;
    const radio = (value, label) => h("label", { class: "nx-radio" }, [
      h("input", { type: "radio", name, value, checked: state.training === value, id: `${uid}-mode-${value}`,
        onchange: () => { focusAfter = `#${uid}-mode-${value}`; commit(model, { training: value }); } }), label]);
    const cumulative = state.momentum === null;
    const rm = state.running_mean.map((v) => fmt(v)).join(", ");
    const rv = state.running_var.map((v) => fmt(v)).join(", ");
    return h("fieldset", { class: "nx-batch" }, [
      h("legend", { text: w("nx_running") }),
      h("div", { class: "nx-controls" }, [
        radio(true, w("train_mode")), radio(false, w("eval_mode")),
        field(w("nx_momentum"), number("momentum", cumulative ? "" : state.momentum, { step: "any", min: 0, max: 1, disabled: cumulative, class: "nx-param" },
          (v) => commit(model, { momentum: Math.min(1, Math.max(0, v)) }))),
        h("label", { class: "nx-radio" }, [h("input", { type: "checkbox", checked: cumulative, id: `${uid}-none`,
          onchange: (e) => { focusAfter = `#${uid}-none`; commit(model, { momentum: e.target.checked ? null : 0.1 }); } }), w("nx_momentum_none")]),
      ]),
      h("div", { class: "nx-controls" }, [
        h("button", { type: "button", id: `${uid}-step`, class: "nx-button", disabled: Boolean(result.error) && state.training,
          onclick: () => { const next = trainStep(state); if (next) { focusAfter = `#${uid}-step`; commit(model, next); } },
          text: w("nx_step") }),
        h("button", { type: "button", id: `${uid}-reset`, class: "nx-button",
          onclick: () => { focusAfter = `#${uid}-reset`; commit(model, { steps: 0, running_mean: state.running_mean.map(() => 0), running_var: state.running_var.map(() => 1) }); },
          text: w("nx_reset") }),
      ]),
      h("p", { class: "nx-running", "aria-live": "polite" }, [
        w("nx_steps", { steps: state.steps }), h("br"),
        h("code", { text: `running_mean = [${rm}]` }), h("br"), h("code", { text: `running_var = [${rv}]` }),
      ]),
    ]);
  }

  const onChange = () => { hovered = null; draw(); };
  const watched = [...STATE_KEYS.map(trait), "words", "lang"];
  for (const key of watched) model.on(`change:${key}`, onChange);
  draw();
  el.normlibExplorer = {                     // for tests: the state and every number, unrounded
    state: () => settle(stateOf(model)),
    numbers: () => compute(settle(stateOf(model))),
    set: (patch) => commit(model, patch),
    step: () => { const next = trainStep(settle(stateOf(model))); if (next) commit(model, next); return next !== null; },
  };
  return () => { for (const key of watched) model.off(`change:${key}`, onChange); };
}

export default { render };
