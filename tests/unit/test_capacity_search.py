"""The capacity search against simulated pipelines with a known knee, noise and flakes."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from support.fakes.pipeline import SimulatedPipeline, log_uniform, rng

from loadgate.capacity.search.confidence import (
    NOISE_HOLDS,
    NOISE_MEASURED,
    NOISE_STATED,
    Trials,
    fitted_step_noise,
    knee_interval,
    step_noise_of,
)
from loadgate.capacity.search.record import SearchRecord
from loadgate.capacity.search.rule import (
    AT_LEAST_MAX,
    BELOW_MIN,
    BISECT,
    FOUND,
    HOLD,
    IN_PROGRESS,
    OUT_OF_BUDGET,
    OUT_OF_STEPS,
    PROBE,
    PlanError,
    Search,
    SearchPlan,
    SearchResult,
    Step,
    StepOutcome,
    advance,
    bisections_needed,
    bracket_precision,
    noiseless_worst_case,
    plan_from_settings,
    plan_problems,
    round_rate,
    run_search,
    step_below,
    validated,
)
from loadgate.capacity.search.spread import measured_step_noise
from loadgate.capacity.search.state import fold, judged_trials

PLAN = SearchPlan(method=BISECT)  # the bisect method; the saturate one: test_capacity_saturate


def pipeline_at(knee: float, **over: Any) -> SimulatedPipeline:
    """A pipeline whose steps pass up to its knee, however short (no queue absorbs the excess):
    a probe passes up to `knee`, a hold up to `hold_knee` (default the knee); `noise` moves the
    knee per step (log-normal, relative SD); `flake` fails any step with that probability;
    `flaky_once` fails the first attempt at each of those rates; `once`, a first attempt that
    passed with that probability."""
    return SimulatedPipeline.without_queue(knee, wall_s=20.0, **over)


def search(pipeline: Callable[[Step], StepOutcome], plan: SearchPlan = PLAN) -> SearchResult:
    return run_search(plan, pipeline).result()


# ---- helpers --------------------------------------------------------------------------------


def test_round_rate_keeps_three_significant_figures() -> None:
    assert round_rate(141_421.36) == 141_000
    assert round_rate(1_189_207) == 1_190_000
    assert round_rate(999.6) == 1000
    assert round_rate(0.2) == 1


def test_bisections_and_step_below_respect_the_precision() -> None:
    assert bisections_needed(2.0, 0.05) == 3  # 2^(1/8) = 1.09 <= 1.105 < 2^(1/4)
    assert bisections_needed(1.25, 0.05) == 2
    assert bisections_needed(1.05, 0.05) == 0
    for rate in (10_000, 108_000, 200_000, 999_000, 37):
        below = step_below(rate, 0.05)
        assert below < rate
        assert bracket_precision(below, rate) <= 0.05
        # one unit of the third figure lower would be outside the precision
        unit = 10 ** max(0, math.floor(math.log10(below)) - 2)
        assert bracket_precision(below - unit, rate) > 0.05


# ---- the knee is found --------------------------------------------------------------------


@pytest.mark.parametrize("knee", [round(10_500 * 1.29**i) for i in range(18)])
def test_noiseless_knee_is_bracketed_within_the_precision(knee: int) -> None:
    result = search(pipeline_at(knee))
    assert result.status == FOUND
    assert result.confirmed
    assert result.capacity_per_min is not None
    assert result.lowest_failing_per_min is not None
    assert result.capacity_per_min <= knee < result.lowest_failing_per_min
    assert result.precision is not None
    assert result.precision <= PLAN.precision
    assert result.steps <= noiseless_worst_case(PLAN)[0]
    assert result.load_s <= noiseless_worst_case(PLAN)[1] <= PLAN.budget_s


def test_default_plan_fits_the_five_minute_target_with_room_for_a_failed_hold() -> None:
    steps, load = noiseless_worst_case(PLAN)
    assert (steps, load) == (9, 180)  # the arithmetic in search.py's docstring
    assert load + 2 * PLAN.hold_s <= PLAN.budget_s == 300


def test_the_steps_of_a_typical_search_near_this_machines_knee() -> None:
    pipeline = pipeline_at(knee=190_000)
    result = search(pipeline)
    assert [(s.rate, s.phase, s.attempt) for s in pipeline.offered] == [
        (100_000, PROBE, 1),  # pass
        (200_000, PROBE, 1),  # fail: bracket [100k, 200k]
        (141_000, PROBE, 1),  # bisections
        (168_000, PROBE, 1),
        (183_000, PROBE, 1),  # [183k, 200k] is within ±5 %
        (200_000, PROBE, 2),  # the failure offered again before it counts
        (183_000, HOLD, 1),  # the confirmation hold
    ]
    assert result.capacity_per_min == 183_000
    assert result.lowest_failing_per_min == 200_000
    assert result.load_s == 6 * 15 + 60
    assert result.wall_s == 7 * 20.0
    assert "183,000 records/min" in result.summary
    assert "±4.4 %" in result.summary


def test_noisy_knees_are_found_within_precision_and_budget() -> None:
    """400 pipelines, knees across the range, 1 % noise on the knee per step."""
    outcomes: Counter[str] = Counter()
    for seed in range(400):
        knee = log_uniform(rng(seed), 30_000, 600_000)
        result = search(pipeline_at(knee, noise=0.01, seed=seed))
        outcomes[result.status] += 1
        assert result.load_s <= PLAN.budget_s
        assert result.steps <= PLAN.max_steps
        if result.status == FOUND:
            low, high = result.capacity_per_min, result.lowest_failing_per_min
            assert low is not None
            assert high is not None
            assert bracket_precision(low, high) <= PLAN.precision
            assert low * 0.97 <= knee <= high * 1.03  # within three noise SDs of the bracket
    assert outcomes[FOUND] >= 390, outcomes  # the rest ran out of budget, and say so


def test_a_hold_that_fails_where_probes_passed_descends_with_holds() -> None:
    """Short probes are optimistic (the queue absorbs the excess for a while): probes pass
    up to 200,000 but 60 s holds only up to 185,000."""
    pipeline = pipeline_at(knee=200_000, hold_knee=185_000)
    result = search(pipeline)
    holds = [(s.rate, s.attempt) for s in pipeline.offered if s.phase == HOLD]
    assert holds == [(200_000, 1), (181_000, 1), (200_000, 2)]
    assert result.status == FOUND
    assert result.confirmed
    assert result.capacity_per_min == 181_000
    assert result.lowest_failing_per_min == 200_000
    assert result.load_s <= PLAN.budget_s


def test_holds_up_to_8_percent_below_the_probes_stay_within_budget() -> None:
    for seed in range(200):
        knee = log_uniform(rng(seed), 30_000, 600_000)
        result = search(pipeline_at(knee, hold_knee=knee / 1.08, seed=seed))
        assert result.status == FOUND, (knee, result)
        assert result.capacity_per_min is not None
        assert result.capacity_per_min <= knee / 1.08 < (result.lowest_failing_per_min or 0)


# ---- noise does not make a knee ----------------------------------------------------------------


def test_a_pipeline_that_always_passes_is_at_least_max() -> None:
    result = search(pipeline_at(knee=math.inf))
    assert result.status == AT_LEAST_MAX
    assert result.capacity_per_min == PLAN.max_rate
    assert result.lowest_failing_per_min is None
    assert result.precision is None
    assert result.confirmed
    assert result.summary.startswith("at least 1,000,000 records/min")


def test_a_pipeline_that_fails_everywhere_is_below_min() -> None:
    pipeline = pipeline_at(knee=0)
    result = search(pipeline)
    assert result.status == BELOW_MIN
    assert result.capacity_per_min is None
    assert result.lowest_failing_per_min == PLAN.min_rate
    assert result.summary.startswith("below 10,000 records/min")
    # min_rate was offered twice: the second failure is what counts
    assert [(s.rate, s.attempt) for s in pipeline.offered][-2:] == [(10_000, 1), (10_000, 2)]


@pytest.mark.parametrize("knee", [45_000, 190_000, 700_000])
def test_single_failures_below_the_knee_are_absorbed_by_the_retry(knee: float) -> None:
    """10 % of the passing steps fail once: no search reports a knee they made."""
    outcomes: Counter[str] = Counter()
    for seed in range(100):
        flaky = pipeline_at(knee, once=0.1, seed=seed)
        result = search(flaky)
        outcomes[result.status] += 1
        assert result.load_s <= PLAN.budget_s
        if result.status == FOUND:
            assert result.capacity_per_min is not None
            assert result.lowest_failing_per_min is not None
            assert result.capacity_per_min <= knee < result.lowest_failing_per_min
            assert result.confirmed
    # each absorbed failure costs the bisection below it and the retry: a few searches run out
    # of budget, and say so
    assert outcomes[FOUND] >= 85, outcomes


def test_single_failures_without_a_knee_still_give_at_least_max() -> None:
    outcomes: Counter[str] = Counter()
    for seed in range(100):
        outcomes[search(pipeline_at(math.inf, once=0.1, seed=seed)).status] += 1
    assert FOUND not in outcomes
    assert outcomes[AT_LEAST_MAX] >= 90, outcomes


def test_a_single_failure_is_offered_again_and_reopens_the_bracket() -> None:
    pipeline = pipeline_at(400_000, flaky_once={200_000})
    result = search(pipeline)
    offered = [(s.rate, s.attempt) for s in pipeline.offered]
    assert (200_000, 2) in offered
    assert (400_000, 1) in offered  # probing went on above the absorbed failure
    assert result.status == FOUND
    assert result.capacity_per_min == search(pipeline_at(400_000)).capacity_per_min


def test_a_single_failure_of_the_hold_is_absorbed_too() -> None:
    clean = search(pipeline_at(190_000))
    assert clean.capacity_per_min is not None
    flaky = pipeline_at(190_000, flaky_once={clean.capacity_per_min})  # its hold fails once
    result = search(flaky)
    assert result.status == FOUND
    assert result.capacity_per_min == clean.capacity_per_min
    assert result.load_s <= PLAN.budget_s


def test_independent_flakes_rarely_make_a_knee_where_there_is_none() -> None:
    """Each step fails with probability 5 % regardless of rate: a knee needs two failures at
    one rate, about (rates tried) x 0.25 %."""
    outcomes: Counter[str] = Counter()
    for seed in range(1000):
        outcomes[search(pipeline_at(math.inf, flake=0.05, seed=seed)).status] += 1
    assert outcomes[AT_LEAST_MAX] >= 950, outcomes
    assert outcomes[FOUND] <= 30, outcomes


def test_flakes_near_a_knee_do_not_move_it() -> None:
    off = 0
    for seed in range(300):
        knee = log_uniform(rng(seed), 30_000, 600_000)
        result = search(pipeline_at(knee, flake=0.05, seed=seed))
        if result.status == FOUND and (result.capacity_per_min or 0) < knee * 0.9:
            off += 1  # reported a knee more than 10 % below the real one
    assert off <= 6


# ---- limits ---------------------------------------------------------------------------------


def test_the_budget_stops_a_search_and_says_so() -> None:
    plan = SearchPlan(method=BISECT, budget_s=180)
    pipeline = pipeline_at(knee=200_000, hold_knee=120_000)
    result = search(pipeline, plan)
    assert result.status == OUT_OF_BUDGET
    assert result.load_s <= 180
    assert sum(s.duration_s for s in pipeline.offered) == result.load_s
    assert not result.confirmed
    assert "load budget" in result.summary
    assert "unconfirmed" in result.summary


def test_max_steps_stops_a_search_and_says_so() -> None:
    plan = SearchPlan(method=BISECT, max_steps=9, budget_s=3600)
    result = search(pipeline_at(knee=200_000, hold_knee=120_000), plan)
    assert result.status == OUT_OF_STEPS
    assert result.steps == 9
    assert "max_steps 9" in result.summary


def test_wall_time_is_unknown_when_a_step_did_not_report_it() -> None:
    def execute(step: Step) -> StepOutcome:
        return StepOutcome(step.rate, step.rate <= 150_000, wall_s=None if step.index else 9.0)

    assert search(execute).wall_s is None


# ---- the state machine's contract --------------------------------------------------------------


def test_advance_is_a_pure_function_of_the_history() -> None:
    pipeline = pipeline_at(knee=250_000)
    finished = run_search(PLAN, pipeline)
    history = finished.history
    for i in range(len(history)):
        nxt = advance(PLAN, history[:i])
        assert nxt == history[i][0]
    assert advance(PLAN, history) == finished.result()
    resumed = Search(PLAN, history[:3])
    assert resumed.next_step() == history[3][0]


def test_record_refuses_an_outcome_of_another_step() -> None:
    s = Search(PLAN)
    step = s.next_step()
    assert step is not None
    with pytest.raises(ValueError, match="expected an outcome of"):
        s.record(Step(0, 123, 15, PROBE), StepOutcome(123, True))
    with pytest.raises(ValueError, match="outcome rate 5 is not the step's rate"):
        s.record(step, StepOutcome(5, True))
    assert s.result().status == IN_PROGRESS
    assert "next: probe at 100,000" in s.result().summary


def test_record_refuses_after_the_end() -> None:
    s = run_search(PLAN, pipeline_at(knee=0))
    assert s.done
    with pytest.raises(ValueError, match="the search is over"):
        s.record(Step(10, 10_000, 15, PROBE), StepOutcome(10_000, False))


# ---- settings ---------------------------------------------------------------------------------


def test_plan_problems_name_each_setting() -> None:
    plan = SearchPlan(method=BISECT, start_rate=5, precision=0.5, growth=1.05, probe_s=0, hold_s=10)
    names = [name for name, _ in plan_problems(plan)]
    assert names == ["start_rate", "precision", "probe_s"]
    with pytest.raises(PlanError, match="start_rate: must be between min_rate"):
        validated(plan)
    assert plan_problems(SearchPlan(method=BISECT, hold_s=10)) == [
        ("hold_s", "must be at least probe_s (15); got 10")
    ]
    assert "must be above 1.105" in plan_problems(SearchPlan(method=BISECT, growth=1.1))[0][1]


def test_budget_and_steps_are_checked_against_the_longest_noiseless_search() -> None:
    assert plan_problems(SearchPlan()) == []
    assert plan_problems(PLAN) == []
    problems = dict(plan_problems(SearchPlan(method=BISECT, budget_s=179, max_steps=8)))
    assert problems == {
        "max_steps": "must be at least 9, the steps of this plan's longest search without "
        "noise; got 8",
        "budget_s": "must be at least 180 s, the load of this plan's longest search without "
        "noise; got 179",
    }
    # longer probes need a larger budget
    assert noiseless_worst_case(SearchPlan(method=BISECT, probe_s=20)) == (9, 220)


def test_plan_from_settings_refuses_unknown_and_bad_values() -> None:
    assert plan_from_settings({"precision": 0.03}).precision == 0.03
    with pytest.raises(PlanError, match="rate: unknown setting; allowed: budget_s"):
        plan_from_settings({"rate": 5})
    with pytest.raises(PlanError, match="budget_s: must be an integer"):
        plan_from_settings({"budget_s": "300"})


def test_step_duration_in_k6_syntax() -> None:
    assert Step(0, 100_000, 15, PROBE).duration == "15s"


# ---- issue 38: losses, the knee's evidence, the step noise measured ---------------------------


def losing(
    pipeline: Callable[[Step], StepOutcome], rate: int, lost: int
) -> Callable[[Step], StepOutcome]:
    """`pipeline`, whose first hold at `rate` lost `lost` acknowledged records (its queue did
    not fill: a failure nothing else explains)."""

    def execute(step: Step) -> StepOutcome:
        outcome = pipeline(step)
        if step.phase == HOLD and step.rate == rate and step.attempt == 1:
            return replace(
                outcome, passed=False, verdict="FAIL: lost_records", saturated=False,
                lost_records=lost,
            )  # fmt: skip
        return outcome

    return execute


def test_a_hold_that_lost_records_bounds_the_capacity_from_above_and_is_not_retried() -> None:
    """The hold below the saturation throughput loses records: a failure that once counted only
    as a contradiction of the reading, retried and overruled by the retry's pass (capacity
    200,000), is final: the capacity lies below it."""
    sim = SimulatedPipeline(210_000, keep_up=1 - 0.05 / 2)
    finished = run_search(SearchPlan(), losing(sim, 200_000, 1_200))
    result = finished.result()
    holds = [(s.rate, s.attempt) for s in sim.offered if s.phase == HOLD]
    assert holds == [(221_000, 1), (200_000, 1), (181_000, 1)]  # no retry of the loss
    assert (result.status, result.confirmed) == (FOUND, True)
    assert (result.capacity_per_min, result.lowest_failing_per_min) == (181_000, 200_000)
    assert "lost acknowledged records (1,200 at 200,000/min)" in result.summary


def test_a_loss_is_a_failure_whatever_passed_at_its_rate() -> None:
    history = [
        (Step(0, 150_000, 60, HOLD), StepOutcome(150_000, True)),
        (Step(1, 150_000, 60, HOLD, 2), StepOutcome(150_000, False, lost_records=40)),
        (Step(2, 160_000, 60, HOLD), StepOutcome(160_000, True)),
    ]
    state = fold(history)
    assert state.high == (150_000, HOLD, True)
    assert state.capacity is None  # nothing passed below the loss
    assert state.lost == {150_000: 40}


def test_a_failure_a_retry_overruled_stays_in_the_knees_evidence() -> None:
    """The deciding hold fails once and passes when offered again: it counts as a pass, and
    its failure still says the knee may lie below it, so the interval reaches lower than the
    same trials' without the failure (dropping it biased the knee upward)."""
    capacity = search(pipeline_at(190_000)).capacity_per_min
    assert capacity is not None
    flaky_pipeline = pipeline_at(190_000, flaky_once={capacity})  # its hold fails once
    finished = run_search(PLAN, flaky_pipeline)
    flaky = finished.result()
    assert (flaky.status, flaky.capacity_per_min) == (FOUND, capacity)
    assert (capacity, HOLD, 2) in [(s.rate, s.phase, s.attempt) for s in flaky_pipeline.offered]
    trials = judged_trials(fold(finished.history))
    assert Trials(capacity, 1, 1) in trials
    high = flaky.lowest_failing_per_min
    assert high is not None
    counted = knee_interval(trials, capacity, high, 0.10, 0.9)
    dropped = [replace(t, failures=0) if t.rate == capacity else t for t in trials]
    assert flaky.interval == (*counted, 0.9)
    assert counted[0] < knee_interval(dropped, capacity, high, 0.10, 0.9)[0]


