"""Helpers shared by the test modules (plain functions and constants; the fixtures are in
conftest.py). Test modules import from here, never from one another:

    from helpers import ROOT, has_hangul, text_outputs

How "equal to torch" is judged
------------------------------
The issue's tolerances are the *base* tolerances: 1e-10 (float64), 1e-5 (float32),
1e-3 (float16), 1e-2 (bfloat16), used as both absolute and relative tolerance.

On top of the base, every comparison allows the rounding error that *no* implementation in
that precision can avoid: normalizing computes ``x − μ`` from numbers of size ``max|x|``,
so a rounding of ``u · max|x|`` (``u`` = the compute dtype's machine epsilon) is divided by
``σ = sqrt(var + ε)``. The condition number ``κ = max|x| / σ`` of each group of elements
that share a statistic measures it. For well-conditioned data (κ of order 1–10) the
allowance is ~1e-6 in float32 and the base tolerance is what decides; for data around 1e4
with spread 1 (κ ≈ 1e4) it is ~1e-3 in float32, and torch itself is that far from the
float64 truth (``test_functional.py::test_large_offset_float32`` measures both).
"""

from __future__ import annotations

import functools
import math
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import pytest
import torch
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent


# --- Comparing with torch ------------------------------------------------------------------------

BASE_TOL = {
    torch.float64: 1e-10,
    torch.float32: 1e-5,
    torch.float16: 1e-3,
    torch.bfloat16: 1e-2,
}

# Multiples of u·κ allowed: a handful of roundings in the mean, the subtraction and the
# variance, in either implementation.
ROUNDING_FACTOR = 32.0


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def roundoff(dtype: torch.dtype) -> float:
    return torch.finfo(compute_dtype(dtype)).eps


def assert_close_elementwise(ours: torch.Tensor, ref: torch.Tensor, allowance, what: str,
                             base: float, valid: torch.Tensor | None = None,
                             exact: torch.Tensor | None = None) -> float:
    """|ours − ref| ≤ base·(1 + |ref|) + allowance, elementwise, over the ``valid`` elements.

    ``exact`` (optional) is the same computation in float64. Where torch itself is farther
    than that limit from it (torch's float16/bfloat16 backward can be), an element also
    passes when normlib is at least as close to ``exact`` as torch is, within the limit.

    Returns the largest |ours − ref| seen (so tests can report it). Non-finite reference
    values must be matched by non-finite values of ours, unless ``exact`` is finite there.
    """
    assert ours.shape == ref.shape, f"{what}: shape {tuple(ours.shape)} != torch's {tuple(ref.shape)}"
    assert ours.dtype == ref.dtype, f"{what}: dtype {ours.dtype} != torch's {ref.dtype}"
    o, r = ours.detach().double(), ref.detach().double()
    if valid is None:
        valid = torch.ones_like(r, dtype=torch.bool)
    valid = valid.expand_as(r)
    finite_ref = torch.isfinite(r)
    bad_nonfinite = valid & ~finite_ref & torch.isfinite(o)
    if exact is not None:
        # torch's own rounding can break down (eps = 0, values that differ in the last bit):
        # a finite answer where the float64 answer is finite too is not a mismatch.
        bad_nonfinite &= ~torch.isfinite(exact.detach().double())
    assert not bad_nonfinite.any(), f"{what}: torch gives inf/nan where normlib gives a finite value"
    check = valid & finite_ref
    if not check.any():
        return 0.0
    allowance = torch.as_tensor(allowance, dtype=torch.float64).expand_as(r)
    diff = (o - r).abs()
    limit = base * (1 + r.abs()) + allowance
    over = check & ~(diff <= limit)
    if exact is not None and over.any():
        e = exact.detach().double()
        closer = (o - e).abs() <= (r - e).abs() + limit
        over = over & ~closer
    if over.any():
        idx = tuple(int(i) for i in over.nonzero()[0])
        raise AssertionError(
            f"{what}: normlib differs from torch by {diff[idx].item():.3e} at index {idx} "
            f"(normlib {o[idx].item():.10g}, torch {r[idx].item():.10g}, allowed {limit[idx].item():.3e}); "
            f"{int(over.sum())} of {int(check.sum())} elements out of tolerance"
        )
    return float(diff[check].max()) if check.any() else 0.0


# --- The book ------------------------------------------------------------------------------------

def site_pages() -> list[str]:
    """Every page of the site as ``<lang>/<docname>`` (``ko/chapters/ko/06_family``): each
    language's book (book/site/website.py, from _config.yml's languages and _toc.yml), root first, in
    the order of its table of contents. The HTML file is ``<site>/<lang>/<docname>.html``."""
    from book.site.website import CONFIG, TOC, language_toc, languages, load, toc_files

    config, toc = load(CONFIG), load(TOC)
    langs = languages(config)
    return [f"{lang}/{f}" for lang in langs for f in toc_files(language_toc(toc, lang, langs))]


def running_in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


# --- Text of the chapters ------------------------------------------------------------------------

from book.site.local_site import CHROMIUM, launch_chromium  # noqa: E402  (one launcher for tests and tools)


def unavailable(msg: str, what: str = "the browser tests must run"):
    """Skip with ``msg`` on a laptop that lacks something; under CI=true, fail instead."""
    if running_in_ci():
        pytest.fail(f"{msg} (CI=true: {what})")
    pytest.skip(msg)


AXE_ARTIFACTS = ROOT / "test-artifacts" / "accessibility"


def axe_missing() -> None:
    """Skip (fail under CI=true) when axe-core is not in node_modules."""
    from book.site.axe_audit import AXE

    if not AXE.exists():
        unavailable(f"{AXE.relative_to(ROOT)} not found: run npm ci (axe-core is a devDependency)",
                    "the accessibility tests must run")


def check_axe(page_path: str, found: dict[str, list[dict]]) -> None:
    """Save one page's axe violations (all impacts) to test-artifacts/accessibility/ and fail on any
    critical or serious one, in either colour mode (book/site/axe_audit.audit's {"light": …, "dark": …})."""
    import json
    from urllib.parse import unquote

    from book.site.axe_audit import blocking, describe

    AXE_ARTIFACTS.mkdir(parents=True, exist_ok=True)
    name = re.sub(r"[/?=%]+", "_", page_path.replace(".html", ""))
    (AXE_ARTIFACTS / f"{name}.json").write_text(json.dumps(found, ensure_ascii=False, indent=1), encoding="utf-8")
    problems = {mode: blocking(violations) for mode, violations in found.items()}
    if any(problems.values()):
        pytest.fail(f"{unquote(page_path)}: critical or serious violations\n" + "\n".join(
            f"[{mode} mode]\n{describe(v)}" for mode, v in problems.items() if v), pytrace=False)


