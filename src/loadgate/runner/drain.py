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
_STILL_FOR = 35.0


@dataclass(frozen=True)
class DrainOutcome:
    drained: bool
    seconds: float
    queue_end: float | None


def _counters_settled(tracker: pipe.Tracker, queue: float | None) -> bool:
    """With exact collector counters: the queue is empty and every accepted record has left
    (exported, failed, dropped after acceptance, or its own record dropped by the loop
    breaker). A metrics pipeline's own scrape comes in beside the load and leaves with it."""
    # A full queue makes the receiver refuse: those enqueue failures are among the refused
    # records, not among the accepted ones the queue must account for.
    dropped = max(0, tracker.total("collector_enqueue_failed") - tracker.total("collector_refused"))
    left = (
        tracker.total("collector_exported")
        + tracker.total("collector_failed")
        + dropped
        + tracker.total("collector_own_filtered")
    )
    incoming = tracker.total("collector_accepted") + tracker.total(pipe.SCRAPED)
    return left >= incoming and not queue


class _Still:
    """How long a reading has not changed (over consecutive checks)."""

    def __init__(self, clock: Clock):
        self.clock = clock
        self.value: object = object()
        self.since = clock.monotonic()

    def update(self, value: object) -> float | None:
        """Seconds it has stood at `value`; None when it just changed."""
        if value != self.value:
            self.value, self.since = value, self.clock.monotonic()
            return None
        return self.clock.monotonic() - self.since


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
    run_stored: Callable[[], int | None] | None = None,
    clock: Clock = SYSTEM,
) -> DrainOutcome:
    """Wait (bounded) until everything the collector accepted has left its queue.

    Settled means, in a scrape taken after the load ended, an empty queue and: exported +
    failed + dropped after acceptance >= accepted when the collector's counters are exact.
    When a restart or reset made them inexact: exports stopped since the previous scrape and
    `all_stored()` (Loki holds every acknowledged record), or exports still for STILL_FOR
    seconds. When other traffic keeps the collector busy (`run_stored` given: the run's
    records in Loki), the counters never settle: then `all_stored()`, or the run's records in
    Loki still for STILL_FOR seconds."""
    scope = scope or tracker.scope
    start = clock.monotonic()
    since = load_ended
    exports, stored = _Still(clock), _Still(clock)
    while True:
        horizon = wait_fresh_scrape(prom, since, scrape_timeout, scope, clock=clock)
        tracker.advance(horizon)
        since = horizon + 0.001  # the next check needs a newer scrape
        queue = prom.instant(scope.queue_size())
        elapsed = clock.monotonic() - start
        if on_wait:
            on_wait(tracker, elapsed)
        exported_still = exports.update(tracker.total("collector_exported"))
        if not tracker.seen("collector_exported") and queue is None:
            settled = True  # no Loki exporter to wait for (its figures are unknown)
        elif tracker.exact(pipe.OTELCOL) and _counters_settled(tracker, queue):
            settled = True
        elif queue:
            settled = False
        elif not tracker.exact(pipe.OTELCOL):
            settled = exported_still is not None and (
                exported_still >= _STILL_FOR or (all_stored is not None and all_stored())
            )
        elif run_stored is not None:
            stored_still = stored.update(run_stored())
            settled = (all_stored is not None and all_stored()) or (
                stored_still is not None and stored_still >= _STILL_FOR
            )
        else:
            settled = False
        if settled:
            return DrainOutcome(True, elapsed, queue)
        if elapsed > timeout:
            return DrainOutcome(False, elapsed, queue)
        clock.sleep(0.5)
