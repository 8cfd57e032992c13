"""`loadgate compare`, the driver: two stacks (baseline and candidate), runs interleaved in pairs
A B A B …, on both sides' stacks kept up (`kept`) or each on a fresh stack of its side, one
decision per metric (`rule`), pairs added until the plan says stop (`sequential`).

- The sides (`parse_side`, `ComparedStack`, `sameness`) are `sides`; what a run
  contributes (`parse_metrics`, the values of a run) `values`; one repeat on the local
  stack (`LocalRepeats`) `repeat`, on kept stacks (`KeptRepeats`) `kept`. Their names are
  re-exported here for the CLI.
- `drive` runs pairs with a run function it is given (`LocalRepeats` on the local stack; fakes
  in the tests) until the plan's stop (`sequential.stop_reason`: every metric settled,
  the most pairs, or the time budget), writes `compare.json` after every run (and, marked
  partial, when interrupted or when a stack breaks), and returns the final record.

A metric a run could not measure is None in the record, never 0; so is a value measured another
way than the comparison's earlier runs measured it (the collector's CPU from the kernel, then
from Prometheus: two quantities, not one), and every value of a run that lost acknowledged
records or whose ledger cannot say (the record lists those runs). A candidate that lost
acknowledged records, or that broke (a gating metric unknown where the baseline measured it), is
a regression whatever the metrics say, and so, in a sequential plan, is any gating metric's
regression at a look (final under the rule): the comparison stops after that pair (`decided`).
A fixed number of repeats decides its metrics once, at the end.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from loadgate.capacity.compare import rule, run_order
from loadgate.capacity.compare import sequential as seq
from loadgate.capacity.compare.kept import KeptRepeats, candidate_ports, candidate_root
from loadgate.capacity.compare.record import COMPARE_FILE, CompareRecord, Pressure, RepeatRecord
from loadgate.capacity.compare.repeat import (
    AbortedError,
    LocalRepeats,
    RepeatOutcome,
    RunOne,
    repeat_ids,
    run_id_for,
    search_id_for,
)
from loadgate.capacity.compare.rule import BASELINE, Metric
from loadgate.capacity.compare.run_order import ScheduledRun
from loadgate.capacity.compare.sequential import Plan
from loadgate.capacity.compare.sides import (
    SIDE_SYNTAX,
    ComparedStack,
    SideError,
    Sides,
    SideSettings,
    loki_differs,
    parse_side,
    sameness,
)
from loadgate.capacity.compare.stack_modes import FRESH
from loadgate.capacity.compare.values import (
    DEFAULT_METRICS,
    METRIC_KEYS,
    apply_margins,
    bottleneck_summary,
    capacity_value,
    fixed_rate_values,
    parse_metrics,
)
from loadgate.records import result as results

__all__ = [
    "DEFAULT_METRICS",
    "METRIC_KEYS",
    "SIDE_SYNTAX",
    "AbortedError",
    "ComparedStack",
    "Drive",
    "KeptRepeats",
    "LocalRepeats",
    "RepeatOutcome",
    "RunOne",
    "SideError",
    "SideSettings",
    "Sides",
    "apply_margins",
    "bottleneck_summary",
    "candidate_ports",
    "candidate_root",
    "capacity_value",
    "compare_dir",
    "drive",
    "fixed_rate_values",
    "loki_differs",
    "parse_metrics",
    "parse_side",
    "repeat_ids",
    "run_id_for",
    "sameness",
    "search_id_for",
    "taken_values",
    "write_record",
]


def compare_dir(results_root: Path, compare_id: str) -> Path:
    return results_root / compare_id


def write_record(record: CompareRecord, results_root: Path) -> Path:
    """results/<compare_id>/compare.json, replaced atomically."""
    path = compare_dir(results_root, record.compare_id) / COMPARE_FILE
    results.write_atomic(path, record.to_json())
    return path


@dataclass
class Drive:
    """The state of a comparison while it runs (for live output)."""

    compare_id: str
    baseline: ComparedStack
    candidate: ComparedStack
    metrics: tuple[Metric, ...]
    plan: Plan
    order: str
    started_at: float
    aa: bool = False
    runs: list[RepeatRecord] = field(default_factory=list[RepeatRecord])
    outcomes: list[RepeatOutcome] = field(default_factory=list[RepeatOutcome])
    notes: list[str] = field(default_factory=list[str])
    pressure: Pressure | None = None
    stopped: str | None = None
    sources: dict[str, str] = field(default_factory=dict[str, str])  # the first run's, by metric
    fail_on: str = rule.DEFAULT_FAIL_ON
    stacks: str = FRESH

    def record(self, ended_at: float | None = None) -> CompareRecord:
        return CompareRecord.build(
            self.compare_id,
            self.baseline.side(),
            self.candidate.side(),
            self.runs,
            self.metrics,
            self.order,
            started_at=self.started_at,
            ended_at=ended_at,
            notes=self.notes,
            plan=self.plan,
            stopped=self.stopped,
            pressure=self.pressure,
            aa=self.aa,
            fail_on=self.fail_on,
            stacks=self.stacks,
        )

    def take(self, run: ScheduledRun, outcome: RepeatOutcome) -> None:
        """Record a run: its values (non-positive or of another source: None), notes, sources."""
        where = f"run {run.position + 1} ({run.side} {run.repeat}"
        where += f", {outcome.ref})" if outcome.ref else ")"
        values, sources, notes = taken_values(self.metrics, outcome, self.sources)
        self.notes.extend(f"{where}: {note}" for note in notes)
        self.runs.append(
            RepeatRecord(
                run.position,
                run.side,
                run.repeat,
                values,
                outcome.ref,
                outcome.refs,
                sources,
                outcome.unsound,
                outcome.failures,
            )
        )
        self.outcomes.append(outcome)
        self.notes.extend(f"{where}: {note}" for note in outcome.notes)
        if self.pressure is None and outcome.pressure is not None:
            self.pressure = outcome.pressure


def taken_values(
    metrics: Sequence[Metric], outcome: RepeatOutcome, first_sources: dict[str, str]
) -> tuple[dict[str, float | None], dict[str, str], list[str]]:
    """A run's values of the metrics as a comparison takes them, their sources and notes: a
    non-positive value is unknown, and so is one of another source than the comparison's
    earlier runs' (`first_sources`, by metric, filled in by the first run that gives one)."""
    values = {m.name: _positive(outcome.values.get(m.name)) for m in metrics}
    sources: dict[str, str] = {}
    notes: list[str] = []
    for name, source in outcome.sources.items():
        first = first_sources.setdefault(name, source)
        if first == source or values.get(name) is None:
            sources[name] = source
            continue
        values[name] = None
        notes.append(
            f"{name} came from {source} where earlier runs had {first}: another quantity, left "
            "out (unknown)"
        )
    return values, sources, notes


