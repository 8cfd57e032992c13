"""A seeded simulation of `loadgate compare`'s default plan: the real rule and the real
sequential procedure (capacity/compare/sequential.py: `decide_all`, `stop_reason`) driven pair by
pair as the driver drives them (capacity/compare/driver.py: a look after every pair, a pair
started only while the time so far plus the longest pair fits the budget, the last look of a
budget- or max-pairs-stopped comparison spending what is left), with values drawn instead of
measured. Pure and deterministic for a seed.

Each simulated comparison draws, for every pair and metric, a baseline and a candidate value:
log value = ln(100) + noise (+ the candidate's true worsening, + a trend both sides share), the
noise of standard deviation the metric's spread (a value's: a pair's worsening spreads by
sqrt(2) times it): normal (log-normal values), or Student's t with 3 degrees of freedom scaled
to the same standard deviation (heavy tails), and optionally a drift shared by both runs of a
pair (both moved by the same random factor). Pair durations are drawn uniformly between
`pair_s` bounds (170-190 s: the development VM's default pairs on kept stacks, the two stacks'
starts spread over them; 15 minutes hold 4 or 5).

Used by benchmarks/compare_simulation.py (the table) and tests/unit/test_compare_simulation.py
(the machinery, with few comparisons).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from loadgate.capacity.compare import rule
from loadgate.capacity.compare import sequential as seq
from loadgate.capacity.compare.rule import Metric

NORMAL = "normal"
T3 = "t3"
# Seconds a default pair takes on kept stacks: 170-180 s, and the first pair's two stack starts
# (about 20 s each) spread over the comparison (2026-11-28 and 11-29 nights: 18 comparisons took
# 368-873 s for 2-5 pairs). Fresh stacks took 196-208 s (2026-11-27).
PAIR_S = (170.0, 190.0)


@dataclass(frozen=True)
class Row:
    """What one row simulates: each metric's spread (log standard deviation of one run), the
    noise's shape, a drift shared within pairs (its standard deviation, a multiple of each
    metric's spread), and each metric's true worsening (relative: 0.2 is 20 % worse)."""

    name: str
    spreads: Mapping[str, float]
    noise: str = NORMAL
    drift: float = 0.0
    worse: Mapping[str, float] = field(default_factory=dict[str, float])
    # A drift both sides share over the comparison: the log change from its first run to the
    # run 4 pairs later (-0.13: both sides 13 % lower after 14 minutes), run by run in the
    # order the pair was drawn in.
    trend: float = 0.0
    # Each metric's stacks' level: the log standard deviation of a level the candidate's kept
    # stack holds against the baseline's for a whole comparison (drawn once a comparison).
    level: Mapping[str, float] = field(default_factory=dict[str, float])


@dataclass
class Tally:
    """Verdicts of the simulated comparisons, the pairs they ran, and how each metric ended."""

    verdicts: Counter[str] = field(default_factory=Counter[str])
    pairs: Counter[int] = field(default_factory=Counter[int])
    by_metric: dict[str, Counter[str]] = field(default_factory=dict[str, Counter[str]])

    @property
    def comparisons(self) -> int:
        return sum(self.verdicts.values())

    def share(self, *verdicts: str) -> float:
        return sum(self.verdicts[v] for v in verdicts) / max(1, self.comparisons)

    def metric_share(self, name: str, *decisions: str) -> float:
        seen = self.by_metric.get(name, Counter[str]())
        return sum(seen[d] for d in decisions) / max(1, sum(seen.values()))


def _noise(r: random.Random, spread: float, shape: str) -> float:
    if shape == NORMAL:
        return r.gauss(0.0, spread)
    if shape == T3:  # Student's t, 3 df: variance 3, so scaled by 1/sqrt(3) to the spread
        chi2 = sum(r.gauss(0.0, 1.0) ** 2 for _ in range(3))
        return spread * r.gauss(0.0, 1.0) / math.sqrt(chi2 / 3) / math.sqrt(3)
    raise ValueError(f"noise: must be {NORMAL} or {T3}; got {shape!r}")


def _pair(
    r: random.Random,
    metrics: Sequence[Metric],
    row: Row,
    index: int = 0,
    levels: Mapping[str, float] | None = None,
) -> tuple[dict[str, float], dict[str, float]]:
    """One pair's baseline and candidate value of each metric (the pair `index`, from 0, of
    the comparison: where the shared trend has got to; `levels`: the comparison's stacks'
    level of each metric, in logs, on the candidate). The true worsening is in the metric's
    terms: 0.1 is 10 % slower where lower is better, 10 % less where higher is better."""
    a: dict[str, float] = {}
    b: dict[str, float] = {}
    candidate_first = r.random() < 0.5  # the pair's order, drawn
    step = row.trend / 8  # a run's share of the trend over 4 pairs
    at_a = step * (2 * index + (1 if candidate_first else 0))
    at_b = step * (2 * index + (0 if candidate_first else 1))
    for m in metrics:
        spread = row.spreads[m.name]
        shared = r.gauss(0.0, row.drift * spread) if row.drift else 0.0
        worse = row.worse.get(m.name, 0.0)
        shift = math.log1p(worse) if m.better == rule.LOWER else math.log1p(-worse)
        shift += (levels or {}).get(m.name, 0.0)
        a[m.name] = 100.0 * math.exp(shared + at_a + _noise(r, spread, row.noise))
        b[m.name] = 100.0 * math.exp(shared + at_b + shift + _noise(r, spread, row.noise))
    return a, b


def compare_once(
    r: random.Random,
    metrics: Sequence[Metric],
    plan: seq.Plan,
    row: Row,
    pair_s: tuple[float, float] = PAIR_S,
) -> tuple[str, int, tuple[rule.MetricDecision, ...]]:
    """One comparison, pair by pair as the driver runs it: its verdict, its pairs, and each
    metric's final decision."""
    a: dict[str, list[float | None]] = {m.name: [] for m in metrics}
    b: dict[str, list[float | None]] = {m.name: [] for m in metrics}
    elapsed = longest = 0.0
    pairs = 0
    levels = {name: r.gauss(0.0, sd) for name, sd in row.level.items() if sd > 0}
    while True:
        pa, pb = _pair(r, metrics, row, pairs, levels)
        for m in metrics:
            a[m.name].append(pa[m.name])
            b[m.name].append(pb[m.name])
        took = r.uniform(*pair_s)
        elapsed += took
        longest = max(longest, took)
        pairs += 1
        decisions = seq.decide_all(metrics, a, b, plan)
        stop = seq.stop_reason(plan, decisions, pairs, elapsed, longest)
        if stop is None and any(
            d.metric.gates and d.decision == rule.REGRESSION for d in decisions
        ):
            stop = seq.DECIDED  # the driver stops at a regression: final under the rule
        if stop is not None:
            break
    if stop in seq.LAST_LOOK_STOPS:  # the driver's final record: the last look spends the rest
        decisions = seq.decide_all(metrics, a, b, plan, last=True)
    return rule.overall(decisions), pairs, decisions


def simulate(
    metrics: Sequence[Metric],
    plan: seq.Plan,
    row: Row,
    comparisons: int,
    seed: int,
    pair_s: tuple[float, float] = PAIR_S,
) -> Tally:
    """`comparisons` comparisons of this row, seeded (the same seed, the same tally)."""
    r = random.Random(f"{seed}/{row.name}")  # noqa: S311 (a simulation, not cryptography)
    tally = Tally(by_metric={m.name: Counter[str]() for m in metrics})
    for _ in range(comparisons):
        verdict, pairs, decisions = compare_once(r, metrics, plan, row, pair_s)
        tally.verdicts[verdict] += 1
        tally.pairs[pairs] += 1
        for d in decisions:
            tally.by_metric[d.metric.name][d.decision] += 1
    return tally
