"""k6 scaled to three units splits one run: each unit takes its share, the figures add up.

Per-unit figures come from Prometheus (each k6 process remote-writes its requests tagged with
its unit) and from get-results on each non-leader unit (its own segment); the combined figures
come from get-results on the leader.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest

from loadgate.contract.spec import RunSpec
from loadgate.contract.summary import ClientFigures
from loadgate.gate.model_gate import ModelGate
from loadgate.juju import endpoints, shares
from loadgate.juju import model as juju_model
from loadgate.records.result import RunResult
from loadgate.runner import run as runner
from loadgate.targets.juju import SCRAPE_TIMEOUT

UNITS = 3
SHARE_TOLERANCE = 0.10  # each unit within 10% of an even share (k6 execution segments)


@dataclass(frozen=True)
class ScaledRun:
    result: RunResult
    leader: str
    by_prometheus: dict[str, int | None]
    own: dict[str, ClientFigures]  # non-leader units' own get-results


@pytest.fixture(scope="module")
def scaled_runs() -> list[ScaledRun]:
    """The module's one scaled run, once made: its tests share it."""
    return []


@pytest.fixture
def scaled(loadgate_state: ModelGate, scaled_runs: list[ScaledRun]) -> ScaledRun:
    if not scaled_runs:
        scaled_runs.append(scaled_run(loadgate_state))
    return scaled_runs[0]


def scaled_run(gate: ModelGate) -> ScaledRun:
    """The first gated scenario's run, two minutes long, on k6 scaled to UNITS units."""
    juju_target, gate_spec = gate.target(), gate.spec(None)
    juju = juju_target.juju
    juju_model.scale(juju, "k6", UNITS)
    try:
        params = {**gate_spec.to_params(), "duration": "2m"}
        params.pop("run-id")
        params["labels"] = {**gate_spec.labels, "k6_units": str(UNITS)}
        spec = RunSpec.from_params(params)
        result = runner.execute(
            spec,
            juju_target,
            gate.results_root,
            drain_timeout=300.0,
            scope=juju_target.scope,
            scrape_timeout=SCRAPE_TIMEOUT,
        )
        status = juju.status()
        leader = endpoints.leader(status, "k6")
        units = sorted(status.apps["k6"].units)
        window = int(time.time() - result.started_at) + 30
        return ScaledRun(
            result,
            leader,
            shares.requests_by_unit(
                juju_target.prometheus(), spec.run_id, units, window, time.time()
            ),
            shares.own_figures(juju, [u for u in units if u != leader], spec.run_id),
        )
    finally:
        juju_model.scale(juju, "k6", 1)


def test_every_unit_took_part(scaled: ScaledRun) -> None:
    assert len(scaled.by_prometheus) == UNITS
    assert scaled.result.client.instances == UNITS


def test_each_unit_takes_its_share(scaled: ScaledRun) -> None:
    total = scaled.result.client.requests
    for unit, requests in scaled.by_prometheus.items():
        assert requests is not None, f"Prometheus has no k6 requests of {unit}"
        share = requests / (total / UNITS)
        assert abs(share - 1) <= SHARE_TOLERANCE, (
            f"{unit} sent {requests} of {total} requests: {share:.0%} of an even share"
        )


def test_combined_figures_are_the_sum_of_the_units(scaled: ScaledRun) -> None:
    counted = [r for r in scaled.by_prometheus.values() if r is not None]
    assert sum(counted) == scaled.result.client.requests, (
        f"units' requests in Prometheus {scaled.by_prometheus} do not add up to the leader's "
        f"combined {scaled.result.client.requests}"
    )


def test_each_unit_reports_its_own_segment(scaled: ScaledRun) -> None:
    for unit, figures in scaled.own.items():
        assert figures.requests == scaled.by_prometheus[unit], (
            f"{unit}: get-results says {figures.requests} requests, Prometheus "
            f"{scaled.by_prometheus[unit]}"
        )
        assert figures.records_sent == figures.requests * scaled.result.spec.logs_per_request


def test_scaled_run_ledger_balanced(scaled: ScaledRun) -> None:
    steps = ", ".join(f"{s.name}={s.count}" for s in scaled.result.ledger.steps)
    assert scaled.result.ledger.balanced, f"records lost or unaccounted for: {steps}"
