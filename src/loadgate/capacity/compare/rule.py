"""The comparison rule: is the candidate worse than the baseline, beyond the noise of repeats,
and by more than a worsening that counts? Every outcome says what its bounds show, and no more.

Baseline (A) and candidate (B) run in pairs on one machine (`run_order`: each pair's order
drawn, the first's too), so what drifts over a comparison falls on both runs of a pair. The
metrics, their thresholds and calibrated spreads are one table here (`METRICS`; the default
compare's come from the margins file `loadgate calibrate` writes: margins_file,
data/margins.yaml). How many pairs run and at which confidence each look bounds is
`sequential`.

- **Paired, on logarithms.** A pair's worsening is d_i = ln B_i - ln A_i where lower is better,
  ln A_i - ln B_i where higher is better; the estimate d is their mean. A drift both runs of a
  pair share cancels in d_i. The worsening is printed in the metric's own terms (`worsening`):
  exp(d) - 1 where lower is better (+10 %: 10 % slower), 1 - exp(-d) where higher is better
  (+10 %: 10 % less throughput).
- **The spread of d_i** is the calibrated one (`Metric.paired_spread`, measured by `loadgate
  calibrate` over many comparisons: tens of degrees of freedom) pooled with this comparison's
  own (n - 1 degrees of freedom): s^2 = (df_c s_c^2 + (n-1) s_o^2) / (df_c + n - 1), raised to
  s_o^2 when that is more (never less noise than the comparison shows). When the
  comparison's own spread is beyond what the calibrated one explains (an F test at 90 %: today's
  machine is noisier), its own spread alone is used, said in the reason. Never below the floor:
  each value known within its resolution (a search's +-5 %: a uniform error) and at least
  `MIN_SPREAD`, so identical values never give bounds of zero width. Without a calibrated spread
  the comparison's own is used (2 pairs at least).
- **The stacks' level** (`Metric.level_spread`, L): on kept stacks each side's stack is drawn
  once a comparison, and a level one holds for the whole comparison is in d but not in the
  d_i's spread. `loadgate calibrate` measures it over A/A comparisons (the mean square of their
  d beyond what their pairs explain); the estimate's variance is then s^2/n + L^2, on
  Welch-Satterthwaite's degrees of freedom, and no number of pairs narrows it below L. Fresh
  stacks carry their draw in every pair: no level term.
- **Bounds**: L, U = d -/+ t(c, df) * sqrt(s^2/n + L^2), each one-sided at the look's
  confidence c.
- **The error is the comparison's** (`ALPHA`, 5 %): the gating metrics share it by their
  weights (`Metric.alpha_weight`, 1 but for the collector CPU per Loki CPU's 0.25: by default
  saturation 4 %, the CPU 1 %; equal weights: alpha/K each), each share spent over its looks
  (`sequential`). By the union bound the lower bounds of
  all looks of all metrics hold together with at least 95 %, and so do the upper bounds (the
  two together: at least 90 %). A metric reported beside the verdict (`Metric.gates` False: the
  pressure p99 and the pressure CPU in probe jobs) has its own 5 % and decides nothing, unless
  no metric compared gates (`with_a_gate`: then each one compared does).
- **The threshold** (`Metric.margin`, the practical threshold: the smallest worsening that
  counts; m its logarithm), per metric, in this order:
  - **regression** when a pair's candidate left the metric unknown where its baseline measured
    it (a broken candidate: it did not start a run, a run failed or failed its gates), or when
    L > 0 and d >= m: worse beyond the noise, and by an estimated threshold or more;
  - **worse** when L > 0 and d < m: worse beyond the noise, estimated below the threshold;
  - **too noisy** with fewer values than a decision needs, or when L <= 0 and U >= 2m: no
    worsening shown, and one of twice the threshold not ruled out;
  - **no regression** when L <= 0 and U < 2m: no worsening shown, and none of twice the
    threshold (settled, and "none of the threshold", when U < m).
- **Overall** (`overall`) over the gating metrics, in this order: regression if any (and, in the
  record, a candidate run that lost acknowledged records, or a candidate stack or run that broke,
  leaving any metric compared unknown, one reported beside the verdict too:
  record.CompareRecord); else too noisy if any; else worse if any; else no regression. An
  undecided metric is never hidden by another's "worse". Exit codes (`exit_code`): 0 no
  regression, and worse unless `--fail-on worse`; 1 regression, and worse with `--fail-on
  worse`; 3 too noisy (2 is the command line's bad input or broken baseline).

Why this rule (issue 38): the previous one called a regression only when the lower bound reached
a margin, 20 % for throughput and CPU, so a real 10 % loss read "too noisy". A practical
threshold on the estimate with a lower bound above 0 is how an equivalence-minded gate fails a
worsening it can see: a true worsening of twice the threshold is a regression most of the time,
one below it passes most of the time, and identical stacks are called worse at most 5 % of the
time whatever the threshold. The calibrated spread gives the bounds the degrees of freedom a
4-pair comparison cannot have alone; pairing lets a drift both sides share cancel.
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
# `overall`'s order: the first found among the gating metrics' decisions is the verdict.
PRECEDENCE = (REGRESSION, TOO_NOISY, WORSE)
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

ALPHA = 0.05  # the comparison's: shared by its gating metrics, each share spent over its looks
CONFIDENCE = 1 - ALPHA  # one metric, one look: each bound one-sided at 95 %
# No figure of a run is known better than this (a standard deviation of log values): the floor
# of every spread, so that identical values never give bounds of zero width.
MIN_SPREAD = 0.01
# The comparison's own spread replaces the calibrated one when it is beyond it at this level.
_NOISIER_LEVEL = 0.90
# Too noisy: no worsening shown, and the upper bound at this many thresholds or more.
NOISY_WIDTH = 2.0

RULE = (
    "Per metric, paired on log values: d_i = the candidate's worsening in pair i, d their mean "
    "(printed as exp(d)-1 where lower is better, 1-exp(-d) where higher is better); the spread "
    "of d_i the calibrated one pooled with the comparison's own and at least its own (its own "
    "alone, on its own df, when an F test at 90 % shows it noisier), at least the floor "
    "(resolution, 1 %); L, U = d -/+ t(c, df) * sqrt(s^2/n + L^2) at each look's one-sided "
    "confidence c, L the stacks' level (kept stacks: calibrated over A/A comparisons); m = the "
    "threshold's logarithm. "
    "Family-wise: the 5 % is the comparison's, shared by the gating metrics by weight (alpha/K "
    "each of K; the CPU per Loki CPU weighs 0.25, so beside saturation 1 % and 4 %), spent over "
    "its looks (O'Brien-Fleming's curve at pairs / max pairs; the last look of a comparison its "
    "budget or its most pairs ends takes what is left): every lower bound holds together with "
    "95 %, every upper bound too (both: at least 90 %). Regression if the candidate left the "
    "metric unknown in a pair where the baseline measured it, or L > 0 and d >= m; worse if L "
    "> 0 and d < m; too noisy with too few values, or L <= 0 and U >= 2m; else no "
    "regression. Settled at a regression or U < m. Overall, over the gating metrics: a "
    "candidate that lost acknowledged records or broke, or any regression -> regression (exit "
    "1); else any too noisy -> too noisy (exit 3); else any worse -> worse (exit 0, or 1 with "
    "--fail-on worse); else no regression (exit 0). A metric that does not gate (the pressure "
    "p99 and CPU in probe jobs, when another gates) is reported beside, at its own 5 %."
)


@dataclass(frozen=True)
class Metric:
    name: str
    better: str = field(metadata=f.one_of((HIGHER, LOWER), f"{HIGHER} or {LOWER}"))
    # The practical threshold: the smallest worsening that counts, relative in the metric's own
    # terms (0.05: 5 % slower where lower is better, 5 % less where higher is better).
    margin: float
    unit: str
    resolution: float = 0.0  # relative half-width of one value's measurement (search precision)
    # A sequential comparison decides this metric only from this many pairs on (its first look).
    min_pairs: int = 2
    # The calibrated spread of a pair's worsening (standard deviation of d_i) and its degrees
    # of freedom (`loadgate calibrate`); None: the comparison's own spread alone.
    paired_spread: float | None = None
    paired_df: int = 0
    # Whether the metric decides the verdict (False: reported beside it, at its own 5 %).
    gates: bool = True
    # The spread of a comparison's mean worsening beyond what its pairs show (the level each
    # kept stack holds for the whole comparison: `loadgate calibrate`, from A/A comparisons) and
    # its degrees of freedom; None: no such term (fresh stacks carry it in every pair).
    level_spread: float | None = None
    level_df: int = 0
    # A gating metric's weight in the comparison's 5 %: each one spends alpha x its weight over
    # the gating metrics' total (Bonferroni, weighted: the union bound holds all the same).
    alpha_weight: float = 1.0

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
            # Written when set, so a record of an earlier rule reads and writes as it was.
            **({} if self.paired_spread is None else {"paired_spread": f.real(self.paired_spread)}),
            **({"paired_df": self.paired_df} if self.paired_df else {}),
            **({} if self.gates else {"gates": False}),
            **({} if self.level_spread is None else {"level_spread": f.real(self.level_spread),
                                                     "level_df": self.level_df}),
            **({} if self.alpha_weight == 1.0 else {"alpha_weight": f.real(self.alpha_weight)}),
        }  # fmt: skip

    @property
    def level(self) -> float:
        """The calibrated level term's spread (0: none)."""
        if self.level_spread is None or self.level_df < 1:
            return 0.0
        return max(self.level_spread, 0.0)

    @property
    def level_term(self) -> tuple[float, int]:
        """The level term as the interval arithmetic takes it (welch.standard_error): its
        spread and degrees of freedom."""
        return self.level, self.level_df

    @classmethod
    def from_dict(cls, data: object, where: str = "metric") -> Metric:
        return f.read(cls, data, where)

    @property
    def log_threshold(self) -> float:
        """m: the threshold as a worsening in logarithms (a drop of 5 % where higher is better
        is ln(1/0.95), a rise of 5 % where lower is better ln(1.05))."""
        if self.better == HIGHER:
            return -math.log1p(-min(self.margin, 0.999999))
        return math.log1p(self.margin)

    def worsening(self, log_worsening: float) -> float:
        """A worsening in logarithms as the relative change it is in the metric's terms."""
        x = min(log_worsening, 700.0)  # held finite: a bound at 99.99 % with 1 df is huge
        if self.better == HIGHER:
            return -math.expm1(-max(x, -700.0))
        return math.expm1(x)


