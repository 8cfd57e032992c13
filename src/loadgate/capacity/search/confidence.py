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

The step noise sigma is measured where it can be (`step_noise_of`): a value measured elsewhere
and given to the plan (`SearchPlan.measured_step_noise`: the saturation spread `loadgate
calibrate` pools, or the holds of repeated searches on the stack, `spread.measured_step_noise`);
else what the search's own holds show, fitted by maximum likelihood (`fitted_step_noise`), when
they contradict each other (a rate passed above one that failed: only a moving knee does that);
else the plan's stated `step_noise`, 10 % by default. Simulated (benchmarks/search_simulation.py,
default plan, 500 seeded searches a row), the interval held the true knee at 3, 5, 7 and 10 %
step noise in 100, 98.6, 95.8 and 91.4 % of searches at the stated 10 %, and in 92.8, 92.4, 92.6
and 93.0 % given the noise as measured (with MEASURED_NOISE_MARGIN); with the 7 % stated
before, 83.6 % at 10 %.

What counts as a trial: every attempt of a hold, passes and failures alike (a failure a retry
overruled is evidence too: dropping it would move the knee up), and every failure of a probe (a
short step that fails, a hold would fail too); a probe's pass says nothing of a hold, a
saturation step is not judged.

With two holds (a pass at C, a failure at F = 1.105 C) and 90 % at 7 % step noise the interval
reaches 7 % below C and 7 % above F (100,000 and 110,500: 92,900-119,000, ±12.3 %); at 3 % step
noise ±7.1 %, at the stated 10 % ±17 % (89,000-125,000). Each further hold near the knee narrows
it: both deciding holds run twice, ±8.8 % at 7 %.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

_SPAN = 8.0  # the posterior's window: this many sigma beyond the lowest and highest rate tried
_STEP = 0.1  # its grid: this many sigma apart
_MAX_POINTS = 4000

# The step noise the interval allows for when nothing measured it: the simulation's coverage is
# at least 90 % up to this (benchmarks/search_simulation.py).
DEFAULT_STEP_NOISE = 0.10
# Where the step noise the interval allowed for came from (`SearchResult.step_noise_source`).
NOISE_MEASURED = "measured"  # measured elsewhere and given: SearchPlan.measured_step_noise
NOISE_HOLDS = "holds"  # fitted to the search's own holds, which contradicted each other
NOISE_STATED = "stated"  # nothing measured: the plan's step_noise (its default or as set)
NOISE_SOURCES = (NOISE_MEASURED, NOISE_HOLDS, NOISE_STATED)
# A measured step noise is allowed for with this margin: at the noise exactly, the interval held
# the simulated knee in 89.8-91.6 % of 2,000 searches a row at 3-10 % (the rates follow the
# saturation reading, which the posterior leaves out), with a tenth more in 91.8-93.3 %.
MEASURED_NOISE_MARGIN = 1.1
# The step noises a fit gives: 0.25 %-25 % (the plan's range), to a quarter of a percent.
_MIN_FIT_NOISE = 0.0025
_MAX_FIT_NOISE = 0.25


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
    ll = [_log_likelihood(trials, logs, k, sigma) for k in ks]
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


def contradicted(trials: Sequence[Trials]) -> bool:
    """Some rate passed above a rate that failed: outcomes a knee that never moves cannot
    give, so they measure its noise. (Outcomes ordered by rate are as likely without noise;
    a rate that both passed and failed is as likely for any noise with the knee right on it.)"""
    passed = [t.rate for t in trials if t.passes]
    failed = [t.rate for t in trials if t.failures]
    return bool(passed and failed) and max(passed) > min(failed)


def fitted_step_noise(trials: Sequence[Trials]) -> float | None:
    """The step noise the trials show: the sigma of the maximum-likelihood fit of the model's
    knee and noise to them (to the nearest 0.25 %, between 0.25 and 25 %); None unless they
    contradict each other (`contradicted`): then nothing measured it.

    In 1 / sigma and ln K / sigma the log-likelihood is a probit regression's, concave, so its
    maximum over ln K is concave in 1 / sigma too: two nested golden-section searches find it."""
    if not contradicted(trials):
        return None
    logs = [math.log(t.rate) for t in trials]
    lo, hi = min(logs), max(logs)

    def best(slope: float) -> float:
        sigma = 1 / slope
        return _argmax(lambda k: _log_likelihood(trials, logs, k, sigma), lo, hi)[1]

    slope, _ = _argmax(best, 1 / _MAX_FIT_NOISE, 1 / _MIN_FIT_NOISE)
    return min(_MAX_FIT_NOISE, max(_MIN_FIT_NOISE, round(400 / slope) / 400))


def _argmax(f: Callable[[float], float], lo: float, hi: float) -> tuple[float, float]:
    """(x, f(x)) at the maximum of a concave `f` on [lo, hi], to a millionth of the range."""
    ratio = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    c, d = b - ratio * (b - a), a + ratio * (b - a)
    fc, fd = f(c), f(d)
    while b - a > 1e-6 * (hi - lo):
        if fc >= fd:
            b, d, fd = d, c, fc
            c = b - ratio * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + ratio * (b - a)
            fd = f(d)
    x = (a + b) / 2
    return x, f(x)


def _log_likelihood(
    trials: Sequence[Trials], logs: Sequence[float], k: float, sigma: float
) -> float:
    """ln of the trials' likelihood for a knee of ln K = k moving sigma from step to step."""
    total = 0.0
    for t, r in zip(trials, logs, strict=True):
        if t.passes:
            total += t.passes * log_phi((k - r) / sigma)
        if t.failures:
            total += t.failures * log_phi((r - k) / sigma)
    return total


def allowed_noise(step_noise: float, source: str) -> float:
    """The step noise the interval allows for: a measured one with MEASURED_NOISE_MARGIN (at
    most the plan's 25 %), a stated one as stated."""
    if source == NOISE_STATED:
        return step_noise
    return min(_MAX_FIT_NOISE, step_noise * MEASURED_NOISE_MARGIN)


def step_noise_of(
    trials: Sequence[Trials], measured: float | None, stated: float
) -> tuple[float, str]:
    """(sigma, where it came from) for the interval: a value `measured` elsewhere; else what
    the trials show (`fitted_step_noise`); else the `stated` one (NOISE_SOURCES)."""
    if measured is not None:
        return measured, NOISE_MEASURED
    fitted = fitted_step_noise(trials)
    if fitted is not None:
        return fitted, NOISE_HOLDS
    return stated, NOISE_STATED
