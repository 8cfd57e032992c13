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
- **The paired spread** (`paired`): the standard deviation of a pair's worsening, ln B - ln A,
  pooled within comparisons (each one's deviations from its own mean): what the rule's bounds
  use (a drift both runs of a pair share is not in it).
- **What N pairs can tell**, N = 3..8 (`detect_rows`): the worsening a comparison of N pairs
  calls a regression 80 % of the time (`margins.detectable`) at the paired spread's upper bound
  and at the estimate, and whether it would be too noisy there.
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
_PAIRS_SHOWN = tuple(range(2, 9))


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


def paired(records: Sequence[CompareRecord], name: str) -> Spread | None:
    """The spread of a pair's worsening (ln B - ln A of each complete pair), pooled within
    these comparisons: each one's deviations from its own mean (None: no comparison with two
    complete pairs of it)."""
    squares, df = 0.0, 0
    for record in records:
        a = side_values(record.runs, BASELINE, name)
        b = side_values(record.runs, CANDIDATE, name)
        diffs = [
            math.log(y) - math.log(x)
            for x, y in zip(a, b, strict=False)
            if x is not None and y is not None and x > 0 and y > 0
        ]
        if len(diffs) < 2:
            continue
        mean = math.fsum(diffs) / len(diffs)
        squares += math.fsum((d - mean) ** 2 for d in diffs)
        df += len(diffs) - 1
    if df == 0:
        return None
    return Spread(math.sqrt(squares / df), df)


@dataclass(frozen=True)
class DetectRow:
    """What a comparison of `pairs` pairs can tell at a paired spread: the worsening it calls a
    regression 80 % of the time (at the spread's upper bound, and at the estimate), and whether
    it would be too noisy there, with the confidence of the last look."""

    pairs: int
    confidence: float
    detectable: float
    at_estimate: float
    noisy: bool


def detect_row(metric: Metric, spread: Spread, pairs: int, family: int) -> DetectRow:
    confidence = margins.confidence_at(metric, pairs, family)
    df = float(spread.df + pairs - 1)
    return DetectRow(
        pairs,
        confidence,
        margins.detectable(metric, spread.upper, df, pairs, confidence),
        margins.detectable(metric, spread.spread, df, pairs, confidence),
        margins.noisy(metric, spread.upper, df, pairs, confidence),
    )


def detect_rows(
    metric: Metric, spread: Spread, family: int, pairs: Sequence[int] = _PAIRS_SHOWN
) -> list[DetectRow]:
    """What each number of pairs can tell at this paired spread, in a comparison of `family`
    gating metrics."""
    return [detect_row(metric, spread, n, family) for n in pairs if n >= metric.min_pairs]
