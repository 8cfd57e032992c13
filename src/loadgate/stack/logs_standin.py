"""A second collector standing in for Loki (the charm load-test journey's "Loki stand-in"):
its config, service and scrape job (pure), `add`, which puts it into a stack being written, and
`read_counts`, which asks it what it received. The stack runs it when a hand change asks for
`exporter=standin` (stack/hand.py).

It is the pinned otelcol build with an OTLP/HTTP receiver serving TLS (a certificate of the
stack's CA for STANDIN_NAME, which the collector under test verifies), a filter that drops the
collector's own log records (its internal-telemetry loop, `service.name: otelcol-internal`) and
a `nop` exporter: it keeps nothing. Prometheus scrapes it as job `loki-standin` with its metric
names prefixed (`loadgate_standin_otelcol_...`), so no query of the collector under test ever
sums the stand-in's counters with its own. What it received of a run is its receiver's accepted
records less those its filter dropped.

Ports: 4428 (OTLP/HTTP), 8890 (metrics), 13135 (health) beside the standard ports; base+10 ..
base+12 with --base-port (after the traces stand-in's base+7 .. base+9).
"""

from __future__ import annotations

import shlex
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx

from . import tls as tls_material
from .layout import Layout
from .ports import HOST, Ports

SERVICE = "loki-standin"
JOB = "loki-standin"
STANDIN_NAME = "loki-standin.loadgate.svc.cluster.local"
METRIC_PREFIX = "loadgate_standin_"
ROLE = "Loki stand-in (a second otelcol: otlp receiver, nop exporter; keeps nothing)"
OWN_FILTER = "filter/collector-own-logs"
# The run's records the stand-in received: its receiver's accepted less its filter's drops.
RECEIVED = f"{METRIC_PREFIX}otelcol_receiver_accepted_log_records(_total)?"
OWN_DROPPED = f"{METRIC_PREFIX}otelcol_processor_filter_logs[._]filtered(_total)?"
OFFSET = 10  # after the stack's seven ports and the traces stand-in's three


@dataclass(frozen=True)
class StandinPorts:
    otlp_http: int = 4428
    metrics: int = 8890
    health: int = 13135

    @classmethod
    def for_ports(cls, ports: Ports) -> StandinPorts:
        if ports == Ports():
            return cls()
        base = ports.otlp_grpc + OFFSET
        if base + 2 > 65535:
            raise ValueError(f"base port: the Loki stand-in needs ports up to {base + 2}")
        return cls(base, base + 1, base + 2)

    def items(self) -> list[tuple[str, int]]:
        return [(f"loki_standin_{k}", v) for k, v in asdict(self).items()]


def otlp_url(ports: StandinPorts) -> str:
    return f"https://{HOST}:{ports.otlp_http}"


def health_url(ports: StandinPorts) -> str:
    return f"http://{HOST}:{ports.health}/"


def config(ports: StandinPorts, cert_file: Path, key_file: Path) -> dict[str, Any]:
    reader = {
        "pull": {
            "exporter": {"prometheus": {"host": HOST, "port": ports.metrics, "without_units": True}}
        }
    }
    own = 'resource.attributes["service.name"] == "otelcol-internal"'
    return {
        "extensions": {"health_check": {"endpoint": f"{HOST}:{ports.health}"}},
        "receivers": {
            "otlp": {
                "protocols": {
                    "http": {
                        "endpoint": f"{HOST}:{ports.otlp_http}",
                        "tls": {"cert_file": str(cert_file), "key_file": str(key_file)},
                    }
                }
            }
        },
        "processors": {OWN_FILTER: {"error_mode": "ignore", "logs": {"log_record": [own]}}},
        "exporters": {"nop": {}},
        "service": {
            "extensions": ["health_check"],
            "telemetry": {"logs": {"level": "warn"}, "metrics": {"readers": [reader]}},
            "pipelines": {
                "logs": {"receivers": ["otlp"], "processors": [OWN_FILTER], "exporters": ["nop"]}
            },
        },
    }


def service(binary: Path, config_file: Path, working_dir: Path) -> dict[str, Any]:
    return {
        "override": "replace",
        "summary": "Loki STAND-IN (otelcol with a nop exporter; not Loki)",
        "command": shlex.join([str(binary), f"--config={config_file}"]),
        "startup": "enabled",
        "working-dir": str(working_dir),
        "on-failure": "restart",
        "backoff-delay": "1s",
    }


def check(ports: StandinPorts) -> dict[str, Any]:
    return {
        "override": "replace",
        "level": "ready",
        "period": "2s",
        "timeout": "2s",
        "threshold": 3,
        "http": {"url": health_url(ports)},
    }


def scrape_job(ports: StandinPorts) -> dict[str, Any]:
    """Its counters under names of their own: `otelcol_x` becomes `loadgate_standin_otelcol_x`."""
    return {
        "job_name": JOB,
        "static_configs": [{"targets": [f"{HOST}:{ports.metrics}"]}],
        "metric_relabel_configs": [
            {
                "source_labels": ["__name__"],
                "regex": "(otelcol_.*)",
                "target_label": "__name__",
                "replacement": METRIC_PREFIX + "${1}",
            }
        ],
    }


def add(
    layout: Layout,
    ports: Ports,
    material: tls_material.TLSMaterial,
    binary: Path,
    configs: dict[Path, dict[str, Any]],
    layer: dict[str, Any],
) -> None:
    """Into a stack being written: the stand-in's certificate (the stack's CA, STANDIN_NAME;
    written now), its config, Pebble service and check, and its Prometheus scrape job."""
    sports = StandinPorts.for_ports(ports)
    cert, key = tls_material.issue_server_cert(material, (STANDIN_NAME,))
    cert_file, key_file = layout.tls / f"{SERVICE}.crt", layout.tls / f"{SERVICE}.key"
    cert_file.write_bytes(cert)
    key_file.touch(mode=0o600)
    key_file.write_bytes(key)
    config_file = layout.config / f"{SERVICE}.yaml"
    configs[config_file] = config(sports, cert_file, key_file)
    layer["services"][SERVICE] = service(binary, config_file, layout.root)
    layer["checks"][f"{SERVICE}-ready"] = check(sports)
    configs[layout.prometheus_config]["scrape_configs"].append(scrape_job(sports))


def counts(text: str) -> tuple[int, int]:
    """The stand-in's accepted log records and the collector's own records it dropped, from
    its Prometheus exposition text (each summed over its series; absent: 0)."""
    accepted = dropped = 0.0
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        value = float(line.rsplit(" ", 1)[-1])
        if name.startswith("otelcol_receiver_accepted_log_records"):
            accepted += value
        elif name.startswith(
            ("otelcol_processor_filter_logs_filtered", "otelcol_processor_filter_logs.filtered")
        ):
            dropped += value
    return int(accepted), int(dropped)


def read_counts(ports: StandinPorts) -> tuple[int, int] | None:
    """`counts` as the stand-in serves them now (None: it did not answer)."""
    try:
        resp = httpx.get(f"http://{HOST}:{ports.metrics}/metrics", timeout=5.0)
        resp.raise_for_status()
        return counts(resp.text)
    except (httpx.HTTPError, ValueError):
        return None
