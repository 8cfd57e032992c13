"""The charm CI gate: load through the k6 charm, figures from the model, gates judged, once per
scenario gates.yaml gates (its `scenarios`; --gate-scenario picks some), through the public API
a charm repository uses (`loadgate.run`), then loadgate's own checks of the record it wrote.
"""

from __future__ import annotations

import json
import time

import pytest
from support.gate_records import record

from loadgate.contract.scenarios import BY_NAME
from loadgate.gate import GateResult, LoadGate
from loadgate.gate.model_gate import ModelGate


def gate_names(scenario: str) -> list[str]:
    """The gates a run of the scenario is judged by: errors, p99, its unit per minute, its
    units lost after acceptance, and wrong answers where it checks them (logql-query)."""
    kind = BY_NAME[scenario]
    names = ["error_rate", "p99_ms", kind.per_minute_gate, kind.as_ledger().lost_gate]
    return [*names, kind.wrong_gate] if kind.wrong_gate else names


@pytest.fixture
def gate_run(
    loadgate: LoadGate, loadgate_scenario: str, module_runs: dict[str, GateResult]
) -> GateResult:
    if loadgate_scenario not in module_runs:
        module_runs[loadgate_scenario] = loadgate.run(loadgate_scenario)
    return module_runs[loadgate_scenario]


def test_gates_pass(gate_run: GateResult, loadgate_scenario: str) -> None:
    assert [g.name for g in gate_run.gates] == gate_names(loadgate_scenario)
    assert gate_run.passed, gate_run.explain()


def test_ledger_balanced(gate_run: GateResult) -> None:
    assert gate_run.balanced, gate_run.explain()
    row = record(gate_run)
    assert row.delivered is not None
    if row.spec.kind.otlp is not None:
        assert row.delivered.drained, "the collector's queue did not drain"


@pytest.mark.gate_scenarios("otlp-logs")
def test_every_loki_copy_is_complete(gate_run: GateResult, loadgate_state: ModelGate) -> None:
    """The collector sends each Loki unit a full copy; each must hold every record."""
    row = record(gate_run)
    assert row.delivered is not None
    expected = row.delivered.records
    start, end = row.started_at - 5, time.time()
    apis = loadgate_state.target().loki_apis()
    counts = {unit: api.count_run(row.run_id, start, end) for unit, api in apis.items()}
    assert all(c == expected for c in counts.values()), f"copies differ from {expected}: {counts}"


def test_result_row_written(gate_run: GateResult, loadgate_scenario: str) -> None:
    row = json.loads(gate_run.result_file.read_text())
    assert row["format"] == "loadgate-result/1"
    assert row["target"] == "juju"
    assert row["labels"] == dict(gate_run.labels)
    assert row["spec"]["scenario"] == loadgate_scenario
    assert row["verdict"] == gate_run.verdict


def test_labels_say_what_the_model_runs(gate_run: GateResult, loadgate_state: ModelGate) -> None:
    """The row carries the collector revision `juju status` reports, not the one asked for."""
    otelcol = loadgate_state.juju.status().apps["otelcol"]
    labels = gate_run.labels
    if otelcol.charm_origin == "local":
        assert labels["otelcol_charm"] == "local"
        assert labels["otelcol_local_revision"] == str(otelcol.charm_rev)
    else:
        assert labels["revision"] == str(otelcol.charm_rev)
        assert labels["otelcol_channel"] == otelcol.charm_channel
