"""The comparison rule: is the candidate worse than the baseline, beyond the noise of repeats,
and by how much? Every outcome says what its bounds show, and no more.

Baseline (A) and candidate (B) run interleaved on one machine, in pairs (`schedule`), so slow
drift of the machine falls on both sides. The metrics, their margins and the pairs before each
may be decided are one table here (`METRICS`; the default compare's margins come from the
margins file `loadgate calibrate` writes: margins_file, data/margins.yaml). Each metric gets
bounds per look (`decide`); how many pairs run and at which confidence each look bounds (a fixed
number of repeats: one look; pairs added until every metric is settled: a share of the error
per look) is `sequential`.

- Values are positive; the rule works on their logarithms, so a change is a ratio and noise is
  a coefficient of variation. d is the candidate's worsening, mean(ln B) - mean(ln A) for a
  metric where lower is better, mean(ln A) - mean(ln B) where higher is better; its relative
  size is exp(d) - 1 (+10 % means 10 % worse).
- Each side's variance s^2 is its sample variance, at least r^2/3 where r = ln(1 + resolution):
  a value known only within +-resolution (a capacity from a search at +-5 %) is never more
  exact than a uniform error over that range, even when the repeats agree.
- Welch: se = sqrt(s_A^2/n_A + s_B^2/n_B), Welch-Satterthwaite degrees of freedom, t the
  one-sided quantile of Student's t at the look's confidence c; the bounds
  L = d - t*se and U = d + t*se.
- **The error is the comparison's** (`ALPHA`, 5 %): K metrics compared share it equally
  (Bonferroni: alpha/K each), and each metric spends its share over its looks (`sequential`,
  `spending`). By the union bound, the chance that any lower bound of any metric at any look
  lies above the true worsening is at most 5 % (so is the chance that an A/A comparison says
  worse, or regression), and likewise for the upper bounds.
- With m = ln(1 + margin), the minimum practical effect (the table's margin), per metric:
  - **regression** when L >= m: the bounds show it worse by at least the margin;
  - **worse** when 0 < L < m: worse beyond the noise, not shown to reach the margin; when
    U < m too, "worse, by less than the margin";
  - **no regression** when L <= 0 and U < m: any worsening is below the margin, and none is
    shown;
  - **too noisy** when L <= 0 and U >= m (or a side has fewer than 2 measured values): the
    bounds show neither. The repeats that would decide are the smallest n per side for which
    t*se, at the observed (floored) variances, would be at most m/2 (an estimate: with 3
    repeats the observed spread is itself uncertain).
- Overall (`overall`): regression if any metric is (and, in the record, when a candidate run
  lost acknowledged records: record.CompareRecord.lost_records); else worse if any; else too
  noisy if any; else no regression. Exit codes (`exit_code`): 0 no regression, and worse unless
  `--fail-on worse`; 1 regression, and worse with `--fail-on worse`; 3 too noisy (2 is the
  command line's bad input or broken stack).

Why this rule: with N as small as 3, a rank test cannot reach 95 % (3 against 3 gives at best
p = 0.05), while Welch's interval uses the spread it sees and widens honestly with few repeats.
Deciding on the bounds alone (not on the estimate) makes every sentence printed true of them:
the earlier rule called "regression" an estimate past the margin with L > 0, and "no
regression" bounds of +23 % .. +59 % under a 60 % margin. Bonferroni over metrics rather than
a joint test: it needs no model of how the metrics of one run move together (p99 and CPU come
from the same run); at three metrics it makes a 4-pair comparison's bounds about 1.3x wider.
benchmarks/compare_simulation.py measures the default plan's errors and power.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from loadgate.capacity.compare import welch
from loadgate.records import fields as f

REGRESSION = "regression"
WORSE = "worse"
NO_REGRESSION = "no-regression"
TOO_NOISY = "too-noisy"
DECISIONS = (REGRESSION, WORSE, NO_REGRESSION, TOO_NOISY)
# `--fail-on`: the least outcome that fails (exit 1).
FAIL_ON = (REGRESSION, WORSE)
DEFAULT_FAIL_ON = REGRESSION
_EXIT_NO_REGRESSION = 0
EXIT_REGRESSION = 1
_EXIT_TOO_NOISY = 3  # 2 is the command line's: bad input, a broken stack

HIGHER = "higher"
LOWER = "lower"

BASELINE = "baseline"
CANDIDATE = "candidate"

ALPHA = 0.05  # the comparison's: shared by its metrics, each share spent over its looks
CONFIDENCE = 1 - ALPHA  # one metric, one look: each bound one-sided at 95 %

RULE = (
    "Per metric, on log values (d = the candidate's mean worsening, exp(d)-1 relative): "
    "variances floored at ln(1+resolution)^2/3; Welch standard error and degrees of freedom; "
    "L, U = d -/+ t(c, df) * se at each look's one-sided confidence c; m = ln(1+margin). "
    "Family-wise: the 5 % is the comparison's, alpha/K for each of K metrics, spent over its "
    "looks (O'Brien-Fleming's curve at pairs / max pairs; the last look of a comparison its "
    "budget or its most pairs ends takes what is left; a fixed number of repeats: one look at "
    "1 - 0.05/K); a metric's bounds are the highest L and the lowest U of its looks. "
    "Regression if L >= m; worse if 0 < L < m (by less than the margin if U < m too); no "
    "regression if L <= 0 and U < m; too noisy if L <= 0 and U >= m (also with fewer than 2 "
    "values a side), with the repeats per side that would make t * se <= m/2 at the observed "
    "spread. A metric is settled (final) at its first look with a regression or U < m; pairs "
    "are added until every metric is settled. Overall: a candidate run that lost acknowledged "
    "records, or any regression -> regression (exit 1); else any worse -> worse (exit 0, or 1 "
    "with --fail-on worse); else any too noisy -> too noisy (exit 3); else no regression (exit "
    "0)."
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

    def to_dict(self) -> dict[str, Any]:
        # Records of the previous rule may hold "guard" (a metric that counted only when it
        # found a regression, `--guards`): read and ignored, their verdicts are kept as
        # recorded (record.CompareRecord).
        return {
            "name": self.name,
            "better": self.better,
            "margin": f.real(self.margin),
            "unit": self.unit,
            "resolution": f.real(self.resolution),
            "min_pairs": self.min_pairs,
        }

    @classmethod
    def from_dict(cls, data: object, where: str = "metric") -> Metric:
        return f.read(cls, data, where)


# The metrics: one table holding each one's margin (the smallest worsening that counts: the
# "minimum practical effect") and the pairs before a sequential comparison may decide it. The
# minimum pairs are 2 (the fewest that show a spread) and 3 for the pressure p99 (a tail at one
# rate). The margins of the default metrics (saturation, pressure p99, pressure CPU) are those
# of the margins file shipped as package data (data/margins.yaml, which `loadgate calibrate`
# writes: the spreads behind them, their degrees of freedom, how they were measured); the
# command line reads that file, and tests/unit/test_compare_calibrate.py ties these three to
# it. The others keep the first rule's margins (issue 11: 5 % for throughput and CPU, 10 % for
# a p99). The history of the numbers is in docs/design-notes.md and docs/measurements.md.
#
#   name                               better  margin  unit           min pairs
SATURATION = Metric("saturation_per_min", HIGHER, 0.20, "records/min", min_pairs=2)
PRESSURE_P99 = Metric("pressure_p99_ms", LOWER, 1.90, "ms", min_pairs=3)
PRESSURE_CPU = Metric("pressure_cpu_s_per_1000_records", LOWER, 0.20, "CPU s", min_pairs=2)
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
class MetricDecision:
    """One metric's decision. `change` is the candidate's estimated relative worsening (+0.10:
    10 % worse), `lower` and `upper` its bounds, each one-sided; means are geometric."""

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
    confidence: float | None = None  # one-sided, of each bound at the look decided (or last)
    pairs: int | None = None  # the pairs the decision rests on (a sequential one: its look)
    looks: int | None = None  # the looks a sequential comparison may take at this metric
    # Regression, or the upper bound below the margin: no later look changes it.
    settled: bool = False
    # The confidence with which every bound of the comparison holds together (1 - ALPHA);
    # None in records of the previous rule, whose 5 % was each metric's.
    family: float | None = None

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
            # A decision of the previous rule (no family) is written back as it was read.
            **({} if self.family is None else {"settled": self.settled, "family": self.family}),
        }

    @classmethod
    def from_dict(cls, data: object, where: str = "decision") -> MetricDecision:
        return f.read(cls, data, where)


def _pct(x: float) -> str:
    return f"{x * 100:+.1f} %"


@dataclass(frozen=True)
class Bounds:
    """The bounds of the candidate's worsening, in logarithms: the estimate d (of the look the
    bounds end at), the bounds lo and hi, with that look's (floored) variances and degrees of
    freedom."""

    d: float
    lo: float
    hi: float
    df: float
    va: float
    vb: float

    @classmethod
    def of(cls, metric: Metric, a: list[float], b: list[float], confidence: float) -> Bounds:
        """Welch's bounds at this one-sided confidence, from log values."""
        floor = math.log1p(metric.resolution) ** 2 / 3
        va = max(welch.variance(a), floor)
        vb = max(welch.variance(b), floor)
        diff = statistics.fmean(b) - statistics.fmean(a)
        d = diff if metric.better == LOWER else -diff
        se, df = welch.se_and_df(va, len(a), vb, len(b))
        t = welch.t_quantile(df, confidence)
        return cls(d, d - t * se, d + t * se, df, va, vb)

    def within(self, earlier: Bounds | None) -> Bounds:
        """These bounds narrowed by an earlier look's, which hold with them (the union bound
        covers every look): the highest lower and the lowest upper bound."""
        if earlier is None:
            return self
        lo, hi = max(self.lo, earlier.lo), min(self.hi, earlier.hi)
        if lo > hi:  # looks that disagree: at least one bound failed; keep this look's own
            return self
        return replace(self, lo=lo, hi=hi)

    def figures(self) -> dict[str, Any]:
        return {
            "change": _relative(self.d),
            "lower": _relative(self.lo),
            "upper": _relative(self.hi),
            "df": self.df if math.isfinite(self.df) else None,
        }

    def span(self) -> str:
        return (
            f"bounds {_pct(_relative(self.lo))} .. {_pct(_relative(self.hi))} "
            f"(estimate {_pct(_relative(self.d))})"
        )


