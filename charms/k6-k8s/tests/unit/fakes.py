"""Fakes for the charm's ops.testing tests: a container whose files persist, relations, runs."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ops import pebble, testing

from charm import K6Charm

CHARM_DIR = Path(__file__).resolve().parents[2]
APP = "k6"  # the application name in the bundle (the charm is loadgate-k6-k8s)
OTLP_HTTP = "http://otelcol-0.otelcol-endpoints.m.svc.cluster.local:4318"
PROM_RW = "http://prometheus-0.prometheus-endpoints.cos.svc.cluster.local:9090/api/v1/write"
PEM_A = "-----BEGIN CERTIFICATE-----\nMIIBAAAA\n-----END CERTIFICATE-----"
PEM_B = "-----BEGIN CERTIFICATE-----\nMIIBBBBB\n-----END CERTIFICATE-----"
RUNS = "/var/lib/k6/runs"


def context(
    tmp_path: Path, *, unit_id: int = 0, scripts: bool = True, dashboards: bool = True
) -> testing.Context[K6Charm]:
    """A Context for unit `k6/<unit_id>` whose charm directory holds the charm's src/k6 scenarios
    and src/grafana_dashboards (as the packed charm does) and nothing else of ours; without the
    scenarios when `scripts` is False, without the dashboards when `dashboards` is False.
    """
    root = tmp_path / f"charm-root-{unit_id}"
    (root / "src").mkdir(parents=True, exist_ok=True)
    for folder, wanted in (("k6", scripts), ("grafana_dashboards", dashboards)):
        if wanted and not (root / "src" / folder).exists():
            (root / "src" / folder).symlink_to(CHARM_DIR / "src" / folder)
    return testing.Context(K6Charm, charm_root=root, app_name=APP, unit_id=unit_id)


def container(
    disk: Path,
    *,
    can_connect: bool = True,
    service: pebble.ServiceStatus | None = None,
    **kwargs: Any,
) -> testing.Container:
    """The k6 container; with `service`, the plan already holds the k6 service in that state."""
    layers: dict[str, pebble.Layer] = {}
    statuses: dict[str, pebble.ServiceStatus] = {}
    if service is not None:
        layers["k6"] = pebble.Layer(
            {
                "services": {
                    "k6": {
                        "override": "replace",
                        "command": "/usr/bin/k6 run /etc/k6/scripts/otlp-logs.js",
                        "startup": "disabled",
                    }
                }
            }
        )
        statuses["k6"] = service
    return testing.Container(
        "k6",
        can_connect=can_connect,
        layers=layers,
        service_statuses=statuses,
        mounts={
            "runs": testing.Mount(location="/var/lib/k6", source=disk / "var-lib-k6"),
            "etc": testing.Mount(location="/etc/k6", source=disk / "etc-k6"),
        },
        **kwargs,
    )


def otlp_relation(endpoints: list[dict[str, Any]] | None = None) -> testing.Relation:
    """send-otlp with the app databag otelcol's receive-otlp publishes."""
    if endpoints is None:
        endpoints = [
            {
                "protocol": "http",
                "endpoint": OTLP_HTTP,
                "telemetries": ["logs", "metrics", "traces"],
                "insecure": True,
            },
            {
                "protocol": "grpc",
                "endpoint": "otelcol-0.otelcol-endpoints.m.svc.cluster.local:4317",
                "telemetries": ["logs", "metrics", "traces"],
                "insecure": True,
            },
        ]
    return testing.Relation(
        "send-otlp", remote_app_name="otelcol", remote_app_data={"endpoints": json.dumps(endpoints)}
    )


def remote_write_relation(*urls: str) -> testing.Relation:
    return testing.Relation(
        "send-remote-write",
        remote_app_name="prometheus",
        remote_units_data={
            i: {"remote_write": json.dumps({"url": url})} for i, url in enumerate(urls)
        },
    )


def ca_relation(*pems: str) -> testing.Relation:
    return testing.Relation(
        "receive-ca-cert",
        remote_app_name="ssc",
        remote_app_data={"certificates": json.dumps(list(pems)), "version": "1"},
    )


def summary(
    *,
    requests: int = 1200,
    failed: int = 0,
    p99_ms: float = 12.5,
    duration_s: float = 60.0,
    logs_per_request: int = 5,
    counts: Mapping[int, int] | None = None,
    thresholds_ok: bool = True,
) -> dict[str, Any]:
    """A summary in the scenario's format (k6/lib/summary.js)."""
    accepted = (requests - failed) * logs_per_request
    return {
        "format": "loadgate-k6-summary/1",
        "run_id": "r",
        "instance": "k6",
        "duration_s": duration_s,
        "requests": requests,
        "failed": failed,
        "error_rate": failed / requests if requests else 0,
        "p99_ms": p99_ms,
        "records_sent": requests * logs_per_request,
        "records_accepted": accepted,
        "records_per_minute": accepted * 60 / duration_s,
        "dropped_iterations": 0,
        "thresholds": {
            "http_req_duration{p(99)<100}": {
                "metric": "http_req_duration",
                "expression": "p(99)<100",
                "ok": thresholds_ok,
            },
            "errors{rate<=0.01}": {"metric": "errors", "expression": "rate<=0.01", "ok": True},
        },
        "latency_histogram": {
            "base_ms": 0.05,
            "per_octave": 8,
            "counts": {str(b): n for b, n in (counts or {60: requests}).items()},
        },
    }


def write_run(
    disk: Path,
    run_id: str,
    *,
    params: Mapping[str, Any] | None = None,
    summary_data: Mapping[str, Any] | None = None,
    log: str | None = None,
    segment: tuple[int, int] = (0, 1),
    stopped: bool = False,
    last: bool = True,
) -> Path:
    """A run as the workload leaves it in the container: run.json, summary, k6 log."""
    folder = disk / "var-lib-k6" / "runs" / run_id
    folder.mkdir(parents=True)
    record = {
        "run_id": run_id,
        "params": {
            "run-id": run_id,
            "duration": "60s",
            "rate": 6000,
            "target": OTLP_HTTP,
            **(params or {}),
        },
        "segment": list(segment),
        "instance": "k6-0",
        "started": 1_700_000_000.0,
        "stopped": stopped,
        "status": None,
        "finished": None,
        "detail": "",
    }
    (folder / "run.json").write_text(json.dumps(record))
    if summary_data is not None:
        (folder / "summary.json").write_text(json.dumps(summary_data))
    if log is not None:
        (folder / "k6.log").write_text(log)
    if last:
        (disk / "var-lib-k6" / "runs" / "last").write_text(run_id)
    return folder


def run_record(disk: Path, run_id: str) -> dict[str, Any]:
    return json.loads((disk / "var-lib-k6" / "runs" / run_id / "run.json").read_text())