def chromium_browser(purpose: str):
    """Yield headless Chromium (Debian's, driven by Playwright), or skip/fail saying what is missing.

    ``purpose`` finishes the sentences "install Chromium … to <purpose>" and "CI=true: <purpose>"."""
    if not CHROMIUM.exists():
        unavailable(f"{CHROMIUM} not found: install Chromium (apt-get install chromium) to {purpose}", purpose)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("Python Playwright is not installed: pip install -r requirements.txt", purpose)
    with sync_playwright() as p:
        browser = launch_chromium(p)
        yield browser
        browser.close()


def init_batch_norm_state(module: torch.nn.Module, num_features: int, eps: float, momentum) -> None:
    """What assignment 2 gives its ``BatchNorm.__init__``: eps, momentum, γ, β and the running statistics."""
    module.eps, module.momentum = eps, momentum
    module.weight = torch.nn.Parameter(torch.ones(num_features))
    module.bias = torch.nn.Parameter(torch.zeros(num_features))
    module.register_buffer("running_mean", torch.zeros(num_features))
    module.register_buffer("running_var", torch.ones(num_features))
    module.register_buffer("num_batches_tracked", torch.tensor(0))


MARK_HANGUL = """(limit) => {
  const texts = [];
  for (const e of document.querySelectorAll('body *')) {
    if (limit && texts.length >= limit) break;
    const own = Array.from(e.childNodes).filter(c => c.nodeType === Node.TEXT_NODE).map(c => c.textContent).join('');
    if (/[\\uac00-\\ud7a3]/.test(own) && e.getClientRects().length) {
      e.setAttribute('data-hangul-probe', String(texts.length));
      texts.push(own.trim().slice(0, 40));
    }
  }
  return texts;
}"""


def hangul_without_nanum(page, limit: Optional[int] = None) -> tuple[list[str], list[str]]:
    """(the visible elements' Hangul texts, up to ``limit``; those Chromium drew without
    NanumGothic, so as boxes on a machine without a Korean system font). document.fonts cannot
    tell: a font can be loaded and still not be used for a run of text."""
    texts = page.evaluate(MARK_HANGUL, limit)
    if not texts:
        return texts, []
    cdp = page.context.new_cdp_session(page)
    try:
        cdp.send("DOM.enable")
        cdp.send("CSS.enable")
        root = cdp.send("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
        nodes = cdp.send("DOM.querySelectorAll", {"nodeId": root, "selector": "[data-hangul-probe]"})["nodeIds"]
        bad = []
        for node in nodes:
            fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]
            # No fonts: not drawn at all (scrolled away inside a box, collapsed).
            if fonts and not any("nanum" in f["familyName"].lower() for f in fonts):
                attributes = cdp.send("DOM.getAttributes", {"nodeId": node})["attributes"]
                text = texts[int(attributes[attributes.index("data-hangul-probe") + 1])]
                bad.append(f"{text!r} drawn with {', '.join(f['familyName'] for f in fonts)}")
        return texts, bad
    finally:
        cdp.detach()


def has_hangul(text: str) -> bool:
    return any("\uac00" <= ch <= "\ud7a3" for ch in text)


# --- A page on a phone (test_browser.py, the book's pages) --------------------------------------

PHONE = {"width": 390, "height": 844}

# What a page shows beyond the screen's edges, outside a box that scrolls sideways (html and body
# do not count: the page itself scrolling sideways is the fault), the outermost element of each:
# shown (not visibility: hidden, not clipped away as the screen-reader-only text is), wider than
# nothing (width > 0). Then each box of the chapter (article) that scrolls sideways right now:
# reached by keyboard (its own tab stop, or one inside it, such as MathJax's), named for a screen
# reader (aria-label, or the equation it holds), and showing it scrolls (the fade or shadow that
# book/site/offline_book/narrow-screens.css draws where scroll-boxes.js marks data-scrolls).
BEYOND_THE_SCREEN = """() => {
  const width = document.documentElement.clientWidth;
  const scrolls = e => { const o = getComputedStyle(e).overflowX;
    return (o === 'auto' || o === 'scroll') && e !== document.documentElement && e !== document.body; };
  const inBox = e => { for (let p = e.parentElement; p; p = p.parentElement) if (scrolls(p)) return true; return false; };
  const unseen = e => { if (getComputedStyle(e).visibility === 'hidden') return true;
    for (let p = e; p; p = p.parentElement) { const s = getComputedStyle(p);
      if (s.clip !== 'auto' || s.clipPath !== 'none') return true; }
    return false; };
  const out = e => { const r = e.getBoundingClientRect(); return r.width > 0 && (r.right > width + 1 || r.left < -1); };
  const beyond = Array.from(document.body.querySelectorAll('*')).filter(e => out(e) && !inBox(e) && !unseen(e));
  const describe = e => { const r = e.getBoundingClientRect();
    return `${e.tagName.toLowerCase()}.${(e.getAttribute('class') || '').trim().split(/\\s+/).join('.')} ` +
           `${Math.round(r.left)}..${Math.round(r.right)} px: ${(e.textContent || '').trim().replace(/\\s+/g, ' ').slice(0, 50)}`; };
  const focusable = 'a[href], button, input, select, textarea, [tabindex]:not([tabindex="-1"])';
  const boxes = Array.from(document.querySelectorAll('article *')).filter(e =>
    e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1 && scrolls(e) && !unseen(e));
  return {
    width, pageWidth: document.documentElement.scrollWidth,
    beyond: beyond.filter(e => !beyond.includes(e.parentElement)).map(describe),
    widest: Math.round(Math.max(width, ...beyond.map(e => e.getBoundingClientRect().right))),
    boxes: boxes.map(e => { const s = getComputedStyle(e);
      return { box: describe(e), wide: e.scrollWidth,
               keyboard: e.tabIndex >= 0 || !!e.querySelector(focusable),
               named: !!(e.getAttribute('aria-label') || e.getAttribute('aria-labelledby')) ||
                      e.matches('mjx-container') || !!e.querySelector('mjx-container'),
               cue: 'scrolls' in e.dataset && (s.maskImage !== 'none' || s.webkitMaskImage !== 'none' || s.boxShadow !== 'none') }; }),
  };
}"""


# Settled at the new width: book/site/offline_book/scroll-boxes.js has marked the boxes at that width (it
# says so on <html data-scroll-boxes>; a page without it, the landing page, has none to mark) and
# the theme's sidebars have slid out of the screen (CSS transitions).
SETTLED = """(width) => (document.documentElement.dataset.scrollBoxes === String(width) ||
                       !document.querySelector('script[src*="scroll-boxes"]')) &&
                      !document.getAnimations().some(a => a instanceof CSSTransition && a.playState === 'running')"""


def on_a_phone(page, settle_ms: int = 2_000) -> dict:
    """The page (loaded at any width) resized to a phone's screen (PHONE): BEYOND_THE_SCREEN's
    report once the page has SETTLED, or ``settle_ms`` have passed (the report then shows what is
    unsettled). The page's CSS transitions are turned off first: the sidebars then leave at once."""
    page.add_style_tag(content="*, *::before, *::after { transition: none !important; }")
    page.set_viewport_size(PHONE)
    try:
        page.wait_for_function(SETTLED, arg=PHONE["width"], timeout=settle_ms)
    except Exception:   # Playwright's TimeoutError
        pass
    return page.evaluate(BEYOND_THE_SCREEN)


