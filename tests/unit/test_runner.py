"""The run flow against a simulated pipeline on a virtual clock: a clean run balances to the
record; restarts are recorded and make figures unknown, never negative; every service must be
freshly scraped before the load; and a Prometheus that dies after the load keeps the run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.fakes.clock import VirtualClock
from support.fakes.prometheus import FakeProm
from support.fakes.stack import COLLECTOR, EXPORTERS, LOKI, SimulatedStack
from support.fakes.target import FakeTarget

from loadgate.contract.spec import RunSpec
from loadgate.contract.summary import ClientFigures
from loadgate.measure import pipeline as pipe
from loadgate.measure import queries as q
from loadgate.measure import timeseries as ts
from loadgate.records.result import RunResult
from loadgate.runner import run as runner
from loadgate.runner.waits import Quiet

EXPORTER = EXPORTERS["logs"]


@pytest.fixture(params=[0.0, 1.5], ids=["same-phase", "loki-1.5s-later"])
def sim(request: pytest.FixtureRequest) -> SimulatedStack:
    """The stack, k6 sending 50 records/s, scraped every 2 s for ten seconds before the run."""
    return SimulatedStack.up(loki_phase=request.param)


def execute(run_spec: RunSpec, target: FakeTarget, results: Path, **options: Any) -> RunResult:
    """The runner on the simulation's clock (passed in: nothing patched)."""
    assert target.stack is not None
    return runner.execute(run_spec, target, results, clock=target.stack.clock, **options)


def spec(**params: Any) -> RunSpec:
    return RunSpec.from_params({"duration": "20s", "rate": 3000, "run-id": "r1", **params})


def test_a_clean_run_balances_to_the_record(sim: SimulatedStack, tmp_path: Path) -> None:
    result = execute(spec(), FakeTarget(sim), tmp_path)
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


def test_loki_stopped_for_15s_mid_run(sim: SimulatedStack, tmp_path: Path) -> None:
    start = sim.clock.now
    sim.loki_down = (start + 10, start + 25)
    result = execute(spec(duration="30s"), FakeTarget(sim), tmp_path)
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


def test_collector_killed_mid_run(sim: SimulatedStack, tmp_path: Path) -> None:
    sim.kill_collector_at = sim.clock.now + 12.2
    result = execute(spec(), FakeTarget(sim), tmp_path)
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


def test_stored_more_than_acknowledged_is_explained_not_negative(
    sim: SimulatedStack, tmp_path: Path
) -> None:
    sim.loki_count = 1010  # Loki answers 10 records more than k6 saw acknowledged
    result = execute(spec(), FakeTarget(sim), tmp_path)
    stored = result.ledger.steps[-1]
    assert stored.surplus == 10
    assert stored.lost == 0
    assert result.ledger.lost_after_acceptance == 0
    assert result.ledger.stored_unacknowledged == 10
    assert "10 records k6 never saw acknowledged" in stored.note


def test_a_stack_with_loki_not_scraped_is_refused_before_the_load(
    sim: SimulatedStack, tmp_path: Path
) -> None:
    sim.loki_down = (sim.clock.now - 100, sim.clock.now + 1000)
    sim.clock.now += 1  # past Loki's last scrape
    target = FakeTarget(sim)
    with pytest.raises(runner.RunError, match=r"no fresh scrape of loki \(newest \d+s old\)"):
        execute(spec(), target, tmp_path)
    assert sim.sending_until == 0.0  # the load never started
    assert not (tmp_path / "r1").exists()


def test_prometheus_down_before_the_load_is_said_as_such(
    sim: SimulatedStack, tmp_path: Path
) -> None:
    sim.prom.up = False
    with pytest.raises(runner.RunError, match="Prometheus is down or unreachable"):
        execute(spec(), FakeTarget(sim), tmp_path)
    assert sim.sending_until == 0.0


def test_prometheus_dying_after_the_load_keeps_what_was_measured(
    sim: SimulatedStack, tmp_path: Path
) -> None:
    target = FakeTarget(sim)
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


def test_an_interrupted_load_stops_the_target(sim: SimulatedStack, tmp_path: Path) -> None:
    target = FakeTarget(sim)

    def poll() -> runner.Progress | None:
        raise KeyboardInterrupt

    target.poll = poll
    with pytest.raises(KeyboardInterrupt):
        execute(spec(), target, tmp_path)
    assert target.stopped


def test_refused_records_do_not_end_the_drain_early() -> None:
    # 100 accepted, 50 exported, 60 refused because the queue was full: 50 accepted records
    # are still on their way (a batch waiting for its retry is not in the queue's size).
    clock = VirtualClock()
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
    sim: SimulatedStack, tmp_path: Path, quiet_s: float
) -> None:
    """The otelcol charm (rev219+) ships the collector's own logs through its own receiver to
    Loki, and its loop breaker drops those about the Loki exporter: the run's records still
    balance to the record at every step."""
    start = sim.clock.now
    startup = [(start - 9.0, False), (start - 8.5, True)]  # before the window
    during = [(start + 5 + i * 0.7, i % 3 == 0) for i in range(12)]  # 4 dropped, 8 shipped
    sim.own = startup + during
    target = FakeTarget(sim, quiet_s=quiet_s)
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
    sim: SimulatedStack, tmp_path: Path
) -> None:
    """The same pipeline read as if it had no internal-telemetry loop: the collector's steps
    hold more than k6 sent. (Pins that the split above is what balances it.)"""
    start = sim.clock.now
    sim.own = [(start + 5 + i * 0.7, False) for i in range(6)]
    result = execute(spec(), FakeTarget(sim), tmp_path)
    assert result.ledger.balanced
    from loadgate.judge import ledger

    assert result.pipeline is not None
    unsplit = ledger.build(result.client, result.pipeline, sim.stored, own_stored=0)
    assert not unsplit.balanced
    assert unsplit.steps[1].surplus == 6