def _classify(lo: float, hi: float, m: float) -> str:
    """The outcome of bounds lo..hi of the worsening against the margin m (all in logs)."""
    if lo >= m:
        return REGRESSION
    if lo > 0:
        return WORSE
    if hi < m:
        return NO_REGRESSION
    return TOO_NOISY


def bounds_of(
    metric: Metric,
    baseline: Sequence[float | None],
    candidate: Sequence[float | None],
    confidence: float,
) -> Bounds | None:
    """The metric's bounds from its values at this one-sided confidence (None: fewer than 2
    values a side). Values must be positive: a zero or negative one raises ValueError."""
    _check_inputs(metric, baseline, candidate, confidence)
    a = [math.log(v) for v in baseline if v is not None]
    b = [math.log(v) for v in candidate if v is not None]
    if len(a) < 2 or len(b) < 2:
        return None
    return Bounds.of(metric, a, b, confidence)


def decide(
    metric: Metric,
    baseline: Sequence[float | None],
    candidate: Sequence[float | None],
    confidence: float = CONFIDENCE,
) -> MetricDecision:
    """The decision for one metric from its repeats (None: a repeat that did not measure it),
    in one look at this one-sided confidence. Values must be positive: a zero or negative value
    raises ValueError naming it."""
    return judge(metric, baseline, candidate, bounds_of(metric, baseline, candidate, confidence),
                 confidence)  # fmt: skip


