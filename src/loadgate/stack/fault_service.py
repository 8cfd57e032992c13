"""The backend fault proxy as a service of the local stack (`--backend-fault`): its ports, its
certificate and config, its Pebble service, check and Prometheus scrape job, and the calls a
run makes to it (`restart_clock` at the load's start, `counts` after the run)."""

from __future__ import annotations

import json
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

import loadgate

from . import pebble_plan, tls
from .faults import FaultPlan
from .layout import Layout
from .ports import HOST, Ports

SERVICE = "backend-fault"
_SCRAPE_JOB = "backend-fault"


@dataclass(frozen=True)
class FaultService:
    """Where the proxy of a stack listens and what it injects (stack.json `backend_fault`)."""

    plan: FaultPlan
    port: int  # TLS, the collector's Loki exporter pushes here
    control_port: int  # plain HTTP: /metrics, /counts, /ready, POST /epoch
    server_name: str = ""  # the Loki name it presents (known once the charms rendered)

    @property
    def control_url(self) -> str:
        return f"http://{HOST}:{self.control_port}"

    @property
    def ready_url(self) -> str:
        return f"{self.control_url}/ready"

    def to_dict(self) -> dict[str, Any]:
        return {
            "plan": self.plan.to_dict(),
            "port": self.port,
            "control_port": self.control_port,
            "server_name": self.server_name,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FaultService:
        return cls(
            FaultPlan.from_dict(dict(data["plan"])),
            int(data["port"]),
            int(data["control_port"]),
            str(data.get("server_name") or ""),
        )


def _free_port() -> int:
    """A port no one listens on now (the kernel's choice, outside the stack's own range)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def allocate(plan: FaultPlan) -> FaultService:
    return FaultService(plan, _free_port(), _free_port())


def _config_path(layout: Layout) -> Path:
    return layout.config / "backend-fault.json"


def write(service: FaultService, layout: Layout, ports: Ports) -> None:
    """The proxy's certificate (the stack's CA, Loki's name) and its config file."""
    folder = layout.tls / "backend-fault"
    folder.mkdir(parents=True, exist_ok=True)
    ca_key = layout.tls / "ca.key"
    cert, key = tls.issue(
        layout.ca_cert.read_bytes(), ca_key.read_bytes(), (service.server_name, "localhost")
    )
    (folder / "server.crt").write_bytes(cert)
    key_file = folder / "server.key"
    key_file.touch(mode=0o600)
    key_file.write_bytes(key)
    config = {
        "host": HOST,
        "port": service.port,
        "control_port": service.control_port,
        "cert_file": str(folder / "server.crt"),
        "key_file": str(key_file),
        "upstream": f"https://{HOST}:{ports.loki_http}",
        "server_name": service.server_name,
        "ca_file": str(layout.ca_cert),
        "plan": service.plan.to_dict(),
    }
    _config_path(layout).write_text(json.dumps(config, indent=2))


def pebble_service(layout: Layout) -> dict[str, Any]:
    """The proxy under Pebble: this Python, this loadgate (PYTHONPATH), restarted on failure."""
    argv = [sys.executable, "-m", "loadgate.stack.fault_proxy", str(_config_path(layout))]
    summary = "backend fault proxy between the collector and Loki"
    here = {"PYTHONPATH": str(Path(loadgate.__file__).resolve().parent.parent)}
    return pebble_plan.service(summary, argv, layout.root, environment=here)


def pebble_check(service: FaultService) -> dict[str, Any]:
    return pebble_plan.http_check(service.ready_url)


def scrape_job(service: FaultService) -> dict[str, Any]:
    return {
        "job_name": _SCRAPE_JOB,
        "static_configs": [{"targets": [f"{HOST}:{service.control_port}"]}],
    }


def restart_clock(service: FaultService, timeout: float = 5.0) -> dict[str, Any] | None:
    """A run's load starts: the outage clock and the random sequence start over; the counts
    at that moment (None when the proxy does not answer)."""
    return _call("POST", f"{service.control_url}/epoch", timeout)


def counts(service: FaultService, timeout: float = 5.0) -> dict[str, Any] | None:
    return _call("GET", f"{service.control_url}/counts", timeout)


def _call(method: str, url: str, timeout: float) -> dict[str, Any] | None:
    try:
        answer = httpx.request(method, url, timeout=timeout)
        data = answer.json() if answer.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None
    return data if isinstance(data, dict) else None  # pyright: ignore[reportUnknownVariableType]
