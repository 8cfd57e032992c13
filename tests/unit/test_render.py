"""Config rendering: every profile field lands where the collector, Loki and Prometheus expect."""

from __future__ import annotations

import shlex
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from loadgate.stack import profile as profiles
from loadgate.stack import render
from loadgate.stack.layout import Layout
from loadgate.stack.ports import Ports

LAYOUT = Layout(Path("/run/stack"))
PORTS = Ports.from_base(20000)


def test_charm_default_collector_config() -> None:
    cfg = render.collector_config(profiles.get("charm-default"), PORTS, LAYOUT)
    otlp = cfg["receivers"]["otlp"]["protocols"]
    assert otlp["http"]["endpoint"] == "127.0.0.1:20001"
    assert otlp["grpc"]["endpoint"] == "127.0.0.1:20000"
    loki = cfg["exporters"][render.LOKI_EXPORTER]
    assert loki["endpoint"] == "https://localhost:20004/loki/api/v1/push"
    assert loki["sending_queue"] == {"enabled": True, "queue_size": 1000, "storage": "file_storage"}
    assert loki["retry_on_failure"] == {"max_elapsed_time": "5m"}
    assert loki["tls"]["ca_file"] == "/run/stack/tls/ca.crt"
    assert "insecure_skip_verify" not in loki["tls"]
    assert loki["default_labels_enabled"] == {"exporter": False, "job": True}
    assert cfg["extensions"]["file_storage"]["directory"] == "/run/stack/data/otelcol-storage"
    assert cfg["extensions"]["health_check"]["endpoint"] == "127.0.0.1:20003"
    service = cfg["service"]
    assert service["extensions"] == ["health_check", "file_storage"]
    pipeline = service["pipelines"]["logs"]
    assert pipeline["receivers"] == ["otlp"]
    assert pipeline["exporters"] == [render.LOKI_EXPORTER]
    # No batch and no memory_limiter by default, like the charm.
    assert not any(p.startswith(("batch", "memory_limiter")) for p in pipeline["processors"])
    reader = service["telemetry"]["metrics"]["readers"][0]["pull"]["exporter"]["prometheus"]
    assert reader == {"host": "127.0.0.1", "port": 20002, "without_units": True}


def test_charm_loki_hints_are_rendered() -> None:
    cfg = render.collector_config(profiles.get("charm-default"), PORTS, LAYOUT)
    resource = cfg["processors"]["resource/send-loki-logs"]["attributes"][0]
    assert resource == {"action": "insert", "key": "loki.format", "value": "raw"}
    hint = cfg["processors"]["attributes/send-loki-logs"]["actions"][0]
    assert hint["key"] == "loki.attribute.labels"


def test_queue_size_profile_and_override() -> None:
    cfg = render.collector_config(profiles.get("queue-5000"), PORTS, LAYOUT)
    assert cfg["exporters"][render.LOKI_EXPORTER]["sending_queue"]["queue_size"] == 5000
    cfg = render.collector_config(profiles.get("charm-default", queue_size=42), PORTS, LAYOUT)
    assert cfg["exporters"][render.LOKI_EXPORTER]["sending_queue"]["queue_size"] == 42


def test_processors_are_defined_and_first_in_the_pipeline_in_order() -> None:
    prof = profiles.get("batch-memory-limiter")
    cfg = render.collector_config(prof, PORTS, LAYOUT)
    assert cfg["processors"]["batch"] == {
        "timeout": "5s",
        "send_batch_size": 1024,
        "send_batch_max_size": 2048,
    }
    assert cfg["processors"]["memory_limiter"]["limit_mib"] == 1000
    procs = cfg["service"]["pipelines"]["logs"]["processors"]
    assert procs[:2] == ["memory_limiter", "batch"]


def test_queue_without_storage_and_disabled_queue() -> None:
    prof = replace(profiles.get("charm-default"), queue_storage=False)
    cfg = render.collector_config(prof, PORTS, LAYOUT)
    assert "storage" not in cfg["exporters"][render.LOKI_EXPORTER]["sending_queue"]
    assert "file_storage" not in cfg["extensions"]
    prof = replace(profiles.get("charm-default"), sending_queue=False)
    cfg = render.collector_config(prof, PORTS, LAYOUT)
    assert cfg["exporters"][render.LOKI_EXPORTER]["sending_queue"]["enabled"] is False


