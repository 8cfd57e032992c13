"""The report's content, as pure functions: read the records under a results folder (result.json,
series.json, search.json, compare.json) and aggregate them into rows per revision and scenario,
knee curves, capacities per revision and comparisons. The page is loadgate.report.page, the
plots loadgate.report.plots and the command loadgate.cli.report.

How the figures are made (the page says it too):

- **Revision** of a run: its `revision` label (`revision=221` -> `rev221`), else the otelcol
  charm source's `revN` ref, else the revisions its commit is tagged with (`rev160/161`),
  else the source's commit, else the profile; followed by the charm options it ran with
  (`queue_size=5000`) and a profile other than the charm default, so two stacks never share a row.
- **Scenario**: the k6 scenario and executor; runs at different offered rates are different rows.
- **accepted / exported / stored per minute**: the run's records at those ledger steps (collector
  receiver, collector Loki exporter, LogQL count in Loki), divided by the load's duration (k6).
- **CPU s / 1,000 records**: the collector's mean CPU over the load (cores) x the load's duration
  / the records k6 got accepted x 1,000 (`capacity.compare.cpu_per_1000`, as `loadgate compare`).
- **RSS MiB / 1,000 rec/min**: the collector's peak RSS over the load / (accepted per minute /
  1,000): memory per unit of throughput.
- **Aggregation**: runs of one revision, scenario and offered rate make one row; each figure is
  the median of the runs that measured it, with n; a figure no run measured is unknown. The verdict
  is PASS or FAIL when every run agrees, else the counts.
- **Capacity**: from the searches of that revision and scenario (the median capacity when there
  are several, with n, and the widest precision). A search's revision and scenario are its step
  runs'; runs that are search steps are in the knee curve, not in the rows.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loadgate.capacity import search_rule as srch
from loadgate.capacity.compare_rule import cpu_per_1000
from loadgate.measure import timeseries as ts
from loadgate.records import fields as f
from loadgate.records import result as results
from loadgate.records.capacity import (
    COMPARE_FILE,
    COMPARE_FORMAT,
    SEARCH_FILE,
    SEARCH_FORMAT,
    CompareRecord,
    SearchRecord,
)

RESULT_FORMAT = "loadgate-result/1"
ARRIVAL = ("constant-arrival-rate", "ramping-arrival-rate")
UNKNOWN = "unknown"


class ReportError(ValueError):
    """A record the report cannot read: the message names the file and the field."""


# ---- one run -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """What the report takes from one result.json (None: not measured)."""

    run_id: str
    path: str
    started_at: float
    ended_at: float
    revision: str
    scenario: str
    offered_per_min: int | None  # arrival-rate executors only
    vus: int | None
    accepted_per_min: float | None
    exported_per_min: float | None
    stored_per_min: float | None
    p99_ms: float | None
    error_rate: float | None
    cpu_s_per_1000: float | None
    rss_mib_per_1000_per_min: float | None
    verdict: str
    labels: dict[str, str] = field(default_factory=dict[str, str])


def _obj(d: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    """An optional object field ({} when absent or null)."""
    value = d.get(key)
    return {} if value is None else f.mapping(value, f"{where}.{key}")


def _path(d: Mapping[str, Any], *keys: str) -> Any:
    """A nested value, or None when any level is missing or not an object."""
    value: Any = d
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)  # pyright: ignore[reportUnknownMemberType]
    return value  # pyright: ignore[reportUnknownVariableType]


def revision_of(data: Mapping[str, Any]) -> str:
    """The revision a run ran (see the module's docstring), with its options and profile."""
    labels = data.get("labels") or {}
    otelcol = _path(data, "environment", "charms", "otelcol") or {}
    base: str | None = None
    label = labels.get("revision") if isinstance(labels, Mapping) else None
    if isinstance(label, str) and label:
        base = f"rev{label}" if label.isdigit() else label
    ref = _path(otelcol, "source", "ref")
    if base is None and isinstance(ref, str) and re.fullmatch(r"rev\d+", ref):
        base = ref  # the tag asked for, when a commit carries several revisions
    if base is None:
        revisions = _path(otelcol, "source", "revisions")
        if (
            isinstance(revisions, list)
            and revisions
            and all(
                isinstance(r, int)
                for r in revisions  # pyright: ignore[reportUnknownVariableType]
            )
        ):
            base = "rev" + "/".join(str(r) for r in sorted(revisions))  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
    if base is None:
        commit = _path(otelcol, "source", "commit")
        if isinstance(commit, str) and commit:
            base = commit[:7]
    preset = _path(data, "environment", "charms", "preset")
    profile = _path(data, "environment", "profile", "name")
    if base is None:
        base = str(profile) if isinstance(profile, str) and profile else "-"
    extras: list[str] = []
    options = _path(otelcol, "options")
    if isinstance(options, Mapping):
        extras += [f"{k}={v}" for k, v in sorted(options.items())]  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
    if isinstance(preset, str) and preset not in ("", "charm-default"):
        extras.insert(0, f"profile={preset}")
    return base + (f" ({', '.join(extras)})" if extras else "")


def scenario_of(spec: Mapping[str, Any]) -> str:
    return f"{spec.get('scenario') or '-'} {spec.get('executor') or '-'}"


def _ledger_counts(ledger: Mapping[str, Any], where: str) -> dict[str, int | None]:
    steps = ledger.get("steps") or []
    if not isinstance(steps, list):
        raise f.RecordError(f"{where}.steps: expected a list, got {type(steps).__name__}")
    out: dict[str, int | None] = {}
    for i, step in enumerate(steps):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        at = f"{where}.steps[{i}]"
        s = f.mapping(step, at)
        out[f.text(s, "name", at)] = f.opt_integer(s, "count", at)
    return out


def _per_min(count: int | None, duration_s: float | None) -> float | None:
    if count is None or not duration_s or duration_s <= 0:
        return None
    return count / duration_s * 60


def run_of(data: object, path: str = "result.json") -> Run:
    """The report's view of one result.json; RecordError names the bad field."""
    where = "result"
    d = f.mapping(data, where)
    spec = f.mapping(d.get("spec"), f"{where}.spec")
    client = f.mapping(d.get("client"), f"{where}.client")
    pipeline = _obj(d, "pipeline", where)
    ledger = _obj(d, "ledger", where)
    executor = f.opt_text(spec, "executor", f"{where}.spec")
    rate = f.opt_integer(spec, "rate", f"{where}.spec")
    started = f.number(d, "started_at", where)
    ended = f.opt_number(d, "ended_at", where)
    duration = f.opt_number(client, "duration_s", f"{where}.client")
    if duration is None and ended is not None:
        duration = ended - started
    counts = _ledger_counts(ledger, f"{where}.ledger")
    accepted_pm = _per_min(counts.get("accepted"), duration)
    k6_accepted = f.opt_integer(client, "records_accepted", f"{where}.client")
    k6_pm = f.opt_number(client, "records_per_minute", f"{where}.client")
    cpu_mean = f.opt_number(pipeline, "collector_cpu_mean", f"{where}.pipeline")
    rss_max = f.opt_number(pipeline, "collector_rss_max_mib", f"{where}.pipeline")
    load_s = ended - started if ended is not None else None
    labels = _obj(d, "labels", where)
    return Run(
        run_id=f.text(d, "run_id", where),
        path=path,
        started_at=started,
        ended_at=ended if ended is not None else started,
        revision=revision_of(d),
        scenario=scenario_of(spec),
        offered_per_min=rate if executor in ARRIVAL else None,
        vus=f.opt_integer(spec, "vus", f"{where}.spec") if executor not in ARRIVAL else None,
        accepted_per_min=accepted_pm,
        exported_per_min=_per_min(counts.get("exported"), duration),
        stored_per_min=_per_min(counts.get("stored"), duration),
        p99_ms=f.opt_number(client, "p99_ms", f"{where}.client"),
        error_rate=f.opt_number(client, "error_rate", f"{where}.client"),
        cpu_s_per_1000=cpu_per_1000(cpu_mean, load_s, k6_accepted),
        rss_mib_per_1000_per_min=(
            rss_max / (k6_pm / 1000) if rss_max is not None and k6_pm else None
        ),
        verdict=f.text(d, "verdict", where),
        labels={str(k): str(v) for k, v in labels.items()},
    )


# ---- reading a results folder --------------------------------------------------------------


@dataclass(frozen=True)
class Records:
    """Everything under a results folder the report reads, and what it skipped (with why)."""

    root: Path
    runs: tuple[Run, ...] = ()
    series: dict[str, ts.RunSeries] = field(default_factory=dict[str, ts.RunSeries])
    searches: tuple[SearchRecord, ...] = ()
    compares: tuple[CompareRecord, ...] = ()
    skipped: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.runs or self.searches or self.compares)


