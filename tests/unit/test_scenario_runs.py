"""The run flow of otlp-metrics and loki-push against a simulated stack on a virtual clock: each
counts its units at every step of its ledger, reads its counters and its store from the
scenario's measures, and a clean run balances to the data point and to the line."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from rich.console import Console
from support.fakes.prometheus import FakeProm
from test_runner import Clock

from loadgate.contract.spec import RunSpec
from loadgate.contract.summary import ClientFigures
from loadgate.measure import queries as q
from loadgate.measure import scenarios as measures
from loadgate.measure import signal_counters as sc
from loadgate.measure.pipeline import Scope
from loadgate.measure.queries import LokiAPI, PrometheusAPI
from loadgate.records.result import RunResult
from loadgate.report.tables import figures_table
from loadgate.runner import run as runner

SCRAPED = {"job": "otelcol", "instance": "127.0.0.1:8888"}
# The same counters, remote-written by the collector's own scrape (a stack carrying metrics).
REMOTE = {"job": "otelcol-internal", "instance": "otelcol/0"}
LOKI = {"job": "loki", "instance": "localhost:3100"}
RW = "prometheusremotewrite/send-remote-write/0"
RATE = 100  # units per second of the simulated k6
OWN_SCRAPE = 37  # points the collector's own scrape takes in, every 60 s


class StackClock(Clock):
    """The virtual clock, and when the stack's processes started."""

    def __init__(self) -> None:
        super().__init__()
        self.start = self.now - 100


@dataclass
class Stack:
    """k6 -> collector (OTLP receiver, remote-write queue) -> Prometheus, or k6 -> Loki; the
    stack's Prometheus scrapes the collector and Loki every 2 s."""

    prom: FakeProm
    clock: StackClock
    run_id: str
    through_collector: bool
    sending_until: float = 0.0
    t: float = 0.0
    sent: int = 0
    counts: dict[str, float] = field(default_factory=dict[str, float])
    queue: int = 0  # the run's points in the remote-write queue
    own_queue: int = 0  # the collector's own scrape's points in it
    stored_lines: int = 0
    next_scrape: float = 0.0
    next_own_scrape: float = 0.0

    def __post_init__(self) -> None:
        self.t = self.next_scrape = self.clock.now
        self.next_own_scrape = self.t + 25  # once, during the load

    def add(self, name: str, n: float) -> None:
        self.counts[name] = self.counts.get(name, 0) + n

    def run_until(self, until: float) -> None:
        while self.t + 0.5 <= until:
            self.t += 0.5
            if self.t <= self.sending_until:
                n = RATE // 2
                self.sent += n
                if self.through_collector:
                    self.add("accepted", n)
                    self.queue += n
                else:
                    self.add("loki_received", n)
                    self.stored_lines += n
            if self.through_collector and self.t >= self.next_own_scrape:
                self.add("scraped", OWN_SCRAPE)
                self.own_queue += OWN_SCRAPE
                self.next_own_scrape += 60
            if self.queue or self.own_queue:  # sent on at once; only the run's carry `run`
                self.store_points(self.queue)
                self.add("exported", self.queue + self.own_queue)
                self.queue = self.own_queue = 0
            if self.t >= self.next_scrape:
                self.scrape(self.t)
                self.next_scrape += 2.0

    def store_points(self, n: int) -> None:
        """The run's points in Prometheus: a gauge sample each, and a histogram's _bucket and
        _sum beside every tenth (which the count leaves out)."""
        for i in range(n):
            at = self.t - 0.001 * i
            labels = {"run": self.run_id, "series": str(i % 10), "instance": "k6-vu1"}
            self.prom.add("loadgate_k6_gauge", labels, at, 1.0)
            if i % 10 == 0:
                self.prom.add("loadgate_k6_histogram_sum", labels, at, 3.0)
                self.prom.add("loadgate_k6_histogram_bucket", {**labels, "le": "1"}, at, 1.0)

    def scrape(self, t: float) -> None:
        c = self.counts
        for lab in (SCRAPED, REMOTE):  # the remote copy doubles every counter
            self.prom.add(q.COLLECTOR_UPTIME, lab, t, t - self.clock.start)
            self.prom.add(q.COLLECTOR_CPU, lab, t, 0.01 * t)
            otlp, own = {**lab, "receiver": "otlp/otelcol/0"}, {**lab, "receiver": "prometheus/x"}
            self.prom.add(sc.POINTS_ACCEPTED, otlp, t, c.get("accepted", 0))
            self.prom.add(sc.POINTS_ACCEPTED, own, t, c.get("scraped", 0))
            self.prom.add(sc.POINTS_REFUSED, otlp, t, 0)
            exp = {**lab, "exporter": RW}
            self.prom.add(sc.POINTS_SENT, exp, t, c.get("exported", 0))
            self.prom.add(sc.POINTS_FAILED, exp, t, 0)
            self.prom.add(q.COLLECTOR_QUEUE_SIZE, exp, t, self.queue + self.own_queue)
        self.prom.add(q.LOKI_BUILD_INFO, {**LOKI, "version": "3.7.8"}, t, 1)
        self.prom.add(q.PROCESS_START, LOKI, t, self.clock.start)
        self.prom.add(q.LOKI_RECEIVED, {**LOKI, "tenant": "fake"}, t, c.get("loki_received", 0))