def test_the_step_noise_is_the_measured_one_and_stated_only_when_nothing_measured_it() -> None:
    sim = SimulatedPipeline(110_000, keep_up=1 - 0.05 / 2)
    stated = run_search(SearchPlan(), sim).result()
    assert (stated.step_noise, stated.step_noise_source) == (0.10, NOISE_STATED)
    assert "(step noise up to 10 %)" in stated.summary
    sim = SimulatedPipeline(110_000, keep_up=1 - 0.05 / 2)
    measured = run_search(SearchPlan(measured_step_noise=0.03), sim).result()
    assert (measured.step_noise, measured.step_noise_source) == (0.03, NOISE_MEASURED)
    assert "(step noise 3 %, measured)" in measured.summary
    assert stated.interval is not None
    assert measured.interval is not None
    # 3 % measured (with its tenth more) is narrower than the stated 10 %, both around [C, F]
    assert stated.interval[0] < measured.interval[0] <= 105_000
    assert 116_000 <= measured.interval[1] < stated.interval[1]
    data = measured.to_dict()
    assert (data["step_noise"], data["step_noise_source"]) == (0.03, NOISE_MEASURED)
    assert SearchResult.from_dict(data) == measured
    older = {k: v for k, v in data.items() if not k.startswith("step_noise")}
    assert SearchResult.from_dict(older).step_noise_source is None


