"""Several units, one run: who runs which execution segment, and the run's combined state."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import runs
from loadgate_contract.k6args import Segment
from loadgate_contract.summary import ClientFigures, combine
from peers import UnitReport


def unit_order(unit: str) -> tuple[str, int]:
    """Sort key of unit names: `k6/2` before `k6/10`."""
    app, _, number = unit.rpartition("/")
    return (app, int(number)) if number.isdigit() else (unit, -1)


def participants(units: Iterable[str]) -> list[str]:
    """The units of a run in segment order (unique, sorted by unit number)."""
    return sorted(set(units), key=unit_order)


def segment_of(unit: str, units: list[str]) -> Segment:
    """The execution segment of `unit` among the run's `units` (in participants() order)."""
    if unit not in units:
        raise ValueError(f"{unit} takes no part in this run (units: {', '.join(units)})")
    return Segment(units.index(unit), len(units))


@dataclass(frozen=True)
class Combined:
    """A run across units: one status, the figures added up, each unit's own status."""

    run_id: str
    status: str
    figures: ClientFigures | None
    units: dict[str, str]
    missing: list[str] = field(default_factory=list[str])  # units without figures
    covers: list[str] = field(default_factory=list[str])  # units whose figures are combined


def combined_status(statuses: Iterable[str]) -> str:
    """Running while any unit runs (or has not reported); then stopped, error, failed, passed.

    A unit missing at the deadline makes the run an error: its share of the load is unknown.
    """
    found = set(statuses)
    if runs.MISSING in found:
        found.add(runs.ERROR)
    for status in (runs.RUNNING, runs.PENDING, runs.STOPPED, runs.ERROR, runs.FAILED):
        if status in found:
            return runs.RUNNING if status == runs.PENDING else status
    return runs.PASSED


def combine_reports(
    run_id: str,
    units: list[str],
    reports: Mapping[str, UnitReport],
    *,
    overdue: bool = False,
    still_running: Iterable[str] = (),
) -> Combined:
    """Combine the units' reports of one run: counts add, p99 from the merged histograms.

    `overdue`: the run's deadline has passed, so a unit without a final report (none, or
    `running`) is `missing`, except those in `still_running` (this unit's k6, seen running).
    """
    statuses: dict[str, str] = {}
    parts: list[ClientFigures] = []
    missing: list[str] = []
    covers: list[str] = []
    running_here = set(still_running)
    for unit in units:
        report = reports.get(unit)
        mine = report is not None and report.run_id == run_id
        status = report.status if report is not None and mine else runs.PENDING
        if overdue and status in (runs.PENDING, runs.RUNNING) and unit not in running_here:
            status = runs.MISSING
        statuses[unit] = status
        if report is None or not mine or report.figures is None:
            missing.append(unit)
        else:
            parts.append(report.figures)
            covers.append(unit)
    figures = combine(parts) if parts else None
    return Combined(run_id, combined_status(statuses.values()), figures, statuses, missing, covers)
