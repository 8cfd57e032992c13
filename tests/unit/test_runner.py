"""The run flow against a simulated pipeline on a virtual clock: a clean run balances to the
record; restarts are recorded and make figures unknown, never negative; every service must be
freshly scraped before the load; and a Prometheus that dies after the load keeps the run."""

from __future__ import annotations

import json
import re
import time as real_time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.fakes.prometheus import FakeProm

from loadgate.contract.spec import RunSpec
from loadgate.contract.summary import ClientFigures
from loadgate.measure import pipeline as pipe
from loadgate.measure import queries as q
from loadgate.measure import timeseries as ts
from loadgate.measure.queries import LokiAPI, PrometheusAPI
from loadgate.records.result import RunResult
from loadgate.runner import run as runner

COLLECTOR = {"job": "otelcol", "instance": "127.0.0.1:8888"}
LOKI = {"job": "loki", "instance": "localhost:3100"}
EXPORTER = "loki/send-loki-logs/0"
RATE = 50  # records per second of the simulated k6
OWN_DELAY = 0.8  # a collector log record reaches its own receiver this long after it is written


class Clock:
    def __init__(self, now: float = 1_000_000.0):
        self.now = now

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def strftime(self, fmt: str, t: Any = None) -> str:
        return real_time.strftime(fmt, t) if t is not None else real_time.strftime(fmt)

    def localtime(self, t: float | None = None) -> real_time.struct_time:
        return real_time.localtime(t)


@dataclass
class Process:
    start: float
    counts: dict[str, float] = field(default_factory=dict[str, float])


@dataclass
class Sim:
    """Collector -> queue -> Loki, scraped every 2 s; events change it at set times."""

    prom: FakeProm
    clock: Clock
    sending_until: float = 0.0
    loki_down: tuple[float, float] | None = None
    kill_collector_at: float | None = None
    collector: Process = field(default_factory=lambda: Process(0.0))
    loki: Process = field(default_factory=lambda: Process(0.0))
    instance: int = 0
    t: float = 0.0
    queue: float = 0.0
    sent: int = 0
    stored: int = 0
    next_scrape: float = 0.0
    loki_phase: float = 0.0  # Loki is scraped this long after the collector
    next_loki_scrape: float = 0.0
    # The collector's own log records (the charm's internal-telemetry loop): (written at,
    # dropped by the loop breaker), each reaching its own receiver OWN_DELAY later.
    own: list[tuple[float, bool]] = field(default_factory=list[tuple[float, bool]])
    own_queued: list[float] = field(default_factory=list[float])
    own_stored: list[float] = field(default_factory=list[float])
    # Other traffic (another application's logs through the same collector): records per
    # second from `other_from`, each stamped `other_lag` seconds before the collector takes it.
    other_rate: float = 0.0
    other_from: float = 0.0
    other_lag: float = 0.0
    other_queued: list[float] = field(default_factory=list[float])
    other_stored: list[float] = field(default_factory=list[float])

    def __post_init__(self) -> None:
        self.t = self.next_scrape = self.clock.now
        self.next_loki_scrape = self.t + self.loki_phase
        self.collector = Process(self.t - 100)
        self.loki = Process(self.t - 100)

    def loki_up(self, t: float) -> bool:
        return self.loki_down is None or not (self.loki_down[0] <= t < self.loki_down[1])

    def run_until(self, until: float) -> None:
        while self.t + 0.5 <= until:
            self.t += 0.5
            if self.kill_collector_at is not None and self.t >= self.kill_collector_at:
                self.kill_collector_at = None
                self.instance += 1
                self.collector = Process(self.t + 0.3)  # the queue is on disk: it survives
            if self.loki_down and self.t == self.loki_down[1]:
                self.loki = Process(self.t)  # Loki started again: its counters from 0
            if self.t <= self.sending_until:
                n = RATE / 2
                self.sent += int(n)
                c = self.collector.counts
                c["accepted"] = c.get("accepted", 0) + n
                self.queue += n
            if self.other_rate and self.t >= self.other_from:
                n = int(self.other_rate / 2)
                c = self.collector.counts
                c["accepted"] = c.get("accepted", 0) + n
                self.queue += n
                self.other_queued += [self.t - self.other_lag] * n
            for written, dropped in self.own:
                if self.t - 0.5 < written + OWN_DELAY <= self.t:
                    c = self.collector.counts
                    c["accepted"] = c.get("accepted", 0) + 1
                    if dropped:
                        c["filtered"] = c.get("filtered", 0) + 1
                    else:
                        self.queue += 1
                        self.own_queued.append(written)
            if self.loki_up(self.t) and self.queue:
                c, lk = self.collector.counts, self.loki.counts
                c["exported"] = c.get("exported", 0) + self.queue
                lk["received"] = lk.get("received", 0) + self.queue
                self.stored += int(self.queue) - len(self.own_queued) - len(self.other_queued)
                self.own_stored += self.own_queued
                self.other_stored += self.other_queued
                self.own_queued, self.other_queued = [], []
                self.queue = 0
            if self.t >= self.next_scrape:
                self.scrape_collector(self.t)
                self.next_scrape += 2.0
            if self.t >= self.next_loki_scrape:
                self.scrape_loki(self.t)
                self.next_loki_scrape += 2.0

    def scrape_collector(self, t: float) -> None:
        lab = {**COLLECTOR, "service_instance_id": f"i{self.instance}"}
        c = self.collector.counts
        self.prom.add(q.COLLECTOR_UPTIME, lab, t, t - self.collector.start)
        self.prom.add(q.COLLECTOR_CPU, lab, t, 0.01 * (t - self.collector.start))
        self.prom.add(q.COLLECTOR_ACCEPTED, {**lab, "receiver": "otlp"}, t, c.get("accepted", 0))
        self.prom.add(q.COLLECTOR_REFUSED, {**lab, "receiver": "otlp"}, t, 0)
        exp = {**lab, "exporter": EXPORTER}
        self.prom.add(q.COLLECTOR_EXPORTED, exp, t, c.get("exported", 0))
        self.prom.add(q.COLLECTOR_FAILED, exp, t, 0)
        self.prom.add(q.COLLECTOR_QUEUE_SIZE, exp, t, self.queue)
        if "filtered" in c:  # the filter's counter appears with its first dropped record
            flt = {**lab, "filter": "filter/internal-telemetry-loop-breaker/otelcol/0"}
            self.prom.add("otelcol_processor_filter_logs.filtered", flt, t, c["filtered"])

    def scrape_loki(self, t: float) -> None:
        if self.loki_up(t):
            self.prom.add(q.LOKI_BUILD_INFO, {**LOKI, "version": "3.7.8"}, t, 1)
            self.prom.add(q.PROCESS_START, LOKI, t, self.loki.start)
            received = self.loki.counts.get("received", 0)
            self.prom.add(q.LOKI_RECEIVED, {**LOKI, "tenant": "fake"}, t, received)


