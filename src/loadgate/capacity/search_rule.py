"""Capacity search: the highest log-records-per-minute rate at which every gate passes.

A pure state machine. `advance(plan, history)` looks at the steps run so far and their outcomes
and returns either the next `Step` to run or the final `SearchResult`; `Search` keeps the history
for a driver that runs each step for real (`next_step()`, run it, `record(step, outcome)`).
The driver leaves the stack to settle (queue drained) between steps; the search counts load only.

Two methods (`SearchPlan.method`):

- `saturate` (the default, `search_saturate`): one saturation step measures S, what the pipeline
  takes when offered more; holds just long enough for the queue to overflow at the precision's
  excess confirm the knee just below S, about 115 s of load against the default collector.
- `bisect` (`search_bisect`): short probes bracket and bisect, a 60 s hold confirms, up to
  300 s. Kept for pipelines whose knee is not a full queue and targets without saturation
  figures; the saturate method falls back to it when its saturation step measures nothing.

Both end `found` (the knee bracketed within the precision by a passing and a failing hold),
`at-least-max` (a hold at `max_rate` passed with nothing failed), `below-min` (`min_rate`
failed for good), or, when the next step would pass `max_steps` or the load budget
(`budget_s`, seconds of load), `out-of-steps` / `out-of-budget` with the bracket so far.
`SearchPlan.noiseless_worst_case()` runs a plan against noiseless pipelines across its range;
`validate` refuses a budget or a step limit below it, so only noise stops a search early.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any, cast

from loadgate.capacity import search_bisect, search_saturate
from loadgate.capacity.search_state import (
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
    bisections_needed,
    bracket_precision,
    fold,
    rate_text,
    result_of,
    round_rate,
    step_above,
    step_below,
)
from loadgate.contract.spec import MAX_RATE
from loadgate.records import fields as f

__all__ = [
    "AT_LEAST_MAX", "BELOW_MIN", "BISECT", "FOUND", "HOLD", "IN_PROGRESS", "METHODS",
    "OUT_OF_BUDGET", "OUT_OF_STEPS", "PHASES", "PROBE", "SATURATE", "SATURATION", "STATUSES",
    "PlanError", "Search", "SearchPlan", "SearchResult", "Step", "StepOutcome", "advance",
    "bisections_needed", "bracket_precision", "plan_from_settings", "round_rate", "run_search",
    "step_above", "step_below", "with_older_defaults",
]  # fmt: skip

SATURATE = "saturate"
BISECT = "bisect"
METHODS = (SATURATE, BISECT)
MIN_SATURATE_S = 15  # a steady window of 10 s after the queue filled, or after the warm-up


class PlanError(ValueError):
    """Bad search settings: each problem names the setting and what is allowed."""

    def __init__(self, problems: list[tuple[str, str]]):
        self.problems = problems
        super().__init__("; ".join(f"{name}: {why}" for name, why in problems))


@dataclass(frozen=True)
class SearchPlan:
    """Settings of a search. Rates are log records per minute, durations whole seconds."""

    start_rate: int = 100_000  # bisect: the first probe
    min_rate: int = 10_000
    max_rate: int = 1_000_000
    precision: float = 0.05  # the knee within ±precision of the bracket's middle
    growth: float = 2.0  # factor between probes, or saturation steps, while bracketing
    probe_s: int = 15  # bisect: a probe's length
    hold_s: int = 60  # bisect: a hold's length; saturate: the longest hold
    max_steps: int = 20  # 300 s / 15 s probes: the budget binds first
    budget_s: int = 300  # seconds of load, all steps together
    method: str = field(default=SATURATE, metadata=f.one_of(METHODS))
    saturate_rate: int = 300_000  # the saturation step's rate, as `loadgate run --saturate`
    saturate_s: int = 30  # the saturation step's length
    hold_min_s: int = 20  # saturate: the shortest hold (hold_s when that is shorter)
    # saturate: the length of every hold when a hold also fails by falling behind (its exporter
    # sending on less than 1 - precision/2 of what it took in, over its steady window: see
    # search_saturate.fell_behind); 0 judges holds by the gates alone, as long as the queue
    # takes to fill (on Juju, whose Prometheus scrapes too seldom for a short steady window)
    keep_up_s: int = 30
    # saturate: the error-rate gate the holds are judged by (the run's --max-error-rate; the
    # driver sets it from the base run): a hold lasts until refusals pass it
    max_error_rate: float = 0.01

    def noiseless_worst_case(self) -> tuple[int, int]:
        """Steps and seconds of load of the longest search this plan makes against a pipeline
        without noise, over knees 1 % apart from half `min_rate` to twice `max_rate` (the
        budget and step limit left out; holds of the saturate method at their longest,
        `hold_s`). `validate` requires `max_steps` and `budget_s` to cover it: only noise and
        failing holds may then stop a search early."""
        return _noiseless_worst_case(replace(self, max_steps=1000, budget_s=86_400))

    def problems(self) -> list[tuple[str, str]]:
        """Each bad setting with what is allowed; empty when the plan is sound."""
        problems: list[tuple[str, str]] = []
        checks = _Checks(self, problems)
        if self.method not in METHODS:
            checks.bad("method", f"must be one of {', '.join(METHODS)}; got {self.method!r}")
        rates = [checks.integer(n, 1, MAX_RATE) for n in ("min_rate", "max_rate", "start_rate")]
        lo, hi, start = self.min_rate, self.max_rate, self.start_rate
        if all(rates) and hi <= lo:
            checks.bad("max_rate", f"must be above min_rate ({lo}); got {hi}")
        elif all(rates) and self.method == BISECT and not lo <= start <= hi:
            checks.bad(
                "start_rate", f"must be between min_rate ({lo}) and max_rate ({hi}); got {start}"
            )
        if checks.number("precision", 0.01, 0.25) & checks.number("growth", 1.0, 10.0):
            target = (1 + self.precision) / (1 - self.precision)
            if self.growth <= target:
                checks.bad(
                    "growth",
                    f"must be above {target:.3f} for precision {self.precision}; got {self.growth}",
                )
        durations = checks.integer("probe_s", 1, 3600) & checks.integer("hold_s", 1, 3600)
        if durations and self.method == BISECT and self.hold_s < self.probe_s:
            checks.bad("hold_s", f"must be at least probe_s ({self.probe_s}); got {self.hold_s}")
        checks.integer("saturate_rate", 1, MAX_RATE)
        checks.integer("saturate_s", MIN_SATURATE_S, 3600)
        checks.integer("hold_min_s", 1, 3600)
        checks.integer_or_off("keep_up_s", MIN_SATURATE_S, 3600, "holds judged by the gates alone")
        checks.share("max_error_rate")
        steps_ok = checks.integer("max_steps", 1, 1000)
        budget_ok = checks.integer("budget_s", 1, 86_400)
        if problems:
            return problems  # the minimums below need sound rates, growth and durations
        worst_steps, worst_load = self.noiseless_worst_case()
        if steps_ok and self.max_steps < worst_steps:
            checks.bad(
                "max_steps",
                f"must be at least {worst_steps}, the steps of this plan's longest "
                f"search without noise; got {self.max_steps}",
            )
        if budget_ok and self.budget_s < worst_load:
            checks.bad(
                "budget_s",
                f"must be at least {worst_load} s, the load of this plan's longest "
                f"search without noise; got {self.budget_s}",
            )
        return problems

    def validate(self) -> SearchPlan:
        problems = self.problems()
        if problems:
            raise PlanError(problems)
        return self

    def to_dict(self) -> dict[str, Any]:
        return {
            "start_rate": self.start_rate,
            "min_rate": self.min_rate,
            "max_rate": self.max_rate,
            "precision": f.real(self.precision),
            "growth": f.real(self.growth),
            "probe_s": self.probe_s,
            "hold_s": self.hold_s,
            "max_steps": self.max_steps,
            "budget_s": self.budget_s,
            "method": self.method,
            "saturate_rate": self.saturate_rate,
            "saturate_s": self.saturate_s,
            "hold_min_s": self.hold_min_s,
            "keep_up_s": self.keep_up_s,
            "max_error_rate": f.real(self.max_error_rate),
        }

    @classmethod
    def from_dict(cls, data: object, where: str = "plan") -> SearchPlan:
        return f.read(cls, with_older_defaults(data), where)


def with_older_defaults(data: object) -> object:
    """A plan's JSON object with what a plan written before a setting existed did: one
    without `method` (before the saturate method) was a bisect one; one without `keep_up_s`
    (before holds that fall behind fail) judged its holds by the gates alone."""
    if not isinstance(data, Mapping):
        return data
    older = {"method": BISECT, "keep_up_s": 0}
    given = cast(Mapping[str, Any], data)
    return {**{k: v for k, v in older.items() if k not in given}, **given}


@dataclass
class _Checks:
    """Range checks of a plan's settings, each failure added to `problems`."""

    plan: SearchPlan
    problems: list[tuple[str, str]]

    def bad(self, name: str, why: str) -> None:
        self.problems.append((name, why))

    def integer(self, name: str, lo: int, hi: int) -> bool:
        value: object = getattr(self.plan, name)
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            self.bad(name, f"must be an integer between {lo} and {hi}; got {value!r}")
            return False
        return True

    def integer_or_off(self, name: str, lo: int, hi: int, off: str) -> bool:
        """0 (what `off` says), or an integer in [lo, hi]."""
        value: object = getattr(self.plan, name)
        if type(value) is int and value == 0:
            return True
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            self.bad(name, f"must be 0 ({off}) or an integer between {lo} and {hi}; got {value!r}")
            return False
        return True

    def number(self, name: str, lo: float, hi: float) -> bool:
        """A number in (lo, hi]."""
        value: object = getattr(self.plan, name)
        if isinstance(value, bool) or not isinstance(value, int | float) or not lo < value <= hi:
            self.bad(name, f"must be a number above {lo} and at most {hi}; got {value!r}")
            return False
        return True

    def share(self, name: str) -> None:
        """A number from 0 to 1."""
        value: object = getattr(self.plan, name)
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            self.bad(name, f"must be a number from 0 to 1; got {value!r}")


def _proposal(plan: SearchPlan, state: State) -> tuple[int, str, int] | str:
    if plan.method == SATURATE:
        return search_saturate.propose(plan, state)
    return search_bisect.propose(plan, state)


def _duration(plan: SearchPlan, state: State, phase: str) -> int:
    if phase == SATURATION:
        return plan.saturate_s
    if phase == PROBE:
        return plan.probe_s
    basis = search_saturate.hold_basis(state)
    if plan.method == SATURATE and basis is not None:
        return search_saturate.hold_seconds(plan, basis)
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
        self.plan = plan.validate()
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
    return SearchPlan(**dict(settings)).validate()


def noiseless_outcome(step: Step, knee: float) -> StepOutcome:
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
            history.append((step, noiseless_outcome(step, knee)))
        worst = max(worst, (step.steps, step.load_s), key=lambda w: (w[1], w[0]))
        knee *= 1.01
    return worst
