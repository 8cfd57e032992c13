"""One load run against a target: baseline, load, drain, collect, judge, write.

Shared by every target; a target only says how to start the load, follow it, read the k6
summaries and reach Prometheus and Loki.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from . import ledger as ledger_mod
from . import pipeline as pipe
from . import queries as q
from . import results
from .core import gates as gates_mod
from .core.spec import RunSpec
from .core.summary import ClientFigures
from .queries import LokiAPI, PrometheusAPI, QueryError

FRESHNESS = "min(timestamp(otelcol_process_cpu_seconds_total) or timestamp(loki_build_info))"


class RunError(RuntimeError):
    """The run could not be carried out (k6 error, unreachable API); exit code 2."""


@dataclass(frozen=True)
class Progress:
    elapsed_s: float
    total_s: float
    records_sent: int
    records_accepted: int
    error_rate: float
    detail: str = ""


class Target(Protocol):
    name: str

    def prometheus(self) -> PrometheusAPI: ...

    def loki(self) -> LokiAPI: ...

    def start(self, spec: RunSpec, out_dir: Path) -> None: ...

    def poll(self) -> Progress | None:
        """Live progress while the load runs; None once it has finished."""
        ...

    def finish(self) -> ClientFigures:
        """The client figures of the finished load (raises RunError if k6 failed)."""
        ...

    def stop(self) -> None: ...

    def environment(self) -> dict[str, Any]: ...


def wait_fresh_scrape(prom: PrometheusAPI, since: float, timeout: float = 30.0) -> None:
    """Block until Prometheus holds samples of the collector and Loki scraped after `since`."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            newest = prom.instant(FRESHNESS)
        except QueryError:
            newest = None
        if newest is not None and newest >= since:
            return
        if time.monotonic() > deadline:
            raise RunError(
                f"Prometheus has no fresh scrape of the collector and Loki after {timeout:.0f}s "
                "(are both up and scraped?)"
            )
        time.sleep(0.5)


@dataclass(frozen=True)
class DrainOutcome:
    counts: dict[str, int]
    drained: bool
    seconds: float
    queue_end: float | None


def drain(
    prom: PrometheusAPI,
    before: dict[str, float],
    load_ended: float,
    timeout: float,
    on_wait: Callable[[dict[str, int], float], None] | None = None,
    *,
    scope: pipe.Scope | None = None,
    scrape_timeout: float = 30.0,
) -> DrainOutcome:
    """Wait (bounded) until everything the collector accepted has left its queue.

    Settled means: exported + failed + dropped >= accepted, and the queue is empty, in a scrape
    taken after the load ended.
    """
    start = time.monotonic()
    since = load_ended
    while True:
        wait_fresh_scrape(prom, since, scrape_timeout)
        since = time.time()
        counts = pipe.delta(before, pipe.read_counters(prom, scope=scope))
        queue = prom.instant((scope or pipe.Scope()).queue_size())
        left = (
            counts["collector_exported"]
            + counts["collector_failed"]
            + counts["collector_enqueue_failed"]
        )
        elapsed = time.monotonic() - start
        if on_wait:
            on_wait(counts, elapsed)
        if left >= counts["collector_accepted"] and not queue:
            return DrainOutcome(counts, True, elapsed, queue)
        if elapsed > timeout:
            return DrainOutcome(counts, False, elapsed, queue)
        time.sleep(0.5)


def execute(
    spec: RunSpec,
    target: Target,
    results_root: Path,
    *,
    drain_timeout: float = 60.0,
    on_progress: Callable[[Progress], None] | None = None,
    on_phase: Callable[[str], None] | None = None,
    scope: pipe.Scope | None = None,
    scrape_timeout: float = 30.0,
) -> results.RunResult:
    """`scope` selects the series of the pipeline under test (default: every Loki exporter and
    Loki); `scrape_timeout` bounds each wait for a fresh scrape (the collector charm scrapes
    itself once a minute)."""

    def phase(text: str) -> None:
        if on_phase:
            on_phase(text)

    out_dir = results.run_dir(results_root, spec.run_id)
    out_dir.mkdir(parents=True, exist_ok=True)
    prom, loki = target.prometheus(), target.loki()

    phase("baseline: waiting for a fresh Prometheus scrape")
    wait_fresh_scrape(prom, time.time(), scrape_timeout)
    before = pipe.read_counters(prom, scope=scope)

    phase(f"load: {spec.scenario} {spec.executor} for {spec.duration}")
    started = time.time()
    target.start(spec, out_dir)
    try:
        while (progress := target.poll()) is not None:
            if on_progress:
                on_progress(progress)
            time.sleep(1.0)
    except BaseException:
        target.stop()
        raise
    ended = time.time()
    client = target.finish()

    phase("drain: waiting for the collector's queue to empty")
    outcome = drain(prom, before, ended, drain_timeout, scope=scope, scrape_timeout=scrape_timeout)
    notes: list[str] = []
    if not outcome.drained:
        notes.append(
            f"queue did not drain within {drain_timeout:.0f}s: records may still be in flight"
        )

    phase("collect: Prometheus and LogQL")
    collected_at = time.time()
    window_start = started - 5
    stored = loki.count_run(spec.run_id, window_start, collected_at)
    delivery = results.Delivery(
        records=stored,
        query=q.logql_run_count(spec.run_id, int(collected_at - window_start) + 1),
        drained=outcome.drained,
        drain_seconds=outcome.seconds,
    )
    figures = pipe.collect(prom, outcome.counts, started, ended, outcome.queue_end, scope)
    env = dict(target.environment())
    p99_s = prom.instant(q.k6_p99_seconds(spec.run_id, int(collected_at - started) + 5))
    if p99_s is not None:
        env["p99_ms_prometheus"] = p99_s * 1000

    ledger = ledger_mod.build(client, figures, stored)
    judged = gates_mod.judge(spec, client, lost_records=ledger.lost_after_acceptance)
    if client.dropped_iterations:
        notes.append(
            f"k6 dropped {client.dropped_iterations} iterations for lack of free VUs: those "
            f"{client.dropped_iterations * spec.records_per_iteration:,} records were never sent"
        )
    result = results.RunResult(
        run_id=spec.run_id,
        target=target.name,
        spec=spec,
        started_at=started,
        ended_at=ended,
        client=client,
        pipeline=figures,
        delivered=delivery,
        ledger=ledger,
        gates=judged,
        verdict=gates_mod.verdict(judged),
        environment=env,
        notes=notes,
    )
    results.write(result, results_root)
    return result
