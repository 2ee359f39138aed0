"""axe-core's accessibility audit of a page (book/site/axe_audit.py): skipped without axe-core,
its findings saved and judged (tests/book/test_accessibility.py, test_browser.py)."""

from __future__ import annotations

import re

import pytest

from helpers.paths import ROOT, unavailable

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
