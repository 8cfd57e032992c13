"""The charm CI gate's GitHub workflow (issue 12, point 12): it parses, the files and tox envs it
names exist, concierge prepares both jobs (LXD with the firewall fix Docker's rules need on
GitHub runners), CI mode is on, and the CI overlay shrinks storage and changes nothing else."""

from __future__ import annotations

import configparser
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from loadgate import paths
from loadgate.bundle import check as bundle_check

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "integration.yaml"
CI_OVERLAY = ROOT / "bundles" / "overlays" / "ci-small-storage.yaml"
RUNNER_DISK_GB = 14


@pytest.fixture(scope="module")
def workflow() -> dict[str, Any]:
    return yaml.safe_load(WORKFLOW.read_text())


def _steps(workflow: dict[str, Any], job: str) -> list[dict[str, Any]]:
    return workflow["jobs"][job]["steps"]


def _scripts(workflow: dict[str, Any], job: str) -> str:
    return "\n".join(step.get("run", "") for step in _steps(workflow, job))


def test_the_workflow_parses_and_chains_its_jobs(workflow: dict[str, Any]) -> None:
    assert set(workflow["jobs"]) == {"matrix", "pack", "gate"}
    assert workflow["jobs"]["gate"]["needs"] == ["matrix", "pack"]
    raw: dict[Any, Any] = yaml.safe_load(WORKFLOW.read_text())
    triggers = raw["on"] if "on" in raw else raw[True]  # YAML 1.1 reads the key `on` as True
    assert "pull_request" in triggers


def test_pack_job_prepares_lxd_with_concierge(workflow: dict[str, Any]) -> None:
    """`snap install lxd && lxd init` leaves charmcraft's build container without network on
    GitHub runners (Docker's FORWARD rules); concierge's LXD setup fixes the firewall."""
    scripts = _scripts(workflow, "pack")
    assert "concierge prepare -p crafts" in scripts
    assert "lxd init" not in scripts
    assert "snap install lxd" not in scripts
    assert "./scripts/pack-k6-charm" in scripts
    upload = next(s for s in _steps(workflow, "pack") if "upload-artifact" in s.get("uses", ""))
    assert upload["with"]["path"] == f"bundles/{paths.K6_CHARM_FILE}"


def test_gate_job_uses_concierge_ci_mode_and_the_small_storage(workflow: dict[str, Any]) -> None:
    gate = workflow["jobs"]["gate"]
    scripts = _scripts(workflow, "gate")
    assert "concierge prepare -p k8s" in scripts
    assert gate["env"]["LOADGATE_REQUIRE_JUJU"] == "1"
    assert "tox -e integration" in scripts
    assert f"--overlay {CI_OVERLAY.relative_to(ROOT)}" in scripts
    download = next(s for s in gate["steps"] if "download-artifact" in s.get("uses", ""))
    assert download["with"]["path"] == "bundles"  # next to bundle.yaml, as the bundle expects


def test_every_file_the_workflow_names_exists(workflow: dict[str, Any]) -> None:
    text = "\n".join(_scripts(workflow, job) for job in workflow["jobs"])
    named = set(
        re.findall(r"(?<![\w/.-])((?:\./)?(?:bundles|scripts|tests|charms|src)/[\w./-]+)", text)
    )
    assert named >= {
        "./scripts/pack-k6-charm",
        "bundles/overlays/ci-small-storage.yaml",
        "src/loadgate/data/integration/revisions.yaml",
        "bundles/bundle.yaml",
    }
    for name in named:
        assert (ROOT / name).exists(), f"the workflow names {name}, which does not exist"


def test_the_tox_env_the_workflow_runs_exists() -> None:
    tox = configparser.ConfigParser()
    tox.read(ROOT / "tox.ini")
    assert tox.has_section("testenv:integration")
    assert "pytest tests/integration" in tox["testenv:integration"]["commands"]
    assert "LOADGATE_*" in tox["testenv"]["pass_env"]  # LOADGATE_REQUIRE_JUJU reaches pytest


# ---- the CI overlay ------------------------------------------------------------------------


def size_gb(text: str) -> float:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([MGT])", str(text))
    assert m, f"storage size {text!r}"
    return float(m.group(1)) * {"M": 1 / 1024, "G": 1, "T": 1024}[m.group(2)]


def total_storage_gb(doc: dict[str, Any]) -> float:
    return sum(
        size_gb(size) * app.get("scale", 1)
        for app in doc["applications"].values()
        for size in (app.get("storage") or {}).values()
    )


def test_ci_overlay_changes_only_storage_and_shrinks_it() -> None:
    overlay = yaml.safe_load(CI_OVERLAY.read_text())
    bundle, _ = bundle_check.load(ROOT / "bundles" / "bundle.yaml")
    assert set(overlay) == {"applications"}
    for app, spec in overlay["applications"].items():
        assert set(spec) == {"storage"}, f"{app}: the CI overlay changes more than storage"
        for name, size in spec["storage"].items():
            assert name in bundle["applications"][app]["storage"], (app, name)
            assert size_gb(size) <= size_gb(bundle["applications"][app]["storage"][name])
    merged, _ = bundle_check.load(ROOT / "bundles" / "bundle.yaml", [CI_OVERLAY])
    assert total_storage_gb(bundle) > 2 * RUNNER_DISK_GB  # what the bundle asks (about 38 GB)
    assert total_storage_gb(merged) < RUNNER_DISK_GB * 0.6  # room for images and the cluster


def test_ci_overlay_respects_the_k6_charms_minimum() -> None:
    charmcraft = yaml.safe_load(paths.k6_charmcraft_file().read_text())
    overlay = yaml.safe_load(CI_OVERLAY.read_text())
    for name, spec in charmcraft.get("storage", {}).items():
        minimum = spec.get("minimum-size")
        if minimum:
            assert size_gb(overlay["applications"]["k6"]["storage"][name]) >= size_gb(minimum)
