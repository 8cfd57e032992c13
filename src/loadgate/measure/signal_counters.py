"""The collector's self-metrics of one signal: what its receiver accepted and refused, what its
exporter sent and failed, for log records, metric points or spans. A Scope (pipeline.py) reads the
signal its scenario sends (measure/scenarios.py).

Names as a Prometheus reader with `without_units: true` exposes them; selectors match the
name family (queries.name_pattern), so the `_total`-less spelling of the charm's reader matches
too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from . import queries as q

# Metric points (receiver / exporter / memory limiter): the same families as log records'.
_POINTS_ACCEPTED = "otelcol_receiver_accepted_metric_points_total"
_POINTS_REFUSED = "otelcol_receiver_refused_metric_points_total"
_POINTS_SENT = "otelcol_exporter_sent_metric_points_total"
_POINTS_FAILED = "otelcol_exporter_send_failed_metric_points_total"
_POINTS_ENQUEUE_FAILED = "otelcol_exporter_enqueue_failed_metric_points_total"
_PROCESSOR_POINTS_ACCEPTED = "otelcol_processor_accepted_metric_points_total"
_PROCESSOR_POINTS_REFUSED = "otelcol_processor_refused_metric_points_total"
# Spans: the same families again.
SPANS_ACCEPTED = "otelcol_receiver_accepted_spans_total"
_SPANS_REFUSED = "otelcol_receiver_refused_spans_total"
_SPANS_SENT = "otelcol_exporter_sent_spans_total"
_SPANS_FAILED = "otelcol_exporter_send_failed_spans_total"
_SPANS_ENQUEUE_FAILED = "otelcol_exporter_enqueue_failed_spans_total"
_PROCESSOR_SPANS_ACCEPTED = "otelcol_processor_accepted_spans_total"
_PROCESSOR_SPANS_REFUSED = "otelcol_processor_refused_spans_total"
# The receivers the load enters by (the OTLP receiver; the charm names it otlp/<unit>).
_OTLP_RECEIVERS = "otlp.*"


@dataclass(frozen=True)
class SignalCounters:
    """The collector's counters of one signal.

    `receiver`: a regex of the receivers whose counts are the load's (None: every receiver,
    as for logs, where the collector's own logs enter by the OTLP receiver too and are taken
    out by counting them in Loki). `scraped`: the collector also scrapes itself into the same
    pipeline (its metrics): what its other receivers accept is counted apart (the figure
    `collector_scraped`) and leaves by the same exporter. `loop_breaker`: the collector's own
    log records its internal-telemetry filter drops are counted (`collector_own_filtered`)."""

    name: str  # the pipeline's signal: logs, metrics, traces
    unit: str  # what its counters count, for reasons: "log records", "metric points", "spans"
    accepted: str
    refused: str
    exported: str
    failed: str
    enqueue_failed: str
    processor_accepted: str
    processor_refused: str
    receiver: str | None = None
    scraped: bool = False
    loop_breaker: bool = False

    def receiver_matchers(self) -> dict[str, str]:
        """Regex matchers of the receivers the load enters by (none: every receiver)."""
        return {} if self.receiver is None else {"receiver": self.receiver}

    def other_receivers(self, matchers: Mapping[str, str] | None = None) -> str:
        """A selector of what the collector's other receivers accepted (its own scrape)."""
        assert self.receiver is not None, self.name
        inner = q.selector(self.accepted, matchers)[1:-1]
        return f'{{{inner},receiver!~"{self.receiver}"}}'


LOGS = SignalCounters(
    name="logs",
    unit="log records",
    accepted=q.COLLECTOR_ACCEPTED,
    refused=q.COLLECTOR_REFUSED,
    exported=q.COLLECTOR_EXPORTED,
    failed=q.COLLECTOR_FAILED,
    enqueue_failed=q.COLLECTOR_ENQUEUE_FAILED,
    processor_accepted=q.PROCESSOR_ACCEPTED,
    processor_refused=q.PROCESSOR_REFUSED,
    loop_breaker=True,
)
METRICS = SignalCounters(
    name="metrics",
    unit="metric points",
    accepted=_POINTS_ACCEPTED,
    refused=_POINTS_REFUSED,
    exported=_POINTS_SENT,
    failed=_POINTS_FAILED,
    enqueue_failed=_POINTS_ENQUEUE_FAILED,
    processor_accepted=_PROCESSOR_POINTS_ACCEPTED,
    processor_refused=_PROCESSOR_POINTS_REFUSED,
    receiver=_OTLP_RECEIVERS,
    scraped=True,
)
# The traces pipeline: only the OTLP receiver feeds it (the charm renders no other there).
TRACES = SignalCounters(
    name="traces",
    unit="spans",
    accepted=SPANS_ACCEPTED,
    refused=_SPANS_REFUSED,
    exported=_SPANS_SENT,
    failed=_SPANS_FAILED,
    enqueue_failed=_SPANS_ENQUEUE_FAILED,
    processor_accepted=_PROCESSOR_SPANS_ACCEPTED,
    processor_refused=_PROCESSOR_SPANS_REFUSED,
    receiver=_OTLP_RECEIVERS,
)
