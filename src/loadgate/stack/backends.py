"""The stack's traces backend, pure: a STAND-IN for Tempo, not Tempo.

Tempo is not served by the Go module proxy this project builds from (it answers 403 for
`github.com/grafana/tempo` at every version), so it cannot be a pinned part like Loki. In its
place the stack runs a second collector (the otelcol part already built) with an OTLP/HTTP
receiver and a `nop` exporter: it accepts what the collector under test exports and keeps
nothing. What it received is counted by its own receiver counters (`otelcol_receiver_accepted_
spans`), scraped by the stack's Prometheus as job `traces-standin`. It serves TLS with a
certificate from the stack's CA for the name the collector was given (the Tempo unit's
in-cluster name), so the collector's exporter verifies it as it would verify Tempo.

Its ports follow the stack's seven: 4418 (OTLP/HTTP), 8889 (its metrics) and 13134 (health) by
default, base+7..base+9 with --base-port.
"""

from __future__ import annotations

import shlex
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .ports import HOST, Ports

STANDIN_SERVICE = "traces-standin"
STANDIN_JOB = "traces-standin"
STANDIN_ROLE = "traces backend (stand-in: otelcol, otlp receiver, nop exporter; not Tempo)"
STANDIN_RECEIVER = "otlp"


@dataclass(frozen=True)
class BackendPorts:
    traces_otlp_http: int = 4418
    traces_metrics: int = 8889
    traces_health: int = 13134

    @classmethod
    def for_ports(cls, ports: Ports) -> BackendPorts:
        """The defaults beside the standard ports; base+7.. beside moved ones."""
        if ports == Ports():
            return cls()
        base = ports.otlp_grpc + len(ports.items())
        if base + len(asdict(cls())) - 1 > 65535:
            raise ValueError(f"base port: the traces backend needs ports up to {base + 2}")
        names = list(asdict(cls()))
        return cls(**{name: base + i for i, name in enumerate(names)})

    def items(self) -> list[tuple[str, int]]:
        return list(asdict(self).items())

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def otlp_url(ports: BackendPorts) -> str:
    """Where the collector under test sends traces (HTTPS, the stand-in's certificate)."""
    return f"https://{HOST}:{ports.traces_otlp_http}"


def health_url(ports: BackendPorts) -> str:
    return f"http://{HOST}:{ports.traces_health}/"


def standin_config(ports: BackendPorts, cert_file: Path, key_file: Path) -> dict[str, Any]:
    """The stand-in collector's config: OTLP/HTTP over TLS in, nothing out, its own counters
    on a Prometheus reader."""
    reader = {
        "pull": {
            "exporter": {
                "prometheus": {"host": HOST, "port": ports.traces_metrics, "without_units": True}
            }
        }
    }
    return {
        "extensions": {"health_check": {"endpoint": f"{HOST}:{ports.traces_health}"}},
        "receivers": {
            STANDIN_RECEIVER: {
                "protocols": {
                    "http": {
                        "endpoint": f"{HOST}:{ports.traces_otlp_http}",
                        "tls": {"cert_file": str(cert_file), "key_file": str(key_file)},
                    }
                }
            }
        },
        "exporters": {"nop": {}},
        "service": {
            "extensions": ["health_check"],
            "telemetry": {"logs": {"level": "warn"}, "metrics": {"readers": [reader]}},
            "pipelines": {"traces": {"receivers": [STANDIN_RECEIVER], "exporters": ["nop"]}},
        },
    }


def standin_service(binary: Path, config: Path, working_dir: Path) -> dict[str, Any]:
    return {
        "override": "replace",
        "summary": "traces backend STAND-IN (otelcol with a nop exporter; not Tempo)",
        "command": shlex.join([str(binary), f"--config={config}"]),
        "startup": "enabled",
        "working-dir": str(working_dir),
        "on-failure": "restart",
        "backoff-delay": "1s",
    }


def standin_check(ports: BackendPorts) -> dict[str, Any]:
    return {
        "override": "replace",
        "level": "ready",
        "period": "2s",
        "timeout": "2s",
        "threshold": 3,
        "http": {"url": health_url(ports)},
    }


def standin_scrape_job(ports: BackendPorts) -> dict[str, Any]:
    return {
        "job_name": STANDIN_JOB,
        "static_configs": [{"targets": [f"{HOST}:{ports.traces_metrics}"]}],
    }
