"""Reading a run back after its drain: its records and the collector's own records in Loki
(or, for a scenario of another store, its units there), and k6's p99 as Prometheus holds it
(remote write)."""

from __future__ import annotations

from loadgate.measure import queries as q
from loadgate.measure.other_traffic import OtherTraffic
from loadgate.measure.queries import LokiAPI, PrometheusAPI, QueryError
from loadgate.measure.stores import Store
from loadgate.records.result import Delivery
from loadgate.runner.clock import Clock
from loadgate.runner.drain import DrainOutcome

# The longest a collector log record takes from being written to its own receiver (the OTel
# SDK's batch processor exports every second): the window of its own records in Loki is the
# counters' window moved back by this much.
_OWN_EXPORT_DELAY_S = 1.5
# How long before the load the run's records are looked for (clock skew, k6's first request).
RUN_LEAD_S = 5.0
# How long after being taken in a collector's own record is surely in Loki (an empty queue:
# the exporter sends at once).
_OWN_VISIBLE_S = 2.0
# Other traffic this close to the window's start or end may fall on either side of it: its
# time stamps (Loki's) are set by its senders, its counting (the collector's) by scrapes.
_EDGE_S = 1.0


def own_stored(
    loki: LokiAPI, start: float, end: float, problems: list[str]
) -> tuple[int | None, str]:
    """How many of the collector's own log records (its internal-telemetry loop) Loki holds
    from the counters' window, moved back by the SDK's export delay: those the counters saw."""
    hi = end - _OWN_EXPORT_DELAY_S
    window_ms = max(1, round((end - start) * 1000))
    query = q.logql_job_count(q.OWN_LOGS_JOB, window_ms)
    try:
        value = loki.instant(query, hi)
    except QueryError as exc:
        problems.append(f"the collector's own records in Loki unknown: {exc}")
        return None, query
    return int(value or 0), query


def own_clear(loki: LokiAPI, horizon: float, quiet_s: float, clock: Clock) -> bool:
    """Whether Loki holds none of the collector's own records stamped in the `quiet_s` (plus
    the SDK's export delay) before `horizon`: none were taken in then. Asked once such
    records would surely be in Loki."""
    wait = horizon + _OWN_VISIBLE_S - clock.time()
    if wait > 0:
        clock.sleep(wait)
    window_ms = round((quiet_s + _OWN_EXPORT_DELAY_S) * 1000)
    try:
        value = loki.instant(q.logql_job_count(q.OWN_LOGS_JOB, window_ms), horizon)
    except QueryError:
        return False
    return not value


def other_traffic(
    loki: LokiAPI,
    run_id: str,
    start: float,
    end: float,
    problems: list[str],
    rates: tuple[float | None, float | None] = (None, None),
) -> OtherTraffic:
    """What else Loki holds from the counters' window (start, end]: every line that is neither
    the run's nor the collector's own, and how many of those lie near the window's edges.
    `rates`: what the collector took in per minute while the baseline and the end waited."""
    window_s = max(0.001, end - start)
    query = q.logql_other_count(run_id, round(window_s * 1000))
    edge_query = q.logql_other_count(run_id, round(2 * _EDGE_S * 1000))
    records = edges = None
    try:
        records = int(loki.instant(query, end) or 0)
        edges = sum(int(loki.instant(edge_query, at + _EDGE_S) or 0) for at in (start, end))
    except QueryError as exc:
        problems.append(f"other traffic unknown: Loki could not count it: {exc}")
    return OtherTraffic(
        records=records,
        per_minute=None if records is None else records * 60 / window_s,
        edge_records=edges if records is not None else None,
        window_s=window_s,
        query=query,
        edge_s=_EDGE_S,
        before_per_minute=rates[0],
        after_per_minute=rates[1],
    )


def delivery(
    loki: LokiAPI,
    run_id: str,
    load_started: float,
    collected_at: float,
    outcome: DrainOutcome | None,
    own: tuple[int | None, str],
    problems: list[str],
    other: OtherTraffic | None = None,
) -> Delivery:
    """`delivered` of result.json: the run's records Loki holds (LogQL, by the run's marker)."""
    window_start = load_started - RUN_LEAD_S
    query = q.logql_run_count(run_id, int(collected_at - window_start) + 1)
    stored: int | None
    try:
        stored = loki.count_run(run_id, window_start, collected_at)
    except QueryError as exc:
        stored = None
        problems.append(f"stored records unknown: Loki read-back failed: {exc}")
    return Delivery(
        records=stored,
        query=query,
        drained=outcome.drained if outcome else False,
        drain_seconds=outcome.seconds if outcome else 0.0,
        own_stored=own[0],
        own_query=own[1],
        other=other,
    )


def k6_p99_ms(prom: PrometheusAPI, run_id: str, window_s: int) -> float | None:
    """k6's p99 from its native histogram in Prometheus (None when it has none)."""
    try:
        p99_s = prom.instant(q.k6_p99_seconds(run_id, window_s))
    except QueryError:
        return None
    return None if p99_s is None else p99_s * 1000


def stored_delivery(
    store: Store,
    prom: PrometheusAPI,
    loki: LokiAPI,
    run_id: str,
    window: tuple[float, float],
    outcome: DrainOutcome | None,
    problems: list[str],
) -> Delivery:
    """`delivered` of result.json for a scenario whose pipeline carries no logs of the
    collector's own: the run's units its store holds, stamped from RUN_LEAD_S before the load
    (`window`: the load's start, the read-back)."""
    start, end = window[0] - RUN_LEAD_S, window[1]
    stored: int | None
    try:
        stored = store.count(prom, loki, run_id, start, end)
    except QueryError as exc:
        stored = None
        problems.append(f"stored units unknown: {store.name} read-back failed: {exc}")
    return Delivery(
        records=stored,
        query=store.query(run_id, start, end),
        drained=outcome.drained if outcome else False,
        drain_seconds=outcome.seconds if outcome else 0.0,
        source=store.source,
        own_stored=None,
        own_query="",
    )
