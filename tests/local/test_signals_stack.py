"""A stack carrying every signal: the collector's remote-write exporter reaches Prometheus and
its traces exporter reaches the traces backend stand-in over TLS verified for Tempo's name;
what each backend holds for a run is counted by the signal queries."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from loadgate.charms import signals
from loadgate.measure import signal_queries as sq
from loadgate.measure.queries import PrometheusAPI
from loadgate.stack import choice, local, standin
from loadgate.stack.charm_stack import PreparedCharms
from loadgate.stack.ports import Ports

RUN = "signals-e2e"
SPANS = 3


@pytest.fixture(scope="module")
def signals_stack(
    built_bin_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[local.StackInfo]:
    prepared = choice.request(choice.StackFlags(signals=signals.SIGNALS)).prepare()
    assert isinstance(prepared, PreparedCharms)
    root = tmp_path_factory.mktemp("signals-stack")
    info = local.up(prepared, Ports.from_base(25620), root=root, bin_dir=built_bin_dir)
    try:
        yield info
    finally:
        local.down(root)


def otlp(run: str, now: int) -> tuple[dict[str, Any], dict[str, Any]]:
    run_attr = [{"key": "run", "value": {"stringValue": run}}]
    spans = [
        {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": f"eee19b7ec3c1b17{i}",
         "name": "op", "kind": 1, "startTimeUnixNano": str(now),
         "endTimeUnixNano": str(now + 1000), "attributes": run_attr}
        for i in range(SPANS)
    ]  # fmt: skip
    point = {"asDouble": 1.0, "timeUnixNano": str(now), "attributes": run_attr}
    traces = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": spans}]}]}
    metrics = {
        "resourceMetrics": [
            {"resource": {}, "scopeMetrics": [
                {"metrics": [{"name": "loadgate_probe", "gauge": {"dataPoints": [point]}}]}
            ]}
        ]
    }  # fmt: skip
    return traces, metrics


def wait_for(read: Callable[[], float | None], want: float, seconds: float = 30.0) -> float | None:
    deadline = time.monotonic() + seconds
    value = None
    while time.monotonic() < deadline:
        value = read()
        if value == want:
            return value
        time.sleep(1)
    return value


def test_the_stack_runs_and_lists_the_standin(signals_stack: local.StackInfo) -> None:
    status = local.status(signals_stack.root)
    assert [s.name for s in status.services] == [
        "otelcol", "loki", "prometheus", standin.TRACES.service,
    ]  # fmt: skip
    assert status.healthy
    assert signals_stack.charms is not None
    assert "not Tempo" in signals_stack.charms["traces_backend"]


def test_spans_and_points_reach_their_backends(signals_stack: local.StackInfo) -> None:
    traces, metrics = otlp(RUN, time.time_ns())
    with httpx.Client(timeout=10) as client:
        assert client.post(f"{signals_stack.otlp_http_url}/v1/traces", json=traces).is_success
        assert client.post(f"{signals_stack.otlp_http_url}/v1/metrics", json=metrics).is_success
        prom = PrometheusAPI(signals_stack.prometheus_url, client)
        standin = wait_for(lambda: prom.instant(f"sum({sq.standin_spans()})"), SPANS)
        samples = wait_for(lambda: prom.instant(sq.promql_run_samples(RUN, 120)), 1)
        sent_query = sq.collector_spans(sq.EXPORTER_SENT_SPANS, exporter="otlphttp/send-traces.*")
        sent = wait_for(lambda: prom.instant(f"sum({sent_query})"), SPANS)
    assert standin == SPANS  # the stand-in accepted them: TLS to it verified
    assert sent == SPANS  # and the collector's traces exporter counts them sent
    assert samples == 1  # the run's point, remote written by the collector
