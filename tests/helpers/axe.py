"""axe-core's accessibility audit of a page (book/site/axe_audit.py): which pages are audited (one of
each kind, in each language), skipped without axe-core, its findings saved and judged
(tests/book/test_accessibility.py, test_browser.py, conftest.py's visit)."""

from __future__ import annotations

import re

import pytest

from helpers.paths import ROOT, unavailable

AXE_ARTIFACTS = ROOT / "test-artifacts" / "accessibility"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"

# Which pages axe audits. The pages of one kind share their template and their kinds of content (a
# chapter: prose, math, code, outputs, figures; a chapter with an explorer: its widget too), so axe
# audits one page of each kind in each language, light and dark, and the others of that kind are
# audited through it. (Every page still gets test_browser.py's checks in the browser and test_book.py's
# and test_site.py's in the HTML: images' alt text, the language, the interface words.) A page of a
# kind not listed here fails test_accessibility.py's test_every_kind_of_page_is_audited.
AUDITED_OF_EACH_KIND = {
    "landing page": ("index",),
    "book's first page": ("{lang}/chapters/{lang}/index",),
    # the explorer in its two forms: chapter 3's table of numbers, chapter 6's drawing of N, C, H·W
    "chapter with an explorer": ("{lang}/chapters/{lang}/03_batchnorm", "{lang}/chapters/{lang}/06_family"),
    "chapter": ("{lang}/chapters/{lang}/02_mean_variance",),
    "glossary": ("{lang}/glossary",),
    "references": ("{lang}/chapters/{lang}/references",),
    "guide": ("{lang}/chapters/{lang}/teachers",),
    "search": ("{lang}/search",),
    "index of terms": ("{lang}/genindex",),
}


def kind_of(docname: str) -> str | None:
    """The kind of page of ``docname`` (``ko/chapters/ko/06_family``, ``en/search``, ``index``), None if none."""
    parts = docname.split("/")
    if parts == ["index"]:
        return "landing page"
    if len(parts) == 2:
        return {"glossary": "glossary", "search": "search", "genindex": "index of terms"}.get(parts[1])
    if len(parts) == 4 and parts[1] == "chapters":
        stem = parts[3]
        if stem == "index":
            return "book's first page"
        if stem == "references":
            return "references"
        if stem in ("students", "teachers"):
            return "guide"
        notebook = ROOT / "chapters" / parts[2] / f"{stem}.ipynb"
        if re.fullmatch(r"\d\d_\w+", stem) and notebook.exists():
            return "chapter with an explorer" if WIDGET_STATE in notebook.read_text(encoding="utf-8") else "chapter"
    return None


def audited(docname: str) -> bool:
    """Whether axe audits ``docname``: the page of its kind and language in AUDITED_OF_EACH_KIND."""
    kind = kind_of(docname)
    lang = docname.split("/")[0]
    return kind is not None and docname in {page.format(lang=lang) for page in AUDITED_OF_EACH_KIND[kind]}


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
