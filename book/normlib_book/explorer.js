// The normalization explorer: which elements share one statistic, and what every element becomes.
//
// One ES module, the front end of the anywidget `normlib_book.explorer.Explorer`. It runs wherever
// anywidget runs (JupyterLab, Notebook 7, VS Code, Colab: the state lives in the Python object's
// traitlets) and on the book's static page with no kernel (book/site/offline_book/anywidget-loader.js
// mounts it from the notebook's stored widget state). It computes in float64 and draws SVG and HTML.
//
// The first half is pure arithmetic, parsing and printing, exported for tests (tests/book/test_explorer.py,
// in Node and Chromium, against torch). The second half draws: the DOM is built once per layout and
// shape; a change updates values, text and classes in place, so focus, caret and hover stay.
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

export const divisors = (n) => Array.from({ length: n }, (_, k) => k + 1).filter((d) => n % d === 0);

// The three sizes [A, B, K] of a layout from the model's state.
export const sizes = (state) => (state.layout === "table" ? [4, 1, 3]
  : state.layout === "image" ? state.image_shape.slice() : state.sequence_shape.slice());

// Deterministic inputs for a shape (the same generator as explorer.py's `sample_values`): the
// minimal standard LCG, integers only (exact in float64), one decimal, channel c shifted by c/2 so
// that the channels differ in mean.
export function sampleValues(layout, shape, seed = 1) {
  const [A, B, K] = shape, out = [];
  for (let i = 0, s = seed; i < A * B * K; i++) {
    s = (48271 * s) % 2147483647;
    out.push(((s % 61) - 30) / 10 + (layout === "image" ? Math.floor(i / K) % B : i % K) / 2);
  }
  return out;
}
// Which statistic each element uses: {ids, count, channel, channels, pooled}.
export function sharing(layout, method, shape, groups) {
  const [A, B, K] = shape, size = A * B * K, ids = new Array(size), channel = new Array(size);
  const channels = layout === "image" ? B : K;
  let count = 0;
  for (let i = 0; i < size; i++) {
    const a = Math.floor(i / (B * K)), b = Math.floor(i / K) % B, k = i % K, c = layout === "image" ? b : k;
    let id;
    channel[i] = c;
    if (method === "batch") id = c;
    else if (method === "layer" || method === "rms") id = layout === "image" ? a : a * B + b;
    else if (method === "instance") id = a * B + b;
    else if (method === "group") id = a * groups + Math.floor(b / (B / groups));
    else if (method === "batch_dim0") id = b * K + k;
    else throw new Error(`unknown method ${method}`);
    ids[i] = id; count = Math.max(count, id + 1);
  }
  return { ids, count, channel, channels, pooled: size / count };
}
// n running sums, each compensated (Neumaier): a mean far from 0 stays exact to the last bit, as torch's float64 sums are.
function sums(n) {
  const total = new Array(n).fill(0), carry = new Array(n).fill(0);
  return {
    add(k, v) {           // an overflowing sum has no carry: ∞ − ∞ would turn torch's ∞ into NaN
      const t = total[k] + v;
      if (Number.isFinite(t)) carry[k] += Math.abs(total[k]) >= Math.abs(v) ? (total[k] - t) + v : (v - t) + total[k];
      total[k] = t;
    },
    totals: () => total.map((t, k) => (Number.isFinite(t) ? t + carry[k] : t)) };
}
// Everything the explorer shows, from its state: per statistic mean and variance (RMSNorm: mean
// square), per element x̂ and y, and BatchNorm's statistics in use. `error` names (a word's key, with
// `errorVars`) what torch refuses to compute: BatchNorm in training mode with one value per channel
// or ε ≤ 0, BatchNorm with ε < 0, InstanceNorm with one position.
export function compute(state) {
  const shape = sizes(state), x = valuesOf(state), { layout, method, eps, gamma } = state;
  const beta = method === "rms" ? 0 : state.beta;
  const share = sharing(layout, method, shape, state.groups);
  const n = share.count, size = x.length, sum = sums(n), m2 = sums(n);
  for (let i = 0; i < size; i++) sum.add(share.ids[i], method === "rms" ? x[i] * x[i] : x[i]);
  const mean = sum.totals().map((s) => s / share.pooled);
  if (method !== "rms") for (let i = 0; i < size; i++) m2.add(share.ids[i], (x[i] - mean[share.ids[i]]) ** 2);
  const variance = method === "rms" ? null : m2.totals().map((s) => s / share.pooled);   // two passes: σ² = E[(x − μ)²]
  const evaluating = method === "batch" && !state.training, refused = (error, errorVars = {}) => ({ shape, x, share, mean, variance, evaluating, error, errorVars });
  if (method === "batch" && state.training && share.pooled < 2) return refused("nx_error_one_value");
  if (method === "batch" && state.training && !(eps > 0)) return refused("nx_error_eps_training", { eps: exact(eps) });
  if (method === "batch" && !(eps >= 0)) return refused("nx_error_eps_negative", { eps: exact(eps) });
  if (method === "instance" && shape[2] < 2) return refused("nx_error_one_position");   // torch refuses it too
  const xhat = new Array(size), y = new Array(size);
  for (let i = 0; i < size; i++) {
    const id = share.ids[i], c = share.channel[i];
    xhat[i] = method === "rms"
      ? x[i] / Math.sqrt(mean[id] + eps)                      // x / √(E[x²] + ε)
      : evaluating
        ? (x[i] - state.running_mean[c]) / Math.sqrt(state.running_var[c] + eps)   // running statistics
        : (x[i] - mean[id]) / Math.sqrt(variance[id] + eps); // (x − μ) / √(σ² + ε)
    y[i] = gamma * xhat[i] + beta;                            // y = γ·x̂ + β
  }
  return { shape, x, share, mean, variance, xhat, y, evaluating, error: null, errorVars: {} };
}
// Why a NaN or ±∞ is on screen: [word key, its fields] per cause, the statistics named.
export function why(state, r) {
  if (r.error) return [];
  const rms = state.method === "rms", causes = {}, stats = rms ? r.mean : r.variance;
  const add = (key, which) => (causes[key] ??= []).push(which);
  const over = ["layer", "group"].includes(state.method) ? "nx_why_overflow_onepass" : "nx_why_overflow";  // torch's own kernels differ
  stats.forEach((v, id) => { if (v === Infinity && (rms || Number.isFinite(r.mean[id]))) add(over, id + 1); });
  (r.evaluating ? state.running_var : stats).forEach((v, id) => {
    if (v + state.eps === 0) add("nx_why_zero", id + 1);
    else if (v + state.eps < 0) add("nx_why_negative", id + 1);
  });
  const vars = { sum: rms ? "E[x²] + ε" : "σ² + ε", stat: rms ? "E[x²]" : "σ²" };
  const out = Object.entries(causes).map(([key, ids]) => [key, { ...vars, which: ids.join(", ") }]);
  const finite = (a) => (a ?? []).every(Number.isFinite);
  const explained = causes.nx_why_zero || causes.nx_why_negative;
  const unexplained = !(finite(r.xhat) && finite(r.y) && (finite(r.mean) && finite(r.variance) || causes[over]));
  return !explained && unexplained ? [...out, ["nx_why_other", {}]] : out;
}
// One training step of BatchNorm on the current batch: torch's update of the running statistics,
// with the unbiased (sample) variance; momentum null is the cumulative average (m = 1/k).
export function trainStep(state) {
  const result = compute({ ...state, training: true });
  if (result.error) return null;
  const steps = state.steps + 1, m = state.momentum === null ? 1 / steps : state.momentum;
  const unbiased = result.share.pooled / (result.share.pooled - 1);
  return { steps, running_mean: state.running_mean.map((r, c) => (1 - m) * r + m * result.mean[c]),
    running_var: state.running_var.map((r, c) => (1 - m) * r + m * result.variance[c] * unbiased) };
}

