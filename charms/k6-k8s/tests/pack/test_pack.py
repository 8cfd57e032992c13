"""What charmcraft makes of this charm, with charmcraft's own code (PyPI `charmcraft`).

`charmcraft pack` itself needs LXD (or an Ubuntu host and snapd) and cannot run here; its
project validation (`charmcraft expand-extensions`) can, and so can the part of a pack that
decides the .charm's contents: charmcraft's `uv` plugin run through craft-parts (prime.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

CHARM_DIR = Path(__file__).resolve().parents[2]
# A fresh clone has none of these; a developer's tree may.
NOT_IN_A_CLONE = ("__pycache__", ".pytest_cache", ".ruff_cache", "*.charm", ".venv", ".tox")
OLD_TITLE = "k6 load generator for the COS telemetry pipeline"  # 48 characters


def copy_charm(dest: Path) -> Path:
    shutil.copytree(CHARM_DIR, dest, ignore=shutil.ignore_patterns(*NOT_IN_A_CLONE))
    return dest


def charmcraft(project: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("charmcraft", path=str(Path(sys.executable).parent)) or shutil.which(
        "charmcraft"
    )
    assert exe, "charmcraft is not installed in this environment (tox -e charm installs it)"
    env = dict(os.environ)
    for var in ("XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME"):
        env[var] = str(home / var.lower())
    return subprocess.run(
        [exe, *args], cwd=project, env=env, capture_output=True, text=True, timeout=300
    )


def test_charmcraft_accepts_the_project(tmp_path: Path) -> None:
    project = copy_charm(tmp_path / "charm")
    proc = charmcraft(project, tmp_path, "expand-extensions")
    assert proc.returncode == 0, proc.stderr
    expanded: dict[str, Any] = yaml.safe_load(proc.stdout)
    assert expanded["name"] == "loadgate-k6-k8s"  # not Charmhub's k6-k8s
    assert len(expanded["title"]) <= 40
    assert expanded["storage"]["runs"]["type"] == "filesystem"
    assert expanded["containers"]["k6"]["mounts"] == [
        {"storage": "runs", "location": "/var/lib/k6"}
    ]
    assert expanded["parts"]["charm"]["plugin"] == "uv"
    assert expanded["provides"]["grafana-dashboard"]["interface"] == "grafana_dashboard"


def test_charmcraft_refuses_a_title_over_40_characters(tmp_path: Path) -> None:
    """The check above is charmcraft's own: the title this charm had is refused."""
    project = copy_charm(tmp_path / "charm")
    meta = project / "charmcraft.yaml"
    meta.write_text(
        meta.read_text().replace("title: loadgate k6 load generator", f"title: {OLD_TITLE}")
    )
    proc = charmcraft(project, tmp_path, "expand-extensions")
    assert proc.returncode != 0
    assert "title" in proc.stderr
    assert "at most 40 characters" in proc.stderr


@pytest.fixture(scope="module")
def primed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("pack")
    project = copy_charm(base / "charm")
    result = base / "result.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).with_name("prime.py")),
            str(project),
            str(base / "work"),
            str(result),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(result.read_text())


def charm_files(folder: str) -> set[str]:
    """The charm's files under `folder` as a fresh clone has them (relative to the charm)."""
    root = CHARM_DIR / folder
    found = {folder + "/"}
    for path in root.rglob("*"):
        if "__pycache__" in path.parts:
            continue
        rel = path.relative_to(CHARM_DIR).as_posix()
        found.add(rel + "/" if path.is_dir() else rel)
    return found


def test_the_pack_primes_the_charm_code_and_its_scenarios(primed: dict[str, Any]) -> None:
    listed: list[str] = primed["primed"]
    outside_venv = {p for p in listed if not p.startswith("venv/")}
    # Exactly: charmcraft's dispatch, and src/ as it is (charm code, loadgate core, scenarios,
    # dashboards).
    assert outside_venv == {"dispatch", *charm_files("src")}
    for scenario in (
        "src/k6/otlp-logs.js", "src/k6/otlp-metrics.js", "src/k6/loki-push.js",
        "src/k6/otlp-traces.js", "src/k6/logql-query.js",
        "src/k6/lib/config.js", "src/k6/lib/payload.js",
    ):  # fmt: skip
        assert scenario in listed
    assert {p for p in listed if p.startswith("src/k6/lib/") and p.endswith(".js")} == {
        f"src/k6/lib/{p.name}" for p in (CHARM_DIR.parents[1] / "k6" / "lib").glob("*.js")
    }
    assert "src/charm.py" in listed
    assert "src/grafana_dashboards/loadgate-k6.json" in listed  # Grafana's dashboard
    # The charm's dependencies from uv.lock, not its dev tools.
    site = [p for p in listed if p.startswith("venv/lib/") and p.endswith("/site-packages/ops/")]
    assert site, "ops is not in the primed venv"
    assert not [p for p in listed if p.endswith("/site-packages/pytest/")]


def test_only_the_apt_and_snap_calls_were_stubbed(primed: dict[str, Any]) -> None:
    """Nothing was installed on this machine: the plugin's build packages went to the stub."""
    stubbed: list[list[str]] = primed["stubbed"]
    apt = [c for c in stubbed if c[0] == "apt-install"]
    assert apt
    assert "python3-venv" in apt[0]
    assert all(c[0] in ("apt-install", "snap-install") for c in stubbed)
