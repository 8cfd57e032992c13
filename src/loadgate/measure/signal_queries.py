"""Queries of what the metric and trace backends hold for a run. Pure, as queries.py.

- Prometheus (metrics: k6 → otelcol → remote write): how many samples and series carry the
  run's label. The label is `run` (the k6 metrics scenario sets it on every data point); k6's
  own remote-written metrics carry `run_id`, so they never match.
- Tempo (traces): TraceQL of the spans carrying the run's attribute, the parameters of a
  search (`/api/search`) and the number of spans its answer matched.
- The traces backend stand-in (no Tempo here): its own receiver counters in Prometheus (job
  `traces-standin` locally, application `traces-standin` on Juju), since it keeps nothing to
  search.

A count that could not be read is None, never 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .queries import selector

_RUN_LABEL = "run"  # the label / span attribute that names the run
# Collector self-metrics of spans and metric points (name families, as in queries.py).
_RECEIVER_ACCEPTED_SPANS = "otelcol_receiver_accepted_spans_total"
_RECEIVER_REFUSED_SPANS = "otelcol_receiver_refused_spans_total"
EXPORTER_SENT_SPANS = "otelcol_exporter_sent_spans_total"
_RECEIVER_ACCEPTED_POINTS = "otelcol_receiver_accepted_metric_points_total"
_EXPORTER_SENT_POINTS = "otelcol_exporter_sent_metric_points_total"
STANDIN_JOB = "traces-standin"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def _window(window_s: int) -> int:
    if window_s < 1:
        raise ValueError(f"window: must be at least 1 second, got {window_s}")
    return window_s


def _run_matcher(run_id: str, label: str = _RUN_LABEL) -> str:
    return f'{label}="{_escape(run_id)}"'


def promql_run_samples(run_id: str, window_s: int, label: str = _RUN_LABEL) -> str:
    """PromQL: how many samples of the run Prometheus holds over a window ending at query time
    (every series with the run's label, each sample counted once)."""
    return f"sum(count_over_time({{{_run_matcher(run_id, label)}}}[{_window(window_s)}s]))"


def promql_run_series(run_id: str, window_s: int, label: str = _RUN_LABEL) -> str:
    """PromQL: how many series carry the run's label over the window."""
    inner = f"count_over_time({{{_run_matcher(run_id, label)}}}[{_window(window_s)}s])"
    return f"count({inner})"


def standin_spans(
    metric: str = _RECEIVER_ACCEPTED_SPANS, matchers: Mapping[str, str] | None = None
) -> str:
    """The stand-in's own span counter (a selector; its increase over the run is the count,
    read as counters.py reads every counter: from raw samples, reset-aware). `matchers` pick
    the stand-in's series: its scrape job locally (the default), its Juju application on a
    model (juju_application, the label the collector charm gives its own metrics)."""
    return selector(metric, dict(matchers) if matchers else {"job": STANDIN_JOB})


def collector_spans(metric: str, job: str = "otelcol", exporter: str | None = None) -> str:
    """A span counter of the collector under test (receiver or exporter side)."""
    return selector(metric, {"job": job}, exporter)


def traceql_run(run_id: str, attribute: str = _RUN_LABEL) -> str:
    """TraceQL: the spans whose attribute names the run (span or resource scope)."""
    return f'{{ .{attribute} = "{_escape(run_id)}" }}'


def traceql_run_span_count(run_id: str, attribute: str = _RUN_LABEL) -> str:
    """TraceQL metrics (`/api/metrics/query_range`): the run's spans counted over time."""
    return f"{traceql_run(run_id, attribute)} | count_over_time()"


def tempo_search_params(
    run_id: str,
    start: float,
    end: float,
    *,
    limit: int = 100_000,
    spans_per_set: int = 1,
    attribute: str = _RUN_LABEL,
) -> dict[str, str]:
    """Parameters of Tempo's `/api/search` for the run's spans between start and end (seconds
    since the epoch; Tempo takes whole seconds, so the window is widened to cover both ends).
    `spans_per_set` only bounds the spans listed: each span set's `matched` counts them all."""
    if end < start:
        raise ValueError(f"search window: end {end} is before start {start}")
    if limit < 1 or spans_per_set < 1:
        raise ValueError("search: limit and spans_per_set must be at least 1")
    return {
        "q": traceql_run(run_id, attribute),
        "start": str(int(start)),
        "end": str(int(end) + 1),
        "limit": str(limit),
        "spss": str(spans_per_set),
    }


def spans_matched(answer: Mapping[str, Any], limit: int | None = None) -> int | None:
    """How many spans a Tempo search answer matched: the sum of `matched` over every span set
    of every trace. None when the answer has no `traces` list, or when it holds `limit`
    traces (the search may have stopped there: the count would be short)."""
    traces = answer.get("traces")
    if not isinstance(traces, list):
        return None
    if limit is not None and len(traces) >= limit:  # pyright: ignore[reportUnknownArgumentType]
        return None
    total = 0
    for trace in traces:  # pyright: ignore[reportUnknownVariableType]
        if not isinstance(trace, dict):
            return None
        sets: Any = trace.get("spanSets")  # pyright: ignore[reportUnknownMemberType]
        if sets is None:
            one: Any = trace.get("spanSet")  # pyright: ignore[reportUnknownMemberType]
            sets = [one] if one is not None else []
        for span_set in sets:
            matched = span_set.get("matched") if isinstance(span_set, dict) else None  # pyright: ignore[reportUnknownMemberType]
            if not isinstance(matched, int):
                return None
            total += matched
    return total


# Histogram points are stored as `<name>_bucket` (one per bucket), `_sum` and `_count`
# samples: only `_count` stands for the point. Gauges and sums are one sample a point.
_POINT_SAMPLES = '__name__!~".+_(sum|bucket)"'


def promql_run_points(run_id: str, window_s: int, label: str = _RUN_LABEL) -> str:
    """PromQL: how many data points of the run Prometheus holds over a window ending at query
    time: one sample per gauge or sum point, the `_count` sample of a histogram point. The
    run's series must differ by more than their name (otlp-metrics: a `series` label), or
    count_over_time, which drops the name, would find two series with one label set."""
    matchers = f"{_run_matcher(run_id, label)},{_POINT_SAMPLES}"
    return f"sum(count_over_time({{{matchers}}}[{_window(window_s)}s]))"
