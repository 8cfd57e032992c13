"""What the report takes from each search: its capacity (for the rows and the capacity table)
and its knee curve (every step's p99 and error rate against the offered rate).

A search's revision and scenario are its step runs' when the report has one, else what its
stack description says.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from loadgate.capacity.search import rule as srch
from loadgate.capacity.search.record import SearchRecord
from loadgate.report import naming
from loadgate.report.naming import UNKNOWN
from loadgate.report.runs import Run


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
    # (X, Y, confidence): the knee between X and Y with that confidence (SearchResult.interval);
    # None for a search that found no knee, or was recorded before searches stated one
    interval: tuple[int, int, float] | None = None

    @property
    def converged(self) -> bool:
        return self.status in (srch.FOUND, srch.AT_LEAST_MAX, srch.BELOW_MIN)

    @property
    def interval_text(self) -> str:
        """Where the knee lies, in words ("between X and Y with Z % confidence"), or "-"."""
        if self.interval is None:
            return "-"
        return srch.interval_text(*self.interval)

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
        if self.interval is not None:
            text += f" ({srch.span_text(*self.interval)})"
        elif self.precision is not None:
            text += f" ±{self.precision * 100:.1f}%"
        if self.status != srch.FOUND:
            text += f" ({self.status})"
        return text


def _search_identity(
    record: SearchRecord, runs_by_id: Mapping[str, Run], presets: naming.Presets | None = None
) -> tuple[str, str]:
    """(revision, scenario) of a search: its step runs' when the report has one, else what its
    stack description says."""
    for step in record.steps:
        run = runs_by_id.get(step.outcome.run_id or "")
        if run is not None:
            return run.revision, run.scenario
    stack = record.stack
    labels: Any = stack.get("labels")
    revision = naming.revision_of(labels if isinstance(labels, Mapping) else {}, stack, presets)
    if revision == "-":
        revision = str(stack.get("revision") or stack.get("name") or record.search_id)
    return revision, str(stack.get("scenario") or "-")


def capacity_of(
    record: SearchRecord, runs_by_id: Mapping[str, Run], presets: naming.Presets | None = None
) -> Capacity:
    revision, scenario = _search_identity(record, runs_by_id, presets)
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
        r.interval,
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


def knee_curve(
    record: SearchRecord, runs_by_id: Mapping[str, Run], presets: naming.Presets | None = None
) -> KneeCurve:
    revision, _ = _search_identity(record, runs_by_id, presets)
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
