"""PromQL/LogQL text and the parsing of API answers."""

from __future__ import annotations

import httpx
import pytest

from loadgate.measure import queries as q


def test_counter_and_exporter_queries() -> None:
    assert q.counter_total(q.COLLECTOR_ACCEPTED) == (
        'sum({__name__=~"otelcol_receiver_accepted_log_records(_total)?"})'
    )
    assert q.counter_total(q.LOKI_RECEIVED, {"juju_unit": "loki/0"}) == (
        'sum({__name__=~"loki_distributor_lines_received(_total)?",juju_unit="loki/0"})'
    )
    assert q.loki_exporters_only(q.COLLECTOR_EXPORTED) == (
        'sum({__name__=~"otelcol_exporter_sent_log_records(_total)?",exporter=~"loki.*"})'
    )


@pytest.mark.parametrize(
    ("metric", "exposed", "other"),
    [
        # the hand stack's reader (without_units), the charm's default reader (no suffixes),
        # and COS (the collector's own scrape, remote written)
        (q.COLLECTOR_ACCEPTED, "otelcol_receiver_accepted_log_records", "x_total"),
        (q.COLLECTOR_ACCEPTED, "otelcol_receiver_accepted_log_records_total", "x"),
        (q.COLLECTOR_RSS, "otelcol_process_memory_rss_bytes", "otelcol_process_memory"),
        (q.COLLECTOR_RSS, "otelcol_process_memory_rss", "otelcol_process_memory_rss_total"),
        (q.COLLECTOR_FILTERED, "otelcol_processor_filter_logs.filtered", "x"),
        (q.COLLECTOR_FILTERED, "otelcol_processor_filter_logs_filtered_total", "x"),
        (q.COLLECTOR_QUEUE_SIZE, "otelcol_exporter_queue_size", "otelcol_exporter_queue_capacity"),
    ],
)
def test_a_metric_matches_every_name_it_is_exposed_under(
    metric: str, exposed: str, other: str
) -> None:
    import re

    pattern = q.name_pattern(metric)
    assert re.fullmatch(pattern, exposed)
    assert not re.fullmatch(pattern, other)


def test_selectors_with_label_regexes() -> None:
    assert q.selector(q.COLLECTOR_FILTERED, filter=q.LOOP_BREAKER) == (
        '{__name__=~"otelcol_processor_filter_logs[._]filtered(_total)?",'
        'filter=~"filter/internal-telemetry-loop-breaker.*"}'
    )
    assert q.logql_job_count(q.OWN_LOGS_JOB, 30500) == (
        'sum(count_over_time({job="otelcol-internal"} [30500ms]))'
    )


def test_k6_p99_and_subqueries() -> None:
    assert q.k6_p99_seconds("r1", 70) == (
        "histogram_quantile(0.99, sum(increase(k6_http_req_duration_seconds"
        '{expected_response="true",run_id="r1"}[70s])))'
    )
    assert q.max_over("sum(x)", 30) == "max_over_time((sum(x))[30s:])"


def test_logql_counts_the_run_marker_and_escapes() -> None:
    assert q.logql_run_count("r1", 90) == (
        'sum(count_over_time({job="loadgate-k6"} |= "run=r1 " [90s]))'
    )
    assert '\\"' in q.logql_run_count('a"b', 5)


def answer(result: object, result_type: str = "vector") -> dict[str, object]:
    return {"status": "success", "data": {"resultType": result_type, "result": result}}


def instant(answered: dict[str, object]) -> float | None:
    """What PrometheusAPI.instant makes of a server answering `answered`."""
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json=answered))
    return q.PrometheusAPI("http://p", httpx.Client(transport=transport)).instant("up")


def test_scalar_of_answers() -> None:
    assert instant(answer([{"metric": {}, "value": [1, "42"]}])) == 42.0
    assert instant(answer([])) is None
    assert instant(answer([{"metric": {}, "value": [1, "NaN"]}])) is None
    assert instant(answer([1, "7"], "scalar")) == 7.0
    with pytest.raises(q.QueryError, match="expected one series"):
        instant(answer([{"value": [1, "1"]}, {"value": [1, "2"]}]))


def test_api_errors_are_query_errors() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if "bad" in str(request.url):
            return httpx.Response(400, json={"status": "error", "error": "parse error"})
        return httpx.Response(200, json=answer([{"metric": {}, "value": [1, "3"]}]))

    client = httpx.Client(transport=httpx.MockTransport(handler))
    assert q.PrometheusAPI("http://p", client).instant("up", at=10.0) == 3.0
    with pytest.raises(q.QueryError, match="HTTP 400"):
        q.PrometheusAPI("http://bad", client).instant("up")
    loki = q.LokiAPI("http://l", client)
    assert loki.count_run("r1", 0, 10) == 3
