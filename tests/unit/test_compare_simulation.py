"""The machinery of benchmarks/compare_simulation.py (tests/support/compare_simulation.py), with
few comparisons: seeded, driven pair by pair as the driver drives them (the budget stops the
pairs, the last look spends what is left), the noise and the drift as stated, the worsening in
the metric's own terms; and, with few comparisons, the default plan's error and power at the
shipped spreads (the benchmark measures the rates closely)."""

from __future__ import annotations

import math
import random
import statistics
from dataclasses import replace

import pytest
from support import benchmark_script
from support import compare_simulation as cs

from loadgate.capacity.compare import margins_file, rule, values
from loadgate.capacity.compare import sequential as seq

METRICS = margins_file.apply(
    values.parse_metrics(",".join(values.DEFAULT_METRICS)), margins_file.shipped()
)
SPREADS = {m.name: 0.03 for m in METRICS}
PLAN = seq.Plan(seq.DEFAULT_MIN_PAIRS, seq.DEFAULT_MAX_PAIRS, budget_s=seq.DEFAULT_BUDGET_S)


def test_a_seed_gives_the_same_comparisons() -> None:
    row = cs.Row("aa", SPREADS)
    first = cs.simulate(METRICS, PLAN, row, 20, seed=7)
    assert first.comparisons == 20
    assert cs.simulate(METRICS, PLAN, row, 20, seed=7).verdicts == first.verdicts
    assert sum(first.by_metric[rule.SATURATION.name].values()) == 20


def test_the_budget_ends_a_default_comparison_at_4_pairs_with_the_last_look() -> None:
    r = random.Random(1)  # noqa: S311
    wide = cs.Row("noisy", {m.name: 0.5 for m in METRICS})  # never settles
    verdict, pairs, decisions = cs.compare_once(r, METRICS, PLAN, wide, pair_s=(200.0, 200.0))
    assert pairs == 4  # 200 s pairs: a fifth would pass 15 minutes
    assert verdict == rule.overall(decisions)
    assert all("the last look" in d.reason for d in decisions if d.pairs == 4)
    slow = cs.compare_once(r, METRICS, PLAN, wide, pair_s=(300.0, 300.0))[1]
    assert slow == 3  # 900 s so far and a 300 s pair: no fourth


def test_a_clear_worsening_is_found_and_identical_quiet_stacks_are_cleared() -> None:
    quiet = {m.name: 0.005 for m in METRICS}
    bad = cs.Row("bad", quiet, worse={rule.SATURATION.name: 0.5})  # half the throughput
    tally = cs.simulate(METRICS, PLAN, bad, 10, seed=1)
    assert tally.share(rule.REGRESSION) == 1.0
    assert tally.metric_share(rule.SATURATION.name, rule.REGRESSION) == 1.0
    assert tally.metric_share(rule.PRESSURE_CPU_PROBE.name, rule.REGRESSION, rule.WORSE) == 0.0
    # Without a calibration to pool with, quiet stacks' own spread clears them.
    bare = tuple(replace(m, paired_spread=None, paired_df=0) for m in METRICS)
    same = cs.simulate(bare, PLAN, cs.Row("same", quiet), 10, seed=1)
    assert same.share(rule.NO_REGRESSION) == 1.0
    assert min(same.pairs) >= seq.DEFAULT_MIN_PAIRS


@pytest.mark.parametrize("shape", [cs.NORMAL, cs.T3])
def test_the_noise_has_the_spread_it_is_given(shape: str) -> None:
    r = random.Random(3)  # noqa: S311
    draws = [cs._noise(r, 0.1, shape) for _ in range(20_000)]  # pyright: ignore[reportPrivateUsage]
    assert statistics.pstdev(draws) == pytest.approx(0.1, rel=0.1)
    heavy = sum(abs(x) > 0.4 for x in draws)  # beyond 4 standard deviations
    assert (heavy > 20) == (shape == cs.T3)


def test_a_drift_moves_both_sides_of_a_pair_alike_and_a_worsening_only_the_candidate() -> None:
    metric = rule.SATURATION  # higher is better: 25 % worse is 25 % less
    row = cs.Row("drift", {metric.name: 0.0}, drift=1.0, worse={metric.name: 0.25})
    drifted = cs.Row("drift", {metric.name: 1e-9}, drift=1e9)
    r = random.Random(5)  # noqa: S311
    a, b = cs._pair(r, [metric], row)  # pyright: ignore[reportPrivateUsage]
    assert b[metric.name] / a[metric.name] == pytest.approx(0.75)
    cpu = rule.PRESSURE_CPU  # lower is better: 25 % worse is 25 % more
    slower = cs.Row("cpu", {cpu.name: 0.0}, worse={cpu.name: 0.25})
    a, b = cs._pair(r, [cpu], slower)  # pyright: ignore[reportPrivateUsage]
    assert b[cpu.name] / a[cpu.name] == pytest.approx(1.25)
    d = rule.decide(cpu, [a[cpu.name]] * 2, [b[cpu.name]] * 2)
    assert d.change == pytest.approx(0.25)  # the rule reads it back in the same terms
    r = random.Random(5)  # noqa: S311
    a, b = cs._pair(r, [metric], drifted)  # pyright: ignore[reportPrivateUsage]
    assert a[metric.name] != pytest.approx(100.0)
    assert a[metric.name] == pytest.approx(b[metric.name], rel=1e-6)