def drive(
    compare_id: str,
    baseline: ComparedStack,
    candidate: ComparedStack,
    *,
    metrics: Sequence[Metric],
    run_one: RunOne,
    results_root: Path,
    repeats: int | None = None,
    plan: Plan | None = None,
    order: str = "ABAB",
    aa: bool = False,
    fail_on: str = rule.DEFAULT_FAIL_ON,
    stacks: str = FRESH,
    on_start: Callable[[ScheduledRun, ComparedStack], None] | None = None,
    on_done: Callable[[ScheduledRun, ComparedStack, RepeatOutcome, CompareRecord], None]
    | None = None,
    on_pair: Callable[[int, CompareRecord], None] | None = None,
    clock: Callable[[], float] = time.time,
    monotonic: Callable[[], float] = time.monotonic,
) -> CompareRecord:
    """Run pairs (A B A B …, A B B A …, or each pair's order drawn), each run by `run_one`,
    writing compare.json after each, until `plan` says stop (`repeats` alone: that many pairs,
    one look); `stacks` is recorded (where `run_one` runs them). After each pair `on_pair`
    gets the pairs so far and the record. On an interrupt
    or AbortedError, the partial record is written (with a note saying how far it got) and the
    exception passes on."""
    if plan is None:
        if repeats is None:
            raise ValueError("drive: give a plan or repeats")
        plan = Plan.fixed(repeats)
    schedule = run_order.schedule(plan.max_pairs, order, seed=compare_id)
    state = Drive(compare_id, baseline, candidate, tuple(metrics), plan, order, clock(), aa,
                  fail_on=fail_on, stacks=stacks)  # fmt: skip
    write_record(state.record(), results_root)
    began = monotonic()
    longest = 0.0
    try:
        for first in range(0, len(schedule), 2):
            pair_began = monotonic()
            for run in schedule[first : first + 2]:
                _run(run, state, run_one, results_root, on_start, on_done)
            pairs = first // 2 + 1
            now = monotonic()
            longest = max(longest, now - pair_began)
            record = state.record()
            stop = seq.stop_reason(plan, record.decisions, pairs, now - began, longest)
            if stop is None and regression_final(record, plan):
                stop = seq.DECIDED  # a regression whatever more pairs would say
            if on_pair:
                on_pair(pairs, record)
            if stop is not None:
                state.stopped = stop
                break
    except BaseException as exc:
        state.notes.append(_partial_note(exc, len(state.runs), len(schedule), plan.sequential))
        write_record(state.record(ended_at=clock()), results_root)
        raise
    final = state.record(ended_at=clock())
    write_record(final, results_root)
    return final


def _run(
    run: ScheduledRun,
    state: Drive,
    run_one: RunOne,
    results_root: Path,
    on_start: Callable[[ScheduledRun, ComparedStack], None] | None,
    on_done: Callable[[ScheduledRun, ComparedStack, RepeatOutcome, CompareRecord], None] | None,
) -> None:
    """One scheduled run on its side's stack, taken into the record, which is written."""
    stack = state.baseline if run.side == BASELINE else state.candidate
    if on_start:
        on_start(run, stack)
    outcome = run_one(run, stack)
    state.take(run, outcome)
    record = state.record()
    write_record(record, results_root)
    if on_done:
        on_done(run, stack, outcome, record)


def regression_final(record: CompareRecord, plan: Plan) -> bool:
    """Whether the comparison is a regression whatever more pairs would show: the candidate
    lost acknowledged records or broke (any plan), or, in a sequential plan, a gating metric
    is a regression at a look (final under the rule; a fixed plan decides once, at its end)."""
    if record.candidate_lost or record.broken is not None:
        return True
    return plan.sequential and any(
        d.metric.gates and d.decision == rule.REGRESSION for d in record.decisions
    )


def _partial_note(exc: BaseException, done: int, scheduled: int, sequential: bool) -> str:
    """What a comparison ended early says: why, and how far it got."""
    why = "interrupted" if isinstance(exc, KeyboardInterrupt) else f"stopped: {exc}"
    most = f"{scheduled}" if not sequential else f"at most {scheduled}"
    return f"partial: {why} after {done} of {most} runs; the decisions use the runs that finished"


def _positive(value: float | None) -> float | None:
    """A metric value the rule can take (it works on logarithms): a non-positive figure is
    not a measurement of these metrics, so it is unknown."""
    if value is None or not value > 0:
        return None
    return float(value)
