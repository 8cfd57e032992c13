"""The rates a capacity search offers: log records per minute rounded to three significant
figures (`round_rate`), and the bracket arithmetic on them: a bracket [C, F] is within the
precision p when (F - C) / (F + C) <= p. Pure."""

from __future__ import annotations

import math


def round_rate(rate: float) -> int:
    """A rate rounded to three significant figures (at least 1): 141_421.4 -> 141_000."""
    if rate < 1000:
        return max(1, round(rate))
    quantum = 10 ** (math.floor(math.log10(rate)) - 2)
    return round(rate / quantum) * quantum


def _unit(rate: int) -> int:
    """One unit of a rounded rate's third significant figure."""
    return 10 ** max(0, math.floor(math.log10(max(rate, 1))) - 2)


def bracket_precision(low: float, high: float) -> float:
    """Half-width of [low, high] relative to its middle: (high - low) / (high + low)."""
    return (high - low) / (high + low)


def bisections_needed(ratio: float, precision: float) -> int:
    """Geometric bisections that take a bracket high/low = ratio to within the precision."""
    target = (1 + precision) / (1 - precision)
    steps = 0
    while ratio > target * (1 + 1e-12):
        ratio = math.sqrt(ratio)
        steps += 1
    return steps


def step_below(rate: int, precision: float) -> int:
    """The lowest rounded rate r below `rate` with [r, rate] within the precision."""
    r = round_rate(rate * (1 - precision) / (1 + precision))
    while bracket_precision(r, rate) > precision:
        r += _unit(r)
    return r


def step_above(rate: int, precision: float) -> int:
    """The highest rounded rate r above `rate` with [rate, r] within the precision."""
    r = round_rate(rate * (1 + precision) / (1 - precision))
    while bracket_precision(rate, r) > precision:
        r -= _unit(r - 1)
    return r


def precise(low: int, high: int, precision: float) -> bool:
    """The bracket is within the precision, or no rounded rate lies between its ends."""
    middle = round_rate(math.sqrt(low * high))
    return bracket_precision(low, high) <= precision or not low < middle < high
