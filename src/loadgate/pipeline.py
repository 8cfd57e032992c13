"""Pipeline-side figures of a run, from Prometheus: collector and Loki counters as differences
between the instant before the load and the instant after the queue drained."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from . import queries as q
from .queries import PrometheusAPI

MIB = 1024 * 1024


@dataclass(frozen=True)
class Scope:
    """Which series are the pipeline under test: the collector's Loki exporters (a regex over
    their `exporter` label) and the Loki whose metrics count (label matchers).

    The default takes every Loki exporter and every Loki. A collector related to several Loki
    units sends each a full copy through its own exporter; a scope then follows one copy.
    """

    exporter: str = "loki.*"
    loki: Mapping[str, str] = field(default_factory=dict[str, str])

    def counters(self) -> dict[str, str]:
        """Name -> PromQL of a cumulative counter summed over its series."""
        return {
            "collector_accepted": q.counter_total(q.COLLECTOR_ACCEPTED),
            "collector_refused": q.counter_total(q.COLLECTOR_REFUSED),
            "collector_exported": q.loki_exporters_only(q.COLLECTOR_EXPORTED, None, self.exporter),
            "collector_failed": q.loki_exporters_only(q.COLLECTOR_FAILED, None, self.exporter),
            "collector_enqueue_failed": q.loki_exporters_only(
                q.COLLECTOR_ENQUEUE_FAILED, None, self.exporter
            ),
            "loki_received": q.counter_total(q.LOKI_RECEIVED, self.loki),
            "loki_discarded": q.counter_total(q.LOKI_DISCARDED, self.loki),
        }

    def queue_size(self) -> str:
        return q.loki_exporters_only(q.COLLECTOR_QUEUE_SIZE, None, self.exporter)


COUNTERS: dict[str, str] = Scope().counters()
QUEUE_SIZE = Scope().queue_size()
RSS = q.counter_total(q.COLLECTOR_RSS)


def read_counters(
    prom: PrometheusAPI, at: float | None = None, scope: Scope | None = None
) -> dict[str, float]:
    """Every counter at one instant (a counter with no series yet counts as 0)."""
    counters = scope.counters() if scope else COUNTERS
    return {name: prom.instant(expr, at) or 0.0 for name, expr in counters.items()}


def delta(before: dict[str, float], after: dict[str, float]) -> dict[str, int]:
    return {name: round(after[name] - before.get(name, 0.0)) for name in after}


@dataclass(frozen=True)
class PipelineFigures:
    """`pipeline` of result.json. Every figure is a Prometheus query over the run's window."""

    collector_accepted: int
    collector_refused: int
    collector_exported: int
    collector_failed: int
    collector_enqueue_failed: int
    queue_size_max: float | None
    queue_size_end: float | None
    collector_cpu_max: float | None
    collector_cpu_mean: float | None
    collector_rss_max_mib: float | None
    collector_rss_mean_mib: float | None
    loki_received: int
    loki_discarded: int
    source: str = "Prometheus: counter differences and max/avg_over_time over the run window"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def collect(
    prom: PrometheusAPI,
    counts: dict[str, int],
    start: float,
    end: float,
    queue_end: float | None,
    scope: Scope | None = None,
) -> PipelineFigures:
    """Gauges over [start, end] plus the counter differences already taken."""
    window = max(1, int(end - start))
    rss_max = prom.instant(q.max_over(RSS, window), end)
    rss_mean = prom.instant(q.avg_over(RSS, window), end)
    return PipelineFigures(
        collector_accepted=counts["collector_accepted"],
        collector_refused=counts["collector_refused"],
        collector_exported=counts["collector_exported"],
        collector_failed=counts["collector_failed"],
        collector_enqueue_failed=counts["collector_enqueue_failed"],
        queue_size_max=prom.instant(q.max_over((scope or Scope()).queue_size(), window), end),
        queue_size_end=queue_end,
        collector_cpu_max=prom.instant(q.max_over(q.cpu_cores(), window), end),
        collector_cpu_mean=prom.instant(q.avg_over(q.cpu_cores(), window), end),
        collector_rss_max_mib=rss_max / MIB if rss_max is not None else None,
        collector_rss_mean_mib=rss_mean / MIB if rss_mean is not None else None,
        loki_received=counts["loki_received"],
        loki_discarded=counts["loki_discarded"],
    )
