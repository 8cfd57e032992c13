"""Second collectors standing in for a backend the stack cannot run, one kind with two uses
(pure, but `add`, which writes a stand-in's certificate, and `read_counts`, which asks it):

- TRACES, the traces backend of otlp-traces, a STAND-IN for Tempo, not Tempo. Tempo is not
  served by the Go module proxy this project builds from (it answers 403 for
  `github.com/grafana/tempo` at every version), so it cannot be a pinned part like Loki. Its
  certificate names the Tempo unit's in-cluster name the collector was given, and it is counted
  by its receiver's spans (measure/signal_queries.py, job `traces-standin`).
- LOKI, the charm load-test journey's "Loki stand-in", run when a hand change asks for
  `exporter=standin` (stack/hand.py). Its filter drops the collector's own log records (its
  internal-telemetry loop, `service.name: otelcol-internal`), and Prometheus scrapes it with its
  metric names prefixed (`loadgate_standin_otelcol_...`), so no query of the collector under
  test ever sums its counters with the stand-in's. What it received of a run is its receiver's
  accepted records less those its filter dropped (`counts`).

Each is the pinned otelcol build with an OTLP/HTTP receiver serving TLS (a certificate of the
stack's CA for the name the collector under test verifies, so its exporter verifies the
stand-in as it would the backend) and a `nop` exporter: it keeps nothing. Prometheus scrapes
its own counters as the job of its service's name.

Ports: three beside the stack's seven, OTLP/HTTP, metrics and health: the traces stand-in's
4418, 8889, 13134 (base+7 .. base+9 with --base-port), the Loki stand-in's 4428, 8890, 13135
(base+10 .. base+12).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import astuple, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from loadgate.measure.signal_queries import STANDIN_JOB

from . import pebble_plan
from . import tls as tls_material
from .layout import Layout
from .ports import HOST, Ports

_RECEIVER = "otlp"
LOKI_NAME = "loki-standin.loadgate.svc.cluster.local"  # the Loki stand-in's certificate
OWN_FILTER = "filter/collector-own-logs"
_OWN = 'resource.attributes["service.name"] == "otelcol-internal"'


@dataclass(frozen=True)
class StandinPorts:
    """Where a stand-in listens: OTLP/HTTP (TLS), its own metrics, its health check."""

    otlp_http: int
    metrics: int
    health: int


@dataclass(frozen=True)
class _Standin:
    """One stand-in collector: its names, what it runs, where its ports go."""

    service: str  # its Pebble service, Prometheus job, and config and certificate files
    what: str  # for errors: "the traces backend"
    role: str  # for people (the stack's report)
    summary: str  # its Pebble service's summary
    signal: str  # the pipeline it runs: traces, logs
    default_ports: StandinPorts  # beside the standard ports
    offset: int  # its first port, from the stack's base port when that is moved
    port_names: str  # the prefix of its ports' names (the busy ports `stack up` lists)
    processors: Mapping[str, Any] = field(default_factory=dict[str, Any])  # name -> config
    metric_prefix: str | None = None  # its counters renamed so in Prometheus (None: as is)

    def ports_for(self, ports: Ports) -> StandinPorts:
        """Its default ports beside the standard ports; base+offset.. beside moved ones."""
        if ports == Ports():
            return self.default_ports
        base = ports.otlp_grpc + self.offset
        if base + 2 > 65535:
            raise ValueError(f"base port: {self.what} needs ports up to {base + 2}")
        return StandinPorts(base, base + 1, base + 2)

    def named_ports(self, ports: StandinPorts) -> list[tuple[str, int]]:
        names = ("otlp_http", "metrics", "health")
        return [(self.port_names + n, p) for n, p in zip(names, astuple(ports), strict=True)]

    def config(self, ports: StandinPorts, cert_file: Path, key_file: Path) -> dict[str, Any]:
        """The stand-in's collector config: OTLP/HTTP over TLS in, its processors, nothing
        out, its own counters on a Prometheus reader."""
        prometheus = {"host": HOST, "port": ports.metrics, "without_units": True}
        reader = {"pull": {"exporter": {"prometheus": prometheus}}}
        tls = {"cert_file": str(cert_file), "key_file": str(key_file)}
        http = {"endpoint": f"{HOST}:{ports.otlp_http}", "tls": tls}
        processors = copy.deepcopy(dict(self.processors))  # each config its own
        in_pipeline = {"processors": list(processors)} if processors else {}
        pipeline = {"receivers": [_RECEIVER], **in_pipeline, "exporters": ["nop"]}
        return {
            "extensions": {"health_check": {"endpoint": f"{HOST}:{ports.health}"}},
            "receivers": {_RECEIVER: {"protocols": {"http": http}}},
            **({"processors": processors} if processors else {}),
            "exporters": {"nop": {}},
            "service": {
                "extensions": ["health_check"],
                "telemetry": {"logs": {"level": "warn"}, "metrics": {"readers": [reader]}},
                "pipelines": {self.signal: pipeline},
            },
        }

    def pebble_service(self, binary: Path, config_file: Path, working_dir: Path) -> dict[str, Any]:
        argv = [str(binary), f"--config={config_file}"]
        return pebble_plan.service(self.summary, argv, working_dir)

    def pebble_check(self, ports: StandinPorts) -> dict[str, Any]:
        return pebble_plan.http_check(health_url(ports))

    def scrape_job(self, ports: StandinPorts) -> dict[str, Any]:
        """Its own counters (`otelcol_x` as `<metric_prefix>otelcol_x` when it has a prefix)."""
        job: dict[str, Any] = {
            "job_name": self.service,
            "static_configs": [{"targets": [f"{HOST}:{ports.metrics}"]}],
        }
        if self.metric_prefix is not None:
            rename = {
                "source_labels": ["__name__"],
                "regex": "(otelcol_.*)",
                "target_label": "__name__",
                "replacement": self.metric_prefix + "${1}",
            }
            job["metric_relabel_configs"] = [rename]
        return job

    def add(
        self,
        layout: Layout,
        ports: Ports,
        material: tls_material.TLSMaterial,
        server_name: str,
        binary: Path,
        configs: dict[Path, dict[str, Any]],
        layer: dict[str, Any],
    ) -> None:
        """Into a stack being written: its certificate (the stack's CA, for `server_name`;
        written now), its config, Pebble service and check, and its Prometheus scrape job."""
        sports = self.ports_for(ports)
        cert, key = tls_material.issue_server_cert(material, (server_name,))
        cert_file, key_file = layout.tls / f"{self.service}.crt", layout.tls / f"{self.service}.key"
        cert_file.write_bytes(cert)
        key_file.touch(mode=0o600)
        key_file.write_bytes(key)
        config_file = layout.config / f"{self.service}.yaml"
        configs[config_file] = self.config(sports, cert_file, key_file)
        layer["services"][self.service] = self.pebble_service(binary, config_file, layout.root)
        layer["checks"][f"{self.service}-ready"] = self.pebble_check(sports)
        configs[layout.prometheus_config]["scrape_configs"].append(self.scrape_job(sports))


TRACES = _Standin(
    service=STANDIN_JOB,
    what="the traces backend",
    role="traces backend (stand-in: otelcol, otlp receiver, nop exporter; not Tempo)",
    summary="traces backend STAND-IN (otelcol with a nop exporter; not Tempo)",
    signal="traces",
    default_ports=StandinPorts(4418, 8889, 13134),
    offset=7,  # after the stack's seven ports
    port_names="traces_",
)
LOKI = _Standin(
    service="loki-standin",
    what="the Loki stand-in",
    role="Loki stand-in (a second otelcol: otlp receiver, nop exporter; keeps nothing)",
    summary="Loki STAND-IN (otelcol with a nop exporter; not Loki)",
    signal="logs",
    default_ports=StandinPorts(4428, 8890, 13135),
    offset=10,  # after the stack's seven ports and the traces stand-in's three
    port_names="loki_standin_",
    processors={OWN_FILTER: {"error_mode": "ignore", "logs": {"log_record": [_OWN]}}},
    metric_prefix="loadgate_standin_",
)


def otlp_url(ports: StandinPorts) -> str:
    """Where the collector under test sends to it (HTTPS, the stand-in's certificate)."""
    return f"https://{HOST}:{ports.otlp_http}"


def health_url(ports: StandinPorts) -> str:
    return f"http://{HOST}:{ports.health}/"


def counts(text: str) -> tuple[int, int]:
    """The Loki stand-in's accepted log records and the collector's own records it dropped,
    from its Prometheus exposition text (each summed over its series; absent: 0)."""
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
    """`counts` as the Loki stand-in serves them now (None: it did not answer)."""
    try:
        resp = httpx.get(f"http://{HOST}:{ports.metrics}/metrics", timeout=5.0)
        resp.raise_for_status()
        return counts(resp.text)
    except (httpx.HTTPError, ValueError):
        return None
