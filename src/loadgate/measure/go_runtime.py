"""The collector's Go runtime over a run: garbage collections and heap sizes.

- **Heap** from the collector's own metrics in Prometheus (its `process` telemetry):
  `otelcol_process_runtime_heap_alloc_bytes` (the live and not yet swept heap) and
  `otelcol_process_runtime_total_sys_memory_bytes` (what the runtime got from the OS), their
  maximum and mean over the window.
- **Garbage collections** from the Go runtime's own trace: with `GODEBUG=gctrace=1` (the hand
  change `gc-trace=on`) it writes one line per collection to stderr, which Pebble keeps in its
  log with a time stamp (`<time> [otelcol] gc 12 @3.1s 2%: ..., 40->42->20 MB, 44 MB goal, ...`).
  The collector exposes no GC counter of its own, so without the trace the count is unknown.

`parse_gctrace` and `summarize` are pure; `heap` asks Prometheus.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from loadgate.measure.queries import PrometheusAPI, QueryError
from loadgate.measure.resources import GoRuntime

_HEAP_ALLOC = "otelcol_process_runtime_heap_alloc_bytes"
_SYS_MEMORY = "otelcol_process_runtime_total_sys_memory_bytes"
_COLLECTOR_JOB = "otelcol"  # the local stack's scrape job of the collector under test

_LINE = re.compile(
    r"^(?P<at>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z) \[(?P<service>[^\]]+)\] "
    r"gc (?P<n>\d+) @(?P<up>[0-9.]+)s (?P<pct>\d+)%: .*? "
    r"(?P<start>\d+)->(?P<end>\d+)->(?P<live>\d+) MB, (?P<goal>\d+) MB goal"
    r"(?P<rest>.*)$",
    re.ASCII,
)


@dataclass(frozen=True)
class Collection:
    """One garbage collection as gctrace reports it (sizes in MB, as Go prints them)."""

    at: float  # epoch seconds (Pebble's time stamp)
    number: int  # since the process started
    cpu_percent: int  # of the process's CPU spent in GC since it started
    heap_start_mb: int
    heap_live_mb: int  # live heap after the collection
    goal_mb: int
    forced: bool


def parse_gctrace(lines: Iterable[str], service: str, since: float) -> list[Collection]:
    """The collections of `service` Pebble logged from `since` (epoch seconds)."""
    out: list[Collection] = []
    for line in lines:
        m = _LINE.match(line)
        if m is None or m["service"] != service:
            continue
        at = datetime.fromisoformat(m["at"].replace("Z", "+00:00")).timestamp()
        if at < since:
            continue
        out.append(
            Collection(
                at,
                int(m["n"]),
                int(m["pct"]),
                int(m["start"]),
                int(m["live"]),
                int(m["goal"]),
                "(forced)" in m["rest"],
            )
        )
    return out


@dataclass(frozen=True)
class Heap:
    """Prometheus's view of the heap over the window (None: no series)."""

    alloc_max: float | None = None
    alloc_mean: float | None = None
    sys_max: float | None = None
    problem: str | None = None


def heap(prom: PrometheusAPI, start: float, end: float) -> Heap:
    """The collector's heap over [start, end] from its own metrics."""
    window = max(1, round(end - start))
    alloc = f'{_HEAP_ALLOC}{{job="{_COLLECTOR_JOB}"}}'
    sys_mem = f'{_SYS_MEMORY}{{job="{_COLLECTOR_JOB}"}}'
    try:
        return Heap(
            prom.instant(f"max(max_over_time({alloc}[{window}s]))", end),
            prom.instant(f"avg(avg_over_time({alloc}[{window}s]))", end),
            prom.instant(f"max(max_over_time({sys_mem}[{window}s]))", end),
        )
    except QueryError as exc:
        return Heap(problem=f"heap unknown: {exc}")


def summarize(
    collections: list[Collection] | None,
    heap_fig: Heap,
    window: tuple[float, float],
    gomemlimit: str | None,
) -> GoRuntime:
    """The run's Go runtime figures; `collections` None: no trace (GC count unknown)."""
    span = window[1] - window[0]
    count = None if collections is None else len(collections)
    per_minute = None if count is None or span <= 0 else round(count * 60 / span, 2)
    traced = collections or []  # gctrace's "MB" are 2^20 bytes
    return GoRuntime(
        gomemlimit=gomemlimit,
        gc_trace=collections is not None,
        gc_count=count,
        gc_per_minute=per_minute,
        gc_forced=None if collections is None else sum(c.forced for c in traced),
        gc_cpu_percent=traced[-1].cpu_percent if traced else None,
        heap_live_max_mib=max((float(c.heap_live_mb) for c in traced), default=None),
        heap_goal_max_mib=max((float(c.goal_mb) for c in traced), default=None),
        heap_alloc_max_mib=_mib(heap_fig.alloc_max),
        heap_alloc_mean_mib=_mib(heap_fig.alloc_mean),
        sys_max_mib=_mib(heap_fig.sys_max),
        window_s=round(span, 1),
        problems=[heap_fig.problem] if heap_fig.problem else [],
        source=(
            "heap: Prometheus, the collector's otelcol_process_runtime_heap_alloc_bytes and "
            "..._total_sys_memory_bytes (max, mean over the window); GC: the Go runtime's "
            "gctrace lines in Pebble's log (GODEBUG=gctrace=1), from the load's start to the "
            "end of the run"
            + ("" if collections is not None else "; no trace: the GC count is unknown")
        ),
    )


def _mib(value: float | None) -> float | None:
    return None if value is None else round(value / 2**20, 1)
