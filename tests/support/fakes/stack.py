"""The local stack simulated on a virtual clock: what the fake target's load goes to.

k6 -> the collector (its OTLP receiver, a sending queue, the scenario's exporter) -> the store
(Loki for log records; the stack's Prometheus for metric points; the traces stand-in for
spans), or k6 -> Loki for a scenario whose load does not pass the collector (loki-push,
logql-query). Every half second the load, another application's logs and the collector's own
records enter, and the queue is sent on whole while its store is up; every 2 s the stack's
Prometheus (a FakeProm) scrapes the collector, the stand-in and Loki (Loki `loki_phase` later).
Events happen at set times: Loki stopped for a while (the queue holds; Loki's counters start
again from 0), the collector killed (its queue, on disk, survives), the collector's own log
records (the charm's internal-telemetry loop, some dropped by its loop breaker).

The stack follows its clock: every Prometheus query first runs it up to the clock's now.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from loadgate.measure import queries as q
from loadgate.measure import scenarios as scenario_measures
from loadgate.measure import signal_counters as sc
from loadgate.measure.stores import LOKI_STORE
from loadgate.stack import standin

from .clock import VirtualClock
from .prometheus import FakeProm

TICK_S = 0.5
SCRAPE_S = 2.0
HISTORY_S = 10.0  # how long a stack has been up (and scraped) when a test gets it
OWN_DELAY_S = 0.8  # a collector log record reaches its own receiver this long after it is written
OWN_SCRAPE = 37  # points the collector's own scrape takes in (a stack carrying metrics)
OWN_SCRAPE_EVERY_S = 60.0

COLLECTOR = {"job": "otelcol", "instance": "127.0.0.1:8888"}
# The collector's counters again, remote-written by its own scrape (a stack carrying metrics).
REMOTE = {"job": "otelcol-internal", "instance": "otelcol/0"}
LOKI = {"job": "loki", "instance": "localhost:3100"}
STANDIN = {"job": standin.TRACES.service, "instance": "127.0.0.1:8889"}
RECEIVER = "otlp/otelcol/0"
EXPORTERS = {
    sc.LOGS.name: "loki/send-loki-logs/0",
    sc.METRICS.name: "prometheusremotewrite/send-remote-write/0",
    sc.TRACES.name: "otlphttp/send-traces-0",
}
LOOP_BREAKER = "filter/internal-telemetry-loop-breaker/otelcol/0"


@dataclass
class Process:
    """A process of the stack: when it started, and its counters since then."""

    start: float
    counts: dict[str, float] = field(default_factory=dict[str, float])

    def add(self, name: str, n: float) -> None:
        self.counts[name] = self.counts.get(name, 0) + n

    def get(self, name: str) -> float:
        return self.counts.get(name, 0)


@dataclass
class Queue:
    """The collector's sending queue: the run's units, its own log records and another
    application's (each by when it was stamped), and the points of its own scrape."""

    run: int = 0
    own: list[float] = field(default_factory=list[float])
    other: list[float] = field(default_factory=list[float])
    scraped: int = 0

    @property
    def size(self) -> int:
        return self.run + len(self.own) + len(self.other) + self.scraped


