"""`loadgate compare`, the driver: two stacks (baseline and candidate), runs interleaved
A B A B …, each on a fresh stack of its side, one decision per metric (capacity/compare.py).

- `parse_side` reads a side's settings (`queue-size=5000`, `otelcol=rev160`, …): the stack
  flags' keys, checked for shape here; the command line turns them into the same stack choice
  `run` prepares.
- `drive` runs the schedule with a run function it is given (`LocalRepeats` on the local
  stack; fakes in the tests), writes `compare.json` after every run (and, marked partial, when
  interrupted or when a stack breaks), and returns the final record.
- `LocalRepeats` is one repeat on the local stack: stack up, a fixed-rate run (p99, collector
  CPU per 1,000 records), a capacity search when asked, stack down.

A metric a run could not measure is None in the record, never 0.
"""

from __future__ import annotations

import contextlib
import shlex
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from loadgate.build import binaries
from loadgate.capacity import compare_rule as rule
from loadgate.capacity import search_driver as searching
from loadgate.capacity.compare_rule import BASELINE, Metric, ScheduledRun
from loadgate.capacity.search_rule import FOUND, SearchPlan
from loadgate.contract.spec import RunSpec
from loadgate.judge.attribution import Attribution
from loadgate.measure.pipeline import Scope
from loadgate.measure.queries import QueryError
from loadgate.records import result as results
from loadgate.records.compare import COMPARE_FILE, CompareRecord, RepeatRecord, Side
from loadgate.records.fields import RecordError
from loadgate.records.search import SearchRecord
from loadgate.runner import run as runner
from loadgate.stack import local
from loadgate.stack.charm_stack import PreparedCharms
from loadgate.stack.ops import StackOps
from loadgate.stack.ports import Ports
from loadgate.stack.procs import ProcessId
from loadgate.stack.profile import Profile
from loadgate.targets.local import LocalTarget

# ---- sides -----------------------------------------------------------------------------------

# Side keys -> the stack flag each mirrors (and the StackFlags field it sets).
SIDE_KEYS: dict[str, str] = {
    "profile": "profile",
    "queue-size": "queue_size",
    "otelcol": "otelcol_charm",
    "loki": "loki_charm",
    "charm-config": "charm_config",
    "loki-config": "loki_config",
}
REPEATABLE_KEYS = ("charm-config", "loki-config")
SIDE_SYNTAX = (
    "KEY=VALUE settings (several in one quoted value, or the flag repeated); keys: "
    + ", ".join(SIDE_KEYS)
    + " (charm-config and loki-config take K=V and may repeat)"
)


class SideError(ValueError):
    """A side's settings are malformed; the message names the flag, the key and what is allowed."""


@dataclass(frozen=True)
class SideSettings:
    """What one side asks for, as given: (key, value) pairs in order."""

    role: str  # BASELINE or CANDIDATE
    items: tuple[tuple[str, str], ...] = ()

    @property
    def label(self) -> str:
        """The settings as typed (for people and compare.json); "as the stack flags" if none."""
        if not self.items:
            return "the stack flags"
        return " ".join(f"{k}={v}" for k, v in self.items)

    def overrides(self) -> dict[str, Any]:
        """Stack-flag attribute -> value: single keys replace, repeatable keys list their
        K=V pairs (added after the shared flags', so a side's value wins)."""
        out: dict[str, Any] = {}
        for key, value in self.items:
            attr = SIDE_KEYS[key]
            if key in REPEATABLE_KEYS:
                out.setdefault(attr, []).append(value)
            else:
                out[attr] = value
        return out


def parse_side(role: str, values: Sequence[str]) -> SideSettings:
    """A side's `--baseline`/`--candidate` values: each holds one or more KEY=VALUE (split like
    a shell, so a quoted value may hold spaces). Raises SideError naming the flag and key."""
    flag = f"--{role}"
    items: list[tuple[str, str]] = []
    for value in values:
        try:
            tokens = shlex.split(value)
        except ValueError as exc:
            raise SideError(f"{flag}: cannot split {value!r}: {exc}") from None
        if not tokens:
            raise SideError(f"{flag}: empty; expected {SIDE_SYNTAX}")
        for token in tokens:
            key, sep, val = token.partition("=")
            key = key.strip()
            if not sep:
                raise SideError(f"{flag}: expected KEY=VALUE, got {token!r}; {SIDE_SYNTAX}")
            if key not in SIDE_KEYS:
                raise SideError(
                    f"{flag}: unknown key {key!r} in {token!r}; allowed keys: "
                    + ", ".join(SIDE_KEYS)
                )
            if not val.strip():
                raise SideError(f"{flag}: {key}: empty value in {token!r}")
            if key in REPEATABLE_KEYS and "=" not in val:
                raise SideError(
                    f"{flag}: {key}: expected {key}=OPTION=VALUE (an option and its value), "
                    f"got {token!r}"
                )
            if key not in REPEATABLE_KEYS and any(k == key for k, _ in items):
                raise SideError(f"{flag}: {key} given twice (only charm-config and loki-config "
                                "may repeat)")  # fmt: skip
            items.append((key, val.strip()))
    return SideSettings(role, tuple(items))


