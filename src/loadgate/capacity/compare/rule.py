"""The comparison rule: is the candidate worse than the baseline, beyond the noise of repeats?

Baseline (A) and candidate (B) run interleaved on one machine, in pairs (`schedule`), so slow
drift of the machine falls on both sides. The metrics, their margins and the pairs before each
may be decided are one table here (`METRICS`). Each metric gets one decision per look
(`decide`); how many pairs run and at which confidence each look decides (a fixed number of
repeats: one look at 95 %; pairs added until every metric is decided: a stricter confidence per
look) is `sequential`.

- Values are positive; the rule works on their logarithms, so a change is a ratio and noise is
  a coefficient of variation. d is the candidate's worsening, mean(ln B) - mean(ln A) for a
  metric where lower is better, mean(ln A) - mean(ln B) where higher is better; its relative
  size is exp(d) - 1 (+10 % means 10 % worse).
- Each side's variance s^2 is its sample variance, at least r^2/3 where r = ln(1 + resolution):
  a value known only within ±resolution (a capacity from a search at ±5 %) is never more exact
  than a uniform error over that range, even when the repeats agree.
- Welch: se = sqrt(s_A^2/n_A + s_B^2/n_B), Welch-Satterthwaite degrees of freedom, t the
  one-sided 95 % quantile of Student's t; the bounds L = d - t*se and U = d + t*se (a 90 %
  interval, each bound one-sided 95 %).
- With m = ln(1 + margin), the minimum practical effect (the table's margin):
  **regression** when L > 0 and d >= m: worse beyond the noise, and by at least the margin;
  **no regression** when U <= m: any worsening is below the margin, with 95 % confidence
  (the confidence is a parameter: a sequential look passes a higher one);
  **too noisy** otherwise, or when a side has fewer than 2 measured values.
- When too noisy, the repeats needed are the smallest n per side for which t*se, at the
  observed (floored) variances, would be at most m/2: bounds that narrow decide every estimate
  at least m/2 away from the margin (an effect close to the margin stays undecidable). It is an
  estimate: with 3 repeats the observed spread is itself uncertain.

Overall: a regression in any metric is a regression (exit 1); else a too-noisy metric makes the
comparison too noisy (exit 2); else no regression (exit 0). A metric may be a **guard**
(`Metric.guard`, `loadgate compare --guards`): it counts only when it finds a regression, and
its "too noisy" does not hold the comparison at too noisy. The default compare's margins
are chosen from each metric's spread so that its budget decides them (`margins`); a guard
suits a metric compared at a margin its pairs cannot bound.

Why this rule: with N as small as 3, a rank test cannot reach 95 % (3 against 3 gives at best
p = 0.05), while Welch's interval uses the spread it sees and widens honestly with few repeats.
A false "regression" between identical stacks needs L > 0, which happens at most 5 % of the
time when the noise is near log-normal, and less with the margin condition. A real 10 % drop
in capacity at 2-3 % noise is found with 3 to 5 repeats (see tests/unit/test_capacity_compare).
"""

from __future__ import annotations

import hashlib
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from loadgate import extras
from loadgate.records import fields as f

REGRESSION = "regression"
NO_REGRESSION = "no-regression"
TOO_NOISY = "too-noisy"
DECISIONS = (REGRESSION, NO_REGRESSION, TOO_NOISY)
EXIT_CODES = {NO_REGRESSION: 0, REGRESSION: 1, TOO_NOISY: 2}

HIGHER = "higher"
LOWER = "lower"

BASELINE = "baseline"
CANDIDATE = "candidate"
ORDERS = ("random", "ABAB", "ABBA")
DEFAULT_ORDER = "random"

CONFIDENCE = 0.95  # one-sided, for each bound
MAX_REPEATS = 1000

RULE = (
    "Per metric, on log values (d = the candidate's mean worsening, exp(d)-1 relative): "
    "variances floored at ln(1+resolution)^2/3; Welch standard error and degrees of freedom; "
    "L, U = d -/+ t(0.95, df) * se; m = ln(1+margin). Regression if L > 0 and d >= m; "
    "no regression if U <= m; otherwise too noisy (also with fewer than 2 values a side), "
    "with the repeats per side that would make t * se <= m/2 at the observed spread. Overall: any "
    "regression -> regression (exit 1); else any too noisy metric that is not a guard -> too "
    "noisy (exit 2); else 0. "
    "Sequential (pairs added until every metric but the guards is decided): each look's bounds "
    "at 1 - its share of the 0.05 (alpha spending: O'Brien-Fleming's curve at pairs / max "
    "pairs, shares summing to 0.05; the last look of a comparison its budget or its most pairs "
    "ends takes what is left), a decision final at the look that makes it."
)


