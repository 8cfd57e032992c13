"""The report's content from a results folder: `load` reads every record under it through the
records' own readers (result.json, series.json, search.json, compare.json), `build` makes the
rows per revision and scenario, the capacities, the knee curves and picks each row's series.

How each figure is made: loadgate.report.naming (revision, settings, scenario),
loadgate.report.runs (a run's figures), loadgate.report.rows (aggregation, capacity per row),
loadgate.report.capacity (searches), loadgate.report.saturation (saturation beside capacity).
The page is loadgate.report.page, the plots loadgate.report.plots and the command
loadgate.cli.report.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from loadgate.capacity.compare.record import CompareRecord
from loadgate.capacity.search.record import SearchRecord
from loadgate.measure import timeseries as ts
from loadgate.records import files
from loadgate.records import result as results
from loadgate.records.fields import RecordError
from loadgate.report import naming
from loadgate.report.capacity import Capacity, KneeCurve, capacity_of, knee_curve
from loadgate.report.matrix_content import MatrixContent, load_all
from loadgate.report.rows import Row, rows_of, search_step_runs
from loadgate.report.runs import Run, run_of
from loadgate.report.saturation import SaturationRow, saturation_rows


class ReportError(ValueError):
    """A record the report cannot read: the message names the file and the field."""


@dataclass(frozen=True)
class Records:
    """Everything under a results folder the report reads, and what it skipped (with why);
    `presets`: each preset's options, to name the settings of a run (report.naming)."""

    root: Path
    runs: tuple[Run, ...] = ()
    series: dict[str, ts.RunSeries] = field(default_factory=dict[str, ts.RunSeries])
    searches: tuple[SearchRecord, ...] = ()
    compares: tuple[CompareRecord, ...] = ()
    skipped: tuple[str, ...] = ()
    presets: Mapping[str, Mapping[str, str]] = field(default_factory=dict[str, dict[str, str]])
    matrices: tuple[MatrixContent, ...] = ()  # `loadgate matrix`'s folders

    @property
    def empty(self) -> bool:
        return not (self.runs or self.searches or self.compares or self.matrices)

    @property
    def matrix_runs(self) -> frozenset[str]:
        """The runs and searches of matrix cells (shown in their matrix, not in the rows)."""
        return frozenset(ref for m in self.matrices for ref in m.run_ids)


def load(root: Path, presets: naming.Presets | None = None) -> Records:
    """Read every record under `root`, at any depth (a run's folder, a search's or comparison's
    folder and the step runs inside it); `presets` default to the bundle's overlays.

    Raises ReportError when `root` is not a folder or a record is unreadable (invalid JSON, a
    field missing or of the wrong type: named with its file); a record of another format is
    skipped and named in `skipped`."""
    if not root.exists():
        raise ReportError(f"{root}: no such folder (no result.json yet: run `loadgate run` first)")
    if not root.is_dir():
        raise ReportError(f"{root}: not a folder")
    presets = naming.preset_options() if presets is None else presets
    try:
        results_found = results.read_all(root)
        series = files.read_all(ts.RunSeries, root)
        searches = files.read_all(SearchRecord, root)
        compares = files.read_all(CompareRecord, root)
        matrices = tuple(load_all(root))
    except RecordError as exc:
        raise ReportError(str(exc)) from None
    runs = tuple(run_of(r, presets) for r in results_found.records)
    skipped = results_found.skipped + series.skipped + searches.skipped + compares.skipped
    return Records(
        root,
        runs,
        {s.run_id: s for s in series.records},
        tuple(sorted(searches.records, key=lambda s: (s.started_at or 0.0, s.search_id))),
        tuple(sorted(compares.records, key=lambda c: (c.started_at or 0.0, c.compare_id))),
        skipped,
        presets,
        matrices,
    )


@dataclass(frozen=True)
class Report:
    records: Records
    rows: tuple[Row, ...]
    capacities: tuple[Capacity, ...]
    curves: tuple[KneeCurve, ...]
    step_runs: frozenset[str]
    # Run id -> its series, for the latest run of each row that has one.
    series: dict[str, ts.RunSeries]
    # Saturation throughput beside capacity, per revision and scenario.
    saturation: tuple[SaturationRow, ...] = ()


def build(records: Records) -> Report:
    by_id = {r.run_id: r for r in records.runs}
    presets = records.presets
    capacities = tuple(capacity_of(s, by_id, presets) for s in records.searches)
    curves = tuple(knee_curve(s, by_id, presets) for s in records.searches)
    steps = search_step_runs(records.searches)
    standalone = [r for r in records.runs if r.run_id not in records.matrix_runs]
    rows = tuple(rows_of(standalone, capacities, steps))
    chosen: dict[str, ts.RunSeries] = {}
    for row in rows:
        for run_id in reversed(row.run_ids):
            if run_id in records.series:
                chosen[run_id] = records.series[run_id]
                break
    saturation = tuple(saturation_rows(records.runs, capacities, frozenset(steps)))
    return Report(records, rows, capacities, curves, frozenset(steps), chosen, saturation)