def phone_problems(report: dict) -> list[str]:
    """What on_a_phone's report shows wrong, one line each."""
    problems = [f"wider than the {report['width']} px screen: {e}" for e in report["beyond"]]
    if report["pageWidth"] > report["width"]:
        problems.append(f"the page scrolls sideways: {report['pageWidth']} px wide")
    for b in report["boxes"]:
        missing = [what for what in ("keyboard", "named", "cue") if not b[what]]
        if missing:
            problems.append(f"a box that scrolls sideways without {'/'.join(missing)}: {b['box']}")
    return problems


def text_outputs(cell) -> list[str]:
    """The cell's text outputs; consecutive chunks of one stream are joined (a kernel may flush
    one print in several pieces, differently from run to run)."""
    out: list[str] = []
    previous = None
    for o in cell.get("outputs", []):
        if o.output_type == "stream":
            if previous == o.name:
                out[-1] += o.text
            else:
                out.append(o.text)
            previous = o.name
            continue
        previous = None
        if o.output_type in ("execute_result", "display_data") and "text/plain" in o.get("data", {}):
            out.append(o.data["text/plain"])
        elif o.output_type == "error":
            out.append(f"{o.ename}: {o.evalue}")
    return out



# --- Pages that name commands and paths (the teachers' and students' guides, README, CONTRIBUTING) --

INLINE_CODE = re.compile(r"`([^`\n]+)`")
MAKE_COMMAND = re.compile(r"\bmake ([a-z][a-z0-9-]*)")
FENCED = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
FILE_SUFFIX = re.compile(r"\w\.(py|yml|yaml|md|csv|db|ipynb|txt|html|toml|cfg|json|js|css|po|bib|j2|lock)$")


def make_targets() -> set[str]:
    """The targets the Makefile defines (``name:`` at the start of a line, not ``NAME :=``)."""
    return set(re.findall(r"^([\w.-]+)\s*:(?!=)", (ROOT / "Makefile").read_text(encoding="utf-8"), re.MULTILINE))


def make_commands(page: str, code_only: bool = False) -> set[str]:
    """The make targets ``page`` runs: ``make X`` anywhere, or (``code_only``) in inline code and
    fenced blocks only, where English prose's verb "make" is not read as a command."""
    if code_only:
        page = "\n".join(INLINE_CODE.findall(FENCED.sub("", page)) + FENCED.findall(page))
    return set(MAKE_COMMAND.findall(page))


def named_paths(page: str) -> set[str]:
    """Inline code that names a file or folder: with a slash, or a file name with a known suffix
    (not a command with spaces, an absolute path, a URL, a bare suffix such as ``.ipynb``)."""
    found = set()
    for span in INLINE_CODE.findall(FENCED.sub("", page)):
        span = span.strip()
        if " " in re.sub(r"<[^>]*>", "", span) or span.startswith(("/", "#", "~")) or "://" in span:
            continue
        if span.startswith(".") and "/" not in span:     # a suffix (.ipynb) or .venv
            continue
        if "/" in span or FILE_SUFFIX.search(span):
            found.add(span)
    return found


def git_ignored(path: str) -> bool:
    """Whether git ignores ``path``, a file a command writes (release/, grades.csv, _build/ …)."""
    try:
        return subprocess.run(["git", "check-ignore", "-q", "--no-index", path], cwd=ROOT).returncode == 0
    except OSError:
        pytest.skip("git is not installed")


def concrete_paths(path: str) -> list[str]:
    """The repository paths a named path stands for: the part before a placeholder (``<student>``,
    ``…``), without a pytest id (``::test_x``) or a line (``:12``), braces spelled out
    (``results/fold.{md,json}`` is two files)."""
    path = re.split(r"[<…*]", path.split("::")[0], maxsplit=1)[0]
    path = re.sub(r":\d+$", "", path)
    braces = re.search(r"\{([^{}]*)\}", path)
    if braces:
        return [p for choice in braces.group(1).split(",")
                for p in concrete_paths(path[:braces.start()] + choice + path[braces.end():])]
    return [path]


MD_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def local_links(page: str) -> list[str]:
    """The page's Markdown links that are not to another site."""
    return [link for link in MD_LINK.findall(page) if "://" not in link]


def links_out_of_the_book(page: str, folder: Path) -> list[str]:
    """Local links of a page of ``folder`` (``chapters/<language>/``) that are not a page of that same
    folder named by its file name (``04_layernorm.ipynb#…``): a link into the repository or into the
    other language's book leaves the reader's book."""
    bad = []
    for link in local_links(page):
        target = link.split("#")[0]
        if "/" in target or not target.endswith((".ipynb", ".md")) or not (folder / target).is_file():
            bad.append(link)
    return bad


def lines_without_hangul(page: str) -> list[str]:
    """The lines of a Korean page, outside code, with no Hangul (table rules and blank lines aside)."""
    page = FENCED.sub("", page)
    lines = [line for line in page.splitlines() if line.strip() and not re.fullmatch(r"\|[-| ]+\|", line.strip())]
    return [line for line in lines if not has_hangul(INLINE_CODE.sub("", line))]


def unreal_paths(page: str) -> list[str]:
    """The paths ``page`` names that are neither in the repository nor written by a command
    (git-ignored)."""
    return sorted(path for path in named_paths(page)
                  if not all((ROOT / p).exists() or git_ignored(p) for p in concrete_paths(path)))

# --- Comparing normlib's functions with torch's on generated inputs (test_functional.py,
# test_autograd.py, test_torch_suite.py) -----------------------------------------------------------

DTYPES = [torch.float64, torch.float32, torch.float16, torch.bfloat16]


EPS = [1e-5, 1e-3, 0.5, 0.0, -1e-7]          # zero and negative eps included


MOMENTA = [0.1, 0.0, 1.0, 0.3, -0.5]         # momentum 0 and negative included


OFFSETS = [0.0, 0.0, 3.0, -250.0, 1e4]       # 1e4: the "large offset" of the issue


SCALES = [1.0, 1.0, 1e-2, 30.0]


@dataclass
class Inputs:
    x: torch.Tensor
    weight: Optional[torch.Tensor]
    bias: Optional[torch.Tensor]
    upstream: torch.Tensor


def make_inputs(shape, dtype, seed, offset, scale, param_shape, with_weight, with_bias) -> Inputs:
    g = torch.Generator().manual_seed(seed)
    x = (offset + scale * torch.randn(shape, generator=g, dtype=torch.float64)).to(dtype)
    # γ and β random, not ones and zeros: those hide bugs.
    weight = (0.5 + torch.rand(param_shape, generator=g, dtype=torch.float64) * 1.5).to(dtype) if with_weight else None
    bias = torch.randn(param_shape, generator=g, dtype=torch.float64).to(dtype) if with_bias else None
    upstream = torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)
    return Inputs(x, weight, bias, upstream)