@dataclass(frozen=True)
class Metric:
    name: str
    better: str = field(metadata=f.one_of((HIGHER, LOWER), f"{HIGHER} or {LOWER}"))
    margin: float  # minimum practical effect, relative (0.05: 5 %)
    unit: str
    resolution: float = 0.0  # relative half-width of one value's measurement (search precision)
    # A sequential comparison decides this metric only from this many pairs on (its first look).
    min_pairs: int = 2
    # A guard counts only when it finds a regression: its "too noisy" neither makes the
    # comparison too noisy nor keeps it running (`overall`, sequential.stop_reason).
    guard: bool = False

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "name": self.name,
            "better": self.better,
            "margin": f.real(self.margin),
            "unit": self.unit,
            "resolution": f.real(self.resolution),
            "min_pairs": self.min_pairs,
        }
        if self.guard:  # written only when set: records from before guards read back the same
            data["guard"] = True
        return data

    @classmethod
    def from_dict(cls, data: object, where: str = "metric") -> Metric:
        return f.read(cls, data, where)


# The metrics: one table holding each one's margin (the smallest worsening that counts: the
# "minimum practical effect") and the pairs before a sequential comparison may decide it.
# Where the numbers come from: the margins of the first comparison rule (issue 11: 5 % for
# throughput and CPU, 10 % for p99, a p99 being a tail and noisier), carried over to the
# pressure metrics of issue 17; the minimum pairs are 2 (the fewest that show a spread) and 3
# for the pressure p99 (a tail at one rate). Measured against them (docs/measurements.md,
# "Comparisons": five A/A comparisons of rev221): on the development VM, quiet inside but
# sharing its host's cores, one run of a stack spread from the next by a CV of about 16 %
# (saturation), 99 % (pressure p99) and 15 % (pressure CPU), so no margin both decides there
# within the budget (about 3x the CV) and stays below the smallest regression worth a red CI
# job. The margins are kept at that smallest regression; where the machine is that noisy the
# comparison says too noisy, with the pairs a decision would need.
#
# The collector's CPU over k6's CPU in the same run (`pressure-cpu-k6`) cancels most of that
# noise: the host's slow stretches slow k6 as much as the collector, and k6's work per record
# is the same on both sides. Within one comparison (the same pressure rate) it spread by a CV
# of 0.5-8 % (median 3 %) a side where the collector's CPU per 1,000 records spread by
# 6-24 % (the same 52 runs: docs/measurements.md, "A machine-speed reference"); the default
# comparison uses it in place of `pressure-cpu`. On a quiet day (2026-11-26, five A/A
# comparisons at the defaults, pooled over 30 degrees of freedom) the spreads were 6.6 %
# (saturation), 46 % (pressure p99) and 2.3 % (pressure-cpu-k6): the last decided in 2 of 5
# tries within the budget, the first two in 1 and 0.
#
# Chosen from those spreads (2026-11-26), for the default compare's 15 minutes (4 pairs; the
# last look's bounds at 96.1 %, `sequential`): a metric can say "no regression" only if
# its margin exceeds the bounds' half-width, about 2.2 x CV x sqrt(2/4):
# - saturation: CV 6.6 % -> half-width about 10 %, so its margin is **10 %** (5 % would need
#   about 16 pairs, an hour; recomputed from the five A/A tries, 10 % clears 4 of them);
# - pressure-cpu-k6: CV 2.3 % -> about 3.6 %, below its 5 % margin (kept);
# - pressure p99: CV 46 % -> about 72 %: no margin of use bounds it, so the default compare
#   makes it a guard (values.DEFAULT_GUARDS): it counts only when it finds a
#   regression. Its 10 % margin is kept for when it is compared with more pairs.
#
# With the CPU split (2026-11-26, evening; stack/cpu_split.py; 22 df from four comparisons):
# saturation 3.4 % (its 10 % margin decides in 3-4 pairs), pressure p99 17.9 %, the collector's
# CPU per 1,000 records 3.3 %, and pressure-cpu-k6 4.2 % and biased: k6 alone on its CPU spends
# more or less per record depending on the collector it talks to, so it is no longer a default.
#
# The default metrics' margins now (2026-11-27) come from their spread (`margins`, which
# holds the figures: seven A/A comparisons, 38 df): the smallest whole 5 % whose bounds the
# default budget's 4 pairs make at most half the margin wide. Saturation keeps 10 %; the
# pressure CPU's is 10 % and the pressure p99's 60 % (a tail at 70 % of saturation, with the
# collector and Loki sharing one core, moves about 16 % from run to run), and neither is a
# guard any more. `--margins` sets narrower ones for a compare given more pairs.
#
#   name                               better  margin  unit           min pairs
SATURATION = Metric("saturation_per_min", HIGHER, 0.10, "records/min", min_pairs=2)
PRESSURE_P99 = Metric("pressure_p99_ms", LOWER, 0.60, "ms", min_pairs=3)
PRESSURE_CPU = Metric("pressure_cpu_s_per_1000_records", LOWER, 0.10, "CPU s", min_pairs=2)
PRESSURE_CPU_K6 = Metric("pressure_cpu_per_k6_cpu", LOWER, 0.05, "per k6 CPU s", min_pairs=2)
CAPACITY = Metric("capacity_per_min", HIGHER, 0.05, "records/min", min_pairs=2)
P99_AT_RATE = Metric("p99_ms", LOWER, 0.10, "ms", min_pairs=2)
CPU_PER_1000 = Metric("cpu_s_per_1000_records", LOWER, 0.05, "CPU s", min_pairs=2)
METRICS = (
    SATURATION, PRESSURE_P99, PRESSURE_CPU, PRESSURE_CPU_K6, CAPACITY, P99_AT_RATE, CPU_PER_1000
)  # fmt: skip


