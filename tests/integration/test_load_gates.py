"""The charm CI gate: load through the k6 charm, figures from the model, gates judged, once per
scenario gates.yaml gates (its `scenarios`; --gate-scenario picks some).

The run goes through loadgate's own run flow (runner.execute) with the Juju target, so the
figures, the ledger, the gates and the result row are those `loadgate run` produces.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import jubilant
import pytest

from loadgate.contract.gates import Gate
from loadgate.contract.scenarios import BY_NAME
from loadgate.contract.spec import RunSpec
from loadgate.records import result as results
from loadgate.records.result import RunResult
from loadgate.runner import run as runner
from loadgate.targets.juju import SCRAPE_TIMEOUT, JujuTarget

DRAIN_TIMEOUT = 300.0


def gate_names(scenario: str) -> list[str]:
    """The gates a run of the scenario is judged by: errors, p99, its unit per minute, its
    units lost after acceptance, and wrong answers where it checks them (logql-query)."""
    kind = BY_NAME[scenario]
    names = ["error_rate", "p99_ms", kind.per_minute_gate, kind.as_ledger().lost_gate]
    return [*names, kind.wrong_gate] if kind.wrong_gate else names


@pytest.fixture(scope="module")
def scenario_spec(gate_spec_for: Callable[[str | None], RunSpec], gate_scenario: str) -> RunSpec:
    return gate_spec_for(gate_scenario)


@pytest.fixture(scope="module")
def gate_run(juju_target: JujuTarget, scenario_spec: RunSpec, results_root: Path) -> RunResult:
    return runner.execute(
        scenario_spec,
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


def test_gates_pass(gate_run: RunResult, gate_scenario: str) -> None:
    failed = [
        f"{gate.name}: measured {gate.value} against {gate.threshold} ({gate.source})"
        for gate in (_gate(gate_run, name) for name in gate_names(gate_scenario))
        if not gate.passed
    ]
    assert not failed, f"{gate_scenario}: " + "; ".join(failed)


def test_ledger_balanced(gate_run: RunResult) -> None:
    ledger = gate_run.ledger
    steps = ", ".join(f"{s.name}={s.count} ({s.note or s.source})" for s in ledger.steps)
    assert ledger.balanced, f"{gate_run.spec.scenario}: lost or unaccounted for: {steps}"
    assert gate_run.delivered is not None
    if gate_run.spec.kind.otlp is not None:
        assert gate_run.delivered.drained, "the collector's queue did not drain"


@pytest.mark.gate_scenarios("otlp-logs")
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


def test_result_row_written(
    gate_run: RunResult, results_root: Path, scenario_spec: RunSpec
) -> None:
    path = results.run_dir(results_root, gate_run.run_id) / results.RESULT_FILE
    row = json.loads(path.read_text())
    assert row["format"] == "loadgate-result/1"
    assert row["target"] == "juju"
    assert row["labels"] == dict(scenario_spec.labels)
    assert row["spec"]["scenario"] == scenario_spec.scenario
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