def forward_and_grads(fn: Callable, inp: Inputs, **kwargs):
    x = inp.x.clone().requires_grad_(True)
    w = None if inp.weight is None else inp.weight.clone().requires_grad_(True)
    b = None if inp.bias is None else inp.bias.clone().requires_grad_(True)
    out = fn(x, weight=w, bias=b, **kwargs)
    leaves = [t for t in (x, w, b) if t is not None]
    grads = torch.autograd.grad((out * inp.upstream).sum(), leaves, allow_unused=True)
    grads = [torch.zeros_like(t) if gr is None else gr for t, gr in zip(leaves, grads)]
    names = ["input"] + (["weight"] if w is not None else []) + (["bias"] if b is not None else [])
    return out, dict(zip(names, grads))


def group_scales(x: torch.Tensor, labels: torch.Tensor, eps: float, centered: bool):
    """Per element, in float64: M = largest |x| of its group, μ, σ = sqrt(var + eps) of its group."""
    x64 = x.detach().double().reshape(-1)
    lab = labels.reshape(-1)
    n_groups = int(lab.max()) + 1 if lab.numel() else 0
    count = torch.zeros(n_groups, dtype=torch.float64).index_add_(0, lab, torch.ones_like(x64))
    mean = torch.zeros(n_groups, dtype=torch.float64).index_add_(0, lab, x64) / count
    if not centered:
        mean = torch.zeros_like(mean)
    sq = torch.zeros(n_groups, dtype=torch.float64).index_add_(0, lab, (x64 - mean[lab]) ** 2) / count
    big = torch.zeros(n_groups, dtype=torch.float64).scatter_reduce_(0, lab, x64.abs(), "amax")
    var_eps = sq + eps
    sigma = torch.where(var_eps > 0, var_eps.clamp_min(0).sqrt(), torch.full_like(var_eps, float("nan")))
    shape = labels.shape
    return big[lab].reshape(shape), mean[lab].reshape(shape), sigma[lab].reshape(shape), sq[lab].reshape(shape)


def exact_of(fn: Callable, inp: Inputs, **kwargs):
    """The same torch computation in float64 on the same (already rounded) inputs."""
    up = lambda t: None if t is None else t.double()
    return forward_and_grads(fn, Inputs(inp.x.double(), up(inp.weight), up(inp.bias), inp.upstream.double()), **kwargs)


def compare(ours, theirs, inp: Inputs, labels, eps, centered, channel_of=None, what="", exact=None):
    """Compare outputs and gradients of two (forward, grads) results with conditioning-aware tolerance."""
    (out_o, grads_o), (out_t, grads_t) = ours, theirs
    out_e, grads_e = exact if exact is not None else (None, {})
    dtype = inp.x.dtype
    base, u, K = BASE_TOL[dtype], roundoff(dtype), ROUNDING_FACTOR
    big, mu, sigma, _ = group_scales(inp.x, labels, eps, centered)
    valid = torch.isfinite(sigma) & (sigma > 0)
    kappa = torch.where(valid, (big + mu.abs()) / sigma, torch.zeros_like(sigma))
    gamma = 1.0 if inp.weight is None else float(inp.weight.double().abs().max()) if inp.weight.numel() else 1.0
    assert_close_elementwise(out_o, out_t, K * u * kappa * gamma, f"{what} output", base, valid,
                                                 out_e)

    gmax = float(inp.upstream.double().abs().max()) if inp.upstream.numel() else 0.0
    inv_sigma = torch.where(valid, 1.0 / sigma, torch.zeros_like(sigma))
    # dx = γ/σ · (g − mean(g) − x̂·mean(g·x̂)): every term is of size γ·|g|/σ.
    term = gamma * gmax * inv_sigma
    assert_close_elementwise(
        grads_o["input"], grads_t["input"], (base + K * u * kappa) * term * 4, f"{what} grad input", base, valid,
        grads_e.get("input"))
    all_valid = bool(valid.all())
    if all_valid:  # parameter gradients sum over groups: only meaningful when every group is regular
        x_hat = torch.where(valid, (inp.x.double() - mu) * inv_sigma, torch.zeros_like(sigma))
        k_max = float(kappa.max()) if kappa.numel() else 0.0
        g_abs = inp.upstream.double().abs()
        for name, weighting in (("weight", g_abs * x_hat.abs().clamp_min(1)), ("bias", g_abs)):
            if name not in grads_t:
                continue
            total = _per_param(weighting, grads_t[name].shape, channel_of)
            assert_close_elementwise(
                grads_o[name], grads_t[name], (base + K * u * k_max) * total, f"{what} grad {name}", base,
                exact=grads_e.get(name))


def _per_param(values: torch.Tensor, param_shape, channel_of) -> torch.Tensor:
    """Sum |…| over the elements that feed each parameter entry."""
    if channel_of is None:  # layer/rms: parameters have the trailing shape
        return values.reshape(-1, *param_shape).sum(0) if values.numel() else torch.zeros(param_shape, dtype=values.dtype)
    dims = [d for d in range(values.dim()) if d != 1]
    return values.sum(dim=dims) if dims else values


common = dict(
    dtype=st.sampled_from(DTYPES),
    seed=st.integers(0, 2**31 - 1),
    offset=st.sampled_from(OFFSETS),
    scale=st.sampled_from(SCALES),
    eps=st.sampled_from(EPS),
    with_weight=st.booleans(),
    with_bias=st.booleans(),
)


@st.composite
def layer_shapes(draw):
    ndim = draw(st.integers(1, 5))
    shape = [draw(st.integers(0 if i == 0 else 1, 4)) for i in range(ndim)]
    k = draw(st.integers(1, ndim))
    norm = tuple(shape[ndim - k:])
    kind = draw(st.sampled_from(["int", "list", "tuple", "size"]))
    if kind == "int" and k == 1:
        ns = norm[0]
    elif kind == "list":
        ns = list(norm)
    elif kind == "size":
        ns = torch.Size(norm)
    else:
        ns = norm
    return tuple(shape), ns, norm


@st.composite
def channel_shapes(draw, min_ndim=2, batch_min=0):
    ndim = draw(st.integers(min_ndim, 5))
    n = draw(st.integers(batch_min, 4))
    c = draw(st.integers(1, 4))
    spatial = [draw(st.integers(1, 3)) for _ in range(ndim - 2)]
    return (n, c, *spatial)


def running_stats(c, dtype, seed):
    g = torch.Generator().manual_seed(seed + 1)
    rdtype = dtype   # torch's CPU kernels want running stats in the input dtype (or all params in float32)
    return (torch.randn(c, generator=g, dtype=torch.float64).to(rdtype),
            (0.5 + torch.rand(c, generator=g, dtype=torch.float64)).to(rdtype))


