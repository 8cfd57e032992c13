"""The steady window and the counts over it (measure/saturation.py), on samples made up here:
a queue that fills and stays full, one that never fills, and windows too short to trust."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import httpx
import pytest
from support.fakes.prometheus import FakeProm

from loadgate.measure import queries as q
from loadgate.measure import saturation as sat
from loadgate.measure.pipeline import Scope
from loadgate.measure.queries import LokiAPI, Series
from loadgate.measure.saturation import SaturationFigures

LOAD = (1000.0, 1060.0)


def scrapes(
    values: Sequence[float], start: float = 998.0, every: float = 2.0
) -> list[tuple[float, float]]:
    return [(start + i * every, v) for i, v in enumerate(values)]


def test_the_window_starts_after_the_queue_filled_and_settled() -> None:
    # Scrapes from 998 every 2 s; the queue reaches 900 of 1,000 at 1008.
    queue = scrapes([0, 0, 200, 500, 800, 950, 1000, 1000] + [1000] * 24)
    window = sat.steady_window(queue, 1000, LOAD)
    assert isinstance(window, sat.SteadyWindow)
    assert window.saturated is True
    assert window.filled_at == 1008.0
    assert window.start == 1012.0  # the first scrape at least 4 s after it filled
    assert window.end == 1060.0  # the last scrape inside the load
    assert window.seconds == 48.0


def test_a_queue_that_never_fills_means_not_saturated_over_the_load_less_its_warm_up() -> None:
    queue = scrapes([0, 3, 5, 2] + [4] * 28)
    window = sat.steady_window(queue, 1000, LOAD)
    assert isinstance(window, sat.SteadyWindow)
    assert window.saturated is False
    assert window.filled_at is None
    assert window.start == 1012.0  # the first scrape after a fifth of the load
    assert window.end == 1060.0


def test_no_capacity_reading_never_counts_as_full() -> None:
    window = sat.steady_window(scrapes([1000] * 32), None, LOAD)
    assert isinstance(window, sat.SteadyWindow)
    assert window.saturated is False


@pytest.mark.parametrize(
    ("queue", "why"),
    [
        ([(1000.0, 5.0)], "fewer than two scrapes"),
        (scrapes([0] * 28 + [1000] * 4), "shorter than 10s: run the load longer"),
    ],
)
def test_no_window_says_why(queue: list[tuple[float, float]], why: str) -> None:
    answer = sat.steady_window(queue, 1000, LOAD)
    assert isinstance(answer, str)
    assert why in answer


def test_increase_over_the_window_sums_series_and_refuses_a_reset() -> None:
    a = Series(
        {"receiver": "otlp", "transport": "http"},
        [(1010.0, 100.0), (1012.0, 150.0), (1030.0, 900.0)],
    )
    b = Series({"receiver": "otlp", "transport": "grpc"}, [(1012.0, 0.0), (1030.0, 10.0)])
    assert sat.increase([a, b], 1012.0, 1030.0) == 760
    born = Series({"receiver": "new"}, [(1020.0, 5.0), (1030.0, 7.0)])
    assert sat.increase([a, born], 1012.0, 1030.0) == 750 + 7  # born inside: from 0
    reset = Series({"x": "1"}, [(1012.0, 50.0), (1020.0, 3.0), (1030.0, 9.0)])
    assert sat.increase([reset], 1012.0, 1030.0) is None
    missing = Series({"x": "2"}, [(1010.0, 1.0), (1029.0, 2.0)])
    assert sat.increase([missing], 1012.0, 1030.0) is None


def test_per_minute_and_a_gauge_summed_over_series() -> None:
    assert sat.per_minute(3500, 30.0) == 7000.0
    assert sat.per_minute(None, 30.0) is None
    summed = sat.summed(
        [Series({"e": "a"}, [(1.0, 2.0), (3.0, 4.0)]), Series({"e": "b"}, [(1.0, 5.0)])]
    )
    assert summed == [(1.0, 7.0), (3.0, 4.0)]


# ---- at COS's one-minute scrape (the Juju target: Scope.scrape_interval_s = 60) ----------

COS_LOAD = (10_000.0, 10_480.0)  # an 8-minute run, as the Juju gate's saturation run


def minutely(values: Sequence[float], start: float = 10_030.0) -> list[tuple[float, float]]:
    return scrapes(values, start=start, every=60.0)


def test_at_a_one_minute_scrape_the_window_settles_one_scrape_and_spans_three() -> None:
    assert sat.min_window_s(2.0) == sat.MIN_WINDOW_S == 10.0  # the local stack: unchanged
    assert sat.min_window_s(60.0) == 180.0
    # Scrapes at 10030, 10090, ...: the queue is first seen full at 10090.
    queue = minutely([300, 1000, 1000, 1000, 1000, 1000, 1000, 1000])
    window = sat.steady_window(queue, 1000, COS_LOAD, 60.0)
    assert isinstance(window, sat.SteadyWindow)
    assert window.filled_at == 10_090.0
    assert window.start == 10_150.0  # the next scrape: 4 s after the fill is a minute on
    assert window.end == 10_450.0
    assert window.seconds == 300.0


def test_a_scrape_after_the_loads_true_end_is_left_out() -> None:
    """The Juju target learns of the load's end by polling the k6 charm, seconds late: a scrape
    in between finds the queue draining and the collector taking nothing, so the window ends
    at the last scrape that finds it full."""
    queue = minutely([1000, 1000, 1000, 1000, 1000, 1000, 1000, 0], start=10_010.0)
    late_end = (COS_LOAD[0], COS_LOAD[1] + 15)  # the last scrape, 10430 + 60, is inside it
    window = sat.steady_window(queue, 1000, late_end, 60.0)
    assert isinstance(window, sat.SteadyWindow)
    assert window.end == 10_370.0
    assert (window.start, window.seconds) == (10_070.0, 300.0)


def test_at_a_one_minute_scrape_a_short_run_has_no_window_and_says_why() -> None:
    # A 5-minute run: seen full at 10090, settled at 10150, last scrape 10270: two minutes.
    queue = minutely([300, 1000, 1000, 1000, 1000])
    answer = sat.steady_window(queue, 1000, (10_000.0, 10_300.0), 60.0)
    assert answer == (
        "the steady window after the queue filled is 120s, shorter than 180s: run the load longer"
    )
    # The same samples pass the local stack's 10 s minimum: the interval is what changed.
    assert isinstance(sat.steady_window(queue, 1000, (10_000.0, 10_300.0)), sat.SteadyWindow)


def test_measure_reads_the_window_at_the_scopes_scrape_interval() -> None:
    """measure() over a collector scraped once a minute: a window of two minutes is refused on
    the Juju target's scope, and the same samples give figures on the local stack's."""
    prom = FakeProm()
    exp = {"exporter": "loki/send-loki-logs/0"}
    for i, t in enumerate(range(10_030, 10_300, 60)):  # 10030 ... 10270
        full = 300.0 if i == 0 else 1000.0
        prom.add(q.COLLECTOR_QUEUE_SIZE, exp, t, full)
        prom.add(q.COLLECTOR_QUEUE_CAPACITY, exp, t, 1000.0)
        prom.add(q.COLLECTOR_ACCEPTED, {"receiver": "otlp"}, t, 3000.0 * (t - 10_000))
        prom.add(q.COLLECTOR_EXPORTED, exp, t, 3000.0 * (t - 10_000))
        prom.add(q.COLLECTOR_REFUSED, {"receiver": "otlp"}, t, 2000.0 * (t - 10_000))
    loki = LokiAPI("http://loki", httpx.Client(transport=httpx.MockTransport(_loki_counts)))
    load = (10_000.0, 10_300.0)
    juju = Scope(exporter="loki/send-loki-logs/0", scrape_interval_s=60.0)
    on_juju = sat.measure(prom.api(), loki, juju, "r1", load, 300_000.0)
    assert on_juju.saturated is None
    assert "shorter than 180s" in on_juju.reason
    local = sat.measure(prom.api(), loki, Scope(exporter="loki/send-loki-logs/0"), "r1", load, 3e5)
    assert local.saturated is True
    assert (local.window_start, local.window_end) == (10_150.0, 10_270.0)
    assert local.accepted_per_min == local.exported_per_min == 180_000.0
    assert local.refused_per_min == 120_000.0
    assert local.stored_per_min == 180_000.0


def _loki_counts(request: httpx.Request) -> httpx.Response:
    """The run's records stamped in the window (3,000/s); nothing else in Loki."""
    query = request.url.params["query"]
    value = 0.0
    if "run=r1 " in query and "|=" in query:
        value = 3000.0 * int(query.rsplit("[", 1)[1].removesuffix("ms]))")) / 1000
    result = [{"metric": {}, "value": [0, str(value)]}]
    body = {"status": "success", "data": {"resultType": "vector", "result": result}}
    return httpx.Response(200, json=body)


