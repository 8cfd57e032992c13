"""Capacity search: the highest log-records-per-minute rate at which every gate passes.

A pure state machine. `advance(plan, history)` looks at the steps run so far and their outcomes
and returns either the next `Step` to run or the final `SearchResult`; `Search` keeps the history
for a driver that runs each step for real (`next_step()`, run it, `record(step, outcome)`).
The driver leaves the stack to settle (queue drained) between steps; the search counts load only.

The strategy, in rates rounded to three significant figures (`round_rate`):

1. **Bracket** with short probes (`probe_s`): from `start_rate`, multiply by `growth` after each
   pass (capped at `max_rate`) until a step fails; or, when the first step fails, divide by
   `growth` (floored at `min_rate`) until one passes. The bracket is [C, F]: C the highest rate
   that passed, F the lowest that failed.
2. **Bisect** at the geometric middle sqrt(C*F) until the bracket is within the precision:
   (F - C) / (F + C) <= precision, i.e. F/C <= (1 + p)/(1 - p), 1.105 at the default ±5 %.
3. **Hold** at C for `hold_s`, longer than a probe: a queue that fills slowly overflows only
   then. A passing hold confirms C. A failing hold shows the probes were optimistic near this
   knee, so the search goes on with holds only, each one precision width below the lowest
   failure (`step_below`), until one passes.

Noise guard: a failing step is run once more at the same rate before the result rests on it.
The retry is lazy: the search goes on below a failure at once (bisection does not wait) and
offers the lowest failure again when the bracket is within the precision (or `min_rate`
failed). If that retry passes, the rate counts as a pass and the bracket reopens above it; only
a rate that failed twice is reported as F. Real failures are common (each bisection step below
the knee) and spurious ones rare, so one retry per search beats one per failure: with holds
failing up to 8 % below where the probes pass, every simulated search still ends within the
budget, which retrying each failure at once does not achieve. A single spurious failure never
makes a knee (it costs the bisection below it and the retry); independent spurious failures
with probability q make one with probability about (rates tried) * q^2, ~2 % at q = 5 %.

Rates above `max_rate` and below `min_rate` are never offered: a search whose hold at `max_rate`
passes with nothing failed reports "at least max_rate" (`at-least-max`); one whose `min_rate`
fails twice reports "below min_rate" (`below-min`). Neither is a knee. Before each step the
search checks `max_steps` and the load budget (`budget_s`, seconds of load): a step that would
exceed either is not run, and the result says so (`out-of-steps`, `out-of-budget`) with the best
bracket so far and whether its C was held.

Load at the defaults (15 s probes, a 60 s hold, growth 2, ±5 %, start 100,000, range
10,000-1,000,000), on this machine where the default collector gives way near 200,000
records/min: a pass at 100,000 and a failure at 200,000 (30 s); the bracket ratio 2 needs three
bisections, 2^(1/8) = 1.09 <= 1.105 (45 s); the retry of F (15 s); the hold (60 s): 150 s.
A knee near 1,000,000: five probes up (75 s), two bisections of the ratio-1.25 bracket (30 s),
the retry (15 s), the hold: 180 s. A knee near 10,000: four failing probes down and a pass
(75 s), two bisections, the retry, the hold: 180 s. Nothing failing: five probes and the hold,
135 s; everything failing: five probes and the retry, 90 s. A failing hold adds the holds of the
descent and the retry of the failed one, 120 s for one step down: 150 + 120 = 270 s near
200,000, 300 s at worst, the 300 s budget. Anything longer stops at the budget.
`SearchPlan.noiseless_worst_case()` computes the longest noiseless search of a plan (9 steps,
180 s at the defaults) and `validate` refuses a budget or a step limit below it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from loadgate.contract.spec import MAX_RATE
from loadgate.records import fields as f

PROBE = "probe"
HOLD = "hold"
PHASES = (PROBE, HOLD)

FOUND = "found"
AT_LEAST_MAX = "at-least-max"
BELOW_MIN = "below-min"
OUT_OF_BUDGET = "out-of-budget"
OUT_OF_STEPS = "out-of-steps"
IN_PROGRESS = "in-progress"  # a provisional result, e.g. for a live table or an interrupted run
STATUSES = (FOUND, AT_LEAST_MAX, BELOW_MIN, OUT_OF_BUDGET, OUT_OF_STEPS, IN_PROGRESS)


class PlanError(ValueError):
    """Bad search settings: each problem names the setting and what is allowed."""

    def __init__(self, problems: list[tuple[str, str]]):
        self.problems = problems
        super().__init__("; ".join(f"{name}: {why}" for name, why in problems))


def round_rate(rate: float) -> int:
    """A rate rounded to three significant figures (at least 1): 141_421.4 -> 141_000."""
    if rate < 1000:
        return max(1, round(rate))
    quantum = 10 ** (math.floor(math.log10(rate)) - 2)
    return round(rate / quantum) * quantum


def bracket_precision(low: float, high: float) -> float:
    """Half-width of [low, high] relative to its middle: (high - low) / (high + low)."""
    return (high - low) / (high + low)


def bisections_needed(ratio: float, precision: float) -> int:
    """Geometric bisections that take a bracket high/low = ratio to within the precision."""
    target = (1 + precision) / (1 - precision)
    steps = 0
    while ratio > target * (1 + 1e-12):
        ratio = math.sqrt(ratio)
        steps += 1
    return steps


@dataclass(frozen=True)
class SearchPlan:
    """Settings of a search. Rates are log records per minute, durations whole seconds."""

    start_rate: int = 100_000
    min_rate: int = 10_000
    max_rate: int = 1_000_000
    precision: float = 0.05  # the knee within ±precision of the bracket's middle
    growth: float = 2.0  # factor between probes while bracketing
    probe_s: int = 15
    hold_s: int = 60
    max_steps: int = 20  # 300 s / 15 s probes: the budget binds first
    budget_s: int = 300  # seconds of load, all steps together

    def noiseless_worst_case(self) -> tuple[int, int]:
        """Steps and seconds of load of the longest search this plan makes against a pipeline
        without noise, over knees 1 % apart from half `min_rate` to twice `max_rate` (the
        budget and step limit left out). `validate` requires `max_steps` and `budget_s` to
        cover it: only noise and failing holds may then stop a search early."""
        return _noiseless_worst_case(replace(self, max_steps=1000, budget_s=86_400))

    def problems(self) -> list[tuple[str, str]]:
        """Each bad setting with what is allowed; empty when the plan is sound."""
        problems: list[tuple[str, str]] = []

        def bad(name: str, why: str) -> None:
            problems.append((name, why))

        def integer(name: str, lo: int, hi: int) -> bool:
            value: object = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
                bad(name, f"must be an integer between {lo} and {hi}; got {value!r}")
                return False
            return True

        def number(name: str, lo: float, hi: float) -> bool:
            value: object = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not lo < value <= hi
            ):
                bad(name, f"must be a number above {lo} and at most {hi}; got {value!r}")
                return False
            return True

        rates = [integer(name, 1, MAX_RATE) for name in ("min_rate", "max_rate", "start_rate")]
        lo, hi, start = self.min_rate, self.max_rate, self.start_rate
        if all(rates) and hi <= lo:
            bad("max_rate", f"must be above min_rate ({lo}); got {hi}")
        elif all(rates) and not lo <= start <= hi:
            bad("start_rate", f"must be between min_rate ({lo}) and max_rate ({hi}); got {start}")
        if number("precision", 0.01, 0.25) & number("growth", 1.0, 10.0):
            target = (1 + self.precision) / (1 - self.precision)
            if self.growth <= target:
                bad(
                    "growth",
                    f"must be above {target:.3f} for precision {self.precision}; got {self.growth}",
                )
        durations_ok = integer("probe_s", 1, 3600) & integer("hold_s", 1, 3600)
        if durations_ok and self.hold_s < self.probe_s:
            bad("hold_s", f"must be at least probe_s ({self.probe_s}); got {self.hold_s}")
        steps_ok = integer("max_steps", 1, 1000)
        budget_ok = integer("budget_s", 1, 86_400)
        if problems:
            return problems  # the minimums below need sound rates, growth and durations
        worst_steps, worst_load = self.noiseless_worst_case()
        if steps_ok and self.max_steps < worst_steps:
            bad(
                "max_steps",
                f"must be at least {worst_steps}, the steps of this plan's longest "
                f"search without noise; got {self.max_steps}",
            )
        if budget_ok and self.budget_s < worst_load:
            bad(
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
        }

    @classmethod
    def from_dict(cls, data: object, where: str = "plan") -> SearchPlan:
        return f.read(cls, data, where)


@dataclass(frozen=True)
class Step:
    """One run the search asks for: a constant arrival rate for a duration."""

    index: int  # position in the search, from 0
    rate: int  # offered log records per minute
    duration_s: int
    phase: str = field(metadata=f.one_of(PHASES))
    attempt: int = 1  # 2: the retry of a step that failed

    @property
    def duration(self) -> str:
        """The duration in k6 syntax (RunSpec.duration)."""
        return f"{self.duration_s}s"

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "rate": self.rate,
            "duration_s": self.duration_s,
            "phase": self.phase,
            "attempt": self.attempt,
        }

    @classmethod
    def from_dict(cls, data: object, where: str = "step") -> Step:
        return f.read(cls, data, where)


@dataclass(frozen=True)
class StepOutcome:
    """What a step's run gave. `passed` is the run's verdict (every gate passed); the figures are
    for the report and attribution, None when not measured."""

    rate: int  # offered log records per minute
    passed: bool
    accepted_per_min: float | None = None  # k6 log records accepted per minute
    p99_ms: float | None = None  # k6 request duration p99
    error_rate: float | None = None  # k6 failed requests / requests
    queue_max: float | None = None  # collector sending queue high-water mark
    collector_cpu_cores: float | None = None  # collector CPU, max over the run, in cores
    loki_discarded: int | None = None  # lines Loki discarded (e.g. rate limited)
    verdict: str = ""  # e.g. "PASS" or "FAIL: p99_ms, logs_per_minute"
    run_id: str | None = None  # the step's results/<run_id>/result.json, when written
    wall_s: float | None = None  # the step's wall time (load, drain, settle)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rate": self.rate,
            "passed": self.passed,
            "accepted_per_min": f.real(self.accepted_per_min),
            "p99_ms": f.real(self.p99_ms),
            "error_rate": f.real(self.error_rate),
            "queue_max": f.real(self.queue_max),
            "collector_cpu_cores": f.real(self.collector_cpu_cores),
            "loki_discarded": self.loki_discarded,
            "verdict": self.verdict,
            "run_id": self.run_id,
            "wall_s": f.real(self.wall_s),
        }

    @classmethod
    def from_dict(cls, data: object, where: str = "outcome") -> StepOutcome:
        return f.read(cls, data, where)


@dataclass(frozen=True)
class SearchResult:
    """Where a search ended.

    `capacity_per_min` is C, the highest rate that passed every gate (confirmed: its hold
    passed); `lowest_failing_per_min` is F, the lowest rate that failed twice; the knee lies in
    [C, F], `precision` = (F - C) / (F + C) around its middle. `load_s` is seconds of load,
    `wall_s` the steps' wall time when every step reported one.
    """

    status: str = field(metadata=f.one_of(STATUSES))
    capacity_per_min: int | None
    confirmed: bool
    lowest_failing_per_min: int | None
    precision: float | None
    steps: int
    load_s: int
    wall_s: float | None
    summary: str

    @property
    def converged(self) -> bool:
        return self.status in (FOUND, AT_LEAST_MAX, BELOW_MIN)

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "capacity_per_min": self.capacity_per_min,
            "confirmed": self.confirmed,
            "lowest_failing_per_min": self.lowest_failing_per_min,
            "precision": f.real(self.precision),
            "steps": self.steps,
            "load_s": self.load_s,
            "wall_s": f.real(self.wall_s),
            "summary": self.summary,
        }

    @classmethod
    def from_dict(cls, data: object, where: str = "result") -> SearchResult:
        return f.read(cls, data, where)


@dataclass
class _Tries:
    """The attempts at one (rate, phase)."""

    passed: bool = False  # an attempt passed: the rate counts as a pass
    failures: int = 0

    @property
    def failed(self) -> bool:
        return not self.passed and self.failures > 0

    @property
    def confirmed(self) -> bool:
        """Failed twice: the failure counts."""
        return not self.passed and self.failures >= 2


@dataclass
class _State:
    """The history folded: each (rate, phase) tried, its passes and failures."""

    tries: dict[tuple[int, str], _Tries] = field(default_factory=dict[tuple[int, str], _Tries])
    steps: int = 0
    load_s: int = 0
    wall_s: float | None = 0.0

    def rates(self, phase: str | None, *, passed: bool) -> list[int]:
        return [
            rate
            for (rate, ph), t in self.tries.items()
            if (phase is None or ph == phase) and (t.passed if passed else t.failed)
        ]

    @property
    def high(self) -> tuple[int, str, bool] | None:
        """F: the lowest rate that failed, its phase, and whether its failure is confirmed."""
        failed = [(rate, ph, t.confirmed) for (rate, ph), t in self.tries.items() if t.failed]
        return min(failed, key=lambda f: (f[0], not f[2])) if failed else None

    def _below_high(self, rates: list[int]) -> int | None:
        high = self.high
        below = [r for r in rates if high is None or r < high[0]]
        return max(below) if below else None

    @property
    def low(self) -> int | None:
        """C from the probes: the highest rate below F whose probe passed."""
        return self._below_high(self.rates(PROBE, passed=True))

    @property
    def held(self) -> int | None:
        """The highest rate below F whose hold passed."""
        return self._below_high(self.rates(HOLD, passed=True))

    @property
    def capacity(self) -> int | None:
        return self.held if self.held is not None else self.low

    @property
    def failed_hold(self) -> bool:
        return bool(self.rates(HOLD, passed=False))


def _fold(history: Sequence[tuple[Step, StepOutcome]]) -> _State:
    state = _State()
    for step, outcome in history:
        state.steps += 1
        state.load_s += step.duration_s
        if state.wall_s is not None and outcome.wall_s is not None:
            state.wall_s += outcome.wall_s
        else:
            state.wall_s = None
        tries = state.tries.setdefault((step.rate, step.phase), _Tries())
        if outcome.passed:
            tries.passed = True
        else:
            tries.failures += 1
    return state


def _rate(value: int) -> str:
    return f"{value:,}"


def step_below(rate: int, precision: float) -> int:
    """The lowest rounded rate r below `rate` with [r, rate] within the precision."""
    r = round_rate(rate * (1 - precision) / (1 + precision))
    while bracket_precision(r, rate) > precision:
        r += 10 ** max(0, math.floor(math.log10(r)) - 2)  # one unit of the third figure up
    return r


def _result(plan: SearchPlan, state: _State, status: str, why: str = "") -> SearchResult:
    capacity, held = state.capacity, state.held
    high = state.high[0] if state.high is not None else None
    confirmed = held is not None and capacity == held
    if status == BELOW_MIN:
        capacity, confirmed = None, False
        summary = f"below {_rate(plan.min_rate)} records/min: the lowest rate offered failed twice"
    elif status == AT_LEAST_MAX:
        summary = (
            f"at least {_rate(plan.max_rate)} records/min: nothing failed up to the highest rate "
            f"the search offers (held {plan.hold_s} s)"
        )
    elif status == FOUND:
        assert capacity is not None
        assert high is not None
        summary = (
            f"{_rate(capacity)} records/min: passes at {_rate(capacity)} (held {plan.hold_s} s), "
            f"fails at {_rate(high)}; knee ±{bracket_precision(capacity, high) * 100:.1f} %"
        )
    else:
        passes = f"passes at {_rate(capacity)}" if capacity is not None else "no rate passed"
        fails = f"fails at {_rate(high)}" if high is not None else "nothing failed"
        held_text = f"held {plan.hold_s} s" if confirmed else "unconfirmed"
        summary = f"not converged ({why}): {passes} ({held_text}), {fails}"
    precision = (
        bracket_precision(capacity, high) if capacity is not None and high is not None else None
    )
    return SearchResult(
        status=status,
        capacity_per_min=capacity,
        confirmed=confirmed,
        lowest_failing_per_min=high,
        precision=precision,
        steps=state.steps,
        load_s=state.load_s,
        wall_s=round(state.wall_s, 1) if state.wall_s is not None else None,
        summary=summary,
    )


def _proposal(plan: SearchPlan, state: _State) -> tuple[int, str, int] | str:
    """The next (rate, phase, attempt) by the strategy alone, or a final status."""
    low, held = state.low, state.held
    if state.high is None:
        if held is not None and held >= plan.max_rate:
            return AT_LEAST_MAX
        if low is None:
            return plan.start_rate, PROBE, 1
        if low >= plan.max_rate:
            return plan.max_rate, HOLD, 1
        return min(plan.max_rate, round_rate(low * plan.growth)), PROBE, 1
    high, high_phase, confirmed = state.high
    retry = (high, high_phase, 2)  # a failure is offered again before the result rests on it
    if held is not None and _precise(held, high, plan.precision):
        return FOUND if confirmed else retry
    if high <= plan.min_rate:
        return BELOW_MIN if confirmed else retry
    if state.failed_hold:
        # A hold failed where the probes passed: short probes are optimistic near this knee,
        # so go on with holds only, one precision width below the lowest failure.
        return max(plan.min_rate, step_below(high, plan.precision)), HOLD, 1
    if low is None:
        return max(plan.min_rate, round_rate(high / plan.growth)), PROBE, 1
    if _precise(low, high, plan.precision):
        return (low, HOLD, 1) if confirmed else retry
    return round_rate(math.sqrt(low * high)), PROBE, 1


def _precise(low: int, high: int, precision: float) -> bool:
    """The bracket is within the precision, or no rounded rate lies between its ends."""
    middle = round_rate(math.sqrt(low * high))
    return bracket_precision(low, high) <= precision or not low < middle < high


def advance(plan: SearchPlan, history: Sequence[tuple[Step, StepOutcome]]) -> Step | SearchResult:
    """The next step to run after `history`, or the result when the search is over."""
    state = _fold(history)
    proposal = _proposal(plan, state)
    if isinstance(proposal, str):
        return _result(plan, state, proposal)
    rate, phase, attempt = proposal
    duration = plan.hold_s if phase == HOLD else plan.probe_s
    if state.steps + 1 > plan.max_steps:
        return _result(plan, state, OUT_OF_STEPS, f"max_steps {plan.max_steps} reached")
    if state.load_s + duration > plan.budget_s:
        return _result(
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
        why = f"in progress, next: {nxt.phase} at {_rate(nxt.rate)}"
        return _result(self.plan, _fold(self._history), IN_PROGRESS, why)


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


@cache
def _noiseless_worst_case(plan: SearchPlan) -> tuple[int, int]:
    worst = (0, 0)
    knee = plan.min_rate / 2
    while knee <= plan.max_rate * 2:
        history: list[tuple[Step, StepOutcome]] = []
        while isinstance(step := advance(plan, history), Step):
            history.append((step, StepOutcome(step.rate, passed=step.rate <= knee)))
        worst = max(worst, (step.steps, step.load_s), key=lambda w: (w[1], w[0]))
        knee *= 1.01
    return worst