def capacity_metric(search_precision: float) -> Metric:
    """The capacity metric for values from searches at this precision (their resolution)."""
    return replace(CAPACITY, resolution=search_precision)


def cpu_per_1000(
    cpu_mean_cores: float | None, duration_s: float | None, records: float | None
) -> float | None:
    """Collector CPU-seconds per 1,000 records accepted: mean cores x seconds / records x 1000.
    None when a figure is missing or no record was accepted."""
    if cpu_mean_cores is None or duration_s is None or not records or records <= 0:
        return None
    return cpu_mean_cores * duration_s / records * 1000


@dataclass(frozen=True)
class ScheduledRun:
    position: int  # order of the run, from 0
    side: str  # BASELINE or CANDIDATE
    repeat: int  # from 1

    def to_dict(self) -> dict[str, Any]:
        return {"position": self.position, "side": self.side, "repeat": self.repeat}


def schedule(repeats: int, order: str = "ABAB", seed: str = "") -> list[ScheduledRun]:
    """The runs of a comparison, interleaved: A B A B ... ("ABAB"); with the pair's order
    swapped every other pair, A B B A A B ... ("ABBA"), which also cancels a linear drift; or
    ("random") each pair after the first in an order drawn from `seed` (the comparison's id:
    the same id, the same schedule). The first pair is always A B: its baseline saturation sets
    the pressure rate. Random order is what keeps a machine whose speed drifts in a rhythm near
    a pair's length from slowing one side in every pair: an A/A comparison with ABAB on the
    development VM was called a regression when its slow stretches fell on the candidate's
    slot in all 4 pairs."""
    if not 1 <= repeats <= 100:
        raise ValueError(f"repeats: must be an integer between 1 and 100; got {repeats!r}")
    if order not in ORDERS:
        raise ValueError(f"order: must be one of {', '.join(ORDERS)}; got {order!r}")
    runs: list[ScheduledRun] = []
    for i in range(repeats):
        pair = (BASELINE, CANDIDATE)
        if (order == "ABBA" and i % 2 == 1) or (order == "random" and i and _swapped(seed, i)):
            pair = (CANDIDATE, BASELINE)
        for side in pair:
            runs.append(ScheduledRun(len(runs), side, i + 1))
    return runs


