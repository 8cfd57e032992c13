"""Pipeline-side figures of a run, from Prometheus: how much each collector and Loki counter grew
between the instant before the load and the instant after the queue drained, per series from
raw samples (counters.py), with the restarts of each service that make a figure inexact."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from loadgate.contract import typed as f
from loadgate.measure import counters as cnt
from loadgate.measure import queries as q
from loadgate.measure.counters import Count, Counter, ProcessStart
from loadgate.measure.queries import PrometheusAPI, to_ms
from loadgate.measure.scope import FIGURES, LOKI, OPTIONAL_FIGURES, OTELCOL, SCRAPED, Scope

MIB = 1024 * 1024
# How far before the window a series' last sample is looked for (Prometheus' staleness period).
_LOOKBACK_MS = 5 * 60 * 1000

# Scope and the figures live in scope.py; these names are used through this module too.
__all__ = ["FIGURES", "LOKI", "OPTIONAL_FIGURES", "OTELCOL", "SCRAPED", "Scope"]

_COUNTERS: dict[str, str] = Scope().counters()
_QUEUE_SIZE = Scope().queue_size()
_RSS = q.counter_total(q.COLLECTOR_RSS)


def read_counters(
    prom: PrometheusAPI, at: float | None = None, scope: Scope | None = None
) -> dict[str, float | None]:
    """Every counter summed at one instant: a live reading, None when it has no series.
    (A run's figures are increases over its window: see Tracker.)"""
    counters = scope.counters() if scope else _COUNTERS
    return {name: prom.instant(expr, at) for name, expr in counters.items()}


class Tracker:
    """The run's counters, followed from a baseline through consecutive windows of raw samples,
    and the process starts of the collector and Loki seen in those windows."""

    def __init__(self, prom: PrometheusAPI, scope: Scope | None = None):
        self.prom = prom
        self.scope = scope or Scope()
        self.figures = self.scope.figures()
        self.counters: dict[str, Counter] = {name: Counter() for name in self.figures}
        self.starts: dict[str, list[ProcessStart]] = {OTELCOL: [], LOKI: []}
        self.start_ms = 0
        self.until_ms = 0
        self.collector_start: float | None = None

    def baseline(self, at: float) -> None:
        """Start the window at `at` (a time up to which every scrape is stored)."""
        at_ms = to_ms(at)
        for name, sel in self.scope.selectors().items():
            self.counters[name].baseline(self.prom.samples(sel, at_ms - _LOOKBACK_MS, at_ms))
        self.start_ms = self.until_ms = at_ms
        self.collector_start = self._collector_sampled_at()

    def _collector_sampled_at(self) -> float | None:
        if "collector_accepted" not in self.counters:
            return None  # the scope has no collector
        states = self.counters["collector_accepted"].series.values()
        return max((st.at for st in states if st.value is not None), default=None)

    def collector_window(self) -> tuple[float, float] | None:
        """When the collector was scraped for the window's first and last readings of what it
        accepted: the records its counters hold came in between (None: no reading)."""
        end = self._collector_sampled_at()
        if self.collector_start is None or end is None:
            return None
        return self.collector_start, end

    def advance(self, until: float) -> None:
        """Fold in every sample up to `until` (a time up to which every scrape is stored)."""
        until_ms = to_ms(until)
        if until_ms <= self.until_ms:
            return
        lo = self.until_ms
        starts = self._starts(lo, until_ms)
        for svc, found in starts.items():
            known = self.starts[svc]
            for p in found:  # one process seen again in a later window is not a new start
                if not any(k.target == p.target and abs(k.at - p.at) <= 1.0 for k in known):
                    known.append(p)
        for name, sel in self.scope.selectors().items():
            samples = self.prom.samples(sel, lo, until_ms)
            self.counters[name].fold(samples, starts[self.figures[name]])
        self.until_ms = until_ms

    def _starts(self, lo: int, hi: int) -> dict[str, list[ProcessStart]]:
        anchors = self.scope.anchors()
        uptime = self.scope.collector_selector(q.COLLECTOR_UPTIME)
        collector = cnt.starts_from_uptime(self.prom.samples(uptime, lo, hi))
        loki_targets = {s.target for s in self.prom.samples(anchors[LOKI], lo, hi)}
        loki = cnt.starts_from_start_time(
            s for s in self.prom.samples(q.PROCESS_START, lo, hi) if s.target in loki_targets
        )
        return {OTELCOL: collector, LOKI: loki}

    def restarts(self) -> dict[str, list[float]]:
        """Service -> times its processes started inside the window (each one a restart)."""
        start = self.start_ms / 1000
        return {
            svc: sorted({p.at for p in found if p.at > start}) for svc, found in self.starts.items()
        }

    def exact(self, service: str) -> bool:
        """No counter of `service` was reset and it did not restart so far."""
        return not self.restarts()[service] and not any(
            c.resets for name, c in self.counters.items() if self.figures[name] == service
        )

    def total(self, name: str) -> int:
        """A counter's increase so far (0 for a figure this scope does not have)."""
        counter = self.counters.get(name)
        return counter.total if counter is not None else 0

    def seen(self, name: str) -> bool:
        counter = self.counters.get(name)
        return counter is not None and counter.seen

    def counts(self, at: float) -> dict[str, Count]:
        """Every figure, judged: exact, 0 for a counter that never counted, or unknown."""
        window_s = max(1, round(at - self.start_ms / 1000) + 1)
        restarts = self.restarts()
        presence = self.scope.presence()
        cache: dict[str, bool] = {}

        def present(sel: str) -> bool:
            if sel not in cache:
                cache[sel] = bool(
                    self.prom.instant(f"count(last_over_time({sel}[{window_s}s]))", at)
                )
            return cache[sel]

        out: dict[str, Count] = {}
        for name, counter in self.counters.items():
            svc = self.figures[name]
            out[name] = cnt.judge(
                counter,
                present=counter.seen or any(present(s) for s in presence[name]),
                absent_reason=self.scope.absent_reason(name),
                restarts={svc: restarts[svc]},
            )
        return out


@dataclass(frozen=True)
class PipelineFigures:
    """`pipeline` of result.json. Every figure is a Prometheus query over the run's window.

    A count is None when it could not be measured exactly; `unknown` then says why, with the
    lower bound the counters still give. `restarts`: service -> times it (re)started during
    the run (seconds since the epoch)."""

    collector_accepted: int | None
    collector_refused: int | None
    collector_exported: int | None
    collector_failed: int | None
    collector_enqueue_failed: int | None
    queue_size_max: float | None
    queue_size_end: float | None
    collector_cpu_max: float | None
    collector_cpu_mean: float | None
    collector_rss_max_mib: float | None
    collector_rss_mean_mib: float | None
    loki_received: int | None
    loki_discarded: int | None
    collector_own_filtered: int | None = 0  # the collector's own records its loop breaker dropped
    memory_limiter_refused: int | None = None  # None: unknown, or no memory_limiter
    queue_capacity: float | None = None  # the scope's exporters' sending queue capacity (max)
    loki_push_p99_ms: float | None = None  # Loki's push request p99 over the window
    # Points the collector's own scrape took in (a metrics pipeline; None elsewhere, and
    # written only when measured or unknown for a reason).
    collector_scraped: int | None = None
    source: str = (
        "Prometheus: per-series counter increases from raw samples (reset-aware) and "
        "max/avg_over_time over the run window"
    )
    unknown: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])
    restarts: dict[str, list[float]] = field(default_factory=dict[str, list[float]])

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for name in OPTIONAL_FIGURES:  # written only by the runs that have them
            if d[name] is None and name not in self.unknown:
                del d[name]
        return d

    @classmethod
    def from_dict(cls, data: object, where: str = "pipeline") -> PipelineFigures:
        return f.read(cls, data, where)

    def count(self, name: str) -> Count:
        value = getattr(self, name)
        if value is not None:
            return Count(int(value))
        info = self.unknown.get(name) or {}
        bound = info.get("lower_bound")
        return Count(None, int(bound) if bound is not None else None, str(info.get("reason", "")))

    @classmethod
    def unmeasured(cls, reason: str) -> PipelineFigures:
        """Nothing of the pipeline could be read (Prometheus down): every figure unknown."""
        unknown = {name: {"reason": reason, "lower_bound": None} for name in FIGURES}
        return cls(
            collector_accepted=None,
            collector_refused=None,
            collector_exported=None,
            collector_failed=None,
            collector_enqueue_failed=None,
            queue_size_max=None,
            queue_size_end=None,
            collector_cpu_max=None,
            collector_cpu_mean=None,
            collector_rss_max_mib=None,
            collector_rss_mean_mib=None,
            loki_received=None,
            loki_discarded=None,
            collector_own_filtered=None,
            memory_limiter_refused=None,
            unknown=unknown,
        )


