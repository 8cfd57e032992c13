"""The comparison rule against simulated repeats: a real 10 % drop is found, identical stacks
are not called different, and noise gives "too noisy" with a sensible number of repeats (one
metric, one look: each bound at 95 %)."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest

from loadgate.capacity.compare.rule import (
    BASELINE,
    CANDIDATE,
    CAPACITY,
    CPU_PER_1000,
    NO_REGRESSION,
    P99_AT_RATE,
    REGRESSION,
    TOO_NOISY,
    WORSE,
    MetricDecision,
    capacity_metric,
    cpu_per_1000,
    decide,
    exit_code,
    overall,
)
from loadgate.capacity.compare.run_order import schedule


def rng(seed: int) -> random.Random:
    return random.Random(seed)  # noqa: S311 (a simulation, not cryptography)


def repeats(r: random.Random, n: int, mean: float, cv: float) -> list[float]:
    """n measurements of a log-normal quantity with that coefficient of variation."""
    return [mean * math.exp(r.gauss(0, cv)) for _ in range(n)]


def trials(n: int, cv: float, baseline: float, candidate: float, seeds: int = 200) -> Counter[str]:
    out: Counter[str] = Counter()
    for seed in range(seeds):
        r = rng(seed)
        a, b = repeats(r, n, baseline, cv), repeats(r, n, candidate, cv)
        out[decide(CAPACITY, a, b).decision] += 1
    return out


# ---- the schedule ---------------------------------------------------------------------------


def test_schedule_interleaves_the_sides() -> None:
    runs = schedule(3)
    assert [(r.side, r.repeat) for r in runs] == [
        (BASELINE, 1),
        (CANDIDATE, 1),
        (BASELINE, 2),
        (CANDIDATE, 2),
        (BASELINE, 3),
        (CANDIDATE, 3),
    ]
    assert [r.position for r in runs] == list(range(6))
    abba = [r.side[0] for r in schedule(4, "ABBA")]
    assert "".join(abba) == "bccbbccb"  # baseline/candidate initials: A B B A A B B A


def test_a_random_order_is_drawn_per_pair_from_the_seed_the_first_pair_too() -> None:
    def order(seed: str, pairs: int = 40) -> str:
        return "".join(r.side[0] for r in schedule(pairs, "random", seed=seed))

    drawn = order("cmp-1")
    assert drawn == order("cmp-1")  # the same id, the same schedule
    assert drawn != order("cmp-2")
    pairs = [drawn[i : i + 2] for i in range(0, len(drawn), 2)]
    assert set(pairs) == {"bc", "cb"}  # each pair one run a side, in either order
    swapped = pairs.count("cb")
    assert 10 <= swapped <= 30  # about half of 40 (a fair bit; fails ~1 seed in 1,000)
    firsts = {order(f"cmp-{i}", 1) for i in range(20)}
    assert firsts == {"bc", "cb"}  # the first pair's order is drawn too (it was always bc)
    runs = schedule(6, "random", seed="cmp-1")
    assert [r.position for r in runs] == list(range(12))
    assert [r.repeat for r in runs] == [i for i in range(1, 7) for _ in (0, 1)]
    assert sorted((r.repeat, r.side) for r in runs) == [
        (i, s) for i in range(1, 7) for s in sorted((BASELINE, CANDIDATE))
    ]


@pytest.mark.parametrize(("n", "order"), [(0, "ABAB"), (101, "ABAB"), (3, "AABB")])
def test_schedule_refuses_bad_input(n: int, order: str) -> None:
    with pytest.raises(
        ValueError, match=r"repeats: must be|order: must be one of random, ABAB, ABBA"
    ):
        schedule(n, order)


# ---- a real drop is found ---------------------------------------------------------------------


@pytest.mark.parametrize(("n", "cv"), [(3, 0.02), (3, 0.03), (4, 0.03), (5, 0.025), (5, 0.03)])
def test_a_real_10_percent_capacity_drop_is_found(n: int, cv: float) -> None:
    """Twice the 5 % threshold, with the comparison's own spread (2-4 degrees of freedom):
    hardly ever waved through, a regression most of the time."""
    out = trials(n, cv, 200_000, 180_000)
    assert out[NO_REGRESSION] <= 0.03 * 200, out
    assert out[REGRESSION] >= 0.8 * 200, out


def test_a_drop_reads_as_the_candidate_being_worse() -> None:
    d = decide(CAPACITY, [200_000, 204_000, 198_000], [181_000, 178_000, 183_000])
    assert d.decision == REGRESSION
    assert exit_code([d]) == 1
    assert d.change == pytest.approx(0.0996, abs=0.001)  # 10 % less capacity
    assert d.lower is not None
    assert d.lower >= 0.05
    assert d.baseline_mean == pytest.approx(200_653, rel=1e-3)  # geometric mean
    assert "by the 5 % threshold or more" in d.reason


def test_higher_p99_and_cpu_are_worse_lower_is_better() -> None:
    slower = decide(P99_AT_RATE, [4.0, 4.1, 3.9], [5.0, 5.1, 4.9])
    assert slower.decision == REGRESSION
    faster = decide(P99_AT_RATE, [5.0, 5.1, 4.9], [4.0, 4.1, 3.9])
    assert faster.decision == NO_REGRESSION
    assert faster.change is not None
    assert faster.change < 0
    assert decide(CPU_PER_1000, [0.30, 0.31, 0.29], [0.36, 0.37, 0.35]).decision == REGRESSION
    # capacity: higher is better, so a rise is no regression
    assert decide(CAPACITY, [180_000] * 3, [200_000, 201_000, 199_000]).decision == NO_REGRESSION


# ---- identical stacks are not called different -----------------------------------------------


@pytest.mark.parametrize(("n", "cv"), [(3, 0.02), (3, 0.03), (5, 0.03), (3, 0.10)])
def test_identical_stacks_are_rarely_called_a_regression(n: int, cv: float) -> None:
    out = trials(n, cv, 200_000, 200_000)
    assert out[REGRESSION] <= 0.05 * 200, out


def test_the_false_alarm_rate_is_the_nominal_5_percent_at_worst() -> None:
    """At noise far beyond the margin (20 %), the margin no longer helps: the rate of false
    regressions is the one-sided 95 % bound's 5 %, no more."""
    out = trials(5, 0.20, 200_000, 200_000, seeds=2000)
    assert out[REGRESSION] <= 0.06 * 2000, out


