"""Where a scenario's units end up, and how many of a run's are there: Loki (a LogQL count of
the run's marker), Prometheus (a PromQL count of the run's samples) or the traces backend
stand-in (the spans its receiver accepted over the run's window). The `stored` step of the
ledger."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from loadgate.measure import queries as q
from loadgate.measure import signal_queries as sq
from loadgate.measure.counters import Counter
from loadgate.measure.queries import LokiAPI, PrometheusAPI, QueryError, to_ms

# A VU of otlp-metrics stamps its points with a clock of its own that never repeats a
# millisecond (k6/lib/metrics.js): pressed hard it runs ahead of the wall clock. Points
# stamped up to this long after the read-back are counted too.
_AHEAD_S = 300.0


@dataclass(frozen=True)
class Store:
    """A backend that stores a scenario's units."""

    name: str  # the service: loki, prometheus
    source: str  # how the count is made, for result.json
    # A series every scrape of the store's counter has, when the count is read from its own
    # scrapes (the stand-in): read only once it was scraped after the drain. None: the store
    # holds what was acknowledged at once (Loki, Prometheus).
    anchor: str | None = None

    def query(self, run_id: str, start: float, end: float) -> str:
        """The query that counts the run's units stamped in (start, end] (end: read-back)."""
        raise NotImplementedError

    def count(
        self, prom: PrometheusAPI, loki: LokiAPI, run_id: str, start: float, end: float
    ) -> int:
        """How many of the run's units the store holds (raises QueryError)."""
        raise NotImplementedError


@dataclass(frozen=True)
class _LokiStore(Store):
    name: str = "loki"
    source: str = "Loki LogQL instant query"

    def query(self, run_id: str, start: float, end: float) -> str:
        return q.logql_run_count(run_id, int(end - start) + 1)

    def count(
        self, prom: PrometheusAPI, loki: LokiAPI, run_id: str, start: float, end: float
    ) -> int:
        return loki.count_run(run_id, start, end)


@dataclass(frozen=True)
class _PrometheusStore(Store):
    name: str = "prometheus"
    source: str = (
        "Prometheus PromQL instant query: one sample per gauge or sum point, the _count "
        f"sample of a histogram point, stamped up to {_AHEAD_S:g} s after the read-back"
    )

    def query(self, run_id: str, start: float, end: float) -> str:
        return sq.promql_run_points(run_id, int(end + _AHEAD_S - start) + 1)

    def count(
        self, prom: PrometheusAPI, loki: LokiAPI, run_id: str, start: float, end: float
    ) -> int:
        return int(prom.instant(self.query(run_id, start, end), end + _AHEAD_S) or 0)


LOKI_STORE = _LokiStore()
PROMETHEUS_STORE = _PrometheusStore()


# How far before the window a counter's last sample is looked for (Prometheus' staleness).
_LOOKBACK_MS = 5 * 60 * 1000


@dataclass(frozen=True)
class StandinStore(Store):
    """The traces backend stand-in (stack/standin.py locally, overlays/traces-standin.yaml on
    Juju: a collector with a nop exporter, not Tempo): it keeps nothing to search, so what it
    holds of a run is what its receiver accepted over the run's window, from its own counter,
    exact and reset-aware (counters.py). That counts every span it received, the run's or not:
    it is the run's count only while nothing else sends it spans (one run at a time, only the
    collector under test sends it traces, and only the load enters that collector's traces
    pipeline). `matchers` pick its series (standin_store)."""

    name: str = "traces-standin"
    source: str = (
        "traces backend stand-in's receiver accepted spans (job traces-standin, not Tempo): "
        "every span it received over the run's window, not only the run's (it keeps nothing "
        "to search by run); the run's while nothing else sends traces (locally: one run at a "
        "time, only the collector under test sends to it)"
    )
    anchor: str | None = sq.standin_spans()
    selector: str = sq.standin_spans()

    def query(self, run_id: str, start: float, end: float) -> str:
        return f"increase of {self.selector} from raw samples over ({start:.3f}, {end:.3f}]"

    def count(
        self, prom: PrometheusAPI, loki: LokiAPI, run_id: str, start: float, end: float
    ) -> int:
        sel, lo, hi = self.selector, to_ms(start), to_ms(end)
        counter = Counter()
        counter.baseline(prom.samples(sel, lo - _LOOKBACK_MS, lo))
        counter.fold(prom.samples(sel, lo, hi))
        if not counter.seen:
            raise QueryError(f"Prometheus has no series of the traces backend stand-in ({sel})")
        if counter.resets:
            raise QueryError(
                f"the traces backend stand-in's counter was reset {counter.resets} time(s) (it "
                f"restarted): at least {counter.total:,} spans, the rest lost to the count"
            )
        return counter.total


def standin_store(matchers: Mapping[str, str], where: str) -> StandinStore:
    """The stand-in whose series `matchers` pick (e.g. its Juju application), `where` saying
    which for the result's source."""
    sel = sq.standin_spans(matchers=matchers)
    source = (
        f"traces backend stand-in's receiver accepted spans ({where}, not Tempo): every span it "
        "received over the run's window, not only the run's (it keeps nothing to search by "
        "run); the run's while nothing else sends it traces"
    )
    return StandinStore(source=source, anchor=sel, selector=sel)


STANDIN_STORE = StandinStore()
