"""The bounds' width at a spread, the default margins chosen from the measured spreads, and
`--margins` (compare.values). Pure."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from loadgate.capacity.compare import margins as cm
from loadgate.capacity.compare import rule
from loadgate.capacity.compare.sequential import DEFAULT_MAX_PAIRS, DEFAULT_MIN_PAIRS, Plan
from loadgate.capacity.compare.sides import SideError
from loadgate.capacity.compare.values import DEFAULT_METRICS, apply_margins, parse_metrics

DEFAULTS = parse_metrics(",".join(DEFAULT_METRICS))


def values_with_spread(mean: float, spread: float, n: int) -> list[float]:
    """n values whose logs have mean ln(mean) and sample standard deviation exactly `spread`."""
    raw = [i - (n - 1) / 2 for i in range(n)]
    scale = spread / math.sqrt(sum(x * x for x in raw) / (n - 1))
    return [mean * math.exp(x * scale) for x in raw]


@pytest.mark.parametrize(("spread", "pairs", "confidence"), [(0.03, 4, 0.95), (0.15, 4, 0.961),
                                                             (0.05, 7, 0.97)])  # fmt: skip
def test_the_half_width_is_what_the_rule_decides_with(
    spread: float, pairs: int, confidence: float
) -> None:
    a = values_with_spread(100.0, spread, pairs)
    b = values_with_spread(100.0, spread, pairs)
    d = rule.decide(rule.SATURATION, a, b, confidence)
    assert d.upper is not None
    assert d.change is not None
    assert math.log1p(d.upper) - math.log1p(d.change) == pytest.approx(
        cm.half_width(spread, pairs, confidence), rel=1e-6
    )


def test_a_margin_needed_is_twice_the_half_width_and_decides_a_change_half_a_margin_off() -> None:
    spread, pairs, confidence = 0.0316, 4, 0.961
    margin = cm.margin_needed(spread, pairs, confidence)
    assert math.log1p(margin) == pytest.approx(2 * cm.half_width(spread, pairs, confidence))
    metric = replace(rule.PRESSURE_CPU, margin=margin * 1.001)
    a = values_with_spread(0.1, spread, pairs)
    # Identical means: no regression. Worse by half the margin: still bounded below it.
    assert rule.decide(metric, a, a, confidence).decision == rule.NO_REGRESSION
    half = math.exp(math.log1p(margin) / 2)
    worse = [v * half * 0.999 for v in a]
    assert rule.decide(metric, a, worse, confidence).decision == rule.NO_REGRESSION
    # Narrower than that, the same spread cannot decide it.
    narrow = replace(metric, margin=margin * 0.9)
    assert rule.decide(narrow, a, worse, confidence).decision == rule.TOO_NOISY


def test_each_default_margin_is_chosen_from_its_measured_spread_for_the_budgets_pairs() -> None:
    plan = Plan(DEFAULT_MIN_PAIRS, DEFAULT_MAX_PAIRS)
    assert {m.name for m in DEFAULTS} == set(cm.MEASURED_SPREADS)
    for metric in DEFAULTS:
        spread = cm.MEASURED_SPREADS[metric.name]
        last = plan.confidences(metric, cm.DEFAULT_BUDGET_PAIRS, last=True)[-1]
        assert 0.95 < last < 0.97
        assert metric.margin == pytest.approx(cm.chosen_margin(spread, cm.DEFAULT_BUDGET_PAIRS,
                                                                last)), metric.name  # fmt: skip
        # At that margin 4 pairs bound it within half of it; 3 pairs would not.
        assert cm.margin_needed(spread, cm.DEFAULT_BUDGET_PAIRS, last) <= metric.margin
        at_three = plan.confidences(metric, 3, last=True)[-1]
        assert cm.margin_needed(spread, 3, at_three) > metric.margin
        assert not metric.guard


def test_narrower_margins_need_more_pairs_and_none_past_the_most() -> None:
    cpu = cm.MEASURED_SPREADS[rule.PRESSURE_CPU.name]
    p99 = cm.MEASURED_SPREADS[rule.PRESSURE_P99.name]
    assert cm.pairs_needed(cpu, 0.10, 0.961) == 4
    at_5 = cm.pairs_needed(cpu, 0.05, 0.961)
    at_25 = cm.pairs_needed(p99, 0.25, 0.961)
    assert at_5 is not None
    assert at_25 is not None
    assert 10 <= at_5 <= 16
    assert 10 <= at_25 <= 16
    assert cm.pairs_needed(p99, 0.01, 0.961) is None  # past MAX_REPEATS
    with pytest.raises(ValueError, match="pairs: must be at least 2"):
        cm.half_width(0.1, 1, 0.95)


def test_margins_set_the_named_metrics_in_percent() -> None:
    out = apply_margins(DEFAULTS, "pressure-p99=25, pressure-cpu=5%")
    margins = {m.name: m.margin for m in out}
    assert margins == {
        rule.SATURATION.name: rule.SATURATION.margin,
        rule.PRESSURE_P99.name: 0.25,
        rule.PRESSURE_CPU.name: 0.05,
    }
    assert [m.name for m in out] == [m.name for m in DEFAULTS]
    assert apply_margins(DEFAULTS, None) == DEFAULTS


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "--margins: empty; allowed: saturation, pressure-p99, pressure-cpu, each =PERCENT"),
        ("p99=20", "--margins: 'p99' is not among the metrics compared; allowed: saturation, "
         "pressure-p99, pressure-cpu"),
        ("saturation", "--margins: saturation must be a percentage more than 0 and at most 500, "
         "e.g. saturation=25; got 'saturation'"),
        ("saturation=ten", "got 'saturation=ten'"),
        ("saturation=-5", "got 'saturation=-5'"),
        ("saturation=501", "got 'saturation=501'"),
        ("saturation=nan", "got 'saturation=nan'"),
    ],
)  # fmt: skip
def test_bad_margins_are_refused_naming_the_flag_and_the_allowed_values(
    value: str, message: str
) -> None:
    with pytest.raises(SideError, match=r"^--margins: ") as err:
        apply_margins(DEFAULTS, value)
    assert message in str(err.value)
