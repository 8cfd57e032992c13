"""What a capacity search is made of: its steps, their outcomes, the history folded into the
bracket so far, and the result. Pure; `plan` holds the settings, `rule` the stepping, `rates`
the grid of rates the steps offer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from loadgate.capacity.search.confidence import (
    NOISE_HOLDS,
    NOISE_MEASURED,
    NOISE_SOURCES,
    Trials,
    allowed_noise,
    knee_interval,
    step_noise_of,
)
from loadgate.capacity.search.plan import SearchPlan
from loadgate.capacity.search.rates import bracket_precision
from loadgate.records import fields as f

SATURATION = "saturation"  # offered more than the pipeline takes: its throughput, not a verdict
PROBE = "probe"  # a short step (the bisect method's bracketing)
HOLD = "hold"  # a step long enough to decide
PHASES = (SATURATION, PROBE, HOLD)

FOUND = "found"
AT_LEAST_MAX = "at-least-max"
BELOW_MIN = "below-min"
OUT_OF_BUDGET = "out-of-budget"
OUT_OF_STEPS = "out-of-steps"
IN_PROGRESS = "in-progress"  # a provisional result, e.g. for a live table or an interrupted run
STATUSES = (FOUND, AT_LEAST_MAX, BELOW_MIN, OUT_OF_BUDGET, OUT_OF_STEPS, IN_PROGRESS)


@dataclass(frozen=True)
class Step:
    """One run the search asks for: a constant arrival rate for a duration."""

    index: int  # position in the search, from 0
    rate: int  # offered log records per minute
    duration_s: int
    phase: str = field(metadata=f.one_of(PHASES))
    attempt: int = 1  # 2: the retry of a step that failed (or whose figures were unknown)

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
    """What a step's run gave. `passed` is the run's verdict (every gate passed); for a
    saturation step, that the pipeline took everything offered. The figures are for the rule
    (the saturation ones), the report and attribution; None when not measured.
    `lost_records`: acknowledged records the run lost (k6 saw them acknowledged, the store does
    not hold them: judge.soundness), when it lost any; None when it lost none, when its ledger
    could not say, or in a record written before it was kept. A judged step that lost records
    failed, whatever else it shows, and no retry overrules it (`State.confirmed`)."""

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
    # The run's saturation figures (measure.saturation): whether its sending queue filled and
    # stayed full, what the pipeline took per minute over its steady window, and the queue's
    # capacity in log records (queue capacity x records per request).
    saturated: bool | None = None
    throughput_per_min: float | None = None
    queue_records: float | None = None
    lost_records: int | None = None

    @property
    def lost(self) -> int:
        """Acknowledged records the step's run lost (0: none, or not known)."""
        return self.lost_records or 0

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
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
        if self.saturated is not None or self.throughput_per_min is not None:
            d["saturated"] = self.saturated
            d["throughput_per_min"] = f.real(self.throughput_per_min)
            d["queue_records"] = f.real(self.queue_records)
        if self.lost_records is not None:
            d["lost_records"] = self.lost_records
        return d

    @classmethod
    def from_dict(cls, data: object, where: str = "outcome") -> StepOutcome:
        return f.read(cls, data, where)