def _part_version(name: str) -> str | None:
    return next((p.version for p in binaries.PARTS if p.name == name), None)


def describe(what: local.StackChoice) -> dict[str, Any]:
    """What a side runs, for compare.json: each charm's source (repository, ref, commit,
    revisions), its options and workload build; or the hand profile and its binaries."""
    if isinstance(what, Profile):
        return {
            "kind": "hand-profile",
            "profile": what.to_dict(),
            "workloads": {
                name: {"part": name, "version": _part_version(name)} for name in ("otelcol", "loki")
            },
        }
    return {"kind": "charms", **what.to_dict()}


def short_name(settings: SideSettings, what: local.StackChoice) -> str:
    """A side in a few words: its charms (revision or commit) and workloads, and what was set."""
    if isinstance(what, Profile):
        base = f"hand profile {what.name}"
    else:
        base = f"otelcol {_charm_ref(what, 'otelcol')} + loki {_charm_ref(what, 'loki')}"
        if what.preset != "charm-default":
            base += f", preset {what.preset}"
    return f"{settings.label} ({base})" if settings.items else base


def _charm_ref(what: PreparedCharms, role: str) -> str:
    source = what.otelcol if role == "otelcol" else what.loki
    data = source.to_dict()
    revisions = data.get("revisions") or []
    commit = str(data.get("commit") or "")[:7]
    rev = "rev" + "/".join(str(r) for r in revisions) if revisions else str(data.get("ref") or "?")
    part = what.otelcol_part if role == "otelcol" else what.loki_part
    return f"{rev} ({commit}{'+dirty' if data.get('dirty') else ''}, {part.name} {part.version})"


def sameness(a: local.StackChoice, b: local.StackChoice) -> bool:
    """Whether two prepared sides would run the same stack (same commits, options, workloads)."""
    if isinstance(a, Profile) or isinstance(b, Profile):
        return a == b
    return a.to_dict() == b.to_dict()


@dataclass(frozen=True)
class ComparedStack:
    """One side, prepared: its settings, what it runs, its name and description."""

    settings: SideSettings
    what: local.StackChoice

    @property
    def role(self) -> str:
        return self.settings.role

    @property
    def name(self) -> str:
        return short_name(self.settings, self.what)

    def side(self) -> Side:
        return Side(
            self.name,
            {"settings": self.settings.label, **describe(self.what)},
        )


# ---- metrics --------------------------------------------------------------------------------

METRIC_KEYS: dict[str, Metric] = {
    "capacity": rule.CAPACITY,
    "p99": rule.P99_AT_RATE,
    "cpu": rule.CPU_PER_1000,
}
DEFAULT_METRICS = ("p99", "cpu")


def parse_metrics(value: str, search_precision: float = 0.05) -> tuple[Metric, ...]:
    """`capacity,p99,cpu` (any of them, in that order in the result). Raises SideError."""
    names = [n.strip() for n in value.split(",") if n.strip()]
    if not names:
        raise SideError(f"--metrics: empty; allowed: {', '.join(METRIC_KEYS)}")
    unknown = [n for n in names if n not in METRIC_KEYS]
    if unknown:
        raise SideError(
            f"--metrics: unknown {', '.join(repr(n) for n in unknown)}; allowed: "
            + ", ".join(METRIC_KEYS)
        )
    out: list[Metric] = []
    for key in METRIC_KEYS:
        if key in names:
            metric = METRIC_KEYS[key]
            if key == "capacity":
                metric = rule.capacity_metric(search_precision)
            out.append(metric)
    return tuple(out)


def fixed_rate_values(result: results.RunResult) -> dict[str, float | None]:
    """p99 (k6's) and collector CPU-seconds per 1,000 accepted records over the load window,
    from a fixed-rate run; None where the run did not measure it."""
    cpu_mean = result.pipeline.collector_cpu_mean if result.pipeline is not None else None
    window = result.ended_at - result.started_at
    return {
        rule.P99_AT_RATE.name: result.client.p99_ms,
        rule.CPU_PER_1000.name: rule.cpu_per_1000(
            cpu_mean, window if window > 0 else None, result.client.records_accepted
        ),
    }


# ---- the driver ------------------------------------------------------------------------------