def judge(
    metric: Metric,
    baseline: Sequence[float | None],
    candidate: Sequence[float | None],
    bounds: Bounds | None,
    confidence: float,
) -> MetricDecision:
    """The decision these bounds show (None: too few values), with its reason and, when it is
    not settled, the repeats that would narrow the bounds to half the margin."""
    a = [math.log(v) for v in baseline if v is not None]
    b = [math.log(v) for v in candidate if v is not None]

    def result(decision: str, reason: str, **more: Any) -> MetricDecision:
        values: dict[str, Any] = dict.fromkeys(("change", "lower", "upper", "df", "repeats_needed"))
        values.update(more)
        return MetricDecision(
            metric=metric,
            decision=decision,
            baseline=tuple(baseline),
            candidate=tuple(candidate),
            baseline_mean=math.exp(statistics.fmean(a)) if a else None,
            candidate_mean=math.exp(statistics.fmean(b)) if b else None,
            reason=reason,
            confidence=confidence,
            family=1 - ALPHA,
            **values,
        )

    if bounds is None:
        return result(
            TOO_NOISY,
            f"{len(a)} baseline and {len(b)} candidate values measured; at least 2 a side "
            "are needed to see the spread",
            repeats_needed=2,
        )
    m = math.log1p(metric.margin)
    decision = _classify(bounds.lo, bounds.hi, m)
    settled = decision == REGRESSION or bounds.hi < m
    why = _why(decision, settled, bounds, metric.margin)
    needed = None
    if not settled:
        start = max(len(a), len(b)) + 1
        needed = welch.repeats_needed(bounds.va, bounds.vb, m / 2, start, confidence)
        why += _narrowing(needed, m)
    return result(
        decision,
        f"{bounds.span()}: {why}",
        repeats_needed=needed,
        settled=settled,
        **bounds.figures(),
    )