class FakeTarget:
    name = "fake"

    def __init__(self, sim: Sim, duration: float, loki_count: int | None = None):
        self.sim = sim
        self.duration = duration
        self.stopped = False
        self.loki_count = loki_count

    def prometheus(self) -> PrometheusAPI:
        return self.sim.prom.api()

    def loki(self) -> LokiAPI:
        def handle(request: httpx.Request) -> httpx.Response:
            query = request.url.params["query"]
            value = self.sim.stored if self.loki_count is None else self.loki_count
            if 'service_name=~".+"' in query:  # other traffic: every stream but two
                value = self.in_window(query, request, self.sim.other_stored)
            elif 'job="otelcol-internal"' in query:
                value = self.in_window(query, request, self.sim.own_stored)
            result = [{"metric": {}, "value": [0, str(value)]}]
            body = {"status": "success", "data": {"resultType": "vector", "result": result}}
            return httpx.Response(200, json=body)

        return LokiAPI("https://loki", httpx.Client(transport=httpx.MockTransport(handle)))

    @staticmethod
    def in_window(query: str, request: httpx.Request, stamps: list[float]) -> int:
        """How many of `stamps` a LogQL `[Nms]` window ending at the query's time holds."""
        window = re.search(r"\[(\d+)ms\]", query)
        assert window is not None, query
        at = int(request.url.params["time"]) / 1e9
        lo = at - int(window.group(1)) / 1000
        return sum(1 for t in stamps if lo < t <= at)

    def start(self, spec: RunSpec, out_dir: Path) -> None:
        self.sim.sending_until = self.sim.clock.now + self.duration

    def poll(self) -> runner.Progress | None:
        self.sim.run_until(self.sim.clock.now)
        if self.sim.clock.now >= self.sim.sending_until:
            return None
        return runner.Progress(0, self.duration, self.sim.sent, self.sim.sent, 0.0)

    def finish(self) -> ClientFigures:
        sent = self.sim.sent
        return ClientFigures(
            requests=sent // 5,
            failed=0,
            error_rate=0.0,
            p99_ms=3.0,
            records_sent=sent,
            records_accepted=sent,
            records_per_minute=sent * 60 / self.duration,
            duration_s=self.duration,
        )

    def stop(self) -> None:
        self.stopped = True

    def environment(self) -> dict[str, Any]:
        return {}


