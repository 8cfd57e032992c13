"""Pipeline figures from Prometheus through the Tracker: exact increases in a clean run, and
honest unknowns with lower bounds and recorded restarts when a service restarted mid-run
(the cases of issue 10, point 1, where instant differences gave wrong or negative counts)."""

from __future__ import annotations

import pytest
from support.fakes.prometheus import FakeProm

from loadgate.measure import pipeline as pipe
from loadgate.measure import queries as q

COLLECTOR = {"job": "otelcol", "instance": "127.0.0.1:8888"}
EXPORTER = "loki/send-loki-logs/0"
LOKI = {"job": "loki", "instance": "localhost:3100"}


def scrape_collector(
    p: FakeProm, t: float, inst: str, start: float, accepted: float, exported: float
) -> None:
    lab = {**COLLECTOR, "service_instance_id": inst}
    p.add(q.COLLECTOR_UPTIME, lab, t, t - start)
    p.add(q.COLLECTOR_CPU, lab, t, 0.01 * (t - start))
    p.add(q.COLLECTOR_ACCEPTED, {**lab, "receiver": "otlp"}, t, accepted)
    p.add(q.COLLECTOR_REFUSED, {**lab, "receiver": "otlp"}, t, 0)
    p.add(q.COLLECTOR_EXPORTED, {**lab, "exporter": EXPORTER}, t, exported)
    p.add(q.COLLECTOR_FAILED, {**lab, "exporter": EXPORTER}, t, 0)
    p.add(q.COLLECTOR_QUEUE_SIZE, {**lab, "exporter": EXPORTER}, t, 0)


def scrape_loki(
    p: FakeProm, t: float, start: float, received: float, labels: dict[str, str] | None = None
) -> None:
    lab = labels or LOKI
    p.add(q.LOKI_BUILD_INFO, {**lab, "version": "3.7.8"}, t, 1)
    p.add(q.PROCESS_START, lab, t, start)
    p.add(q.LOKI_RECEIVED, {**lab, "tenant": "fake"}, t, received)


def figures(p: FakeProm, t0: float, t1: float, scope: pipe.Scope | None = None) -> pipe.Tracker:
    tracker = pipe.Tracker(p.api(), scope)
    tracker.baseline(t0)
    tracker.advance(t1)
    return tracker


def test_a_clean_run_is_exact_and_balanced() -> None:
    p = FakeProm()
    for i, t in enumerate(range(1000, 1042, 2)):
        n = 100 * max(0, i - 3)  # load from the 4th scrape on
        scrape_collector(p, t, "a", 900, 5000 + n, 5000 + n)
        scrape_loki(p, t, 900, 7000 + n)
    tracker = figures(p, 1004, 1040)
    counts = tracker.counts(1040)
    assert counts["collector_accepted"].value == 1700
    assert counts["collector_exported"].value == 1700
    assert counts["loki_received"].value == 1700
    assert counts["collector_refused"].value == 0
    assert counts["loki_discarded"].value == 0  # Loki scraped, no series: nothing discarded
    assert tracker.restarts() == {"otelcol": [], "loki": []}


def test_loki_restarted_mid_run_is_recorded_and_its_figures_are_lower_bounds() -> None:
    # Loki received 1,000 before it stopped; its last scrape saw 800. It restarted at 1021
    # and received 600 more. Instants would say 600 - 0 (or less than the stored count).
    p = FakeProm()
    for t in range(1000, 1020, 2):
        scrape_loki(p, t, 900, min(800, 100 * (t - 1004)) if t > 1004 else 0)
    for t in range(1022, 1042, 2):
        scrape_loki(p, t, 1021, min(600, 100 * (t - 1022)))
    for t in range(1000, 1042, 2):
        scrape_collector(p, t, "a", 900, 1600, 1600)
    tracker = figures(p, 1004, 1040)
    counts = tracker.counts(1040)
    assert tracker.restarts() == {"otelcol": [], "loki": [1021.0]}
    received = counts["loki_received"]
    assert received.value is None
    assert received.lower_bound == 800 + 600
    assert "loki restarted 1 time" in received.reason
    # The collector did not restart: its figures stay exact.
    assert counts["collector_accepted"].value == 0  # constant in this window