def _read(path: Path, root: Path) -> tuple[str, object]:
    name = str(path.relative_to(root))
    try:
        return name, json.loads(path.read_text())
    except OSError as exc:
        raise ReportError(f"{name}: cannot read it: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise ReportError(f"{name}: not JSON: {exc}") from None
    except UnicodeDecodeError:
        raise ReportError(f"{name}: not UTF-8 text") from None


def _parse(name: str, data: object, expected: str, read: Callable[[object], Any]) -> Any:
    """`read(data)` when the record is of the expected format; None (skipped) when it names
    another; ReportError naming the file and the field when it cannot be read."""
    fmt = data.get("format") if isinstance(data, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if fmt != expected:
        return None
    try:
        return read(data)
    except f.RecordError as exc:
        raise ReportError(f"{name}: {exc}") from None


def load(root: Path) -> Records:
    """Read every record under `root`, at any depth (a run's folder, a search's or comparison's
    folder and the step runs inside it).

    Raises ReportError when `root` is not a folder or a record is unreadable (invalid JSON, a
    field missing or of the wrong type: named with its file); a record of another format is
    skipped and named in `skipped`."""
    if not root.exists():
        raise ReportError(f"{root}: no such folder (no result.json yet: run `loadgate run` first)")
    if not root.is_dir():
        raise ReportError(f"{root}: not a folder")
    skipped: list[str] = []

    def each(file: str, expected: str, read: Callable[[object, str], Any]) -> Iterator[Any]:
        """Every record named `file` under root, read; one of another format is skipped with
        a note."""
        for path in sorted(root.rglob(file)):
            name, data = _read(path, root)
            got = _parse(name, data, expected, lambda d, n=name: read(d, n))
            if got is None:
                fmt = data.get("format") if isinstance(data, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
                skipped.append(f"{name}: format {fmt!r} is not {expected!r}: skipped")
                continue
            yield got

    runs = list(each(results.RESULT_FILE, RESULT_FORMAT, run_of))
    series = {
        s.run_id: s
        for s in each(ts.SERIES_FILE, ts.SERIES_FORMAT, lambda d, _: ts.RunSeries.from_dict(d))
    }
    searches = list(each(SEARCH_FILE, SEARCH_FORMAT, lambda d, _: SearchRecord.from_dict(d)))
    compares = list(each(COMPARE_FILE, COMPARE_FORMAT, lambda d, _: CompareRecord.from_dict(d)))
    runs.sort(key=lambda r: (r.started_at, r.run_id))
    searches.sort(key=lambda s: (s.started_at or 0.0, s.search_id))
    compares.sort(key=lambda c: (c.started_at or 0.0, c.compare_id))
    return Records(root, tuple(runs), series, tuple(searches), tuple(compares), tuple(skipped))


# ---- searches ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Capacity:
    """One search's answer for its revision and scenario."""

    search_id: str
    revision: str
    scenario: str
    status: str
    capacity_per_min: int | None
    lowest_failing_per_min: int | None
    precision: float | None
    confirmed: bool
    bottleneck: str | None  # the attribution's one-line summary at the knee

    @property
    def converged(self) -> bool:
        return self.status in (srch.FOUND, srch.AT_LEAST_MAX, srch.BELOW_MIN)

    @property
    def text(self) -> str:
        c = self.capacity_per_min
        if self.status == srch.AT_LEAST_MAX and c is not None:
            return f">= {c:,}"
        if self.status == srch.BELOW_MIN:
            return f"< {self.lowest_failing_per_min:,}" if self.lowest_failing_per_min else "< min"
        if c is None:
            return f"{UNKNOWN} ({self.status})"
        text = f"{c:,}"
        if self.precision is not None:
            text += f" ±{self.precision * 100:.1f}%"
        if self.status != srch.FOUND:
            text += f" ({self.status})"
        return text


def search_identity(record: SearchRecord, runs_by_id: Mapping[str, Run]) -> tuple[str, str]:
    """(revision, scenario) of a search: its step runs' when the report has one, else what its
    stack description says."""
    for step in record.steps:
        run = runs_by_id.get(step.outcome.run_id or "")
        if run is not None:
            return run.revision, run.scenario
    stack = record.stack
    revision = revision_of({"labels": stack.get("labels"), "environment": stack})
    if revision == "-":
        revision = str(stack.get("revision") or stack.get("name") or record.search_id)
    return revision, str(stack.get("scenario") or "-")


def capacity_of(record: SearchRecord, runs_by_id: Mapping[str, Run]) -> Capacity:
    revision, scenario = search_identity(record, runs_by_id)
    r = record.result
    neck = record.bottleneck
    return Capacity(
        record.search_id,
        revision,
        scenario,
        r.status,
        r.capacity_per_min,
        r.lowest_failing_per_min,
        r.precision,
        r.confirmed,
        neck.summary if neck is not None else None,
    )


@dataclass(frozen=True)
class KneePoint:
    rate: int
    p99_ms: float | None
    error_rate: float | None
    passed: bool
    phase: str


@dataclass(frozen=True)
class KneeCurve:
    """One search's steps as p99 and error rate against offered rate, sorted by rate."""

    label: str  # revision and search id
    points: tuple[KneePoint, ...]
    capacity_per_min: int | None

    @property
    def has_data(self) -> bool:
        return any(p.p99_ms is not None or p.error_rate is not None for p in self.points)


def knee_curve(record: SearchRecord, runs_by_id: Mapping[str, Run]) -> KneeCurve:
    revision, _ = search_identity(record, runs_by_id)
    points = sorted(
        (
            KneePoint(
                s.outcome.rate,
                s.outcome.p99_ms,
                s.outcome.error_rate,
                s.outcome.passed,
                s.step.phase,
            )
            for s in record.steps
        ),
        key=lambda p: (p.rate, p.phase),
    )
    r = record.result
    label = f"{revision} [{record.search_id}]" + ("" if r.converged else f" ({r.status})")
    # Only a converged search has a knee to mark; another's C is a bracket's end.
    return KneeCurve(label, tuple(points), r.capacity_per_min if r.converged else None)


# ---- rows ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Figure:
    """A figure aggregated over a row's runs: the median of those that measured it."""

    value: float | None
    measured: int  # runs that measured it
    runs: int

    @classmethod
    def of(cls, values: Sequence[float | None]) -> Figure:
        known = [v for v in values if v is not None]
        return cls(statistics.median(known) if known else None, len(known), len(values))


@dataclass(frozen=True)
class Row:
    revision: str
    scenario: str
    offered_per_min: int | None
    vus: int | None
    run_ids: tuple[str, ...]
    latest_run: str | None
    capacity: tuple[Capacity, ...]
    accepted_per_min: Figure
    exported_per_min: Figure
    stored_per_min: Figure
    p99_ms: Figure
    error_rate: Figure
    cpu_s_per_1000: Figure
    rss_mib_per_1000_per_min: Figure
    verdict: str

    @property
    def n(self) -> int:
        return len(self.run_ids)

    @property
    def load(self) -> str:
        if self.offered_per_min is not None:
            return f"{self.offered_per_min:,}/min"
        if self.vus is not None:
            return f"{self.vus} VUs"
        return "-" if not self.run_ids else UNKNOWN

    @property
    def capacity_text(self) -> str:
        """The searches' capacity: converged searches only (a search that ran out of budget or
        is in progress has a bracket, not a knee), the median of several; else the one search's
        own text, or unknown."""
        caps = self.capacity
        if not caps:
            return "no search"
        done = [c for c in caps if c.converged]
        rest = len(caps) - len(done)
        note = f" (+{rest} not converged)" if rest and done else ""
        if len(done) == 1:
            return done[0].text + note
        if not done:
            return caps[0].text if len(caps) == 1 else f"{UNKNOWN} ({len(caps)} not converged)"
        values = [c.capacity_per_min for c in done if c.capacity_per_min is not None]
        if not values:
            return f"{UNKNOWN} (n={len(done)})" + note
        precisions = [c.precision for c in done if c.precision is not None]
        text = f"{statistics.median(values):,.0f}"
        if precisions:
            text += f" ±{max(precisions) * 100:.1f}%"
        return text + f" (median, n={len(values)}/{len(done)})" + note


def verdict_of(verdicts: Sequence[str]) -> str:
    if not verdicts:
        return "-"
    kinds = sorted(set(verdicts))
    if len(kinds) == 1:
        return kinds[0] if len(verdicts) == 1 else f"{kinds[0]} ({len(verdicts)}/{len(verdicts)})"
    return " / ".join(f"{verdicts.count(k)} {k}" for k in kinds)


def search_step_runs(searches: Sequence[SearchRecord]) -> set[str]:
    return {s.outcome.run_id for r in searches for s in r.steps if s.outcome.run_id}


def rows_of(
    runs: Sequence[Run], capacities: Sequence[Capacity], exclude: set[str] | None = None
) -> list[Row]:
    """One row per (revision, scenario, offered load), runs in `exclude` left out; a revision and
    scenario with a search but no other run gets a row of its own (capacity only)."""
    exclude = exclude or set()
    groups: dict[tuple[str, str, int | None, int | None], list[Run]] = {}
    for run in runs:
        if run.run_id in exclude:
            continue
        key = (run.revision, run.scenario, run.offered_per_min, run.vus)
        groups.setdefault(key, []).append(run)
    by_identity: dict[tuple[str, str], list[Capacity]] = {}
    for cap in capacities:
        by_identity.setdefault((cap.revision, cap.scenario), []).append(cap)
    for revision, scenario in by_identity:
        if not any(k[0] == revision and k[1] == scenario for k in groups):
            groups[(revision, scenario, None, None)] = []
    rows: list[Row] = []
    for (revision, scenario, offered, vus), members in groups.items():
        members = sorted(members, key=lambda r: (r.started_at, r.run_id))

        def fig(get: Callable[[Run], float | None], runs_: list[Run] = members) -> Figure:
            return Figure.of([get(r) for r in runs_])

        rows.append(
            Row(
                revision=revision,
                scenario=scenario,
                offered_per_min=offered,
                vus=vus,
                run_ids=tuple(r.run_id for r in members),
                latest_run=members[-1].run_id if members else None,
                capacity=tuple(by_identity.get((revision, scenario), [])),
                accepted_per_min=fig(lambda r: r.accepted_per_min),
                exported_per_min=fig(lambda r: r.exported_per_min),
                stored_per_min=fig(lambda r: r.stored_per_min),
                p99_ms=fig(lambda r: r.p99_ms),
                error_rate=fig(lambda r: r.error_rate),
                cpu_s_per_1000=fig(lambda r: r.cpu_s_per_1000),
                rss_mib_per_1000_per_min=fig(lambda r: r.rss_mib_per_1000_per_min),
                verdict=verdict_of([r.verdict for r in members]),
            )
        )
    rows.sort(key=lambda r: (r.revision, r.scenario, r.offered_per_min or 0, r.vus or 0))
    return rows


# ---- the whole report ----------------------------------------------------------------------


@dataclass(frozen=True)
class Report:
    records: Records
    rows: tuple[Row, ...]
    capacities: tuple[Capacity, ...]
    curves: tuple[KneeCurve, ...]
    step_runs: frozenset[str]
    # Run id -> its series, for the latest run of each row that has one.
    series: dict[str, ts.RunSeries]


def build(records: Records) -> Report:
    by_id = {r.run_id: r for r in records.runs}
    capacities = tuple(capacity_of(s, by_id) for s in records.searches)
    curves = tuple(knee_curve(s, by_id) for s in records.searches)
    steps = search_step_runs(records.searches)
    rows = tuple(rows_of(records.runs, capacities, steps))
    chosen: dict[str, ts.RunSeries] = {}
    for row in rows:
        for run_id in reversed(row.run_ids):
            if run_id in records.series:
                chosen[run_id] = records.series[run_id]
                break
    return Report(records, rows, capacities, curves, frozenset(steps), chosen)
