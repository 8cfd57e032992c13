"""Where the knee lies, with a stated confidence: the interval a search's holds show when each
hold may be misclassified by noise near the knee. Pure; `state.result_of` calls it.

A passing and a failing hold a precision width apart (±p) are not a ±p confidence: the knee
moves from hold to hold (the machine, the scheduler, the page cache), so a hold just above it
can pass and one just below can fail. On a simulated pipeline whose knee moves 3 % from step to
step (log-normal), the holds' bracket held the knee in 75 % of 10,000 seeded searches, at 6 % in
57 % (benchmarks/search_simulation.py).

The model: a hold at rate r passes when r is at most the knee of that step, K e^eps with eps
normal, mean 0, standard deviation `step_noise` (sigma), independent from step to step; so it
passes with probability Phi(ln(K / r) / sigma). K is the knee (the rate a hold passes half the
time). With a flat prior on ln K, the hold trials the search ran give K a posterior

    p(ln K) ~ prod_passes Phi((ln K - ln r) / sigma) * prod_failures Phi((ln r - ln K) / sigma)

whose central `confidence` interval is reported, widened to the holds' own bracket [C, F] when
it is narrower (without noise the knee is in [C, F]). Averaged over where the knee falls, a
posterior interval covers it in `confidence` of the searches when the step noise is
`step_noise`: exactly when the search chose each rate from earlier outcomes alone (the
likelihood does not depend on the stopping rule). Here the rates also follow the saturation
reading, which the posterior leaves out (its bias is unknown: 0-15 % low, more under heavy
overload), so the simulation checks the coverage; less noise, more coverage.
Simulated (benchmarks/search_simulation.py, default plan, 10,000 searches a row): at 7 % step
noise 90.8 %, at 6 % 94.0 %, at 3 % 99.6 %, without noise 100 %.

What counts as a trial: every attempt of a hold (a rate that passed counts its passes only: a
failure a retry overruled was a glitch, not the knee), and every failure of a probe (a short
step that fails, a hold would fail too); a probe's pass says nothing of a hold, a saturation
step is not judged.

With two holds (a pass at C, a failure at F = 1.105 C) and the defaults (90 %, 7 %) the
interval reaches 7 % below C and 7 % above F (100,000 and 110,500: 92,900-119,000, ±12.3 %);
at 3 % step noise ±7.1 %. Each further hold near the knee narrows it: both deciding holds run
twice, ±8.8 % at 7 %.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

_SPAN = 8.0  # the posterior's window: this many sigma beyond the lowest and highest rate tried
_STEP = 0.1  # its grid: this many sigma apart
_MAX_POINTS = 4000


@dataclass(frozen=True)
class Trials:
    """The judged attempts at one rate the interval counts: how many passed or failed."""

    rate: int
    passes: int
    failures: int


def log_phi(x: float) -> float:
    """ln Phi(x), the standard normal CDF's logarithm, without underflow far in the tail."""
    if x > -30:
        return math.log(0.5 * math.erfc(-x / math.sqrt(2)))
    # Phi(x) ~ phi(x) / -x for x -> -inf
    return -x * x / 2 - math.log(-x) - 0.5 * math.log(2 * math.pi)


def posterior(
    trials: Sequence[Trials], sigma: float, lo: float, hi: float, points: int
) -> tuple[list[float], list[float]]:
    """The posterior of ln K on `points` + 1 points from `lo` to `hi` (natural logs of rates),
    normalised to sum to 1: (ln K values, weights)."""
    ks = [lo + (hi - lo) * i / points for i in range(points + 1)]
    logs = [math.log(t.rate) for t in trials]
    ll: list[float] = []
    for k in ks:
        total = 0.0
        for t, r in zip(trials, logs, strict=True):
            if t.passes:
                total += t.passes * log_phi((k - r) / sigma)
            if t.failures:
                total += t.failures * log_phi((r - k) / sigma)
        ll.append(total)
    top = max(ll)
    weights = [math.exp(x - top) for x in ll]
    whole = sum(weights)
    return ks, [w / whole for w in weights]


def _quantile(ks: list[float], weights: list[float], q: float) -> float:
    """The q-quantile of the discrete posterior, interpolated within the grid step."""
    acc = 0.0
    for i, w in enumerate(weights):
        if acc + w >= q:
            share = (q - acc) / w if w > 0 else 0.0
            step = ks[1] - ks[0]
            return ks[i] - step / 2 + share * step
        acc += w
    return ks[-1]


def round_down(rate: float) -> int:
    """Three significant figures, rounded down (the interval only widens)."""
    if rate < 1000:
        return max(1, math.floor(rate))
    quantum = 10 ** (math.floor(math.log10(rate)) - 2)
    return math.floor(rate / quantum) * quantum


def round_up(rate: float) -> int:
    """Three significant figures, rounded up."""
    if rate < 1000:
        return math.ceil(rate)
    quantum = 10 ** (math.floor(math.log10(rate)) - 2)
    return math.ceil(rate / quantum) * quantum


def knee_interval(
    trials: Sequence[Trials], capacity: int, failing: int, step_noise: float, confidence: float
) -> tuple[int, int]:
    """(X, Y): the knee between X and Y with `confidence`, from the judged `trials`, for a
    search whose highest passing hold is `capacity` (C) and lowest failure `failing` (F);
    rounded outwards to three significant figures, and never narrower than [C, F]."""
    if step_noise <= 0 or not trials:
        return capacity, failing
    rates = [capacity, failing, *(t.rate for t in trials)]
    lo = math.log(min(rates)) - _SPAN * step_noise
    hi = math.log(max(rates)) + _SPAN * step_noise
    points = min(_MAX_POINTS, math.ceil((hi - lo) / (_STEP * step_noise)))
    ks, weights = posterior(trials, step_noise, lo, hi, points)
    tail = (1 - confidence) / 2
    low = math.exp(_quantile(ks, weights, tail))
    high = math.exp(_quantile(ks, weights, 1 - tail))
    return min(capacity, round_down(low)), max(failing, round_up(high))