export const valuesOf = (state) => (state.layout === "table" ? state.table.slice()
  : state.layout === "image" ? state.image_x.slice() : state.sequence_x.slice());

// -- Reading what a person types --------------------------------------------------------------------
// A decimal point or a decimal comma ("1,5" is 1.5), the minus sign U+2212 as well as "-", an
// exponent, full-width digits (NFKC). Anything else is refused: {error: word key}, never a guess.
export function parseNumber(text) {
  const s = String(text).normalize("NFKC").trim().replace(/\u2212/g, "-").replace(/\s+/g, "");
  if (s === "") return { error: "nx_bad_empty" };
  let t = s;
  if (s.includes(",")) {
    if (s.includes(".") || (s.match(/,/g) || []).length > 1) return { error: "nx_bad_number" };
    if (/^[-+]?[1-9]\d{0,2},\d{3}$/.test(s)) return { error: "nx_bad_ambiguous" };   // 1,000: which?
    t = s.replace(",", ".");
  }
  if (!/^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(t)) return { error: "nx_bad_number" };
  const value = Number(t);
  return Number.isFinite(value) ? { value: value + 0 } : { error: "nx_bad_huge" };      // (−0 + 0 is 0)
}

// -- Printing numbers --------------------------------------------------------------------------------
const MINUS = "\u2212";
const signs = (s) => s.replace(/e\+/, "e").replace(/-/g, MINUS);
// `digits` significant digits, no trailing zeros, U+2212 for every minus; 1e-4 > |v| or |v| ≥ 1e15
// in scientific notation (1.25e−4); |v| below 1e-13 of `scale` (the data's size) is float noise: 0.
export function fmt(v, digits = 5, scale = 0) {
  if (Number.isNaN(v)) return "NaN";
  if (!Number.isFinite(v)) return v > 0 ? "∞" : `${MINUS}∞`;
  if (v === 0 || Math.abs(v) < 1e-13 * scale) return "0";
  const e = Math.floor(Math.log10(Math.abs(v)));
  const s = e < -4 || e >= 15 ? v.toExponential(digits - 1).replace(/\.?0+e/, "e")
    : v.toFixed(Math.max(0, digits - 1 - e)).replace(/(\.\d*?)0+$/, "$1").replace(/\.$/, "");
  return s === "-0" ? "0" : signs(s);
}
// A value as typed (ε, γ, β, the inputs): the shortest decimal that reads back as the same float64;
// and the number a printed string stands for.
export const exact = (v) => (v === null || v === undefined ? "" : signs(String(v)));
export const readBack = (s) => Number(s.replaceAll(MINUS, "-").replace("∞", "Infinity"));
// The size under which a value is float noise (fmt's scale): per statistic its members' largest |x|
// (x for μ, x² for σ² and E[x²]), per element that size carried through x̂ = (x − μ)/σ and y = γ·x̂ + β.
export function scales(state, r) {
  const { ids, channel } = r.share, stat = r.mean.map(() => 0);
  r.x.forEach((v, i) => { if (Number.isFinite(v)) stat[ids[i]] = Math.max(stat[ids[i]], Math.abs(v)); });
  const xhat = ids.map((id, i) => {       // RMSNorm's x̂ = x/√(E[x²] + ε) has no difference to lose digits in
    if (state.method === "rms") return 0;
    const c = channel[i], [mu, v] = r.evaluating ? [state.running_mean[c], state.running_var[c]] : [r.mean[id], r.variance[id]];
    return Math.max(stat[id], Math.abs(mu)) / Math.sqrt(v + state.eps);
  });
  const big = (a) => a.reduce((m, v) => (Number.isFinite(v) ? Math.max(m, Math.abs(v)) : m), 0), g = Math.abs(state.gamma);
  return { x: stat, x2: stat.map((v) => v * v), xhat, y: xhat.map((v) => g * v + Math.abs(state.beta)), rm: big(state.running_mean), rv: big(state.running_var) };
}
// Operands printed with the fewest digits (5 or more) from which the shown arithmetic gives the
// shown result (5 significant digits): [operands as printed, result as printed].
function fitted(values, scale, recompute, result, rscale) {
  const want = fmt(result, 5, rscale);
  let shown = values.map((v, k) => fmt(v, 17, scale[k]));
  for (let p = 5; p <= 17; p++) {
    const trial = values.map((v, k) => fmt(v, p, scale[k]));
    if (fmt(recompute(trial.map(readBack)), 5, rscale) === want) { shown = trial; break; }
  }
  return [shown, want];
}
// The formula of one element with its numbers: [x̂'s line, y's line].
export function formula(state, result, i) {
  const { x, xhat, y, share, mean, variance } = result, sc = scales(state, result);
  const id = share.ids[i], c = share.channel[i], eps = state.eps, e = exact(eps);
  let first;
  if (state.method === "rms") {
    const [[a, m], r] = fitted([x[i], mean[id]], [0, sc.x2[id]], ([a, m]) => a / Math.sqrt(m + eps), xhat[i], sc.xhat[i]);
    first = `x̂ = ${a} / √(${m} + ${e}) = ${r}`;
  } else {
    const [mu, v] = result.evaluating ? [state.running_mean[c], state.running_var[c]] : [mean[id], variance[id]];
    const [[a, m, s], r] = fitted([x[i], mu, v], [0, sc.x[id], sc.x2[id]], ([a, m, s]) => (a - m) / Math.sqrt(s + eps), xhat[i], sc.xhat[i]);
    first = `x̂ = (${a} − ${m}) / √(${s} + ${e}) = ${r}`;
  }
  const beta = state.method === "rms" ? 0 : state.beta, [[h], r] = fitted([xhat[i]], [sc.xhat[i]], ([h]) => state.gamma * h + beta, y[i], sc.y[i]);
  const second = state.method === "rms" ? `y = γ·x̂ = ${exact(state.gamma)} · ${h} = ${r}`
    : `y = γ·x̂ + β = ${exact(state.gamma)} · ${h} + ${exact(state.beta)} = ${r}`;
  return [first, second];
}
// Where element i sits, in the layout's own words: [a, b, k] one-based.
export const position = ([, B, K], i) => [Math.floor(i / (B * K)) + 1, (Math.floor(i / K) % B) + 1, (i % K) + 1];
export const indexIn = ([A, B, K], [a, b, k]) => (a <= A && b <= B && k <= K ? ((a - 1) * B + b - 1) * K + k - 1 : null);

