"""Which series are the pipeline under test (Scope): the collector's exporters and signal,
the Loki whose metrics count, and the figures each pipeline has. Pure: it builds selectors."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from loadgate.measure import queries as q
from loadgate.measure.signal_counters import LOGS, SignalCounters

OTELCOL = "otelcol"
LOKI = "loki"

# Figure name -> the service whose counter it is (the figures of a logs pipeline).
FIGURES: dict[str, str] = {
    "collector_accepted": OTELCOL,
    "collector_refused": OTELCOL,
    "collector_exported": OTELCOL,
    "collector_failed": OTELCOL,
    "collector_enqueue_failed": OTELCOL,
    "loki_received": LOKI,
    "loki_discarded": LOKI,
    # The collector's own log records its internal-telemetry loop breaker dropped (charm
    # revisions since rev219 send the collector's logs into its own receiver; see ledger.py).
    "collector_own_filtered": OTELCOL,
    # Log records the memory_limiter processor refused (unknown when there is none).
    "memory_limiter_refused": OTELCOL,
}
# What a metrics pipeline has besides: the points the collector's own scrape took in (they
# leave by the remote-write exporter with the run's).
SCRAPED = "collector_scraped"
# Figures written to result.json only when a run measures them (older records lack them).
OPTIONAL_FIGURES = (SCRAPED,)


@dataclass(frozen=True)
class Scope:
    """Which series are the pipeline under test: the collector's exporters (a regex over their
    `exporter` label), the Loki whose metrics count (label matchers), and which signal's
    counters the collector's figures read (`signal`; None: the load does not pass the
    collector, as loki-push: only Loki's figures).

    The default takes every Loki exporter and every Loki, and log records. A collector related
    to several Loki units sends each a full copy through its own exporter; a scope then follows
    one copy. `collector`: label matchers of the collector's own series (default: every
    series); a collector that remote-writes its own metrics into the Prometheus that also
    scrapes it (a local stack carrying metrics) has two copies of each, and the scope keeps the
    scraped one.
    """

    exporter: str = "loki.*"
    loki: Mapping[str, str] = field(default_factory=dict[str, str])
    # A rate spans at least two scrapes: the local stack scrapes every 2 s, COS every minute.
    rate_window: str = "10s"
    signal: SignalCounters | None = LOGS
    collector: Mapping[str, str] = field(default_factory=dict[str, str])
    # How often the collector is scraped (seconds): the saturation's steady window spans a few.
    scrape_interval_s: float = 2.0

    def figures(self) -> dict[str, str]:
        """Figure name -> its service: those this scope's pipeline has."""
        if self.signal is None:
            return {name: svc for name, svc in FIGURES.items() if svc == LOKI}
        out = dict(FIGURES)
        if not self.signal.loop_breaker:
            del out["collector_own_filtered"]
        if self.signal.scraped:
            out[SCRAPED] = OTELCOL
        return out

    def _collector(self) -> SignalCounters:
        assert self.signal is not None, "a scope without the collector has no collector series"
        return self.signal

    def counters(self) -> dict[str, str]:
        """Name -> PromQL of a cumulative counter summed over its series (a live reading)."""
        return {name: f"sum({sel})" for name, sel in self.selectors().items()}

    def selectors(self) -> dict[str, str]:
        """Name -> selector of the counter's series (raw samples are read per series)."""
        loki = {
            "loki_received": q.selector(q.LOKI_RECEIVED, self.loki),
            "loki_discarded": q.selector(q.LOKI_DISCARDED, self.loki),
        }
        if self.signal is None:
            return loki
        sig, exp, own = self.signal, self.exporter, self.collector
        rec = sig.receiver_matchers()
        out = {
            "collector_accepted": q.selector(sig.accepted, own, None, **rec),
            "collector_refused": q.selector(sig.refused, own, None, **rec),
            "collector_exported": q.selector(sig.exported, own, exp),
            "collector_failed": q.selector(sig.failed, own, exp),
            "collector_enqueue_failed": q.selector(sig.enqueue_failed, own, exp),
            **loki,
        }
        if sig.loop_breaker:
            filtered = q.selector(q.COLLECTOR_FILTERED, own, filter=q.LOOP_BREAKER)
            out["collector_own_filtered"] = filtered
        limiter = q.selector(sig.processor_refused, own, processor=q.MEMORY_LIMITER)
        out["memory_limiter_refused"] = limiter
        if sig.scraped:
            out[SCRAPED] = sig.other_receivers(own)
        return out

    def collector_selector(self, metric: str) -> str:
        """A selector of one of the collector's own metrics (its process, its queue)."""
        return q.selector(metric, self.collector)

    def cpu_cores(self) -> str:
        """The collector's CPU in cores, a rate over the scope's window."""
        return q.cpu_cores(self.collector, rate_window=self.rate_window)

    def rss(self) -> str:
        return q.counter_total(q.COLLECTOR_RSS, self.collector)

    def anchors(self) -> dict[str, str]:
        """Service -> a series every successful scrape of it has (freshness, and 'is it there')."""
        loki = {LOKI: q.selector(q.LOKI_BUILD_INFO, self.loki)}
        if self.signal is None:
            return loki
        return {OTELCOL: q.selector(q.COLLECTOR_CPU, self.collector), **loki}

    def presence(self) -> dict[str, list[str]]:
        """Figure -> selectors whose series show that what it counts exists. A counter with no
        series is 0 when these have series (nothing was counted), else unknown."""
        anchors = self.anchors()
        loki = {"loki_received": [anchors[LOKI]], "loki_discarded": [anchors[LOKI]]}
        if self.signal is None:
            return loki
        sig, exp, own = self.signal, self.exporter, self.collector
        exporter = [
            q.selector(q.COLLECTOR_QUEUE_SIZE, own, exp),
            q.selector(sig.exported, own, exp),
            q.selector(sig.failed, own, exp),
        ]
        out = {
            "collector_accepted": [anchors[OTELCOL]],
            "collector_refused": [anchors[OTELCOL]],
            "collector_exported": exporter,
            "collector_failed": exporter,
            "collector_enqueue_failed": exporter,
            **loki,
            # No loop breaker (a hand stack, an older revision) or nothing dropped yet: 0.
            "collector_own_filtered": [anchors[OTELCOL]],
            # A memory limiter that passed data on but refused none: 0; no limiter: unknown.
            "memory_limiter_refused": [
                q.selector(sig.processor_accepted, own, processor=q.MEMORY_LIMITER),
                q.selector(sig.processor_refused, own, processor=q.MEMORY_LIMITER),
            ],
            # Its own scrape accepted nothing yet (it scrapes once a minute): 0.
            SCRAPED: [anchors[OTELCOL]],
        }
        return {name: out[name] for name in self.figures()}

    def absent_reason(self, figure: str) -> str:
        unit = self.signal.unit if self.signal is not None else "log records"
        if figure == "memory_limiter_refused":
            return f"the collector has no memory_limiter processor with {unit} (no series)"
        if FIGURES.get(figure) == LOKI:
            anchor = q.selector(q.LOKI_BUILD_INFO, self.loki)
            return f"Prometheus has no series of Loki matching {anchor}"
        if figure.startswith("collector_") and figure not in (
            "collector_accepted",
            "collector_refused",
            "collector_own_filtered",
            SCRAPED,
        ):
            return f"the collector has no exporter matching exporter=~{self.exporter!r}"
        return f"Prometheus has no series of the collector ({q.COLLECTOR_CPU})"

    def queue_selector(self) -> str:
        """The scope's exporters' queue-size series (raw samples are read per series)."""
        return q.selector(q.COLLECTOR_QUEUE_SIZE, self.collector, self.exporter)

    def queue_size(self) -> str:
        return q.loki_exporters_only(q.COLLECTOR_QUEUE_SIZE, self.collector, self.exporter)

    def queue_capacity(self) -> str:
        return q.loki_exporters_only(q.COLLECTOR_QUEUE_CAPACITY, self.collector, self.exporter)