def _why(decision: str, settled: bool, bounds: Bounds, margin_share: float) -> str:
    """What the bounds show against the margin, in the words the compare prints."""
    margin = f"the {margin_share:.0%} margin"
    none_shown = "no worsening shown (the lower bound is at or below 0)"
    points = (_relative(bounds.hi) - margin_share) * 100  # the upper bound past the margin
    short = (margin_share - _relative(bounds.lo)) * 100  # the lower bound short of it
    if decision == REGRESSION:
        return f"worse by at least {margin} (the lower bound reaches it)"
    if decision == WORSE and settled:
        return f"worse, by less than {margin} (both bounds lie between 0 and it)"
    if decision == WORSE:
        return (
            f"worse (the lower bound is above 0), not shown to reach {margin} (the lower bound "
            f"is {short:.1f} points below it, the upper bound {points:.1f} above)"
        )
    if decision == NO_REGRESSION:
        return f"not worse by {margin} (the upper bound is below it); {none_shown}"
    above = f"the upper bound is {points:.1f} points above it"
    return f"{none_shown}, {margin} not ruled out ({above})"


def _narrowing(needed: int | None, log_margin: float) -> str:
    """How many repeats a side would narrow unsettled bounds to half the margin."""
    half = f"±{math.expm1(log_margin / 2):.1%}"
    if needed is None:
        return f"; more than {welch.MAX_REPEATS} repeats a side would be needed at this spread"
    return f"; about {needed} repeats a side would narrow the bounds to {half}"


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


def _relative(log_ratio: float) -> float:
    """exp(x) - 1, held finite: a bound of a look at 99.8 % with one degree of freedom can be
    hundreds in logarithms, past what a float holds."""
    return math.expm1(min(log_ratio, 700.0))


def overall(decisions: Sequence[MetricDecision]) -> str:
    """Any regression -> REGRESSION; else any worse -> WORSE; else any too noisy, or no metric
    at all -> TOO_NOISY; else NO_REGRESSION."""
    found = {d.decision for d in decisions}
    for outcome in (REGRESSION, WORSE, TOO_NOISY):
        if outcome in found:
            return outcome
    return NO_REGRESSION if decisions else TOO_NOISY


def verdict_exit_code(verdict: str, fail_on: str = DEFAULT_FAIL_ON) -> int:
    """1 on a regression, and on worse when `fail_on` is WORSE; 3 when too noisy; else 0."""
    if fail_on not in FAIL_ON:
        raise ValueError(f"fail on: must be one of {', '.join(FAIL_ON)}; got {fail_on!r}")
    if verdict == REGRESSION or (verdict == WORSE and fail_on == WORSE):
        return EXIT_REGRESSION
    if verdict == TOO_NOISY:
        return _EXIT_TOO_NOISY
    return _EXIT_NO_REGRESSION


def exit_code(decisions: Sequence[MetricDecision], fail_on: str = DEFAULT_FAIL_ON) -> int:
    """The comparison's exit code (`verdict_exit_code` of its `overall` verdict)."""
    return verdict_exit_code(overall(decisions), fail_on)