def collect(
    prom: PrometheusAPI,
    counts: Mapping[str, Count],
    start: float,
    end: float,
    queue_end: float | None,
    scope: Scope | None = None,
    restarts: Mapping[str, list[float]] | None = None,
) -> PipelineFigures:
    """Gauges over [start, end] plus the counts already judged."""
    window = max(1, int(end - start))
    scope = scope or Scope()
    cpu = scope.cpu_cores()
    push_p99 = prom.instant(q.loki_push_p99_seconds(window, scope.loki), end)
    rss_max = prom.instant(q.max_over(scope.rss(), window), end)
    rss_mean = prom.instant(q.avg_over(scope.rss(), window), end)
    unknown = {
        name: {"reason": c.reason, "lower_bound": c.lower_bound}
        for name, c in counts.items()
        if c.value is None
    }

    def value(name: str) -> int | None:  # None: not a figure of this scope's pipeline
        found = counts.get(name)
        return found.value if found is not None else None

    collector = scope.signal is not None
    return PipelineFigures(
        collector_accepted=value("collector_accepted"),
        collector_refused=value("collector_refused"),
        collector_exported=value("collector_exported"),
        collector_failed=value("collector_failed"),
        collector_enqueue_failed=value("collector_enqueue_failed"),
        queue_size_max=prom.instant(q.max_over(scope.queue_size(), window), end)
        if collector
        else None,
        queue_size_end=queue_end,
        collector_cpu_max=prom.instant(q.max_over(cpu, window), end),
        collector_cpu_mean=prom.instant(q.avg_over(cpu, window), end),
        collector_rss_max_mib=rss_max / MIB if rss_max is not None else None,
        collector_rss_mean_mib=rss_mean / MIB if rss_mean is not None else None,
        loki_received=value("loki_received"),
        loki_discarded=value("loki_discarded"),
        collector_own_filtered=value("collector_own_filtered"),
        memory_limiter_refused=value("memory_limiter_refused"),
        queue_capacity=prom.instant(q.max_over(scope.queue_capacity(), window), end)
        if collector
        else None,
        loki_push_p99_ms=push_p99 * 1000 if push_p99 is not None else None,
        collector_scraped=value(SCRAPED),
        unknown=unknown,
        restarts={k: list(v) for k, v in (restarts or {}).items()},
    )