class FakeTarget:
    name = "fake"

    def __init__(self, stack: Stack, duration: float):
        self.stack, self.duration = stack, duration

    def prometheus(self) -> PrometheusAPI:
        return self.stack.prom.api()

    def loki(self) -> LokiAPI:
        def handle(request: httpx.Request) -> httpx.Response:
            query = request.url.params["query"]
            assert re.search(r'\|= "run=r1 "', query), query
            result = [{"metric": {}, "value": [0, str(self.stack.stored_lines)]}]
            body = {"status": "success", "data": {"resultType": "vector", "result": result}}
            return httpx.Response(200, json=body)

        return LokiAPI("https://loki", httpx.Client(transport=httpx.MockTransport(handle)))

    def collector_series(self) -> dict[str, str]:
        return {"job": "otelcol"}

    def start(self, spec: RunSpec, out_dir: Path) -> None:
        self.stack.sending_until = self.stack.clock.now + self.duration

    def poll(self) -> runner.Progress | None:
        self.stack.run_until(self.stack.clock.now)
        if self.stack.clock.now >= self.stack.sending_until:
            return None
        return runner.Progress(0, self.duration, self.stack.sent, self.stack.sent, 0.0)

    def finish(self) -> ClientFigures:
        sent = self.stack.sent
        return ClientFigures(
            requests=sent // 50, failed=0, error_rate=0.0, p99_ms=3.0, records_sent=sent,
            records_accepted=sent, records_per_minute=sent * 60 / self.duration,
            duration_s=self.duration,
        )  # fmt: skip

    def stop(self) -> None:
        pass

    def environment(self) -> dict[str, Any]:
        return {}


def stack_for(through_collector: bool) -> Stack:
    clock = StackClock()
    prom = FakeProm()
    stack = Stack(prom, clock, "r1", through_collector)

    def follow(p: FakeProm, query: str) -> None:
        stack.run_until(clock.now)
        p.now = clock.now

    prom.on_query = follow
    clock.now += 10
    stack.run_until(clock.now)
    return stack


def run(stack: Stack, scenario: str, tmp_path: Path) -> RunResult:
    spec = RunSpec.from_params(
        {"scenario": scenario, "duration": "20s", "rate": 6000, "run-id": "r1"}
    )
    return runner.execute(spec, FakeTarget(stack, 20), tmp_path, clock=stack.clock)


def test_a_clean_metrics_run_balances_to_the_data_point(tmp_path: Path) -> None:
    stack = stack_for(through_collector=True)
    result = run(stack, "otlp-metrics", tmp_path)
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
    stack = stack_for(through_collector=False)
    result = run(stack, "loki-push", tmp_path)
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
    stack = stack_for(through_collector=scenario == "otlp-metrics")
    result = run(stack, scenario, tmp_path)
    console = Console(width=200, record=True)
    console.print(figures_table(result))
    text = console.export_text()
    unit = result.spec.kind.unit
    assert f"{unit} per minute accepted" in text
    assert ("Loki lines received" in text) == (scenario == "loki-push")
    assert ("collector refused" in text) == (scenario == "otlp-metrics")
    assert ("points of the collector's own scrape" in text) == (scenario == "otlp-metrics")