def test_nop_profile_has_only_the_nop_exporter() -> None:
    cfg = render.collector_config(profiles.get("nop"), PORTS, LAYOUT)
    assert cfg["exporters"] == {"nop": {}}
    assert cfg["service"]["pipelines"]["logs"]["exporters"] == ["nop"]
    assert cfg["service"]["pipelines"]["logs"]["processors"] == []


def test_unknown_profile_and_bad_queue_size_are_refused() -> None:
    with pytest.raises(ValueError, match="profile: unknown profile 'fast'; allowed: batch"):
        profiles.get("fast")
    with pytest.raises(ValueError, match="queue-size"):
        profiles.get("charm-default", queue_size=0)


def test_loki_config_serves_tls_with_the_charm_limits() -> None:
    prof = replace(profiles.get("charm-default"), loki_ingestion_rate_mb=8)
    cfg = render.loki_config(prof, PORTS, LAYOUT)
    server = cfg["server"]
    assert server["http_listen_port"] == 20004
    assert server["grpc_listen_port"] == 20005
    assert server["http_listen_address"] == "127.0.0.1"
    assert server["http_tls_config"] == {
        "cert_file": "/run/stack/tls/server.crt",
        "key_file": "/run/stack/tls/server.key",
    }
    assert cfg["limits_config"] == {"ingestion_rate_mb": 8, "ingestion_burst_size_mb": 15}
    assert cfg["common"]["storage"]["filesystem"]["chunks_directory"].startswith("/run/stack/data")
    assert cfg["analytics"]["reporting_enabled"] is False


def test_prometheus_scrapes_collector_and_loki_over_verified_tls() -> None:
    cfg = render.prometheus_config(PORTS, LAYOUT)
    assert cfg["global"]["scrape_interval"] in ("1s", "2s", "5s")
    jobs: dict[str, dict[str, Any]] = {j["job_name"]: j for j in cfg["scrape_configs"]}
    assert jobs["otelcol"]["static_configs"][0]["targets"] == ["127.0.0.1:20002"]
    loki = jobs["loki"]
    assert loki["scheme"] == "https"
    assert loki["tls_config"] == {"ca_file": "/run/stack/tls/ca.crt", "server_name": "localhost"}
    assert "insecure_skip_verify" not in loki["tls_config"]


def test_pebble_layer_services_checks_and_commands() -> None:
    layer = render.pebble_layer(Path("/cache/bin dir"), PORTS, LAYOUT)
    assert set(layer["services"]) == {"otelcol", "loki", "prometheus"}
    argv = render.service_argv(Path("/cache/bin dir"), PORTS, LAYOUT)
    for name, svc in layer["services"].items():
        assert shlex.split(svc["command"]) == argv[name]
        assert svc["startup"] == "enabled"
    prom = argv["prometheus"]
    assert "--web.enable-remote-write-receiver" in prom
    assert "--web.listen-address=127.0.0.1:20006" in prom
    assert layer["checks"]["loki-ready"]["http"]["url"] == "https://127.0.0.1:20004/ready"
    assert layer["checks"]["otelcol-ready"]["http"]["url"] == "http://127.0.0.1:20003/"


def test_charm_layer_keeps_the_charms_plan_and_adds_prometheus_and_readiness() -> None:
    services = {"otelcol": {"override": "replace", "command": "/b/otelcol --config=/c.yaml"}}
    checks = {"up": {"override": "replace", "http": {"url": "http://127.0.0.1:20003/health"}}}
    layer = render.charm_layer(services, checks, Path("/cache/bin"), PORTS, LAYOUT)
    assert layer["services"]["otelcol"] == services["otelcol"]
    assert shlex.split(layer["services"]["prometheus"]["command"])[0] == "/cache/bin/prometheus"
    assert layer["checks"]["up"] == checks["up"]
    # Loki's certificate names its in-cluster host only: Pebble checks its port.
    assert layer["checks"]["loki-ready"]["tcp"] == {"host": "127.0.0.1", "port": 20004}
    assert "http" not in layer["checks"]["loki-ready"]
    assert (
        render.prometheus_config(PORTS, LAYOUT, "loki-0.x")["scrape_configs"][1]["tls_config"][
            "server_name"
        ]
        == "loki-0.x"
    )


def test_ports_from_base_and_bounds() -> None:
    assert Ports.from_base(None) == Ports()
    assert Ports().otlp_http == 4318
    assert list(Ports.from_base(30000).to_dict().values()) == list(range(30000, 30007))
    with pytest.raises(ValueError, match="base port"):
        Ports.from_base(80)
