"""The machinery of the search's simulation benchmark (benchmarks/search_simulation.py), run on a
few searches: the true knee, the scoring, the rows and their goals."""

from __future__ import annotations

from dataclasses import replace

import pytest
from search_coverage import (
    GOAL_COVERAGE,
    HEADER,
    NOISY,
    QUIET,
    STEP_OVERHEAD_S,
    Row,
    bracket_covers,
    cells,
    given_noise,
    one_search,
    percentile,
    reported_covers,
    seen_excess,
    simulate,
    table,
    true_knee,
)

from loadgate.capacity.search.rule import (
    OUT_OF_BUDGET,
    SearchPlan,
    SearchResult,
    plan_from_settings,
)
from loadgate.cli.search_juju import JUJU_PLAN

PLAN = SearchPlan()
JUJU = plan_from_settings(JUJU_PLAN)


def test_the_true_knee_is_where_a_hold_passes_half_the_time() -> None:
    # a hold that must keep up: where the knee is 1 - p/2 of the rate
    assert true_knee(PLAN, 97_500, 30) == pytest.approx(100_000)
    # a hold judged by its gates: the knee and the excess the queue absorbs in the hold
    gates = SearchPlan(keep_up_s=0)
    assert true_knee(gates, 100_000, 60) == pytest.approx(100_000 + seen_excess(100_000, 60))
    assert true_knee(gates, 100_000, 300) < true_knee(gates, 100_000, 60)


def test_a_search_is_seeded() -> None:
    assert one_search(PLAN, NOISY, 0.03, 7) == one_search(PLAN, NOISY, 0.03, 7)
    assert one_search(PLAN, NOISY, 0.03, 7) != one_search(PLAN, NOISY, 0.03, 8)


def test_coverage_is_scored_on_found_searches_only() -> None:
    knee, result = one_search(PLAN, NOISY, 0.0, 3)
    assert reported_covers(result, knee)
    assert bracket_covers(result, knee)
    assert result.interval is not None
    assert not reported_covers(result, result.interval[1] * 1.01)
    assert not bracket_covers(result, (result.lowest_failing_per_min or 0) * 1.01)
    lost = SearchResult(OUT_OF_BUDGET, 100_000, True, 110_000, 0.05, 5, 300, None, "")
    assert not reported_covers(lost, 105_000)
    assert not bracket_covers(lost, 105_000)


def test_without_noise_every_search_finds_and_holds_the_knee() -> None:
    row = simulate(PLAN, NOISY, 0.0, 40)
    assert (row.covered, row.bracket_covered, row.found) == (1.0, 1.0, 1.0)
    assert row.searches == 40
    assert 0.05 < row.half_width < 0.2  # the stated 10 % step noise: about ±15 %


def test_on_the_quiet_machine_a_search_is_two_saturation_steps_and_two_holds() -> None:
    row = simulate(PLAN, QUIET, 0.0, 40)
    assert (row.load_median, row.load_p95) == (120, 120)
    assert row.wall_median == 120 + 4 * STEP_OVERHEAD_S


def test_percentile_is_the_nearest_rank() -> None:
    assert percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.95) == 10
    assert percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.5) == 5
    assert percentile([5], 0.95) == 5


def test_each_row_says_whether_it_meets_its_goals() -> None:
    good = Row("default", "noisy", 0.03, 100, 0.95, 0.76, 1.0, 120, 180, 208, 0.118)
    bad = Row("default", "noisy", 0.06, 100, GOAL_COVERAGE - 0.001, 0.57, 0.98, 150, 240, 260, 0.1)
    assert cells(good) == (
        "default", "noisy", "3%", "95.0% PASS", "76.0%", "100.0%", "120/180 PASS", "208", "11.8%",
    )  # fmt: skip
    assert cells(bad)[3] == "89.9% MISS"
    assert cells(bad)[6] == "150/240 MISS"
    assert cells(replace(bad, load_goal=None))[6] == "150/240"  # no goal: no verdict
    lines = table([good, bad])
    assert len(lines) == 3
    assert lines[0].split("  ")[0] == HEADER[0]
    assert "PASS" in lines[1]
    assert "MISS" in lines[2]


def test_the_juju_plans_gate_judged_holds_are_scored_too() -> None:
    row = simulate(JUJU, NOISY, 0.0, 20, name="juju", load_goal=None, overhead_s=None)
    assert (row.plan, row.covered, row.bracket_covered, row.found) == ("juju", 1.0, 1.0, 1.0)
    assert row.load_median > 600  # steps of minutes
    assert cells(row)[6:8] == (f"{row.load_median:.0f}/{row.load_p95:.0f}", "-")


def test_the_interval_holds_the_true_knee_at_up_to_10_percent_step_noise() -> None:
    """Issue 38: with 7 % stated and never measured, the interval held the true knee in 83.6 %
    of 500 seeded searches at 10 % step noise. Stated 10 % when nothing measured the noise, and
    given the noise as measured, it holds it in at least 90 % (the benchmark's other rows:
    docs/manual/search.md)."""
    stated = simulate(PLAN, NOISY, 0.10, 500)
    assert stated.found == 1.0
    assert stated.covered >= GOAL_COVERAGE, stated
    measured = simulate(given_noise(PLAN, 0.05), NOISY, 0.05, 500)
    assert measured.covered >= GOAL_COVERAGE, measured
    assert measured.half_width < stated.half_width  # measured noise, a narrower interval
