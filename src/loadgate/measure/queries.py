"""PromQL and LogQL of a run, and small clients for the Prometheus and Loki HTTP APIs.

The query text is built by pure functions, shared by the local and the Juju targets; only the
base URL and TLS trust differ. Every figure a query yields carries a `source` string that names it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

# Collector self-metrics, named as a Prometheus reader with `without_units: true` exposes them
# (the hand-written stack). The collector charm's default reader also drops the `_total` suffix,
# and the same metrics reach COS through the collector's own scrape and remote write, so every
# selector matches the name family (`name_pattern`), never one spelling.
COLLECTOR_ACCEPTED = "otelcol_receiver_accepted_log_records_total"
COLLECTOR_REFUSED = "otelcol_receiver_refused_log_records_total"
COLLECTOR_EXPORTED = "otelcol_exporter_sent_log_records_total"
COLLECTOR_FAILED = "otelcol_exporter_send_failed_log_records_total"
COLLECTOR_ENQUEUE_FAILED = "otelcol_exporter_enqueue_failed_log_records_total"
COLLECTOR_QUEUE_SIZE = "otelcol_exporter_queue_size"
COLLECTOR_QUEUE_CAPACITY = "otelcol_exporter_queue_capacity"
# The memory_limiter processor's counters (processorhelper's obsreport, per `processor`).
PROCESSOR_ACCEPTED = "otelcol_processor_accepted_log_records_total"
PROCESSOR_REFUSED = "otelcol_processor_refused_log_records_total"
MEMORY_LIMITER = "memory_limiter.*"
COLLECTOR_CPU = "otelcol_process_cpu_seconds_total"
COLLECTOR_RSS = "otelcol_process_memory_rss"
COLLECTOR_UPTIME = "otelcol_process_uptime_total"
# The filter processor's dropped records (`otelcol_processor_filter_logs.filtered` under
# Prometheus 3's UTF-8 names): the otelcol charm's internal-telemetry loop breaker drops the
# collector's own logs about its Loki exporter with it.
COLLECTOR_FILTERED = "otelcol_processor_filter_logs_filtered_total"
LOOP_BREAKER = "filter/internal-telemetry-loop-breaker.*"
# Loki's own metrics.
LOKI_RECEIVED = "loki_distributor_lines_received_total"
LOKI_DISCARDED = "loki_discarded_samples_total"
LOKI_BUILD_INFO = "loki_build_info"
_LOKI_REQUEST_DURATION = "loki_request_duration_seconds_bucket"  # classic histogram, per route
_LOKI_PUSH_ROUTE = "loki_api_v1_push"
PROCESS_START = "process_start_time_seconds"  # Go client's process collector (Loki)
# k6 remote write (native histogram of http_req_duration, in seconds).
_K6_DURATION = "k6_http_req_duration_seconds"
# The collector's own logs in Loki (the charm's internal-telemetry loop): job is its
# `service.name`.
OWN_LOGS_JOB = "otelcol-internal"

_NAME_FAMILIES = {
    COLLECTOR_RSS: "otelcol_process_memory_rss(_bytes)?",
    COLLECTOR_FILTERED: "otelcol_processor_filter_logs[._]filtered(_total)?",
}


def name_pattern(metric: str) -> str:
    """A regex of every name the metric is exposed under (see the constants above)."""
    if metric in _NAME_FAMILIES:
        return _NAME_FAMILIES[metric]
    if metric.endswith("_total"):
        return metric.removesuffix("_total") + "(_total)?"
    return metric


def _selector(matchers: Mapping[str, str]) -> str:
    if not matchers:
        return ""
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(matchers.items()))
    return "{" + inner + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def selector(
    metric: str,
    matchers: Mapping[str, str] | None = None,
    exporter: str | None = None,
    **regex: str,
) -> str:
    """A series selector: the metric's name family, label matchers, optionally an `exporter`
    regex and other label regexes."""
    parts = [f'__name__=~"{_escape(name_pattern(metric))}"']
    parts += [f'{k}="{_escape(v)}"' for k, v in sorted((matchers or {}).items())]
    if exporter is not None:
        parts.append(f'exporter=~"{_escape(exporter)}"')
    parts += [f'{k}=~"{_escape(v)}"' for k, v in sorted(regex.items())]
    return "{" + ",".join(parts) + "}"


def counter_total(metric: str, matchers: Mapping[str, str] | None = None) -> str:
    """Sum of a metric over all its series (a live reading)."""
    return f"sum({selector(metric, matchers)})"


def loki_exporters_only(
    metric: str, matchers: Mapping[str, str] | None = None, exporter: str = "loki.*"
) -> str:
    """A collector exporter metric restricted to its Loki exporters (`exporter`: a regex)."""
    return f"sum({selector(metric, matchers, exporter)})"


def max_over(expr: str, window_s: int) -> str:
    return f"max_over_time(({expr})[{window_s}s:])"


def avg_over(expr: str, window_s: int) -> str:
    return f"avg_over_time(({expr})[{window_s}s:])"


def cpu_cores(matchers: Mapping[str, str] | None = None, rate_window: str = "10s") -> str:
    return f"sum(rate({selector(COLLECTOR_CPU, matchers)}[{rate_window}]))"


def loki_push_p99_seconds(window_s: int, matchers: Mapping[str, str] | None = None) -> str:
    """p99 of Loki's push requests over the window, from its request-duration histogram."""
    sel = selector(_LOKI_REQUEST_DURATION, {**(matchers or {}), "route": _LOKI_PUSH_ROUTE})
    return f"histogram_quantile(0.99, sum by (le) (increase({sel}[{window_s}s])))"