def _swapped(seed: str, pair_index: int) -> bool:
    """Whether pair `pair_index` (0-based) runs the candidate first: one bit of a hash of the
    seed and the pair (stable across processes, unlike hash())."""
    digest = hashlib.sha256(f"{seed}/{pair_index}".encode()).digest()
    return bool(digest[0] & 1)


@dataclass(frozen=True)
class MetricDecision:
    """One metric's decision. `change`, `lower` and `upper` are relative worsenings of the
    candidate (+0.10: 10 % worse) with their one-sided 95 % bounds; means are geometric."""

    metric: Metric
    decision: str = field(metadata=f.one_of(DECISIONS))
    baseline: tuple[float | None, ...]
    candidate: tuple[float | None, ...]
    baseline_mean: float | None
    candidate_mean: float | None
    change: float | None
    lower: float | None
    upper: float | None
    df: float | None
    repeats_needed: int | None  # pairs (repeats a side) that would decide, at the spread seen
    reason: str
    confidence: float | None = None  # one-sided, of each bound (lower at a sequential look)
    pairs: int | None = None  # the pairs the decision rests on (a sequential one: its look)
    looks: int | None = None  # the looks a sequential comparison may take at this metric

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.decision]

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric.to_dict(),
            "decision": self.decision,
            "baseline": [f.real(v) for v in self.baseline],
            "candidate": [f.real(v) for v in self.candidate],
            "baseline_mean": f.real(self.baseline_mean),
            "candidate_mean": f.real(self.candidate_mean),
            "change": f.real(self.change),
            "lower": f.real(self.lower),
            "upper": f.real(self.upper),
            "df": f.real(self.df),
            "repeats_needed": self.repeats_needed,
            "reason": self.reason,
            "confidence": f.real(self.confidence),
            "pairs": self.pairs,
            "looks": self.looks,
        }

    @classmethod
    def from_dict(cls, data: object, where: str = "decision") -> MetricDecision:
        return f.read(cls, data, where)


def _t(df: float, confidence: float) -> float:
    """Student's t quantile (the normal one for infinite degrees of freedom)."""
    special = extras.load("scipy.special")  # loadgate[stats]
    return float(special.stdtrit(df, confidence))


def _welch(va: float, na: int, vb: float, nb: int) -> tuple[float, float]:
    """Standard error of the difference of means and Welch-Satterthwaite degrees of freedom."""
    a, b = va / na, vb / nb
    se = math.sqrt(a + b)
    denominator = a * a / (na - 1) + b * b / (nb - 1)
    return se, (a + b) ** 2 / denominator if denominator > 0 else math.inf


def interval_half_width(va: float, na: int, vb: float, nb: int, confidence: float) -> float:
    """t(confidence, Welch's df) * se: how far each bound lies from the change, in logs, for
    sides of these variances and sizes."""
    se, df = _welch(va, na, vb, nb)
    return _t(df, confidence) * se