def test_a_queue_that_grew_without_filling_is_past_the_limit_at_what_the_exporter_sent() -> None:
    # The batch profile here: all 300,000/min taken in, 215,250/min sent on (Loki's rate limit).
    grew = SaturationFigures(300_000.0, False, accepted_per_min=300_013.0,
                             exported_per_min=215_250.0)  # fmt: skip
    assert grew.growing
    assert grew.throughput == 215_250.0
    took_all = replace(grew, exported_per_min=296_000.0)
    assert not took_all.growing
    assert took_all.throughput is None
    full = replace(grew, saturated=True)
    assert not full.growing
    assert full.throughput == 300_013.0
    unknown = SaturationFigures(300_000.0, None)
    assert not unknown.growing
    assert unknown.throughput is None


def test_one_reading_says_the_state_and_the_throughput_that_goes_with_it() -> None:
    grew = SaturationFigures(300_000.0, False, accepted_per_min=300_013.0,
                             exported_per_min=215_250.0)  # fmt: skip
    readings = {
        "full": replace(grew, saturated=True).reading,
        "grew": grew.reading,
        "took all": replace(grew, exported_per_min=296_000.0).reading,
        # Its queue never filled, but its receiver refused most of what was offered (a memory
        # limiter refuses before the queue): what it accepted is its limit.
        "refusing": replace(
            grew, accepted_per_min=6_000.0, exported_per_min=6_000.0, refused_per_min=294_000.0
        ).reading,
        "unknown": SaturationFigures(300_000.0, None, reason="no window").reading,
        "unread": replace(grew, saturated=True, accepted_per_min=None).reading,
    }
    assert {k: (r.state, r.per_min) for k, r in readings.items()} == {
        "full": (sat.SATURATED, 300_013.0),  # what it accepted: its limit
        "grew": (sat.GROWING, 215_250.0),  # what its exporter sent on: its limit
        "took all": (sat.TOOK_ALL, 300_013.0),  # what it accepted: a lower bound
        "refusing": (sat.REFUSING, 6_000.0),
        "unknown": (sat.UNKNOWN, None),
        "unread": (sat.SATURATED, None),
    }
    assert {k: r.at_limit for k, r in readings.items()} == {
        "full": True, "grew": True, "took all": False, "refusing": True, "unknown": None,
        "unread": True,
    }  # fmt: skip
    assert [r.limit for r in readings.values()] == [
        300_013.0, 215_250.0, None, 6_000.0, None, None,
    ]  # fmt: skip
    assert {r.state for r in readings.values()} == set(sat.STATES)
