"""The charm alone in a model: it deploys, refuses bad input and reports a complete run.

The suites that deploy the whole bundle (collector, Loki, COS) live in the repository's
tests/integration; this one needs nothing but the charm and a Juju controller.
"""

from __future__ import annotations

import time
from pathlib import Path

import jubilant
import pytest
import yaml

CHARM_DIR = Path(__file__).resolve().parents[2]
METADATA = yaml.safe_load((CHARM_DIR / "charmcraft.yaml").read_text())
APP = "k6"
NO_TARGET = "no OTLP target: relate send-otlp or pass target="


def test_deploy_is_blocked_without_a_target(charm: Path, juju: jubilant.Juju) -> None:
    image = METADATA["resources"]["k6-image"]["upstream-source"]
    juju.deploy(charm, app=APP, resources={"k6-image": image})
    status = juju.wait(jubilant.all_blocked)
    assert status.apps[APP].units[f"{APP}/0"].workload_status.message == NO_TARGET


def test_bad_parameter_is_refused(juju: jubilant.Juju) -> None:
    with pytest.raises(jubilant.TaskError) as failed:
        juju.run(f"{APP}/0", "start-load", {"body-min": 100, "body-max": 10, "target": "http://x"})
    assert "body-min" in failed.value.task.message


def test_a_run_against_nothing_fails_its_gates(juju: jubilant.Juju) -> None:
    """Nothing listens on port 9 in the pod: every request fails, so the error-rate gate does."""
    task = juju.run(
        f"{APP}/0", "start-load", {"target": "http://127.0.0.1:9", "duration": "5s", "rate": 600}
    )
    run_id = task.results["run-id"]
    deadline = time.monotonic() + 180
    while True:
        results = juju.run(f"{APP}/0", "get-results", {"run-id": run_id}).results
        if results["status"] != "running" or time.monotonic() > deadline:
            break
        time.sleep(5)
    assert results["status"] == "failed"
    assert results["verdict"] == "FAIL"
    assert results["gates"]["error-rate"]["passed"] == "False"
