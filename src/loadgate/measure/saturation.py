"""Saturation throughput: what the pipeline takes, per minute, once offered more than it can.

Offered well above its limit, the collector's sending queue fills, then stays full: from then on
the receiver accepts only what the exporter sends on, and the rest is refused. The steady window
is that stretch, from shortly after the queue first filled (the fill transient excluded) to the
last scrape of the load that still finds it full, between two scrapes of the collector. Over it
the collector's counters give what it accepted and exported per minute (less its own records and
other traffic), and a LogQL count of the run's records stamped inside it what Loki stored per
minute.

A queue that never fills means the pipeline took everything offered: the figures are then over
the load less its first fifth, and `saturated` is False (the pipeline's limit is at least that).

The window rule (`steady_window`) and the arithmetic are pure; `measure` reads Prometheus and Loki.
What the figures say is read in one place, `SaturationFigures.reading`: a state (SATURATED,
GROWING, TOOK_ALL, UNKNOWN) and the throughput that goes with it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from loadgate.measure import queries as q
from loadgate.measure.pipeline import Scope
from loadgate.measure.queries import LokiAPI, PrometheusAPI, QueryError, Series, to_ms

# The collector's sending queue, two rules (items held over its capacity, a share):
# - it counts as full, for the steady window (at a scrape) and for a run without one (at its
#   high-water mark: the capacity search), from FULL_SHARE: the window is to hold every
#   scrape at which the queue sits at its limit, so the share leaves it a little room below;
# - attribution claims the collector's queue gave way (judge/claims.py, the default of
#   `Thresholds.queue_full`) only from FULL_CLAIM_SHARE of its high-water mark: a claim that
#   names a component wants the queue at the brim, not on its way there.
FULL_SHARE = 0.9
FULL_CLAIM_SHARE = 0.95
# Saturated also, without filling: the exporter sent on less than this share of what the
# receiver took, records per minute over records per minute (the queue was growing).
_GROWING_SHARE = 0.95
# The steady window starts this long after the queue first filled (its fill transient).
_SETTLE_S = 4.0
# A steady window shorter than this, or than _MIN_WINDOW_SCRAPES scrape intervals of the
# collector, gives no figure (too few scrapes to trust): 10 s on the local stack (a scrape every
# 2 s), 3 minutes on Juju (COS scrapes the collector once a minute: Scope.scrape_interval_s).
MIN_WINDOW_S = 10.0
_MIN_WINDOW_SCRAPES = 3
# What a saturation run offers unless told otherwise: well above what the default pipeline
# takes on a 2-core machine (about 210,000 records/min), VUs ready for it, and gates that
# expect the refusals (only `lost_records` still judges: the ledger stays exact).
SATURATE_PARAMS: dict[str, object] = {
    "rate": 300_000,
    "vus": 300,
    "max-error-rate": 1.0,
    "p99-ms": 3_600_000,
    "min-logs-per-minute": 0,
}
# On COS, which scrapes the collector once a minute, a saturation run must also last long enough
# for a steady window: the fill seen at a scrape, one more to settle, _MIN_WINDOW_SCRAPES more,
# and up to a minute from the last scrape to the load's end (`loadgate run --target juju
# --saturate`, and the Juju gate's saturation run).
SATURATE_COS_PARAMS: dict[str, object] = {"duration": "8m"}
# When the queue never fills, the load's first share is left out (the pipeline warming up).
_WARMUP_SHARE = 0.2

# What a saturation run says of the pipeline (`SaturationFigures.reading`), one of:
SATURATED = "saturated"  # its queue filled and stayed full: what it accepted is its limit
GROWING = "growing"  # its queue grew without filling: what its exporter sent on is its limit
# its queue neither filled nor grew, but its receiver refused more than REFUSED_SHARE of what
# was offered (a memory limiter, say, refuses before the queue), or it took none of it: what it
# accepted is its limit
REFUSING = "refusing"
TOOK_ALL = "took all"  # its queue neither filled nor grew: what it accepted is a lower bound
UNKNOWN = "unknown"  # no steady window (the figures' `reason` says why)
STATES = (SATURATED, GROWING, REFUSING, TOOK_ALL, UNKNOWN)
_AT_LIMIT = (SATURATED, GROWING, REFUSING)  # the states whose throughput is the pipeline's limit
REFUSED_SHARE = 0.01  # refused beyond this share of the offered rate: not "took all"


@dataclass(frozen=True)
class SteadyWindow:
    """Where the pipeline ran steadily: two scrapes of the collector (epoch seconds)."""

    start: float
    end: float
    saturated: bool  # the queue filled (and the window starts after it did)
    filled_at: float | None  # when the queue first reached FULL_SHARE of its capacity

    @property
    def seconds(self) -> float:
        return self.end - self.start


def min_window_s(scrape_interval_s: float) -> float:
    """The shortest steady window that gives a figure, for a collector scraped this often."""
    return max(MIN_WINDOW_S, _MIN_WINDOW_SCRAPES * scrape_interval_s)


def steady_window(
    queue: Sequence[tuple[float, float]],
    capacity: float | None,
    load: tuple[float, float],
    scrape_interval_s: float = 2.0,
) -> SteadyWindow | str:
    """The steady window from the queue's samples (time, size) over the load (start, end), or
    why there is none. Both edges are sample times, so counters read there are exact.

    A saturated window ends at the last scrape of the load that finds the queue still full:
    one taken after k6's last request (a target may learn of the load's end late, as the Juju
    target does by polling the k6 charm) finds it draining, and would count a stretch without
    load as steady."""
    inside = sorted((t, v) for t, v in queue if load[0] <= t <= load[1])
    if len(inside) < 2:
        return "fewer than two scrapes of the collector's queue during the load"
    full = [t for t, v in inside if capacity and v >= FULL_SHARE * capacity]
    filled = full[0] if full else None
    if filled is not None:
        end = full[-1]
        start = next((t for t, _ in inside if t >= filled + _SETTLE_S), end)
    else:
        end = inside[-1][0]
        warm = load[0] + _WARMUP_SHARE * (load[1] - load[0])
        start = next((t for t, _ in inside if t >= warm), end)
    shortest = min_window_s(scrape_interval_s)
    if end - start < shortest:
        what = "after the queue filled" if filled is not None else "after the warm-up"
        return (
            f"the steady window {what} is {end - start:.0f}s, shorter than {shortest:g}s: "
            "run the load longer"
        )
    return SteadyWindow(start, end, filled is not None, filled)


def increase(series: Sequence[Series], start: float, end: float) -> int | None:
    """How much a counter summed over its series grew from the sample at `start` to the one at
    `end` (None when a series has no sample at either, or was reset in between)."""
    total = 0.0
    for s in series:
        at = dict(s.samples)
        a, b = at.get(start), at.get(end)
        if a is None and s.samples and min(t for t, _ in s.samples) > start:
            a = 0.0  # a series born inside the window counts from 0
        values = [v for t, v in sorted(s.samples) if start <= t <= end]
        if a is None or b is None or any(y < x for x, y in itertools.pairwise(values)):
            return None
        total += b - a
    return round(total)


def summed(series: Sequence[Series]) -> list[tuple[float, float]]:
    """A gauge's series added up at each scrape time."""
    totals: dict[float, float] = {}
    for s in series:
        for t, v in s.samples:
            totals[t] = totals.get(t, 0.0) + v
    return sorted(totals.items())