# The metrics: one table holding each one's threshold (the smallest worsening that counts) and
# the pairs before a sequential comparison may decide it. The thresholds and calibrated spreads
# of the default metrics (saturation, the collector CPU per Loki CPU, the pressure CPU in
# speed-probe jobs, the pressure p99) are those of the margins file shipped as package data
# (data/margins.yaml, which `loadgate calibrate` writes); the command line reads that file, and
# tests/unit/test_compare_calibrate.py ties these to it. The raw pressure CPU's spread and level
# are an earlier calibration's (25 comparisons of kept stacks, `--metrics pressure-cpu`).
# Saturation and the collector CPU per Loki CPU gate: Loki's CPU in the same run cancels the
# host's and the stack's own level (2.3 % a pair, 0.6 % level, where the CPU in probe jobs
# spread 6.9 % and 5.2 %); its spread is so far below its threshold that a quarter of a share
# of the 5 % (1 % beside saturation's 4 %) costs it little power, and saturation, the one whose
# power the 5 % limits, keeps most of it. The pressure p99 (27 % a value) and the CPU in probe
# jobs are reported beside the verdict. Alone, either gates. Saturation's threshold is 6 %, the
# others' 5 % or 10 %: at 4 pairs its bounds are about +-7 %, so a 5 % threshold added no power and
# made one A/A in five too noisy (2026-11-29 night). The history of the numbers is in
# docs/design-notes.md and docs/measurements.md.
#
#   name                               better  threshold unit        min pairs
SATURATION = Metric("saturation_per_min", HIGHER, 0.06, "records/min", min_pairs=2,
                    paired_spread=0.04893, paired_df=86, level_spread=0.02697,
                    level_df=14)  # fmt: skip
