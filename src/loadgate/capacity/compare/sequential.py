"""Sequential comparison: pairs (A B, fresh stacks) are added until every metric is decided, the
most pairs are run or the time budget is spent; the rule looks after every pair.

Looking after every pair and stopping at the first decision gives each error as many chances
as there are looks: at 95 % per look, identical stacks called a regression at any of 5 looks
happen far more often than 5 % of the time. The plan therefore sets each look's confidence:

- A metric's looks are at pairs `first`..`max_pairs`, with `first` the largest of the plan's
  minimum pairs, the metric's own (`Metric.min_pairs`, `rule`'s table) and 2 (a look with
  fewer than two values a side cannot decide, so it is not counted).
- **Alpha spending** (`spending`): each error kind (a regression called between identical
  stacks; no regression called for a worsening of the margin) may happen with chance at most
  alpha = 5 % over all the looks together. Each look gets a share of alpha, its level, from
  O'Brien-Fleming's spending curve at n / max_pairs: small early (bounds at 99.8 % at 2 of 5
  pairs), larger later (97.9 % at 5 of 5); the levels sum to alpha, so by the union bound the
  error over all looks is at most alpha whatever their correlation.
- **The last look spends what is left.** When the comparison stops for a reason that does not
  depend on the values (the budget leaves no room for another pair, or `max_pairs` is reached),
  its last look's level is all of alpha not yet spent: a comparison the budget stops at 4 of 5
  pairs decides its last look at about 96 %. Interrupted comparisons are not given this.
- The first look that decides a metric is final: pairs run afterwards (for another metric) do
  not change it.
- `stop_reason`: decided (every metric, from `min_pairs` on; a guard, `rule`'s `overall`,
  once it has had its first look), `max_pairs` reached, or the budget
  spent: a pair is started only when the time so far plus the longest pair so far fits in it
  (the plan's minimum pairs run whatever the budget). What is undecided then is "too noisy",
  saying by how much: the bounds against the margin, and the pairs that would decide at the
  spread seen (at the last look's confidence).

Why spending rather than Bonferroni (alpha / K at every look, this module's first rule): both
rest on the union bound, but Bonferroni spent alpha evenly on looks that rarely decide (the
early ones, with few values) and on looks a budget-stopped comparison never takes: at 4 looks
every look, the last included, decided at 98.75 %. The simulations in
tests/unit/test_compare_sequential.py measure both errors under this plan.

A fixed number of repeats (`Plan.fixed(n)`, `--repeats N`) is one look at n pairs with 95 %
bounds: the first rule, unchanged. Pure: no clock, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from loadgate.capacity.compare import spending
from loadgate.capacity.compare.rule import (
    CONFIDENCE,
    MAX_REPEATS,
    TOO_NOISY,
    Metric,
    MetricDecision,
    decide,
)
from loadgate.records import fields as f

# The sequential defaults (`loadgate compare` without --repeats), with the metrics' margins
# (rule.METRICS, and why they are what they are). 15 minutes fit 3-4 pairs of the
# default metrics (a pair took 3.6-3.9 minutes on the development VM: two fresh stacks, each
# with a saturation and a pressure run); the budget, not the 5 pairs at most, usually ends a
# comparison, and its last look then spends the alpha that is left.
DEFAULT_MIN_PAIRS = 2
DEFAULT_MAX_PAIRS = 5
DEFAULT_BUDGET_S = 15 * 60.0
MAX_PAIRS = 100
ALPHA = 1 - CONFIDENCE  # each error kind, per metric, over all looks

# Why a comparison stopped.
DECIDED = "decided"
MAX_PAIRS_RUN = "max-pairs"
BUDGET_SPENT = "budget"
REPEATS_RUN = "repeats"
STOPS = (DECIDED, MAX_PAIRS_RUN, BUDGET_SPENT, REPEATS_RUN)
# Stops that do not depend on the values: the last look of such a comparison spends what is left.
LAST_LOOK_STOPS = (MAX_PAIRS_RUN, BUDGET_SPENT)


@dataclass(frozen=True)
class Plan:
    """How many pairs a comparison runs and at which confidence each look decides."""

    min_pairs: int
    max_pairs: int
    sequential: bool = True
    budget_s: float | None = None  # wall seconds (sequential); None: no budget

    @classmethod
    def fixed(cls, repeats: int) -> Plan:
        """`--repeats N`: N pairs, one look at the end."""
        return cls(repeats, repeats, sequential=False)

    def problems(self) -> list[tuple[str, str]]:
        """(flag, what is wrong) for every bad setting; empty when the plan is sound."""
        out: list[tuple[str, str]] = []
        if not 1 <= self.min_pairs <= MAX_PAIRS:
            out.append(("--min-pairs", f"must be between 1 and {MAX_PAIRS}; got {self.min_pairs}"))
        if not 1 <= self.max_pairs <= MAX_PAIRS:
            out.append(("--max-pairs", f"must be between 1 and {MAX_PAIRS}; got {self.max_pairs}"))
        elif self.max_pairs < self.min_pairs:
            out.append(
                ("--max-pairs", f"must be at least --min-pairs ({self.min_pairs}); got "
                 f"{self.max_pairs}")
            )  # fmt: skip
        if self.budget_s is not None and not self.budget_s > 0:
            out.append(("--budget", f"must be more than 0 s; got {self.budget_s:g}"))
        return out

    def first_look(self, metric: Metric) -> int:
        """The pairs at which this metric is first decided (a fixed plan: its only look)."""
        if not self.sequential:
            return self.max_pairs
        return min(self.max_pairs, max(self.min_pairs, metric.min_pairs, 2))

    def looks(self, metric: Metric) -> int:
        """K: the looks the plan may take at this metric."""
        return self.max_pairs - self.first_look(metric) + 1 if self.sequential else 1

    def confidences(self, metric: Metric, pairs: int, last: bool = False) -> tuple[float, ...]:
        """Each bound's one-sided confidence at this metric's looks from `first_look` to
        `pairs`, the look at `pairs` spending all of alpha left when `last` (or at
        `max_pairs`). A fixed plan: its one look at 95 %."""
        if not self.sequential:
            return (CONFIDENCE,)
        first = self.first_look(metric)
        pairs = min(pairs, self.max_pairs)
        if pairs < first:
            return ()
        looks = tuple(range(first, pairs + 1))
        levels = spending.look_levels(looks, self.max_pairs, ALPHA, last)
        return tuple(1.0 - level for level in levels)

    def to_dict(self) -> dict[str, Any]:
        return {
            "min_pairs": self.min_pairs,
            "max_pairs": self.max_pairs,
            "sequential": self.sequential,
            "budget_s": f.real(self.budget_s),
            "method": (
                "alpha spending (O'Brien-Fleming shape, union bound; the last look spends what "
                "is left)"
                if self.sequential
                else "one look"
            ),
        }

    @classmethod
    def from_dict(cls, data: object, where: str = "plan") -> Plan:
        return f.read(cls, data, where)


def _pct(x: float) -> str:
    return f"{x * 100:+.1f} %"


def _undecided(d: MetricDecision, pairs: int, first: int, looks: int) -> str:
    """Why a metric is still too noisy, and by how much."""
    m = d.metric
    if pairs < first:
        return f"{pairs} pair(s) run; {m.name} is decided from {first} pairs on"
    if d.lower is None or d.upper is None or d.change is None:
        return d.reason
    text = (
        f"after {pairs} pairs, {_pct(d.change)} worse (bounds {_pct(d.lower)} .. "
        f"{_pct(d.upper)}, each at {d.confidence or CONFIDENCE:.2%} for {looks} look(s)): the "
        f"upper bound is {(d.upper - m.margin) * 100:.1f} points above the {m.margin:.0%} margin"
    )
    if d.change >= m.margin and d.lower <= 0:
        text += f" and the lower bound is not above 0 ({_pct(d.lower)})"
    needed = d.repeats_needed
    if needed is None:
        text += f"; more than {MAX_REPEATS} pairs would be needed at this spread"
    else:
        text += f"; about {needed} pairs would decide at this spread"
    if m.guard:
        text += f"; {_guard_reach(m.margin, d.change, d.upper)}"
    return text


def _guard_reach(margin: float, change: float, upper: float) -> str:
    """What a guard that stays undecided could still find: at these bounds' width a worsening
    is a regression once its lower bound clears 0 and it reaches the margin."""
    half = math.log1p(upper) - math.log1p(change)
    reach = math.expm1(max(math.log1p(margin), half))
    return (
        f"a guard, it does not hold the verdict: at this spread it finds a worsening of about "
        f"{_pct(reach)} or more"
    )


def decide_sequential(
    metric: Metric,
    baseline: Sequence[float | None],
    candidate: Sequence[float | None],
    plan: Plan,
    last: bool = False,
) -> MetricDecision:
    """The metric's decision under `plan`, from its values in pair order (None: not measured).
    Fixed: one look at all the values. Sequential: the first look (from `first_look`, at each
    complete pair) that decides, at that look's confidence; else too noisy at the last
    complete pair, saying by how much. `last`: the comparison stops after these pairs for a
    reason that does not depend on the values (budget, most pairs), so its last look spends
    all of alpha that is left."""
    if not plan.sequential:
        d = decide(metric, baseline, candidate, CONFIDENCE)
        return replace(d, pairs=max(len(baseline), len(candidate)), looks=1)
    pairs = min(len(baseline), len(candidate), plan.max_pairs)
    first, looks = plan.first_look(metric), plan.looks(metric)
    confidences = plan.confidences(metric, max(pairs, first), last and pairs >= first)
    for n in range(first, pairs + 1):
        confidence = confidences[n - first]
        d = decide(metric, baseline[:n], candidate[:n], confidence)
        if d.decision != TOO_NOISY:
            which = "the last look" if last and n == pairs else f"look {n - first + 1} of {looks}"
            where = f"at {n} pairs ({which}, bounds at {confidence:.2%})"
            return replace(d, reason=f"{where}: {d.reason}", pairs=n, looks=looks)
    confidence = confidences[-1]  # the last look's (before the first look: the first's)
    d = decide(metric, baseline[:pairs], candidate[:pairs], confidence)
    return replace(
        d,
        decision=TOO_NOISY,
        reason=_undecided(d, pairs, first, looks),
        pairs=pairs,
        looks=looks,
        repeats_needed=d.repeats_needed if pairs >= first else first,
    )


def stop_reason(
    plan: Plan,
    decisions: Sequence[MetricDecision],
    pairs: int,
    elapsed_s: float,
    longest_pair_s: float,
) -> str | None:
    """Why the comparison stops after `pairs` complete pairs, or None to run another. Decided:
    every metric that is not a guard is decided, and every guard is decided or has had its
    first look (a guard does not keep a comparison running; it is looked at while it runs)."""
    deciding = [d for d in decisions if not d.metric.guard]
    decided = bool(deciding) and all(
        d.decision != TOO_NOISY or (d.metric.guard and pairs >= plan.first_look(d.metric))
        for d in decisions
    )
    if plan.sequential and pairs >= plan.min_pairs and decided:
        return DECIDED
    if pairs >= plan.max_pairs:
        return MAX_PAIRS_RUN if plan.sequential else REPEATS_RUN
    if pairs < plan.min_pairs:
        return None
    if plan.budget_s is not None and elapsed_s + longest_pair_s > plan.budget_s:
        return BUDGET_SPENT
    return None