@dataclass(eq=False)
class SimulatedStack:
    scenario: str = "otlp-logs"
    rate: int = 50  # units per second k6 sends while the load runs
    run_id: str = "r1"
    clock: VirtualClock = field(default_factory=VirtualClock)
    prom: FakeProm = field(default_factory=FakeProm)
    loki_phase: float = 0.0  # Loki is scraped this long after the collector
    # ---- events -----------------------------------------------------------------------------
    loki_down: tuple[float, float] | None = None  # stopped from, started again at
    kill_collector_at: float | None = None
    # The collector's own log records: (written at, dropped by the loop breaker).
    own: list[tuple[float, bool]] = field(default_factory=list[tuple[float, bool]])
    # Another application's log records per second through the collector from `other_from`,
    # each stamped `other_lag` seconds before the collector takes it.
    other_rate: float = 0.0
    other_from: float = 0.0
    other_lag: float = 0.0
    standin_others: int = 0  # spans someone else sends the traces stand-in (taken in at once)
    standin_lag: float = 0.0  # the stand-in's scrape shows its counter as it was this long before
    loki_count: int | None = None  # what Loki answers for the run's units (None: what it holds)
    # ---- what happened ------------------------------------------------------------------------
    sending_until: float = 0.0
    sent: int = 0
    stored: int = 0  # the run's units in their store
    own_stored: list[float] = field(default_factory=list[float])  # in Loki, by stamp
    other_stored: list[float] = field(default_factory=list[float])

    def __post_init__(self) -> None:
        self.measures = scenario_measures.of(self.scenario)
        self.t = self.clock.now
        self.collector = Process(self.t - 100)
        self.loki = Process(self.t - 100)
        self.instance = 0  # the collector's, counted up when it restarts
        self.queue = Queue()
        self.standin_history: list[tuple[float, int]] = []  # (when, spans it took in by then)
        self._next_scrape = self.t
        self._next_loki_scrape = self.t + self.loki_phase
        scraped = self.signal is not None and self.signal.scraped
        self._next_own_scrape = self.t + 25 if scraped else math.inf  # once, during a load
        self.prom.on_query = self._follow

    @classmethod
    def up(cls, **config: Any) -> SimulatedStack:
        """A stack that has been up (and scraped) for HISTORY_S."""
        stack = cls(**config)
        stack.clock.now += HISTORY_S
        stack.run_until(stack.clock.now)
        return stack

    @property
    def signal(self) -> sc.SignalCounters | None:
        """The collector's counters of the load (None: the load goes to Loki itself)."""
        return self.measures.signal

    def _follow(self, prom: FakeProm, query: str) -> None:
        self.run_until(self.clock.now)
        prom.now = self.clock.now

    def start_load(self, seconds: float) -> None:
        self.sending_until = self.clock.now + seconds

    def loki_up(self, t: float) -> bool:
        return self.loki_down is None or not (self.loki_down[0] <= t < self.loki_down[1])

    # ---- time -----------------------------------------------------------------------------------

    def run_until(self, until: float) -> None:
        while self.t + TICK_S <= until:
            self.t += TICK_S
            self._tick(self.t)

    def _tick(self, t: float) -> None:
        if self.kill_collector_at is not None and t >= self.kill_collector_at:
            self.kill_collector_at = None
            self.instance += 1
            self.collector = Process(t + 0.3)  # the queue is on disk: it survives
        if self.loki_down and t == self.loki_down[1]:
            self.loki = Process(t)  # Loki started again: its counters from 0
        if t <= self.sending_until:
            self._take_load(self.rate // 2)
        if self.other_rate and t >= self.other_from:
            n = int(self.other_rate / 2)
            self.collector.add("accepted", n)
            self.queue.other += [t - self.other_lag] * n
        for written, dropped in self.own:
            if t - TICK_S < written + OWN_DELAY_S <= t:
                self.collector.add("accepted", 1)
                if dropped:
                    self.collector.add("filtered", 1)
                else:
                    self.queue.own.append(written)
        if t >= self._next_own_scrape:
            self.collector.add("scraped", OWN_SCRAPE)
            self.queue.scraped += OWN_SCRAPE
            self._next_own_scrape += OWN_SCRAPE_EVERY_S
        self._send_on(t)
        if t >= self._next_scrape:
            self._scrape_collector(t)
            self._next_scrape += SCRAPE_S
        if t >= self._next_loki_scrape:
            self._scrape_loki(t)
            self._next_loki_scrape += SCRAPE_S

    def _take_load(self, n: int) -> None:
        self.sent += n
        if self.signal is None:  # straight to Loki, which stores it at once
            self.loki.add("received", n)
            self.stored += n
        else:
            self.collector.add("accepted", n)
            self.queue.run += n

    def _send_on(self, t: float) -> None:
        """The whole queue to its store, unless that is Loki and Loki is down."""
        queue, signal = self.queue, self.signal
        if not queue.size or (signal is sc.LOGS and not self.loki_up(t)):
            return
        self.collector.add("exported", queue.size)
        if signal is sc.LOGS:
            self.loki.add("received", queue.size)
            self.own_stored += queue.own
            self.other_stored += queue.other
        elif signal is sc.METRICS:
            self._store_points(t, queue.run)
        elif signal is sc.TRACES:
            taken = self.standin_spans(t) + queue.run + self.standin_others
            self.standin_others = 0
            self.standin_history.append((t, taken))
        self.stored += queue.run
        self.queue = Queue()

    def _store_points(self, t: float, n: int) -> None:
        """The run's points in Prometheus: a gauge sample each, and a histogram's _bucket and
        _sum beside every tenth (which the count leaves out)."""
        for i in range(n):
            at = t - 0.001 * i
            labels = {"run": self.run_id, "series": str(i % 10), "instance": "k6-vu1"}
            self.prom.add("loadgate_k6_gauge", labels, at, 1.0)
            if i % 10 == 0:
                self.prom.add("loadgate_k6_histogram_sum", labels, at, 3.0)
                self.prom.add("loadgate_k6_histogram_bucket", {**labels, "le": "1"}, at, 1.0)

    def standin_spans(self, t: float) -> int:
        """The spans the traces stand-in had taken in by `t`."""
        return max((n for at, n in self.standin_history if at <= t), default=0)

    # ---- what Prometheus scrapes ----------------------------------------------------------------

    def _scrape_collector(self, t: float) -> None:
        signal = self.signal or sc.LOGS  # a load straight to Loki: the collector idles
        c, add = self.collector, self.prom.add
        copies = (COLLECTOR, REMOTE) if signal.scraped else (COLLECTOR,)
        for copy in copies:
            lab = {**copy, "service_instance_id": f"i{self.instance}"}
            add(q.COLLECTOR_UPTIME, lab, t, t - c.start)
            add(q.COLLECTOR_CPU, lab, t, 0.01 * (t - c.start))
            add(signal.accepted, {**lab, "receiver": RECEIVER}, t, c.get("accepted"))
            if signal.scraped:
                add(signal.accepted, {**lab, "receiver": "prometheus/x"}, t, c.get("scraped"))
            add(signal.refused, {**lab, "receiver": RECEIVER}, t, 0)
            exp = {**lab, "exporter": EXPORTERS[signal.name]}
            add(signal.exported, exp, t, c.get("exported"))
            add(signal.failed, exp, t, 0)
            add(q.COLLECTOR_QUEUE_SIZE, exp, t, self.queue.size)
            if "filtered" in c.counts:  # the filter's counter appears with its first record
                flt = {**lab, "filter": LOOP_BREAKER}
                add("otelcol_processor_filter_logs.filtered", flt, t, c.get("filtered"))
        if signal is sc.TRACES:  # the stand-in, a collector too: the same names, its own job
            spans = self.standin_spans(t - self.standin_lag)
            add(sc.SPANS_ACCEPTED, {**STANDIN, "receiver": "otlp"}, t, spans)
            add(q.COLLECTOR_CPU, STANDIN, t, 0.001 * t)

    def _scrape_loki(self, t: float) -> None:
        if self.loki_up(t):
            self.prom.add(q.LOKI_BUILD_INFO, {**LOKI, "version": "3.7.8"}, t, 1)
            self.prom.add(q.PROCESS_START, LOKI, t, self.loki.start)
            received = self.loki.get("received")
            self.prom.add(q.LOKI_RECEIVED, {**LOKI, "tenant": "fake"}, t, received)

    # ---- what Loki answers ----------------------------------------------------------------------

    def loki_answer(self, query: str, at: float | None) -> int:
        """A LogQL count: other traffic (every stream but two), the collector's own records,
        or the run's (what Loki holds of them, or `loki_count`)."""
        if 'service_name=~".+"' in query:
            return in_window(query, at, self.other_stored)
        if 'job="otelcol-internal"' in query:
            return in_window(query, at, self.own_stored)
        assert f'|= "run={self.run_id} "' in query, query
        if self.loki_count is not None:
            return self.loki_count
        return self.stored if self.measures.store is LOKI_STORE else 0


def in_window(query: str, at: float | None, stamps: list[float]) -> int:
    """How many of `stamps` a LogQL `[Nms]` window ending at the query's time holds."""
    window = re.search(r"\[(\d+)ms\]", query)
    assert window is not None, query
    assert at is not None, query
    lo = at - int(window.group(1)) / 1000
    return sum(1 for t in stamps if lo < t <= at)