@dataclass(frozen=True)
class RepeatOutcome:
    """What one repeat measured: values by metric name (None: not measured), the run or search
    behind it, the run's verdict (PASS/FAIL, None if it did not finish), notes."""

    values: dict[str, float | None]
    ref: str | None = None
    verdict: str | None = None
    notes: tuple[str, ...] = ()
    refs: tuple[str, ...] = ()  # every run and search id of this repeat
    bottleneck: str | None = None  # the fixed-rate run's attribution, in a line


class RunOne(Protocol):
    def __call__(self, run: ScheduledRun, stack: ComparedStack) -> RepeatOutcome: ...


class AbortedError(RuntimeError):
    """A repeat could not run at all (its stack would not start): the comparison stops."""


def compare_dir(results_root: Path, compare_id: str) -> Path:
    return results_root / compare_id


def write_record(record: CompareRecord, results_root: Path) -> Path:
    """results/<compare_id>/compare.json, replaced atomically."""
    path = compare_dir(results_root, record.compare_id) / COMPARE_FILE
    results.write_atomic(path, record.to_json())
    return path


def search_id_for(run_id: str) -> str:
    """The capacity search of a repeat that also made a fixed-rate run."""
    return f"{run_id}-s"


def run_id_for(compare_id: str, run: ScheduledRun) -> str:
    """The run id of a repeat: `<compare_id>-b1`, `<compare_id>-c1`, …"""
    return f"{compare_id}-{'b' if run.side == BASELINE else 'c'}{run.repeat}"


@dataclass
class Drive:
    """The state of a comparison while it runs (for live output)."""

    compare_id: str
    baseline: ComparedStack
    candidate: ComparedStack
    metrics: tuple[Metric, ...]
    repeats: int
    order: str
    started_at: float
    runs: list[RepeatRecord] = field(default_factory=list[RepeatRecord])
    outcomes: list[RepeatOutcome] = field(default_factory=list[RepeatOutcome])
    notes: list[str] = field(default_factory=list[str])

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
        )


def drive(
    compare_id: str,
    baseline: ComparedStack,
    candidate: ComparedStack,
    *,
    repeats: int,
    metrics: Sequence[Metric],
    run_one: RunOne,
    results_root: Path,
    order: str = "ABAB",
    on_start: Callable[[ScheduledRun, ComparedStack], None] | None = None,
    on_done: Callable[[ScheduledRun, ComparedStack, RepeatOutcome, CompareRecord], None]
    | None = None,
    clock: Callable[[], float] = time.time,
) -> CompareRecord:
    """Run the schedule (A B A B … or A B B A …), each run by `run_one`, writing compare.json
    after each. On an interrupt or AbortedError, the partial record is written (with a note saying
    how far it got) and the exception passes on."""
    plan = rule.schedule(repeats, order)
    state = Drive(compare_id, baseline, candidate, tuple(metrics), repeats, order, clock())
    write_record(state.record(), results_root)
    try:
        for run in plan:
            stack = baseline if run.side == BASELINE else candidate
            if on_start:
                on_start(run, stack)
            outcome = run_one(run, stack)
            values = {m.name: _positive(outcome.values.get(m.name)) for m in state.metrics}
            state.runs.append(RepeatRecord(run.position, run.side, run.repeat, values, outcome.ref))
            state.outcomes.append(outcome)
            where = f"run {run.position + 1} ({run.side} {run.repeat}"
            where += f", {outcome.ref})" if outcome.ref else ")"
            state.notes.extend(f"{where}: {note}" for note in outcome.notes)
            record = state.record()
            write_record(record, results_root)
            if on_done:
                on_done(run, stack, outcome, record)
    except BaseException as exc:
        why = "interrupted" if isinstance(exc, KeyboardInterrupt) else f"stopped: {exc}"
        state.notes.append(
            f"partial: {why} after {len(state.runs)} of {len(plan)} runs; the decisions use "
            "the runs that finished"
        )
        write_record(state.record(ended_at=clock()), results_root)
        raise
    final = state.record(ended_at=clock())
    write_record(final, results_root)
    return final


def _positive(value: float | None) -> float | None:
    """A metric value the rule can take (it works on logarithms): a non-positive figure is
    not a measurement of these metrics, so it is unknown."""
    if value is None or not value > 0:
        return None
    return float(value)


# ---- one repeat on the local stack -----------------------------------------------------------

# How a repeat measures capacity: `searching.run_search` (tests give a fake).
SearchFn = Callable[..., SearchRecord]
OpenTarget = Callable[[local.StackInfo], LocalTarget]