def test_holds_that_contradict_each_other_measure_the_step_noise() -> None:
    ordered = [Trials(100_000, 1, 0), Trials(110_000, 0, 1)]
    assert fitted_step_noise(ordered) is None  # as likely without noise: nothing measured
    assert step_noise_of(ordered, None, 0.10) == (0.10, NOISE_STATED)
    # passes above failures: the knee moved, about 7 % here
    moved = [
        Trials(95_000, 1, 0),
        Trials(100_000, 1, 1),
        Trials(105_000, 1, 0),
        Trials(110_000, 0, 1),
    ]
    fitted = fitted_step_noise(moved)
    assert fitted is not None
    assert 0.04 < fitted < 0.1
    assert step_noise_of(moved, None, 0.10) == (fitted, NOISE_HOLDS)
    assert step_noise_of(moved, 0.02, 0.10) == (0.02, NOISE_MEASURED)  # measured elsewhere wins
    # more of the same outcomes, the same fit; outcomes further apart, a larger one
    assert (
        fitted_step_noise([replace(t, passes=2 * t.passes, failures=2 * t.failures) for t in moved])
        == fitted
    )
    wider = [
        Trials(80_000, 1, 0),
        Trials(100_000, 1, 1),
        Trials(120_000, 1, 0),
        Trials(140_000, 0, 1),
    ]
    assert (fitted_step_noise(wider) or 0) > fitted


def test_repeated_searches_measure_the_step_noise_their_holds_show() -> None:
    records = []
    for seed in range(6):
        sim = SimulatedPipeline(150_000, keep_up=1 - 0.05 / 2, noise=0.05, seed=seed)
        records.append(SearchRecord.build(f"r{seed}", {}, run_search(SearchPlan(), sim)))
    measured = measured_step_noise(records)
    assert measured is not None
    assert 0.02 < measured < 0.15
    assert measured_step_noise(records[:1]) is None  # one search's two holds measure nothing
