"""The repository's GitHub workflows pass actionlint (tools/actionlint pins it), so that what
the docs give charm repositories (charm-load-gate.yaml) and loadgate's own CI parse and use
only the contexts, inputs and expressions GitHub accepts."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULE = ROOT / "tools" / "actionlint"


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
        "integration.yaml", "charm-load-gate.yaml", "release.yaml",
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