export const STATE_KEYS = ["layout", "layouts", "image_shape", "sequence_shape", "image_x", "sequence_x", "table",
  "method", "groups", "eps", "gamma", "beta", "training", "momentum", "running_mean", "running_var", "steps", "selected"];
// Keep the state consistent after a change: method allowed for the layout, G divides C, the
// running statistics one per channel, the selected element inside the tensor.
export function settle(state) {
  const s = { ...state };
  if (!s.layouts.includes(s.layout)) s.layout = s.layouts[0];
  if (!METHODS[s.layout].includes(s.method)) s.method = METHODS[s.layout][0];
  const shape = sizes(s), channels = s.layout === "image" ? shape[1] : shape[2];
  if (s.layout === "image" && shape[1] % s.groups !== 0) s.groups = Math.max(...divisors(shape[1]).filter((d) => d <= s.groups));
  if (s.running_mean.length !== channels) Object.assign(s, { running_mean: new Array(channels).fill(0), running_var: new Array(channels).fill(1), steps: 0 });
  if (!(s.selected >= 0 && s.selected < shape[0] * shape[1] * shape[2])) s.selected = 0;
  return s;
}
// What a typed value may be, beyond being a number: [word key, fields] when refused, else null.
export function refusal(key, value, state) {
  if (key.startsWith("size")) {
    const [lo, hi] = ["min", "max"].map((m) => LIMITS[state.layout][m][Number(key.slice(4))]);
    return Number.isInteger(value) && value >= lo && value <= hi ? null : ["nx_bad_whole", { min: lo, max: hi }];
  }
  if (key === "momentum") return value >= 0 && value <= 1 ? null : ["nx_bad_range", { min: 0, max: 1 }];
  if (key === "eps" && state.method === "batch" && state.training && !(value > 0)) return ["nx_bad_eps_training", {}];
  return key === "eps" && state.method === "batch" && value < 0 ? ["nx_bad_eps_negative", {}] : null;
}