PRESSURE_P99 = Metric("pressure_p99_ms", LOWER, 0.10, "ms", min_pairs=3, paired_spread=0.29125,
                      paired_df=86, gates=False, level_spread=0.05997, level_df=14)  # fmt: skip
PRESSURE_CPU = Metric("pressure_cpu_s_per_1000_records", LOWER, 0.05, "CPU s", min_pairs=2,
                      paired_spread=0.10578, paired_df=41, level_spread=0.02431,
                      level_df=8)  # fmt: skip
PRESSURE_CPU_PROBE = Metric("pressure_cpu_probe_jobs_per_1000_records", LOWER, 0.05,
                            "probe jobs", min_pairs=2, paired_spread=0.06856, paired_df=56,
                            gates=False, level_spread=0.05156, level_df=9)  # fmt: skip
PRESSURE_CPU_K6 = Metric("pressure_cpu_per_k6_cpu", LOWER, 0.05, "per k6 CPU s", min_pairs=2)
PRESSURE_CPU_LOKI = Metric("pressure_cpu_per_loki_cpu", LOWER, 0.05, "per Loki CPU s",
                           min_pairs=2, paired_spread=0.02349, paired_df=86, level_spread=0.00565,
                           level_df=14, alpha_weight=0.25)  # fmt: skip
