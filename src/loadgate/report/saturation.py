"""Saturation throughput per revision and scenario, beside its capacity: what the pipeline takes
per minute at its limit (saturated runs: `loadgate run --saturate`, `loadgate compare`'s
saturation runs) next to the highest rate at which every gate passed (searches).

- **Saturation**: each saturated run's accepted records per minute over its steady window
  (report.runs.saturation_of); per revision and scenario the median, the spread (lowest,
  highest, their range relative to the median, and the coefficient of variation: sample
  standard deviation / mean) and n. A run whose queue never filled has no saturation figure (it
  gives a lower bound) and is not counted; neither are search steps (as in the rows).
- **Capacity**: the searches of that revision and scenario, as in the rows (report.rows).

The two differ by design: capacity is judged by every gate at a fixed offered rate held for a
while (p99, errors, loss), saturation is what the pipeline sustains when offered too much.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from loadgate.report.capacity import Capacity
from loadgate.report.naming import UNKNOWN
from loadgate.report.rows import capacity_text
from loadgate.report.runs import Run


@dataclass(frozen=True)
class SaturationRow:
    revision: str
    scenario: str
    values: tuple[float, ...]  # each saturated run's throughput, oldest first
    run_ids: tuple[str, ...]
    capacity: tuple[Capacity, ...]

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def median(self) -> float | None:
        return statistics.median(self.values) if self.values else None

    @property
    def cv(self) -> float | None:
        """Sample standard deviation / mean; None with fewer than two runs."""
        if len(self.values) < 2:
            return None
        return statistics.stdev(self.values) / statistics.fmean(self.values)

    @property
    def median_text(self) -> str:
        median = self.median
        return f"{median:,.0f}" if median is not None else f"{UNKNOWN} (no saturated run)"

    @property
    def spread_text(self) -> str:
        median, cv = self.median, self.cv
        if median is None or len(self.values) < 2 or cv is None:
            return "-"
        low, high = min(self.values), max(self.values)
        return (
            f"{low:,.0f} - {high:,.0f} ({(high - low) / median * 100:.1f}% of the median), "
            f"CV {cv * 100:.1f}%"
        )

    @property
    def capacity_text(self) -> str:
        return capacity_text(self.capacity)


def saturation_rows(
    runs: Sequence[Run], capacities: Sequence[Capacity], exclude: frozenset[str] = frozenset()
) -> list[SaturationRow]:
    """One row per revision and scenario with a saturated run or a search, sorted by them."""
    found: dict[tuple[str, str], list[Run]] = {}
    for run in sorted(runs, key=lambda r: (r.started_at, r.run_id)):
        if run.run_id not in exclude and run.saturation_per_min is not None:
            found.setdefault((run.revision, run.scenario), []).append(run)
    searched: dict[tuple[str, str], list[Capacity]] = {}
    for cap in capacities:
        searched.setdefault((cap.revision, cap.scenario), []).append(cap)
    rows: list[SaturationRow] = []
    for key in sorted(found.keys() | searched.keys()):
        members = found.get(key, [])
        rows.append(
            SaturationRow(
                key[0],
                key[1],
                tuple(r.saturation_per_min for r in members if r.saturation_per_min is not None),
                tuple(r.run_id for r in members),
                tuple(searched.get(key, [])),
            )
        )
    return rows
