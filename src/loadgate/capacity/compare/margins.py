"""How wide a comparison's bounds get at a metric's spread, and the margins chosen from that
(`--margins`, parsed beside `--guards` in `values`, chooses others). Pure.

A metric can be decided ("no regression" or "regression") only when its bounds are narrower
than its margin; the issue's goal is bounds at most half the margin wide, so that every change
at least half a margin away from the margin is decided. With n pairs, both sides spreading by s
(the standard deviation of the log values: about the coefficient of variation), the bounds'
half-width on the log scale is t(confidence, 2n - 2) * s * sqrt(2/n) (Welch at equal spreads;
`rule`), so a margin M meets the goal when ln(1 + M) >= 2 * that half-width.

The spreads below were measured on the development VM (2 cores, the CPU split of
stack/cpu_split.py, a quiet host: every run's `cpu.busy_elsewhere_cores` at most 0.02), pooled
within sides over seven A/A comparisons of rev221 charm-default at the defaults (`loadgate
compare --baseline otelcol=rev221 --candidate otelcol=rev221 --compare-id ID`: aas1-aas3 on
2026-11-26, aat1-aat4 on 2026-11-26/27; 38 degrees of freedom; docs/measurements.md). The
default budget (15 minutes) fits 4 pairs, whose last look decides at about 96.1 %
(`sequential`: the budget's last look spends the alpha left), so the default margins are
the smallest whole 5 % with bounds at most half the margin at 4 pairs:

| metric | spread | half-width at 4 pairs | margin needed | margin |
|---|---|---|---|---|
| saturation | 2.9 % | +-4.5 % | 9.3 % | 10 % |
| pressure CPU per 1,000 records | 3.2 % | +-4.9 % | 10.0 % | 10 % |
| pressure p99 | 15.6 % | +-26 % | 59.9 % | 60 % |

Narrower margins need more pairs (`pairs_needed`): a release compare with the CPU's margin at
5 % and the p99's at 25 % needs 14-15 pairs at these spreads, about an hour (`--margins
pressure-cpu=5,pressure-p99=25 --budget 60m --max-pairs 16`).

`repeats_for`: the repeats a side with which the rule clears two stacks whose capacities spread
like those of repeated searches (`loadgate search --repeat`: search.spread).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from loadgate.capacity.compare import rule

# Each default metric's spread (log standard deviation within a side) on the development VM.
MEASURED_SPREADS: Mapping[str, float] = {
    rule.SATURATION.name: 0.0294,
    rule.PRESSURE_CPU.name: 0.0316,
    rule.PRESSURE_P99.name: 0.1558,
}
DEFAULT_BUDGET_PAIRS = 4  # pairs the default budget fits (a pair: 3.6-3.8 minutes here)
MARGIN_STEP = 0.05  # margins are chosen in whole 5 %


def half_width(spread: float, pairs: int, confidence: float) -> float:
    """The bounds' half-width on the log scale, with `pairs` values a side spreading by
    `spread` each (`rule`'s interval: t(confidence, 2 pairs - 2) * spread * sqrt(2 /
    pairs))."""
    if pairs < 2:
        raise ValueError(f"pairs: must be at least 2; got {pairs}")
    variance = spread * spread
    return rule.interval_half_width(variance, pairs, variance, pairs, confidence)


def margin_needed(spread: float, pairs: int, confidence: float) -> float:
    """The smallest relative margin whose bounds, at this spread and pairs, are at most half
    of it wide: exp(2 * half-width) - 1."""
    return math.exp(2 * half_width(spread, pairs, confidence)) - 1


def pairs_needed(spread: float, margin: float, confidence: float) -> int | None:
    """The fewest pairs whose bounds are at most half of `margin` wide at this spread (None
    past rule.MAX_REPEATS): the rule's own repeats needed, at half the margin."""
    variance = spread * spread
    return rule.repeats_needed(variance, variance, math.log1p(margin) / 2, 2, confidence)


def chosen_margin(spread: float, pairs: int, confidence: float) -> float:
    """The margin chosen for this spread: `margin_needed`, rounded up to a whole MARGIN_STEP."""
    steps = math.ceil(round(margin_needed(spread, pairs, confidence) / MARGIN_STEP, 6))
    return steps * MARGIN_STEP


def repeats_for(capacities: Sequence[int], precision: float) -> int | None:
    """Repeats a side with which the comparison rule clears two stacks that both spread like
    these capacities and do not differ (no regression beyond its margin): these repeats when
    they already do, else the rule's own estimate; None with fewer than two capacities or when
    more than compare.MAX_REPEATS would be needed."""
    if len(capacities) < 2:
        return None
    values = [float(c) for c in capacities]
    decision = rule.decide(rule.capacity_metric(precision), values, values)
    if decision.decision == rule.NO_REGRESSION:
        return len(values)
    return decision.repeats_needed