// ---------------------------------------------------------------------------------------------
// Drawing. `model` is anywidget's (get / set / save_changes / on).

const SVGNS = "http://www.w3.org/2000/svg";
// One hue per statistic, spread by the golden angle so that neighbours differ; the cells also carry
// the statistic's number, since with many statistics two hues come close.
const hue = (id) => Math.round((id * 137.508) % 360);
const tint = (id, lit) => `hsl(${hue(id)} ${lit ? "75% 72%" : "45% 90%"})`;
const edge = (id) => `hsl(${hue(id)} 60% 28%)`;

function h(tag, attrs = {}, children = []) {
  const el = tag.startsWith("svg:") ? document.createElementNS(SVGNS, tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "text") el.textContent = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : v);
  }
  el.append(...[].concat(children).filter(Boolean));
  return el;
}
const setText = (el, s) => { if (el.textContent !== s) el.textContent = s; };
const setAttr = (el, k, v) => { if (v === null) el.removeAttribute(k); else if (el.getAttribute(k) !== String(v)) el.setAttribute(k, v); };
const show = (el, yes) => (el.hidden = !yes);      // true when hidden

const words = (model, table = model.get("words") || {}) => (key, vars = {}) =>
  Object.entries(vars).reduce((s, [k, v]) => s.split(`{${k}}`).join(String(v)), table[key] ?? key);
// The trait behind a state key: ipywidgets' DOMWidget already has a trait named `layout`.
const trait = (key) => (key === "layout" ? "form" : key);
const stateOf = (model) => Object.fromEntries(STATE_KEYS.map((k) => [k, model.get(trait(k))]));

function commit(model, patch) {        // set what changed, save once
  const changed = Object.entries(settle({ ...stateOf(model), ...patch }))
    .filter(([k, v]) => JSON.stringify(v) !== JSON.stringify(model.get(trait(k))));
  for (const [k, v] of changed) model.set(trait(k), v);
  if (changed.length) model.save_changes();
}

const SIZE_NAMES = { image: ["axis_N", "axis_C", "axis_HW"], sequence: ["axis_B", "axis_L", "axis_D"] };
const where = (layout, [a, b, k], w) => (layout === "image" ? w("nx_where_image", { n: a, c: b, s: k })
  : layout === "sequence" ? w("nx_where_sequence", { b: a, l: b, d: k }) : w("nx_where_table", { n: "ABCDEF"[a - 1], d: k }));
const groupLabel = (g, channels) => (g === 1 ? "G = 1 (= LayerNorm)" : g === channels ? `G = ${g} (= InstanceNorm)` : `G = ${g}`);

let counter = 0;