def test_identical_stacks_at_low_noise_pass() -> None:
    out = trials(5, 0.02, 200_000, 200_000)
    assert out[NO_REGRESSION] >= 0.9 * 200, out


def test_a_change_below_the_margin_is_bounded_below_it_when_measured_well() -> None:
    """2 % worse at 1 % noise: shown worse, by less than the 5 % margin (never a regression,
    never plain "no regression": the lower bound is above 0)."""
    out = trials(5, 0.01, 200_000, 196_000)
    assert out[REGRESSION] == 0, out
    assert out[WORSE] >= 0.8 * 200, out
    same = trials(5, 0.01, 200_000, 200_000)
    assert same[NO_REGRESSION] >= 0.9 * 200, same


# ---- noise: too noisy, and how many repeats would decide ----------------------------------------


def test_very_noisy_repeats_are_too_noisy_with_repeats_needed() -> None:
    d = decide(CAPACITY, [200_000, 150_000, 260_000], [170_000, 240_000, 205_000])
    assert d.decision == TOO_NOISY
    assert exit_code([d]) == 3
    assert d.repeats_needed is not None
    assert d.repeats_needed > 3
    assert f"about {d.repeats_needed} pairs would narrow the bounds" in d.reason


@pytest.mark.parametrize("cv", [0.05, 0.10, 0.20])
def test_repeats_needed_is_sensible(cv: float) -> None:
    """From 3 pairs of noisy identical stacks: the median estimate is near the analytic
    n = (z * cv * sqrt 2 / threshold)^2 (the bounds narrowed to the threshold), and running
    that many pairs is seldom too noisy."""
    needed: list[int] = []
    for seed in range(41):
        r = rng(seed)
        d = decide(CAPACITY, repeats(r, 3, 200_000, cv), repeats(r, 3, 200_000, cv))
        if d.decision == TOO_NOISY and d.repeats_needed is not None:
            needed.append(d.repeats_needed)
    assert len(needed) >= 20
    median = sorted(needed)[len(needed) // 2]
    analytic = (1.645 * cv * math.sqrt(2) / CAPACITY.log_threshold) ** 2
    assert analytic / 2 <= median <= analytic * 2, (median, analytic)
    out = trials(median, cv, 200_000, 200_000, seeds=100)
    assert out[TOO_NOISY] <= 15, out


def test_fewer_than_two_values_a_side_is_too_noisy() -> None:
    d = decide(CAPACITY, [200_000, None, None], [180_000, 181_000, 179_000])
    assert d.decision == TOO_NOISY
    assert d.repeats_needed == 2
    assert "1 baseline and 3 candidate values measured" in d.reason


def test_unmeasured_repeats_are_left_out() -> None:
    d = decide(CAPACITY, [200_000, None, 201_000, 199_000], [180_000, 181_000, None, 179_000])
    assert d.decision == REGRESSION
    assert d.baseline == (200_000, None, 201_000, 199_000)


def test_values_must_be_positive_and_confidence_one_sided() -> None:
    with pytest.raises(ValueError, match=r"capacity_per_min candidate\[1\]: must be a positive"):
        decide(CAPACITY, [1.0, 2.0], [1.0, 0.0])
    with pytest.raises(ValueError, match=r"confidence: must be between 0\.5 and 1"):
        decide(CAPACITY, [1.0, 2.0], [1.0, 2.0], confidence=95)


# ---- the resolution of searched capacities ---------------------------------------------------


def test_agreeing_searches_are_not_more_exact_than_their_precision() -> None:
    """Three searches at ±5 % that return the same capacity say nothing finer than ±5 %:
    equal values with 3 pairs cannot rule out the 5 % threshold, a 10 % step is a
    regression."""
    metric = capacity_metric(0.05)
    same = decide(metric, [183_000] * 3, [183_000] * 3)
    assert same.decision == NO_REGRESSION
    assert same.upper is not None
    assert same.upper > 0.05  # the threshold not ruled out: not settled
    assert not same.settled
    assert same.repeats_needed is not None
    assert same.repeats_needed > 3
    assert decide(metric, [183_000] * 3, [165_000] * 3).decision == REGRESSION
    # without the resolution, identical values are known within the 1 % floor only
    exact = decide(CAPACITY, [183_000] * 3, [183_000] * 3)
    assert exact.settled
    assert exact.upper is not None
    assert 0.01 < exact.upper < 0.05


# ---- overall ---------------------------------------------------------------------------------


def _decision(kind: str) -> MetricDecision:
    if kind == REGRESSION:
        return decide(CAPACITY, [200.0, 201.0, 199.0], [150.0, 151.0, 149.0])
    if kind == NO_REGRESSION:
        return decide(CAPACITY, [200.0, 201.0, 199.0], [200.0, 201.0, 199.0])
    return decide(CAPACITY, [200.0, 100.0, 300.0], [300.0, 100.0, 200.0])


@pytest.mark.parametrize(
    ("kinds", "verdict", "code"),
    [
        ((NO_REGRESSION, NO_REGRESSION), NO_REGRESSION, 0),
        ((NO_REGRESSION, REGRESSION, TOO_NOISY), REGRESSION, 1),
        ((NO_REGRESSION, TOO_NOISY), TOO_NOISY, 3),
        ((), TOO_NOISY, 3),
    ],
)
def test_overall_verdict_and_exit_code(kinds: tuple[str, ...], verdict: str, code: int) -> None:
    decisions = [_decision(k) for k in kinds]
    assert [d.decision for d in decisions] == list(kinds)
    assert overall(decisions) == verdict
    assert exit_code(decisions) == code


def test_cpu_per_1000_records() -> None:
    assert cpu_per_1000(0.5, 60, 200_000) == pytest.approx(0.15)
    assert cpu_per_1000(None, 60, 200_000) is None
    assert cpu_per_1000(0.5, 60, 0) is None