def repeats_needed(
    va: float, vb: float, half_width: float, start: int, confidence: float
) -> int | None:
    """The smallest n per side, from `start`, whose interval half-width would be at most
    `half_width` (None past MAX_REPEATS; the half-width shrinks as n grows, so a bisection
    over n finds it)."""

    def narrow_enough(n: int) -> bool:
        return interval_half_width(va, n, vb, n, confidence) <= half_width

    lo, hi = max(2, start), MAX_REPEATS
    if half_width <= 0 or not narrow_enough(hi):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if narrow_enough(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _pct(x: float) -> str:
    return f"{x * 100:+.1f} %"


def decide(
    metric: Metric,
    baseline: Sequence[float | None],
    candidate: Sequence[float | None],
    confidence: float = CONFIDENCE,
) -> MetricDecision:
    """The decision for one metric from its repeats (None: a repeat that did not measure it).
    Values must be positive: a zero or negative value raises ValueError naming it."""
    _check_inputs(metric, baseline, candidate, confidence)
    a = [math.log(v) for v in baseline if v is not None]
    b = [math.log(v) for v in candidate if v is not None]
    mean_a = math.exp(statistics.fmean(a)) if a else None
    mean_b = math.exp(statistics.fmean(b)) if b else None

    def result(decision: str, reason: str, **more: Any) -> MetricDecision:
        values: dict[str, Any] = dict.fromkeys(("change", "lower", "upper", "df", "repeats_needed"))
        values.update(more)
        return MetricDecision(
            metric=metric,
            decision=decision,
            baseline=tuple(baseline),
            candidate=tuple(candidate),
            baseline_mean=mean_a,
            candidate_mean=mean_b,
            reason=reason,
            confidence=confidence,
            **values,
        )

    if len(a) < 2 or len(b) < 2:
        return result(
            TOO_NOISY,
            f"{len(a)} baseline and {len(b)} candidate values measured; at least 2 a side "
            "are needed to see the spread",
            repeats_needed=2,
        )
    bounds = _Bounds.of(metric, a, b, confidence)
    m = math.log1p(metric.margin)
    figures = bounds.figures()
    span = bounds.span()
    if bounds.lo > 0 and bounds.d >= m:
        return result(
            REGRESSION,
            f"{span}: worse beyond the noise and by at least {metric.margin:.0%}",
            **figures,
        )
    if bounds.hi <= m:
        return result(
            NO_REGRESSION, f"{span}: any worsening is below {metric.margin:.0%}", **figures
        )
    needed = repeats_needed(bounds.va, bounds.vb, m / 2, max(len(a), len(b)) + 1, confidence)
    more = (
        f"about {needed} repeats a side would narrow the bounds to ±{metric.margin / 2:.1%}"
        if needed is not None
        else f"more than {MAX_REPEATS} repeats a side would be needed at this spread"
    )
    return result(TOO_NOISY, f"{span}: {more}", repeats_needed=needed, **figures)


def _check_inputs(
    metric: Metric,
    baseline: Sequence[float | None],
    candidate: Sequence[float | None],
    confidence: float,
) -> None:
    """ValueError for a confidence outside (0.5, 1) or a value that is not positive."""
    if not 0.5 < confidence < 1:
        raise ValueError(f"confidence: must be between 0.5 and 1 (one-sided); got {confidence}")
    for side, values in ((BASELINE, baseline), (CANDIDATE, candidate)):
        for i, v in enumerate(values):
            if v is not None and not (math.isfinite(v) and v > 0):
                raise ValueError(f"{metric.name} {side}[{i}]: must be a positive number; got {v}")


@dataclass(frozen=True)
class _Bounds:
    """Welch's interval of the candidate's worsening, in logarithms: d and its bounds lo, hi,
    with the sides' (floored) variances and the degrees of freedom."""

    d: float
    lo: float
    hi: float
    df: float
    va: float
    vb: float

    @classmethod
    def of(cls, metric: Metric, a: list[float], b: list[float], confidence: float) -> _Bounds:
        floor = math.log1p(metric.resolution) ** 2 / 3
        va = max(statistics.variance(a), floor)
        vb = max(statistics.variance(b), floor)
        diff = statistics.fmean(b) - statistics.fmean(a)
        d = diff if metric.better == LOWER else -diff
        se, df = _welch(va, len(a), vb, len(b))
        t = _t(df, confidence)
        return cls(d, d - t * se, d + t * se, df, va, vb)

    def figures(self) -> dict[str, Any]:
        return {
            "change": _relative(self.d),
            "lower": _relative(self.lo),
            "upper": _relative(self.hi),
            "df": self.df if math.isfinite(self.df) else None,
        }

    def span(self) -> str:
        return (
            f"{_pct(_relative(self.d))} worse "
            f"(bounds {_pct(_relative(self.lo))} .. {_pct(_relative(self.hi))})"
        )


def _relative(log_ratio: float) -> float:
    """exp(x) - 1, held finite: a bound of a look at 99.8 % with one degree of freedom can be
    hundreds in logarithms, past what a float holds."""
    return math.expm1(min(log_ratio, 700.0))


def overall(decisions: Sequence[MetricDecision]) -> str:
    """Any regression -> REGRESSION; else a deciding metric (not a guard) too noisy, or none
    at all -> TOO_NOISY; else NO_REGRESSION. A guard's "too noisy" does not count: a guard
    only ever adds a regression."""
    if any(d.decision == REGRESSION for d in decisions):
        return REGRESSION
    deciding = [d for d in decisions if not d.metric.guard]
    if not deciding or any(d.decision == TOO_NOISY for d in deciding):
        return TOO_NOISY
    return NO_REGRESSION


def exit_code(decisions: Sequence[MetricDecision]) -> int:
    """1 on a regression, 0 on none, 2 when too noisy to decide."""
    return EXIT_CODES[overall(decisions)]
