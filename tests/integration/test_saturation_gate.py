"""The saturation gate: the k6 charm offers more than the pipeline takes; the collector's
throughput over the steady window (its queue full) must reach the floor of gates.yaml, and the
charm under test must be what gave way first (else: measured the wrong component). Through the
public API a charm repository uses (`loadgate.saturation`), then loadgate's own checks of the
record it wrote."""

from __future__ import annotations

import json

import pytest
from support.gate_records import record

from loadgate.contract.gates import format_value
from loadgate.gate import GateResult, LoadGate
from loadgate.gate import saturation as saturation_gate
from loadgate.gate.model_gate import ModelGate
from loadgate.gate.saturation_settings import SaturationGate
from loadgate.gate.saturation_settings import saturation_gate as settings_of


@pytest.fixture
def saturation_run(loadgate: LoadGate, module_runs: dict[str, GateResult]) -> GateResult:
    if "saturation" not in module_runs:
        module_runs["saturation"] = loadgate.saturation()
    return module_runs["saturation"]


@pytest.fixture
def settings(loadgate_state: ModelGate) -> SaturationGate:
    gate = loadgate_state
    return settings_of(gate.plan.gates_file, gate.revision(), gate.labels())


def test_saturation_measured(saturation_run: GateResult) -> None:
    sat = record(saturation_run).saturation
    assert sat is not None, saturation_run.explain()
    assert sat.saturated is not None, f"no steady window: {sat.reason}"
    assert sat.accepted_per_min is not None, sat
    assert sat.accepted_per_min > 0, sat
    assert sat.window_s is not None
    assert sat.window_s > 0


def test_saturation_at_least_the_floor(
    saturation_run: GateResult, settings: SaturationGate
) -> None:
    gate = next(g for g in saturation_run.gates if g.name == saturation_gate.NAME)
    assert gate.passed, f"{gate.line()} ({settings.floor_from})"


def test_the_charm_under_test_gave_way_first(saturation_run: GateResult) -> None:
    gate = next(g for g in saturation_run.gates if g.name == saturation_gate.COMPONENT_GATE)
    assert saturation_run.saturation is not None
    assert gate.passed, gate.line()


@pytest.mark.parametrize("name", ["error_rate", "p99_ms", "lost_records"])
def test_client_gates_pass(saturation_run: GateResult, name: str) -> None:
    gate = next(g for g in saturation_run.gates if g.name == name)
    assert gate.passed, gate.line()


def test_every_acknowledged_record_is_stored(saturation_run: GateResult) -> None:
    """Refused records are the client's failed requests; every acknowledged one went through."""
    row = record(saturation_run)
    steps = {s.name: s.count for s in row.ledger.steps}
    acknowledged = row.client.records_accepted
    assert steps["accepted"] == steps["exported"] == steps["stored"] == acknowledged, (
        saturation_run.explain()
    )
    assert saturation_run.lost == 0


def test_result_row_records_the_saturation_gate(
    saturation_run: GateResult, settings: SaturationGate
) -> None:
    row = json.loads(saturation_run.result_file.read_text())
    assert row["labels"] == dict(settings.spec.labels)
    assert row["labels"]["gate"] == "saturation"
    gate = next(g for g in row["gates"] if g["name"] == saturation_gate.NAME)
    assert gate["value"] == row["saturation"]["accepted_per_min"]
    floor = settings.floor
    assert gate["threshold"] == ("measured" if floor is None else f">= {format_value(floor, '')}")
    assert row["verdict"] == saturation_run.verdict