CAPACITY = Metric("capacity_per_min", HIGHER, 0.05, "records/min", min_pairs=2)
P99_AT_RATE = Metric("p99_ms", LOWER, 0.10, "ms", min_pairs=2)
CPU_PER_1000 = Metric("cpu_s_per_1000_records", LOWER, 0.05, "CPU s", min_pairs=2)
METRICS = (
    SATURATION, PRESSURE_P99, PRESSURE_CPU, PRESSURE_CPU_PROBE, PRESSURE_CPU_K6,
    PRESSURE_CPU_LOKI, CAPACITY, P99_AT_RATE, CPU_PER_1000,
)  # fmt: skip


def beside_when_loki_differs(metrics: Sequence[Metric]) -> tuple[Metric, ...]:
    """The metrics of a comparison whose sides run different Loki: the collector's CPU per
    Loki CPU then measures both, so it is reported beside the verdict (and gates, as any metric
    beside, when no other one compared does: `with_a_gate`)."""
    moved = tuple(
        replace(m, gates=False) if m.name == PRESSURE_CPU_LOKI.name else m for m in metrics
    )
    return with_a_gate(moved)


def with_a_gate(metrics: Sequence[Metric]) -> tuple[Metric, ...]:
    """The metrics as a comparison decides on them: those reported beside the verdict stay
    beside when another one gates; when none does, each one gates (a comparison of the
    pressure CPU alone decides on it)."""
    if any(m.gates for m in metrics):
        return tuple(metrics)
    return tuple(replace(m, gates=True) for m in metrics)


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
    """One metric's decision. `change` is the candidate's estimated relative worsening in the
    metric's terms (+0.10: 10 % slower, or 10 % less throughput), `lower` and `upper` its
    bounds, each one-sided; means are geometric."""

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
    repeats_needed: int | None  # pairs that would decide, at the spread seen
    reason: str
    confidence: float | None = None  # one-sided, of each bound at the look decided (or last)
    pairs: int | None = None  # the pairs the decision rests on (a sequential one: its look)
    looks: int | None = None  # the looks a sequential comparison may take at this metric
    # Regression, or the upper bound below the threshold: no later look changes it.
    settled: bool = False
    # The confidence with which the comparison's lower bounds hold together (1 - ALPHA), and
    # so do its upper bounds; None in records of the first rule, whose 5 % was each metric's.
    family: float | None = None
    # The pairs whose candidate left the metric unknown where the baseline measured it.
    broken_pairs: tuple[int, ...] = ()

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
            # A decision of the first rule (no family) is written back as it was read.
            **({} if self.family is None else {"settled": self.settled, "family": self.family}),
            **({"broken_pairs": list(self.broken_pairs)} if self.broken_pairs else {}),
        }

    @classmethod
    def from_dict(cls, data: object, where: str = "decision") -> MetricDecision:
        return f.read(cls, data, where)


def percent_text(x: float, space: str = " ") -> str:
    """A relative change as a percentage (`space` before the sign: the tables' columns take
    none); past ±1,000 % (bounds of a look with a degree of freedom or two; on a
    higher-is-better metric a drop is at most 100 %, a gain unbounded) said so rather than in
    30 digits."""
    if x > 10:
        return f"> +1,000{space}%"
    if x < -10:
        return f"< -1,000{space}%"
    return f"{x * 100:+.1f}{space}%"


