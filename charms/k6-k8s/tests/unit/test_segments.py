"""Multi-unit arithmetic: who runs which segment, and how the units' figures combine."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest

import runs
from loadgate_contract.summary import ClientFigures, Histogram
from peers import RunRequest, UnitReport, figures_from_data, figures_to_data
from segments import combine_reports, combined_status, participants, segment_of


def figures(
    requests: int, failed: int, counts: dict[int, int], duration_s: float = 60.0
) -> ClientFigures:
    accepted = (requests - failed) * 5
    return ClientFigures(
        requests=requests,
        failed=failed,
        error_rate=failed / requests,
        p99_ms=Histogram(counts=counts).quantile_ms(0.99),
        records_sent=requests * 5,
        records_accepted=accepted,
        records_per_minute=accepted * 60 / duration_s,
        duration_s=duration_s,
        thresholds={"errors{rate<=0.01}": failed / requests <= 0.01},
        histogram=Histogram(counts=counts),
    )


def test_participants_sort_by_unit_number() -> None:
    assert participants(["k6/10", "k6/2", "k6/0", "k6/2"]) == ["k6/0", "k6/2", "k6/10"]


@pytest.mark.parametrize("count", [1, 2, 3, 4, 7])
def test_segments_cover_the_load_once(count: int) -> None:
    units = participants([f"k6/{i}" for i in range(count)])
    spans: list[tuple[Fraction, Fraction]] = []
    for unit in units:
        seg = segment_of(unit, units)
        start, _, end = seg.segment.partition(":")
        spans.append((Fraction(start), Fraction(end)))
        sequence = [Fraction(f) for f in seg.sequence.split(",")]
        assert sequence == [Fraction(i, count) for i in range(count + 1)]
    spans.sort()
    assert spans[0][0] == 0
    assert spans[-1][1] == 1
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert end == start  # no gap, no overlap
    assert all(end - start == Fraction(1, count) for start, end in spans)


def test_three_units() -> None:
    units = ["k6/0", "k6/1", "k6/2"]
    assert [segment_of(u, units).segment for u in units] == ["0:1/3", "1/3:2/3", "2/3:1"]


def test_a_unit_outside_the_run_has_no_segment() -> None:
    with pytest.raises(ValueError, match="k6/5 takes no part"):
        segment_of("k6/5", ["k6/0", "k6/1"])


def test_counts_add_and_p99_comes_from_the_merged_histogram() -> None:
    fast = figures(900, 0, {40: 900})
    slow = figures(100, 2, {40: 50, 90: 50})
    reports = {
        "k6/0": UnitReport("r", runs.PASSED, fast),
        "k6/1": UnitReport("r", runs.FAILED, slow),
    }
    combined = combine_reports("r", ["k6/0", "k6/1"], reports)
    assert combined.figures is not None
    assert combined.figures.requests == 1000
    assert combined.figures.failed == 2
    assert combined.figures.error_rate == pytest.approx(0.002)
    assert combined.figures.records_accepted == 900 * 5 + 98 * 5
    # rank 990 of 1000 falls in bucket 90 (the slow unit's tail): not an average of p99s.
    assert combined.figures.p99_ms == Histogram().upper_ms(90)
    assert combined.figures.p99_ms != pytest.approx(((fast.p99_ms or 0) + (slow.p99_ms or 0)) / 2)
    assert combined.units == {"k6/0": runs.PASSED, "k6/1": runs.FAILED}
    assert combined.status == runs.FAILED
    # A threshold holds for the run only if it held on every unit (the slow one had 2% errors).
    assert combined.figures.thresholds["errors{rate<=0.01}"] is False


def test_a_silent_unit_keeps_the_run_running() -> None:
    reports = {"k6/0": UnitReport("r", runs.PASSED, figures(10, 0, {40: 10}))}
    combined = combine_reports("r", ["k6/0", "k6/1"], reports)
    assert combined.status == runs.RUNNING
    assert combined.units["k6/1"] == runs.PENDING
    assert combined.missing == ["k6/1"]


def test_past_the_deadline_a_silent_unit_is_missing_and_named() -> None:
    reports = {
        "k6/0": UnitReport("r", runs.PASSED, figures(10, 0, {40: 10})),
        "k6/1": UnitReport("r", runs.RUNNING),
        "k6/2": UnitReport("older", runs.PASSED, figures(99, 0, {40: 99})),
    }
    combined = combine_reports("r", ["k6/0", "k6/1", "k6/2"], reports, overdue=True)
    assert combined.status == runs.ERROR
    assert combined.units == {"k6/0": runs.PASSED, "k6/1": runs.MISSING, "k6/2": runs.MISSING}
    assert combined.covers == ["k6/0"]
    assert combined.missing == ["k6/1", "k6/2"]
    assert combined.figures is not None
    assert combined.figures.requests == 10


def test_a_report_of_another_run_does_not_count() -> None:
    reports = {
        "k6/0": UnitReport("r", runs.PASSED, figures(10, 0, {40: 10})),
        "k6/1": UnitReport("older", runs.PASSED, figures(99, 0, {40: 99})),
    }
    combined = combine_reports("r", ["k6/0", "k6/1"], reports)
    assert combined.figures is not None
    assert combined.figures.requests == 10


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        ([runs.PASSED, runs.PASSED], runs.PASSED),
        ([runs.PASSED, runs.FAILED], runs.FAILED),
        ([runs.FAILED, runs.ERROR], runs.ERROR),
        ([runs.ERROR, runs.STOPPED], runs.STOPPED),
        ([runs.STOPPED, runs.RUNNING], runs.RUNNING),
        ([runs.PASSED, runs.PENDING], runs.RUNNING),
        ([runs.PASSED, runs.MISSING], runs.ERROR),  # past the deadline, a unit never reported
        ([runs.FAILED, runs.MISSING], runs.ERROR),
        ([runs.STOPPED, runs.MISSING], runs.STOPPED),
    ],
)
def test_combined_status(statuses: list[str], expected: str) -> None:
    assert combined_status(statuses) == expected


def test_figures_survive_the_databag() -> None:
    original = figures(321, 3, {12: 300, 77: 21})
    again = figures_from_data(figures_to_data(original))
    assert again == original


def test_reports_and_requests_survive_the_databag() -> None:
    report = UnitReport("r", runs.STOPPED, figures(5, 0, {1: 5}), "why")
    assert UnitReport.from_databag(report.to_databag()) == report
    request = RunRequest("r", {"rate": 10, "run-id": "r"}, ["k6/0", "k6/1"], 12.5, stopped=True)
    assert RunRequest.from_databag(request.to_databag()) == request
    assert RunRequest.from_databag({}) is None
