"""Waiting for Prometheus: a fresh scrape of every service, and a quiet collector."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from loadgate.measure import pipeline as pipe
from loadgate.measure.queries import PrometheusAPI, QueryError, UnreachableError
from loadgate.runner.clock import SYSTEM, Clock
from loadgate.runner.target import RunError


def _newest_scrapes(
    prom: PrometheusAPI, scope: pipe.Scope, at: float | None = None
) -> dict[str, float | None]:
    """Service -> time of its oldest newest sample at `at` (every series of it scraped since)."""
    return {svc: prom.instant(f"min(timestamp({sel}))", at) for svc, sel in scope.anchors().items()}


def _stale_problem(stale: dict[str, float | None], now: float) -> str:
    return (
        "Prometheus has no fresh scrape of "
        + ", ".join(
            f"{svc} (" + ("no sample at all" if t is None else f"newest {now - t:.0f}s old") + ")"
            for svc, t in stale.items()
        )
        + ": is it up and scraped?"
    )


def _fresh_horizon(
    prom: PrometheusAPI, scope: pipe.Scope, since: float
) -> tuple[float | None, dict[str, float | None]]:
    """(a horizon every service was scraped after `since` by, or None; the stale services)."""
    newest = _newest_scrapes(prom, scope)
    stale = {svc: t for svc, t in newest.items() if t is None or t < since}
    if stale:
        return None, stale
    horizon = min(t for t in newest.values() if t is not None)
    upto = _newest_scrapes(prom, scope, horizon)
    if all(t is not None and t >= since for t in upto.values()):
        return horizon, {}
    # A service scraped after `since` only after another's newest: one more round.
    return None, {svc: t for svc, t in upto.items() if t is None or t < since}


def wait_fresh_scrape(
    prom: PrometheusAPI,
    since: float,
    timeout: float = 30.0,
    scope: pipe.Scope | None = None,
    *,
    clock: Clock = SYSTEM,
) -> float:
    """Block until Prometheus holds samples newer than `since` of every service of the pipeline
    (the collector and Loki, each on its own). Returns a time up to which every scrape of them
    is stored (the oldest of their newest samples) and by which each was scraped after
    `since`: figures read up to it include everything each service counted before `since`."""
    scope = scope or pipe.Scope()
    deadline = clock.monotonic() + timeout
    while True:
        try:
            horizon, stale = _fresh_horizon(prom, scope, since)
            if horizon is not None:
                return horizon
            problem = _stale_problem(stale, clock.time())
        except UnreachableError as exc:
            problem = f"Prometheus is down or unreachable ({exc})"
        except QueryError as exc:
            problem = f"Prometheus answered with an error ({exc})"
        if clock.monotonic() > deadline:
            raise RunError(f"{problem} (waited {timeout:.0f}s)")
        clock.sleep(0.5)


def wait_sampled(
    prom: PrometheusAPI,
    sel: str,
    since: float,
    timeout: float = 30.0,
    *,
    clock: Clock = SYSTEM,
) -> float:
    """Block until Prometheus holds a sample newer than `since` of every series of `sel` (a
    store counted from its own scrapes: the traces backend stand-in); returns the oldest of
    their newest samples. Raises RunError after `timeout` seconds."""
    deadline = clock.monotonic() + timeout
    while True:
        try:
            oldest = prom.instant(f"min(timestamp({sel}))")
            if oldest is not None and oldest > since:
                return oldest
            age = "none" if oldest is None else f"newest {clock.time() - oldest:.0f}s old"
            problem = f"Prometheus has no fresh scrape of {sel} ({age})"
        except QueryError as exc:
            problem = f"Prometheus answered with an error ({exc})"
        if clock.monotonic() > deadline:
            raise RunError(f"{problem} (waited {timeout:.0f}s)")
        clock.sleep(0.5)


@dataclass(frozen=True)
class Quiet:
    """Where a wait for a quiet collector ended: a horizon (as wait_fresh_scrape), whether the
    collector's own log records were clear of it, and what else the collector took in while
    the wait watched it (other traffic)."""

    horizon: float
    quiet: bool
    accepted_per_minute: float | None  # records/min it accepted while watched (None: no reading)
    busy: bool  # it kept accepting records: other traffic, or its own logs
    # From when, up to the horizon, the collector was seen clear (epoch seconds, as the
    # horizon; the horizon itself when it was not quiet).
    clear_from: float


def wait_quiet(
    prom: PrometheusAPI,
    scope: pipe.Scope,
    quiet_s: float,
    timeout: float,
    scrape_timeout: float = 30.0,
    *,
    clock: Clock = SYSTEM,
    own_clear: Callable[[float], bool] | None = None,
) -> Quiet:
    """Wait (bounded) until the collector's own log records are clear of an edge.

    The quick answer: it accepted nothing for `quiet_s` seconds, in fresh scrapes (a collector
    with no accepted series yet has accepted nothing), read back in the scrapes Prometheus
    already holds: at each fresh scrape, its counter equals its value `quiet_s` before (a
    counter only grows, so nothing came in between). A collector already still is quiet at the
    first fresh scrape; a counter with no series then or now is watched for `quiet_s`. When
    other traffic keeps it busy (its counter never stands still for that long),
    `own_clear(horizon)` says whether none of its own records were taken in during the
    `quiet_s` before the horizon (its queue empty there), which is all the window's edges
    need."""
    deadline = clock.monotonic() + timeout
    since = clock.time()
    first: tuple[float, float] | None = None  # (horizon, accepted) of the first reading
    value: float | None = None
    still_from: float | None = None
    accepted = scope.counters()["collector_accepted"]
    while True:
        horizon = wait_fresh_scrape(prom, since, scrape_timeout, scope, clock=clock)
        now_value = prom.instant(accepted, horizon)
        if first is None and now_value is not None:
            first = (horizon, now_value)
        rate = _per_minute(first, horizon, now_value)
        if _still_before(prom, accepted, horizon, quiet_s, now_value):
            return Quiet(horizon, True, rate, busy=False, clear_from=horizon - quiet_s)
        # No accepted series at all (a collector that has taken in nothing since it started:
        # Go's counters appear with their first record) stands as still as a constant one.
        if still_from is None or now_value != value:
            value, still_from = now_value, horizon
        elif horizon - still_from >= quiet_s:
            return Quiet(horizon, True, rate, busy=False, clear_from=still_from)
        watched = horizon - first[0] if first is not None else 0.0
        if (
            own_clear is not None
            and watched >= quiet_s
            and _queue_empty(prom, scope, horizon)
            and own_clear(horizon)
        ):
            return Quiet(horizon, True, rate, busy=True, clear_from=horizon - quiet_s)
        if clock.monotonic() > deadline:
            return Quiet(horizon, False, rate, busy=True, clear_from=horizon)
        since = horizon + 0.001


def _per_minute(
    first: tuple[float, float] | None, horizon: float, value: float | None
) -> float | None:
    if first is None or value is None or horizon <= first[0]:
        return None
    return max(0.0, value - first[1]) * 60 / (horizon - first[0])


def _still_before(
    prom: PrometheusAPI, counter: str, horizon: float, quiet_s: float, value: float | None
) -> bool:
    """The counter stood at `value` from a scrape at least `quiet_s` before `horizon` (a
    counter with no series then or now has no past to read: the wait watches it instead)."""
    return value is not None and prom.instant(counter, horizon - quiet_s) == value


def _queue_empty(prom: PrometheusAPI, scope: pipe.Scope, at: float) -> bool:
    return not prom.instant(scope.queue_size(), at)