def per_minute(count: int | None, seconds: float) -> float | None:
    return None if count is None or seconds <= 0 else count * 60 / seconds


@dataclass(frozen=True)
class SaturationReading:
    """What a saturation run says: its state and the throughput that goes with it, in records
    per minute: the pipeline's limit when SATURATED (what the collector accepted over the
    steady window), GROWING (what its exporter sent on) or REFUSING (what it accepted while
    refusing the rest), a lower bound when TOOK_ALL (what it accepted), None when UNKNOWN or when
    that count could not be read."""

    state: str
    per_min: float | None

    @property
    def at_limit(self) -> bool | None:
        """The pipeline reached its limit (SATURATED, GROWING or REFUSING); None when
        UNKNOWN."""
        return None if self.state == UNKNOWN else self.state in _AT_LIMIT

    @property
    def limit(self) -> float | None:
        """The pipeline's throughput at its limit (None: it took all, or unknown)."""
        return self.per_min if self.state in _AT_LIMIT else None


@dataclass(frozen=True)
class SaturationFigures:
    """`saturation` of result.json: the pipeline's throughput over its steady window."""

    offered_per_min: float | None
    saturated: bool | None  # None: no steady window (see `reason`)
    window_start: float | None = None
    window_end: float | None = None
    window_s: float | None = None
    fill_s: float | None = None  # from the load's start until the queue filled
    accepted_per_min: float | None = None  # the run's records the collector took in
    exported_per_min: float | None = None  # ... its Loki exporter sent on
    stored_per_min: float | None = None  # the run's records Loki holds stamped in the window
    refused_per_min: float | None = None  # records the receiver refused (all traffic)
    queue_capacity: float | None = None
    reason: str = ""
    source: str = (
        "Prometheus: the collector's counters at the scrapes that bound the steady window (its "
        f"queue >= {FULL_SHARE:.0%} of capacity, from {_SETTLE_S:g} s after it first filled to "
        "the load's last scrape that finds it full), less its own records and other traffic; "
        "Loki: LogQL count of the run's records in the window"
    )

    @property
    def growing(self) -> bool:
        """The queue never filled but grew: the exporter sent on less than GROWING_SHARE of
        what the receiver took (a batching collector's queue of whole batches holds more than
        a run fills). The pipeline is past its limit all the same."""
        took, sent = self.accepted_per_min, self.exported_per_min
        return self.saturated is False and bool(took and sent and sent < _GROWING_SHARE * took)

    @property
    def refusing(self) -> bool:
        """The queue neither filled nor grew, yet the receiver refused more than REFUSED_SHARE
        of the offered rate, or took none of it: the pipeline gave way before its queue (it
        took less than all). A collector whose memory limiter refused every record read 0
        refused over its window once (eshed-1, 2026-11-29: why its refused count did not move
        was not found), so taking none is refusing whatever the refused count says."""
        refused, offered = self.refused_per_min, self.offered_per_min
        if self.saturated is not False or self.growing or not offered:
            return False
        return self.accepted_per_min == 0 or bool(refused and refused > REFUSED_SHARE * offered)

    @property
    def reading(self) -> SaturationReading:
        """The one reading of these figures: saturated, growing, refusing, took all or unknown,
        with the throughput that goes with the state (every reader of a saturation result asks
        this)."""
        if self.saturated is None:
            return SaturationReading(UNKNOWN, None)
        if self.saturated:
            return SaturationReading(SATURATED, self.accepted_per_min)
        if self.growing:
            return SaturationReading(GROWING, self.exported_per_min)
        if self.refusing:
            return SaturationReading(REFUSING, self.accepted_per_min)
        return SaturationReading(TOOK_ALL, self.accepted_per_min)

    @property
    def throughput(self) -> float | None:
        """What the pipeline sustains (`reading.limit`): the records it took in over the window
        once its queue was full; what its exporter sent on when the queue grew without filling;
        None when it took everything offered (a lower bound only) or is unknown."""
        return self.reading.limit


