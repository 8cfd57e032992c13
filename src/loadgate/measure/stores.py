"""Where a scenario's units end up, and how many of a run's are there: Loki (a LogQL count of
the run's marker) or Prometheus (a PromQL count of the run's samples). The `stored` step of
the ledger."""

from __future__ import annotations

from dataclasses import dataclass

from loadgate.measure import queries as q
from loadgate.measure import signal_queries as sq
from loadgate.measure.queries import LokiAPI, PrometheusAPI

# A VU of otlp-metrics stamps its points with a clock of its own that never repeats a
# millisecond (k6/lib/metrics.js): pressed hard it runs ahead of the wall clock. Points
# stamped up to this long after the read-back are counted too.
AHEAD_S = 300.0


@dataclass(frozen=True)
class Store:
    """A backend that stores a scenario's units."""

    name: str  # the service: loki, prometheus
    source: str  # how the count is made, for result.json

    def query(self, run_id: str, start: float, end: float) -> str:
        """The query that counts the run's units stamped in (start, end] (end: read-back)."""
        raise NotImplementedError

    def count(
        self, prom: PrometheusAPI, loki: LokiAPI, run_id: str, start: float, end: float
    ) -> int:
        """How many of the run's units the store holds (raises QueryError)."""
        raise NotImplementedError


@dataclass(frozen=True)
class LokiStore(Store):
    name: str = "loki"
    source: str = "Loki LogQL instant query"

    def query(self, run_id: str, start: float, end: float) -> str:
        return q.logql_run_count(run_id, int(end - start) + 1)

    def count(
        self, prom: PrometheusAPI, loki: LokiAPI, run_id: str, start: float, end: float
    ) -> int:
        return loki.count_run(run_id, start, end)


@dataclass(frozen=True)
class PrometheusStore(Store):
    name: str = "prometheus"
    source: str = (
        "Prometheus PromQL instant query: one sample per gauge or sum point, the _count "
        f"sample of a histogram point, stamped up to {AHEAD_S:g} s after the read-back"
    )

    def query(self, run_id: str, start: float, end: float) -> str:
        return sq.promql_run_points(run_id, int(end + AHEAD_S - start) + 1)

    def count(
        self, prom: PrometheusAPI, loki: LokiAPI, run_id: str, start: float, end: float
    ) -> int:
        return int(prom.instant(self.query(run_id, start, end), end + AHEAD_S) or 0)


LOKI_STORE = LokiStore()
PROMETHEUS_STORE = PrometheusStore()