@pytest.fixture(params=[0.0, 1.5], ids=["same-phase", "loki-1.5s-later"])
def sim(request: pytest.FixtureRequest) -> Sim:
    clock = Clock()
    prom = FakeProm()
    s = Sim(prom, clock, loki_phase=request.param)

    def follow(p: FakeProm, query: str) -> None:
        s.run_until(clock.now)
        p.now = clock.now

    prom.on_query = follow
    clock.now += 10  # ten seconds of history before the run
    s.run_until(clock.now)
    return s


def execute(run_spec: RunSpec, target: FakeTarget, results: Path, **options: Any) -> RunResult:
    """The runner on the simulation's clock (passed in: nothing patched)."""
    return runner.execute(run_spec, target, results, clock=target.sim.clock, **options)


def spec(**params: Any) -> RunSpec:
    return RunSpec.from_params({"duration": "20s", "rate": 3000, "run-id": "r1", **params})


def test_a_clean_run_balances_to_the_record(sim: Sim, tmp_path: Path) -> None:
    result = execute(spec(), FakeTarget(sim, 20), tmp_path)
    counts = [s.count for s in result.ledger.steps]
    assert counts == [sim.sent] * 4
    assert sim.sent == 1000
    assert result.ledger.balanced
    assert result.pipeline is not None
    assert result.pipeline.loki_received == sim.sent
    assert result.pipeline.restarts == {"otelcol": [], "loki": []}
    assert result.verdict == "PASS"
    assert result.complete
    # Attribution in every run: this target measures nothing of k6 itself, so the generator
    # block holds only the VU ceiling, and its CPU is unknown, not 0.
    data = json.loads((tmp_path / "r1" / "result.json").read_text())
    assert data["generator"] == {"vus_limit": spec().max_vus}
    assert data["bottleneck"]["figures"]["k6_cpu_s"] is None
    assert data["bottleneck"]["figures"]["offered_per_min"] == 3000
    # The simulated Prometheus serves no queue gauges: the attribution says so rather than
    # calling the run clean.
    attribution = data["bottleneck"]["attribution"]
    assert attribution["verdict"] == "unknown"
    assert attribution["missing"] == ["queue_max", "queue_capacity"]
    # series.json: the queue over the run's window from Prometheus range queries; a series the
    # fake cannot answer (rates) is recorded as missing with its reason, not as zeros.
    series = ts.RunSeries.from_dict(json.loads((tmp_path / "r1" / ts.SERIES_FILE).read_text()))
    assert series.load_started == result.started_at
    assert series.load_ended == result.ended_at
    queue = series.series[ts.QUEUE]
    assert queue.samples
    assert queue.missing is None
    assert len(queue.samples) >= (result.ended_at - result.started_at) // series.step_s
    assert series.series[ts.RSS].missing == "Prometheus has no data for it in the window"
    assert not series.series[ts.CPU].samples
    assert series.series[ts.CPU].missing


def test_loki_stopped_for_15s_mid_run(sim: Sim, tmp_path: Path) -> None:
    start = sim.clock.now
    sim.loki_down = (start + 10, start + 25)
    result = execute(spec(duration="30s"), FakeTarget(sim, 30), tmp_path)
    p = result.pipeline
    assert p is not None
    assert p.restarts["loki"] == [pytest.approx(start + 25)]
    # The collector's own figures are untouched by Loki's restart: the ledger balances.
    assert [s.count for s in result.ledger.steps] == [sim.sent] * 4
    assert p.loki_received is None
    assert p.unknown["loki_received"]["lower_bound"] <= sim.stored
    assert "loki restarted 1 time" in p.unknown["loki_received"]["reason"]
    assert result.restarts["loki"]["count"] == 1
    assert any("loki restarted" in n for n in result.notes)
    data = json.loads((tmp_path / "r1" / "result.json").read_text())
    assert data["restarts"]["loki"]["count"] == 1
    assert data["pipeline"]["loki_received"] is None