def compare_running(ours, theirs, inp, labels, eps, momentum, count, what, exact=(None, None)):
    dtype = inp.x.dtype
    base, u, K = BASE_TOL[dtype], roundoff(dtype), ROUNDING_FACTOR
    big, mu, sigma, var = group_scales(inp.x, labels, 0.0, True)
    m = abs(momentum)
    big_max = float(big.max()) if big.numel() else 0.0
    var_max = float(var.max()) if var.numel() else 0.0
    bessel = count / (count - 1) if count > 1 else 1.0
    # running_mean gets m·mean: rounding of the mean is u·max|x|. running_var gets m·var·n/(n-1):
    # the variance's rounding is u·κ·var, with κ = max|x|/sqrt(var).
    assert_close_elementwise(ours[0], theirs[0], K * u * big_max * m, f"{what} running_mean", base,
                             exact=exact[0])
    kappa_var = big_max * math.sqrt(var_max) if var_max > 0 else big_max ** 2
    assert_close_elementwise(ours[1], theirs[1], K * u * (kappa_var + var_max) * bessel * m,
                             f"{what} running_var", base, exact=exact[1])


def compare_eval(ours, theirs, inp, rm, rv, eps, what):
    """Eval mode: x̂ = (x − running_mean)/sqrt(running_var + eps), an elementwise affine map."""
    dtype = inp.x.dtype
    base, u, K = BASE_TOL[dtype], roundoff(dtype), ROUNDING_FACTOR
    view = (1, -1) + (1,) * (inp.x.dim() - 2)
    sigma = (rv.double() + eps).sqrt().reshape(view)
    kappa = (inp.x.double().abs() + rm.double().abs().reshape(view)) / sigma
    gamma = 1.0 if inp.weight is None else float(inp.weight.double().abs().max())
    assert_close_elementwise(ours[0], theirs[0], K * u * kappa * gamma, f"{what} output", base)
    gmax = float(inp.upstream.double().abs().max()) if inp.upstream.numel() else 0.0
    assert_close_elementwise(ours[1]["input"], theirs[1]["input"], K * u * gamma * gmax / sigma,
                             f"{what} grad input", base)
    for name in ("weight", "bias"):
        if name in theirs[1]:
            total = inp.upstream.double().abs().mul(1 + kappa).sum(dim=[d for d in range(inp.x.dim()) if d != 1])
            assert_close_elementwise(ours[1][name], theirs[1][name], (base + K * u) * total, f"{what} grad {name}", base)



# --- Inputs torch refuses: each case's call, and the words normlib's message must hold
# (test_errors.py, test_autograd.py) ------------------------------------------------------------------

x24 = torch.randn(2, 4)


x253 = torch.randn(2, 5, 3)


x243 = torch.randn(2, 4, 3)


ints = torch.arange(24).reshape(2, 4, 3)


# (id, call taking the functional module or the nn module, strings the message must contain)
CASES = [
    # BatchNorm training with one value per channel
    ("bn-one-value-2d", lambda F: F.batch_norm(torch.randn(1, 3), torch.zeros(3), torch.ones(3), training=True),
     ["(1, 3)", "more than 1 value per channel"]),
    ("bn-one-value-3d", lambda F: F.batch_norm(torch.randn(1, 3, 1), None, None, training=True),
     ["(1, 3, 1)", "more than 1 value per channel"]),
    ("bn-one-value-4d", lambda F: F.batch_norm(torch.randn(1, 3, 1, 1), None, None, training=True),
     ["(1, 3, 1, 1)", "more than 1 value per channel"]),
    # channels not divisible by num_groups
    ("gn-not-divisible", lambda F: F.group_norm(x253, 2), ["(2, 5, 3)", "num_groups=2", "divisible"]),
    ("gn-one-value-per-group", lambda F: F.group_norm(torch.randn(1, 2), 2), ["(1, 2)", "num_groups=2"]),
    # normalized_shape that does not match the trailing dims
    ("ln-mismatch", lambda F: F.layer_norm(x24, (3,)), ["(2, 4)", "(*, 3)"]),
    ("ln-mismatch-2d", lambda F: F.layer_norm(x243, (4, 4)), ["(2, 4, 3)", "(*, 4, 4)"]),
    ("ln-too-few-dims", lambda F: F.layer_norm(torch.randn(4), (3, 4)), ["(4,)", "(*, 3, 4)"]),
    ("rms-mismatch", lambda F: F.rms_norm(x24, (3,)), ["(2, 4)", "(*, 3)"]),
    # weight / bias of the wrong shape
    ("ln-weight", lambda F: F.layer_norm(x24, (4,), torch.ones(3)), ["(4,)", "(3,)", "weight"]),
    ("ln-bias", lambda F: F.layer_norm(x24, (4,), None, torch.ones(5)), ["(4,)", "(5,)", "bias"]),
    ("rms-weight", lambda F: F.rms_norm(x24, (4,), torch.ones(2, 2)), ["(4,)", "(2, 2)", "weight"]),
    ("bn-weight", lambda F: F.batch_norm(x24, None, None, torch.ones(5), training=True), ["(4,)", "(5,)", "weight"]),
    ("bn-bias", lambda F: F.batch_norm(x24, None, None, None, torch.ones(3), training=True), ["(4,)", "(3,)", "bias"]),
    ("bn-running", lambda F: F.batch_norm(x24, torch.zeros(3), torch.ones(3), training=True),
     ["(4,)", "(3,)", "running_mean"]),
    ("gn-weight", lambda F: F.group_norm(x243, 2, torch.ones(3)), ["(4,)", "(3,)", "weight"]),
    ("in-weight", lambda F: F.instance_norm(x243, None, None, torch.ones(3)), ["(4,)", "(3,)", "weight"]),
    # integer inputs
    ("ln-int", lambda F: F.layer_norm(ints, (3,)), ["torch.int64", "floating-point"]),
    ("rms-int", lambda F: F.rms_norm(ints, (3,)), ["torch.int64", "floating-point"]),
    ("bn-int", lambda F: F.batch_norm(ints, None, None, training=True), ["torch.int64", "floating-point"]),
    ("gn-int", lambda F: F.group_norm(ints, 2), ["torch.int64", "floating-point"]),
    ("in-int", lambda F: F.instance_norm(ints), ["torch.int64", "floating-point"]),
    # inputs with too few dimensions
    ("bn-1d", lambda F: F.batch_norm(torch.randn(3), torch.zeros(3), torch.ones(3), training=True),
     ["(3,)", "(N, C, *)"]),
    ("gn-1d", lambda F: F.group_norm(torch.randn(5), 1), ["(5,)", "(N, C, *)"]),
    ("in-no-spatial", lambda F: F.instance_norm(torch.randn(2, 3)), ["(2, 3)", "spatial"]),
    ("in-one-spatial", lambda F: F.instance_norm(torch.randn(2, 3, 1)), ["(2, 3, 1)", "spatial"]),
    # evaluation without running statistics; eps torch refuses; momentum=None in the functional form
    ("bn-eval-no-stats", lambda F: F.batch_norm(x24, None, None, training=False), ["running_mean", "training=True"]),
    ("in-eval-no-stats", lambda F: F.instance_norm(x243, use_input_stats=False), ["running_mean", "use_input_stats"]),
    ("bn-eps-zero-training", lambda F: F.batch_norm(x24, None, None, training=True, eps=0.0), ["eps", "0.0"]),
    ("bn-eps-negative-eval", lambda F: F.batch_norm(x24, torch.zeros(4), torch.ones(4), eps=-1e-3), ["eps", "-0.001"]),
    ("bn-momentum-none", lambda F: F.batch_norm(x24, torch.zeros(4), torch.ones(4), training=True, momentum=None),
     ["momentum", "None"]),
    ("in-momentum-none", lambda F: F.instance_norm(x243, torch.zeros(4), torch.ones(4), momentum=None),
     ["momentum", "None"]),
    # one running statistic without the other
    ("bn-train-running-var-missing", lambda F: F.batch_norm(x24, torch.zeros(4), None, training=True),
     ["running_mean", "running_var", "None"]),
    ("in-train-running-var-missing", lambda F: F.instance_norm(x243, torch.zeros(4), None),
     ["running_mean", "running_var", "None"]),
    ("bn-eval-running-var-missing", lambda F: F.batch_norm(x24, torch.zeros(4), None, training=False),
     ["running_var=None", "training=True"]),
    # normalized_shape naming no dimension; num_groups that is no count of groups
    ("ln-empty-shape", lambda F: F.layer_norm(x24, ()), ["normalized_shape", "()"]),
    ("rms-empty-shape", lambda F: F.rms_norm(x24, ()), ["normalized_shape", "()"]),
    ("gn-zero-groups", lambda F: F.group_norm(x243, 0), ["num_groups=0"]),
    ("gn-negative-groups", lambda F: F.group_norm(x243, -2), ["-2", "num_groups"]),
    ("ln-shape-not-ints", lambda F: F.layer_norm(x24, "4"), ["normalized_shape", "'4'"]),
    # what torch's forward-mode and reverse-mode autograd refuse: the running statistics are not differentiable
    ("bn-running-mean-requires-grad", lambda F: F.batch_norm(x24, torch.zeros(4, requires_grad=True), torch.ones(4)),
     ["running_mean", "requires_grad"]),
    ("bn-running-var-requires-grad-training",
     lambda F: F.batch_norm(x24, torch.zeros(4), torch.ones(4, requires_grad=True), training=True),
     ["running_var", "requires_grad"]),
    ("in-running-mean-requires-grad",
     lambda F: F.instance_norm(x243, torch.zeros(4, requires_grad=True), torch.ones(4), use_input_stats=False),
     ["running_mean", "requires_grad"]),
    ("bn-eval-running-mean-tangent", lambda F: with_tangents(
        lambda d: F.batch_norm(d(x24), d(torch.zeros(4)), torch.ones(4), training=False)),
     ["running_mean", "forward"]),
    ("in-eval-running-var-tangent", lambda F: with_tangents(
        lambda d: F.instance_norm(d(x243), torch.zeros(4), d(torch.ones(4)), use_input_stats=False)),
     ["running_var", "forward"]),
]


