"""The feedback pages' formulas as MathML, written when the page is (classroom/tools/feedback_pages.py).

A feedback page used to carry MathJax 3 and its fonts (1.7 MB) to typeset a few dozen formulas
in the browser. Chromium, Firefox and Safari draw MathML Core themselves, so the TeX of the
markdown cells (``$…$``, ``$$…$$``, ``\\(…\\)``, ``\\[…\\]``, ``\\begin{…}…\\end{…}``, as
nbconvert's markdown parser finds it: never inside code) is converted here with latex2mathml
(pinned in requirements.txt), and the page ships no script at all.

A formula latex2mathml cannot convert (a syntax error, or a command it does not know, which it
would pass on as the text ``\\foo``) is shown as its TeX source in a ``<code class="fp-tex">``:
visible, never dropped.

:func:`markdown2html` replaces nbconvert's filter of that name for the feedback exporter alone
(:func:`classroom.tools.feedback_pages.configure`), so the cells' markdown and the graders' comments
(nbgrader's template renders both with it) get the same math.
"""

from __future__ import annotations

import functools
import html
import re

from jinja2 import pass_context
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

TEX_CLASS = "fp-tex"                         # the fallback's class (the template styles it)
# What latex2mathml leaves of TeX it does not understand: a control word as text ("<mi>\foo</mi>"),
# a stray backslash ("<mi>\</mi>"). (A backslash TeX asks for, \backslash, comes as "&#x0005C;".)
_LEFT_OVER = re.compile(r">[^<]*\\")
# Escaped characters inside \text{…}, which latex2mathml keeps escaped ("num\_batches").
_TEXT_ESCAPE = re.compile(r"(<mtext>[^<]*</mtext>)")
_ESCAPED = re.compile(r"\\([_%&#${} ])")


# Environments: the ones latex2mathml knows, and amsmath's aligned as its align*.
_ENVIRONMENT = re.compile(r"\\(begin|end)\{([^}]*)\}")
_ALIASES = {"aligned": "align*"}


@functools.lru_cache(maxsize=1)
def _environments() -> frozenset[str]:
    from latex2mathml.commands import MATRICES

    return frozenset(name.lstrip("\\") for name in MATRICES)


def fallback(tex: str, display: bool) -> str:
    """The TeX source, shown as code (between its delimiters, so it reads as what it is)."""
    source = f"$${tex}$$" if display else f"${tex}$"
    tag = "div" if display else "span"
    return f'<{tag} class="{TEX_CLASS}"><code>{html.escape(source, quote=False)}</code></{tag}>'


def tex_to_mathml(tex: str, display: bool = False) -> str:
    """``<math>`` for ``tex``; the TeX source as code when it cannot be converted."""
    from latex2mathml.converter import convert

    if not tex.strip():
        return fallback(tex, display)
    source = _ENVIRONMENT.sub(lambda m: f"\\{m.group(1)}{{{_ALIASES.get(m.group(2), m.group(2))}}}", tex.strip())
    source = re.sub(r"\\(begin|end)\{(?:equation|displaymath)\*?\}", "", source)
    if any(name not in _environments() for name in re.findall(r"\\begin\{([^}]*)\}", source)):
        return fallback(tex, display)      # latex2mathml keeps only the body of what it does not know
    try:
        mathml = convert(source, display="block" if display else "inline")
    except Exception:           # noqa: BLE001 - latex2mathml raises many kinds on bad TeX: all fall back
        return fallback(tex, display)
    mathml = _TEXT_ESCAPE.sub(lambda m: _ESCAPED.sub(r"\1", m.group(1)), mathml)
    if _LEFT_OVER.search(mathml):
        return fallback(tex, display)
    mathml = _drawable(mathml)
    # The namespace is implied in HTML; the characters as themselves are shorter than "&#x003B3;".
    mathml = mathml.replace(' xmlns="http://www.w3.org/1998/Math/MathML"', "")
    return re.sub(r"&#x([0-9A-Fa-f]+);", lambda m: _character(int(m.group(1), 16)), mathml)


# How the browsers draw MathML Core without a math font (a bare machine; checked in Chromium):
# "^" and "~" over a letter stand high above it, and a prime set as a superscript is lifted twice
# (the glyph is raised already). The spacing modifier accents and a prime beside its letter read
# as in TeX.
_ACCENTS = [(re.compile(r'<mo(?: stretchy="\w+")?>&#x0005E;</mo></mover>'), '<mo stretchy="false">&#x002C6;</mo></mover>'),
            (re.compile(r'<mo(?: stretchy="\w+")?>&#x0007E;</mo></mover>'), '<mo stretchy="false">&#x002DC;</mo></mover>')]
_PRIME = re.compile(r"<msup>(<mi>[^<]*</mi>|<mrow><mi>[^<]*</mi></mrow>)<mi>((?:&#x0203[234];)+)</mi></msup>")


def _drawable(mathml: str) -> str:
    for pattern, replacement in _ACCENTS:
        mathml = pattern.sub(replacement, mathml)
    return _PRIME.sub(r'\1<mo lspace="0" rspace="0">\2</mo>', mathml)


def _character(code: int) -> str:
    char = chr(code)
    return html.escape(char, quote=False) if char in "<>&" else char


class MathMLRenderer(IPythonRenderer):
    """nbconvert's renderer of the notebook's markdown, with its math as MathML."""

    def block_math(self, body: str) -> str:
        return tex_to_mathml(body, display=True)

    def inline_math(self, body: str) -> str:
        return tex_to_mathml(body, display=False)

    def latex_environment(self, name: str, body: str) -> str:
        return tex_to_mathml(f"\\begin{{{name}}}{body}\\end{{{name}}}", display=True)


def render(source: str, attachments: dict | None = None, path: str = "") -> str:
    """Markdown to HTML as nbconvert's HTMLExporter renders it, with MathML for the math."""
    renderer = MathMLRenderer(escape=False, attachments=attachments or {}, path=path)
    return MarkdownWithMath(renderer=renderer).render(source)


@pass_context
def markdown2html(context, source: str) -> str:
    """The template filter: a cell's attachments and the notebook's folder, as nbconvert's."""
    cell = context.get("cell", {}) or {}
    path = (context.get("resources", {}) or {}).get("metadata", {}).get("path", "")
    return render(source, cell.get("attachments", {}), path)
