"""The drain: waiting until everything the collector accepted has left its queue."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from loadgate.measure import pipeline as pipe
from loadgate.measure.queries import PrometheusAPI
from loadgate.runner.clock import SYSTEM, Clock
from loadgate.runner.waits import wait_fresh_scrape

# With inexact collector counters, how long exports must stay still to call the queue drained
# when Loki does not yet hold every acknowledged record: more than the exporter's longest retry
# back-off (30 s by default), since a batch waiting for its retry is not in the queue's size.
STILL_FOR = 35.0


@dataclass(frozen=True)
class DrainOutcome:
    drained: bool
    seconds: float
    queue_end: float | None


def counters_settled(tracker: pipe.Tracker, queue: float | None) -> bool:
    """With exact collector counters: the queue is empty and every accepted record has left
    (exported, failed, dropped after acceptance, or its own record dropped by the loop
    breaker)."""
    # A full queue makes the receiver refuse: those enqueue failures are among the refused
    # records, not among the accepted ones the queue must account for.
    dropped = max(0, tracker.total("collector_enqueue_failed") - tracker.total("collector_refused"))
    left = (
        tracker.total("collector_exported")
        + tracker.total("collector_failed")
        + dropped
        + tracker.total("collector_own_filtered")
    )
    return left >= tracker.total("collector_accepted") and not queue


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
    clock: Clock = SYSTEM,
) -> DrainOutcome:
    """Wait (bounded) until everything the collector accepted has left its queue.

    Settled means, in a scrape taken after the load ended, an empty queue and: exported +
    failed + dropped after acceptance >= accepted when the collector's counters are exact.
    When a restart or reset made them inexact: exports stopped since the previous scrape and
    `all_stored()` (Loki holds every acknowledged record), or exports still for STILL_FOR
    seconds."""
    scope = scope or tracker.scope
    start = clock.monotonic()
    since = load_ended
    previous_exported: int | None = None
    still_since = start
    while True:
        horizon = wait_fresh_scrape(prom, since, scrape_timeout, scope, clock=clock)
        tracker.advance(horizon)
        since = horizon + 0.001  # the next check needs a newer scrape
        queue = prom.instant(scope.queue_size())
        elapsed = clock.monotonic() - start
        if on_wait:
            on_wait(tracker, elapsed)
        exported = tracker.total("collector_exported")
        if not tracker.seen("collector_exported") and queue is None:
            settled = True  # no Loki exporter to wait for (its figures are unknown)
        elif tracker.exact(pipe.OTELCOL):
            settled = counters_settled(tracker, queue)
        else:
            if exported != previous_exported:
                still_since = clock.monotonic()
            still = exported == previous_exported
            settled = (
                not queue
                and still
                and (
                    clock.monotonic() - still_since >= STILL_FOR
                    or (all_stored is not None and all_stored())
                )
            )
        if settled:
            return DrainOutcome(True, elapsed, queue)
        if elapsed > timeout:
            return DrainOutcome(False, elapsed, queue)
        previous_exported = exported
        clock.sleep(0.5)
