"""Reaching Prometheus and Loki inside a Juju model over TLS verified with the model's CA.

The test host reaches each unit at its pod address (on a concierge/Canonical K8s host pod
addresses are routed to the host). The COS charms ask `ca` for a certificate whose only name is
the unit's FQDN (`loki-0.loki-endpoints.<model>.svc.cluster.local`), which the host cannot
resolve; so the client connects to the pod address and verifies the certificate against that
FQDN (TLS server name), with the CA from `ca`'s get-ca-certificate action. Nothing skips
verification.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jubilant
import yaml

from loadgate.measure.queries import LokiAPI, PrometheusAPI
from loadgate.tlsclient import verified_client

PROMETHEUS_PORT = 9090
LOKI_PORT = 3100
_OTELCOL_CONFIG = "/etc/otelcol/config.yaml"
_LOKI_EXPORTER_PREFIX = "loki/send-loki-logs/"


class EndpointError(RuntimeError):
    """A unit, an address, the CA or the collector's config could not be found."""


@dataclass(frozen=True)
class UnitEndpoint:
    unit: str
    address: str
    hostname: str  # the name its TLS certificate carries

    def url(self, port: int) -> str:
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"https://{host}:{port}"


def model_name(model: str | None) -> str:
    """`controller:user/name` -> `name` (the Kubernetes namespace of the model)."""
    if not model:
        raise EndpointError("the Juju model has no name (pass --model)")
    return model.split(":", 1)[-1].split("/")[-1]


def _unit_fqdn(unit: str, model: str) -> str:
    """The in-cluster name of a unit's pod.

    `loki/1` in model `m` -> `loki-1.loki-endpoints.m.svc.cluster.local`.
    """
    app, _, num = unit.partition("/")
    return f"{app}-{num}.{app}-endpoints.{model}.svc.cluster.local"


def unit_endpoints(status: jubilant.Status, app: str, model: str) -> list[UnitEndpoint]:
    """Every unit of an application with its pod address, in unit-number order."""
    if app not in status.apps:
        raise EndpointError(f"application {app!r} is not in model {model!r}")
    units = status.apps[app].units
    out: list[UnitEndpoint] = []
    for unit in sorted(units, key=lambda u: int(u.rpartition("/")[2])):
        address = units[unit].address
        if not address:
            raise EndpointError(f"unit {unit} has no address yet")
        out.append(UnitEndpoint(unit, address, _unit_fqdn(unit, model)))
    if not out:
        raise EndpointError(f"application {app!r} has no units")
    return out


def leader(status: jubilant.Status, app: str) -> str:
    if app not in status.apps:
        raise EndpointError(f"application {app!r} is not in the model")
    for name, unit in status.apps[app].units.items():
        if unit.leader:
            return name
    raise EndpointError(f"application {app!r} has no leader unit yet")


def fetch_ca(juju: jubilant.Juju, ca_app: str = "ca") -> str:
    """The CA certificate (PEM) of the self-signed-certificates application."""
    task = juju.run(leader(juju.status(), ca_app), "get-ca-certificate")
    return _ca_from_results(task.results)


def _ca_from_results(results: Mapping[str, Any]) -> str:
    pem = results.get("ca-certificate")
    if not isinstance(pem, str) or "BEGIN CERTIFICATE" not in pem:
        raise EndpointError("get-ca-certificate: results have no PEM `ca-certificate`")
    return pem


def write_ca(pem: str, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "juju-ca.crt"
    path.write_text(pem if pem.endswith("\n") else pem + "\n")
    return path


def prometheus_api(unit: UnitEndpoint, ca_file: Path) -> PrometheusAPI:
    return PrometheusAPI(unit.url(PROMETHEUS_PORT), verified_client(ca_file, unit.hostname))


def loki_api(unit: UnitEndpoint, ca_file: Path) -> LokiAPI:
    return LokiAPI(unit.url(LOKI_PORT), verified_client(ca_file, unit.hostname))


def loki_exporters(config_text: str) -> dict[str, str]:
    """Collector config -> {exporter name: host it pushes to} for its Loki exporters."""
    try:
        config = yaml.safe_load(config_text)
    except yaml.YAMLError as exc:
        raise EndpointError(f"collector config is not YAML: {exc}") from None
    exporters = (config or {}).get("exporters") if isinstance(config, dict) else None
    if not isinstance(exporters, dict):
        raise EndpointError("collector config has no `exporters`")
    out: dict[str, str] = {}
    for name, settings in exporters.items():  # pyright: ignore[reportUnknownVariableType]
        if str(name).startswith(_LOKI_EXPORTER_PREFIX) and isinstance(settings, dict):
            host = urlsplit(str(settings.get("endpoint") or "")).hostname  # pyright: ignore[reportUnknownMemberType]
            if host:
                out[str(name)] = host
    return out


def exporter_for(exporters: Mapping[str, str], loki: UnitEndpoint) -> str:
    """The collector exporter that pushes to this Loki unit (by FQDN or address)."""
    found = [name for name, host in exporters.items() if host in (loki.hostname, loki.address)]
    if len(found) != 1:
        raise EndpointError(
            f"expected one collector Loki exporter pushing to {loki.unit} ({loki.hostname}); "
            f"found {found or 'none'} among {dict(exporters)}"
        )
    return found[0]


def read_collector_config(juju: jubilant.Juju, unit: str) -> str:
    return juju.ssh(unit, "cat", _OTELCOL_CONFIG, container="otelcol")


def related_app_data(info: jubilant.UnitInfo, endpoint: str) -> list[dict[str, Any]]:
    """The application data the remote side of each relation on `endpoint` published."""
    return [dict(rel.app_data) for rel in info.relation_info if rel.endpoint == endpoint]
