"""The bounds' width at a spread, the default margins chosen from the spreads of the shipped
margins file at their upper confidence bound, and `--margins` (compare.values). Pure."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from loadgate.capacity.compare import calibration, rule
from loadgate.capacity.compare import margins as cm
from loadgate.capacity.compare import margins_file as mf
from loadgate.capacity.compare.sides import SideError
from loadgate.capacity.compare.values import (
    DEFAULT_METRICS,
    METRIC_KEYS,
    apply_margins,
    parse_metrics,
)

DEFAULTS = parse_metrics(",".join(DEFAULT_METRICS))
SHIPPED = mf.shipped()
SPREADS = {METRIC_KEYS[k].name: e.spread or 0.0 for k, e in SHIPPED.metrics.items()}


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
    at_half = rule.decide(metric, a, worse, confidence)
    assert at_half.settled
    assert at_half.upper is not None
    assert at_half.upper < metric.margin
    # Narrower than that, the same spread cannot settle it.
    narrow = replace(metric, margin=margin * 0.9)
    assert not rule.decide(narrow, a, worse, confidence).settled


def test_each_default_margin_is_chosen_at_its_spreads_upper_bound_for_the_budgets_pairs() -> None:
    """The shipped file's margins are what calibrate's choice gives from its spreads: at the
    spread's one-sided 95 % upper bound, for the 4 pairs of the default budget, the 5 % shared
    by the three default metrics."""
    assert {m.name for m in DEFAULTS} == set(SPREADS)
    assert SHIPPED.pairs == cm.DEFAULT_BUDGET_PAIRS
    for key, entry in SHIPPED.metrics.items():
        metric = METRIC_KEYS[key]
        assert entry.spread is not None
        assert entry.df is not None
        spread = calibration.Spread(entry.spread, entry.df)
        last = cm.confidence_at(metric, cm.DEFAULT_BUDGET_PAIRS, len(SHIPPED.metrics))
        assert 0.98 < last < 0.99  # alpha/3 less what the looks at 2 and 3 of 5 spent
        assert entry.margin_percent / 100 == pytest.approx(
            cm.chosen_margin(spread.upper, cm.DEFAULT_BUDGET_PAIRS, last)
        ), key
        assert entry.spread_interval == pytest.approx(spread.interval(), abs=1e-5)
        # At that margin 4 pairs bound it within half of it even at the upper bound; 3 would not.
        assert (
            cm.margin_needed(spread.upper, cm.DEFAULT_BUDGET_PAIRS, last)
            <= entry.margin_percent / 100
        )
        at_three = cm.confidence_at(metric, 3, len(SHIPPED.metrics))
        assert cm.margin_needed(spread.upper, 3, at_three) > entry.margin_percent / 100
        # The margin at the estimate is narrower: the choice no longer sits on a rounding edge
        # of the estimate.
        assert entry.margin_at_estimate_percent is not None
        assert entry.margin_at_estimate_percent < entry.margin_percent


def test_narrower_margins_need_more_pairs_and_none_past_the_most() -> None:
    cpu = SPREADS[rule.PRESSURE_CPU.name]
    p99 = SPREADS[rule.PRESSURE_P99.name]
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
        rule.SATURATION.name: rule.SATURATION.margin,  # the table's: no margins file here
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


def test_the_tables_margins_of_the_default_metrics_are_the_shipped_files() -> None:
    """The command line takes the default margins from the shipped file; the table
    (rule.METRICS) holds the same, for code that compares without a margins file. A new
    `loadgate calibrate` output in data/margins.yaml changes both."""
    assert {m.name: m.margin for m in DEFAULTS} == pytest.approx(SHIPPED.margins())


def test_a_spread_no_margin_is_powered_at_chooses_none() -> None:
    # A worsening of twice a margin M is a factor (1 + 2M) / (1 + M) < 2 whatever M: a spread
    # that needs a factor of 2 or more to be found 80 % of the time at these pairs bounds none.
    assert math.isinf(cm.margin_needed(0.5, 3, 0.98))
    assert math.isinf(cm.chosen_margin(0.5, 3, 0.98))
    assert math.isfinite(cm.chosen_margin(0.03, 3, 0.98))