@dataclass(frozen=True)
class Bounds:
    """The bounds of the candidate's worsening, in logarithms: the estimate d, the bounds lo and
    hi (of the look they end at, narrowed by earlier looks), the half-width of this look's own
    bounds, the spread of a pair's worsening used and its degrees of freedom, and how that
    spread was obtained."""

    d: float
    lo: float
    hi: float
    df: float
    spread: float
    half: float
    pairs: int
    how: str  # "calibrated with its own", "its own: noisier than calibrated", "its own", ...
    prior_df: int = 0  # the calibrated degrees of freedom the spread pools (0: its own alone)
    level: float = 0.0  # the stacks' level term in the bounds (Metric.level; 0: none)

    @classmethod
    def of(cls, metric: Metric, worsening: list[float], confidence: float) -> Bounds | None:
        """Paired bounds at this one-sided confidence from each pair's worsening in logs (None:
        too few pairs for the spread to be known). With a level term L (kept stacks), the
        estimate's variance is s^2/n + L^2, on Welch-Satterthwaite's degrees of freedom."""
        n = len(worsening)
        spread = _spread(metric, worsening)
        if spread is None:
            return None
        s, df, how = spread
        d = statistics.fmean(worsening)
        error, df_bounds = welch.standard_error(s, df, n, metric.level_term)
        half = welch.t_quantile(df_bounds, confidence) * error
        prior = metric.paired_df if how.startswith("calibrated") else 0
        return cls(d, d - half, d + half, df_bounds, s, half, n, how, prior, metric.level)

    def within(self, earlier: Bounds | None) -> Bounds:
        """These bounds narrowed by an earlier look's, which hold with them (the union bound
        covers every look): the highest lower and the lowest upper bound."""
        if earlier is None:
            return self
        lo, hi = max(self.lo, earlier.lo), min(self.hi, earlier.hi)
        if lo > hi:  # looks that disagree: at least one bound failed; keep this look's own
            return self
        return replace(self, lo=lo, hi=hi)

    def figures(self, metric: Metric) -> dict[str, Any]:
        return {
            "change": metric.worsening(self.d),
            "lower": metric.worsening(self.lo),
            "upper": metric.worsening(self.hi),
            "df": self.df if math.isfinite(self.df) else None,
        }

    def span(self, metric: Metric) -> str:
        d, lo, hi = (percent_text(metric.worsening(x)) for x in (self.d, self.lo, self.hi))
        level = f", the stacks' level {self.level:.1%}" if self.level else ""
        return (
            f"worsening {d}, bounds {lo} .. {hi} "
            f"(spread of a pair {self.spread:.1%}, {self.how}{level}, {self.df:.0f} df)"
        )


def spread_floor(metric: Metric) -> float:
    """The least spread of a pair's worsening: two values, each known within its resolution
    (uniform: r^2/3) and never better than MIN_SPREAD."""
    per_value = max(math.log1p(metric.resolution) ** 2 / 3, MIN_SPREAD**2)
    return math.sqrt(2 * per_value)


def _spread(metric: Metric, worsening: list[float]) -> tuple[float, float, str] | None:
    """The spread of a pair's worsening, its degrees of freedom and how it was obtained: the
    calibrated one pooled with the comparison's own, or the own alone where it is beyond the
    calibrated (or there is none); never below the floor. None: no calibrated spread and
    fewer than 2 pairs."""
    n = len(worsening)
    own = welch.variance(worsening) if n >= 2 else None
    calibrated = metric.paired_spread
    if calibrated is None or metric.paired_df < 1 or calibrated <= 0:
        if own is None:
            return None
        return max(math.sqrt(own), spread_floor(metric)), float(n - 1), "its own"
    cal_var, cal_df = calibrated**2, metric.paired_df
    if own is not None and own > cal_var * welch.f_quantile(n - 1, cal_df, _NOISIER_LEVEL):
        noisier = "its own: noisier than calibrated"
        return max(math.sqrt(own), spread_floor(metric)), float(n - 1), noisier
    if own is None:
        return max(calibrated, spread_floor(metric)), float(cal_df), "calibrated"
    pooled = (cal_df * cal_var + (n - 1) * own) / (cal_df + n - 1)
    if own > pooled:  # never assume less noise than the comparison shows
        raised = "calibrated, raised to its own"
        return max(math.sqrt(own), spread_floor(metric)), float(cal_df + n - 1), raised
    both = "calibrated with its own"
    return max(math.sqrt(pooled), spread_floor(metric)), float(cal_df + n - 1), both


def _pairs_of(
    metric: Metric, baseline: Sequence[float | None], candidate: Sequence[float | None]
) -> tuple[list[float], tuple[int, ...]]:
    """Each complete pair's worsening in logs, and the pairs (from 1) whose candidate left the
    metric unknown where the baseline measured it."""
    sign = 1.0 if metric.better == LOWER else -1.0
    out: list[float] = []
    broken: list[int] = []
    for i, (a, b) in enumerate(zip(baseline, candidate, strict=False)):
        if a is not None and b is None:
            broken.append(i + 1)
        elif a is not None and b is not None:
            out.append(sign * (math.log(b) - math.log(a)))
    return out, tuple(broken)