def test_collector_killed_mid_run_is_recorded_and_never_negative() -> None:
    # kill -9 of otelcol at 1019, Pebble restarts it at 1020 with a new instance id.
    p = FakeProm()
    for t in range(1000, 1020, 2):
        n = max(0, 100 * (t - 1004))
        scrape_collector(p, t, "a", 900, 20000 + n, 20000 + n)
    for t in range(1022, 1042, 2):
        n = 100 * (t - 1020)
        scrape_collector(p, t, "b", 1020.4, n, n)
    for t in range(1000, 1042, 2):
        scrape_loki(p, t, 900, 0)
    tracker = figures(p, 1004, 1040)
    counts = tracker.counts(1040)
    assert tracker.restarts()["otelcol"] == [1020.4]
    accepted = counts["collector_accepted"]
    assert accepted.value is None
    assert accepted.lower_bound == 1400 + 2000
    assert "otelcol restarted 1 time" in accepted.reason
    assert counts["collector_exported"].value is None
    # The old way: sum at the end minus sum at the start.
    naive = 2000 - 20000
    assert naive < 0 <= accepted.lower_bound


def test_a_loki_scope_that_matches_nothing_is_unknown_not_zero() -> None:
    # Issue 12, point 14: the figures follow loki/0, but Prometheus has only loki/1's series.
    p = FakeProm()
    loki1 = {**LOKI, "juju_unit": "loki/1"}
    for t in range(1000, 1042, 2):
        scrape_collector(p, t, "a", 900, 100 * (t - 1000), 100 * (t - 1000))
        scrape_loki(p, t, 900, 100 * (t - 1000), loki1)
    scope = pipe.Scope(loki={"juju_unit": "loki/0"})
    counts = figures(p, 1004, 1040, scope).counts(1040)
    for name in ("loki_received", "loki_discarded"):
        assert counts[name].value is None
        assert 'juju_unit="loki/0"' in counts[name].reason
    assert counts["collector_accepted"].value == 3600


def test_an_exporter_scope_that_matches_nothing_is_unknown_not_zero() -> None:
    p = FakeProm()
    for t in range(1000, 1042, 2):
        scrape_collector(p, t, "a", 900, 10, 10)
        scrape_loki(p, t, 900, 10)
    counts = figures(p, 1004, 1040, pipe.Scope(exporter="otlphttp.*")).counts(1040)
    assert counts["collector_exported"].value is None
    assert "otlphttp" in counts["collector_exported"].reason
    assert counts["collector_accepted"].value == 0


def test_read_counters_reports_a_missing_series_as_none() -> None:
    p = FakeProm(now=1010)
    scrape_collector(p, 1008, "a", 900, 10, 10)
    live = pipe.read_counters(p.api(), at=1010)
    assert live["collector_accepted"] == 10
    assert live["loki_received"] is None


def test_advancing_in_pieces_equals_one_window() -> None:
    p = FakeProm()
    for t in range(1000, 1100, 2):
        scrape_collector(p, t, "a", 900, 7 * (t - 1000), 7 * (t - 1000))
        scrape_loki(p, t, 900, 7 * (t - 1000))
    whole = figures(p, 1004, 1098)
    pieces = pipe.Tracker(p.api())
    pieces.baseline(1004)
    for until in (1011.5, 1030, 1030, 1064.002, 1098):
        pieces.advance(until)
    assert pieces.total("collector_accepted") == whole.total("collector_accepted") == 7 * 94


def test_a_restart_seen_in_several_windows_is_one_restart() -> None:
    # Uptime is read a few milliseconds after the scrape starts: the start estimates jitter.
    p = FakeProm()
    for i, t in enumerate(range(1000, 1060, 2)):
        inst, start = ("a", 900.0) if t < 1020 else ("b", 1019.5)
        jitter = 0.003 * (i % 3)
        lab = {**COLLECTOR, "service_instance_id": inst}
        p.add(q.COLLECTOR_UPTIME, lab, t, t - start - jitter)
        p.add(q.COLLECTOR_CPU, lab, t, 0.01 * (t - start))
        scrape_loki(p, t, 900, 0)
    tracker = pipe.Tracker(p.api())
    tracker.baseline(1004)
    for until in range(1010, 1060, 4):
        tracker.advance(until)
    assert len(tracker.restarts()["otelcol"]) == 1
    assert tracker.restarts()["otelcol"][0] == pytest.approx(1019.5, abs=0.01)
