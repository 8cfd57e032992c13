"""The spread of repeated searches: how far apart the capacities of the same stack land.

A capacity found at ±p is itself uncertain by p, so the spread of repeats says how much of a
difference between two stacks noise alone can make. `spread` summarises the capacities of
searches that found one (a search that did not converge has no capacity and is counted, not
used): n, median, min, max, the range relative to the median and the coefficient of variation
(sample standard deviation / mean, None with fewer than two values); the repeats a side a
comparison of capacities would need at that spread are the comparison's
(`capacity.compare.margins.repeats_for`).
`SearchFigures` is what each search found and cost (status, capacity and the knee's interval,
load, wall time, steps),
the figures `loadgate search --repeat N` prints as its benchmark of the search itself.
`measured_step_noise` is the step noise the repeats' holds show together, pooled: a knee's
noise measured on the stack, for a later search's `SearchPlan.measured_step_noise`.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from loadgate.capacity.search.confidence import Trials, fitted_step_noise
from loadgate.capacity.search.record import SearchRecord
from loadgate.capacity.search.state import fold, judged_trials
from loadgate.records import fields as f


@dataclass(frozen=True)
class Spread:
    found: tuple[int, ...]  # the capacities of the searches that found one, in repeat order
    not_found: int  # searches without a capacity (out of budget, below min, ...)
    median: float | None
    low: int | None
    high: int | None
    relative_range: float | None  # (high - low) / median
    cv: float | None  # sample standard deviation / mean; None with fewer than 2 values

    def to_dict(self) -> dict[str, Any]:
        return {
            "found": list(self.found),
            "not_found": self.not_found,
            "median": self.median,
            "low": self.low,
            "high": self.high,
            "relative_range": self.relative_range,
            "cv": self.cv,
        }


def spread(capacities: Sequence[int | None]) -> Spread:
    found = tuple(c for c in capacities if c is not None)
    missing = len(capacities) - len(found)
    if not found:
        return Spread((), missing, None, None, None, None, None)
    median = float(statistics.median(found))
    low, high = min(found), max(found)
    cv = statistics.stdev(found) / statistics.fmean(found) if len(found) >= 2 else None
    return Spread(found, missing, median, low, high, (high - low) / median, cv)


@dataclass(frozen=True)
class SearchFigures:
    """What one search found and what it cost."""

    search_id: str
    method: str
    status: str
    capacity_per_min: int | None
    precision: float | None  # of the bracket found
    saturation_per_min: float | None  # the saturation step's throughput, when measured
    load_s: int
    wall_s: float | None  # the whole search's, from its first step's settling to its end
    steps: int
    # the knee between these with this confidence, when found (SearchResult.interval)
    knee_low_per_min: int | None = None
    knee_high_per_min: int | None = None
    confidence: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "search_id": self.search_id,
            "method": self.method,
            "status": self.status,
            "capacity_per_min": self.capacity_per_min,
            "precision": f.real(self.precision),
            "saturation_per_min": f.real(self.saturation_per_min),
            "load_s": self.load_s,
            "wall_s": f.real(self.wall_s),
            "steps": self.steps,
            "knee_low_per_min": self.knee_low_per_min,
            "knee_high_per_min": self.knee_high_per_min,
            "confidence": f.real(self.confidence),
        }


def search_figures(record: SearchRecord) -> SearchFigures:
    r = record.result
    return SearchFigures(
        record.search_id,
        record.plan.method,
        r.status,
        r.capacity_per_min,
        r.precision,
        r.saturation_per_min,
        r.load_s,
        record.wall_s,
        r.steps,
        r.knee_low_per_min,
        r.knee_high_per_min,
        r.confidence,
    )


def measured_step_noise(records: Sequence[SearchRecord]) -> float | None:
    """The step noise of the knee the holds of these searches (repeats on one stack) show
    together: every hold's passes and failures and every probe's failures, pooled and fitted
    (`confidence.fitted_step_noise`); None when they do not contradict each other (nothing
    measured it)."""
    trials: list[Trials] = []
    for record in records:
        history = [(s.step, s.outcome) for s in record.steps]
        trials.extend(judged_trials(fold(history)))
    return fitted_step_noise(trials)
