"""What a comparison can tell apart at a metric's spread: how wide its bounds get and the
smallest worsening it calls a regression most of the time (what `loadgate calibrate` prints;
the thresholds themselves are practical choices: the margins file, `--margins`). Pure.

With n pairs and a pair's worsening spreading by s (the standard deviation of ln B - ln A in a
pair: `calibration.paired`), the paired bounds' half-width on the log scale is h = t(c, df) *
s / sqrt(n) (`rule`), c the confidence of the look that ends the comparison (`confidence_at`:
the default plan's, its budget or most pairs ending it at n, the comparison's 5 % shared by
its gating metrics).

- **Detectable** (`detectable`): the rule calls a regression when the lower bound is above 0
  and the estimate at least the threshold m, so a true worsening w is a regression about
  `_POWER` (80 %) of the time when ln w >= max(m, h) + z(POWER) * s / sqrt(n) (normal
  approximation). With a stacks' level term L (kept stacks: `rule.Metric.level`), s / sqrt(n)
  is sqrt(s^2/n + L^2) throughout, which no number of pairs brings below L.
- **Too noisy** when no worsening is shown and U >= 2m (`rule.NOISY_WIDTH`): `noisy` says
  whether an A/A comparison (estimate 0) at that spread and those pairs would be.

`repeats_for`: the repeats a side with which the rule clears two stacks whose capacities spread
like those of repeated searches (`loadgate search --repeat`: search.spread).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from loadgate import extras
from loadgate.capacity.compare import rule, welch
from loadgate.capacity.compare.sequential import DEFAULT_MAX_PAIRS, DEFAULT_MIN_PAIRS, Plan

# Pairs the default budget fits (pairs of 3.4 minutes with the shorter waits of 2026-11-27:
# docs/measurements.md).
DEFAULT_BUDGET_PAIRS = 4
SPREAD_LEVEL = 0.95  # calibrate prints the spread's 90 % interval: its upper end at this level
_POWER = 0.80  # `detectable`: a regression at least this often


def half_width(
    spread: float, pairs: int, confidence: float, df: float, level: tuple[float, int] = (0.0, 0)
) -> float:
    """The paired bounds' half-width on the log scale at this spread of a pair's worsening
    (and a stacks' level term: welch.standard_error)."""
    if pairs < 1:
        raise ValueError(f"pairs: must be at least 1; got {pairs}")
    error, df = welch.standard_error(spread, df, pairs, level)
    return welch.t_quantile(df, confidence) * error


def confidence_at(metric: rule.Metric, pairs: int, family: float) -> float:
    """The one-sided confidence of a metric's bounds at the last look of a comparison that
    divides its alpha by `family` for it (sequential.family_of) and ends at `pairs` pairs: the
    default plan (with `--max-pairs` raised to `pairs` when it is more), its budget or its most
    pairs ending it there."""
    plan = Plan(DEFAULT_MIN_PAIRS, max(DEFAULT_MAX_PAIRS, pairs))
    return plan.confidences(metric, pairs, last=True, family=family)[-1]


def detectable(
    metric: rule.Metric, spread: float, df: float, pairs: int, confidence: float
) -> float:
    """The true worsening (relative, in the metric's terms) the rule calls a regression about
    80 % of the time at this spread of a pair's worsening and these pairs."""
    special = extras.load("scipy.special")  # loadgate[stats]
    spread = max(spread, rule.spread_floor(metric))
    h = half_width(spread, pairs, confidence, df, metric.level_term)
    error, _ = welch.standard_error(spread, df, pairs, metric.level_term)
    reach = max(metric.log_threshold, h) + float(special.ndtri(_POWER)) * error
    return metric.worsening(reach)


def noisy(metric: rule.Metric, spread: float, df: float, pairs: int, confidence: float) -> bool:
    """Whether the rule calls a comparison at this spread and these pairs too noisy when its
    estimate is 0 (its upper bound, the half-width, at twice the threshold or more)."""
    spread = max(spread, rule.spread_floor(metric))
    width = half_width(spread, pairs, confidence, df, metric.level_term)
    return width >= rule.NOISY_WIDTH * metric.log_threshold


def repeats_for(capacities: Sequence[int], precision: float) -> int | None:
    """Repeats a side with which the comparison rule would bound a worsening between two
    stacks that both spread like these capacities within the capacity threshold (the paired
    bounds' half-width at most the threshold, at 95 %, with the capacities' own degrees of
    freedom); None with fewer than two capacities or past welch.MAX_REPEATS."""
    if len(capacities) < 2:
        return None
    metric = rule.capacity_metric(precision)
    logs = [math.log(c) for c in capacities]
    spread = max(math.sqrt(2 * welch.variance(logs)), rule.spread_floor(metric))
    return welch.pairs_needed(spread, len(logs) - 1, metric.log_threshold, 2, rule.CONFIDENCE)
