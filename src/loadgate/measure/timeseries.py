"""A run's pipeline over time: collector CPU, RSS, queue and accepted rate as Prometheus range
queries over the run's window (`fetch`), written as `results/<run_id>/series.json` for the report
by `records.series`.

The query text reuses queries.py's metric names and the run's `Scope` (the same exporters and
Loki the run's figures read). A series Prometheus cannot give (no data, an error, Prometheus
down) is recorded as missing with the reason, never as zeros; fetching never fails the run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from loadgate.contract import typed as f
from loadgate.measure import pipeline as pipe
from loadgate.measure import queries as q
from loadgate.measure.queries import PrometheusAPI, QueryError, Series

_SERIES_FORMAT = "loadgate-series/1"
SERIES_FILE = "series.json"

CPU = "collector_cpu_cores"
RSS = "collector_rss_mib"
QUEUE = "queue_size"
ACCEPTED = "collector_accepted_per_s"
NAMES = (CPU, RSS, QUEUE, ACCEPTED)

# name -> (unit, scale applied to Prometheus' values)
_UNITS: dict[str, tuple[str, float]] = {
    CPU: ("cores", 1.0),
    RSS: ("MiB", 1.0 / pipe.MIB),
    QUEUE: ("records", 1.0),
    ACCEPTED: ("records/s", 1.0),
}
# Points per series at most: a 10-minute run at the local stack's 2 s scrape fits.
MAX_POINTS = 400
MIN_STEP_S = 2.0


def queries(scope: pipe.Scope) -> dict[str, str]:
    """Series name -> its PromQL (one series each: every query is a sum)."""
    rw = scope.rate_window
    # What the collector accepted of the scope's signal (log records when the load bypasses it).
    accepted = scope.selectors().get("collector_accepted") or q.selector(
        q.COLLECTOR_ACCEPTED, scope.collector
    )
    return {
        CPU: scope.cpu_cores(),
        RSS: scope.rss(),
        QUEUE: scope.queue_size(),
        ACCEPTED: f"sum(rate({accepted}[{rw}]))",
    }


def _step_for(start: float, end: float) -> float:
    """The evaluation step: at least MIN_STEP_S, at most MAX_POINTS points over the window."""
    return max(MIN_STEP_S, math.ceil((end - start) / MAX_POINTS))


@dataclass(frozen=True)
class TimeSeries:
    """One series: its samples (time in seconds, value in `unit`), or why it is missing. In
    series.json its name is its key in `series`."""

    name: str = field(metadata=f.mapping_key())
    query: str
    unit: str
    samples: tuple[tuple[float, float], ...] = ()
    missing: str | None = None  # the reason when there are no samples

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "unit": self.unit,
            "samples": [[t, v] for t, v in self.samples],
            "missing": self.missing,
        }


@dataclass(frozen=True)
class RunSeries:
    """series.json: the window asked for, the load's start and end, every series."""

    FORMAT: ClassVar[str] = _SERIES_FORMAT
    FILE: ClassVar[str] = SERIES_FILE

    run_id: str
    start: float
    end: float
    step_s: float
    load_started: float
    load_ended: float
    series: dict[str, TimeSeries] = field(default_factory=dict[str, TimeSeries])
    source: str = "Prometheus range queries (/api/v1/query_range) over the run's window"

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": _SERIES_FORMAT,
            "run_id": self.run_id,
            "start": self.start,
            "end": self.end,
            "step_s": self.step_s,
            "load_started": self.load_started,
            "load_ended": self.load_ended,
            "source": self.source,
            "series": {name: s.to_dict() for name, s in self.series.items()},
        }

    @classmethod
    def from_dict(cls, data: object, where: str = "series") -> RunSeries:
        return f.read(cls, data, where)


def _series_from_answer(name: str, query: str, answer: Sequence[Series] | str) -> TimeSeries:
    """One series from a range query's answer (or the error text when the query failed):
    missing when Prometheus had no data or answered with several series."""
    unit, scale = _UNITS[name]
    if isinstance(answer, str):
        return TimeSeries(name, query, unit, missing=answer)
    if not answer or not any(s.samples for s in answer):
        return TimeSeries(name, query, unit, missing="Prometheus has no data for it in the window")
    if len(answer) != 1:
        return TimeSeries(
            name, query, unit, missing=f"expected one series, Prometheus answered {len(answer)}"
        )
    samples = tuple((t, v * scale) for t, v in answer[0].samples if math.isfinite(v))
    return TimeSeries(name, query, unit, samples)


def fetch(
    prom: PrometheusAPI,
    scope: pipe.Scope,
    run_id: str,
    load_started: float,
    load_ended: float,
    end: float,
    lead_s: float = 10.0,
) -> RunSeries:
    """Every series over [load_started - lead_s, end]; a query that fails is recorded missing."""
    start = load_started - lead_s
    step = _step_for(start, end)
    out: dict[str, TimeSeries] = {}
    for name, query in queries(scope).items():
        answer: Sequence[Series] | str
        try:
            answer = prom.range(query, start, end, step)
        except QueryError as exc:
            answer = f"Prometheus query failed: {exc}"
        except (ValueError, KeyError, TypeError) as exc:  # an answer not shaped as documented
            answer = f"Prometheus answer unreadable: {type(exc).__name__}: {exc}"
        out[name] = _series_from_answer(name, query, answer)
    return RunSeries(run_id, start, end, step, load_started, load_ended, out)


def missing(data: RunSeries) -> Mapping[str, str]:
    """Series name -> why it is missing."""
    return {n: s.missing or "" for n, s in data.series.items() if not s.samples}
