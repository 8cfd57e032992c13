"""Pure renderers of the local stack's configuration: collector, Loki, Prometheus, Pebble layer.

The collector and Loki configs here are the hand-written profiles (profile.py), kept for the
experiments no charm option expresses (a `nop` exporter, say); a charm-rendered stack gets them
from the charms (charm_stack.py) and shares the Prometheus config and the Pebble plumbing here.
The hand collector config follows what the otelcol charm renders for a unit related to Loki: an
OTLP receiver, `loki` exporters with a persistent sending queue and retries, the charm's Loki
hint processors, health_check and file_storage extensions, self-metrics on a Prometheus reader.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import pebble_plan
from .layout import Layout
from .ports import HOST, Ports
from .profile import Profile

LOKI_EXPORTER = "loki/send-loki-logs/0"
LOKI_TLS_SERVER_NAME = "localhost"
# Log attributes the charm promotes to Loki labels (set by its loki_push_api scrape configs).
_CHARM_LOKI_ATTRIBUTE_LABELS = (
    "container, job, filename, juju_application, juju_charm, juju_model, juju_model_uuid, "
    "juju_unit, snap_name, path, pebble_service"
)
_SCRAPE_INTERVAL = "2s"


def _loki_push_url(ports: Ports) -> str:
    return f"https://{LOKI_TLS_SERVER_NAME}:{ports.loki_http}/loki/api/v1/push"


def loki_base_url(ports: Ports) -> str:
    """Where loadgate reaches Loki; its certificate is verified for the stack's Loki name
    (`localhost` by hand, the unit's in-cluster name when the charm asked for it)."""
    return f"https://{HOST}:{ports.loki_http}"


def prometheus_base_url(ports: Ports) -> str:
    return f"http://{HOST}:{ports.prometheus}"


def otlp_http_url(ports: Ports) -> str:
    return f"http://{HOST}:{ports.otlp_http}"


def collector_config(profile: Profile, ports: Ports, layout: Layout) -> dict[str, Any]:
    extensions: dict[str, Any] = {"health_check": {"endpoint": f"{HOST}:{ports.otelcol_health}"}}
    if profile.queue_storage and profile.sending_queue:
        extensions["file_storage"] = {"directory": str(layout.collector_storage)}

    processors: dict[str, Any] = {name: (cfg or {}) for name, cfg in profile.processors.items()}
    pipeline_processors = list(profile.processors)
    exporters: dict[str, Any]

    if profile.exporter == "loki":
        hints = _loki_hint_processors()
        processors.update(hints)
        pipeline_processors += list(hints)
        exporters = {LOKI_EXPORTER: _loki_exporter(profile, ports, layout)}
    elif profile.exporter == "debug":
        exporters = {"debug": {"verbosity": "basic"}}
    else:
        exporters = {"nop": {}}

    return {
        "extensions": extensions,
        "receivers": {
            "otlp": {
                "protocols": {
                    "grpc": {"endpoint": f"{HOST}:{ports.otlp_grpc}"},
                    "http": {"endpoint": f"{HOST}:{ports.otlp_http}"},
                }
            }
        },
        "processors": processors,
        "exporters": exporters,
        "service": {
            "extensions": list(extensions),
            "telemetry": _collector_telemetry(ports),
            "pipelines": {
                "logs": {
                    "receivers": ["otlp"],
                    "processors": pipeline_processors,
                    "exporters": list(exporters),
                }
            },
        },
    }


def _loki_hint_processors() -> dict[str, Any]:
    """The charm's Loki hint processors: raw log bodies, and the attributes made labels."""
    return {
        "resource/send-loki-logs": {
            "attributes": [{"action": "insert", "key": "loki.format", "value": "raw"}]
        },
        "attributes/send-loki-logs": {
            "actions": [
                {
                    "action": "upsert",
                    "key": "loki.attribute.labels",
                    "value": _CHARM_LOKI_ATTRIBUTE_LABELS,
                }
            ]
        },
    }


def _loki_exporter(profile: Profile, ports: Ports, layout: Layout) -> dict[str, Any]:
    """The `loki` exporter as the charm renders it: TLS to the stack's Loki, retries and a
    sending queue (in the file storage when the profile keeps it on disk)."""
    loki: dict[str, Any] = {
        "endpoint": _loki_push_url(ports),
        "default_labels_enabled": {"exporter": False, "job": True},
        "tls": {"ca_file": str(layout.ca_cert), "server_name_override": LOKI_TLS_SERVER_NAME},
        "retry_on_failure": {"max_elapsed_time": profile.retry_max_elapsed},
    }
    queue: dict[str, Any] = {"enabled": profile.sending_queue, "queue_size": profile.queue_size}
    if profile.queue_storage and profile.sending_queue:
        queue["storage"] = "file_storage"
    loki["sending_queue"] = queue
    return loki


def _collector_telemetry(ports: Ports) -> dict[str, Any]:
    """The collector's own logs, and its metrics on a Prometheus reader."""
    return {
        "logs": {"level": "info"},
        "metrics": {
            "level": "normal",
            "readers": [
                {
                    "pull": {
                        "exporter": {
                            "prometheus": {
                                "host": HOST,
                                "port": ports.otelcol_metrics,
                                "without_units": True,
                            }
                        }
                    }
                }
            ],
        },
    }


def loki_config(profile: Profile, ports: Ports, layout: Layout) -> dict[str, Any]:
    data = layout.loki_data
    return {
        "auth_enabled": False,
        "target": "all",
        "server": {
            "http_listen_address": HOST,
            "http_listen_port": ports.loki_http,
            "grpc_listen_address": HOST,
            "grpc_listen_port": ports.loki_grpc,
            "http_tls_config": {
                "cert_file": str(layout.server_cert),
                "key_file": str(layout.server_key),
            },
            "log_level": "warn",
        },
        "common": {
            "path_prefix": str(data),
            "replication_factor": 1,
            "instance_addr": HOST,
            "ring": {"instance_addr": HOST, "kvstore": {"store": "inmemory"}},
            "storage": {
                "filesystem": {
                    "chunks_directory": str(data / "chunks"),
                    "rules_directory": str(data / "rules"),
                }
            },
        },
        # Ready in seconds rather than tens of seconds: no settling delays, frequent ring polls.
        "ingester": {
            "lifecycler": {"min_ready_duration": "0s", "join_after": "0s", "final_sleep": "0s"},
        },
        "frontend": {"scheduler_dns_lookup_period": "1s"},
        "frontend_worker": {"dns_lookup_duration": "1s"},
        "schema_config": {
            "configs": [
                {
                    "from": "2024-01-01",
                    "store": "tsdb",
                    "object_store": "filesystem",
                    "schema": "v13",
                    "index": {"prefix": "index_", "period": "24h"},
                }
            ]
        },
        "limits_config": {
            "ingestion_rate_mb": profile.loki_ingestion_rate_mb,
            "ingestion_burst_size_mb": profile.loki_ingestion_burst_size_mb,
        },
        "compactor": {"working_directory": str(data / "compactor")},
        "analytics": {"reporting_enabled": False},
        "tracing": {"enabled": False},
    }


# The stack's Prometheus scrape job of the collector.
COLLECTOR_JOB = "otelcol"
# How far back Prometheus takes a sample older than its series' newest, when the stack carries
# metrics: the collector's remote-write exporter sends with several consumers (the charm's
# remote_write_queue), so two requests with points of one series may arrive out of order.
_OUT_OF_ORDER_WINDOW = "10m"


def prometheus_config(
    ports: Ports,
    layout: Layout,
    loki_server_name: str = LOKI_TLS_SERVER_NAME,
    *,
    out_of_order: bool = False,
) -> dict[str, Any]:
    """The stack's Prometheus: it scrapes the collector, Loki and itself; with `out_of_order`
    (a stack carrying metrics) it also takes remote-written samples up to
    OUT_OF_ORDER_WINDOW older than their series' newest."""
    config: dict[str, Any] = {
        "global": {"scrape_interval": _SCRAPE_INTERVAL, "evaluation_interval": _SCRAPE_INTERVAL},
        "scrape_configs": [
            {
                "job_name": COLLECTOR_JOB,
                "static_configs": [{"targets": [f"{HOST}:{ports.otelcol_metrics}"]}],
            },
            {
                "job_name": "loki",
                "scheme": "https",
                "tls_config": {
                    "ca_file": str(layout.ca_cert),
                    "server_name": loki_server_name,
                },
                "static_configs": [{"targets": [f"{HOST}:{ports.loki_http}"]}],
            },
            {
                "job_name": "prometheus",
                "static_configs": [{"targets": [f"{HOST}:{ports.prometheus}"]}],
            },
        ],
    }
    if out_of_order:
        config["storage"] = {"tsdb": {"out_of_order_time_window": _OUT_OF_ORDER_WINDOW}}
    return config


def service_argv(bin_dir: Path, ports: Ports, layout: Layout) -> dict[str, list[str]]:
    """The argv of each service. Pebble takes a command line, rendered from these by shlex.join."""
    return {
        "otelcol": [str(bin_dir / "otelcol"), f"--config={layout.collector_config}"],
        "loki": [str(bin_dir / "loki"), f"-config.file={layout.loki_config}"],
        "prometheus": [
            str(bin_dir / "prometheus"),
            f"--config.file={layout.prometheus_config}",
            f"--storage.tsdb.path={layout.prometheus_data}",
            f"--web.listen-address={HOST}:{ports.prometheus}",
            "--web.enable-remote-write-receiver",
            "--storage.tsdb.retention.time=7d",
            "--log.level=warn",
        ],
    }


def health_urls(ports: Ports) -> dict[str, str]:
    """Readiness endpoint of each service; Loki's is HTTPS, verified against the stack's CA."""
    return {
        "otelcol": f"http://{HOST}:{ports.otelcol_health}/",
        "loki": f"{loki_base_url(ports)}/ready",
        "prometheus": f"{prometheus_base_url(ports)}/-/ready",
    }


def _service(name: str, argv: list[str], layout: Layout) -> dict[str, Any]:
    return pebble_plan.service(f"{name} of the loadgate local stack", argv, layout.root)


def _readiness_checks(ports: Ports, *, loki_verifiable: bool = True) -> dict[str, Any]:
    """One `ready` check per service. Pebble cannot verify a certificate for another name than
    the URL's: when Loki's names only its in-cluster host, its check is a TCP one (loadgate's
    own probe verifies the certificate for that name)."""
    checks: dict[str, Any] = {}
    for name, url in health_urls(ports).items():
        probe: dict[str, Any] = {"http": {"url": url}}
        if name == "loki" and not loki_verifiable:
            probe = {"tcp": {"host": HOST, "port": ports.loki_http}}
        checks[f"{name}-ready"] = pebble_plan.ready_check(probe)
    return checks


def pebble_layer(bin_dir: Path, ports: Ports, layout: Layout) -> dict[str, Any]:
    """The hand-written stack: our three services and their readiness checks."""
    services = {
        name: _service(name, argv, layout)
        for name, argv in service_argv(bin_dir, ports, layout).items()
    }
    return pebble_plan.layer("loadgate local stack", services, _readiness_checks(ports))


def charm_layer(
    services: dict[str, Any],
    checks: dict[str, Any],
    bin_dir: Path,
    ports: Ports,
    layout: Layout,
) -> dict[str, Any]:
    """A charm-rendered stack: the collector's and Loki's services and checks as their charms
    planned them (localized), plus our Prometheus and readiness checks."""
    prometheus = service_argv(bin_dir, ports, layout)["prometheus"]
    return pebble_plan.layer(
        "loadgate local stack (charm-rendered otelcol and Loki)",
        {**services, "prometheus": _service("prometheus", prometheus, layout)},
        {**checks, **_readiness_checks(ports, loki_verifiable=False)},
    )
