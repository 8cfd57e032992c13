"""Counter increases from raw samples: exact when nothing reset, a lower bound with the reason
when a process restarted or a counter went down, never a negative or invented figure."""

from __future__ import annotations

from loadgate.measure.counters import (
    Count,
    Counter,
    ProcessStart,
    judge,
    starts_from_start_time,
    starts_from_uptime,
)
from loadgate.measure.queries import Series

LOKI = {"job": "loki", "instance": "127.0.0.1:3100"}


def series(samples: list[tuple[float, float]], **labels: str) -> Series:
    return Series({**LOKI, **labels}, samples)


def test_a_clean_window_is_the_exact_difference() -> None:
    c = Counter()
    c.baseline([series([(90, 400.0), (98, 500.0)])])
    c.fold([series([(100, 500.0), (102, 900.0), (104, 1500.0)])])
    assert c.total == 1000
    assert c.resets == 0
    assert judge(c, present=True, absent_reason="-") == Count(1000)


def test_a_counter_that_went_down_was_reset_and_is_a_lower_bound() -> None:
    # Loki stopped and started mid-run: 500 at the baseline, 2,000 before it stopped, then it
    # counts again from 0. Subtracting two instants would say 1,200 - 500 = 700 (or negative).
    c = Counter()
    c.baseline([series([(98, 500.0)])])
    c.fold([series([(100, 800.0), (102, 2000.0), (120, 300.0), (122, 1200.0)])])
    assert c.total == 1500 + 1200
    assert c.resets == 1
    count = judge(c, present=True, absent_reason="-")
    assert count.value is None
    assert count.lower_bound == 2700
    assert "reset 1 time" in count.reason
    assert count.text() == "unknown (at least 2,700)"


def test_a_restart_seen_only_through_the_start_time_still_splits_the_counter() -> None:
    # The new process counted past the old value before its first scrape: no decrease is
    # visible, but its start time says the counter began again from 0.
    c = Counter()
    c.baseline([series([(98, 100.0)])])
    restart = ProcessStart(("loki", LOKI["instance"]), 110.0)
    c.fold([series([(100, 300.0), (104, 400.0), (112, 450.0)])], [restart])
    assert c.total == (400 - 100) + 450
    count = judge(c, present=True, absent_reason="-", restarts={"loki": [110.0]})
    assert count.value is None
    assert count.lower_bound == 750
    assert "loki restarted 1 time during the run" in count.reason


def test_a_restart_of_another_target_does_not_reset_this_series() -> None:
    c = Counter()
    c.baseline([series([(98, 100.0)])])
    other = ProcessStart(("loki", "10.0.0.2:3100"), 110.0)
    c.fold([series([(104, 400.0), (112, 450.0)])], [other])
    assert c.total == 350
    assert c.resets == 0


def test_a_series_born_in_the_window_counts_from_zero_and_a_dead_one_adds_nothing() -> None:
    # kill -9 of the collector: the old process's series stops (its last count is lost), the
    # new process (new service_instance_id) starts a new series from 0.
    old = {"service_instance_id": "a"}
    new = {"service_instance_id": "b"}
    c = Counter()
    c.baseline([series([(98, 1000.0)], **old)])
    c.fold([series([(100, 1500.0), (102, 2100.0)], **old), series([(106, 700.0)], **new)])
    assert c.total == 1100 + 700
    assert c.resets == 0
    # Without knowing the restart this would look exact; the restart makes it a lower bound.
    count = judge(c, present=True, absent_reason="-", restarts={"otelcol": [105.0]})
    assert count.value is None
    assert count.lower_bound == 1800


def test_no_series_is_zero_only_when_the_service_is_scraped() -> None:
    empty = Counter()
    assert judge(empty, present=True, absent_reason="no Loki") == Count(0)
    unknown = judge(empty, present=False, absent_reason='no series of Loki {juju_unit="loki/0"}')
    assert unknown.value is None
    assert unknown.lower_bound is None
    assert "loki/0" in unknown.reason
    assert unknown.text() == "unknown"


def test_counts_never_go_negative() -> None:
    c = Counter()
    c.baseline([series([(98, 30000.0)])])
    c.fold([series([(100, 10.0), (102, 5.0), (104, 0.0)])])
    assert c.total == 10 + 5 + 0  # three resets, each counting again from 0
    assert c.resets == 3
    assert judge(c, present=True, absent_reason="-").lower_bound == 15


def test_process_starts_from_a_start_time_gauge() -> None:
    loki = series([(90, 50.0), (92, 50.0), (120, 118.5), (122, 118.5)])
    starts = starts_from_start_time([loki])
    assert [p.at for p in starts] == [50.0, 118.5]
    assert {p.target for p in starts} == {("loki", LOKI["instance"])}


def test_process_starts_from_an_uptime_counter() -> None:
    target = {"job": "otelcol", "instance": "127.0.0.1:8888"}
    old = Series({**target, "service_instance_id": "a"}, [(100, 40.0), (102, 42.0)])
    new = Series({**target, "service_instance_id": "b"}, [(106.3, 1.2), (108.3, 3.2)])
    starts = starts_from_uptime([old, new])
    assert [round(p.at, 1) for p in starts] == [60.0, 105.1]
    # One process sampled twice, start estimated within scrape jitter: one start.
    jitter = Series(target, [(100.0, 40.0), (102.004, 42.0)])
    assert len(starts_from_uptime([jitter])) == 1


def test_a_counter_without_series_is_a_lower_bound_when_its_service_restarted() -> None:
    # The dead process may have counted (e.g. dropped records) after its last scrape.
    count = judge(Counter(), present=True, absent_reason="-", restarts={"otelcol": [5.0]})
    assert count == Count(None, 0, count.reason)
    assert "otelcol restarted" in count.reason
