"""The interval arithmetic of the paired rule on log values: the sample variance, Student's t
and the F quantiles (scipy, `loadgate[stats]`), and the fewest pairs that narrow the bounds.
(The module kept its name from the unpaired Welch rule it served before issue 38.)"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache
from types import ModuleType

from loadgate import extras

MAX_REPEATS = 1000  # the most repeats a side any plan is asked to run


def t_quantile(df: float, confidence: float) -> float:
    """Student's t quantile (the normal one for infinite degrees of freedom)."""
    return float(_special().stdtrit(df, confidence))


@cache
def _special() -> ModuleType:
    return extras.load("scipy.special")  # loadgate[stats]


def variance(logs: list[float]) -> float:
    """The sample variance (n - 1), in floats: statistics.variance's exact fractions cost a
    simulation of 10,000 comparisons most of its time, for digits past the 12th."""
    mean = math.fsum(logs) / len(logs)
    return math.fsum((x - mean) ** 2 for x in logs) / (len(logs) - 1)


def fewest(start: int, enough: Callable[[int], bool]) -> int | None:
    """The smallest n from `start` to MAX_REPEATS for which `enough(n)`, which must hold for
    every n after it once it holds (a bisection); None when not even at MAX_REPEATS."""
    lo, hi = start, MAX_REPEATS
    if not enough(hi):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if enough(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def f_quantile(dfn: int, dfd: int, level: float) -> float:
    """The F distribution's quantile at `level` with (dfn, dfd) degrees of freedom (infinite
    when dfn is 0: no own spread to test)."""
    if dfn < 1:
        return math.inf
    return float(_special().fdtri(dfn, dfd, level))


def standard_error(
    spread: float, df: float, pairs: int, level: tuple[float, int] = (0.0, 0)
) -> tuple[float, float]:
    """The standard error of the mean of `pairs` pair worsenings spreading by `spread` (known
    on `df`), with a level term (its spread L and df: what every pair of one comparison
    shares, so no number of pairs narrows it): sqrt(s^2/n + L^2), on Welch-Satterthwaite's
    degrees of freedom; sqrt(s^2/n) on `df` without one."""
    of_mean = spread * spread / pairs
    level_spread, level_df = level
    if level_spread <= 0 or level_df < 1:
        return math.sqrt(of_mean), df
    total = of_mean + level_spread * level_spread
    return math.sqrt(total), total * total / (of_mean * of_mean / df + level_spread**4 / level_df)


def pairs_needed(
    spread: float,
    prior_df: int,
    half_width: float,
    start: int,
    confidence: float,
    level: tuple[float, int] = (0.0, 0),
) -> int | None:
    """The fewest pairs, from `start`, whose paired bounds at this spread of a pair's worsening
    would be at most `half_width` either side, n pairs having prior_df + n - 1 degrees of
    freedom (a calibrated spread's and their own; None past MAX_REPEATS). `level`: a level term
    (its spread, its df) no number of pairs narrows (`standard_error`)."""
    if half_width <= 0:
        return None

    def narrow_enough(n: int) -> bool:
        error, df = standard_error(spread, prior_df + n - 1, n, level)
        return t_quantile(df, confidence) * error <= half_width

    return fewest(max(2, start), narrow_enough)