@dataclass
class LocalRepeats:
    """One repeat on the local stack: a fresh stack of the side (up), the fixed-rate run, the
    capacity search when asked, stack down (always, also on Ctrl-C)."""

    root: Path  # the stack's run directory (its lock is held by the caller)
    ports: Ports
    spec: RunSpec  # the fixed-rate run (run id and labels are set per repeat)
    results_root: Path
    compare_id: str
    metrics: tuple[Metric, ...]
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

    @property
    def fixed_rate(self) -> bool:
        return any(m.name != rule.CAPACITY.name for m in self.metrics)

    @property
    def capacity(self) -> bool:
        return any(m.name == rule.CAPACITY.name for m in self.metrics)

    def _phase(self, text: str) -> None:
        if self.on_phase:
            self.on_phase(text)

    @contextlib.contextmanager
    def _stack(self, stack: ComparedStack, run_id: str) -> Generator[local.StackInfo]:
        owner = local.Owner(ProcessId.me(), run_id, keep=False)
        self._phase(f"stack up: {stack.role} ({stack.name})")
        try:
            info = self.stack.up(
                stack.what,
                self.ports,
                root=self.root,
                bin_dir=self.bin_dir,
                timeout=self.up_timeout,
                owner=owner,
                on_step=self._phase,
            )
        except (local.StackError, ValueError) as exc:
            raise AbortedError(f"the {stack.role} stack did not start: {exc}") from None
        try:
            yield info
        finally:
            with self.guard():
                self._phase("stack down")
                self.stack.down(self.root)

    def spec_for(self, run: ScheduledRun, run_id: str) -> RunSpec:
        labels = {
            **self.spec.labels,
            "compare": self.compare_id,
            "side": run.side,
            "repeat": str(run.repeat),
        }
        return replace(self.spec, run_id=run_id, labels=labels)

    def __call__(self, run: ScheduledRun, stack: ComparedStack) -> RepeatOutcome:
        run_id = run_id_for(self.compare_id, run)
        values: dict[str, float | None] = {m.name: None for m in self.metrics}
        notes: list[str] = []
        refs: list[str] = []
        verdict: str | None = None
        bottleneck: str | None = None
        with self._stack(stack, run_id) as info:
            target = self.open_target(info)
            try:
                if self.fixed_rate:
                    spec = self.spec_for(run, run_id)
                    refs.append(run_id)
                    try:
                        result = self.execute(
                            spec,
                            target,
                            self.results_root,
                            drain_timeout=self.drain_timeout,
                            on_progress=self.on_progress,
                            on_phase=self.on_phase,
                        )
                    except (runner.RunError, QueryError) as exc:
                        notes.append(f"the fixed-rate run failed, its metrics unknown: {exc}")
                    else:
                        verdict = result.verdict
                        bottleneck = bottleneck_summary(result.bottleneck)
                        measured = fixed_rate_values(result)
                        for m in self.metrics:
                            if m.name in measured:
                                values[m.name] = measured[m.name]
                                if measured[m.name] is None:
                                    notes.append(f"{m.name} not measured by {run_id}")
                        notes.extend(f"incomplete: {p}" for p in result.problems)
                if self.capacity:
                    search_id = search_id_for(run_id) if self.fixed_rate else run_id
                    refs.append(search_id)
                    values[rule.CAPACITY.name], more = self._capacity(stack, run, search_id, target)
                    notes.extend(more)
            finally:
                with self.guard():
                    target.close()
        return RepeatOutcome(
            values, refs[0] if refs else None, verdict, tuple(notes), tuple(refs), bottleneck
        )

    def _capacity(
        self, stack: ComparedStack, run: ScheduledRun, search_id: str, target: LocalTarget
    ) -> tuple[float | None, list[str]]:
        base = self.spec_for(run, search_id)
        try:
            record = self.search(
                target,
                self.plan,
                base,
                self.results_root,
                search_id,
                {"side": run.side, **stack.side().to_dict()},
                scope=Scope(),
                on_step=self.on_search_step,
                on_phase=self.on_phase,
                on_progress=self.on_progress,
                drain_timeout=self.drain_timeout,
                execute=self.execute,
            )
        except (runner.RunError, QueryError) as exc:
            return None, [f"the capacity search failed, capacity unknown: {exc}"]
        return capacity_value(record)


def bottleneck_summary(block: Mapping[str, Any] | None) -> str | None:
    """The attribution's one-line summary from a run's `bottleneck` block (None: none recorded
    or unreadable)."""
    if not block:
        return None
    try:
        return Attribution.from_dict(block.get("attribution")).summary
    except RecordError:
        return None


def capacity_value(record: SearchRecord) -> tuple[float | None, list[str]]:
    """A search's capacity as a metric value: only a knee found within the precision counts;
    "at least the maximum", "below the minimum" or a search cut short are bounds, not values."""
    result = record.result
    capacity = result.capacity_per_min
    if result.status == FOUND and capacity is not None and capacity > 0:
        return float(capacity), []
    return None, [
        f"capacity unknown: search {record.search_id} ended {result.status}"
        + (f" ({result.summary})" if result.summary else "")
        + ": not a knee within the precision"
    ]
