"""The charm CI gate: load through the k6 charm, figures from the model, gates judged.

The run goes through loadgate's own run flow (runner.execute) with the Juju target, so the
figures, the ledger, the gates and the result row are those `loadgate run` produces.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import jubilant
import pytest

from loadgate.contract.gates import Gate
from loadgate.contract.spec import RunSpec
from loadgate.records import result as results
from loadgate.records.result import RunResult
from loadgate.runner import run as runner
from loadgate.targets.juju import SCRAPE_TIMEOUT, JujuTarget

DRAIN_TIMEOUT = 300.0


@pytest.fixture(scope="module")
def gate_run(juju_target: JujuTarget, gate_spec: RunSpec, results_root: Path) -> RunResult:
    return runner.execute(
        gate_spec,
        juju_target,
        results_root,
        drain_timeout=DRAIN_TIMEOUT,
        scope=juju_target.scope,
        scrape_timeout=SCRAPE_TIMEOUT,
    )


def _gate(result: RunResult, name: str) -> Gate:
    found = [g for g in result.gates if g.name == name]
    assert found, f"no {name} gate in {[g.name for g in result.gates]}"
    return found[0]


@pytest.mark.parametrize("name", ["error_rate", "p99_ms", "logs_per_minute", "lost_records"])
def test_gate_passes(gate_run: RunResult, name: str) -> None:
    gate = _gate(gate_run, name)
    assert gate.passed, f"{name}: measured {gate.value} against {gate.threshold} ({gate.source})"


def test_ledger_balanced(gate_run: RunResult) -> None:
    ledger = gate_run.ledger
    steps = ", ".join(f"{s.name}={s.count} ({s.note or s.source})" for s in ledger.steps)
    assert ledger.balanced, f"records lost or unaccounted for: {steps}"
    assert gate_run.delivered is not None
    assert gate_run.delivered.drained, "the collector's queue did not drain"


def test_every_loki_copy_is_complete(gate_run: RunResult, juju_target: JujuTarget) -> None:
    """The collector sends each Loki unit a full copy; each must hold every record."""
    assert gate_run.delivered is not None
    expected = gate_run.delivered.records
    start, end = gate_run.started_at - 5, time.time()
    counts = {
        unit: api.count_run(gate_run.run_id, start, end)
        for unit, api in juju_target.loki_apis().items()
    }
    assert all(c == expected for c in counts.values()), f"copies differ from {expected}: {counts}"


def test_result_row_written(gate_run: RunResult, results_root: Path, gate_spec: RunSpec) -> None:
    path = results.run_dir(results_root, gate_run.run_id) / results.RESULT_FILE
    row = json.loads(path.read_text())
    assert row["format"] == "loadgate-result/1"
    assert row["target"] == "juju"
    assert row["labels"] == dict(gate_spec.labels)
    assert row["verdict"] == gate_run.verdict


def test_labels_say_what_the_model_runs(gate_run: RunResult, deployed: jubilant.Juju) -> None:
    """The row carries the collector revision `juju status` reports, not the one asked for."""
    otelcol = deployed.status().apps["otelcol"]
    labels = gate_run.spec.labels
    if otelcol.charm_origin == "local":
        assert labels["otelcol_charm"] == "local"
        assert labels["otelcol_local_revision"] == str(otelcol.charm_rev)
    else:
        assert labels["revision"] == str(otelcol.charm_rev)
        assert labels["otelcol_channel"] == otelcol.charm_channel