def test_collector_killed_mid_run(sim: Sim, tmp_path: Path) -> None:
    sim.kill_collector_at = sim.clock.now + 12.2
    result = execute(spec(), FakeTarget(sim, 20), tmp_path)
    p = result.pipeline
    assert p is not None
    assert result.complete, result.problems
    assert len(p.restarts["otelcol"]) == 1
    accepted, exported = result.ledger.steps[1], result.ledger.steps[2]
    assert accepted.count is None
    assert exported.count is None
    assert "otelcol restarted 1 time" in accepted.note
    assert all(s.lost is None or s.lost >= 0 for s in result.ledger.steps)
    # What matters most is still exact: every acknowledged record is stored.
    assert result.ledger.lost_after_acceptance == 0
    assert result.ledger.steps[-1].count == sim.sent
    assert result.delivered is not None
    assert result.delivered.drained


def test_stored_more_than_acknowledged_is_explained_not_negative(sim: Sim, tmp_path: Path) -> None:
    result = execute(spec(), FakeTarget(sim, 20, loki_count=1010), tmp_path)
    stored = result.ledger.steps[-1]
    assert stored.surplus == 10
    assert stored.lost == 0
    assert result.ledger.lost_after_acceptance == 0
    assert result.ledger.stored_unacknowledged == 10
    assert "10 records k6 never saw acknowledged" in stored.note


def test_a_stack_with_loki_not_scraped_is_refused_before_the_load(sim: Sim, tmp_path: Path) -> None:
    sim.loki_down = (sim.clock.now - 100, sim.clock.now + 1000)
    sim.clock.now += 1  # past Loki's last scrape
    target = FakeTarget(sim, 20)
    with pytest.raises(runner.RunError, match=r"no fresh scrape of loki \(newest \d+s old\)"):
        execute(spec(), target, tmp_path)
    assert sim.sending_until == 0.0  # the load never started
    assert not (tmp_path / "r1").exists()


def test_prometheus_down_before_the_load_is_said_as_such(sim: Sim, tmp_path: Path) -> None:
    sim.prom.up = False
    with pytest.raises(runner.RunError, match="Prometheus is down or unreachable"):
        execute(spec(), FakeTarget(sim, 20), tmp_path)
    assert sim.sending_until == 0.0


def test_prometheus_dying_after_the_load_keeps_what_was_measured(sim: Sim, tmp_path: Path) -> None:
    target = FakeTarget(sim, 20)
    real_finish = target.finish

    def finish_then_prometheus_dies() -> ClientFigures:
        sim.prom.up = False
        return real_finish()

    target.finish = finish_then_prometheus_dies
    result = execute(spec(), target, tmp_path, scrape_timeout=5)
    assert not result.complete
    assert any("Prometheus is down" in p for p in result.problems)
    assert result.client.records_sent == sim.sent
    assert result.ledger.steps[-1].count == sim.stored  # Loki still answered
    assert result.ledger.steps[1].count is None
    data = json.loads((tmp_path / "r1" / "result.json").read_text())
    assert data["client"]["records_sent"] == sim.sent
    assert data["problems"]
    # What Prometheus could not give is unknown to the attribution, never "none".
    assert data["bottleneck"]["figures"]["queue_max"] is None
    assert data["bottleneck"]["attribution"]["verdict"] == "unknown"


def test_an_interrupted_load_stops_the_target(sim: Sim, tmp_path: Path) -> None:
    target = FakeTarget(sim, 20)

    def poll() -> runner.Progress | None:
        raise KeyboardInterrupt

    target.poll = poll
    with pytest.raises(KeyboardInterrupt):
        execute(spec(), target, tmp_path)
    assert target.stopped


