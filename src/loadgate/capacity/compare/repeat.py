"""One repeat of a comparison on the local stack (`LocalRepeats`): a fresh stack of the side,
the runs its metrics need, in this order, and the stack stopped (always, also on Ctrl-C):

1. a saturation run (`--saturate`'s offered load and gates: `saturating`), for `saturation`,
   and on the comparison's first run for the pressure rate when it is not given (from its
   saturation, or from what it carried when it took everything offered: the first pair's order
   is drawn too, so either side may set it);
2. a pressure run at the pressure rate, for `pressure-p99` and the `pressure-cpu` metrics. The
   rate is `fraction` x the first saturation the comparison measured (`Pressure`, set once and
   recorded), so both sides run at the same rate; the run takes the saturation run's VUs,
   pre-allocated, so k6 never starts VUs while it measures;
3. a run at the fixed `--rate`, for `p99` and `cpu`;
4. a capacity search, for `capacity`.

A run that fails contributes None for its metrics, with a note and a failure; so does a run
that failed its gates (values.failed_gates: not a measurement of speed), and a run that lost
records k6 saw acknowledged, or whose ledger cannot be checked (unsound: values.unsound), which
the outcome lists (`unsound`) and which sets no pressure rate. A candidate stack that does not
start is the candidate's failure (every value unknown: the rule calls a candidate that leaves a
metric unknown where the baseline measured it a regression); a baseline stack that does not
start aborts the comparison (AbortedError: nothing to compare with).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import ClassVar, Protocol

from loadgate.capacity.compare import rule
from loadgate.capacity.compare import values as cv
from loadgate.capacity.compare.record import Pressure
from loadgate.capacity.compare.rule import BASELINE, Metric
from loadgate.capacity.compare.run_order import ScheduledRun
from loadgate.capacity.compare.sides import ComparedStack
from loadgate.capacity.compare.stack_modes import FRESH
from loadgate.capacity.search import driver as searching
from loadgate.capacity.search.record import SearchRecord
from loadgate.capacity.search.rule import SearchPlan
from loadgate.contract.spec import RunSpec
from loadgate.judge.soundness import Unsound
from loadgate.measure.pipeline import Scope
from loadgate.measure.queries import QueryError
from loadgate.measure.saturation import REFUSED_SHARE, SATURATE_PARAMS, TOOK_ALL
from loadgate.records import result as results
from loadgate.runner import run as runner
from loadgate.runner.run_parts import scenario_scope
from loadgate.runner.target import OpenedTarget, Target
from loadgate.stack import local, session
from loadgate.stack.ops import StackOps
from loadgate.stack.ports import Ports
from loadgate.stack.procs import ProcessId
from loadgate.targets.local import LocalTarget

DEFAULT_PRESSURE_FRACTION = 0.7  # of the baseline's saturation throughput


@dataclass(frozen=True)
class RepeatOutcome:
    """What one repeat measured: values by metric name (None: not measured), the runs and
    search behind it, their verdicts (PASS/FAIL, None if none finished), notes, where a value
    came from (`sources`), the pressure rate in force, and the runs whose figures did not count
    (`unsound`: they lost acknowledged records, or their ledger cannot say)."""

    values: dict[str, float | None]
    ref: str | None = None
    verdict: str | None = None
    notes: tuple[str, ...] = ()
    refs: tuple[str, ...] = ()  # every run and search id of this repeat
    bottleneck: str | None = None  # the first run's attribution, in a line
    sources: dict[str, str] = field(default_factory=dict[str, str])
    pressure: Pressure | None = None
    unsound: tuple[Unsound, ...] = ()
    # What broke: a stack that did not start, a run that failed, a run that failed its gates.
    failures: tuple[str, ...] = ()


class RunOne(Protocol):
    def __call__(self, run: ScheduledRun, stack: ComparedStack) -> RepeatOutcome: ...


class AbortedError(RuntimeError):
    """A repeat could not run at all (its stack would not start): the comparison stops."""


def run_id_for(compare_id: str, run: ScheduledRun) -> str:
    """The run id of a repeat: `<compare_id>-b1`, `<compare_id>-c1`, … (its fixed-rate run)."""
    return f"{compare_id}-{'b' if run.side == BASELINE else 'c'}{run.repeat}"


def search_id_for(run_id: str) -> str:
    """The capacity search of a repeat that also made a fixed-rate run."""
    return f"{run_id}-s"


def saturation_id_for(run_id: str) -> str:
    return f"{run_id}-sat"


def took_at_least(result: results.RunResult) -> float | None:
    """What a saturation run whose pipeline took everything offered carried (a lower bound of
    its saturation), or None when it saturated, refused (its counters or k6 say so), took none or
    that is unknown."""
    sat = result.saturation
    if sat is None or sat.reading.state != TOOK_ALL or not sat.accepted_per_min:
        return None
    if (result.client.error_rate or 0.0) > REFUSED_SHARE:  # k6 saw its requests refused
        return None
    if sat.offered_per_min is None:
        return sat.accepted_per_min
    return min(sat.accepted_per_min, sat.offered_per_min)


def pressure_id_for(run_id: str) -> str:
    return f"{run_id}-pr"


def repeat_ids(compare_id: str, run: ScheduledRun) -> list[str]:
    """Every id a repeat may write results under."""
    run_id = run_id_for(compare_id, run)
    return [run_id, search_id_for(run_id), saturation_id_for(run_id), pressure_id_for(run_id)]


def saturating(spec: RunSpec, rate: int | None = None) -> RunSpec:
    """A saturation run with `spec`'s load shape: `loadgate run --saturate`'s offered rate, VUs
    and gates (measure.saturation.SATURATE_PARAMS), the offered rate `rate` when given. Raises
    SpecError when the result is not a valid run."""
    params = {**spec.to_params(), **SATURATE_PARAMS, "run-id": spec.run_id or "saturate"}
    if rate is not None:
        params["rate"] = rate
    return RunSpec.from_params(params)


def _pressure_for(saturation: float, fraction: float, run_id: str) -> Pressure:
    """The pressure rate from a baseline saturation throughput."""
    return Pressure(fraction, max(1, round(saturation * fraction)), saturation, run_id)


@dataclass
class _Tally:
    """What a repeat's runs have measured so far."""

    values: dict[str, float | None]
    sources: dict[str, str] = field(default_factory=dict[str, str])
    notes: list[str] = field(default_factory=list[str])
    refs: list[str] = field(default_factory=list[str])
    verdicts: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    bottleneck: str | None = None
    unsound: list[Unsound] = field(default_factory=list[Unsound])
    failures: list[str] = field(default_factory=list[str])

    def ran(self, kind: str, result: results.RunResult) -> bool:
        """Take a run's verdict and notes; whether its figures count (False: it is unsound,
        recorded with a note, and none of its values is taken)."""
        self.verdicts.append((kind, result.verdict))
        if self.bottleneck is None:
            self.bottleneck = cv.bottleneck_summary(result.bottleneck)
        self.notes.extend(f"incomplete: {p}" for p in result.problems)
        self.notes.extend(cv.machine_note(result))
        if (failed := cv.failed_gates(result)) is not None:
            self.failures.append(f"the {kind} run {result.run_id}: {failed}")
        bad = cv.unsound(result)
        if bad is None:
            return True
        self.unsound.append(bad)
        self.notes.append(f"the {kind} run {result.run_id}: {bad.reason}; its figures are unknown")
        return False

    def take(
        self,
        metrics: tuple[Metric, ...],
        measured: dict[str, float | None],
        run_id: str,
        why: dict[str, str] | None = None,
    ) -> None:
        """The metrics' values a run measured; a None one noted, with `why` where known."""
        for m in metrics:
            if m.name in measured:
                self.values[m.name] = measured[m.name]
                if measured[m.name] is None:
                    reason = (why or {}).get(m.name)
                    tail = f": {reason}" if reason else ""
                    self.notes.append(f"{m.name} not measured by {run_id}{tail}")

    def outcome(self, pressure: Pressure | None) -> RepeatOutcome:
        if len(self.verdicts) == 1:
            verdict: str | None = self.verdicts[0][1]
        else:
            verdict = ", ".join(f"{k} {v}" for k, v in self.verdicts) or None
        return RepeatOutcome(
            self.values, self.refs[0] if self.refs else None, verdict, tuple(self.notes),
            tuple(self.refs), self.bottleneck, dict(self.sources), pressure, tuple(self.unsound),
            tuple(self.failures),
        )  # fmt: skip


