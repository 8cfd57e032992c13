"""What `loadgate calibrate` measures: each metric's spread from run to run, pooled within the
sides of recorded comparisons, with its uncertainty, and the margins N pairs can bound. Pure.

- **The spread** of a metric is the standard deviation of its log values (about its coefficient
  of variation) within one side of one comparison, pooled over every side of every comparison
  given: s^2 = sum of squared deviations from each side's mean / df, df = sum of (n - 1) over
  the sides. Within a side the stack is the same, so an A/A comparison and any other comparison
  count alike; the sides' difference does not enter.
- **Its uncertainty**: df * s^2 / sigma^2 follows a chi-square distribution with df degrees of
  freedom (log-normal noise), so sigma lies in s * sqrt(df / chi2(1 - a/2, df)) ..
  s * sqrt(df / chi2(a/2, df)) with confidence 1 - a (`Spread.interval`, 90 %: its upper end
  is the one-sided 95 % bound the margins are chosen at, `margins`).
- **The margins N pairs can bound**, N = 3..8 (`margin_rows`): `margins.chosen_margin` at the
  spread's upper bound and at the confidence of the look that ends such a comparison
  (`margins.confidence_at`), with the margin at the estimate beside it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from loadgate import extras
from loadgate.capacity.compare import margins
from loadgate.capacity.compare.record import CompareRecord, side_values
from loadgate.capacity.compare.rule import BASELINE, CANDIDATE, Metric

_INTERVAL = 2 * margins.SPREAD_LEVEL - 1  # 90 %: its upper end is the one-sided 95 % bound
_PAIRS_SHOWN = tuple(range(3, 9))


@dataclass(frozen=True)
class Spread:
    """A metric's pooled spread (standard deviation of log values within a side) and its
    degrees of freedom."""

    spread: float
    df: int

    def interval(self, confidence: float = _INTERVAL) -> tuple[float, float]:
        """The true spread's two-sided confidence interval (chi-square on df)."""
        if self.df < 1:
            raise ValueError(f"degrees of freedom: must be at least 1; got {self.df}")
        special = extras.load("scipy.special")  # loadgate[stats]
        tail = (1 - confidence) / 2
        high_q = float(special.chdtri(self.df, tail))  # chi-square's upper quantile
        low_q = float(special.chdtri(self.df, 1 - tail))
        return self.spread * math.sqrt(self.df / high_q), self.spread * math.sqrt(self.df / low_q)

    @property
    def upper(self) -> float:
        """The one-sided upper confidence bound the margins are chosen at."""
        return self.interval()[1]


def _side_squares(values: Iterable[float | None]) -> tuple[float, int]:
    """The squared deviations of a side's log values from their mean, and their n - 1 (0, 0
    with fewer than two values)."""
    logs = [math.log(v) for v in values if v is not None and v > 0]
    if len(logs) < 2:
        return 0.0, 0
    mean = math.fsum(logs) / len(logs)
    return math.fsum((x - mean) ** 2 for x in logs), len(logs) - 1


def pooled(records: Sequence[CompareRecord], name: str) -> Spread | None:
    """The metric's spread pooled within the sides of these comparisons (None: no side with
    two values of it)."""
    squares, df = 0.0, 0
    for record in records:
        for side in (BASELINE, CANDIDATE):
            s, n = _side_squares(side_values(record.runs, side, name))
            squares += s
            df += n
    if df == 0:
        return None
    return Spread(math.sqrt(squares / df), df)


@dataclass(frozen=True)
class MarginRow:
    """The margin a comparison of `pairs` pairs can bound at a spread: at its upper bound (the
    choice) and at the estimate (its sensitivity), with the confidence of the last look."""

    pairs: int
    confidence: float
    margin: float
    at_estimate: float


def margin_row(metric: Metric, spread: Spread, pairs: int, family: int) -> MarginRow:
    confidence = margins.confidence_at(metric, pairs, family)
    return MarginRow(
        pairs,
        confidence,
        margins.chosen_margin(spread.upper, pairs, confidence),
        margins.chosen_margin(spread.spread, pairs, confidence),
    )


def margin_rows(
    metric: Metric, spread: Spread, family: int, pairs: Sequence[int] = _PAIRS_SHOWN
) -> list[MarginRow]:
    """The margins each number of pairs can bound at this spread, in a comparison of `family`
    metrics."""
    return [margin_row(metric, spread, n, family) for n in pairs]