def test_refused_records_do_not_end_the_drain_early() -> None:
    # 100 accepted, 50 exported, 60 refused because the queue was full: 50 accepted records
    # are still on their way (a batch waiting for its retry is not in the queue's size).
    clock = Clock()
    prom = FakeProm()
    lab = {**COLLECTOR, "exporter": EXPORTER}

    def scrape(t: float, accepted: float, exported: float, refused: float) -> None:
        prom.add(q.COLLECTOR_UPTIME, COLLECTOR, t, t - 900)
        prom.add(q.COLLECTOR_CPU, COLLECTOR, t, 1.0)
        prom.add(q.COLLECTOR_ACCEPTED, COLLECTOR, t, accepted)
        prom.add(q.COLLECTOR_REFUSED, COLLECTOR, t, refused)
        prom.add(q.COLLECTOR_EXPORTED, lab, t, exported)
        prom.add(q.COLLECTOR_ENQUEUE_FAILED, lab, t, refused)
        prom.add(q.COLLECTOR_QUEUE_SIZE, lab, t, 0)
        prom.add(q.LOKI_BUILD_INFO, LOKI, t, 1)
        prom.add(q.PROCESS_START, LOKI, t, 900)

    def follow(p: FakeProm, query: str) -> None:
        p.now = clock.now
        last = max((t for s in p.series for t, _ in s.samples), default=0.0)
        if clock.now - last >= 2:
            scrape(clock.now, 100, 50, 60)

    prom.on_query = follow
    scrape(clock.now, 0, 0, 0)
    clock.now += 2
    scrape(clock.now, 0, 0, 0)
    tracker = pipe.Tracker(prom.api())
    tracker.baseline(clock.now)
    clock.now += 1
    outcome = runner.drain(prom.api(), tracker, clock.now, timeout=10, clock=clock)
    assert not outcome.drained
    assert tracker.total("collector_exported") == 50


@pytest.mark.parametrize("quiet_s", [0.0, 3.0])
def test_the_collectors_own_logs_are_counted_apart(
    sim: Sim, tmp_path: Path, quiet_s: float
) -> None:
    """The otelcol charm (rev219+) ships the collector's own logs through its own receiver to
    Loki, and its loop breaker drops those about the Loki exporter: the run's records still
    balance to the record at every step."""
    start = sim.clock.now
    startup = [(start - 9.0, False), (start - 8.5, True)]  # before the window
    during = [(start + 5 + i * 0.7, i % 3 == 0) for i in range(12)]  # 4 dropped, 8 shipped
    sim.own = startup + during
    target = FakeTarget(sim, 20)
    target.quiet_s = quiet_s  # pyright: ignore[reportAttributeAccessIssue]
    result = execute(spec(), target, tmp_path)
    assert [s.count for s in result.ledger.steps] == [sim.sent] * 4
    assert result.ledger.balanced
    assert result.pipeline is not None
    assert result.pipeline.collector_own_filtered == 4
    assert result.delivered is not None
    assert result.delivered.own_stored == 8
    assert "own log records taken out: 12" in result.ledger.steps[1].note
    assert result.pipeline.loki_received == sim.sent + 8  # Loki holds both
    assert result.verdict == "PASS"
    data = json.loads((tmp_path / "r1" / "result.json").read_text())
    assert data["delivered"]["collector_own_records"] == 8
    assert data["pipeline"]["collector_own_filtered"] == 4


def test_without_the_own_records_split_the_ledger_would_not_balance(
    sim: Sim, tmp_path: Path
) -> None:
    """The same pipeline read as if it had no internal-telemetry loop: the collector's steps
    hold more than k6 sent. (Pins that the split above is what balances it.)"""
    start = sim.clock.now
    sim.own = [(start + 5 + i * 0.7, False) for i in range(6)]
    result = execute(
        spec(),
        FakeTarget(
            sim,
            20,
        ),
        tmp_path,
    )
    assert result.ledger.balanced
    from loadgate.judge import ledger

    assert result.pipeline is not None
    unsplit = ledger.build(result.client, result.pipeline, sim.stored, own_stored=0)
    assert not unsplit.balanced
    assert unsplit.steps[1].surplus == 6


