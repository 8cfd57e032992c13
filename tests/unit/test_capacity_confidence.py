"""Where the knee lies, with a stated confidence (issue 33, defect 5): the interval of the knee's
posterior given the holds' trials, and its coverage on seeded noisy pipelines."""

from __future__ import annotations

import math

import pytest
from search_coverage import NOISY, SimulatedPipeline, one_search, simulate

from loadgate.capacity.search.confidence import (
    Trials,
    knee_interval,
    log_phi,
    posterior,
    round_down,
    round_up,
)
from loadgate.capacity.search.rule import (
    FOUND,
    HOLD,
    PROBE,
    SearchPlan,
    Step,
    StepOutcome,
    bracket_precision,
    plan_problems,
    run_search,
)
from loadgate.capacity.search.state import fold, judged_trials

PLAN = SearchPlan()
C, F = 100_000, 110_500  # a pass and a failure a precision width apart (±5 %)


def interval(trials: list[Trials], noise: float = 0.07, confidence: float = 0.9) -> tuple[int, int]:
    return knee_interval(trials, C, F, noise, confidence)


def half_width(span: tuple[int, int]) -> float:
    return bracket_precision(*span)


# ---- the defect: a ±5 % bracket is not a confidence ---------------------------------------------


@pytest.mark.parametrize("noise", [0.03, 0.06])
def test_the_reported_knee_holds_the_true_knee_with_the_stated_confidence(noise: float) -> None:
    """On the saturate tests' noisy pipelines, 400 seeded searches at 3 and 6 % step noise: the
    holds' bracket [C, F], which the search used to report as the knee ±5 %, held the true knee
    in 76 % and 57 % of them; the interval it now reports, in at least its stated 90 %."""
    row = simulate(PLAN, NOISY, noise, 400)
    assert row.found == 1.0
    assert row.bracket_covered < 0.8  # what ±5 % claimed
    assert row.covered >= PLAN.confidence, row


def test_a_hold_that_fell_behind_counts_once_and_the_interval_allows_for_it() -> None:
    """A hold that fell behind is not run again (two holds decide, the speed the default plan
    keeps): the interval allows for its misclassification, reaching beyond the failing rate as
    far as below the passing one."""
    pipeline = SimulatedPipeline(110_000, keep_up=1 - PLAN.precision / 2, low=1.0)
    result = run_search(PLAN, pipeline).result()
    holds = [(s.rate, s.attempt) for s in pipeline.offered if s.phase == HOLD]
    c, f, span = result.capacity_per_min, result.lowest_failing_per_min, result.interval
    assert result.status == FOUND
    assert c is not None
    assert f is not None
    assert (c, f) == (105_000, 116_000)
    assert holds == [(f, 1), (c, 1)]  # the failure first (D), fell behind, counted at once
    assert span == (93_400, 131_000, 0.9)  # at the stated 10 %: nothing measured the noise
    assert bracket_precision(93_400, 131_000) > 2 * bracket_precision(c, f)


# ---- the interval ------------------------------------------------------------------------------


def test_one_pass_and_one_failure_give_a_symmetric_interval_wider_than_the_bracket() -> None:
    low, high = interval([Trials(C, 1, 0), Trials(F, 0, 1)])
    assert (low, high) == (92_900, 119_000)
    # symmetric in logs around the bracket's middle, to the rounding
    assert math.log(C / low) == pytest.approx(math.log(high / F), abs=0.01)
    assert half_width((low, high)) == pytest.approx(0.123, abs=0.001)


def test_without_noise_the_interval_is_the_bracket() -> None:
    assert interval([Trials(C, 1, 0), Trials(F, 0, 1)], noise=0.0) == (C, F)
    assert interval([], noise=0.07) == (C, F)


def test_less_noise_a_lower_confidence_or_more_trials_narrow_it() -> None:
    once = half_width(interval([Trials(C, 1, 0), Trials(F, 0, 1)]))
    quieter = half_width(interval([Trials(C, 1, 0), Trials(F, 0, 1)], noise=0.03))
    lower = half_width(interval([Trials(C, 1, 0), Trials(F, 0, 1)], confidence=0.8))
    twice = half_width(interval([Trials(C, 2, 0), Trials(F, 0, 2)]))
    assert quieter < once
    assert lower < once
    assert twice < once
    # confirming both deciding holds (60 s more load) narrows 7 % noise's ±12.3 % to ±8.8 %
    assert (round(once, 3), round(twice, 3)) == (0.123, 0.088)


def test_it_is_never_narrower_than_the_bracket() -> None:
    # many passes well below and failures well above: the posterior is inside [C, F]
    trials = [Trials(C, 5, 0), Trials(F, 0, 5), Trials(90_000, 5, 0), Trials(121_000, 0, 5)]
    low, high = interval(trials, noise=0.01)
    assert (low, high) == (C, F)