@pytest.mark.parametrize("quiet_s", [0.0, 3.0])
def test_other_traffic_is_taken_out_and_the_ledger_balances(
    sim: SimulatedStack, tmp_path: Path, quiet_s: float
) -> None:
    """Another application's logs pass through the collector during the whole run (issue 18):
    its records are counted in Loki and taken out of the collector's steps, the run's records
    balance to the record, and the waits do not hang on a collector that is never idle."""
    sim.other_rate = 100.0
    sim.clock.now += 10  # it was already sending before the run
    sim.run_until(sim.clock.now)
    target = FakeTarget(sim, quiet_s=quiet_s)
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


def test_other_traffic_on_the_windows_edges_is_an_uncertainty_never_a_loss(
    sim: SimulatedStack, tmp_path: Path
) -> None:
    """Other records stamped a second before the collector takes them, starting mid-run: at
    the window's end they fall on the other side of it in Loki than in the counters. The
    collector's steps are then counts known within ± the other records on the window's edges,
    with the reason, and no loss within that: the ledger balances (issue 38)."""
    start = sim.clock.now
    sim.other_rate, sim.other_from, sim.other_lag = 100.0, start + 8, 1.0
    target = FakeTarget(sim, quiet_s=3.0)
    result = execute(spec(), target, tmp_path)
    sent, accepted, exported, stored = result.ledger.steps
    assert sent.count == stored.count == sim.sent
    assert result.delivered is not None
    assert result.delivered.other is not None
    edges = result.delivered.other.edge_records
    assert edges
    for step in (accepted, exported):
        assert step.count is not None
        assert step.count != sim.sent
        assert step.uncertainty == edges
        assert abs(step.count - sim.sent) <= edges
        assert f"known within ± {edges:,}" in step.note
        assert (step.lost, step.surplus) == (0, None)
    assert result.ledger.balanced
    assert result.ledger.lost_after_acceptance == 0
    assert result.verdict == "PASS"


def test_without_taking_other_traffic_out_the_ledger_shows_a_phantom_loss(
    sim: SimulatedStack, tmp_path: Path
) -> None:
    """Pins what the split fixes (issue 18): read without the other traffic, the collector's
    steps hold more than k6 sent and 'lose' the difference before Loki."""
    sim.other_rate = 100.0
    result = execute(spec(), FakeTarget(sim), tmp_path)
    assert result.ledger.balanced
    from loadgate.judge import ledger

    assert result.pipeline is not None
    unsplit = ledger.build(result.client, result.pipeline, sim.stored, own_stored=0)
    assert not unsplit.balanced
    assert unsplit.steps[1].surplus


def _idle_scrapes(accepted_from: float | None) -> tuple[VirtualClock, FakeProm]:
    """The collector and Loki scraped every 2 s; the collector's accepted counter absent
    (Go creates it with its first record) until `accepted_from`, then 20 and still."""
    clock, prom = VirtualClock(), FakeProm()
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


def _wait_after(before: float) -> tuple[float, float, Quiet]:
    """A quiet wait whose Prometheus already holds 10 s of scrapes with the collector's accepted
    counter at `before` (the wait's own scrapes read 20): (when it began, when it ended, what it
    found)."""
    clock, prom = _idle_scrapes(0.0)
    began = clock.now
    for t in (began - 10, began - 8, began - 6, began - 4, began - 2):
        prom.add(q.COLLECTOR_CPU, COLLECTOR, t, 1.0)
        prom.add(q.LOKI_BUILD_INFO, LOKI, t, 1)
        prom.add(q.COLLECTOR_ACCEPTED, COLLECTOR, t, before)
    found = runner.wait_quiet(prom.api(), pipe.Scope(), 3.0, timeout=22.0, clock=clock)
    assert found.quiet
    assert not found.busy
    return began, clock.now, found


def test_a_collector_still_before_the_wait_is_quiet_at_the_first_fresh_scrape() -> None:
    # Its counter stood at 20 in the scrapes of the last 10 s: no need to watch it for 3 s more.
    began, ended, found = _wait_after(20)
    assert found.horizon >= began  # a fresh scrape
    assert ended - began < 1.5
    assert found.clear_from <= began  # clear since before the wait began


def test_a_counter_that_rose_just_before_the_wait_is_watched_for_the_quiet() -> None:
    # It rose from 10 to 20 between the scrapes 2 s before the wait and the wait's first: the
    # quiet counts from the rise, as if watched from the start.
    began, _, found = _wait_after(10)
    assert found.horizon - began >= 3
    assert found.clear_from > began - 2  # not clear before the rise


def test_a_counter_that_appears_during_the_wait_restarts_the_quiet() -> None:
    # Its own start-up records arrive 2 s in: the quiet counts from them, not from the start.
    clock, prom = _idle_scrapes(2.0)
    began = clock.now
    found = runner.wait_quiet(prom.api(), pipe.Scope(), 3.0, timeout=22.0, clock=clock)
    assert found.quiet
    assert not found.busy
    assert found.horizon - began >= 2 + 3
