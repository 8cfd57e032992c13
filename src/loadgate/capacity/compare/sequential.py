"""Sequential comparison: pairs (A B, fresh stacks) are added until every metric is settled, the
most pairs are run or the time budget is spent; the rule looks after every pair.

Looking after every pair and stopping at the first decision gives each error as many chances
as there are looks: at 95 % per look, identical stacks called a regression at any of 5 looks
happen far more often than 5 % of the time. The plan therefore sets each look's confidence:

- A metric's looks are at pairs `first`..`max_pairs`, with `first` the largest of the plan's
  minimum pairs, the metric's own (`Metric.min_pairs`, `rule`'s table) and 2 (a look with
  fewer than two values a side cannot decide, so it is not counted).
- **The comparison's 5 % (`rule.ALPHA`) is shared by its gating metrics**: alpha x each one's
  weight over their total (`family_of`; Bonferroni, weighted: alpha/K each with equal weights),
  so the error is the comparison's, not each metric's.
- **Alpha spending** (`spending`): each metric's share is spread over its looks by
  O'Brien-Fleming's spending curve at n / max_pairs: small early, larger later; the levels of
  all looks of all metrics sum to alpha, so by the union bound the chance that any lower bound
  (or, separately, any upper bound) fails at any look is at most 5 % whatever their
  correlation. With the default three metrics and 5 pairs at most, a look's bounds are at
  99.99 %, 99.8 %, 99.5 % and 99.1 % at 2, 3, 4 and 5 pairs.
- **The last look spends what is left.** When the comparison stops for a reason that does not
  depend on the values (the budget leaves no room for another pair, or `max_pairs` is reached),
  its last look's level is all of the metric's share not yet spent: the default comparison its
  budget stops at 4 of 5 pairs bounds its last look at 98.5 %. Interrupted comparisons are not
  given this.
- **A metric's bounds are the narrowest its looks give**: the highest lower bound and the lowest
  upper bound of its looks so far (all hold together, by the same union bound).
- **Settled** is final: the first look at which a metric is a regression, or its upper bound is
  below the margin (no regression, or worse by less than the margin), decides it; pairs run
  afterwards (for another metric) do not change it. Worse not shown to reach the margin, and
  too noisy, are not settled: more pairs may still show more.
- `stop_reason`: settled (every metric, from `min_pairs` on), `max_pairs` reached, or the
  budget spent: a pair is started only when the time so far plus the longest pair so far fits
  in it (the plan's minimum pairs run whatever the budget). A calibration (`Plan.calibration`)
  runs its pairs whatever the decisions.

Why spending rather than Bonferroni over looks (alpha / K at every look, this module's first
rule): both rest on the union bound, but Bonferroni spent alpha evenly on looks that rarely
decide (the early ones, with few values) and on looks a budget-stopped comparison never takes.
benchmarks/compare_simulation.py measures both errors, and the power, under the default plan.

A fixed number of repeats (`Plan.fixed(n)`, `--repeats N`) is one look at n pairs, each bound at
1 - alpha/K. Pure: no clock, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from loadgate.capacity.compare import spending
from loadgate.capacity.compare.rule import (
    ALPHA,
    TOO_NOISY,
    Bounds,
    Metric,
    MetricDecision,
    bounds_of,
    judge,
)
from loadgate.records import fields as f

# The sequential defaults (`loadgate compare` without --repeats). 15 minutes fit 4 pairs of the
# default metrics (a pair took 3.6-3.8 minutes on the development VM: two fresh stacks, each
# with a saturation and a pressure run); the budget, not the 5 pairs at most, usually ends a
# comparison, and its last look then spends the alpha that is left.
DEFAULT_MIN_PAIRS = 2
DEFAULT_MAX_PAIRS = 5
DEFAULT_BUDGET_S = 15 * 60.0
MAX_PAIRS = 100

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
    stop_when_settled: bool = True  # False: a calibration, its pairs run whatever they show

    @classmethod
    def fixed(cls, repeats: int) -> Plan:
        """`--repeats N`: N pairs, one look at the end."""
        return cls(repeats, repeats, sequential=False)

    @classmethod
    def calibration(cls, pairs: int, budget_s: float | None) -> Plan:
        """`loadgate calibrate`: up to `pairs` pairs (2 at least), as many as the budget
        allows, whatever they show."""
        return cls(min(2, pairs), pairs, budget_s=budget_s, stop_when_settled=False)

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

    def confidences(
        self, metric: Metric, pairs: int, last: bool = False, family: float = 1.0
    ) -> tuple[float, ...]:
        """Each bound's one-sided confidence at this metric's looks from `first_look` to
        `pairs`, in a comparison of `family` metrics (each spends alpha / family), the look at
        `pairs` spending all of its share left when `last` (or at `max_pairs`). A fixed plan:
        its one look at 1 - alpha / family."""
        share = _share_of(family)
        if not self.sequential:
            return (1.0 - share,)
        first = self.first_look(metric)
        pairs = min(pairs, self.max_pairs)
        if pairs < first:
            return ()
        looks = tuple(range(first, pairs + 1))
        levels = spending.look_levels(looks, self.max_pairs, share, last)
        return tuple(1.0 - level for level in levels)

    def to_dict(self) -> dict[str, Any]:
        return {
            "min_pairs": self.min_pairs,
            "max_pairs": self.max_pairs,
            "sequential": self.sequential,
            "budget_s": f.real(self.budget_s),
            **({} if self.stop_when_settled else {"stop_when_settled": False}),
            "method": (
                "alpha spending (alpha shared by weight, alpha/K per metric when equal, "
                "O'Brien-Fleming shape over its looks, "
                "union bound; the last look spends what is left)"
                if self.sequential
                else "one look (alpha shared by weight, alpha/K per metric when equal)"
            ),
        }

    @classmethod
    def from_dict(cls, data: object, where: str = "plan") -> Plan:
        return f.read(cls, data, where)


def _share_of(family: float) -> float:
    """Each metric's share of the comparison's alpha, with `family` metrics compared."""
    if family < 1:
        raise ValueError(f"metrics compared: must be at least 1; got {family}")
    return ALPHA / family


def decide_sequential(
    metric: Metric,
    baseline: Sequence[float | None],
    candidate: Sequence[float | None],
    plan: Plan,
    last: bool = False,
    family: float = 1.0,
) -> MetricDecision:
    """The metric's decision under `plan` in a comparison of `family` metrics, from its values
    in pair order (None: not measured). Fixed: one look at all the values. Sequential: the
    first look (from `first_look`, at each complete pair) that settles it, at the bounds its
    looks so far give; else its outcome at the last complete pair (worse, or too noisy),
    saying by how much. `last`: the comparison stops after these pairs for a reason that does
    not depend on the values (budget, most pairs), so its last look spends all of the metric's
    share that is left."""
    if not plan.sequential:
        confidence = plan.confidences(metric, plan.max_pairs, family=family)[0]
        d = judge(metric, baseline, candidate,
                  bounds_of(metric, baseline, candidate, confidence), confidence)  # fmt: skip
        return replace(d, pairs=max(len(baseline), len(candidate)), looks=1)
    pairs = min(len(baseline), len(candidate), plan.max_pairs)
    first, looks = plan.first_look(metric), plan.looks(metric)
    confidences = plan.confidences(metric, max(pairs, first), last and pairs >= first, family)
    if pairs < first:
        d = judge(metric, baseline[:pairs], candidate[:pairs], None, confidences[0])
        if d.broken_pairs:  # a broken candidate needs no spread to be a regression
            return replace(d, reason=f"at {pairs} pair(s): {d.reason}", pairs=pairs, looks=looks)
        return replace(
            d,
            decision=TOO_NOISY,
            reason=f"{pairs} pair(s) run; {metric.name} is decided from {first} pairs on",
            pairs=pairs,
            looks=looks,
            repeats_needed=first,
        )
    so_far: Bounds | None = None
    for n in range(first, pairs + 1):
        confidence = confidences[n - first]
        look = bounds_of(metric, baseline[:n], candidate[:n], confidence)
        narrowed = look is not None and so_far is not None and look.within(so_far) != look
        if look is not None:
            so_far = look.within(so_far)
        d = judge(metric, baseline[:n], candidate[:n], so_far if look else None, confidence)
        if d.settled or n == pairs:
            which = "the last look" if last and n == pairs else f"look {n - first + 1} of {looks}"
            where = f"{'at' if d.settled else 'after'} {n} pair{'' if n == 1 else 's'} ({which}"
            if look is not None:
                where += f", bounds at {confidence:.2%}"
                where += ", narrowed by the earlier looks" if narrowed else ""
            return replace(d, reason=f"{where}): {d.reason}", pairs=n, looks=looks)
    raise AssertionError("unreachable: pairs >= first gives at least one look")


def decide_all(
    metrics: Sequence[Metric],
    baseline: Mapping[str, Sequence[float | None]],
    candidate: Mapping[str, Sequence[float | None]],
    plan: Plan,
    last: bool = False,
) -> tuple[MetricDecision, ...]:
    """Every metric's decision under `plan`, its values by name in pair order: the comparison's
    5 % shared by the gating metrics by their weights (`family_of`); a metric reported beside
    the verdict (`Metric.gates` False) has its own 5 %."""
    return tuple(
        decide_sequential(m, baseline[m.name], candidate[m.name], plan, last, family_of(m, metrics))
        for m in metrics
    )


def family_of(metric: Metric, metrics: Sequence[Metric]) -> float:
    """What the comparison's alpha is divided by for this metric: the gating metrics' total
    weight over its own (K with equal weights: Bonferroni); 1 for a metric reported beside
    the verdict (its own 5 %)."""
    if not metric.gates:
        return 1.0
    total = sum(m.alpha_weight for m in metrics if m.gates)
    return max(1.0, total / metric.alpha_weight)


def stop_reason(
    plan: Plan,
    decisions: Sequence[MetricDecision],
    pairs: int,
    elapsed_s: float,
    longest_pair_s: float,
) -> str | None:
    """Why the comparison stops after `pairs` complete pairs, or None to run another. Decided:
    every gating metric is settled (a regression, or its upper bound below the threshold)."""
    gating = [d for d in decisions if d.metric.gates]
    settled = bool(gating) and all(d.settled for d in gating)
    if plan.sequential and plan.stop_when_settled and pairs >= plan.min_pairs and settled:
        return DECIDED
    if pairs >= plan.max_pairs:
        return MAX_PAIRS_RUN if plan.sequential else REPEATS_RUN
    if pairs < plan.min_pairs:
        return None
    if plan.budget_s is not None and elapsed_s + longest_pair_s > plan.budget_s:
        return BUDGET_SPENT
    return None