# How a repeat measures capacity: `searching.run_search` (tests give a fake).
SearchFn = Callable[..., SearchRecord]
OpenTarget = Callable[[local.StackInfo], OpenedTarget]


@dataclass
class LocalRepeats:
    """One repeat on the local stack: a fresh stack of the side (up), the runs its metrics need
    (the module's list), stack down (always, also on Ctrl-C)."""

    STACKS: ClassVar[str] = FRESH  # what compare.json records (`stacks`)

    root: Path  # the stack's run directory (its lock is held by the caller)
    ports: Ports
    spec: RunSpec  # the fixed-rate run (run id and labels are set per repeat)
    results_root: Path
    compare_id: str
    metrics: tuple[Metric, ...]
    saturate_spec: RunSpec | None = None  # default: `saturating(spec)`
    pressure_fraction: float = DEFAULT_PRESSURE_FRACTION
    pressure: Pressure | None = None  # given, or set by the first baseline saturation
    drain_timeout: float = 60.0
    up_timeout: float = 60.0
    bin_dir: Path | None = None
    search: SearchFn = searching.run_search  # when capacity is a metric
    plan: SearchPlan = field(default_factory=SearchPlan)
    on_phase: Callable[[str], None] | None = None
    on_progress: Callable[[runner.Progress], None] | None = None
    on_search_step: Callable[[SearchRecord], None] | None = None
    # Wraps the stack's stop, so a stop signal waits for it (the CLI passes `shielded`).
    guard: Callable[[], contextlib.AbstractContextManager[None]] = contextlib.nullcontext
    # The stack, the target on it and the run (tests give fakes).
    stack: StackOps = field(default_factory=StackOps)
    open_target: OpenTarget = LocalTarget
    execute: searching.Execute = runner.execute

    def _wants(self, *names: str) -> bool:
        return any(m.name in names for m in self.metrics)

    @property
    def _fixed_rate(self) -> bool:
        return self._wants(*cv.FIXED_RATE_METRICS)

    @property
    def capacity(self) -> bool:
        return self._wants(rule.CAPACITY.name)

    @property
    def _pressured(self) -> bool:
        return self._wants(*cv.PRESSURE_METRICS)

    def _saturates(self) -> bool:
        """A saturation run: for its metric, or for the pressure rate (the first run's, once)."""
        needs_rate = self._pressured and self.pressure is None
        return self._wants(rule.SATURATION.name) or needs_rate

    def _phase(self, text: str) -> None:
        if self.on_phase:
            self.on_phase(text)

    def close(self) -> None:
        """Nothing to stop: every repeat stopped its own stack (`kept.KeptRepeats` keeps them)."""

    def _where(self, stack: ComparedStack) -> tuple[Path, Ports]:
        """The run directory and ports of a side's stack: the one place, both sides."""
        del stack
        return self.root, self.ports

    @contextlib.contextmanager
    def _stack(self, stack: ComparedStack, run_id: str) -> Generator[local.StackInfo]:
        """A fresh stack of the side for the block, stopped after it (always)."""
        owner = local.Owner(ProcessId.me(), run_id, keep=False)
        root, ports = self._where(stack)
        where = session.FreshStack(root, ports, owner, self.bin_dir, self.up_timeout)
        self._phase(f"stack up: {stack.role} ({stack.name})")
        try:
            with session.fresh_stack(
                self.stack, stack.what, where, self._phase, self.guard
            ) as info:
                yield info
        except session.NotStarted as exc:
            raise AbortedError(f"the {stack.role} stack did not start: {exc}") from None

    def _spec_for(self, run: ScheduledRun, run_id: str, base: RunSpec | None = None) -> RunSpec:
        """`base` (the fixed-rate spec by default) with this repeat's run id and labels."""
        base = base or self.spec
        labels = {
            **base.labels,
            "compare": self.compare_id,
            "side": run.side,
            "repeat": str(run.repeat),
        }
        return replace(base, run_id=run_id, labels=labels)

    def __call__(self, run: ScheduledRun, stack: ComparedStack) -> RepeatOutcome:
        """The repeat's runs on a fresh stack of the side. A candidate stack that does not
        start is the candidate's failure (its values unknown: a broken candidate); a baseline's
        aborts the comparison (AbortedError)."""
        tally = _Tally({m.name: None for m in self.metrics})
        try:
            return self._measure(run, stack, tally)
        except AbortedError as exc:
            if run.side == BASELINE:
                raise
            tally.failures.append(str(exc))
            tally.notes.append(f"{exc}: its metrics unknown")
            return tally.outcome(self.pressure)

    def _measure(self, run: ScheduledRun, stack: ComparedStack, tally: _Tally) -> RepeatOutcome:
        run_id = run_id_for(self.compare_id, run)
        with self._stack(stack, run_id) as info:
            target = self.open_target(info)
            try:
                if self._saturates():
                    self._saturation(run, saturation_id_for(run_id), target, tally)
                if self._pressured:
                    self._pressure(run, pressure_id_for(run_id), target, tally)
                if self._fixed_rate:
                    self._fixed(run, run_id, target, tally)
                if self.capacity:
                    search_id = search_id_for(run_id) if self._fixed_rate else run_id
                    tally.refs.append(search_id)
                    value, more, losses = self._capacity(stack, run, search_id, target)
                    tally.values[rule.CAPACITY.name] = value
                    tally.notes.extend(more)
                    tally.unsound.extend(losses)  # a candidate's: a loss regression
            finally:
                with self.guard():
                    target.close()
        return tally.outcome(self.pressure)

    def scope(self, target: Target) -> Scope:
        """The series of the scenario's pipeline on this side's stack: its signal and exporter,
        and the collector's own series where the stack holds other copies of them (a stack
        carrying metrics remote-writes them too: runner.run_parts.scenario_scope)."""
        return scenario_scope(self.spec.scenario, Scope(), target)

    def _execute(
        self, spec: RunSpec, target: Target, what: str, tally: _Tally
    ) -> results.RunResult | None:
        tally.refs.append(spec.run_id)
        try:
            return self.execute(
                spec,
                target,
                self.results_root,
                drain_timeout=self.drain_timeout,
                on_progress=self.on_progress,
                on_phase=self.on_phase,
                scope=self.scope(target),
            )
        except (runner.RunError, QueryError) as exc:
            tally.notes.append(f"the {what} run failed, its metrics unknown: {exc}")
            tally.failures.append(f"the {what} run {spec.run_id} failed: {exc}")
            return None

    def _saturation(self, run: ScheduledRun, run_id: str, target: Target, tally: _Tally) -> None:
        base = self.saturate_spec or saturating(self.spec)
        result = self._execute(self._spec_for(run, run_id, base), target, "saturation", tally)
        if result is None or not tally.ran("saturation", result):
            return
        value, notes = cv.saturation_value(result)
        tally.notes.extend(notes)
        if self._wants(rule.SATURATION.name):
            tally.values[rule.SATURATION.name] = value
        if self.pressure is None:
            if value is not None:
                self.pressure = _pressure_for(value, self.pressure_fraction, run_id)
            elif (bound := took_at_least(result)) is not None:
                # A stack that took everything offered carries the fraction of that lower
                # bound at most at the fraction of its limit: pressure enough to compare.
                set_by = f"{run_id}, a lower bound: the {run.side} took all it was offered"
                self.pressure = _pressure_for(bound, self.pressure_fraction, set_by)

    def _pressure(self, run: ScheduledRun, run_id: str, target: Target, tally: _Tally) -> None:
        if self.pressure is None:
            tally.notes.append(
                "no pressure run: the pressure rate is not set yet (no saturation measured so far)"
            )
            return
        vus = (self.saturate_spec or saturating(self.spec)).vus
        base = replace(self.spec, rate=self.pressure.rate_per_min, vus=vus)
        result = self._execute(self._spec_for(run, run_id, base), target, "pressure", tally)
        if result is None or not tally.ran("pressure", result):
            return
        measured, sources = cv.pressure_values(result)
        tally.take(self.metrics, measured, run_id, cv.unknown_reasons(result))
        tally.sources.update({k: v for k, v in sources.items() if self._wants(k)})

    def _fixed(self, run: ScheduledRun, run_id: str, target: Target, tally: _Tally) -> None:
        result = self._execute(self._spec_for(run, run_id), target, "fixed-rate", tally)
        if result is None or not tally.ran("fixed-rate", result):
            return
        tally.take(self.metrics, cv.fixed_rate_values(result), run_id)
        if self._wants(rule.CPU_PER_1000.name):
            tally.sources[rule.CPU_PER_1000.name] = cv.CPU_PROMETHEUS

    def _capacity(
        self, stack: ComparedStack, run: ScheduledRun, search_id: str, target: Target
    ) -> tuple[float | None, list[str], tuple[Unsound, ...]]:
        """The search's capacity value with its notes, and its steps that lost acknowledged
        records (they bound the capacity from above; a candidate's are a loss regression)."""
        base = self._spec_for(run, search_id)
        try:
            record = self.search(
                target,
                self.plan,
                base,
                self.results_root,
                search_id,
                {"side": run.side, **stack.side().to_dict()},
                scope=self.scope(target),
                on_step=self.on_search_step,
                on_phase=self.on_phase,
                on_progress=self.on_progress,
                drain_timeout=self.drain_timeout,
                execute=self.execute,
            )
        except (runner.RunError, QueryError) as exc:
            return None, [f"the capacity search failed, capacity unknown: {exc}"], ()
        value, notes = cv.capacity_value(record)
        return value, notes, record.losses
