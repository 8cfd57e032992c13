"""The simulated pipeline a capacity search runs against: what each of its steps gives, in
closed form, with the noise, flakes and misreadings of a shared machine.

A pipeline that sustains `knee` records/min behind a sending queue of `queue` records. Offered
more, it takes in the excess until the queue is full, then refuses it (`refused_share`). Two
faces, one model:

- a step (`pipeline(step)`, what search.rule.run_search calls): its StepOutcome;
- a run (`pipeline.execute`, what search.driver.run_search calls in place of runner.execute):
  the step's RunResult as the runner writes it, judged and attributed.

A judged step (probe or hold) fails when its refused share passes `error_gate` (the error-rate
gate; 0 with no queue: a step fails as soon as it is above the knee) or, with `keep_up` (a
share), when the pipeline sent on less than that share of what it took in (it fell behind:
search.driver.outcome_of). A saturation step reads the knee: `knee * low` (overload costs a
small machine's pipeline CPU), times (offered / knee) ** -`overload_cost` (the heavier the
overload, the lower), with `sat_noise` (relative SD). `noise` moves the knee per step
(log-normal); `hold_knee` is the knee of holds where it differs (short probes are optimistic);
`flake` fails any judged step with that probability; `once` fails a first attempt that passed
with that probability; `flaky_once` fails the first attempt at each of those rates; `gate_at`:
another gate (p99, say) fails holds above it; `unmeasured`: that many saturation steps have no
steady window (a step reads unknown; a run has k6's figures only).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from loadgate.capacity.search.rule import HOLD, PROBE, SATURATION, Step, StepOutcome
from loadgate.contract.spec import RunSpec
from loadgate.records.result import RunResult

from ..runresults import pipeline as pipeline_figures
from ..runresults import run_result, saturation

QUEUE = 5_000.0  # the default collector's sending queue: 1,000 requests of 5 records
HOLD_RUN_S = 60  # a run this long is a hold (the bisect method's; its probes are shorter)


def refused_share(rate: float, knee: float, seconds: float, queue: float) -> float:
    """The share of a step's records refused when `rate` is offered for `seconds` to a pipeline
    that sustains `knee` behind a queue of `queue` records: none until the queue is full, then
    the excess."""
    if rate <= knee:
        return 0.0
    excess = rate - knee
    fill_s = 60 * queue / excess
    return max(0.0, seconds - fill_s) / seconds * excess / rate


def rng(seed: int) -> random.Random:
    return random.Random(seed)  # noqa: S311 (a simulation, not cryptography)


def log_uniform(r: random.Random, lo: float, hi: float) -> float:
    return math.exp(r.uniform(math.log(lo), math.log(hi)))


@dataclass
class SimulatedPipeline:
    """A pipeline with a knee, its steps and runs in closed form (each setting: the module's
    docstring)."""

    knee: float
    queue: float | None = QUEUE  # None: a queue that never fills
    error_gate: float = 0.01
    hold_knee: float | None = None
    low: float = 1.0
    overload_cost: float = 0.0
    sat_noise: float = 0.0
    noise: float = 0.0
    flake: float = 0.0
    once: float = 0.0
    flaky_once: set[int] = field(default_factory=set[int])
    gate_at: float | None = None
    unmeasured: int = 0
    keep_up: float | None = None
    wall_s: float = 30.0  # each step's wall time
    seed: int = 0
    offered: list[Step] = field(default_factory=list[Step])  # every step, in order
    specs: list[RunSpec] = field(default_factory=list[RunSpec])  # every run, in order

    def __post_init__(self) -> None:
        self._rng = rng(self.seed)

    @classmethod
    def without_queue(cls, knee: float, **over: Any) -> SimulatedPipeline:
        """A pipeline whose steps pass up to the knee and fail above it, however short."""
        return cls(knee, queue=0.0, error_gate=0.0, **over)

    # ---- a step ---------------------------------------------------------------------------------

    def __call__(self, step: Step) -> StepOutcome:
        self.offered.append(step)
        knee = self.hold_knee if step.phase == HOLD and self.hold_knee else self.knee
        if self.noise:
            knee *= math.exp(self._rng.gauss(0, self.noise))
        if step.phase == SATURATION:
            return self._saturation(step, knee)
        return self._judged(step, knee)

    def _saturation(self, step: Step, knee: float) -> StepOutcome:
        if self.unmeasured > 0:
            self.unmeasured -= 1
            return StepOutcome(step.rate, False, verdict="unknown")
        saturated = step.rate > knee
        seen = knee * self.low * math.exp(self._rng.gauss(0, self.sat_noise))
        seen *= max(1.0, step.rate / knee) ** -self.overload_cost
        return StepOutcome(
            step.rate,
            not saturated,
            saturated=saturated,
            throughput_per_min=min(step.rate, seen) if saturated else step.rate,
            queue_records=self.queue,
        )

    def _judged(self, step: Step, knee: float) -> StepOutcome:
        queue = math.inf if self.queue is None else self.queue
        refused = refused_share(step.rate, knee, step.duration_s, queue)
        behind = self.keep_up is not None and knee < self.keep_up * step.rate
        passed = refused <= self.error_gate and not behind
        if self.flake and self._rng.random() < self.flake:
            passed = False
        if step.rate in self.flaky_once and step.attempt == 1:
            passed = False
        if passed and step.attempt == 1 and self.once and self._rng.random() < self.once:
            passed = False
        saturated = refused > 0 or behind
        if self.gate_at is not None and step.phase == HOLD and step.rate > self.gate_at:
            return StepOutcome(step.rate, False, verdict="FAIL: p99_ms", saturated=saturated)
        verdict = "PASS" if passed else "FAIL"
        return StepOutcome(
            step.rate, passed, verdict=verdict, wall_s=self.wall_s, saturated=saturated
        )

    # ---- a run ----------------------------------------------------------------------------------

    def execute(self, spec: RunSpec, target: Any, results_root: Path, **options: Any) -> RunResult:
        """runner.execute's stand-in: the run of a search's step, as this pipeline gives it. A
        run with run --saturate's gates (max error rate 1) is a saturation step, a run of
        HOLD_RUN_S or more a hold; a failing run refused 3 % with its queue full."""
        self.specs.append(spec)
        outcome = self(self._step_of(spec))
        taken = min(spec.rate, self.knee)
        if spec.max_error_rate == 1.0:
            ratio = taken / spec.rate
            result = run_result(spec, accepted_ratio=ratio, error_rate=1 - ratio)
            sat = saturation(spec.rate, taken)
            if outcome.throughput_per_min is None:
                sat = replace(sat, saturated=None, accepted_per_min=None, reason="too short")
            return replace(result, saturation=sat)
        if outcome.passed:
            return replace(run_result(spec), saturation=saturation(spec.rate, spec.rate))
        figures = pipeline_figures(
            accepted=round(taken * spec.duration_s / 60), queue_size_max=1000.0
        )
        return run_result(spec, accepted_ratio=0.97, error_rate=0.03, pipe=figures)

    def _step_of(self, spec: RunSpec) -> Step:
        if spec.max_error_rate == 1.0:
            phase = SATURATION
        else:
            phase = HOLD if spec.duration_s >= HOLD_RUN_S else PROBE
        tried = sum(1 for s in self.offered if (s.rate, s.phase) == (spec.rate, phase))
        return Step(len(self.offered), spec.rate, int(spec.duration_s), phase, tried + 1)