# (id, call taking torch.nn or normlib, strings the message must contain): what the layers refuse
MODULE_CASES = [
    ("BatchNorm2d-3d-input", lambda nn: nn.BatchNorm2d(4)(x243), ["4D", "3D", "(2, 4, 3)"]),
    ("BatchNorm1d-4d-input", lambda nn: nn.BatchNorm1d(4)(torch.randn(2, 4, 3, 3)), ["2D or 3D", "4D"]),
    ("BatchNorm3d-4d-input", lambda nn: nn.BatchNorm3d(4)(torch.randn(2, 4, 3, 3)), ["5D", "4D"]),
    ("InstanceNorm2d-2d-input", lambda nn: nn.InstanceNorm2d(4)(x24), ["3D or 4D", "2D"]),
    ("InstanceNorm1d-channels", lambda nn: nn.InstanceNorm1d(5, affine=True)(x243), ["5", "(2, 4, 3)"]),
    ("GroupNorm-not-divisible", lambda nn: nn.GroupNorm(3, 5), ["num_channels=5", "num_groups=3", "divisible"]),
    ("LayerNorm-mismatch", lambda nn: nn.LayerNorm(3)(x24), ["(2, 4)", "(*, 3)"]),
    ("BatchNorm1d-batch-of-one", lambda nn: nn.BatchNorm1d(4)(torch.randn(1, 4)), ["(1, 4)", "more than 1 value"]),
    ("BatchNorm1d-eps-zero", lambda nn: nn.BatchNorm1d(4, eps=0.0)(x24), ["eps", "0.0"]),
    ("InstanceNorm1d-unbatched-channels", lambda nn: nn.InstanceNorm1d(5, affine=True)(torch.randn(4, 3)),
     ["5", "(4, 3)", "dim 0"]),
    ("GroupNorm-zero-groups", lambda nn: nn.GroupNorm(0, 4), ["num_groups=0"]),
    ("GroupNorm-negative-groups", lambda nn: nn.GroupNorm(-2, 4)(x24), ["-2", "num_groups"]),
    ("LayerNorm-empty-shape", lambda nn: nn.LayerNorm(())(x24), ["normalized_shape", "()"]),
    ("RMSNorm-empty-shape", lambda nn: nn.RMSNorm(())(x24), ["normalized_shape", "()"]),
]

def with_tangents(call):
    """Run ``call(d)`` under forward-mode AD, where ``d(t)`` gives ``t`` a random tangent."""
    import torch.autograd.forward_ad as fwAD
    with fwAD.dual_level():
        return call(lambda t: fwAD.make_dual(t, torch.randn_like(t)))


def raised(call):
    with pytest.raises(Exception) as info:
        call()
    return info.value


def raised_in_english_and_korean(call):
    """The exceptions ``call`` raises with normlib explaining in English, then in Korean."""
    import normlib

    english = raised(call)
    with normlib.speaking("ko"):
        korean = raised(call)
    return english, korean


def assert_raises_like_torch(torch_call, normlib_call, must_contain):
    theirs, ours = raised(torch_call), raised(normlib_call)
    # code written against torch catches normlib's exception
    assert isinstance(ours, type(theirs)), f"torch raised {type(theirs).__name__}, normlib {type(ours).__name__}: {ours}"
    for needle in must_contain:
        assert needle in str(ours), f"message lacks {needle!r}: {ours}"



# --- One load of each page of the built site (conftest.py's visit: test_browser.py, test_page_weight.py) ---

BROWSER_ARTIFACTS = ROOT / "test-artifacts" / "browser"
PAGE_TIMEOUT_MS = 15_000
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


