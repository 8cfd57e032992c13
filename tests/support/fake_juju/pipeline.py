"""The fake world's log pipeline over time, for timed worlds (world.Timed): k6 runs and other
applications offer records to the collector, whose sending queue fills when they offer more
than it exports, stays full (the receiver then refuses the excess, shared in proportion to
what each offers) and drains once the offer falls. Closed form, piecewise linear in time, so
any counter, gauge or Loki count can be read at any moment without simulating.

Counts are whole: a k6 run's records are accepted a request (`batch` records) at a time, and
the exporter never sends more than was accepted, so after a drain every counter, the k6
figures and the Loki counts agree exactly, as the ledger expects of a real pipeline. Loki holds
a record once the exporter has sent it (first in, first out), stamped when it was accepted.

Only the standard library: the fake `juju` program (state.py) imports this on every call.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

EPS = 1e-9


@dataclass(frozen=True)
class Stream:
    """Records offered to the collector from `start` to `end` (seconds since the epoch)."""

    name: str  # a k6 run id, or another application's job
    start: float
    end: float  # math.inf: for ever
    per_min: float
    batch: int = 1  # records per request: accepted or refused whole

    def offered_rate(self, t: float) -> float:
        return self.per_min / 60.0 if self.start <= t < self.end else 0.0


@dataclass(frozen=True)
class Segment:
    """[t0, t1): constant rates (records per second) and the queue moving linearly."""

    t0: float
    t1: float
    q0: float
    dq: float
    accepted: dict[str, float]
    exported: float


def _whole(x: float, batch: int = 1) -> int:
    """Whole batches in x records (a hair of tolerance for float error at exact multiples)."""
    return math.floor(x / batch + EPS) * batch


class Pipeline:
    """The collector between `streams` and Loki: it exports `capacity_per_min` records per
    minute at most, through a sending queue of `queue_records` records."""

    def __init__(
        self,
        streams: Sequence[Stream],
        capacity_per_min: float,
        queue_records: float,
        origin: float,
    ):
        self.streams = {s.name: s for s in streams}
        self.capacity = capacity_per_min / 60.0
        self.queue_max = float(queue_records)
        self.origin = origin
        self.segments = self._build()

    # ---- the timeline -----------------------------------------------------------------------

    def _build(self) -> list[Segment]:
        edges = {self.origin}
        for s in self.streams.values():
            edges.update(t for t in (s.start, s.end) if self.origin < t < math.inf)
        bounds = [*sorted(edges), math.inf]
        segments: list[Segment] = []
        q = 0.0
        for lo, hi in itertools.pairwise(bounds):
            t = lo
            while t < hi:
                seg = self._phase(t, hi, q)
                if seg.t1 <= t:  # the queue is a float's hair from full or empty, and the
                    # epoch-sized time cannot move by the hair: it is there
                    q = self.queue_max if seg.dq > 0 else 0.0
                    continue
                segments.append(seg)
                q = self._clamp(seg.q0 + seg.dq * (seg.t1 - seg.t0)) if seg.t1 < math.inf else q
                t = seg.t1
        return segments

    def _clamp(self, q: float) -> float:
        if q < EPS:
            return 0.0
        return self.queue_max if q > self.queue_max - EPS else q

    def _phase(self, t: float, hi: float, q: float) -> Segment:
        """The constant-rate stretch starting at t with q records queued (until hi at most)."""
        offered = {n: s.offered_rate(t) for n, s in self.streams.items()}
        total = sum(offered.values())
        cap = self.capacity
        if q >= self.queue_max and total >= cap:  # full: the excess is refused
            share = cap / total if total else 0.0
            return Segment(t, hi, q, 0.0, {n: r * share for n, r in offered.items()}, cap)
        if q <= 0.0 and total <= cap:  # empty: everything goes straight through
            return Segment(t, hi, 0.0, 0.0, offered, total)
        dq = total - cap  # filling (dq > 0) or draining (dq < 0) at full export, or holding
        if dq > 0:
            hi = min(hi, t + (self.queue_max - q) / dq)
        elif dq < 0:
            hi = min(hi, t + q / -dq)
        return Segment(t, hi, q, dq, offered, cap)

    def _integral(self, t: float, rate: str) -> float:
        total = 0.0
        for seg in self.segments:
            if t <= seg.t0:
                break
            span = min(t, seg.t1) - seg.t0
            total += span * (seg.exported if rate == "" else seg.accepted.get(rate, 0.0))
        return total

    # ---- readings at a moment ---------------------------------------------------------------

    def queue(self, t: float) -> float:
        """Records in the sending queue at t."""
        for seg in self.segments:
            if seg.t0 <= t < seg.t1:
                return self._clamp(seg.q0 + seg.dq * (t - seg.t0))
        return 0.0

    def accepted(self, name: str, t: float) -> int:
        """Records of one stream the receiver accepted up to t (whole requests)."""
        stream = self.streams.get(name)
        if stream is None or t <= self.origin:
            return 0
        return _whole(self._integral(t, name), stream.batch)

    def offered(self, name: str, t: float) -> int:
        """Records of one stream offered up to t (whole requests)."""
        s = self.streams[name]
        seconds = max(0.0, min(t, s.end) - max(s.start, self.origin))
        return _whole(seconds * s.per_min / 60.0, s.batch)

    def total_accepted(self, t: float) -> int:
        return sum(self.accepted(n, t) for n in self.streams)

    def refused(self, t: float) -> int:
        return sum(self.offered(n, t) - self.accepted(n, t) for n in self.streams)

    def exported(self, t: float) -> int:
        """Records the exporter sent up to t: never more than were accepted."""
        return min(self.total_accepted(t), _whole(self._integral(t, "")))

    def stored(self, names: Sequence[str], lo: float, hi: float, now: float) -> int:
        """Records of `names` Loki holds at `now` stamped in (lo, hi]: those accepted then and
        already sent (the queue is first in, first out)."""
        sent_before = self._sent_horizon(now)
        lo, hi = min(lo, sent_before), min(hi, sent_before)
        return sum(max(0, self.accepted(n, hi) - self.accepted(n, lo)) for n in names)

    def _sent_horizon(self, now: float) -> float:
        """The latest acceptance time whose records have all been sent by `now`."""
        sent = self.exported(now)
        if sent >= self.total_accepted(now):
            return now
        lo, hi = self.origin, now
        for _ in range(64):
            mid = (lo + hi) / 2
            if self.total_accepted(mid) <= sent:
                lo = mid
            else:
                hi = mid
        return lo
