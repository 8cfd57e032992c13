"""How wide a comparison's bounds get at a metric's spread, and the margin chosen from that (what
`loadgate calibrate` writes in a margins file; `--margins` sets others). Pure.

With n pairs, both sides spreading by s (the standard deviation of the log values: about the
coefficient of variation), the bounds' half-width on the log scale is h = t(c, 2n - 2) * se,
se = s * sqrt(2/n) (Welch at equal spreads; `rule`), c the confidence of the look that ends the
comparison (`confidence_at`: the default plan's, its budget or most pairs ending it at n, with
the comparison's 5 % shared by its metrics). A margin M (m = ln(1 + M)) meets two goals
(`margin_needed`, the larger of the two):

- **settled**: bounds at most half the margin wide, m >= 2h, so that every change at least half
  a margin away from the margin is settled (an A/A comparison says "no regression");
- **powered**: a worsening of twice the margin (relative: 1 + 2M) is a regression at least
  `_POWER` (80 %) of the time: its lower bound must reach m, so ln((1 + 2M) / (1 + M)) >=
  h + z(POWER) * se (normal approximation). This binds only a wide margin: ln((1+2M)/(1+M))
  is almost m for a narrow one but never more than ln 2.

**The spread is uncertain**: an estimate from d degrees of freedom lies below the true spread
about half the time, and a margin chosen from it would then be too narrow for its pairs just
as often. So the margin is chosen at the spread's one-sided 95 % upper confidence bound (the
upper end of the 90 % interval `calibration` prints, from the chi-square distribution of the
pooled variance): the smallest whole 5 % (`_MARGIN_STEP`) at least `margin_needed` there. With
38 degrees of freedom the bound is 1.24 times the estimate; a margin chosen at the estimate
itself is printed beside it, its sensitivity.

`repeats_for`: the repeats a side with which the rule clears two stacks whose capacities spread
like those of repeated searches (`loadgate search --repeat`: search.spread).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from loadgate import extras
from loadgate.capacity.compare import rule, welch
from loadgate.capacity.compare.sequential import DEFAULT_MAX_PAIRS, DEFAULT_MIN_PAIRS, Plan

# Pairs the default budget fits, for which the shipped margins were chosen (pairs of 3.5-3.7
# minutes, 2026-11-26). On 2026-11-27 pairs took 3.9 minutes and 3 fitted; with the shorter
# waits of that afternoon 3.4 minutes, and 4 fitted again (docs/measurements.md).
DEFAULT_BUDGET_PAIRS = 4
_MARGIN_STEP = 0.05  # margins are chosen in whole 5 %
SPREAD_LEVEL = 0.95  # margins are chosen at this one-sided upper confidence bound of the spread
_POWER = 0.80  # a worsening of twice the margin is a regression at least this often


def half_width(spread: float, pairs: int, confidence: float) -> float:
    """The bounds' half-width on the log scale, with `pairs` values a side spreading by
    `spread` each (`rule`'s interval: t(confidence, 2 pairs - 2) * spread * sqrt(2 /
    pairs))."""
    if pairs < 2:
        raise ValueError(f"pairs: must be at least 2; got {pairs}")
    variance = spread * spread
    return welch.interval_half_width(variance, pairs, variance, pairs, confidence)


def confidence_at(metric: rule.Metric, pairs: int, family: int) -> float:
    """The one-sided confidence of a metric's bounds at the last look of a comparison of
    `family` metrics that ends at `pairs` pairs: the default plan (with `--max-pairs` raised to
    `pairs` when it is more), its budget or its most pairs ending it there."""
    plan = Plan(DEFAULT_MIN_PAIRS, max(DEFAULT_MAX_PAIRS, pairs))
    return plan.confidences(metric, pairs, last=True, family=family)[-1]


def margin_needed(spread: float, pairs: int, confidence: float) -> float:
    """The smallest relative margin that is settled and powered at this spread and pairs (the
    module's two goals; infinite when no margin is powered)."""
    h = half_width(spread, pairs, confidence)
    settled = math.exp(2 * h) - 1
    special = extras.load("scipy.special")  # loadgate[stats]
    reach = h + float(special.ndtri(_POWER)) * spread * math.sqrt(2 / pairs)
    if reach >= math.log(2):
        return math.inf
    powered = math.expm1(reach) / (2 - math.exp(reach))  # (1 + 2M) = e^reach (1 + M)
    return max(settled, powered)


def pairs_needed(spread: float, margin: float, confidence: float) -> int | None:
    """The fewest pairs (from 2) for which `margin` is settled and powered at this spread, at
    this confidence (None past welch.MAX_REPEATS)."""

    return welch.fewest(2, lambda n: margin_needed(spread, n, confidence) <= margin)


def chosen_margin(spread: float, pairs: int, confidence: float) -> float:
    """The margin for this spread (give the spread's upper confidence bound: `calibration`):
    `margin_needed`, rounded up to a whole MARGIN_STEP; infinite when no margin is powered at
    these pairs (a worsening of twice a margin M is at most a factor 2 whatever M: a spread too
    wide for that at these pairs bounds no margin)."""
    needed = margin_needed(spread, pairs, confidence)
    if math.isinf(needed):
        return math.inf
    return math.ceil(round(needed / _MARGIN_STEP, 6)) * _MARGIN_STEP


def repeats_for(capacities: Sequence[int], precision: float) -> int | None:
    """Repeats a side with which the comparison rule clears two stacks that both spread like
    these capacities and do not differ (no regression beyond its margin): these repeats when
    they already do, else the rule's own estimate; None with fewer than two capacities or when
    more than welch.MAX_REPEATS would be needed."""
    if len(capacities) < 2:
        return None
    values = [float(c) for c in capacities]
    decision = rule.decide(rule.capacity_metric(precision), values, values)
    if decision.decision == rule.NO_REGRESSION:
        return len(values)
    return decision.repeats_needed
