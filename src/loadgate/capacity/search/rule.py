"""Capacity search: the highest log-records-per-minute rate at which every gate passes.

A pure state machine. `advance(plan, history)` looks at the steps run so far and their outcomes
and returns either the next `Step` to run or the final `SearchResult`; `Search` keeps the history
for a driver that runs each step for real (`next_step()`, run it, `record(step, outcome)`).
The driver leaves the stack to settle (queue drained) between steps; the search counts load only.

Two methods (`SearchPlan.method`):

- `saturate` (the default, module `saturate`): one saturation step measures S, what the pipeline
  takes when offered more; holds just long enough for the queue to overflow at the precision's
  excess confirm the knee just below S, about 115 s of load against the default collector.
- `bisect` (module `bisect`): short probes bracket and bisect, a 60 s hold confirms, up to
  300 s. Kept for pipelines whose knee is not a full queue and targets without saturation
  figures; the saturate method falls back to it when its saturation step measures nothing.

Both end `found` (the knee bracketed within the precision by a passing and a failing hold, and
reported between two rates with the plan's confidence: `confidence`),
`at-least-max` (a hold at `max_rate` passed with nothing failed), `below-min` (`min_rate`
failed for good), or, when the next step would pass `max_steps` or the load budget
(`budget_s`, seconds of load), `out-of-steps` / `out-of-budget` with the bracket so far.
`noiseless_worst_case(plan)` runs a plan against noiseless pipelines across its range;
`plan_problems` (and `validated`) refuses a budget or a step limit below it, so only noise
stops a search early. The plan itself is `plan.SearchPlan`; this module is the search's face,
re-exporting the names of `plan` and `state` a driver, a record or a report needs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import cache
from typing import Any

from loadgate.capacity.search import bisect, saturate
from loadgate.capacity.search.plan import (
    BISECT,
    METHODS,
    SATURATE,
    PlanError,
    SearchPlan,
    with_older_defaults,
)
from loadgate.capacity.search.rates import (
    bisections_needed,
    bracket_precision,
    round_rate,
    step_above,
    step_below,
)
from loadgate.capacity.search.state import (
    AT_LEAST_MAX,
    BELOW_MIN,
    FOUND,
    HOLD,
    IN_PROGRESS,
    OUT_OF_BUDGET,
    OUT_OF_STEPS,
    PHASES,
    PROBE,
    SATURATION,
    STATUSES,
    SearchResult,
    State,
    Step,
    StepOutcome,
    fold,
    interval_text,
    percent,
    rate_text,
    result_of,
    span_text,
)

__all__ = [
    "AT_LEAST_MAX", "BELOW_MIN", "BISECT", "FOUND", "HOLD", "IN_PROGRESS", "METHODS",
    "OUT_OF_BUDGET", "OUT_OF_STEPS", "PHASES", "PROBE", "SATURATE", "SATURATION", "STATUSES",
    "PlanError", "Search", "SearchPlan", "SearchResult", "Step", "StepOutcome", "advance",
    "bisections_needed", "bracket_precision", "interval_text", "noiseless_worst_case", "percent",
    "plan_from_settings", "plan_problems", "round_rate", "run_search", "span_text", "step_above",
    "step_below", "validated", "with_older_defaults",
]  # fmt: skip


def plan_problems(plan: SearchPlan) -> list[tuple[str, str]]:
    """Each bad setting of `plan` with what is allowed; empty when the plan is sound: every
    setting in its range (`SearchPlan.range_problems`), and a step limit and a budget that
    cover the plan's longest search without noise."""
    problems = plan.range_problems()
    if problems:
        return problems  # the minimums below need sound rates, growth and durations
    worst_steps, worst_load = noiseless_worst_case(plan)
    if plan.max_steps < worst_steps:
        steps = f"the steps of this plan's longest search without noise; got {plan.max_steps}"
        problems.append(("max_steps", f"must be at least {worst_steps}, {steps}"))
    if plan.budget_s < worst_load:
        load = f"the load of this plan's longest search without noise; got {plan.budget_s}"
        problems.append(("budget_s", f"must be at least {worst_load} s, {load}"))
    return problems


def validated(plan: SearchPlan) -> SearchPlan:
    """`plan`, when sound; else PlanError naming each bad setting."""
    problems = plan_problems(plan)
    if problems:
        raise PlanError(problems)
    return plan


def noiseless_worst_case(plan: SearchPlan) -> tuple[int, int]:
    """Steps and seconds of load of the longest search `plan` makes against a pipeline without
    noise, over knees 1 % apart from half `min_rate` to twice `max_rate` (the budget and step
    limit left out; holds of the saturate method at their longest, `hold_s`).
    `plan_problems` requires `max_steps` and `budget_s` to cover it: only noise and failing
    holds may then stop a search early."""
    return _noiseless_worst_case(replace(plan, max_steps=1000, budget_s=86_400))


