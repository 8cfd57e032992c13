"""One load run against a target: baseline, load, drain, collect, judge, write.

Shared by every target; a target only says how to start the load, follow it, read the k6
summaries and reach Prometheus and Loki. Once the load has run, a failure to read the pipeline
(Prometheus or Loki down) no longer loses the run: what was measured is kept and written, and
the figures that could not be read are unknown, with the reason.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from loadgate.contract import gates as gates_mod
from loadgate.contract.spec import RunSpec
from loadgate.contract.summary import ClientFigures
from loadgate.judge import ledger as ledger_mod
from loadgate.judge import run_figures
from loadgate.measure import pipeline as pipe
from loadgate.measure import queries as q
from loadgate.measure import timeseries as ts
from loadgate.measure.queries import LokiAPI, PrometheusAPI, QueryError, UnreachableError
from loadgate.records import result as results

# Optional on a target: `service_states() -> dict[str, dict[str, Any]]`, each service's state
# as its supervisor sees it ({"current": "active", "since": <epoch seconds>}).
SERVICE_STATES = "service_states"
# Optional on a target: `quiet_s`, how long the collector must have accepted nothing before the
# baseline and after the drain (0: not waited for). The collector's own logs (the charm's
# internal-telemetry loop) then sit inside the window or outside it, never across its edges.
QUIET_S = "quiet_s"
# Optional on a target: `generator_figures() -> dict[str, Any]`, what it measured of the load
# generator itself once the load finished (`k6_cpu_s`, `machine_cores`, `vus_max`, `source`).
GENERATOR_FIGURES = "generator_figures"
# The longest a collector log record takes from being written to its own receiver (the OTel
# SDK's batch processor exports every second): the window of its own records in Loki is the
# counters' window moved back by this much.
OWN_EXPORT_DELAY_S = 1.5


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


def newest_scrapes(
    prom: PrometheusAPI, scope: pipe.Scope, at: float | None = None
) -> dict[str, float | None]:
    """Service -> time of its oldest newest sample at `at` (every series of it scraped since)."""
    return {svc: prom.instant(f"min(timestamp({sel}))", at) for svc, sel in scope.anchors().items()}


def wait_fresh_scrape(
    prom: PrometheusAPI,
    since: float,
    timeout: float = 30.0,
    scope: pipe.Scope | None = None,
) -> float:
    """Block until Prometheus holds samples newer than `since` of every service of the pipeline
    (the collector and Loki, each on its own). Returns a time up to which every scrape of them
    is stored (the oldest of their newest samples) and by which each was scraped after
    `since`: figures read up to it include everything each service counted before `since`."""
    scope = scope or pipe.Scope()
    deadline = time.monotonic() + timeout
    while True:
        problem = ""
        try:
            newest = newest_scrapes(prom, scope)
            stale = {svc: t for svc, t in newest.items() if t is None or t < since}
            if not stale:
                horizon = min(t for t in newest.values() if t is not None)
                upto = newest_scrapes(prom, scope, horizon)
                if all(t is not None and t >= since for t in upto.values()):
                    return horizon
                # A service scraped after `since` only after another's newest: one more round.
                stale = {svc: t for svc, t in upto.items() if t is None or t < since}
            now = time.time()
            problem = (
                "Prometheus has no fresh scrape of "
                + ", ".join(
                    f"{svc} ("
                    + ("no sample at all" if t is None else f"newest {now - t:.0f}s old")
                    + ")"
                    for svc, t in stale.items()
                )
                + ": is it up and scraped?"
            )
        except UnreachableError as exc:
            problem = f"Prometheus is down or unreachable ({exc})"
        except QueryError as exc:
            problem = f"Prometheus answered with an error ({exc})"
        if time.monotonic() > deadline:
            raise RunError(f"{problem} (waited {timeout:.0f}s)")
        time.sleep(0.5)


def wait_quiet(
    prom: PrometheusAPI,
    scope: pipe.Scope,
    quiet_s: float,
    timeout: float,
    scrape_timeout: float = 30.0,
) -> tuple[float, bool]:
    """Wait (bounded) until the collector has accepted nothing for `quiet_s` seconds, in fresh
    scrapes. Returns a horizon (as wait_fresh_scrape) and whether it was quiet there."""
    deadline = time.monotonic() + timeout
    since = time.time()
    value: float | None = None
    still_from: float | None = None
    while True:
        horizon = wait_fresh_scrape(prom, since, scrape_timeout, scope)
        now_value = prom.instant(scope.counters()["collector_accepted"], horizon)
        if now_value is None or now_value != value:
            value, still_from = now_value, horizon
        elif still_from is not None and horizon - still_from >= quiet_s:
            return horizon, True
        if time.monotonic() > deadline:
            return horizon, False
        since = horizon + 0.001


@dataclass(frozen=True)
class DrainOutcome:
    drained: bool
    seconds: float
    queue_end: float | None


# With inexact collector counters, how long exports must stay still to call the queue drained
# when Loki does not yet hold every acknowledged record: more than the exporter's longest retry
# back-off (30 s by default), since a batch waiting for its retry is not in the queue's size.
STILL_FOR = 35.0


def drain(
    prom: PrometheusAPI,
    tracker: pipe.Tracker,
    load_ended: float,
    timeout: float,
    on_wait: Callable[[pipe.Tracker, float], None] | None = None,
    *,
    scope: pipe.Scope | None = None,
    scrape_timeout: float = 30.0,
    all_stored: Callable[[], bool] | None = None,
) -> DrainOutcome:
    """Wait (bounded) until everything the collector accepted has left its queue.

    Settled means, in a scrape taken after the load ended, an empty queue and: exported +
    failed + dropped after acceptance >= accepted when the collector's counters are exact.
    When a restart or reset made them inexact: exports stopped since the previous scrape and
    `all_stored()` (Loki holds every acknowledged record), or exports still for STILL_FOR
    seconds."""
    scope = scope or tracker.scope
    start = time.monotonic()
    since = load_ended
    previous_exported: int | None = None
    still_since = start
    while True:
        horizon = wait_fresh_scrape(prom, since, scrape_timeout, scope)
        tracker.advance(horizon)
        since = horizon + 0.001  # the next check needs a newer scrape
        queue = prom.instant(scope.queue_size())
        elapsed = time.monotonic() - start
        if on_wait:
            on_wait(tracker, elapsed)
        exported = tracker.total("collector_exported")
        if not tracker.seen("collector_exported") and queue is None:
            settled = True  # no Loki exporter to wait for (its figures are unknown)
        elif tracker.exact(pipe.OTELCOL):
            # A full queue makes the receiver refuse: those enqueue failures are among the
            # refused records, not among the accepted ones the queue must account for.
            dropped = max(
                0,
                tracker.total("collector_enqueue_failed") - tracker.total("collector_refused"),
            )
            # The collector's own records its loop breaker dropped are never exported.
            left = (
                exported
                + tracker.total("collector_failed")
                + dropped
                + tracker.total("collector_own_filtered")
            )
            settled = left >= tracker.total("collector_accepted") and not queue
        else:
            if exported != previous_exported:
                still_since = time.monotonic()
            still = exported == previous_exported
            settled = (
                not queue
                and still
                and (
                    time.monotonic() - still_since >= STILL_FOR
                    or (all_stored is not None and all_stored())
                )
            )
        if settled:
            return DrainOutcome(True, elapsed, queue)
        if elapsed > timeout:
            return DrainOutcome(False, elapsed, queue)
        previous_exported = exported
        time.sleep(0.5)


def _restarts(tracker: pipe.Tracker | None, states: dict[str, dict[str, Any]], started: float):
    """`restarts` of result.json: per service, the starts Prometheus saw inside the run and,
    when the target has a supervisor (Pebble), its view."""
    out: dict[str, dict[str, Any]] = {}
    seen = tracker.restarts() if tracker is not None else {}
    for svc in sorted(set(seen) | set(states)):
        entry: dict[str, Any] = {}
        if tracker is not None and svc in seen:
            entry.update(
                count=len(seen[svc]),
                at=seen[svc],
                source="Prometheus: process start times "
                + ("(otelcol uptime)" if svc == pipe.OTELCOL else "(process_start_time_seconds)"),
            )
        if svc in states:
            state = dict(states[svc])
            since = state.get("since")
            state["changed_during_run"] = isinstance(since, float | int) and since > started
            entry["supervisor"] = state
        out[svc] = entry
    return out


_BUSY_NOTE = (
    "the collector kept accepting records {when} (its own logs?): the split of its own log "
    "records from the run's at the window's edge may be off by a few"
)


def _own_stored(
    loki: LokiAPI, start: float, end: float, problems: list[str]
) -> tuple[int | None, str]:
    """How many of the collector's own log records (its internal-telemetry loop) Loki holds
    from the counters' window, moved back by the SDK's export delay: those the counters saw."""
    hi = end - OWN_EXPORT_DELAY_S
    window_ms = max(1, round((end - start) * 1000))
    query = q.logql_job_count(q.OWN_LOGS_JOB, window_ms)
    try:
        value = loki.instant(query, hi)
    except QueryError as exc:
        problems.append(f"the collector's own records in Loki unknown: {exc}")
        return None, query
    return int(value or 0), query


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

    scope = scope or pipe.Scope()
    out_dir = results.run_dir(results_root, spec.run_id)
    prom, loki = target.prometheus(), target.loki()

    quiet_s = float(getattr(target, QUIET_S, 0.0) or 0.0)
    notes: list[str] = []
    if quiet_s > 0:
        phase(f"baseline: waiting until the collector has been idle for {quiet_s:g}s")
        horizon, quiet = wait_quiet(prom, scope, quiet_s, 4 * quiet_s + 10, scrape_timeout)
        if not quiet:
            notes.append(_BUSY_NOTE.format(when="before the run"))
    else:
        phase("baseline: waiting for a fresh Prometheus scrape of the collector and Loki")
        horizon = wait_fresh_scrape(prom, time.time(), scrape_timeout, scope)
    tracker = pipe.Tracker(prom, scope)
    try:
        tracker.baseline(horizon)
    except QueryError as exc:
        raise RunError(f"cannot read the baseline from Prometheus: {exc}") from None
    out_dir.mkdir(parents=True, exist_ok=True)

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
    generator = _generator(target, spec)

    problems: list[str] = []
    outcome: DrainOutcome | None = None
    figures: pipe.PipelineFigures
    try:
        phase("drain: waiting for the collector's queue to empty")

        def all_stored() -> bool:
            try:
                stored = loki.count_run(spec.run_id, started - 5, time.time())
            except QueryError:
                return False
            return stored >= client.records_accepted

        outcome = drain(
            prom,
            tracker,
            ended,
            drain_timeout,
            scope=scope,
            scrape_timeout=scrape_timeout,
            all_stored=all_stored,
        )
        if not outcome.drained:
            notes.append(
                f"queue did not drain within {drain_timeout:g}s: records may still be in flight"
            )
        elif quiet_s > 0:
            end, quiet = wait_quiet(prom, scope, quiet_s, 4 * quiet_s + 10, scrape_timeout)
            tracker.advance(end)
            if not quiet:
                notes.append(_BUSY_NOTE.format(when="after the drain"))
        phase("collect: Prometheus and LogQL")
        at = tracker.until_ms / 1000
        figures = pipe.collect(
            prom, tracker.counts(at), started, ended, outcome.queue_end, scope, tracker.restarts()
        )
    except (RunError, QueryError) as exc:
        problems.append(f"pipeline figures unknown: {exc}")
        figures = pipe.PipelineFigures.unmeasured(str(exc))
    for svc, times in tracker.restarts().items():
        if times:
            when = ", ".join(time.strftime("%H:%M:%S", time.localtime(t)) for t in times)
            notes.append(
                f"{svc} restarted {len(times)} time(s) during the run (at {when}): its counters "
                "cannot give exact figures (unknown, with a lower bound)"
            )

    own = _own_stored(loki, tracker.start_ms / 1000, tracker.until_ms / 1000, problems)
    collected_at = time.time()
    window_start = started - 5
    query = q.logql_run_count(spec.run_id, int(collected_at - window_start) + 1)
    stored: int | None
    try:
        stored = loki.count_run(spec.run_id, window_start, collected_at)
    except QueryError as exc:
        stored = None
        problems.append(f"stored records unknown: Loki read-back failed: {exc}")
    delivery = results.Delivery(
        records=stored,
        query=query,
        drained=outcome.drained if outcome else False,
        drain_seconds=outcome.seconds if outcome else 0.0,
        own_stored=own[0],
        own_query=own[1],
    )
    env = dict(target.environment())
    try:
        p99_s = prom.instant(q.k6_p99_seconds(spec.run_id, int(collected_at - started) + 5))
    except QueryError:
        p99_s = None
    if p99_s is not None:
        env["p99_ms_prometheus"] = p99_s * 1000
    states: dict[str, dict[str, Any]] = {}
    service_states = getattr(target, SERVICE_STATES, None)
    if callable(service_states):
        answer = service_states()
        if isinstance(answer, dict):
            states = {str(k): dict(v) for k, v in answer.items() if isinstance(v, dict)}  # pyright: ignore[reportUnknownArgumentType]

    ledger = ledger_mod.build(client, figures, stored, own_stored=own[0])
    judged = gates_mod.judge(spec, client, lost_records=ledger.lost_after_acceptance)
    if ledger.lost_after_acceptance is None:
        judged.append(
            gates_mod.Gate(
                "lost_records", "<= 0", None, False, "k6 accepted - LogQL count in Loki: unknown"
            )
        )
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
        restarts=_restarts(tracker, states, started),
        problems=problems,
        generator=generator,
    )
    result = replace(result, bottleneck=run_figures.bottleneck_block(result))
    results.write(result, results_root)
    # The pipeline over time for the report (series.json); a series it cannot read is missing.
    ts.record(prom, scope, spec.run_id, started, ended, time.time(), out_dir)
    return result


def _generator(target: Target, spec: RunSpec) -> dict[str, Any]:
    """`generator` of result.json: the VU ceiling the spec gave k6 and what the target measured
    of k6 itself (nothing on a target that cannot see its processes)."""
    out: dict[str, Any] = {"vus_limit": spec.max_vus if spec.offered_logs_per_minute else spec.vus}
    measure = getattr(target, GENERATOR_FIGURES, None)
    if callable(measure):
        answer = measure()
        if isinstance(answer, dict):
            out.update({str(k): v for k, v in answer.items()})  # pyright: ignore[reportUnknownVariableType]
    return out
