"""The run flow of otlp-metrics and loki-push against a simulated stack on a virtual clock: each
counts its units at every step of its ledger, reads its counters and its store from the
scenario's measures, and a clean run balances to the data point and to the line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console
from support.fakes.stack import OWN_SCRAPE, SimulatedStack
from support.fakes.target import FakeTarget

from loadgate.contract.spec import RunSpec
from loadgate.measure import scenarios as measures
from loadgate.measure.pipeline import Scope
from loadgate.records.result import RunResult
from loadgate.report.tables import figures_table
from loadgate.runner import run as runner

RATE = 100  # units per second of the simulated k6


def stack_for(scenario: str) -> SimulatedStack:
    """The stack as the scenario needs it (carrying metrics for otlp-metrics), up for ten
    seconds before the run."""
    return SimulatedStack.up(scenario=scenario, rate=RATE)


def run(stack: SimulatedStack, tmp_path: Path, target: FakeTarget | None = None) -> RunResult:
    """A 20 s run of the stack's scenario; its target reads the collector's scraped copy of its
    series (a stack carrying metrics holds a remote-written one too)."""
    spec = RunSpec.from_params(
        {"scenario": stack.scenario, "duration": "20s", "rate": 6000, "run-id": "r1"}
    )
    target = target or FakeTarget(stack, collector={"job": "otelcol"})
    return runner.execute(spec, target, tmp_path, clock=stack.clock)


def test_a_clean_metrics_run_balances_to_the_data_point(tmp_path: Path) -> None:
    stack = stack_for("otlp-metrics")
    result = run(stack, tmp_path)
    assert stack.sent == 2000
    assert [s.count for s in result.ledger.steps] == [2000] * 4, result.ledger
    assert result.ledger.balanced
    assert result.ledger.unit == "data points"
    assert [g.name for g in result.gates] == [
        "error_rate", "p99_ms", "points_per_minute", "lost_points",
    ]  # fmt: skip
    assert result.verdict == "PASS"
    pipe = result.pipeline
    assert pipe is not None
    # Counted once (the scraped copy, not the remote-written one) and the own scrape apart.
    assert pipe.collector_accepted == 2000
    assert pipe.collector_scraped == OWN_SCRAPE
    assert pipe.collector_exported == 2000 + OWN_SCRAPE
    assert pipe.collector_own_filtered is None  # no loop breaker in a metrics pipeline
    assert result.delivered is not None
    assert result.delivered.source.startswith("Prometheus PromQL")
    assert 'run="r1",__name__!~".+_(sum|bucket)"' in result.delivered.query
    assert result.saturation is None  # measured for logs only
    data = json.loads((tmp_path / "r1" / "result.json").read_text())
    assert data["ledger"]["unit"] == "data points"
    assert data["pipeline"]["collector_scraped"] == OWN_SCRAPE
    assert "logs_per_request" not in data["spec"]
    assert data["spec"]["series_per_request"] == 10
    assert data["bottleneck"]["figures"]["loki_received"] is None  # not on its path


def test_a_clean_loki_push_run_balances_to_the_line(tmp_path: Path) -> None:
    stack = stack_for("loki-push")
    result = run(stack, tmp_path)
    assert [s.name for s in result.ledger.steps] == ["sent", "accepted", "stored"]
    assert [s.count for s in result.ledger.steps] == [2000] * 3
    assert result.ledger.balanced
    assert [g.name for g in result.gates][-2:] == ["lines_per_minute", "lost_lines"]
    assert result.verdict == "PASS"
    pipe = result.pipeline
    assert pipe is not None
    assert pipe.loki_received == 2000
    assert pipe.collector_accepted is None  # not on the load's path: not measured
    assert pipe.queue_size_max is None
    assert result.delivered is not None
    assert result.delivered.own_stored is None
    assert result.delivered.source == "Loki LogQL instant query"


def test_the_scope_of_each_scenario() -> None:
    base = Scope(collector={"job": "otelcol"})
    metrics = measures.of("otlp-metrics").scope(base)
    sel = metrics.selectors()
    assert 'receiver=~"otlp.*"' in sel["collector_accepted"]
    assert 'exporter=~"prometheusremotewrite.*"' in sel["collector_exported"]
    assert 'job="otelcol"' in sel["collector_exported"]
    assert sel["collector_scraped"].endswith('receiver!~"otlp.*"}')
    assert "collector_own_filtered" not in sel
    assert metrics.queue_size() == (
        'sum({__name__=~"otelcol_exporter_queue_size",job="otelcol",'
        'exporter=~"prometheusremotewrite.*"})'
    )
    push = measures.of("loki-push").scope(base)
    assert set(push.selectors()) == {"loki_received", "loki_discarded"}
    assert set(push.anchors()) == {"loki"}
    assert measures.of("otlp-logs").scope(base) is base


@pytest.mark.parametrize("scenario", ["otlp-metrics", "loki-push"])
def test_the_runs_figures_table_speaks_the_unit(scenario: str, tmp_path: Path) -> None:
    stack = stack_for(scenario)
    result = run(stack, tmp_path)
    console = Console(width=200, record=True)
    console.print(figures_table(result))
    text = console.export_text()
    unit = result.spec.kind.unit
    assert f"{unit} per minute accepted" in text
    assert ("Loki lines received" in text) == (scenario == "loki-push")
    assert ("collector refused" in text) == (scenario == "otlp-metrics")
    assert ("points of the collector's own scrape" in text) == (scenario == "otlp-metrics")