function render({ model, el }) {
  const uid = `nx${++counter}`;
  const ui = { state: null, result: null, hovered: null, w: words(model), held: false, queue: [] };
  const now = () => settle(stateOf(model));
  const root = el.appendChild(h("div", { class: "nx", lang: model.get("lang") }));
  // A box a person types a number into. `read(state)` is its value; `commit(value)` applies it;
  // a value that is not a number, or that `refusal` refuses, is shown refused and changes nothing.
  function textBox(key, name, read, apply, attrs = {}) {
    const id = `${uid}-${key}`, msg = h("span", { class: "nx-msg", id: `${id}-msg`, hidden: true });
    const input = h("input", { id, type: "text", inputmode: "decimal", autocomplete: "off", spellcheck: "false",
      "aria-describedby": msg.id, ...attrs });
    let shown = null, fresh = false;
    const box = { input, msg, key }, invalid = () => input.hasAttribute("aria-invalid");
    box.clear = () => { input.removeAttribute("aria-invalid"); msg.textContent = ""; msg.hidden = true; };
    box.enter = () => {
      if (input.value === shown && !invalid()) return;
      const s = now(), kept = read(s), typed = input.value, parsed = parseNumber(typed);
      const problem = parsed.error ? [parsed.error, {}] : refusal(key, parsed.value, s);
      if (problem) {                 // shown with the field, announced; the state stays as it was
        const text = ui.w(problem[0], { ...problem[1], typed: typed.trim(), name: name(), kept: exact(kept) });
        input.setAttribute("aria-invalid", "true");
        return later(() => { msg.hidden = false; msg.textContent = text; say(text); });
      }
      box.clear();
      input.value = shown = exact(parsed.value);
      apply(parsed.value);
    };
    box.update = (s) => {            // never under the reader's typing, nor over a refused value
      if (invalid() || (document.activeElement === input && input.value !== shown)) return;
      shown = exact(read(s));
      if (input.value !== shown) input.value = shown;
    };
    input.addEventListener("change", box.enter);
    input.addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); box.enter(); input.select(); } });
    // A click or tap selects the whole value, as in a sheet: typing replaces it.
    input.addEventListener("focus", () => { input.select(); fresh = true; });
    input.addEventListener("mouseup", (e) => { if (fresh) e.preventDefault(); fresh = false; });
    input.addEventListener("input", () => { fresh = false; });
    return box;
  }
  const field = (control, msg = null, caption = h("span")) =>
    ({ caption, wrap: h("div", { class: "nx-field" }, [h("label", { for: control.id }, caption), control, msg]) });
  function setOptions(select, pairs, value) {
    const shown = JSON.stringify(Array.from(select.options, (o) => [o.value, o.text]));
    if (shown !== JSON.stringify(pairs.map(([v, t]) => [String(v), t]))) select.replaceChildren(...pairs.map(([v, t]) => h("option", { value: v, text: t })));
    if (select.value !== String(value)) select.value = String(value);
  }
  // -- the controls: layout, method, sizes, G, γ, β, ε ---------------------------------------------
  const controls = (() => {
    const select = (key, cast = String) => h("select", { id: `${uid}-${key}`, onchange: (e) => commit(model, { [key]: cast(e.target.value) }) });
    const layout = select("layout"), method = select("method"), groups = select("groups", Number);
    const parts = { layout: field(layout), method: field(method), groups: field(groups) };
    const boxes = [0, 1, 2].map((axis) => textBox(`size${axis}`, () => ui.w(SIZE_NAMES[ui.state.layout][axis]).split(" ")[0],
      (s) => sizes(s)[axis], (v) => {
        const s = now(), next = sizes(s).map((n, j) => (j === axis ? v : n));
        commit(model, { [`${s.layout}_shape`]: next, [`${s.layout}_x`]: sampleValues(s.layout, next),
          selected: indexIn(next, position(sizes(s), s.selected)) ?? 0 });       // the chosen cell stays where it was
      }, { class: "nx-text nx-size" }));
    const params = ["gamma", "beta", "eps"].map((key) => textBox(key, () => ({ gamma: "γ", beta: "β", eps: "ε" })[key],
      (s) => s[key], (v) => commit(model, { [key]: v }), { class: "nx-text nx-param" }));
    const sizeFields = boxes.map((b) => field(b.input, b.msg)), paramFields = params.map((b) => field(b.input, b.msg));
    const row = h("div", { class: "nx-controls" }, [parts.layout.wrap, parts.method.wrap, ...sizeFields.map((f) => f.wrap),
      parts.groups.wrap, ...paramFields.map((f) => f.wrap)]);
    function update(s, w) {
      const shape = sizes(s);
      show(parts.layout.wrap, s.layouts.length > 1);
      setText(parts.layout.caption, w("choose_layout")); setText(parts.method.caption, w("choose_method"));
      setOptions(layout, s.layouts.map((l) => [l, w(`layout_${l}`)]), s.layout);
      setOptions(method, METHODS[s.layout].map((m) => [m, methodName(m, w)]), s.method);
      sizeFields.forEach((f, axis) => {
        if (show(f.wrap, s.layout !== "table")) return;
        setText(f.caption, `${w(SIZE_NAMES[s.layout][axis])}, ${LIMITS[s.layout].min[axis]}–${LIMITS[s.layout].max[axis]}`);
        boxes[axis].update(s);
      });
      show(parts.groups.wrap, s.method === "group"); setText(parts.groups.caption, w("choose_groups"));
      if (s.layout === "image") setOptions(groups, divisors(shape[1]).map((g) => [g, groupLabel(g, shape[1])]), s.groups);
      ["nx_gamma", "nx_beta", "nx_eps"].forEach((key, k) => { setText(paramFields[k].caption, w(key)); params[k].update(s); });
      show(paramFields[1].wrap, s.method !== "rms");
    }
    return { el: row, update };
  })();
  // -- the one live region: the state in a sentence, following hover and focus ----------------------
  const summary = { strong: h("strong"), rest: h("span") };
  summary.el = h("p", { class: "nx-summary", "aria-live": "polite" }, [summary.strong, " ", summary.rest]);
  function say(message) { setText(summary.strong, ""); setText(summary.rest, message); }
  // the lit statistic's members, μ and σ², as text a reader checks by hand
  const members = h("p", { class: "nx-members" });
  // -- the drawing: SVG blocks (image, sequence) or the 4 × 3 table ---------------------------------
  const drawing = h("div", { class: "nx-drawing" });
  let cells = [], drawn = null;       // cells[i]: {el (focusable), paint(s, r, active), update}
  const pick = (i, focus) => { commit(model, { selected: i }); if (focus) cells[i].target.focus(); };
  function blocks(s, shape) {
    const [A, B, K] = shape, cell = 28, pad = 26;
    const rowName = s.layout === "image" ? "c" : "l", colName = s.layout === "image" ? "hw" : "d", svgs = [];
    cells = [];
    for (let a = 0; a < A; a++) {
      const svg = h("svg:svg", { viewBox: `0 0 ${pad + K * cell + 2} ${pad + B * cell + 2}`, width: pad + K * cell + 2,
        height: pad + B * cell + 2, role: "group", class: "nx-block",
        "aria-label": ui.w(s.layout === "image" ? "nx_block_image" : "nx_block_sequence", { n: a + 1, b: a + 1 }) });
      svg.append(h("svg:text", { x: 2, y: 14, class: "nx-axis", "aria-hidden": "true", text: `${s.layout === "image" ? "n" : "b"}=${a + 1}` }),
        h("svg:text", { x: pad + (K * cell) / 2, y: 14, class: "nx-axis", "text-anchor": "middle", "aria-hidden": "true", text: `${colName} →` }),
        h("svg:text", { x: 4, y: pad + (B * cell) / 2 + 4, class: "nx-axis", "aria-hidden": "true", text: `${rowName}↓` }));
      for (let b = 0; b < B; b++) {
        for (let k = 0; k < K; k++) {
          const i = (a * B + b) * K + k, title = h("svg:title");
          const rect = h("svg:rect", { x: pad + k * cell + 1, y: pad + b * cell + 1, width: cell - 2, height: cell - 2, rx: 3,
            role: "button", "data-index": i, class: "nx-cell", onkeydown: (e) => move(e, i, shape),
            onclick: () => { const to = indexIn(sizes(now()), [a + 1, b + 1, k + 1]); if (to !== null) pick(to, false); },
            onmouseenter: () => light(stat()), onmouseleave: () => light(null), onfocus: () => light(stat()), onblur: () => light(null) }, [title]);
          const stat = () => Number(rect.dataset.stat), label = h("svg:text", { x: pad + k * cell + cell / 2,
            y: pad + b * cell + cell / 2 + 4, class: "nx-num", "text-anchor": "middle", "aria-hidden": "true" });
          svg.append(rect, label);
          cells.push({ target: rect,
            update(s2, r, sc) {
              const id = r.share.ids[i], chosen = i === s2.selected, text = ui.w("nx_cell", { where: where(s2.layout,
                position(shape, i), ui.w), x: fmt(r.x[i], 5), y: r.error ? "—" : fmt(r.y[i], 5, sc.y[i]), which: id + 1 });
              setAttr(rect, "data-stat", id); setAttr(rect, "aria-label", text); setText(title, text);
              setAttr(rect, "stroke", edge(id)); setText(label, String(id + 1));
              setAttr(rect, "tabindex", chosen ? 0 : -1); setAttr(rect, "aria-pressed", String(chosen));
              rect.classList.toggle("nx-selected", chosen);
            },
            paint(active) { rect.classList.toggle("nx-lit", stat() === active); setAttr(rect, "fill", tint(stat(), stat() === active)); },
          });
        }
      }
      svgs.push(svg);
    }
    drawing.replaceChildren(h("div", { class: "nx-blocks" }, svgs));
  }
  // Arrows move the chosen cell (Home/End, PageUp/PageDown: first, last, sample); Enter and Space choose.
  function move(e, i, shape) {
    const [A, B, K] = shape, size = A * B * K;
    const to = { ArrowRight: i + 1, ArrowLeft: i - 1, ArrowDown: i + K, ArrowUp: i - K, PageDown: i + B * K, PageUp: i - B * K,
      Home: 0, End: size - 1, Enter: i, " ": i }[e.key];
    if (to === undefined) return;
    e.preventDefault();                  // Space would scroll the page
    pick(Math.min(size - 1, Math.max(0, to)), true);
  }
  // The 4 × 3 table: the inputs typed in place, then x̂ and y of every cell. Up and Down move to the
  // cell above or below, Left and Right at the ends of the text to the previous or next cell.
  function table(s, shape) {
    const [N, , D] = shape;
    const head = h("tr", {}, [h("td", { class: "nx-corner" }),
      ...Array.from({ length: D }, (_, d) => h("th", { scope: "col", text: ui.w("nx_feature", { d: d + 1 }) }))]);
    const rows = [], msgs = [];
    cells = [];
    for (let n = 0; n < N; n++) {
      const tr = h("tr", {}, [h("th", { scope: "row", text: ui.w("nx_sample", { n: "ABCDEF"[n] }) })]);
      for (let d = 0; d < D; d++) {
        const i = n * D + d;
        const name = ui.w("nx_table_input", { n: "ABCDEF"[n], d: d + 1 });
        const box = textBox(`cell${i}`, () => name, (s2) => s2.table[i], (v) => commit(model, { table: model.get("table").map((t, j) => (j === i ? v : t)) }),
          { class: "nx-text nx-in", "data-index": i, "aria-label": name }), input = box.input;
        msgs.push(box.msg);
        input.addEventListener("focus", () => { light(null); if (model.get("selected") !== i) commit(model, { selected: i }); });
        input.addEventListener("mouseenter", () => light(Number(input.dataset.stat)));
        input.addEventListener("mouseleave", () => light(null));
        input.addEventListener("keydown", (e) => {
          const at = input.selectionStart, end = input.selectionEnd, len = input.value.length;
          const step = { ArrowUp: -D, ArrowDown: D }[e.key] ?? (e.key === "ArrowLeft" && at === 0 && end === 0 ? -1
            : e.key === "ArrowRight" && at === len && end === len ? 1 : 0);
          if (!step) return;
          e.preventDefault();
          box.enter();
          cells[i + step]?.target.focus();
        });
        const xh = h("div"), yv = h("div"), td = h("td", {}, [input, h("div", { class: "nx-out" }, [xh, yv])]);
        tr.append(td);
        cells.push({ target: input,
          update(s2, r, sc) {
            setAttr(input, "data-stat", r.share.ids[i]); input.style.borderColor = edge(r.share.ids[i]);
            box.update(s2);
            td.classList.toggle("nx-selected", i === s2.selected);
            setText(xh, r.error ? "—" : `x̂ ${fmt(r.xhat[i], 4, sc.xhat[i])}`);
            setText(yv, r.error ? "" : `y ${fmt(r.y[i], 4, sc.y[i])}`);
          },
          paint(active) {
            const lit = Number(input.dataset.stat) === active;
            input.classList.toggle("nx-lit", lit); input.style.background = tint(Number(input.dataset.stat), lit);
          },
        });
      }
      rows.push(tr);
    }
    drawing.replaceChildren(h("p", { class: "nx-note", id: `${uid}-note`, text: ui.w("nx_table_caption") }),
      h("div", { class: "nx-scroll" }, h("table", { class: "nx-table", "aria-describedby": `${uid}-note` }, [
        h("thead", {}, head), h("tbody", {}, rows)])), h("div", {}, msgs));
  }
  // -- the chosen cell's formula, why a NaN or ∞ shows, every statistic -----------------------------
  const details = (() => {
    const whyNote = h("p", { class: "nx-why", hidden: true }), evalNote = h("p", { class: "nx-note", hidden: true });
    const first = h("code"), second = h("code"), caption = h("p", { class: "nx-note", id: `${uid}-stats` }), head = h("tr"), body = h("tbody");
    const el = h("div", { class: "nx-details" }, [whyNote, evalNote, h("p", { class: "nx-formula" }, [first, h("br"), second]),
      caption, h("div", { class: "nx-scroll" }, h("table", { class: "nx-stats", "aria-labelledby": `${uid}-stats` }, [h("thead", {}, head), body]))]);
    let rows = [];
    function update(s, r, w, sc) {
      if (show(el, !r.error)) return;
      const reasons = why(s, r).map(([key, vars]) => w(key, vars)).join(" ");
      setText(whyNote, reasons); show(whyNote, Boolean(reasons));
      setText(evalNote, w("nx_uses_running")); show(evalNote, r.evaluating);
      const [a, b] = formula(s, r, s.selected);
      setText(first, a); setText(second, b);
      setText(caption, w(r.share.count === 1 ? "nx_stats_caption_one" : "nx_stats_caption", { total: r.share.count, pooled: r.share.pooled }));
      const rms = s.method === "rms", columns = [w("nx_statistic"), rms ? w("mean_square") : "μ", ...(rms ? [] : ["σ²"])];
      if (head.textContent !== columns.join("")) head.replaceChildren(...columns.map((c) => h("th", { scope: "col", text: c })));
      if (rows.length !== r.share.count || rows[0]?.cells.length !== columns.length) {
        rows = r.mean.map((_, id) => h("tr", { "data-row": id }, [h("th", { scope: "row", text: `${id + 1}` }), h("td"), rms ? null : h("td")]));
        body.replaceChildren(...rows);
      }
      rows.forEach((tr, id) => {
        setText(tr.cells[1], fmt(r.mean[id], 5, (rms ? sc.x2 : sc.x)[id]));
        if (!rms) setText(tr.cells[2], fmt(r.variance[id], 5, sc.x2[id]));
      });
    }
    const paint = (active) => rows.forEach((tr, id) => tr.classList.toggle("nx-lit", id === active));
    return { el, update, paint };
  })();
  // -- BatchNorm: training or evaluation, momentum (or None), stepping through batches ---------------
  const batch = (() => {
    const radio = (value) => h("input", { type: "radio", name: `${uid}-mode`, value: String(value), id: `${uid}-mode-${value}`,
      onchange: () => commit(model, { training: value }) });
    const train = radio(true), evaluate = radio(false), trainLabel = h("span"), evalLabel = h("span"), noneLabel = h("span");
    const momentum = textBox("momentum", () => ui.w("nx_momentum"), (s) => s.momentum, (v) => commit(model, { momentum: v }),
      { class: "nx-text nx-param" });
    const momentumField = field(momentum.input, momentum.msg);
    const none = h("input", { type: "checkbox", id: `${uid}-none`,
      onchange: (e) => { momentum.clear(); commit(model, { momentum: e.target.checked ? null : 0.1 }); } });
    const step = h("button", { type: "button", id: `${uid}-step`, class: "nx-button",
      onclick: () => { const next = trainStep(now()); if (next) commit(model, next); } });
    const reset = h("button", { type: "button", id: `${uid}-reset`, class: "nx-button",
      onclick: () => commit(model, { steps: 0, running_mean: now().running_mean.map(() => 0), running_var: now().running_var.map(() => 1) }) });
    const legend = h("legend"), count = h("span"), rm = h("code"), rv = h("code"), el = h("fieldset", { class: "nx-batch" }, [legend,
      h("div", { class: "nx-controls" }, [h("label", { class: "nx-radio" }, [train, trainLabel]),
        h("label", { class: "nx-radio" }, [evaluate, evalLabel]), momentumField.wrap, h("label", { class: "nx-radio" }, [none, noneLabel])]),
      h("div", { class: "nx-controls" }, [step, reset]),
      h("p", { class: "nx-running" }, [count, h("br"), rm, h("br"), rv])]);
    function update(s, r, w, sc) {
      if (show(el, s.method === "batch")) return;
      setText(legend, w("nx_running")); setText(trainLabel, w("train_mode")); setText(evalLabel, w("eval_mode"));
      [[noneLabel, "nx_momentum_none"], [momentumField.caption, "nx_momentum"], [step, "nx_step"], [reset, "nx_reset"]].forEach(([e, k]) => setText(e, w(k)));
      train.checked = s.training; evaluate.checked = !s.training; none.checked = s.momentum === null;
      momentum.input.disabled = s.momentum === null; step.disabled = trainStep(s) === null;
      momentum.update(s);
      setText(count, w("nx_steps", { steps: s.steps }));
      setText(rm, `running_mean = [${s.running_mean.map((v) => fmt(v, 5, sc.rm)).join(", ")}]`);
      setText(rv, `running_var = [${s.running_var.map((v) => fmt(v, 5, sc.rv)).join(", ")}]`);
    }
    return { el, update };
  })();
  root.append(controls.el, drawing, summary.el, members, details.el, batch.el);     // text that changes comes after the drawing
  // The lit statistic (pointed at, focused, or the chosen cell's) in the cells, the statistics table,
  // the members line and the live region.
  const light = (id) => { ui.hovered = id; paint(); };
  function paint() {
    const s = ui.state, r = ui.result, w = ui.w, sc = ui.scales, active = ui.hovered ?? r.share.ids[s.selected];
    for (const c of cells) c.paint(active);
    details.paint(active);
    summary.el.classList.toggle("nx-error", Boolean(r.error));
    if (show(members, !r.error)) return say(w(r.error, r.errorVars));
    const count = r.share.ids.filter((id) => id === active).length;
    setText(summary.strong, w(r.share.count === 1 ? "nx_summary_one" : "nx_summary", {
      method: methodName(s.method, w), total: r.share.count, pooled: r.share.pooled, which: active + 1, count }));
    const more = [w("nx_selected", { where: where(s.layout, position(r.shape, s.selected), w), x: fmt(r.x[s.selected], 5),
      y: fmt(r.y[s.selected], 5, sc.y[s.selected]) })];
    if (s.method === "batch") more.push(w("nx_steps", { steps: s.steps }));
    if (r.evaluating) more.push(w("nx_uses_running"));
    setText(summary.rest, more.join(" "));
    const values = r.x.filter((_, i) => r.share.ids[i] === active).map((v) => fmt(v, 5)).join(", "), rms = s.method === "rms";
    setText(members, w(rms ? "nx_members_rms" : "nx_members", { which: active + 1, values,
      mean: fmt(r.mean[active], 5, (rms ? sc.x2 : sc.x)[active]), var: rms ? "" : fmt(r.variance[active], 5, sc.x2[active]) }));
  }
  let pending = false;      // one update per action: the model's changes are drawn once, in a microtask
  function update() {
    pending = false; ui.hovered = null;          // a change lights the chosen cell's statistic again
    ui.w = words(model);
    const s = ui.state = now(), r = ui.result = compute(s), sc = ui.scales = scales(s, r);
    const shape = sizes(s), key = `${s.layout} ${shape.join("×")} ${model.get("lang")}`;
    if (drawn !== key) { drawn = key; if (s.layout === "table") table(s, shape); else blocks(s, shape); }
    controls.update(s, ui.w);
    for (const c of cells) c.update(s, r, sc);
    details.update(s, r, ui.w, sc);
    batch.update(s, r, ui.w, sc);
    paint();
    report(s, r);
  }
  const schedule = () => { if (!pending) { pending = true; queueMicrotask(() => later(update)); } };
  // While a pointer is pressed the page does not move under it: a change made by the press (the blur
  // of an edited box) is drawn once it is released, so the click lands where it was aimed. A tap's click
  // comes after its pointerup (late on a busy phone): a touch is released by its click, or by a key, or
  // after 3 s when no click came (a long press); a release belongs to its press, never to a newer one.
  let presses = 0;
  function later(fn) { if (ui.held) ui.queue.push(fn); else fn(); }
  const releaseAfter = (ms) => { const press = presses;
    setTimeout(() => { if (press === presses) { ui.held = false; ui.queue.splice(0).forEach((fn) => fn()); } }, ms); };
  const release = () => releaseAfter(0);
  const listeners = { pointerdown: () => { presses += 1; ui.held = true; }, click: release, keydown: release,
    pointercancel: release, contextmenu: release, pointerup: (e) => releaseAfter(e.pointerType === "mouse" ? 0 : 3000) };
  for (const [type, fn] of Object.entries(listeners)) window.addEventListener(type, fn, true);
  // What the widget computed, for Python to read back (`Explorer.shown`).
  function report(s, r) {
    const shown = r.error ? { error: r.error } : { mean: r.mean, variance: r.variance, xhat: r.xhat, y: r.y };
    shown.state = JSON.stringify(s);
    model.set("shown", shown);
    model.save_changes();
  }
  const watched = [...STATE_KEYS.map(trait), "words", "lang"];
  for (const key of watched) model.on(`change:${key}`, schedule);
  update();
  el.normlibExplorer = { state: now, numbers: () => compute(now()), set: (patch) => commit(model, patch),   // for tests
    step: () => { const next = trainStep(now()); if (next) commit(model, next); return next !== null; } };
  return () => { watched.forEach((key) => model.off(`change:${key}`, schedule)); Object.entries(listeners).forEach(([t, fn]) => window.removeEventListener(t, fn, true)); };
}

export default { render };
