"""The repository's GitHub workflows pass actionlint (tools/actionlint pins it), so that what
the docs give charm repositories (charm-load-gate.yaml, charm-pr-compare.yaml) and loadgate's own
CI parse and use only the contexts, inputs and expressions GitHub accepts. The charm workflows
docs/charm-ci.md gives pass it too, their calls of loadgate's reusable workflows checked against
those workflows' inputs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULE = ROOT / "tools" / "actionlint"
DOC = ROOT / "docs" / "charm-ci.md"
# How the docs name loadgate's reusable workflows: OWNER/loadgate/.github/workflows/F@vX.Y.Z.
LOADGATE_CALL = re.compile(r"OWNER/loadgate/(\.github/workflows/[\w.-]+\.yaml)@vX\.Y\.Z")


@pytest.fixture(scope="module")
def actionlint() -> Path:
    """actionlint built from the pinned module, cached outside the repository."""
    version = next(
        line.split()[-1]
        for line in (MODULE / "go.mod").read_text().splitlines()
        if "rhysd/actionlint" in line
    )
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "loadgate"
    binary = cache / "tools" / f"actionlint-{version}"
    if not binary.exists():
        binary.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["go", "build", "-o", str(binary), "github.com/rhysd/actionlint/cmd/actionlint"],
            cwd=MODULE, env={**os.environ, "GOSUMDB": "off", "GOFLAGS": "-mod=readonly"},
            check=True, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
    return binary


def test_every_workflow_passes_actionlint(actionlint: Path) -> None:
    workflows = sorted((ROOT / ".github" / "workflows").glob("*.yaml"))
    assert {p.name for p in workflows} >= {
        "integration.yaml", "charm-load-gate.yaml", "charm-pr-compare.yaml", "release.yaml",
    }  # fmt: skip
    done = subprocess.run(
        [str(actionlint), "-no-color", *map(str, workflows)],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_finds_a_broken_workflow(actionlint: Path, tmp_path: Path) -> None:
    """The check can fail: an input the workflow does not declare is reported."""
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        "on: {workflow_call: {inputs: {a: {type: string}}}}\n"
        "jobs:\n  j:\n    runs-on: ubuntu-latest\n"
        "    steps:\n      - run: echo ${{ inputs.b }}\n"
    )
    done = subprocess.run([str(actionlint), "-no-color", str(broken)], capture_output=True,
                          text=True, check=False)  # fmt: skip
    assert done.returncode == 1
    assert 'property "b" is not defined' in done.stdout


def docs_workflows() -> dict[str, str]:
    """docs/charm-ci.md's ```yaml blocks that are a charm's workflow (`# .github/workflows/F`)."""
    out: dict[str, str] = {}
    for block in re.findall(r"```yaml\n(.*?)```", DOC.read_text(), flags=re.DOTALL):
        m = re.match(r"# (\.github/workflows/[\w.-]+\.yaml)", block)
        if m:
            out[m.group(1)] = block
    return out


def test_the_docs_charm_workflows_pass_actionlint(actionlint: Path, tmp_path: Path) -> None:
    """Each workflow the docs give a charm, in a repository beside loadgate's own reusable
    workflows, its calls of them made local: actionlint then checks every `with:` against the
    inputs they declare (the canonical/observability calls it cannot read)."""
    found = docs_workflows()
    assert set(found) == {
        ".github/workflows/promote.yaml", ".github/workflows/quality-gates.yaml",
        ".github/workflows/pull-request.yaml",
    }  # fmt: skip
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (tmp_path / ".git").mkdir()  # the project's root, for local reusable workflows
    for name in ("charm-load-gate.yaml", "charm-pr-compare.yaml"):
        shutil.copy(ROOT / ".github" / "workflows" / name, workflows / name)
    calls = 0
    for path, text in found.items():
        local, n = LOADGATE_CALL.subn(r"./\1", text)
        calls += n
        (tmp_path / path).write_text(local)
    assert calls == 2  # promote.yaml's load gate, pull-request.yaml's comparison
    done = subprocess.run(
        [str(actionlint), "-no-color", *sorted(str(tmp_path / p) for p in found)],
        capture_output=True, text=True, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_docs_check_finds_a_wrong_input(actionlint: Path, tmp_path: Path) -> None:
    """The docs' check can fail: a `with:` key loadgate's workflow does not declare."""
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (tmp_path / ".git").mkdir()
    shutil.copy(ROOT / ".github" / "workflows" / "charm-load-gate.yaml", workflows)
    caller = workflows / "promote.yaml"
    caller.write_text(
        "on: {workflow_dispatch: {}}\n"
        "jobs:\n  load-gate:\n    uses: ./.github/workflows/charm-load-gate.yaml\n"
        "    with: {promotoin: edge -> beta}\n"
    )
    done = subprocess.run([str(actionlint), "-no-color", str(caller)], capture_output=True,
                          text=True, cwd=tmp_path, check=False)  # fmt: skip
    assert done.returncode == 1
    assert "promotoin" in done.stdout
