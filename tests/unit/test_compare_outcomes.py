"""What a comparison says is what its bounds show, and the verdict CI acts on (issues 33, 38).

- Paired bounds L..U of the candidate's worsening and the threshold m, per metric, in order:
  regression (a broken candidate, or L > 0 and the estimate d >= m), too noisy (too few values,
  or a half-width over 2m), worse (L > 0, d < m), no regression.
- Overall, over the gating metrics: regression, then too noisy, then worse, then no regression:
  a metric that could not be decided is never hidden by another's "worse" (issue 38, item 1).
- A family-wise error: an A/A comparison says regression at most 5 % of the time for the
  comparison as a whole.
- Distinct exit codes: 0 no regression (and worse unless --fail-on worse), 1 regression, 3 too
  noisy; 2 stays bad input and a broken baseline.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import replace

import pytest

from loadgate.capacity.compare import rule
from loadgate.capacity.compare.record import CompareRecord, RepeatRecord, Side
from loadgate.capacity.compare.rule import BASELINE, CANDIDATE, Metric
from loadgate.capacity.compare.sequential import (
    BUDGET_SPENT,
    DECIDED,
    MAX_PAIRS_RUN,
    Plan,
    decide_sequential,
    stop_reason,
)
from loadgate.capacity.compare.values import DEFAULT_METRICS, parse_metrics

# Thresholds of 10 %, spreads of the comparison's own (no calibration), for the outcome tests.
SAT = replace(rule.SATURATION, margin=0.10, paired_spread=None, paired_df=0, level_spread=None,
              level_df=0)  # fmt: skip
P99 = replace(rule.PRESSURE_P99, margin=0.10, paired_spread=None, paired_df=0, gates=True,
              level_spread=None, level_df=0)  # fmt: skip
CPU = replace(rule.PRESSURE_CPU, margin=0.10, paired_spread=None, paired_df=0, level_spread=None,
              level_df=0)  # fmt: skip
WORSE = "worse"  # the outcome's word in compare.json (rule.WORSE)


def paired(
    shift: float, spread: float, n: int, better: str = rule.LOWER
) -> tuple[list[float], list[float]]:
    """n pairs whose worsening (in logs) has mean `shift` and sample standard deviation
    `spread`, on baselines that themselves move from pair to pair."""
    raw = [i - (n - 1) / 2 for i in range(n)]
    scale = spread / math.sqrt(sum(x * x for x in raw) / (n - 1)) if n > 1 else 0.0
    a = [100.0 * math.exp(0.05 * ((i * 7) % 3)) for i in range(n)]
    sign = 1.0 if better == rule.LOWER else -1.0
    b = [v * math.exp(sign * (shift + x * scale)) for v, x in zip(a, raw, strict=True)]
    return a, b


def worse_by(metric: Metric, d: float, spread: float, n: int) -> rule.MetricDecision:
    """One look at 95 %: the candidate worse by d in logs, pairs spreading by `spread`."""
    a, b = paired(d, spread, n, metric.better)
    return rule.decide(metric, a, b, 0.95)


REGRESSED = (0.20, 0.03, 4)  # 22 % worse, bounds well above 0
WORSENED = (0.05, 0.02, 4)  # 5 % worse, shown, below the 10 % threshold
CLEAR = (0.0, 0.02, 4)
NOISY = (0.0, 0.25, 4)


# ---- the four outcomes ------------------------------------------------------------------------


def test_a_worsening_shown_and_past_the_threshold_is_a_regression() -> None:
    d = worse_by(SAT, *REGRESSED)
    assert d.lower is not None
    assert d.change is not None
    assert d.lower > 0
    assert d.change >= SAT.margin
    assert d.decision == rule.REGRESSION, d.reason
    assert "worse beyond the noise (the lower bound is above 0), by the 10 % threshold" in d.reason


def test_a_worsening_shown_but_estimated_below_the_threshold_is_worse() -> None:
    d = worse_by(SAT, *WORSENED)
    assert d.lower is not None
    assert d.change is not None
    assert d.lower > 0
    assert d.change < SAT.margin
    assert d.decision == WORSE, d.reason
    assert "estimated below the 10 % threshold" in d.reason


def test_an_estimate_past_the_threshold_the_noise_hides_is_not_a_regression() -> None:
    """Past the threshold but the lower bound at or below 0: not shown worse."""
    d = worse_by(SAT, 0.12, 0.15, 4)
    assert d.lower is not None
    assert d.lower <= 0
    assert d.decision != rule.REGRESSION, d.reason


def test_no_regression_and_too_noisy_say_what_each_bound_shows() -> None:
    clear = worse_by(SAT, *CLEAR)
    assert clear.decision == rule.NO_REGRESSION
    assert "no worsening shown, and none of the 10 % threshold (the upper bound is below it)" in (
        clear.reason
    )
    noisy = worse_by(SAT, *NOISY)
    assert noisy.decision == rule.TOO_NOISY
    assert "one of twice the 10 % threshold not ruled out" in noisy.reason
    assert noisy.repeats_needed is not None
    assert f"about {noisy.repeats_needed} pairs would narrow the bounds to ±10 %" in noisy.reason


def test_every_reason_states_the_bounds_it_rests_on() -> None:
    for case in (REGRESSED, WORSENED, CLEAR, NOISY):
        d = worse_by(SAT, *case)
        assert d.lower is not None
        assert d.upper is not None
        assert f"bounds {d.lower * 100:+.1f} % .. {d.upper * 100:+.1f} %" in d.reason


# ---- issue 38, item 6: identical values never give bounds of zero width ------------------------


def test_identical_values_within_each_side_do_not_give_bounds_of_zero_width() -> None:
    """`decide(PRESSURE_CPU, [1, 1], [1.001, 1.001], 0.9999)` was "worse", bounds +0.1 .. +0.1
    %: no spread seen is not no spread."""
    d = rule.decide(rule.PRESSURE_CPU, [1, 1], [1.001, 1.001], 0.9999)
    assert d.lower is not None
    assert d.upper is not None
    assert d.upper - d.lower > 0.02, d.reason
    assert d.decision != WORSE, d.reason
    bare = replace(rule.PRESSURE_CPU, paired_spread=None, paired_df=0)
    d = rule.decide(bare, [1, 1, 1], [1.001, 1.001, 1.001], 0.99)
    assert d.lower is not None
    assert d.upper is not None
    assert d.lower < 0 < d.upper  # the floor: no figure known better than 1 %
    assert d.decision in (rule.NO_REGRESSION, rule.TOO_NOISY), d.reason


# ---- issue 38, item 5: the worsening in the metric's own terms ---------------------------------


def test_a_threshold_on_throughput_is_a_drop_of_that_share() -> None:
    """A 5 % threshold on saturation is 5 % less throughput, printed as a 5 % worsening (the
    previous rule printed exp(ln A - ln B) - 1: a 16.7 % drop under a 20 % margin)."""
    metric = replace(rule.SATURATION, margin=0.05)
    a = [100_000.0, 101_000.0, 99_000.0, 100_500.0]
    b = [0.95 * v for v in a]
    d = rule.decide(metric, a, b, 0.95)
    assert d.change == pytest.approx(0.05, abs=1e-9)
    assert metric.worsening(metric.log_threshold) == pytest.approx(0.05)
    cpu = replace(rule.PRESSURE_CPU, margin=0.05)
    assert cpu.worsening(cpu.log_threshold) == pytest.approx(0.05)
    assert rule.decide(cpu, a, [1.05 * v for v in a], 0.95).change == pytest.approx(0.05)


def test_the_rule_text_says_what_holds_together() -> None:
    assert "every lower bound holds together with 95 %, every upper bound too" in rule.RULE
    assert "(both: at least 90 %)" in rule.RULE
    assert "all bounds holding together with 95 %" not in rule.RULE


# ---- issue 38, items 1 and 2: precedence, and a broken candidate ------------------------------


@pytest.mark.parametrize(
    ("kinds", "verdict"),
    [
        ((rule.NO_REGRESSION, WORSE, rule.TOO_NOISY), rule.TOO_NOISY),
        ((rule.REGRESSION, WORSE, rule.TOO_NOISY), rule.REGRESSION),
        ((rule.NO_REGRESSION, WORSE), WORSE),
        ((rule.NO_REGRESSION, rule.TOO_NOISY), rule.TOO_NOISY),
        ((rule.NO_REGRESSION, rule.NO_REGRESSION), rule.NO_REGRESSION),
    ],
)
def test_overall_regression_then_too_noisy_then_worse(kinds: tuple[str, ...], verdict: str) -> None:
    """Worse hid too noisy before: saturation mildly worse beside a metric that could not be
    decided exited 0, the same candidate with unchanged saturation exited 3."""
    made = {
        rule.REGRESSION: worse_by(SAT, *REGRESSED),
        WORSE: worse_by(SAT, *WORSENED),
        rule.NO_REGRESSION: worse_by(SAT, *CLEAR),
        rule.TOO_NOISY: worse_by(SAT, *NOISY),
    }
    decisions = [made[k] for k in kinds]
    assert [d.decision for d in decisions] == list(kinds)
    assert rule.overall(decisions) == verdict


def test_mildly_worse_beside_metrics_without_values_exits_3_not_0() -> None:
    worse = worse_by(SAT, *WORSENED)
    unmeasured = rule.decide(CPU, [None, None, None, None], [None, None, None, None], 0.95)
    assert (worse.decision, unmeasured.decision) == (WORSE, rule.TOO_NOISY)
    assert rule.exit_code([worse, unmeasured]) == 3


def test_a_candidate_that_leaves_a_metric_unknown_where_the_baseline_has_it_is_a_regression() -> (
    None
):
    d = rule.decide(SAT, [100.0, 101.0, 99.0], [100.0, None, 99.5], 0.95)
    assert d.decision == rule.REGRESSION, d.reason
    assert d.broken_pairs == (2,)
    assert d.settled
    assert "the candidate left it unknown in pair 2 where the baseline measured it" in d.reason
    # the baseline's unknown only drops the pair: nothing to compare it with
    d = rule.decide(SAT, [100.0, None, 99.0, 100.0], [100.0, 101.0, 99.5, 100.2], 0.95)
    assert d.decision != rule.REGRESSION
    assert d.broken_pairs == ()


def test_a_metric_reported_beside_the_verdict_decides_nothing() -> None:
    beside = replace(worse_by(P99, *REGRESSED), metric=replace(P99, gates=False))
    clear = worse_by(SAT, *CLEAR)
    assert beside.decision == rule.REGRESSION
    assert rule.overall([clear, beside]) == rule.NO_REGRESSION
    assert rule.overall([beside]) == rule.TOO_NOISY  # no gating metric: nothing decided
    assert not rule.PRESSURE_P99.gates  # the default: p99 reported beside


# ---- exit codes that tell too noisy from bad input -----------------------------------------------


def test_exit_codes_tell_too_noisy_from_bad_input_and_worse_fails_only_when_asked() -> None:
    regression = [worse_by(SAT, *REGRESSED)]
    worse = [worse_by(SAT, *WORSENED)]
    clear = [worse_by(SAT, *CLEAR)]
    noisy = [worse_by(SAT, *NOISY)]
    assert rule.exit_code(clear) == 0
    assert rule.exit_code(regression) == 1
    assert rule.exit_code(noisy) == 3  # 2 is bad input
    assert rule.exit_code(worse) == 0
    assert rule.exit_code(worse, fail_on=WORSE) == 1
    assert rule.exit_code(regression, fail_on=WORSE) == 1
    assert rule.exit_code(clear, fail_on=WORSE) == 0


# ---- the 5 % is the comparison's ----------------------------------------------------------


def record_of(metrics: tuple[Metric, ...], pairs: int, spread: float, seed: int) -> CompareRecord:
    """An A/A comparison of these metrics that its budget stopped after `pairs` pairs."""
    r = random.Random(seed)  # noqa: S311 (a simulation, not cryptography)
    runs: list[RepeatRecord] = []
    for i in range(pairs):
        for side in (BASELINE, CANDIDATE):
            values = {m.name: 100.0 * math.exp(r.gauss(0, spread)) for m in metrics}
            runs.append(RepeatRecord(len(runs), side, i + 1, values))  # pyright: ignore[reportArgumentType]
    return CompareRecord.build(
        f"aa{seed}", Side("a"), Side("a"), runs, metrics, plan=Plan(2, 5, budget_s=900.0),
        stopped=BUDGET_SPENT, aa=True,
    )  # fmt: skip


def test_an_a_a_comparison_of_three_metrics_says_regression_at_most_5_percent() -> None:
    """Thresholds far below the spreads, where the threshold protects nothing: each metric
    alone may be shown worse at its own share; the comparison's 5 % is spent over the metrics
    as over the looks."""
    metrics = tuple(replace(m, margin=0.001, min_pairs=2) for m in (SAT, P99, CPU))
    trials = 1000
    verdicts = Counter(record_of(metrics, 4, 0.10, seed).verdict for seed in range(trials))
    assert verdicts[rule.REGRESSION] <= 0.06 * trials, verdicts


def test_each_gating_metric_gets_its_share_of_the_5_percent() -> None:
    record = record_of((SAT, replace(P99, gates=False), CPU), 4, 0.03, 1)
    spent = 0.0
    for d in record.decisions:
        assert d.confidence is not None
        if d.metric.gates:
            assert d.confidence > 1 - 0.05 / 2  # the last look of its share: above 97.5 %
            spent += 1 - d.confidence
        else:
            assert 1 - 0.05 / 2 > d.confidence > 0.95  # its own 5 %, over its looks
    assert spent < 0.05


# ---- looks: the bounds narrow, and only settled metrics stop the pairs ----------------------


def bounds(d: float, lo: float, hi: float) -> rule.Bounds:
    return rule.Bounds(d=d, lo=lo, hi=hi, df=6.0, spread=0.03, half=(hi - lo) / 2, pairs=4,
                       how="its own")  # fmt: skip


def test_a_metrics_bounds_are_the_narrowest_its_looks_give() -> None:
    later = bounds(0.10, 0.02, 0.20)
    earlier = bounds(0.08, 0.05, 0.30)
    both = later.within(earlier)
    assert (both.d, both.lo, both.hi, both.df) == (0.10, 0.05, 0.20, 6.0)
    assert later.within(None) == later
    apart = bounds(0.5, 0.40, 0.60)
    assert later.within(apart) == later  # bounds that exclude each other: a bound failed


def test_only_settled_gating_metrics_stop_the_pairs() -> None:
    plan = Plan(2, 5, budget_s=900.0)
    unsettled = worse_by(SAT, 0.06, 0.05, 4)  # worse, its upper bound past the threshold
    by_less = worse_by(CPU, *WORSENED)  # worse, both bounds inside the threshold
    assert (unsettled.decision, unsettled.settled) == (WORSE, False)
    assert (by_less.decision, by_less.settled) == (WORSE, True)
    assert stop_reason(plan, [unsettled, by_less], 4, 0.0, 0.0) is None
    beside = replace(unsettled, metric=replace(SAT, gates=False))
    assert stop_reason(plan, [beside, by_less], 4, 0.0, 0.0) == DECIDED
    settled = [worse_by(SAT, *CLEAR), by_less, worse_by(SAT, *REGRESSED)]
    assert all(d.settled for d in settled)
    assert stop_reason(plan, settled, 4, 0.0, 0.0) == DECIDED
    calibrating = Plan.calibration(6, None)
    assert stop_reason(calibrating, settled, 4, 0.0, 0.0) is None  # runs all its pairs
    assert stop_reason(calibrating, settled, 6, 0.0, 0.0) == MAX_PAIRS_RUN


def test_a_later_look_can_show_a_worse_metric_a_regression() -> None:
    """A 12 % drop with noise against a 10 % threshold: the first look, strict and with few
    values, does not show it; a later one does, and that is the outcome."""
    a = [100.0, 104.0, 96.0, 101.0, 99.0]
    b = [90.0, 89.0, 87.0, 90.5, 86.0]
    first = decide_sequential(SAT, a[:2], b[:2], Plan(2, 5), family=2)
    assert first.decision != rule.REGRESSION
    d = decide_sequential(SAT, a, b, Plan(2, 5), family=2)
    assert d.decision == rule.REGRESSION, d.reason
    assert d.pairs is not None
    assert d.pairs > 2


def test_bounds_past_a_thousand_percent_either_way_are_said_so() -> None:
    # A look at 2 pairs on its own spread (1 df) gives bounds of e^±70: a throughput's drop is
    # at most 100 %, its gain unbounded, printed as such, never in 30 digits.
    assert rule.percent_text(1 - math.exp(72)) == "< -1,000 %"
    assert rule.percent_text(math.exp(72) - 1) == "> +1,000 %"
    assert rule.percent_text(1 - math.exp(-72)) == "+100.0 %"
    assert rule.percent_text(-0.035) == "-3.5 %"


def test_the_tables_say_bounds_past_a_thousand_percent_so() -> None:
    from loadgate.report import compare_tables

    assert compare_tables.change_text(1 - math.exp(72)) == "< -1,000%"
    assert compare_tables.change_text(math.exp(72) - 1) == "> +1,000%"
    assert compare_tables.change_text(0.152) == "+15.2%"
    assert compare_tables.change_text(None) == "—"


def test_a_candidate_that_sheds_load_at_the_pressure_rate_is_broken_though_cpu_is_beside() -> None:
    """The default metrics: saturation and the collector CPU per Loki CPU gate, the pressure p99
    and CPU in probe jobs are reported beside. A candidate whose pressure run failed its gates
    (it refused load) leaves every pressure metric unknown where the baseline measured it: a
    broken candidate, a regression named so, whatever the values say."""
    metrics = parse_metrics(",".join(DEFAULT_METRICS))
    sat, p99, cpu, per_loki = (m.name for m in metrics)
    assert [m.gates for m in metrics] == [True, False, False, True]
    shed = "the pressure run cmp-c2-pr failed its gates: error rate 0.31 > 0.01"
    runs = []
    for pair in (1, 2):
        runs.append(RepeatRecord(2 * pair - 2, BASELINE, pair, {
            sat: 80_000.0, p99: 5.0, cpu: 100.0, per_loki: 1.2}))  # fmt: skip
        failed = pair == 2
        runs.append(RepeatRecord(2 * pair - 1, CANDIDATE, pair, {
            sat: 80_500.0, p99: None if failed else 5.1, cpu: None if failed else 101.0,
            per_loki: None if failed else 1.21}, failures=(shed,) if failed else ()))  # fmt: skip
    record = CompareRecord.build("cmp", Side("a"), Side("b"), runs, metrics)
    assert record.verdict == rule.REGRESSION
    assert record.exit_code == 1
    assert record.broken == (
        "broken candidate: it left metrics the baseline measured unknown: pair 2: "
        f"{p99}, {cpu}, {per_loki} unknown ({shed}): a regression whatever the others say"
    )
    # Saturation alone, by its values, shows nothing.
    assert next(d for d in record.decisions if d.metric.name == sat).decision != rule.REGRESSION


def test_metrics_reported_beside_gate_when_no_other_metric_compared_does() -> None:
    assert [m.gates for m in parse_metrics("saturation,pressure-cpu-probe")] == [True, False]
    alone = parse_metrics("pressure-cpu-probe")
    assert [m.gates for m in alone] == [True]
    assert [m.gates for m in parse_metrics("pressure-p99,pressure-cpu-probe")] == [True, True]
    assert [m.gates for m in parse_metrics("pressure-cpu,pressure-cpu-probe")] == [True, False]
