"""The report's rows: one per revision, scenario and offered load, aggregating its runs.

- **Aggregation**: runs of one revision, scenario and offered rate make one row; each figure is
  the median of the runs that measured it, with n; a figure no run measured is unknown. The
  verdict is PASS or FAIL when every run agrees, else the counts.
- **Capacity**: from the searches of that revision and scenario (the median capacity when there
  are several, with n, and the widest precision). Runs that are search steps are in the knee
  curve, not in the rows; a revision and scenario with a search but no other run gets a row of
  its own.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from loadgate.capacity.search import rule as srch
from loadgate.capacity.search.record import SearchRecord
from loadgate.report.capacity import Capacity
from loadgate.report.naming import UNKNOWN
from loadgate.report.runs import Run

_RowKey = tuple[str, str, int | None, int | None]  # revision, scenario, offered rate, VUs


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
        return capacity_text(self.capacity)


def capacity_text(caps: Sequence[Capacity]) -> str:
    """The searches' capacity: converged searches only (a search that ran out of budget or is
    in progress has a bracket, not a knee), the median of several; else the one search's own
    text, or unknown."""
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
    intervals = [c.interval for c in done if c.interval is not None]
    precisions = [c.precision for c in done if c.precision is not None]
    text = f"{statistics.median(values):,.0f}"
    if intervals:  # the widest interval's half-width, (Y - X) / (Y + X), and its confidence
        low, high, confidence = max(intervals, key=lambda i: (i[1] - i[0]) / (i[1] + i[0]))
        text += f" ±{(high - low) / (high + low) * 100:.1f}% at {srch.percent(confidence)}"
    elif precisions:
        text += f" ±{max(precisions) * 100:.1f}%"
    return text + f" (median, n={len(values)}/{len(done)})" + note


def _verdict_of(verdicts: Sequence[str]) -> str:
    if not verdicts:
        return "-"
    kinds = sorted(set(verdicts))
    if len(kinds) == 1:
        return kinds[0] if len(verdicts) == 1 else f"{kinds[0]} ({len(verdicts)}/{len(verdicts)})"
    return " / ".join(f"{verdicts.count(k)} {k}" for k in kinds)


def search_step_runs(searches: Sequence[SearchRecord]) -> set[str]:
    return {s.outcome.run_id for r in searches for s in r.steps if s.outcome.run_id}


def _row_of(key: _RowKey, runs: Sequence[Run], capacity: Sequence[Capacity]) -> Row:
    """The row of `key` from its runs (oldest first) and its revision's and scenario's
    searches."""
    revision, scenario, offered, vus = key

    def fig(get: Callable[[Run], float | None]) -> Figure:
        return Figure.of([get(r) for r in runs])

    return Row(
        revision=revision,
        scenario=scenario,
        offered_per_min=offered,
        vus=vus,
        run_ids=tuple(r.run_id for r in runs),
        latest_run=runs[-1].run_id if runs else None,
        capacity=tuple(capacity),
        accepted_per_min=fig(lambda r: r.accepted_per_min),
        exported_per_min=fig(lambda r: r.exported_per_min),
        stored_per_min=fig(lambda r: r.stored_per_min),
        p99_ms=fig(lambda r: r.p99_ms),
        error_rate=fig(lambda r: r.error_rate),
        cpu_s_per_1000=fig(lambda r: r.cpu_s_per_1000),
        rss_mib_per_1000_per_min=fig(lambda r: r.rss_mib_per_1000_per_min),
        verdict=_verdict_of([r.verdict for r in runs]),
    )


def rows_of(
    runs: Sequence[Run], capacities: Sequence[Capacity], exclude: set[str] | None = None
) -> list[Row]:
    """One row per (revision, scenario, offered load), runs in `exclude` left out; a revision and
    scenario with a search but no other run gets a row of its own (capacity only)."""
    exclude = exclude or set()
    groups: dict[_RowKey, list[Run]] = {}
    for run in runs:
        if run.run_id not in exclude:
            key = (run.revision, run.scenario, run.offered_per_min, run.vus)
            groups.setdefault(key, []).append(run)
    by_identity: dict[tuple[str, str], list[Capacity]] = {}
    for cap in capacities:
        by_identity.setdefault((cap.revision, cap.scenario), []).append(cap)
    for revision, scenario in by_identity:
        if not any(k[0] == revision and k[1] == scenario for k in groups):
            groups[(revision, scenario, None, None)] = []
    rows = [
        _row_of(
            key,
            sorted(members, key=lambda r: (r.started_at, r.run_id)),
            by_identity.get(key[:2], []),
        )
        for key, members in groups.items()
    ]
    rows.sort(key=lambda r: (r.revision, r.scenario, r.offered_per_min or 0, r.vus or 0))
    return rows