@pytest.mark.parametrize("quiet_s", [0.0, 3.0])
def test_other_traffic_is_taken_out_and_the_ledger_balances(
    sim: Sim, tmp_path: Path, quiet_s: float
) -> None:
    """Another application's logs pass through the collector during the whole run (issue 18):
    its records are counted in Loki and taken out of the collector's steps, the run's records
    balance to the record, and the waits do not hang on a collector that is never idle."""
    sim.other_rate = 100.0
    sim.clock.now += 10  # it was already sending before the run
    sim.run_until(sim.clock.now)
    target = FakeTarget(sim, 20)
    target.quiet_s = quiet_s  # pyright: ignore[reportAttributeAccessIssue]
    result = execute(spec(), target, tmp_path)
    assert [s.count for s in result.ledger.steps] == [sim.sent] * 4
    assert result.ledger.balanced
    assert result.ledger.other is not None
    assert result.ledger.other >= 20 * 100  # at least the load's 20 s of it
    assert "records of other traffic taken out" in result.ledger.steps[1].note
    assert result.delivered is not None
    other = result.delivered.other
    assert other is not None
    assert other.records == result.ledger.other
    assert other.per_minute == pytest.approx(6000, rel=0.05)
    assert result.verdict == "PASS"
    assert result.ledger.lost_after_acceptance == 0
    if quiet_s:
        assert any("carried other traffic before the run" in n for n in result.notes)
    data = json.loads((tmp_path / "r1" / "result.json").read_text())
    assert data["delivered"]["other_traffic"]["records"] == other.records
    assert data["ledger"]["other_traffic"] == other.records


def test_other_traffic_that_cannot_be_split_is_unknown_never_a_loss(
    sim: Sim, tmp_path: Path
) -> None:
    """Other records stamped a second before the collector takes them, starting mid-run: at
    the window's end they fall on the other side of it in Loki than in the counters. The
    collector's steps are then unknown with a lower bound and the reason, never a loss."""
    start = sim.clock.now
    sim.other_rate, sim.other_from, sim.other_lag = 100.0, start + 8, 1.0
    target = FakeTarget(sim, 20)
    target.quiet_s = 3.0  # pyright: ignore[reportAttributeAccessIssue]
    result = execute(spec(), target, tmp_path)
    sent, accepted, exported, stored = result.ledger.steps
    assert sent.count == stored.count == sim.sent
    assert accepted.count is None
    assert "other traffic" in accepted.note
    assert f"at least {sim.sent:,}" in accepted.note
    assert accepted.lost is None
    assert exported.lost is None
    assert result.ledger.lost_after_acceptance == 0
    assert result.verdict == "PASS"


def test_without_taking_other_traffic_out_the_ledger_shows_a_phantom_loss(
    sim: Sim, tmp_path: Path
) -> None:
    """Pins what the split fixes (issue 18): read without the other traffic, the collector's
    steps hold more than k6 sent and 'lose' the difference before Loki."""
    sim.other_rate = 100.0
    result = execute(spec(), FakeTarget(sim, 20), tmp_path)
    assert result.ledger.balanced
    from loadgate.judge import ledger

    assert result.pipeline is not None
    unsplit = ledger.build(result.client, result.pipeline, sim.stored, own_stored=0)
    assert not unsplit.balanced
    assert unsplit.steps[1].surplus


def _idle_scrapes(accepted_from: float | None) -> tuple[Clock, FakeProm]:
    """The collector and Loki scraped every 2 s; the collector's accepted counter absent
    (Go creates it with its first record) until `accepted_from`, then 20 and still."""
    clock, prom = Clock(), FakeProm()
    start = clock.now

    def follow(p: FakeProm, query: str) -> None:
        p.now = clock.now
        last = max((t for s in p.series for t, _ in s.samples), default=0.0)
        if clock.now - last >= 2:
            t = clock.now
            prom.add(q.COLLECTOR_CPU, COLLECTOR, t, 1.0)
            prom.add(q.LOKI_BUILD_INFO, LOKI, t, 1)
            if accepted_from is not None and t - start >= accepted_from:
                prom.add(q.COLLECTOR_ACCEPTED, COLLECTOR, t, 20)

    prom.on_query = follow
    return clock, prom


def test_a_collector_that_never_accepted_a_record_is_quiet_without_waiting_out_the_timeout() -> (
    None
):
    # A revision whose collector takes in none of its own logs has no accepted series at all.
    clock, prom = _idle_scrapes(None)
    began = clock.now
    found = runner.wait_quiet(prom.api(), pipe.Scope(), 3.0, timeout=22.0, clock=clock)
    assert found.quiet
    assert not found.busy
    assert clock.now - began < 10


def test_a_counter_that_appears_during_the_wait_restarts_the_quiet() -> None:
    # Its own start-up records arrive 2 s in: the quiet counts from them, not from the start.
    clock, prom = _idle_scrapes(2.0)
    began = clock.now
    found = runner.wait_quiet(prom.api(), pipe.Scope(), 3.0, timeout=22.0, clock=clock)
    assert found.quiet
    assert not found.busy
    assert found.horizon - began >= 2 + 3