@dataclass
class Visit:
    """What one load of a page of the built site showed (load_page)."""
    docname: str
    errors: list[str] = field(default_factory=list)       # JS errors and >= 400 responses
    foreign: list[str] = field(default_factory=list)      # requests to other hosts
    tofu: list[str] = field(default_factory=list)         # Hangul drawn without NanumGothic
    facts: dict = field(default_factory=dict)             # what the page reported after loading
    english: list[str] = field(default_factory=list)      # interface words without Hangul, as shown
    axe: dict | None = None                               # axe-core's violations, light and dark (None: no axe)
    weight: object = None                                 # benchmarks.tools.page_weight.Weight of this first load
    phone: dict = field(default_factory=dict)             # the page resized to a phone's (helpers.on_a_phone)


# What the page shows once settled (book.site.axe_audit.READY: math typeset, widgets drawn, fonts loaded).
MEASURE = """() => {
  const rawTex = Array.from(document.querySelectorAll('.math'))
    .filter(e => !e.querySelector('mjx-container') && /\\\\[(\\[]|\\$\\$|\\\\begin\\{/.test(e.textContent))
    .map(e => e.textContent.trim().slice(0, 60));
  const nanum = Array.from(document.fonts).filter(f => f.family.replace(/["']/g, '') === 'NanumGothic');
  return {
    mathElements: document.querySelectorAll('.math').length,
    mjx: document.querySelectorAll('mjx-container').length,
    mathErrors: Array.from(document.querySelectorAll('mjx-merror')).map(e => e.textContent.slice(0, 60)),
    rawTex,
    koreanText: (document.body.innerText.match(/[\\uac00-\\ud7a3]/g) || []).length,
    nanumLoaded: nanum.some(f => f.status === 'loaded'),
    nanumCheck: document.fonts.check('16px NanumGothic', '가'),
    widgetViews: document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length,
    widgetAreas: document.querySelectorAll('.anywidget-view').length,
    widgetElements: document.querySelectorAll('.anywidget-view .nx [data-stat]').length,
  };
}"""


# Every text and label a running page shows outside its chapter content (scripts' words included:
# the copy buttons' tooltips, the theme's menus) with an English word and no Hangul. Code, math
# and the cells' outputs are content; test_site.py reads the same in the HTML as written.
INTERFACE_WORDS = """() => {
  const out = new Set();
  const english = (s) => /[A-Za-z]{3,}/.test(s) && !/[\uac00-\ud7a3]/.test(s);
  const content = 'article.bd-article, code, pre, .math, mjx-container, script, style';
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n; (n = walker.nextNode());) {
    const s = n.textContent.trim();
    if (s && english(s) && n.parentElement && !n.parentElement.closest(content)) out.add(s);
  }
  for (const el of document.querySelectorAll('[aria-label], [title], [placeholder], [alt], [data-tooltip]')) {
    if (el.closest('.cell_output') || (el.closest('article.bd-article') && el.matches('a[title]'))) continue;
    for (const a of ['aria-label', 'title', 'placeholder', 'alt', 'data-tooltip']) {
      const v = el.getAttribute(a);
      if (v && v !== 'null' && english(v)) out.add(`${a}="${v.slice(0, 80)}"`);
    }
  }
  return [...out].sort();
}"""


def screenshot_name(docname: str) -> str:
    """ko/chapters/ko/03_batchnorm -> ko_03_batchnorm; ko/glossary -> ko_glossary; index -> index."""
    parts = docname.split("/")
    return "_".join(parts[:1] + parts[3:] if parts[1:2] == ["chapters"] else parts)


def load_page(browser, book_url: str, site: Path, docname: str) -> Visit:
    """Load ``<book_url>/<docname>.html`` once, as a reader's first visit (a fresh browser context:
    nothing cached), and record everything the browser tests check of it, in this order: what it
    requests and weighs (benchmarks.tools.page_weight), its errors, math, widgets, interface words and fonts,
    a screenshot of its first screen, axe-core's audit in light and dark mode, and the page on a
    phone (last: it turns the page's transitions off)."""
    from urllib.parse import urlsplit

    from benchmarks.tools.page_weight import SETTLE, Weight, add_responses
    from book.site.axe_audit import AXE, READY, audit_loaded
    from book.site.local_site import isolated_context

    v = Visit(docname)
    host = urlsplit(book_url).netloc
    context = isolated_context(browser, book_url)
    responses = []
    try:
        page = context.new_page()
        page.set_default_timeout(PAGE_TIMEOUT_MS)

        def on_request(req):
            parts = urlsplit(req.url)
            if parts.scheme not in ("data", "blob") and parts.netloc != host:
                v.foreign.append(req.url)

        def on_request_failed(req):
            if urlsplit(req.url).netloc == host:   # other hosts' requests are aborted on purpose
                v.errors.append(f"request failed ({req.failure}): {req.url}")

        def on_response(response):
            responses.append(response)
            if response.status >= 400:
                v.errors.append(f"HTTP {response.status}: {response.url}")

        page.on("request", on_request)
        page.on("requestfailed", on_request_failed)
        page.on("response", on_response)
        page.on("pageerror", lambda e: v.errors.append(f"uncaught: {e}"))
        page.on("console", lambda m: m.type == "error" and v.errors.append(
            f"console.error: {m.text} ({m.location.get('url', '')}:{m.location.get('lineNumber', '')})"))
        page.goto(f"{book_url}/{docname}.html", wait_until="load")
        v.weight = Weight(docname, fcp_ms=page.evaluate(SETTLE))
        page.evaluate(READY)
        v.facts = page.evaluate(MEASURE)
        v.english = page.evaluate(INTERFACE_WORDS)
        _, v.tofu = hangul_without_nanum(page, limit=400)
        page.wait_for_load_state("networkidle")      # every request of the first load answered, then counted
        add_responses(v.weight, responses, book_url, site)
        BROWSER_ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(BROWSER_ARTIFACTS / f"{screenshot_name(docname)}.png"))
        if AXE.exists():
            v.axe = audit_loaded(page)   # leaves the page light again
        v.phone = on_a_phone(page)
    finally:
        context.close()
    return v


# --- Two workers (conftest.py: make test's scheduler and order) ------------------------------------

# The units that take longest, first (measured on 2 cores); then the other slow tests and the fast
# ones, each in the order collected (tests/repository/test_test_modules.py checks that each names a real file).
UNITS_FIRST = (
    "tests/classroom/test_assignments.py",     # release, validate and autograde a class, a late zip, Canvas (≈ 3 min)
    "tests/classroom/test_feedback.py",        # a second class graded, its feedback pages in Chromium
    "chapters/en/10_placement.ipynb", "chapters/ko/10_placement.ipynb",   # English 10 runs perturbed: longer
    "chapters/ko/11_without_norm.ipynb", "chapters/ko/01_why_normalize.ipynb", "chapters/ko/09_distributed.ipynb",
    "tests/library/test_distributed.py",
    "tests/benchmarks/test_page_weight.py", "tests/book/test_search.py", "tests/book/test_print.py",
    "chapters/en/11_without_norm.ipynb",
    "tests/book/test_explorer.py", "tests/classroom/test_classroom_shell.py", "tests/book/test_explorer_lab.py",
)
# The tests of one page of the site (parametrized by it: docname, page) share that page's one load
# (visit): test_browser.py's checks and axe audit, test_page_weight.py's weights.
PAGE_TESTS = {"tests/book/test_browser.py", "tests/benchmarks/test_page_weight.py"}