def measure(
    prom: PrometheusAPI,
    loki: LokiAPI,
    scope: Scope,
    run_id: str,
    load: tuple[float, float],
    offered_per_min: float | None,
) -> SaturationFigures:
    """Read the queue over the load, choose the steady window and measure over it."""
    lo, hi = to_ms(load[0] - 5), to_ms(load[1] + 1)
    try:
        queue = summed(prom.samples(scope.queue_selector(), lo, hi))
        capacity = prom.instant(scope.queue_capacity(), load[1])
        window = steady_window(queue, capacity, load, scope.scrape_interval_s)
        if isinstance(window, str):
            return SaturationFigures(offered_per_min, None, queue_capacity=capacity, reason=window)
        counts = _counts(prom, loki, scope, run_id, window, lo, hi)
    except QueryError as exc:
        return SaturationFigures(offered_per_min, None, reason=f"could not be read: {exc}")
    rate = {name: per_minute(n, window.seconds) for name, n in counts.items()}
    return SaturationFigures(
        offered_per_min=offered_per_min,
        saturated=window.saturated,
        window_start=window.start,
        window_end=window.end,
        window_s=round(window.seconds, 3),
        fill_s=None if window.filled_at is None else round(window.filled_at - load[0], 1),
        accepted_per_min=rate["accepted"],
        exported_per_min=rate["exported"],
        stored_per_min=rate["stored"],
        refused_per_min=rate["refused"],
        queue_capacity=capacity,
    )


def _counts(
    prom: PrometheusAPI,
    loki: LokiAPI,
    scope: Scope,
    run_id: str,
    window: SteadyWindow,
    lo: int,
    hi: int,
) -> dict[str, int | None]:
    """The run's records over the window at each step: the collector's counters less its own
    records (those its loop breaker dropped, and those Loki holds) and other traffic. A count
    that cannot be read (a counter reset in the window, or without a sample at an edge) leaves
    the steps it enters unknown, never 0; a LogQL count that matched no line answers nothing,
    which is 0 lines (a failed query raises QueryError)."""
    sel = scope.selectors()

    def counter(name: str) -> int | None:
        return increase(prom.samples(sel[name], lo, hi), window.start, window.end)

    def lines(query: str) -> int:
        return int(loki.instant(query, window.end) or 0)  # no answer: no line matched

    window_ms = max(1, round(window.seconds * 1000))
    own_stored = lines(q.logql_job_count(q.OWN_LOGS_JOB, window_ms))
    other = lines(q.logql_other_count(run_id, window_ms))
    filtered = counter("collector_own_filtered")  # no series at all: none dropped, 0
    accepted, exported = counter("collector_accepted"), counter("collector_exported")
    return {
        "accepted": (
            None
            if accepted is None or filtered is None
            else accepted - own_stored - filtered - other
        ),
        "exported": None if exported is None else exported - own_stored - other,
        "stored": lines(q.logql_run_count_ms(run_id, window_ms)),
        "refused": counter("collector_refused"),
    }