def test_a_pass_above_the_failure_moves_the_interval_up() -> None:
    plain = interval([Trials(C, 1, 0), Trials(F, 0, 1)])
    contradicted = interval([Trials(C, 1, 0), Trials(F, 0, 1), Trials(122_000, 1, 0)])
    assert contradicted[0] > plain[0]
    assert contradicted[1] > plain[1]


def test_rates_round_outwards_to_three_significant_figures() -> None:
    assert (round_down(92_999.9), round_up(118_001)) == (92_900, 119_000)
    assert (round_down(950.7), round_up(950.2)) == (950, 951)
    assert (round_down(1_000_000), round_up(1_000_000)) == (1_000_000, 1_000_000)


def test_log_phi_is_the_normal_cdf_and_finite_in_the_far_tail() -> None:
    for x in (-5.0, -1.0, 0.0, 1.0, 3.0):
        assert math.exp(log_phi(x)) == pytest.approx(0.5 * math.erfc(-x / math.sqrt(2)))
    assert log_phi(-40.0) == pytest.approx(-800 - math.log(40) - 0.5 * math.log(2 * math.pi))
    # the two branches meet at -30 (the asymptote errs by about 1 / x²)
    assert log_phi(-30 + 1e-9) == pytest.approx(log_phi(-30 - 1e-9), abs=0.002)


def test_the_posterior_is_normalised_and_peaks_between_the_pass_and_the_failure() -> None:
    lo, hi = math.log(80_000), math.log(140_000)
    ks, weights = posterior([Trials(C, 1, 0), Trials(F, 0, 1)], 0.07, lo, hi, 400)
    assert len(ks) == len(weights) == 401
    assert sum(weights) == pytest.approx(1.0)
    peak = ks[max(range(len(ks)), key=lambda i: weights[i])]
    assert math.log(C) < peak < math.log(F)


# ---- what counts as a trial --------------------------------------------------------------------


def test_holds_count_every_attempt_probes_only_their_failures() -> None:
    def step(i: int, rate: int, phase: str, attempt: int = 1) -> Step:
        return Step(i, rate, 15 if phase == PROBE else 60, phase, attempt)

    history = [
        (step(0, 100_000, PROBE), StepOutcome(100_000, True)),  # a probe's pass: not a hold's
        (step(1, 200_000, PROBE), StepOutcome(200_000, False)),
        (step(2, 200_000, PROBE, 2), StepOutcome(200_000, False)),
        (step(3, 141_000, HOLD), StepOutcome(141_000, False)),  # a failure a retry overruled
        (step(4, 141_000, HOLD, 2), StepOutcome(141_000, True)),
        (step(5, 128_000, HOLD), StepOutcome(128_000, True)),
        (step(6, 155_000, HOLD), StepOutcome(155_000, False)),
    ]
    trials = judged_trials(fold(history))
    assert sorted(trials, key=lambda t: t.rate) == [
        Trials(128_000, 1, 0),
        Trials(141_000, 1, 1),
        Trials(155_000, 0, 1),
        Trials(200_000, 0, 2),
    ]


def test_confidence_and_step_noise_are_checked() -> None:
    assert plan_problems(SearchPlan(confidence=0.95, step_noise=0.0)) == []
    for bad in (0.5, 1.0, True, "0.9"):
        problems = dict(plan_problems(SearchPlan(confidence=bad)))  # type: ignore[arg-type]
        assert problems["confidence"].startswith("must be a number above 0.5 and at most 0.99")
    for bad in (-0.01, 0.3, None):
        problems = dict(plan_problems(SearchPlan(step_noise=bad)))  # type: ignore[arg-type]
        assert problems["step_noise"].startswith("must be a number from 0 to 0.25")


def test_a_plan_and_result_round_trip_with_the_interval() -> None:
    plan = SearchPlan(confidence=0.8, step_noise=0.03)
    assert SearchPlan.from_dict(plan.to_dict()) == plan
    _, result = one_search(PLAN, NOISY, 0.0, 1)
    assert result.interval is not None
    data = result.to_dict()
    assert {k: data[k] for k in ("knee_low_per_min", "knee_high_per_min", "confidence")} == {
        "knee_low_per_min": result.interval[0],
        "knee_high_per_min": result.interval[1],
        "confidence": 0.9,
    }
    assert type(result).from_dict(data) == result
    older = {k: v for k, v in data.items() if k not in ("knee_low_per_min", "knee_high_per_min")}
    del older["confidence"]
    assert type(result).from_dict(older).interval is None
