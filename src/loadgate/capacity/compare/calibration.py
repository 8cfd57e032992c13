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
- **The stacks' level** (`level`): the spread of an A/A comparison's mean worsening beyond what
  its pairs show, over A/A comparisons on kept stacks (each draws its two stacks once: a level
  one holds for the whole comparison is in its mean, not in its pairs' spread); the rule adds
  it to every comparison on kept stacks.
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
from loadgate.capacity.compare.stack_modes import KEPT

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
        diffs = _pair_differences(record, name)
        if len(diffs) < 2:
            continue
        mean = math.fsum(diffs) / len(diffs)
        squares += math.fsum((d - mean) ** 2 for d in diffs)
        df += len(diffs) - 1
    if df == 0:
        return None
    return Spread(math.sqrt(squares / df), df)


@dataclass(frozen=True)
class Level:
    """The spread of an A/A comparison's mean worsening beyond what its pairs show, and its
    degrees of freedom: as many as the A/A comparisons on kept stacks it was measured over."""

    spread: float
    df: int


def _pair_differences(record: CompareRecord, name: str) -> list[float]:
    """ln B - ln A of each complete pair of the metric in a comparison."""
    a = side_values(record.runs, BASELINE, name)
    b = side_values(record.runs, CANDIDATE, name)
    return [
        math.log(y) - math.log(x)
        for x, y in zip(a, b, strict=False)
        if x is not None and y is not None and x > 0 and y > 0
    ]


def _mean_and_error(record: CompareRecord, name: str) -> tuple[float, float] | None:
    """A comparison's mean pair worsening (ln B - ln A) and its variance as its pairs show it
    (s^2 / n); None below 2 complete pairs."""
    diffs = _pair_differences(record, name)
    if len(diffs) < 2:
        return None
    mean = math.fsum(diffs) / len(diffs)
    variance = math.fsum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1)
    return mean, variance / len(diffs)


def level(records: Sequence[CompareRecord], name: str) -> Level | None:
    """The stacks' level of a metric (`rule.Metric.level_spread`), from the A/A comparisons on
    kept stacks among these with 2 complete pairs of it or more (None: fewer than 3). On kept
    stacks each side's stack is drawn once a comparison, so a level it holds is in the
    comparison's mean worsening but not in its pairs' spread. An A/A's true worsening is 0, so
    the mean square of their means less what their pairs explain (the mean of s_i^2 / n_i) is
    that level's variance (method of moments, on as many degrees of freedom as comparisons; 0
    when negative). Only A/As: comparisons of other sides, even the same ones again, may have
    had a true worsening that moved with the machine between them."""
    found = [
        x
        for r in records
        if r.aa and r.stacks == KEPT and (x := _mean_and_error(r, name)) is not None
    ]
    if len(found) < 3:
        return None
    square = math.fsum(m * m for m, _ in found) / len(found)
    explained = math.fsum(e for _, e in found) / len(found)
    return Level(math.sqrt(max(square - explained, 0.0)), len(found))


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


def detect_row(metric: Metric, spread: Spread, pairs: int, family: float) -> DetectRow:
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
    metric: Metric, spread: Spread, family: float, pairs: Sequence[int] = _PAIRS_SHOWN
) -> list[DetectRow]:
    """What each number of pairs can tell at this paired spread, in a comparison that divides
    its alpha by `family` for this metric (sequential.family_of)."""
    return [detect_row(metric, spread, n, family) for n in pairs if n >= metric.min_pairs]