@dataclass(frozen=True)
class SearchResult:
    """Where a search ended.

    `capacity_per_min` is C, the highest rate that passed every gate (confirmed: its hold
    passed); `lowest_failing_per_min` is F, the lowest rate that failed (twice, or once above
    the saturation throughput, or with its own queue full, or having lost acknowledged
    records); without noise the knee lies in [C, F], `precision` = (F - C) / (F + C) around its
    middle. A found knee lies between `knee_low_per_min` and `knee_high_per_min` with
    `confidence` (a share), allowing for `step_noise` from step to step (a measured one with
    its margin: `confidence.allowed_noise`), which came from `step_noise_source`
    (`confidence.NOISE_SOURCES`: measured elsewhere, fitted to its holds, or stated:
    `confidence.step_noise_of`; None in a record written before it was kept). `load_s` is
    seconds of load, `wall_s` the steps' wall time when every step reported one;
    `saturation_per_min` the pipeline's saturation throughput, when measured.
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
    saturation_per_min: float | None = None
    knee_low_per_min: int | None = None
    knee_high_per_min: int | None = None
    confidence: float | None = None
    step_noise: float | None = None
    step_noise_source: str | None = field(default=None, metadata=f.one_of(NOISE_SOURCES))

    @property
    def converged(self) -> bool:
        return self.status in (FOUND, AT_LEAST_MAX, BELOW_MIN)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
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
        if self.saturation_per_min is not None:
            d["saturation_per_min"] = f.real(self.saturation_per_min)
        if self.confidence is not None:
            d["knee_low_per_min"] = self.knee_low_per_min
            d["knee_high_per_min"] = self.knee_high_per_min
            d["confidence"] = f.real(self.confidence)
        if self.step_noise_source is not None:
            d["step_noise"] = f.real(self.step_noise)
            d["step_noise_source"] = self.step_noise_source
        return d

    @property
    def interval(self) -> tuple[int, int, float] | None:
        """(X, Y, confidence): the knee between X and Y with that confidence, when found."""
        low, high, confidence = self.knee_low_per_min, self.knee_high_per_min, self.confidence
        if low is None or high is None or confidence is None:
            return None
        return low, high, confidence

    @property
    def span_text(self) -> str | None:
        """The interval as "X-Y at Z %", for a table's cell, when found."""
        return span_text(*self.interval) if self.interval is not None else None

    @classmethod
    def from_dict(cls, data: object, where: str = "result") -> SearchResult:
        return f.read(cls, data, where)


@dataclass
class Tries:
    """The attempts at one (rate, phase)."""

    passed: bool = False  # an attempt passed: the rate counts as a pass, unless it lost records
    passes: int = 0
    failures: int = 0
    duration_s: int = 0  # the longest attempt
    queue_full: bool | None = None  # the last failure's sending queue filled (None: unknown)
    lost: int = 0  # acknowledged records its attempts lost

    @property
    def failed(self) -> bool:
        """It failed for good: it lost acknowledged records, or failed and never passed."""
        return self.lost > 0 or (not self.passed and self.failures > 0)


@dataclass(frozen=True)
class Saturation:
    """A saturation step: its rate and attempt, and what it measured."""

    rate: int
    attempt: int
    saturated: bool | None
    throughput_per_min: float | None
    queue_records: float | None

    @property
    def measured(self) -> bool:
        return self.saturated is not None and self.throughput_per_min is not None


@dataclass
class State:
    """The history folded: each (rate, phase) of a judged step tried, its passes and failures,
    and the saturation steps in order."""

    tries: dict[tuple[int, str], Tries] = field(default_factory=dict[tuple[int, str], Tries])
    saturations: list[Saturation] = field(default_factory=list[Saturation])
    queue_explains: bool = False  # a failure whose own queue filled counts at once
    steps: int = 0
    load_s: int = 0
    wall_s: float | None = 0.0

    def _rates(self, phase: str | None, *, passed: bool) -> list[int]:
        return [
            rate
            for (rate, ph), t in self.tries.items()
            if (phase is None or ph == phase) and (t.passed if passed else t.failed)
        ]

    @property
    def took_all(self) -> int | None:
        """The highest rate a saturation step offered and the pipeline took whole."""
        return max(
            (s.rate for s in self.saturations if s.measured and not s.saturated), default=None
        )

    @property
    def reading(self) -> Saturation | None:
        """The saturation step the holds go by: of those that saturated, the one offered the
        least (the mildest overload, which costs the pipeline least), with its throughput the
        geometric mean of its own and the heaviest saturated step's when both ran (the heavy
        reading errs low, the milder one high: see `saturate`); None when none
        saturated, or when the pipeline took more whole elsewhere than it read (a
        contradiction)."""
        saturated = [s for s in self.saturations if s.measured and s.saturated]
        if not saturated:
            return None
        mildest = min(saturated, key=lambda s: (s.rate, -s.attempt))
        heaviest = max(saturated, key=lambda s: (s.rate, s.attempt))
        assert mildest.throughput_per_min is not None
        assert heaviest.throughput_per_min is not None
        took_all = self.took_all
        if took_all is not None and took_all > mildest.throughput_per_min:
            return None
        if heaviest.rate > mildest.rate:
            both = math.sqrt(mildest.throughput_per_min * heaviest.throughput_per_min)
            return replace(mildest, throughput_per_min=both)
        return mildest

    @property
    def ceiling(self) -> float | None:
        """S: what the pipeline took when offered more; no rate above it is sustained."""
        reading = self.reading
        return reading.throughput_per_min if reading is not None else None

    def confirmed(self, rate: int, tries: Tries) -> bool:
        """A failure counts: it lost acknowledged records (never a glitch: the capacity lies
        below it), or failed twice, or once above what the pipeline took when saturated (the
        saturation step says the same), or (`queue_explains`) once with its own sending queue
        full (the pipeline did not keep up: no glitch)."""
        ceiling = self.ceiling
        explained = self.queue_explains and tries.queue_full is True
        twice = tries.failures >= 2
        return tries.lost > 0 or twice or (ceiling is not None and rate > ceiling) or explained

    @property
    def lost(self) -> dict[int, int]:
        """Acknowledged records lost by the judged steps, by rate (rates that lost none left
        out)."""
        lost: dict[int, int] = {}
        for (rate, _), t in self.tries.items():
            if t.lost:
                lost[rate] = lost.get(rate, 0) + t.lost
        return lost

    @property
    def high(self) -> tuple[int, str, bool] | None:
        """F: the lowest rate that failed, its phase, and whether its failure is confirmed."""
        failed = [(r, ph, self.confirmed(r, t)) for (r, ph), t in self.tries.items() if t.failed]
        return min(failed, key=lambda x: (x[0], not x[2])) if failed else None

    def _below_high(self, rates: list[int]) -> int | None:
        high = self.high
        below = [r for r in rates if high is None or r < high[0]]
        return max(below) if below else None

    @property
    def low(self) -> int | None:
        """C from the probes: the highest rate below F whose probe passed."""
        return self._below_high(self._rates(PROBE, passed=True))

    @property
    def held(self) -> int | None:
        """The highest rate below F whose hold passed."""
        return self._below_high(self._rates(HOLD, passed=True))

    @property
    def capacity(self) -> int | None:
        return self.held if self.held is not None else self.low

    @property
    def failed_hold(self) -> bool:
        return bool(self._rates(HOLD, passed=False))

    def hold_seconds(self, rate: int | None) -> int | None:
        t = self.tries.get((rate, HOLD)) if rate is not None else None
        return t.duration_s if t is not None else None


