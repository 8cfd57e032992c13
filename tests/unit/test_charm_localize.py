"""Localizing what the charms rendered: every change reported, nothing dropped silently.

The inputs in tests/data/rendered/ were written by the real charms (otelcol rev221, Loki rev244)
through `loadgate charms render`; tests/charms checks that a fresh render still equals them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from loadgate.stack import localize
from loadgate.stack.ports import Ports

DATA = Path(__file__).resolve().parents[1] / "data" / "rendered"
LOKI_FQDN = "loki-0.loki-endpoints.loadgate.svc.cluster.local"
CA_CONTAINER = "/usr/local/share/ca-certificates/juju_receive-ca-cert/0.crt"
BUILD = frozenset(
    {"otlp", "prometheus", "loki", "nop", "debug", "filter", "resource", "attributes", "batch",
     "memory_limiter", "file_storage", "health_check"}
)  # fmt: skip


def strings(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [s for v in node.values() for s in strings(v)]
    if isinstance(node, list):
        return [s for v in node for s in strings(v)]
    return [node] if isinstance(node, str) else []


def load(name: str) -> dict[str, Any]:
    return yaml.safe_load((DATA / name).read_text())


@pytest.fixture
def where(tmp_path: Path) -> localize.OtelcolLocal:
    return localize.OtelcolLocal(
        ports=Ports.from_base(30000),
        storage_dir=tmp_path / "storage",
        ca_file=tmp_path / "ca.crt",
        files={CA_CONTAINER: tmp_path / "ca.crt"},
        available=BUILD,
    )


def test_collector_listens_on_loopback_stack_ports(where: localize.OtelcolLocal) -> None:
    out = localize.otelcol(load("otelcol-rev221-config.yaml"), where)
    otlp = out.config["receivers"]["otlp/otelcol/0"]["protocols"]
    assert otlp["grpc"]["endpoint"] == "127.0.0.1:30000"
    assert otlp["http"]["endpoint"] == "127.0.0.1:30001"
    assert out.config["extensions"]["health_check"]["endpoint"] == "127.0.0.1:30003"
    scrape = out.config["receivers"]["prometheus/self-monitoring/otelcol/0"]["config"]
    assert scrape["scrape_configs"][0]["static_configs"][0]["targets"] == ["127.0.0.1:30002"]
    # The internal-telemetry loop still goes into the collector's own OTLP receiver.
    batch = out.config["service"]["telemetry"]["logs"]["processors"][0]["batch"]
    assert batch["exporter"]["otlp"]["endpoint"] == "http://127.0.0.1:30001"
    text = yaml.safe_dump(out.config)
    assert "0.0.0.0" not in text  # noqa: S104
    assert "localhost" not in text


def test_loki_exporter_goes_to_the_local_loki_verifying_its_certificate_name(
    where: localize.OtelcolLocal,
) -> None:
    out = localize.otelcol(load("otelcol-rev221-config.yaml"), where)
    loki = out.config["exporters"]["loki/send-loki-logs/0"]
    assert loki["endpoint"] == "https://127.0.0.1:30004/loki/api/v1/push"
    assert loki["tls"]["server_name_override"] == LOKI_FQDN
    assert loki["tls"]["ca_file"] == str(where.ca_file)
    assert loki["tls"]["insecure_skip_verify"] is False
    # The charm's queue and retries are untouched.
    assert loki["sending_queue"] == {"enabled": True, "queue_size": 1000, "storage": "file_storage"}
    assert loki["retry_on_failure"] == {"max_elapsed_time": "5m"}


def test_storage_and_metrics_reader(where: localize.OtelcolLocal) -> None:
    out = localize.otelcol(load("otelcol-rev221-config.yaml"), where)
    assert out.config["extensions"]["file_storage"]["directory"] == str(where.storage_dir)
    readers = out.config["service"]["telemetry"]["metrics"]["readers"]
    prom = readers[0]["pull"]["exporter"]["prometheus"]
    assert (prom["host"], prom["port"]) == ("127.0.0.1", 30002)
    assert prom["without_type_suffix"] is True
    assert prom["without_units"] is True
    assert prom["without_scope_info"] is True


def test_every_change_is_reported(where: localize.OtelcolLocal) -> None:
    rendered = load("otelcol-rev221-config.yaml")
    out = localize.otelcol(rendered, where)
    reported = {c.where for c in out.changes}
    assert "exporters.loki/send-loki-logs/0.endpoint" in reported
    assert "receivers.otlp/otelcol/0.protocols.http.endpoint" in reported
    assert "extensions.file_storage.directory" in reported
    assert "service.telemetry.metrics.readers" in reported
    assert all(c.why for c in out.changes)
    assert out.missing == []
    # Nothing else changed: components and pipelines are the charm's.
    for kind in localize.KINDS:
        assert set(out.config.get(kind) or {}) == set(rendered.get(kind) or {})
    assert out.config["service"]["pipelines"] == rendered["service"]["pipelines"]
    assert out.config["processors"] == rendered["processors"]


def test_missing_components_are_removed_and_named(where: localize.OtelcolLocal) -> None:
    rendered = load("otelcol-rev221-config.yaml")
    rendered["receivers"]["loki/receive-loki-logs/otelcol/0"] = {
        "protocols": {"http": {"endpoint": "0.0.0.0:3500"}}
    }
    rendered["service"]["pipelines"]["logs/otelcol/0"]["receivers"].append(
        "loki/receive-loki-logs/otelcol/0"
    )
    no_prometheus = localize.OtelcolLocal(
        where.ports, where.storage_dir, where.ca_file, where.files, BUILD - {"loki", "prometheus"}
    )
    out = localize.otelcol(rendered, no_prometheus)
    assert sorted(out.missing) == [
        "loki/receive-loki-logs/otelcol/0",
        "loki/send-loki-logs/0",
        "prometheus/self-monitoring/otelcol/0",
    ]
    # The logs pipeline lost its only exporter: it is removed too, and said so.
    assert "logs/otelcol/0" not in out.config["service"]["pipelines"]
    assert any(c.where == "service.pipelines.logs/otelcol/0" for c in out.changes)
    assert out.config["service"]["pipelines"]["metrics/otelcol/0"]["receivers"] == [
        "otlp/otelcol/0"
    ]


def test_loki_runs_from_the_stack_folders(tmp_path: Path) -> None:
    files = {
        "/etc/loki/certs/loki.cert.pem": tmp_path / "loki.cert.pem",
        "/etc/loki/certs/loki.key.pem": tmp_path / "loki.key.pem",
    }
    where = localize.LokiLocal(Ports.from_base(30000), tmp_path / "data", files)
    rendered = load("loki-rev244-config.yaml")
    out = localize.loki(rendered, where)
    cfg = out.config
    server = cfg["server"]
    assert (server["http_listen_address"], server["http_listen_port"]) == ("127.0.0.1", 30004)
    assert (server["grpc_listen_address"], server["grpc_listen_port"]) == ("127.0.0.1", 30005)
    assert server["http_tls_config"]["cert_file"] == str(tmp_path / "loki.cert.pem")
    assert cfg["common"]["path_prefix"] == str(tmp_path / "data")
    assert cfg["ingester"]["wal"]["dir"] == str(tmp_path / "data" / "chunks" / "wal")
    assert cfg["common"]["ring"]["instance_addr"] == "127.0.0.1"
    assert not [v for v in strings(cfg) if v.startswith(("/loki", "/etc/loki"))]
    # The charm's limits and schema stay.
    assert cfg["limits_config"] == rendered["limits_config"]
    assert cfg["schema_config"] == rendered["schema_config"]
    startup = [c for c in out.changes if c.why.startswith("startup only")]
    assert {c.where for c in startup} >= {"ingester.lifecycler.min_ready_duration"}


def test_plan_runs_the_local_binary_with_local_files(tmp_path: Path) -> None:
    planned = load("otelcol-plan.yaml")
    config = tmp_path / "otelcol.yaml"
    binary = tmp_path / "bin" / "otelcol"
    layer, changes = localize.plan(
        planned, "otelcol", binary, {"/etc/otelcol/config.yaml": config}, Ports.from_base(30000),
        tmp_path,
    )  # fmt: skip
    svc = layer["services"]["otelcol"]
    assert svc["command"] == f"{binary} --config={config}"
    assert svc["environment"] == planned["services"]["otelcol"]["environment"]
    assert layer["checks"]["up"]["http"]["url"] == "http://127.0.0.1:30003/health"
    assert (
        layer["checks"]["valid-config"]["exec"]["command"] == f"{binary} validate --config={config}"
    )
    assert {c.where for c in changes} >= {"services.otelcol.command", "checks.up"}
