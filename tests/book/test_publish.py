"""Ready to publish, checked offline: the GitHub Pages workflow builds the book with the README's own
command and uploads the folder that command writes; Binder gets the CPU build of torch.

Each check is a function of the files' text, so the last tests run it on a broken copy in tmp_path
and see it fail.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "deploy-book.yml"
MAKEFILE = ROOT / "Makefile"
REQUIREMENTS = ROOT / "requirements.txt"
BINDER = ROOT / "binder" / "requirements.txt"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
# owner/name@v<major>[.minor[.patch]], or a full commit SHA
PINNED = re.compile(r"^[\w.-]+/[\w./-]+@(v\d+(\.\d+){0,2}|[0-9a-f]{40})$")


# --- reading the files ---------------------------------------------------------------------------

def load_workflow(text: str) -> dict:
    workflow = yaml.safe_load(text)
    assert isinstance(workflow, dict), f"the workflow is not a YAML mapping: {type(workflow).__name__}"
    # YAML 1.1 (PyYAML) reads the key `on` as True
    if True in workflow:
        workflow["on"] = workflow.pop(True)
    return workflow


def make_variable(makefile: str, name: str) -> str:
    found = re.search(rf"^{name}\s*[:?]?=\s*(\S+)\s*$", makefile, re.MULTILINE)
    assert found, f"the Makefile defines no variable {name}"
    return found.group(1)


def make_targets(makefile: str) -> set[str]:
    return set(re.findall(r"^([\w.-]+)\s*:(?!=)", makefile, re.MULTILINE))


def steps(workflow: dict, job: str) -> list[dict]:
    jobs = workflow.get("jobs") or {}
    assert job in jobs, f"the workflow has no job {job!r}; it has {sorted(jobs)}"
    return jobs[job].get("steps") or []


def torch_pin(requirements: str) -> Requirement:
    pins = [Requirement(line.split("#")[0].strip()) for line in requirements.splitlines()
            if re.match(r"\s*torch\b", line)]
    assert len(pins) == 1, f"expected one torch line, found {len(pins)}"
    return pins[0]


def pinned_version(requirement: Requirement) -> Version:
    specs = list(requirement.specifier)
    assert len(specs) == 1 and specs[0].operator == "==", f"torch is not pinned with ==: {requirement}"
    return Version(specs[0].version)


# --- the checks ----------------------------------------------------------------------------------

def check_triggers_and_permissions(workflow: dict) -> None:
    on = workflow.get("on") or {}
    assert "main" in ((on.get("push") or {}).get("branches") or []), f"not run on a push to main: {on}"
    assert "workflow_dispatch" in on, f"cannot be run by hand (workflow_dispatch): {on}"
    permissions = workflow.get("permissions") or {}
    expected = {"contents": "read", "pages": "write", "id-token": "write"}
    assert permissions == expected, f"permissions: expected {expected}, received {permissions}"
    assert (workflow.get("concurrency") or {}).get("group"), "no concurrency group"


def check_builds_with_make_book(workflow: dict, makefile: str) -> None:
    runs = [step["run"].strip() for step in steps(workflow, "build") if "run" in step]
    assert runs == ["make book"], f"the build job should run exactly `make book`, it runs {runs}"
    assert "book" in make_targets(makefile), "the Makefile has no target `book`"


def check_uploads_what_make_book_writes(workflow: dict, makefile: str) -> None:
    book_dir = str(PurePosixPath(make_variable(makefile, "BOOK")).parent)
    uploads = [step for step in steps(workflow, "build")
               if step.get("uses", "").startswith("actions/upload-pages-artifact@")]
    assert len(uploads) == 1, f"expected one actions/upload-pages-artifact step, found {len(uploads)}"
    path = str(PurePosixPath((uploads[0].get("with") or {}).get("path", "")))
    assert path == book_dir, f"uploads {path!r}, but make book writes {book_dir!r} (the Makefile's BOOK)"


def check_every_action_pinned(workflow: dict) -> None:
    uses = [step["uses"] for job in workflow.get("jobs", {}).values() for step in job.get("steps") or []
            if "uses" in step]
    assert uses, "the workflow uses no action"
    loose = [u for u in uses if not PINNED.match(u)]
    assert not loose, f"actions without a version (@vN or a commit SHA): {loose}"


def check_deploy_after_build(workflow: dict) -> None:
    deploy = (workflow.get("jobs") or {}).get("deploy") or {}
    needs = deploy.get("needs")
    needs = [needs] if isinstance(needs, str) else (needs or [])
    assert "build" in needs, f"the deploy job does not need the build job: needs={needs}"
    assert any(step.get("uses", "").startswith("actions/deploy-pages@") for step in deploy.get("steps") or []), \
        "the deploy job has no actions/deploy-pages step"


def check_binder_torch(binder: str, requirements: str) -> None:
    book = torch_pin(requirements)
    cpu = torch_pin(binder)
    want, got = pinned_version(book), pinned_version(cpu)
    assert got.local == "cpu", f"binder/requirements.txt: expected torch==<version>+cpu, received {cpu}"
    assert got.public == want.public, \
        f"binder/requirements.txt pins torch {got.public}, requirements.txt pins {want.public}"
    options = [line.split() for line in binder.splitlines() if line.strip().startswith("--")]
    indexes = [words[-1] for words in options if words[0] in ("--extra-index-url", "--index-url")]
    assert CPU_INDEX in indexes, f"binder/requirements.txt does not use {CPU_INDEX}: index options {indexes}"


def check_build_uses_cpu_index(workflow: dict) -> None:
    build = [step for step in steps(workflow, "build") if step.get("run", "").strip() == "make book"]
    env = (build[0].get("env") or {}) if build else {}
    assert env.get("PIP_EXTRA_INDEX_URL") == CPU_INDEX, \
        f"`make book` runs without PIP_EXTRA_INDEX_URL={CPU_INDEX} (env: {env}): pip would take torch's CUDA build"


def check_binder_normlib(binder: str) -> None:
    lines = [line.split("#")[0].strip() for line in binder.splitlines()]
    local = [line for line in lines if re.fullmatch(r"(-e\s+)?\.\[[\w,\s-]*\]", line)]
    assert len(local) == 1 and "book" in re.split(r"[\[\],\s]+", local[0]), \
        f"binder/requirements.txt does not install this repository with the book extra (.[book]): {lines}"


def check_no_cuda(text: str) -> None:
    named = re.findall(r"\bnvidia-[\w-]+|\+cu\d+", text, re.IGNORECASE)
    assert not named, f"CUDA packages named: {named}"


# --- on the repository's files -------------------------------------------------------------------

@pytest.fixture(scope="module")
def workflow() -> dict:
    assert WORKFLOW.exists(), f"no workflow at {WORKFLOW.relative_to(ROOT)}"
    return load_workflow(WORKFLOW.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def makefile() -> str:
    return MAKEFILE.read_text(encoding="utf-8")


def test_workflow_triggers_and_permissions(workflow):
    check_triggers_and_permissions(workflow)


def test_workflow_builds_with_make_book(workflow, makefile):
    check_builds_with_make_book(workflow, makefile)


def test_workflow_uploads_what_make_book_writes(workflow, makefile):
    check_uploads_what_make_book_writes(workflow, makefile)


def test_every_action_is_pinned(workflow):
    check_every_action_pinned(workflow)


def test_deploy_needs_build(workflow):
    check_deploy_after_build(workflow)


def test_workflow_build_takes_torch_from_the_cpu_index(workflow):
    check_build_uses_cpu_index(workflow)


def test_binder_installs_cpu_torch_at_the_books_version():
    check_binder_torch(BINDER.read_text(encoding="utf-8"), REQUIREMENTS.read_text(encoding="utf-8"))


def test_binder_installs_normlib_with_the_book_extra():
    check_binder_normlib(BINDER.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", [BINDER, WORKFLOW, REQUIREMENTS], ids=lambda p: str(p.relative_to(ROOT)))
def test_no_cuda_package_is_named(path):
    check_no_cuda(path.read_text(encoding="utf-8"))


# --- each check fails on a broken copy -----------------------------------------------------------

def broken_workflow(tmp_path, old: str, new: str) -> dict:
    text = WORKFLOW.read_text(encoding="utf-8")
    assert old in text, f"{old!r} is not in the workflow: the test needs updating"
    copy = tmp_path / "deploy-book.yml"
    copy.write_text(text.replace(old, new, 1), encoding="utf-8")
    return load_workflow(copy.read_text(encoding="utf-8"))


BREAKS = [  # (the text replaced, its replacement, the check that must fail, it reads the Makefile)
    ("workflow_dispatch:", "# none", check_triggers_and_permissions, False),
    ("id-token: write", "id-token: read", check_triggers_and_permissions, False),
    ("run: make book", "run: make html", check_builds_with_make_book, True),
    ("path: _build/html", "path: _build/site", check_uploads_what_make_book_writes, True),
    ("actions/deploy-pages@v5", "actions/deploy-pages@main", check_every_action_pinned, False),
    ("actions/checkout@v6", "actions/checkout", check_every_action_pinned, False),
    ("needs: build", "needs: []", check_deploy_after_build, False),
    ("PIP_EXTRA_INDEX_URL:", "PIP_INDEX_URL:", check_build_uses_cpu_index, False),
]


@pytest.mark.parametrize("old,new,check,reads_makefile", BREAKS, ids=[f"{b[2].__name__}:{b[1]}" for b in BREAKS])
def test_a_broken_workflow_fails(tmp_path, makefile, old, new, check, reads_makefile):
    workflow = broken_workflow(tmp_path, old, new)
    with pytest.raises(AssertionError):
        if reads_makefile:
            check(workflow, makefile)
        else:
            check(workflow)


def test_a_makefile_without_book_fails(workflow, makefile):
    with pytest.raises(AssertionError, match="no target `book`"):
        check_builds_with_make_book(workflow, re.sub(r"^book:", "site:", makefile, flags=re.MULTILINE))
    moved = re.sub(r"^(BOOK\s*:=\s*)_build/html/", r"\1_build/site/", makefile, flags=re.MULTILINE)
    with pytest.raises(AssertionError, match="_build/site"):
        check_uploads_what_make_book_writes(workflow, moved)


@pytest.mark.parametrize("binder,message", [
    ("--extra-index-url {cpu}\ntorch=={v}\n", "\\+cpu"),
    ("--extra-index-url {cpu}\ntorch=={other}+cpu\n", "requirements.txt pins"),
    ("torch=={v}+cpu\n", "does not use"),
    ("--extra-index-url https://download.pytorch.org/whl/cu128\ntorch=={v}+cpu\n", "does not use"),
    ("--extra-index-url {cpu}\ntorch>={v}\n", "not pinned"),
])
def test_a_broken_binder_fails(tmp_path, binder, message):
    requirements = REQUIREMENTS.read_text(encoding="utf-8")
    v = pinned_version(torch_pin(requirements))
    other = f"{v.major}.{v.minor + 1}.0"
    copy = tmp_path / "requirements.txt"
    copy.write_text(binder.format(cpu=CPU_INDEX, v=v, other=other), encoding="utf-8")
    with pytest.raises(AssertionError, match=message):
        check_binder_torch(copy.read_text(encoding="utf-8"), requirements)


@pytest.mark.parametrize("line", [".", ".[bench]", "normlib[book]", "# .[book]"])
def test_a_binder_without_normlib_book_fails(tmp_path, line):
    copy = tmp_path / "requirements.txt"
    copy.write_text(BINDER.read_text(encoding="utf-8").replace(".[book]", line), encoding="utf-8")
    with pytest.raises(AssertionError, match="book extra"):
        check_binder_normlib(copy.read_text(encoding="utf-8"))


def test_a_cuda_package_is_caught(tmp_path):
    copy = tmp_path / "requirements.txt"
    copy.write_text(BINDER.read_text(encoding="utf-8") + "nvidia-cudnn-cu12==9.1.0.70\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="nvidia-cudnn-cu12"):
        check_no_cuda(copy.read_text(encoding="utf-8"))