def k6_p99_seconds(run_id: str, window_s: int) -> str:
    """p99 of the accepted requests' durations across every k6 process of the run, from native
    histograms (k6 tags a 2xx response `expected_response="true"`: k6/lib/send.js)."""
    sel = _selector({"run_id": run_id, "expected_response": "true"})
    return f"histogram_quantile(0.99, sum(increase({_K6_DURATION}{sel}[{window_s}s])))"


def run_marker(run_id: str) -> str:
    """Text every log body of the run starts with (see k6/lib/payload.js)."""
    return f"run={run_id} "


def logql_run_count(run_id: str, window_s: int, job: str = "loadgate-k6") -> str:
    """LogQL: how many of the run's records Loki holds, over a window ending at query time."""
    marker = _escape(run_marker(run_id))
    return f'sum(count_over_time({{job="{job}"}} |= "{marker}" [{window_s}s]))'


# Every stream Loki holds: Loki 3 gives each stream a `service_name` label (its
# discover_service_name limit, on by default and not changed by the Loki charm).
_ALL_STREAMS = 'service_name=~".+"'


def logql_other_count(run_id: str, window_ms: int) -> str:
    """LogQL: how many lines Loki holds over a window ending at query time that are neither the
    run's (its marker) nor the collector's own (job otelcol-internal): other traffic."""
    marker = _escape(run_marker(run_id))
    streams = f'{{{_ALL_STREAMS}, job!="{_escape(OWN_LOGS_JOB)}"}}'
    return f'sum(count_over_time({streams} != "{marker}" [{window_ms}ms]))'


def logql_run_count_ms(run_id: str, window_ms: int, job: str = "loadgate-k6") -> str:
    """LogQL: the run's records Loki holds stamped in a window (ms) ending at query time."""
    marker = _escape(run_marker(run_id))
    return f'sum(count_over_time({{job="{job}"}} |= "{marker}" [{window_ms}ms]))'


def logql_job_count(job: str, window_ms: int) -> str:
    """LogQL: how many lines of one `job` Loki holds, over a window ending at query time."""
    return f'sum(count_over_time({{job="{_escape(job)}"}} [{window_ms}ms]))'


class QueryError(RuntimeError):
    """An API answered with an error or could not be reached."""


class UnreachableError(QueryError):
    """The API did not answer at all (connection refused, timeout)."""


@dataclass(frozen=True)
class Series:
    """One series of a query answer: its labels and its samples (time in seconds, value)."""

    labels: dict[str, str]
    samples: list[tuple[float, float]] = field(default_factory=list[tuple[float, float]])

    @property
    def key(self) -> tuple[tuple[str, str], ...]:
        """Identity of the series: every label but the metric name."""
        return tuple(sorted((k, v) for k, v in self.labels.items() if k != "__name__"))

    @property
    def target(self) -> tuple[str, str]:
        """The scrape target the series came from."""
        return self.labels.get("job", ""), self.labels.get("instance", "")


def to_ms(t: float) -> int:
    return round(t * 1000)


# A raw-sample query covers at most this much time; longer windows are asked in pieces.
_MAX_WINDOW_MS = 3600 * 1000