def unit_of(nodeid: str) -> str:
    """What must run in the same pytest-xdist worker as the test ``nodeid``: its notebook (nbval's
    cells, in order, in one kernel), its page of the site (PAGE_TESTS), or its file (module-scoped
    set-up: a graded course, a server, PyTorch's test database)."""
    file, _, rest = nodeid.partition("::")
    if file in PAGE_TESTS and rest.endswith("]"):
        param = rest[rest.index("[") + 1:-1]
        if param in _site_pages():
            return f"page {param}"
    return file


@functools.cache
def _site_pages() -> set[str]:
    """The books' pages, their search and index pages, and the landing page."""
    from benchmarks.tools.page_weight import site_pages
    return set(site_pages())


# --- Perturbed numerics (book/tools/perturbed_numerics.py; conftest.py's PerturbedKernels) ----------------

def perturbed_chapters(root: Path = ROOT) -> list[Path]:
    """The chapter notebooks that nbval runs under perturbed numerics: each chapter in one language,
    Korean and English in turn (chapter 1 in Korean, chapter 2 in English, ...). A chapter's two
    notebooks have the same code and the same numbers in their outputs (test_notebooks.py), so
    one runs as on this machine and the other as on another CPU."""
    stems = sorted(p.stem for p in (root / "chapters" / "ko").glob("*.ipynb"))
    return [root / "chapters" / ("ko", "en")[i % 2] / f"{stem}.ipynb" for i, stem in enumerate(stems)]


class PerturbedKernels:
    """A pytest plugin (conftest.py registers it when nbval runs). nbval starts the kernel of each
    of ``notebooks`` (make test: perturbed_chapters, each chapter in one language) under
    book/tools/perturbed_numerics.py's kernel_environment: ATen's non-vectorised kernels, narrow-vector
    matrix products, another thread count. Its stored outputs are then compared as on another
    machine, in the run that checks them anyway; the chapter's other language runs as on this one.
    (nbval starts a notebook's kernel in the set-up of its first cell, in this process, and the
    kernel inherits the environment of that moment. In a single-process run, a process that a
    background EARLY thread starts in that moment inherits it too: an nbgrader kernel then grades
    under the perturbation, with the same grades.)"""

    def __init__(self, folder: Path, notebooks: list[Path]):
        from book.tools.perturbed_numerics import kernel_environment, perturbed_threads

        self.paths = {Path(p).resolve() for p in notebooks}
        threads = perturbed_threads(torch.get_num_threads())
        self.environment = kernel_environment(folder, threads)
        self.settings = "perturbed numerics (" + " ".join(
            f"{k}={v}" for k, v in self.environment.items() if k != "IPYTHONDIR") + f", {threads} threads)"

    def applies(self, item) -> bool:
        return Path(str(item.path)).resolve() in self.paths

    def describe(self) -> str:
        names = ", ".join(sorted(f"{p.parent.name}/{p.stem}" for p in self.paths))
        return f"{self.settings} for nbval's kernels of {names}"

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item):
        if not self.applies(item):
            return (yield)
        with pytest.MonkeyPatch.context() as patch:      # the environment as it was, once set up
            for name, value in self.environment.items():
                patch.setenv(name, value)
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        if report.failed and self.applies(item):
            report.sections.append((
                "perturbed numerics",
                f"This notebook ran under {self.settings}: an output that differs "
                "here but not in the chapter's other language would differ on another machine. Print only "
                "what is stable (float64, a bound such as normlib_book.examples.within, an asserted claim) or "
                "tag the raw print nbval-ignore-output. `make perturbed CH=<chapter>` re-runs it alone."))
        return report


# --- Slow set-up started early, on the second core ------------------------------------------------
# A test module may name set-up work that is mostly other processes (nbgrader runs) in a dict
# EARLY = {name: work}, work(folder) -> result. conftest.py starts each in a background thread once
# collection ends, so it runs beside the rest of the session; the module's fixture takes the result
# with early(name, work), which waits for it, or runs work itself when nothing was started (one
# module run alone, pytest-xdist).
_EARLY: dict = {}   # name -> concurrent.futures.Future


def start_early(name: str, work) -> None:
    import tempfile
    import threading
    from concurrent.futures import Future

    future: Future = Future()
    folder = Path(tempfile.mkdtemp(prefix=f"early-{name.replace(' ', '-')}-"))

    def run() -> None:
        try:
            future.set_result(work(folder))
        except BaseException as error:   # handed to the fixture that waits for it
            future.set_exception(error)

    _EARLY[name] = future
    threading.Thread(target=run, name=f"early {name}", daemon=True).start()


def early(name: str, work):
    future = _EARLY.pop(name, None)
    if future is None:
        import tempfile
        return work(Path(tempfile.mkdtemp(prefix=f"early-{name.replace(' ', '-')}-")))
    return future.result()


# --- JupyterLab started for real (test_lab.py, test_explorer_lab.py) -------------------------------

def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str) -> tuple[int, str]:
    """(status, body) of a GET on ``url``; an HTTP error's body is ''."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        return error.code, ""


class Lab:
    """``python -m book.tools.lab ROLE`` (what make lab / make lab-teacher run) on a free port of
    127.0.0.1 with no token, its HOME and runtime files in ``tmp``, its log in ``tmp/ROLE.log``;
    ``extra`` are more JupyterLab options (``--notebook-dir=…``). Waits until /api answers."""

    def __init__(self, role: str, tmp: Path, extra: tuple[str, ...] = ()):
        import time

        self.port = free_port()
        self.log = tmp / f"{role}.log"
        args = [sys.executable, "-m", "book.tools.lab", role, "--no-browser", f"--port={self.port}",
                "--ServerApp.token=", "--ServerApp.password=", "--ServerApp.ip=127.0.0.1", *extra]
        env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp / "runtime"), HOME=str(tmp))
        self.process = subprocess.Popen(args, cwd=ROOT, stdout=self.log.open("w"), stderr=subprocess.STDOUT,
                                        env=env, start_new_session=True)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"{role} JupyterLab exited:\n{self.log.read_text()}")
            try:
                status, _ = get(self.url("/api"))
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.5)
        self.stop()
        raise AssertionError(f"{role} JupyterLab did not start in 60 s:\n{self.log.read_text()}")

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def page_config(self) -> dict:
        import json
        import re

        status, html = get(self.url("/lab"))
        assert status == 200, status
        data = re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', html, re.S)
        assert data, html[:500]
        return json.loads(data.group(1))

    def stop(self) -> str:
        """Stop the server and its kernels (the whole process group); return its log."""
        import signal

        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        except ProcessLookupError:
            pass
        return self.log.read_text()
