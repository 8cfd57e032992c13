"""The saturate method of the capacity search against simulated pipelines whose sending queue
gives way: a known knee, a saturation step that may read it low, noise and flakes."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace

import pytest
from support.fakes.pipeline import QUEUE, SimulatedPipeline, log_uniform, refused_share, rng

from loadgate.capacity.search.rule import (
    AT_LEAST_MAX,
    BELOW_MIN,
    BISECT,
    FOUND,
    HOLD,
    OUT_OF_BUDGET,
    PROBE,
    SATURATE,
    SATURATION,
    SearchPlan,
    SearchResult,
    Step,
    StepOutcome,
    advance,
    bracket_precision,
    noiseless_worst_case,
    plan_problems,
    run_search,
    step_above,
    step_below,
)
from loadgate.capacity.search.saturate import derived_end, hold_seconds
from loadgate.capacity.search.state import Saturation
from loadgate.measure.saturation import SATURATE_PARAMS

# Most of this file: holds judged by the gates alone (`keep_up_s` 0, the Juju plan's), whose
# length the queue's fill sets; the default plan's holds that must keep up are at the end.
PLAN = SearchPlan(keep_up_s=0)
KEEP_UP = SearchPlan()


def search(pipeline: SimulatedPipeline, plan: SearchPlan = PLAN) -> SearchResult:
    return run_search(plan, pipeline).result()


def seen_excess(knee: float, seconds: float, queue: float = QUEUE) -> float:
    """The largest excess over the knee (records/min) a hold of `seconds` still passes."""
    lo, hi = 0.0, knee
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if refused_share(knee + mid, knee, seconds, queue) <= 0.01 else (lo, mid)
    return lo


def noisy(
    seed: int, lo: float, hi: float, keep_up: float | None = None
) -> tuple[float, SimulatedPipeline]:
    """A knee drawn log-uniformly from [lo, hi] and its pipeline with 2 % noise per step, 3 % on
    the saturation reading, which reads up to 15 % low and more under heavy overload."""
    r = rng(seed)
    knee = log_uniform(r, lo, hi)
    pipeline = SimulatedPipeline(
        knee,
        low=r.uniform(0.85, 1.0),
        overload_cost=r.uniform(0, 0.2),
        sat_noise=0.03,
        noise=0.02,
        keep_up=keep_up,
        seed=seed,
    )
    return knee, pipeline


def within(
    result: SearchResult, knee: float, pipeline: SimulatedPipeline, plan: SearchPlan = PLAN
) -> bool:
    """A knee found within the precision around the pipeline's: the bracket within the
    precision, failing above the knee and passing no further above it than the precision's
    excess, or what its holds can see where they are at their longest (`hold_s`)."""
    c, f = result.capacity_per_min, result.lowest_failing_per_min
    hold = max((s.duration_s for s in pipeline.offered if s.phase == HOLD), default=0)
    excess = max(plan.precision * knee, seen_excess(knee, hold, pipeline.queue or QUEUE))
    return (
        result.status == FOUND
        and c is not None
        and f is not None
        and bracket_precision(c, f) <= plan.precision
        and c <= knee + excess
        and f > knee
    )


# ---- the hold's length ----------------------------------------------------------------------


def test_the_default_plan_searches_by_saturation_at_run_saturates_rate() -> None:
    assert replace(PLAN, keep_up_s=30) == KEEP_UP
    assert PLAN.method == SATURATE
    assert PLAN.saturate_rate == SATURATE_PARAMS["rate"]
    assert plan_problems(PLAN) == []
    assert noiseless_worst_case(PLAN) == (5, 210)  # three saturation steps up to 1,000,000


def test_a_hold_is_long_enough_to_fill_the_queue_at_the_precisions_excess() -> None:
    def at(throughput: float, queue: float | None, plan: SearchPlan = PLAN) -> int:
        return hold_seconds(plan, Saturation(300_000, 1, True, throughput, queue))

    # 60 x 5,000 / (5 % x 210,000) = 28.6 s to fill; 1 - 1.25 x 1 % x 1.05 / 0.05 = 0.7375
    assert at(210_000, QUEUE) == 39
    assert at(500_000, QUEUE) == PLAN.hold_min_s == 20  # the floor
    assert at(60_000, QUEUE) == PLAN.hold_s == 60  # the ceiling
    assert at(210_000, None) == PLAN.hold_s  # a queue of unknown size
    assert at(210_000, QUEUE, replace(PLAN, max_error_rate=0.05)) == PLAN.hold_s  # a loose gate
    assert at(210_000, QUEUE, replace(PLAN, hold_s=10)) == 10  # the ceiling wins over the floor
    # the hold decides where the queue fills: it fails at the precision's excess, where a
    # 15 s probe passes
    knee = 210_000
    assert refused_share(knee * 1.05, knee, 39, QUEUE) > 0.01
    assert refused_share(knee * 1.05, knee, 15, QUEUE) == 0


def test_the_holds_straddle_the_saturation_throughput() -> None:
    assert derived_end(PLAN, Saturation(300_000, 1, True, 210_000, QUEUE)) == 221_000  # / 0.95
    # a hold at its longest (60 s) lets a small pipeline's queue absorb more
    assert derived_end(PLAN, Saturation(300_000, 1, True, 10_500, QUEUE)) == 15_700
    assert step_below(221_000, 0.05) == 200_000
    assert step_above(200_000, 0.05) == 221_000
    pipeline = SimulatedPipeline(210_000)
    result = search(pipeline)
    assert [(s.phase, s.rate, s.duration_s, s.attempt) for s in pipeline.offered] == [
        (SATURATION, 300_000, 30, 1),
        (HOLD, 221_000, 39, 1),  # D fails, above the saturation throughput: no retry
        (HOLD, 200_000, 39, 1),  # one precision width below passes
    ]
    assert result.status == FOUND
    assert result.capacity_per_min == 200_000
    assert result.lowest_failing_per_min == 221_000
    assert result.load_s == 30 + 2 * 39 <= 120
    assert result.saturation_per_min == 210_000
    assert result.summary == (
        "200,000 records/min, the knee between 178,000 and 249,000 records/min with 90 % "
        "confidence (step noise up to 10 %): passes at 200,000 (held 39 s), fails at 221,000 "
        "(±5.0 %); "
        "saturation throughput 210,000/min"
    )
    assert result.interval == (178_000, 249_000, 0.9)


# ---- the knee is found ------------------------------------------------------------------------


@pytest.mark.parametrize("knee", [round(10_500 * 1.29**i) for i in range(18)])
def test_noiseless_knees_are_found_within_the_precision(knee: int) -> None:
    pipeline = SimulatedPipeline(knee)
    result = search(pipeline)
    assert within(result, knee, pipeline), result
    assert result.confirmed
    assert result.load_s <= noiseless_worst_case(PLAN)[1]


def test_near_this_machines_knee_a_search_costs_at_most_two_minutes_of_load() -> None:
    """The default collector on a quiet 2-core machine takes about 210,000 records/min."""
    for seed in range(200):
        knee = log_uniform(rng(seed), 185_000, 290_000)
        pipeline = SimulatedPipeline(knee, seed=seed)
        result = search(pipeline)
        assert within(result, knee, pipeline), (knee, result)
        assert result.load_s <= 120, (knee, result)
        assert result.steps == 3


def test_a_saturation_step_that_reads_low_is_corrected_by_holds_going_up() -> None:
    """Overload costs a small machine's pipeline CPU: the saturation step reads the knee 5-15 %
    low. The holds go up, one precision width at a time, to the knee."""
    for seed in range(200):
        r = rng(seed)
        knee = log_uniform(r, 150_000, 290_000)
        pipeline = SimulatedPipeline(knee, low=r.uniform(0.85, 0.95), seed=seed)
        result = search(pipeline)
        assert within(result, knee, pipeline), (knee, result)
        assert result.load_s <= PLAN.budget_s


def test_a_heavily_overloaded_saturation_step_is_measured_again_at_a_milder_overload() -> None:
    """A busy 2-core machine, modelled on its measurements: a 30 s step reads 18 % above what
    holds sustain when barely overloaded and lower the heavier the overload (65,850 offered
    300,000 where 60 s holds passed at 87,500; the milder steps a median 13 % above the
    capacity found). Offered 300,000, a pipeline that holds 85,000 reads 64,000; offered 1.5
    times that, 96,000: the holds start from their geometric mean, 78,000, not from either."""
    pipeline = SimulatedPipeline(85_000, low=1.18, overload_cost=0.36)
    result = search(pipeline)
    assert [(s.phase, s.rate, s.duration_s) for s in pipeline.offered] == [
        (SATURATION, 300_000, 30),  # reads 64,000: overloaded 3.5 times
        (SATURATION, 95_500, 30),  # reads 95,000
        (HOLD, 84_000, 60),  # D = 78,000 / 0.95 + the 60 s hold's blind excess: passes
        (HOLD, 92_800, 60),  # fails
    ]
    assert within(result, 85_000, pipeline), result
    assert result.saturation_per_min == pytest.approx(78_000, rel=0.01)

    # measured once more only: read heavy again (the machine got busier), the holds go on
    busy = SimulatedPipeline(85_000, overload_cost=0.19)

    def busier(step: Step) -> StepOutcome:
        outcome = busy(step)
        if step.phase == SATURATION and step.rate < 300_000:
            return replace(outcome, throughput_per_min=40_000.0)
        return outcome

    run_search(PLAN, busier)
    assert [s.phase for s in busy.offered][:3] == [SATURATION, SATURATION, HOLD]
    # a quiet machine's overload (300,000 for 210,000) is mild: one saturation step
    quiet = SimulatedPipeline(210_000, overload_cost=0.19)
    assert within(search(quiet), 210_000, quiet)
    assert [s.phase for s in quiet.offered].count(SATURATION) == 1


def test_on_the_quiet_vm_the_two_readings_bracket_the_knee_and_two_holds_decide() -> None:
    """The quiet-inside VM's two searches: offered 300,000 a pipeline read 137,000-142,000,
    offered 1.5 times that 159,000-173,000, and 60 s holds passed at 138,000-151,000 (failing
    from 152,000-166,000). Either reading alone put the first holds 5-10 % off, three holds;
    their geometric mean puts D just above the knee and the hold below it passes."""
    for knee in (140_000, 150_000):
        pipeline = SimulatedPipeline(knee, low=1.28, overload_cost=0.39)
        result = search(pipeline)
        phases = [s.phase for s in pipeline.offered]
        assert phases == [SATURATION, SATURATION, HOLD, HOLD], pipeline.offered
        assert within(result, knee, pipeline), result
        assert result.saturation_per_min == pytest.approx(knee * 1.03, rel=0.01)


def test_a_milder_step_that_takes_everything_overrules_the_heavy_reading() -> None:
    """Read at 300,000 as 100,000, the pipeline then takes 150,000 whole: the holds start at
    150,000 and go up a precision width at a time; the failure counts at once, its own queue
    full (no reading says the same)."""
    pipeline = SimulatedPipeline(180_000, overload_cost=1.15)
    result = search(pipeline)
    assert [(s.phase, s.rate, s.attempt) for s in pipeline.offered] == [
        (SATURATION, 300_000, 1),
        (SATURATION, 150_000, 1),  # takes everything
        (HOLD, 150_000, 1),
        (HOLD, 165_000, 1),
        (HOLD, 182_000, 1),
        (HOLD, 201_000, 1),
    ]
    assert within(result, 180_000, pipeline), result
    assert result.saturation_per_min is None


def test_a_saturation_step_that_reads_far_too_low_walks_up_a_precision_width_a_hold() -> None:
    """Read 25 % low at any overload (a busy machine), a small pipeline's 60 s holds walk up
    from the reading: the default budget just holds them."""
    knee = 80_000.0
    pipeline = SimulatedPipeline(knee, low=0.75)
    result = search(pipeline)
    assert within(result, knee, pipeline), result
    rates = [s.rate for s in pipeline.offered if s.phase == HOLD]
    assert rates == [65_800, 72_700, 80_300, 88_700]
    assert result.load_s == 2 * 30 + 4 * 60 == PLAN.budget_s


def test_noisy_knees_are_found_within_the_precision_and_the_budget() -> None:
    """2 % noise on the knee per step, 3 % on the saturation reading, which reads up to 15 %
    low and more under heavy overload: as a shared 2-core machine gives."""
    outcomes: Counter[str] = Counter()
    for seed in range(400):
        knee, pipeline = noisy(seed, 100_000, 280_000)
        result = search(pipeline)
        outcomes[result.status] += 1
        assert result.load_s <= PLAN.budget_s
        if result.status == FOUND:
            c, f = result.capacity_per_min, result.lowest_failing_per_min
            assert c is not None
            assert f is not None
            assert bracket_precision(c, f) <= PLAN.precision
            # within three noise SDs of what the holds can see
            hold = max(s.duration_s for s in pipeline.offered if s.phase == HOLD)
            assert c <= (knee + max(0.05 * knee, seen_excess(knee, hold))) * 1.06
            assert f >= knee * 0.94
    assert outcomes[FOUND] >= 390, outcomes


def test_a_knee_far_below_the_saturation_throughput_is_found_by_bisecting_holds() -> None:
    """Another gate gives way at half what the pipeline takes: D fails as expected, the holds
    one and two precision widths below it fail too, then the rate halves and holds bisect.
    Each failure below the saturation throughput is offered twice before it counts, so this
    costs more than the default budget, which says where it stands."""
    plan = replace(PLAN, budget_s=400)
    pipeline = SimulatedPipeline(210_000, gate_at=105_000)  # another gate (p99) gives way
    result = search(pipeline, plan)
    assert within(result, 105_000, pipeline, plan), result
    rates = [s.rate for s in pipeline.offered if s.phase == HOLD]
    assert rates[:4] == [221_000, 200_000, 181_000, 90_500]
    assert any(s.attempt == 2 for s in pipeline.offered)  # the lowest failure, retried
    short = search(SimulatedPipeline(210_000, gate_at=105_000))
    assert short.status == OUT_OF_BUDGET
    assert short.capacity_per_min == 90_500
    assert "load budget" in short.summary


def test_holds_whose_queue_filled_step_down_a_width_at_a_time() -> None:
    """A reading 20 % high: D and the hold below it fail with their queue full, which explains
    them (the knee is near, and the failure is no glitch: it counts at once), so the holds go
    on down a precision width, not halving."""
    pipeline = SimulatedPipeline(150_000, low=1.2)
    result = search(pipeline)
    assert [(s.rate, s.attempt) for s in pipeline.offered if s.phase == HOLD] == [
        (189_000, 1),  # D: above S, final
        (171_000, 1),  # below S, but its queue filled: final too
        (155_000, 1),  # passes
    ]
    assert within(result, 150_000, pipeline), result
    # the bisect method offers every failure again, a full queue or not
    bisected = SimulatedPipeline(150_000)
    search(bisected, SearchPlan(method=BISECT))
    failed = [s.rate for s in bisected.offered if s.attempt == 2]
    assert failed


# ---- short runs never decide ------------------------------------------------------------------


def test_no_short_step_decides() -> None:
    """Every judged step of the saturate method is a hold as long as the queue needs (or its
    longest), never a probe: over many pipelines no capacity passes further above the knee
    than its holds can see."""
    for seed in range(200):
        r = rng(seed)
        knee = log_uniform(r, 30_000, 600_000)
        pipeline = SimulatedPipeline(knee, low=r.uniform(0.9, 1.0), seed=seed)
        result = search(pipeline, replace(PLAN, budget_s=600))
        assert PROBE not in {s.phase for s in pipeline.offered}
        assert within(result, knee, pipeline), (knee, result)


def test_the_bisect_method_is_fooled_by_short_probes_where_holds_are_not() -> None:
    """A queue of 20,000 records: a 15 s probe absorbs 80,000/min of excess, so the bisect
    method's probes pass far above the knee and its hold has to walk down; the saturate
    method holds where the saturation step says."""
    knee = 200_000.0
    bisect = SimulatedPipeline(knee, queue=20_000)
    bisected = search(bisect, SearchPlan(method=BISECT))
    probes = [s.rate for s in bisect.offered if s.phase == PROBE]
    assert max(r for r in probes if refused_share(r, knee, 15, 20_000) <= 0.01) > knee * 1.2
    saturate = SimulatedPipeline(knee, queue=20_000)
    saturated = search(saturate)
    assert within(saturated, knee, saturate), saturated
    assert saturated.load_s < bisected.load_s


# ---- noise does not make a knee ---------------------------------------------------------------


def test_a_pipeline_that_never_saturates_is_at_least_max() -> None:
    pipeline = SimulatedPipeline(math.inf)
    result = search(pipeline)
    assert result.status == AT_LEAST_MAX
    assert result.capacity_per_min == PLAN.max_rate
    assert result.confirmed
    assert [(s.phase, s.rate) for s in pipeline.offered] == [
        (SATURATION, 300_000),  # took everything: offered twice as much
        (SATURATION, 600_000),
        (SATURATION, 1_000_000),
        (HOLD, 1_000_000),
    ]
    assert result.summary.startswith("at least 1,000,000 records/min")


def test_with_max_rate_below_the_saturation_rate_a_pipeline_that_takes_it_is_at_least_that() -> (
    None
):
    plan = replace(PLAN, min_rate=10_000, max_rate=14_000, hold_s=10)
    pipeline = SimulatedPipeline(200_000)
    result = search(pipeline, plan)
    assert [(s.phase, s.rate, s.duration_s) for s in pipeline.offered] == [
        (SATURATION, 14_000, 30),
        (HOLD, 14_000, 10),
    ]
    assert result.status == AT_LEAST_MAX
    assert result.capacity_per_min == 14_000


def test_flakes_without_a_knee_still_give_at_least_max() -> None:
    outcomes: Counter[str] = Counter()
    for seed in range(300):
        outcomes[search(SimulatedPipeline(math.inf, flake=0.05, seed=seed)).status] += 1
    assert FOUND not in outcomes
    assert outcomes[AT_LEAST_MAX] >= 295, outcomes


def test_single_failures_below_the_knee_are_absorbed() -> None:
    """10 % of the passing holds fail once: a failure below the saturation throughput is
    offered again before it counts, so none makes a knee."""
    outcomes: Counter[str] = Counter()
    for seed in range(300):
        knee = log_uniform(rng(seed), 100_000, 280_000)
        pipeline = SimulatedPipeline(knee, once=0.1, seed=seed)
        result = search(pipeline)
        outcomes[result.status] += 1
        assert result.load_s <= PLAN.budget_s
        if result.status == FOUND:
            assert within(result, knee, pipeline), (knee, result)
    assert outcomes[FOUND] >= 295, outcomes


def test_a_failure_above_the_saturation_throughput_counts_at_once_one_below_is_retried() -> None:
    first = SimulatedPipeline(210_000)
    search(first)
    assert all(s.attempt == 1 for s in first.offered)  # 221,000 > 210,000 failed: final

    flaky = SimulatedPipeline(210_000, flaky_once={200_000})  # the second hold fails once
    result = search(flaky)
    assert [(s.rate, s.attempt) for s in flaky.offered if s.phase == HOLD] == [
        (221_000, 1),  # fails above 210,000: final
        (200_000, 1),  # fails below 210,000: contradicts the saturation step
        (181_000, 1),  # passes: the bracket is within the precision
        (200_000, 2),  # the retry passes: the knee is above it after all
    ]
    assert result.capacity_per_min == 200_000
    assert result.lowest_failing_per_min == 221_000
    assert result.load_s == 30 + 4 * 39


def test_a_pipeline_that_takes_nothing_is_below_min() -> None:
    pipeline = SimulatedPipeline(1_000)
    result = search(pipeline)
    assert result.status == BELOW_MIN
    assert result.capacity_per_min is None
    assert result.lowest_failing_per_min == PLAN.min_rate
    # min_rate above the saturation throughput: one failure is enough
    assert [(s.phase, s.rate) for s in pipeline.offered] == [
        (SATURATION, 300_000),
        (HOLD, 10_000),
    ]
    assert result.summary.startswith(
        "below 10,000 records/min: the lowest rate offered failed above the saturation"
    )


def test_min_rate_failing_with_its_queue_full_is_below_min() -> None:
    def execute(step: Step) -> StepOutcome:
        if step.phase == SATURATION:
            return StepOutcome(step.rate, False, saturated=True, throughput_per_min=12_000.0)
        return StepOutcome(step.rate, False, verdict="FAIL", saturated=True)

    plan = replace(PLAN, max_rate=14_000, budget_s=600)
    search = run_search(plan, execute)
    result = search.result()
    assert [(s.rate, s.attempt) for s, _ in search.history if s.phase == HOLD] == [
        (12_600, 1),  # D = 12,000 / 0.95: above S
        (11_400, 1),  # below S: its full queue makes each failure count at once
        (10_400, 1),
        (10_000, 1),
    ]
    assert result.status == BELOW_MIN
    assert result.summary.startswith(
        "below 10,000 records/min: the lowest rate offered failed with its queue full"
    )


# ---- figures that could not be measured -------------------------------------------------------


def test_an_unmeasured_saturation_step_is_run_again() -> None:
    pipeline = SimulatedPipeline(210_000, unmeasured=1)
    result = search(pipeline)
    assert [(s.phase, s.attempt) for s in pipeline.offered[:2]] == [
        (SATURATION, 1),
        (SATURATION, 2),
    ]
    assert within(result, 210_000, pipeline)


def test_twice_unmeasured_the_search_goes_on_by_bisection() -> None:
    """With its probes, and the budget the bisect method needs."""
    pipeline = SimulatedPipeline(210_000, unmeasured=2)
    result = search(pipeline, replace(PLAN, budget_s=420))
    phases = [s.phase for s in pipeline.offered]
    assert phases[:3] == [SATURATION, SATURATION, PROBE]
    assert result.status == FOUND
    assert result.capacity_per_min is not None
    assert result.capacity_per_min <= 210_000 * 1.05
    assert result.load_s <= 420


def test_the_budget_stops_a_search_and_says_so() -> None:
    plan = replace(PLAN, budget_s=210)
    pipeline = SimulatedPipeline(210_000, flake=1.0)  # every hold fails
    result = search(pipeline, plan)
    assert result.status in (OUT_OF_BUDGET, BELOW_MIN)
    assert result.load_s <= 210
    assert sum(s.duration_s for s in pipeline.offered) == result.load_s


def test_advance_is_a_pure_function_of_the_history() -> None:
    finished = run_search(PLAN, SimulatedPipeline(180_000, once=0.5, seed=3))
    history = finished.history
    for i in range(len(history)):
        assert advance(PLAN, history[:i]) == history[i][0]
    assert advance(PLAN, history) == finished.result()


def test_a_plan_written_before_the_saturate_method_reads_as_bisect() -> None:
    old = SearchPlan(method=BISECT).to_dict()
    for key in ("method", "saturate_rate", "saturate_s", "hold_min_s", "max_error_rate"):
        del old[key]
    assert SearchPlan.from_dict(old) == SearchPlan(method=BISECT)
    assert SearchPlan.from_dict(PLAN.to_dict()) == PLAN


# ---- holds that must keep up (the default plan) ----------------------------------------------


def keeping_up(knee: float, **over: object) -> SimulatedPipeline:
    return SimulatedPipeline(knee, keep_up=1 - KEEP_UP.precision / 2, **over)  # type: ignore[arg-type]


def test_holds_that_must_keep_up_are_short_and_start_one_gate_width_above_the_reading() -> None:
    reading = Saturation(300_000, 1, True, 80_000, QUEUE)
    # gates alone: 60 x 5,000 / (5 % x 80,000) = 75 s to fill, more than hold_s: 60 s holds,
    # and D moved up to S + e_T, where a 60 s hold sees the excess
    assert hold_seconds(PLAN, reading) == 60
    assert derived_end(PLAN, reading) == 86_100
    # keeping up: falling behind by 2.5 % shows in any steady window; D is S / 0.95
    assert hold_seconds(KEEP_UP, reading) == KEEP_UP.keep_up_s == 30
    assert derived_end(KEEP_UP, reading) == 84_200


@pytest.mark.parametrize("knee", [round(10_500 * 1.29**i) for i in range(18)])
def test_noiseless_knees_are_found_within_the_precision_by_holds_that_keep_up(knee: int) -> None:
    pipeline = keeping_up(knee)
    result = search(pipeline, KEEP_UP)
    assert kept_up_within_the_precision(result, knee), result
    assert result.load_s <= noiseless_worst_case(KEEP_UP)[1]


def kept_up_within_the_precision(result: SearchResult, knee: float) -> bool:
    """Found, the bracket within the precision, the capacity kept up with and the lowest
    failing rate not: a hold at r keeps up while the knee is at least (1 - p/2) r."""
    c, f = result.capacity_per_min, result.lowest_failing_per_min
    share = 1 - KEEP_UP.precision / 2
    return (
        result.status == FOUND
        and c is not None
        and f is not None
        and bracket_precision(c, f) <= KEEP_UP.precision
        and share * c <= knee < share * f
    )


def test_near_this_machines_split_knee_a_search_that_keeps_up_costs_two_minutes_of_load() -> None:
    """The default collector on its own CPU of a quiet 2-core machine sustains 105,000-115,000
    records/min; a 300,000 step reads it 5-15 % low (heavy overload), a milder step 0-10 %
    high: two saturation steps and two holds of 30 s."""
    loads: Counter[int] = Counter()
    for seed in range(200):
        r = rng(seed)
        knee = log_uniform(r, 100_000, 120_000)
        pipeline = keeping_up(knee, low=r.uniform(0.95, 1.05), overload_cost=0.1, seed=seed)
        result = search(pipeline, KEEP_UP)
        assert kept_up_within_the_precision(result, knee), (knee, result)
        loads[result.load_s] += 1
    assert max(loads) <= 150, loads
    assert loads[120] >= 150, loads


def test_noisy_knees_are_found_by_holds_that_keep_up_within_the_budget() -> None:
    outcomes: Counter[str] = Counter()
    for seed in range(400):
        knee, pipeline = noisy(seed, 60_000, 280_000, keep_up=1 - KEEP_UP.precision / 2)
        result = search(pipeline, KEEP_UP)
        outcomes[result.status] += 1
        assert result.load_s <= KEEP_UP.budget_s
        if result.status == FOUND:
            c, f = result.capacity_per_min, result.lowest_failing_per_min
            assert c is not None
            assert f is not None
            assert bracket_precision(c, f) <= KEEP_UP.precision
            assert c <= knee / (1 - KEEP_UP.precision / 2) * 1.06  # three noise SDs
            assert f >= knee * 0.94
    assert outcomes[FOUND] >= 390, outcomes


def test_keep_up_s_is_0_or_a_hold_long_enough_for_a_steady_window() -> None:
    assert plan_problems(SearchPlan(keep_up_s=0)) == []
    for bad in (5, -1, 4000, 2.5, True):
        problems = dict(plan_problems(SearchPlan(keep_up_s=bad)))  # type: ignore[arg-type]
        assert "keep_up_s" in problems
        assert (
            "0 (holds judged by the gates alone) or an integer between 15 and 3600"
            in (problems["keep_up_s"])
        )


def test_a_plan_written_before_holds_had_to_keep_up_judged_them_by_the_gates() -> None:
    old = KEEP_UP.to_dict()
    del old["keep_up_s"]
    assert SearchPlan.from_dict(old) == PLAN
    assert SearchPlan.from_dict(KEEP_UP.to_dict()) == KEEP_UP