def fold(history: Sequence[tuple[Step, StepOutcome]], *, queue_explains: bool = False) -> State:
    state = State(queue_explains=queue_explains)
    for step, outcome in history:
        state.steps += 1
        state.load_s += step.duration_s
        if state.wall_s is not None and outcome.wall_s is not None:
            state.wall_s += outcome.wall_s
        else:
            state.wall_s = None
        if step.phase == SATURATION:
            state.saturations.append(
                Saturation(
                    step.rate,
                    step.attempt,
                    outcome.saturated,
                    outcome.throughput_per_min,
                    outcome.queue_records,
                )
            )
            continue
        tries = state.tries.setdefault((step.rate, step.phase), Tries())
        tries.duration_s = max(tries.duration_s, step.duration_s)
        tries.lost += outcome.lost
        if outcome.passed and not outcome.lost:
            tries.passed = True
            tries.passes += 1
        else:
            tries.failures += 1
            tries.queue_full = outcome.saturated
    return state


def rate_text(value: float) -> str:
    return f"{value:,.0f}"


def percent(share: float) -> str:
    """0.9 -> "90 %", 0.975 -> "97.5 %"."""
    return f"{share * 100:.4g} %"


def interval_text(low: int, high: int, confidence: float, unit: str = "") -> str:
    """The knee's interval in words: between X and Y[ unit] with Z % confidence."""
    between = f"between {rate_text(low)} and {rate_text(high)}{unit and ' ' + unit}"
    return f"{between} with {percent(confidence)} confidence"


def span_text(low: int, high: int, confidence: float) -> str:
    """The knee's interval for a table's cell: X-Y at Z %."""
    return f"{rate_text(low)}-{rate_text(high)} at {percent(confidence)}"


def judged_trials(state: State) -> list[Trials]:
    """The attempts the knee's interval counts (see `confidence`): every attempt of a hold,
    its passes and its failures (a failure a retry overruled too: dropping it would move the
    knee up), and every probe's failures (a probe's pass says nothing of a hold)."""
    trials: list[Trials] = []
    for (rate, phase), t in state.tries.items():
        if phase == HOLD and (t.passes or t.failures):
            trials.append(Trials(rate, t.passes, t.failures))
        elif t.failures:
            trials.append(Trials(rate, 0, t.failures))
    return trials