@dataclass
class PrometheusAPI:
    base_url: str
    client: httpx.Client

    def instant(self, query: str, at: float | None = None) -> float | None:
        """The scalar value of an instant query (None when the result is empty)."""
        params: dict[str, Any] = {"query": query}
        if at is not None:
            params["time"] = f"{at:.3f}"
        data = _get_json(self.client, f"{self.base_url}/api/v1/query", params)
        return _scalar_of(data)

    def _vector(self, query: str, at: float | None = None) -> list[Series]:
        """Every series of an instant query, each with its one sample."""
        params: dict[str, Any] = {"query": query}
        if at is not None:
            params["time"] = f"{at:.3f}"
        data = _get_json(self.client, f"{self.base_url}/api/v1/query", params)
        return _series_of(data)

    def range(self, query: str, start: float, end: float, step_s: float) -> list[Series]:
        """Every series of a range query (`/api/v1/query_range`): the query evaluated every
        `step_s` seconds from `start` to `end` (seconds since the epoch)."""
        params = {
            "query": query,
            "start": f"{start:.3f}",
            "end": f"{end:.3f}",
            "step": f"{step_s:g}",
        }
        data = _get_json(self.client, f"{self.base_url}/api/v1/query_range", params)
        return _series_of(data)

    def samples(self, sel: str, start_ms: int, end_ms: int) -> list[Series]:
        """The raw samples of every series of `sel` in (start, end], times in milliseconds.

        Range selectors are left-open (Prometheus 3), so consecutive windows never share or
        miss a sample. Long windows are asked in pieces and joined."""
        by_key: dict[tuple[tuple[str, str], ...], Series] = {}
        lo = start_ms
        while lo < end_ms:
            hi = min(end_ms, lo + _MAX_WINDOW_MS)
            params = {"query": f"{sel}[{hi - lo}ms]", "time": f"{hi / 1000:.3f}"}
            data = _get_json(self.client, f"{self.base_url}/api/v1/query", params)
            for s in _series_of(data):
                found = by_key.setdefault(s.key, Series(s.labels))
                found.samples.extend(s.samples)
            lo = hi
        return list(by_key.values())


@dataclass
class LokiAPI:
    base_url: str
    client: httpx.Client

    def instant(self, query: str, at: float) -> float | None:
        params = {"query": query, "time": str(int(at * 1e9))}
        data = _get_json(self.client, f"{self.base_url}/loki/api/v1/query", params)
        return _scalar_of(data)

    def count_run(self, run_id: str, start: float, end: float, job: str = "loadgate-k6") -> int:
        window = max(1, int(end - start) + 1)
        value = self.instant(logql_run_count(run_id, window, job), at=end)
        return int(value or 0)


def _get_json(client: httpx.Client, url: str, params: Mapping[str, Any]) -> dict[str, Any]:
    try:
        resp = client.get(url, params=params)
    except (httpx.ConnectError, httpx.TimeoutException) as exc:
        raise UnreachableError(f"{url}: {type(exc).__name__}: {exc}") from exc
    except httpx.HTTPError as exc:
        raise QueryError(f"{url}: {type(exc).__name__}: {exc}") from exc
    if resp.status_code != 200:
        raise QueryError(f"{url} answered HTTP {resp.status_code}: {resp.text[:300]}")
    data = resp.json()
    if data.get("status") != "success":
        raise QueryError(f"{url}: {data.get('errorType')}: {data.get('error')}")
    return data


def _scalar_of(answer: Mapping[str, Any]) -> float | None:
    """The single value of an instant-query answer (vector of one sample, or scalar)."""
    data = answer.get("data") or {}
    result = data.get("result")
    if data.get("resultType") == "scalar" and isinstance(result, list):
        return float(result[1])
    if not result:
        return None
    if len(result) != 1:
        raise QueryError(f"expected one series, got {len(result)}")
    value = float(result[0]["value"][1])
    return None if value != value else value  # NaN: no data in the window


def _series_of(answer: Mapping[str, Any]) -> list[Series]:
    """The series of a vector or matrix answer; NaN samples (no data) are left out."""
    data = answer.get("data") or {}
    out: list[Series] = []
    for item in data.get("result") or []:
        labels = {str(k): str(v) for k, v in (item.get("metric") or {}).items()}
        raw = item.get("values") or ([item["value"]] if "value" in item else [])
        samples = [(float(t), float(v)) for t, v in raw]
        out.append(Series(labels, [(t, v) for t, v in samples if not math.isnan(v)]))
    return out