def _proposal(plan: SearchPlan, state: State) -> tuple[int, str, int] | str:
    if plan.method == SATURATE:
        return saturate.propose(plan, state)
    return bisect.propose(plan, state)


def _duration(plan: SearchPlan, state: State, phase: str) -> int:
    if phase == SATURATION:
        return plan.saturate_s
    if phase == PROBE:
        return plan.probe_s
    basis = saturate.hold_basis(state)
    if plan.method == SATURATE and basis is not None:
        return saturate.hold_seconds(plan, basis)
    return plan.hold_s


def advance(plan: SearchPlan, history: Sequence[tuple[Step, StepOutcome]]) -> Step | SearchResult:
    """The next step to run after `history`, or the result when the search is over."""
    state = fold(history, queue_explains=plan.method == SATURATE)
    proposal = _proposal(plan, state)
    if isinstance(proposal, str):
        return result_of(plan, state, proposal)
    rate, phase, attempt = proposal
    duration = _duration(plan, state, phase)
    if state.steps + 1 > plan.max_steps:
        return result_of(plan, state, OUT_OF_STEPS, f"max_steps {plan.max_steps} reached")
    if state.load_s + duration > plan.budget_s:
        return result_of(
            plan,
            state,
            OUT_OF_BUDGET,
            f"the next {phase} of {duration} s would pass the {plan.budget_s} s load budget",
        )
    return Step(state.steps, rate, duration, phase, attempt)


class Search:
    """A search in progress: `next_step()`, run it, `record(step, outcome)`, until done."""

    def __init__(self, plan: SearchPlan, history: Sequence[tuple[Step, StepOutcome]] = ()):
        self.plan = validated(plan)
        self._history: list[tuple[Step, StepOutcome]] = []
        for step, outcome in history:
            self.record(step, outcome)

    @property
    def history(self) -> tuple[tuple[Step, StepOutcome], ...]:
        return tuple(self._history)

    def next_step(self) -> Step | None:
        """The step to run now, None when the search is over."""
        nxt = advance(self.plan, self._history)
        return nxt if isinstance(nxt, Step) else None

    @property
    def done(self) -> bool:
        return self.next_step() is None

    def record(self, step: Step, outcome: StepOutcome) -> None:
        """The outcome of the step `next_step()` proposed. Anything else is refused."""
        expected = self.next_step()
        if expected is None:
            raise ValueError("the search is over: no step to record")
        if step != expected:
            raise ValueError(f"expected an outcome of {expected}, got one of {step}")
        if outcome.rate != step.rate:
            raise ValueError(f"outcome rate {outcome.rate} is not the step's rate {step.rate}")
        self._history.append((step, outcome))

    def result(self) -> SearchResult:
        """The final result; before the end, where the search stands (status `in-progress`)."""
        nxt = advance(self.plan, self._history)
        if isinstance(nxt, SearchResult):
            return nxt
        why = f"in progress, next: {nxt.phase} at {rate_text(nxt.rate)}"
        state = fold(self._history, queue_explains=self.plan.method == SATURATE)
        return result_of(self.plan, state, IN_PROGRESS, why)


def run_search(plan: SearchPlan, execute: Callable[[Step], StepOutcome]) -> Search:
    """Drive a search to its end with `execute` running each step. Returns the finished search
    (its `history` and `result()`)."""
    search = Search(plan)
    while (step := search.next_step()) is not None:
        search.record(step, execute(step))
    return search


def plan_from_settings(settings: Mapping[str, Any]) -> SearchPlan:
    """A validated plan from user settings (e.g. CLI flags as a dict); unknown names refused."""
    known = set(SearchPlan().to_dict())
    unknown = sorted(set(settings) - known)
    if unknown:
        raise PlanError(
            [(name, f"unknown setting; allowed: {', '.join(sorted(known))}") for name in unknown]
        )
    return validated(SearchPlan(**dict(settings)))


def _noiseless_outcome(step: Step, knee: float) -> StepOutcome:
    """A pipeline without noise whose knee is `knee`: a judged step passes up to it; a
    saturation step above it measures it (its queue of unknown size)."""
    if step.phase == SATURATION:
        saturated = step.rate > knee
        return StepOutcome(
            step.rate, not saturated, saturated=saturated, throughput_per_min=min(step.rate, knee)
        )
    return StepOutcome(step.rate, passed=step.rate <= knee)


@cache
def _noiseless_worst_case(plan: SearchPlan) -> tuple[int, int]:
    worst = (0, 0)
    knee = plan.min_rate / 2
    while knee <= plan.max_rate * 2:
        history: list[tuple[Step, StepOutcome]] = []
        while isinstance(step := advance(plan, history), Step):
            history.append((step, _noiseless_outcome(step, knee)))
        worst = max(worst, (step.steps, step.load_s), key=lambda w: (w[1], w[0]))
        knee *= 1.01
    return worst