def test_the_default_plan_at_the_shipped_spreads_and_levels_keeps_its_error() -> None:
    """400 seeded comparisons a row, the default metrics, thresholds, paired spreads and stacks'
    levels (a value's spread: the paired one over sqrt(2); a level drawn once a comparison, as
    kept stacks hold one): identical stacks are called a regression in at most 5 % (the
    comparison's alpha), and 10 % less saturation throughput (twice its threshold) in most
    tries: more than 60 %, short of the 80 % #38 asks for (benchmarks/compare_simulation.py
    prints the rate; docs/manual/compare.md says why)."""
    spreads = {m.name: (m.paired_spread or 0.0) / math.sqrt(2) for m in METRICS}
    levels = {m.name: m.level for m in METRICS}
    shipped = margins_file.shipped().metrics["saturation"]
    assert spreads[rule.SATURATION.name] == pytest.approx((shipped.paired_spread or 0.0)
                                                          / math.sqrt(2))  # fmt: skip
    assert levels[rule.SATURATION.name] == shipped.level_spread
    aa = cs.simulate(METRICS, PLAN, cs.Row("A/A", spreads, level=levels), 400, seed=38)
    assert aa.comparisons == 400
    assert aa.share(rule.REGRESSION) <= 0.05
    loss = cs.Row("saturation 10 % less", spreads, worse={rule.SATURATION.name: 0.10},
                  level=levels)  # fmt: skip
    found = cs.simulate(METRICS, PLAN, loss, 400, seed=38)
    assert found.share(rule.REGRESSION) > 0.60
    assert found.metric_share(rule.SATURATION.name, rule.REGRESSION) > 0.60


def test_a_stacks_level_is_drawn_once_a_comparison_and_the_rule_counts_it() -> None:
    """A level the candidate's stack holds for a whole comparison moves every pair of it alike
    (its pairs cannot see it) and differs between comparisons; with a 4 % level and little pair
    noise, a rule that does not count it calls A/As regressions twice as often as its 5 %,
    and the rule with the level term does not."""
    metric = replace(rule.SATURATION, margin=0.05, paired_spread=0.01, paired_df=40,
                     level_spread=None, level_df=0)  # fmt: skip  # blind to the level
    row = cs.Row("level", {metric.name: 0.0}, level={metric.name: 0.04})
    r = random.Random(3)  # noqa: S311
    offsets = []
    for _ in range(200):
        _, _, decisions = cs.compare_once(r, [metric], PLAN, row)
        (d,) = decisions
        worsening = [
            math.log(a) - math.log(b)
            for a, b in zip(d.baseline, d.candidate, strict=True)
            if a and b
        ]
        assert max(worsening) == pytest.approx(min(worsening))  # one level a comparison
        offsets.append(worsening[0])
    assert statistics.stdev(offsets) == pytest.approx(0.04, rel=0.15)
    noisy = cs.Row("level", {metric.name: 0.005}, level={metric.name: 0.04})
    blind = cs.simulate([metric], PLAN, noisy, 300, seed=38)
    counted = cs.simulate([replace(metric, level_spread=0.04, level_df=30)], PLAN, noisy, 300,
                          seed=38)  # fmt: skip
    assert blind.share(rule.REGRESSION) > 0.08  # twice the 5 % (seeded: 10 %)
    assert counted.share(rule.REGRESSION) <= 0.05


def test_the_benchmark_takes_other_thresholds_as_compare_does_and_refuses_a_bad_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bench = benchmark_script.load("compare_simulation")
    shipped = {m.name: m for m in bench.default_metrics()}
    moved = {m.name: m for m in bench.default_metrics("saturation=7")}
    assert moved["saturation_per_min"].margin == pytest.approx(0.07)
    assert moved["saturation_per_min"].margin != shipped["saturation_per_min"].margin
    # Only the threshold: the calibrated spread and level stay the shipped file's.
    assert moved["saturation_per_min"].paired_spread == shipped["saturation_per_min"].paired_spread
    assert moved["saturation_per_min"].level == shipped["saturation_per_min"].level
    assert moved["pressure_cpu_per_loki_cpu"] == shipped["pressure_cpu_per_loki_cpu"]
    assert all(c.metrics == tuple(moved.values()) for c in bench.cases("saturation=7")
               if "level unseen" not in c.row.name)  # fmt: skip
    with pytest.raises(SystemExit) as exited:
        bench.main(["--margins", "saturation=0", "--comparisons", "1"])
    assert exited.value.code == 2
    assert "--margins: saturation must be a percentage" in capsys.readouterr().err