@dataclass(frozen=True)
class KneeInterval:
    """Where a found knee lies: between `low` and `high` with `confidence`, allowing for
    `step_noise` from step to step, which came from `source` (confidence.NOISE_SOURCES; a
    measured one with its margin: `confidence.allowed_noise`)."""

    low: int
    high: int
    confidence: float
    step_noise: float
    source: str


def _interval_of(plan: SearchPlan, state: State, capacity: int, high: int) -> KneeInterval:
    """Where the knee of a found bracket [capacity, high] lies, with the plan's confidence and
    the step noise measured where it can be (`confidence.step_noise_of`)."""
    trials = judged_trials(state)
    noise, source = step_noise_of(trials, plan.measured_step_noise, plan.step_noise)
    allowed = allowed_noise(noise, source)
    low, top = knee_interval(trials, capacity, high, allowed, plan.confidence)
    return KneeInterval(low, top, plan.confidence, noise, source)


def _held_text(state: State, rate: int | None) -> str:
    seconds = state.hold_seconds(rate)
    return f"held {seconds} s" if seconds is not None else "held"


def result_of(plan: SearchPlan, state: State, status: str, why: str = "") -> SearchResult:
    """The result of a search that stands at `state`, with `status`."""
    capacity, held = state.capacity, state.held
    high = state.high[0] if state.high is not None else None
    confirmed = held is not None and capacity == held
    interval: KneeInterval | None = None
    if status == BELOW_MIN:
        capacity, confirmed = None, False
        summary = _below_min_text(plan, state)
    elif status == AT_LEAST_MAX:
        summary = (
            f"at least {rate_text(plan.max_rate)} records/min: nothing failed up to the highest "
            f"rate the search offers ({_held_text(state, plan.max_rate)})"
        )
    elif status == FOUND:
        assert capacity is not None
        assert high is not None
        interval = _interval_of(plan, state, capacity, high)
        summary = _found_text(state, capacity, high, interval)
    else:
        passes = f"passes at {rate_text(capacity)}" if capacity is not None else "no rate passed"
        fails = f"fails at {rate_text(high)}" if high is not None else "nothing failed"
        held_text = _held_text(state, capacity) if confirmed else "unconfirmed"
        summary = f"not converged ({why}): {passes} ({held_text}), {fails}"
    if state.lost:
        summary += "; " + _lost_text(state.lost)
    ceiling = state.ceiling
    if ceiling is not None:
        summary += f"; saturation throughput {rate_text(ceiling)}/min"
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
        saturation_per_min=round(ceiling, 1) if ceiling is not None else None,
        knee_low_per_min=interval.low if interval else None,
        knee_high_per_min=interval.high if interval else None,
        confidence=interval.confidence if interval else None,
        step_noise=interval.step_noise if interval else None,
        step_noise_source=interval.source if interval else None,
    )


def _lost_text(lost: dict[int, int]) -> str:
    """What the judged steps lost, where: each such rate bounds the capacity from above."""
    where = ", ".join(f"{rate_text(n)} at {rate_text(rate)}" for rate, n in sorted(lost.items()))
    return f"lost acknowledged records ({where}/min): failures no retry overrules"


def _below_min_text(plan: SearchPlan, state: State) -> str:
    """Why even the lowest rate offered failed."""
    tries = [t.failures for (r, _), t in state.tries.items() if r == plan.min_rate]
    above = state.ceiling is not None and plan.min_rate > state.ceiling
    how = (
        "twice"
        if max(tries, default=0) >= 2
        else "above the saturation throughput"
        if above
        else "with its queue full"
    )
    return f"below {rate_text(plan.min_rate)} records/min: the lowest rate offered failed {how}"


_NOISE_WORDS = {NOISE_MEASURED: "measured", NOISE_HOLDS: "measured in its holds"}


def _found_text(state: State, capacity: int, high: int, interval: KneeInterval) -> str:
    """The found capacity, its knee's interval and the deciding pass and fail."""
    knee = interval_text(interval.low, interval.high, interval.confidence, "records/min")
    sigma = percent(interval.step_noise)
    words = _NOISE_WORDS.get(interval.source)
    noise = f"step noise {sigma}, {words}" if words else f"step noise up to {sigma}"
    return (
        f"{rate_text(capacity)} records/min, the knee {knee} ({noise}): "
        f"passes at {rate_text(capacity)} "
        f"({_held_text(state, capacity)}), fails at {rate_text(high)} "
        f"(±{bracket_precision(capacity, high) * 100:.1f} %)"
    )
