"""The steady window and the counts over it (measure/saturation.py), on samples made up here:
a queue that fills and stays full, one that never fills, and windows too short to trust."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from loadgate.measure import saturation as sat
from loadgate.measure.queries import Series

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
