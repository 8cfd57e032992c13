"""The saturation gate: the k6 charm offers more than the pipeline takes, and the collector's
throughput over the steady window (its queue full) must reach the floor of gates.yaml.

The run goes through loadgate's run flow (runner.execute) with the Juju target, with the
parameters of gates.yaml `saturation` over loadgate's saturation parameters; the floor is judged
as one more gate (`saturation_per_minute`) and written into the run's result row, with no floor
set as well (the figure is then recorded, and must exist).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loadgate.contract.gates import Gate, format_value
from loadgate.judge import saturation_floor
from loadgate.juju.saturation_settings import SaturationGate
from loadgate.records import result as results
from loadgate.records.result import RunResult
from loadgate.runner import run as runner
from loadgate.targets.juju import SCRAPE_TIMEOUT, JujuTarget

DRAIN_TIMEOUT = 300.0


@pytest.fixture(scope="module")
def saturation_run(
    juju_target: JujuTarget, saturation_gate: SaturationGate, results_root: Path
) -> RunResult:
    result = runner.execute(
        saturation_gate.spec,
        juju_target,
        results_root,
        drain_timeout=DRAIN_TIMEOUT,
        scope=juju_target.scope,
        scrape_timeout=SCRAPE_TIMEOUT,
    )
    floor = saturation_floor.floor_gate(result.saturation, saturation_gate.floor)
    judged = saturation_floor.with_gate(result, floor)
    results.write(judged, results_root)
    return judged


def _gate(result: RunResult, name: str) -> Gate:
    found = [g for g in result.gates if g.name == name]
    assert found, f"no {name} gate in {[g.name for g in result.gates]}"
    return found[0]


def test_saturation_measured(saturation_run: RunResult) -> None:
    sat = saturation_run.saturation
    assert sat is not None, f"no saturation figures: {saturation_run.problems}"
    assert sat.saturated is not None, f"no steady window: {sat.reason}"
    assert sat.accepted_per_min is not None, sat
    assert sat.accepted_per_min > 0, sat
    assert sat.window_s is not None
    assert sat.window_s > 0


def test_saturation_at_least_the_floor(
    saturation_run: RunResult, saturation_gate: SaturationGate
) -> None:
    gate = _gate(saturation_run, saturation_floor.NAME)
    assert gate.passed, (
        f"saturation throughput {gate.value} records/min against the floor "
        f"{gate.threshold} ({saturation_gate.floor_from}; {gate.source})"
    )


@pytest.mark.parametrize("name", ["error_rate", "p99_ms", "lost_records"])
def test_client_gates_pass(saturation_run: RunResult, name: str) -> None:
    gate = _gate(saturation_run, name)
    assert gate.passed, f"{name}: measured {gate.value} against {gate.threshold} ({gate.source})"


def test_every_acknowledged_record_is_stored(saturation_run: RunResult) -> None:
    """Refused records are the client's failed requests; every acknowledged one went through."""
    steps = {s.name: s.count for s in saturation_run.ledger.steps}
    acknowledged = saturation_run.client.records_accepted
    notes = ", ".join(
        f"{s.name}={s.count} ({s.note or s.source})" for s in saturation_run.ledger.steps
    )
    assert steps["accepted"] == steps["exported"] == steps["stored"] == acknowledged, notes
    assert saturation_run.ledger.lost_after_acceptance == 0


def test_result_row_records_the_saturation_gate(
    saturation_run: RunResult, saturation_gate: SaturationGate, results_root: Path
) -> None:
    path = results.run_dir(results_root, saturation_run.run_id) / results.RESULT_FILE
    row = json.loads(path.read_text())
    assert row["labels"] == dict(saturation_gate.spec.labels)
    assert row["labels"]["gate"] == "saturation"
    gate = next(g for g in row["gates"] if g["name"] == saturation_floor.NAME)
    assert gate["value"] == row["saturation"]["accepted_per_min"]
    floor = saturation_gate.floor
    assert gate["threshold"] == ("measured" if floor is None else f">= {format_value(floor, '')}")
    assert row["verdict"] == saturation_run.verdict
