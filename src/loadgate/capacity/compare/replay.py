"""`loadgate compare --replay ID`: a recorded comparison decided again under today's rule and
margins, from its runs' own records. Reads files; writes only when asked (`write_replay`).

- **The values** are read again from each run's `result.json` (and a capacity search's
  `search.json`) as a live repeat reads them (`values`: the saturation run's throughput, the
  pressure run's p99 and CPU, the fixed-rate run's, the search's knee; every value of a run
  that lost acknowledged records or whose ledger cannot say unknown, the run listed as
  unsound), and taken as the driver takes them (`driver.taken_values`: non-positive or of
  another source is unknown). A run whose record is missing or unreadable refuses the replay
  (ReplayError naming it): a recorded value cannot be checked again (a record of format 1 lists
  no unsound runs, and none lists the runs that failed their gates); a value that reads
  differently from the recorded one is noted with both.
- **The metrics** are today's table's (`rule.METRICS`) of the recorded names, with the recorded
  unit and resolution; their margins are the caller's (the shipped margins file, `--margins-file`,
  `--margins`).
- **The pairs**: the recorded plan, looked at after every recorded pair as the driver looks.
  Today's rule may settle every metric, or reach a regression whatever more pairs would show
  (a gating metric's regression at a look of a sequential plan, a candidate that lost
  acknowledged records or broke: `driver.regression_final`, where the driver stops too), before
  the recorded pairs end (stopped: decided, the later pairs left out); else all the recorded
  pairs count, the last look spending what is left when the recording stopped for a reason
  that does not depend on the values (its budget or its most pairs), not when it stopped
  because its own rule decided: today's rule would have run more pairs, said in a note.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from loadgate.capacity.compare import rule
from loadgate.capacity.compare import sequential as seq
from loadgate.capacity.compare import values as cv
from loadgate.capacity.compare.driver import regression_final, taken_values
from loadgate.capacity.compare.record import (
    COMPARE_FILE,
    CompareRecord,
    RepeatRecord,
)
from loadgate.capacity.compare.repeat import (
    RepeatOutcome,
    pressure_id_for,
    run_id_for,
    saturation_id_for,
)
from loadgate.capacity.compare.rule import Metric
from loadgate.capacity.compare.run_order import ScheduledRun
from loadgate.capacity.search.record import SEARCH_FILE, SearchRecord
from loadgate.records import result as results
from loadgate.records.fields import RecordError

_REPLAY_FILE = "compare-replay.json"


class ReplayError(ValueError):
    """A recorded comparison that cannot be replayed; the message says which and why."""


def recorded(results_root: Path, compare_id: str) -> CompareRecord:
    """The recorded comparison `results/<compare_id>/compare.json` (either format)."""
    path = results_root / compare_id / COMPARE_FILE
    if not path.is_file():
        raise ReplayError(f"no recorded comparison {compare_id} ({path} does not exist)")
    try:
        return CompareRecord.from_json(path.read_text())
    except (OSError, RecordError) as exc:
        raise ReplayError(f"{path}: {exc}") from None


def todays_metrics(record: CompareRecord) -> tuple[Metric, ...]:
    """The recorded metrics as today's table has them, keeping their unit and resolution
    (and, as a live comparison of them would, each gating when none of today's does)."""
    table = {m.name: m for m in rule.METRICS}
    out: list[Metric] = []
    for d in record.decisions:
        was = d.metric
        now = table.get(was.name, was)
        out.append(replace(now, unit=was.unit, resolution=was.resolution))
    return rule.with_a_gate(out)


@dataclass(frozen=True)
class Replayed:
    """A recorded comparison and its re-decision."""

    recorded: CompareRecord
    replayed: CompareRecord


def replay(
    results_root: Path,
    record: CompareRecord,
    metrics: tuple[Metric, ...],
    fail_on: str = rule.DEFAULT_FAIL_ON,
) -> Replayed:
    """`record` decided again with these metrics under today's rule (module docstring)."""
    first_sources: dict[str, str] = {}
    notes: list[str] = []
    runs: list[RepeatRecord] = []
    for run in record.runs:
        outcome = _reread(results_root, record.compare_id, run, metrics)
        where = f"run {run.position + 1} ({run.side} {run.repeat}"
        where += f", {run.ref})" if run.ref else ")"
        values, sources, more = taken_values(metrics, outcome, first_sources)
        notes += [f"{where}: {n}" for n in (*outcome.notes, *more)]
        runs.append(replace(run, values=values, sources=sources, unsound=outcome.unsound,
                            failures=outcome.failures))  # fmt: skip
    return Replayed(record, decided_again(record, runs, metrics, fail_on, notes))


def decided_again(
    record: CompareRecord,
    runs: list[RepeatRecord],
    metrics: tuple[Metric, ...],
    fail_on: str = rule.DEFAULT_FAIL_ON,
    notes: list[str] | None = None,
) -> CompareRecord:
    """`record` decided again from these runs (its own, or with their values read again) with
    these metrics, looked at after every pair as the driver looks (module docstring: the
    pairs). `replay` gives it the values read again; benchmarks/threshold_whatif.py the
    recorded ones, at other thresholds."""
    notes = list(notes or ())
    plan = record.plan or seq.Plan.fixed(max(record.repeats, 1))
    pairs = _complete_pairs(runs)
    stop_at, stopped = pairs, record.stopped
    for k in range(1, pairs + 1):
        look = _record(record, [r for r in runs if r.repeat <= k], metrics, plan, fail_on, ())
        # As the driver stops: every gating metric settled, or a regression whatever more pairs
        # would show (a candidate that lost acknowledged records or broke; in a sequential
        # plan, a gating metric's regression at this look).
        decided = seq.stop_reason(plan, look.decisions, k, 0.0, 0.0) == seq.DECIDED
        if decided or regression_final(look, plan):
            stop_at, stopped = k, seq.DECIDED
            break
    else:
        if record.stopped == seq.DECIDED:
            stopped = None
            notes.append(
                f"replay: the recording stopped after {pairs} pairs, decided under its own rule; "
                "today's rule settles not every metric there and would have run more pairs: "
                "its decisions rest on the recorded ones"
            )
    kept = [r for r in runs if r.repeat <= stop_at]
    if stop_at < pairs:
        notes.append(
            f"replay: today's rule settles every metric at {stop_at} pairs: the recorded pairs "
            f"after it ({pairs - stop_at}) are left out"
        )
    return _record(record, kept, metrics, plan, fail_on, (*record.notes, *notes), stopped)


def _record(
    record: CompareRecord,
    runs: list[RepeatRecord],
    metrics: tuple[Metric, ...],
    plan: seq.Plan,
    fail_on: str,
    notes: tuple[str, ...],
    stopped: str | None = None,
) -> CompareRecord:
    """`record` with these runs decided with these metrics."""
    return CompareRecord.build(
        record.compare_id, record.baseline, record.candidate, runs, metrics, record.order,
        started_at=record.started_at, ended_at=record.ended_at, notes=notes,
        plan=plan if record.plan else None, stopped=stopped, pressure=record.pressure,
        aa=record.aa, fail_on=fail_on, stacks=record.stacks,
    )  # fmt: skip


def with_values_read_again(
    results_root: Path, record: CompareRecord, metrics: tuple[Metric, ...]
) -> CompareRecord:
    """`record` with every run's values of `metrics` read again from its runs' records, as a
    live repeat reads them (soundness and gates applied), and not decided again: what calibrate
    pools for a metric the comparison did not compare. A missing record raises ReplayError."""
    runs = tuple(
        replace(run, values={**run.values, **_reread(results_root, record.compare_id, run,
                                                     metrics).values})
        for run in record.runs
    )  # fmt: skip
    return replace(record, runs=runs)


def write_replay(results_root: Path, replayed: CompareRecord) -> Path:
    """The re-decision, beside the recorded comparison: results/<id>/compare-replay.json."""
    path = results_root / replayed.compare_id / _REPLAY_FILE
    results.write_atomic(path, replayed.to_json())
    return path


def _complete_pairs(runs: list[RepeatRecord]) -> int:
    """The pairs with a run on both sides."""
    sides: dict[int, set[str]] = {}
    for r in runs:
        sides.setdefault(r.repeat, set()).add(r.side)
    n = 0
    while len(sides.get(n + 1, ())) == 2:
        n += 1
    return n


def _reread(
    results_root: Path, compare_id: str, run: RepeatRecord, metrics: tuple[Metric, ...]
) -> RepeatOutcome:
    """The run's values read again from its records, as the live repeat read them; a record
    that is missing or cannot be read raises ReplayError naming it."""
    run_id = run_id_for(compare_id, ScheduledRun(run.position, run.side, run.repeat))
    wanted = {m.name for m in metrics}
    found: dict[str, float | None] = {}
    sources: dict[str, str] = {}
    notes: list[str] = []
    failures: list[str] = []
    unsound = {u.run_id: u for u in run.unsound}  # as recorded, for runs not read again
    for ref in run.refs or ((run.ref,) if run.ref else ()):
        try:
            if (results_root / ref / SEARCH_FILE).is_file():  # the repeat's capacity search
                value, _ = cv.capacity_value(_search(results_root, ref))
                found[rule.CAPACITY.name] = value
                continue
            result = _result(results_root, ref)
        except ReplayError as exc:
            raise ReplayError(
                f"{exc}: a replay reads every run's record again (today's soundness and gate "
                "checks need it; a recorded value alone cannot be checked); loadgate calibrate "
                "--from reads recorded values"
            ) from None
        bad = cv.unsound(result)  # a run whose figures do not count gives unknown values
        if (failed := cv.failed_gates(result)) is not None:
            failures.append(f"the run {ref}: {failed}")
        unsound.pop(ref, None)
        if bad is not None:
            unsound[ref] = bad
        if ref == saturation_id_for(run_id):
            found[rule.SATURATION.name] = cv.saturation_value(result)[0]
        elif ref == pressure_id_for(run_id):
            measured, more = cv.pressure_values(result)
            found.update(measured)
            sources.update(more)
        else:  # the repeat's run at the fixed rate
            found.update(cv.fixed_rate_values(result))
            sources[rule.CPU_PER_1000.name] = cv.CPU_PROMETHEUS
    values: dict[str, float | None] = {}
    for name in wanted:
        was = run.values.get(name)
        if name not in found:
            values[name] = was
            if name in run.sources:
                sources[name] = run.sources[name]
            continue
        now = found[name]
        values[name] = now
        if now != was:
            notes.append(
                f"{name} reads {_figure(now)} from its record where compare.json holds "
                f"{_figure(was)}: today's reading is used"
            )
    sources = {k: v for k, v in sources.items() if k in wanted}
    return RepeatOutcome(
        values, ref=run.ref, notes=tuple(notes), refs=run.refs, sources=sources,
        unsound=tuple(unsound.values()), failures=tuple(failures),
    )  # fmt: skip


def _figure(value: float | None) -> str:
    return "unknown" if value is None else f"{value:,.6g}"


def _result(results_root: Path, ref: str) -> results.RunResult:
    path = results_root / ref / results.RESULT_FILE
    if not path.is_file():
        raise ReplayError(f"{ref}: no {results.RESULT_FILE}")
    try:
        return results.read(path)
    except RecordError as exc:
        raise ReplayError(f"{ref}: {exc}") from None


def _search(results_root: Path, ref: str) -> SearchRecord:
    path = results_root / ref / SEARCH_FILE
    try:
        return SearchRecord.from_json(path.read_text())
    except (OSError, RecordError) as exc:
        raise ReplayError(f"{ref}: {exc}") from None