def _classify(metric: Metric, bounds: Bounds) -> str:
    """The outcome of these bounds against the metric's threshold (module docstring)."""
    m = metric.log_threshold
    if bounds.lo > 0:
        return REGRESSION if bounds.d >= m else WORSE
    if bounds.hi >= NOISY_WIDTH * m:
        return TOO_NOISY
    return NO_REGRESSION


def bounds_of(
    metric: Metric,
    baseline: Sequence[float | None],
    candidate: Sequence[float | None],
    confidence: float,
) -> Bounds | None:
    """The metric's paired bounds from its values in pair order at this one-sided confidence
    (None: too few complete pairs). Values must be positive: a zero or negative one raises
    ValueError."""
    _check_inputs(metric, baseline, candidate, confidence)
    worsening, _ = _pairs_of(metric, baseline, candidate)
    if not worsening:
        return None
    return Bounds.of(metric, worsening, confidence)


def decide(
    metric: Metric,
    baseline: Sequence[float | None],
    candidate: Sequence[float | None],
    confidence: float = CONFIDENCE,
) -> MetricDecision:
    """The decision for one metric from its values in pair order (None: a run that did not
    measure it), in one look at this one-sided confidence. Values must be positive: a zero or
    negative value raises ValueError naming it."""
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
    not settled, the pairs that would narrow the bounds to the threshold."""
    a = [math.log(v) for v in baseline if v is not None]
    b = [math.log(v) for v in candidate if v is not None]
    _, broken = _pairs_of(metric, baseline, candidate)

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
            broken_pairs=broken,
            **values,
        )

    figures = bounds.figures(metric) if bounds is not None else {}
    if broken:
        which = ", ".join(str(p) for p in broken)
        return result(
            REGRESSION,
            f"the candidate left it unknown in pair {which} where the baseline measured it "
            "(a broken candidate: the notes say which run and why)",
            settled=True,
            **figures,
        )
    if bounds is None:
        return result(
            TOO_NOISY,
            f"{len(a)} baseline and {len(b)} candidate values measured; complete pairs are "
            "needed to see the spread",
            repeats_needed=2,
        )
    m = metric.log_threshold
    decision = _classify(metric, bounds)
    settled = decision == REGRESSION or bounds.hi < m
    why = _why(decision, bounds, metric)
    needed = None
    if not settled:
        needed = welch.pairs_needed(bounds.spread, bounds.prior_df, m, bounds.pairs + 1, confidence,
                                    level=metric.level_term)  # fmt: skip
        why += _narrowing(needed, metric, bounds.level)
    return result(
        decision,
        f"{bounds.span(metric)}: {why}",
        repeats_needed=needed,
        settled=settled,
        **figures,
    )


def _why(decision: str, bounds: Bounds, metric: Metric) -> str:
    """What the bounds show against the threshold, in the words the compare prints."""
    threshold = f"the {metric.margin * 100:g} % threshold"
    if decision == REGRESSION:
        return f"worse beyond the noise (the lower bound is above 0), by {threshold} or more"
    if decision == TOO_NOISY:
        return (
            f"too noisy: no worsening shown (the lower bound is at or below 0), and one of twice "
            f"{threshold} not ruled out (the upper bound reaches it)"
        )
    if decision == WORSE:
        return f"worse beyond the noise (the lower bound is above 0), estimated below {threshold}"
    if bounds.hi < metric.log_threshold:
        return f"no worsening shown, and none of {threshold} (the upper bound is below it)"
    return (
        f"no worsening shown (the lower bound is at or below 0), and none of twice {threshold} "
        "(the upper bound is below that)"
    )


def _narrowing(needed: int | None, metric: Metric, level: float = 0.0) -> str:
    """How many pairs would narrow unsettled bounds to the threshold."""
    if needed is None and level:
        return (
            f"; no number of pairs narrows the bounds to ±{metric.margin * 100:g} % with the "
            "stacks' level in them"
        )
    if needed is None:
        return f"; more than {welch.MAX_REPEATS} pairs would be needed at this spread"
    return f"; about {needed} pairs would narrow the bounds to ±{metric.margin * 100:g} %"


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


def overall(decisions: Sequence[MetricDecision]) -> str:
    """Over the gating metrics: any regression -> REGRESSION; else any too noisy, or no gating
    metric at all -> TOO_NOISY; else any worse -> WORSE; else NO_REGRESSION."""
    gating = [d for d in decisions if d.metric.gates]
    found = {d.decision for d in gating}
    for outcome in PRECEDENCE:
        if outcome in found:
            return outcome
    return NO_REGRESSION if gating else TOO_NOISY


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
