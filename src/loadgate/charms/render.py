"""Render the otelcol and Loki charms offline: their own code writes the configs a unit runs.

Each charm runs in its own virtualenv (venvs.py) through a small driver (drivers/), as the
leader unit of model `loadgate`, with the bundle's relations written as the providers write
them:

- Loki: `certificates` answered from the stack's CA by the TLS library's provider code (the
  charm's CSR, then the signed certificate), `logging` related to the collector, and the
  options given (default `reporting-enabled=false`);
- otelcol: `send-loki-logs` carrying exactly what the Loki charm published on `logging`, and
  `receive-ca-cert` carrying the stack's CA as the certificate-transfer provider code writes it;
  with more signals than logs (signals.py), `send-remote-write` and `send-traces` as the
  Prometheus and Tempo provider libraries write them.

The output of each: the files the charm pushed into its containers, the Pebble plan it made,
what it published on its relations, its status, and what the sandbox intercepted.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import signals as signal_relations
from . import venvs
from .sources import KNOWN, CharmSource, cache_dir

MODEL = "loadgate"
_MODEL_UUID = "6c6f6164-6761-4465-8000-000000000001"
# The charms' clock during a render: Loki's schema starts "today" on a fresh install.
RENDER_EPOCH = "2026-01-01T00:00:00+00:00"
_DRIVERS = Path(__file__).resolve().parent / "drivers"
_LOKI_OPTION_DEFAULTS: dict[str, Any] = {"reporting-enabled": False}
_CERT_DAYS = 30


class RenderError(RuntimeError):
    """A charm could not be rendered; the message says which charm, where and why."""


def fqdn(app: str, unit: int = 0, model: str = MODEL) -> str:
    """The in-cluster name of a unit's pod (what `socket.getfqdn()` answers in the pod)."""
    return f"{app}-{unit}.{app}-endpoints.{model}.svc.cluster.local"


@dataclass(frozen=True)
class RenderedCharm:
    """What one charm rendered, read from the driver's output folder."""

    role: str
    source: CharmSource
    venv: venvs.CharmVenv
    out: Path
    status: dict[str, str]
    plans: dict[str, dict[str, Any]]
    files: dict[str, list[str]]
    relations: dict[str, dict[str, dict[str, str]]]
    journal: dict[str, Any]
    python: str
    ops: str
    seconds: float
    notes: list[str] = field(default_factory=list[str])
    # What the providers wrote on each relation: {"app": ..., "units": {"0": ...}}.
    received: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])

    @property
    def container(self) -> str:
        return KNOWN[self.role].container

    @property
    def plan(self) -> dict[str, Any]:
        return self.plans.get(self.container, {})

    def file(self, path: str, container: str | None = None) -> Path:
        """Where the file the charm pushed to `path` (in its workload container) was written."""
        name = container or self.container
        if path not in self.files.get(name, []):
            raise RenderError(
                f"{self.source.name} pushed no {path} into its {name} container "
                f"(it pushed: {', '.join(self.files.get(name, [])) or 'nothing'})"
            )
        return self.out / "containers" / name / path.lstrip("/")

    def published(self, endpoint: str) -> dict[str, dict[str, str]]:
        """What the charm wrote on `endpoint`: {"app": ..., "unit": ...}."""
        return self.relations.get(endpoint, {"app": {}, "unit": {}})

    def to_dict(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "source": self.source.to_dict(),
            "venv": self.venv.to_dict(),
            "status": self.status,
            "python": self.python,
            "ops": self.ops,
            "seconds": round(self.seconds, 2),
            "intercepted": self.journal,
            "notes": list(self.notes),
            **self._signal_relations(),
        }

    def _signal_relations(self) -> dict[str, Any]:
        """What the metric and trace providers wrote (absent for a logs-only render)."""
        ends = (signal_relations.REMOTE_WRITE_ENDPOINT, signal_relations.TRACES_ENDPOINT)
        found = {e: self.received[e] for e in ends if e in self.received}
        return {"provider_data": found} if found else {}


# ---- requests (pure) ------------------------------------------------------------------------


def driver_request(
    role: str,
    source: CharmSource,
    work_dir: Path,
    config: Mapping[str, Any],
    relations: list[dict[str, Any]],
    exchanges: list[dict[str, Any]],
    version_output: str,
) -> dict[str, Any]:
    """What a driver (drivers/render_charm.py, for `role`) reads: the charm, its work folder, the
    unit and model it runs as, its options, relations and the workload's version;
    `run_driver` runs it."""
    app = role
    return {
        "driver": role,
        "charm_dir": str(source.path),
        "work_dir": str(work_dir),
        "app": app,
        "unit_id": 0,
        "model": {"name": MODEL, "uuid": _MODEL_UUID},
        "fqdn": fqdn(app),
        "config": dict(config),
        "relations": relations,
        "exchanges": exchanges,
        "version_output": version_output,
        "now": RENDER_EPOCH,
    }


def _loki_request(
    source: CharmSource,
    work_dir: Path,
    *,
    ca_cert: str,
    ca_key: str,
    options: Mapping[str, Any],
    version_output: str,
) -> dict[str, Any]:
    """Loki as the bundle relates it: TLS from the CA, the collector on `logging`."""
    relations = [
        {"endpoint": "certificates", "interface": "tls-certificates", "remote_app_name": "ca"},
        {"endpoint": "logging", "interface": "loki_push_api", "remote_app_name": "otelcol"},
    ]
    exchanges = [
        {
            "endpoint": "certificates",
            "kind": "tls-certificates",
            "ca_cert": ca_cert,
            "ca_key": ca_key,
            "days": _CERT_DAYS,
        }
    ]
    config = {**_LOKI_OPTION_DEFAULTS, **options}
    return driver_request("loki", source, work_dir, config, relations, exchanges, version_output)


def _otelcol_request(
    source: CharmSource,
    work_dir: Path,
    *,
    loki_logging_unit_data: Mapping[str, str],
    ca_cert: str,
    ca_key: str | None,
    options: Mapping[str, Any],
    version_output: str,
    extra_relations: Sequence[Mapping[str, Any]] = (),
    extra_exchanges: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The collector as the bundle relates it: Loki's published push endpoint on
    `send-loki-logs`, the CA on `receive-ca-cert`, and (with a CA key) its own server
    certificate on `receive-server-cert`."""
    relations = [
        {
            "endpoint": "send-loki-logs",
            "interface": "loki_push_api",
            "remote_app_name": "loki",
            "remote_units_data": {"0": dict(loki_logging_unit_data)},
        },
        {
            "endpoint": "receive-ca-cert",
            "interface": "certificate_transfer",
            "remote_app_name": "ca",
        },
    ]
    exchanges: list[dict[str, Any]] = [
        {"endpoint": "receive-ca-cert", "kind": "certificate_transfer", "certificates": [ca_cert]}
    ]
    if ca_key is not None:
        relations.append(
            {
                "endpoint": "receive-server-cert",
                "interface": "tls-certificates",
                "remote_app_name": "ca",
            }
        )
        exchanges.append(
            {
                "endpoint": "receive-server-cert",
                "kind": "tls-certificates",
                "ca_cert": ca_cert,
                "ca_key": ca_key,
                "days": _CERT_DAYS,
            }
        )
    relations += [dict(r) for r in extra_relations]
    exchanges += [dict(e) for e in extra_exchanges]
    return driver_request("otelcol", source, work_dir, options, relations, exchanges, version_output)


# ---- running a driver -------------------------------------------------------------------


def _pycache_dir() -> Path:
    return cache_dir() / "charm-pycache"


def run_driver(
    source: CharmSource, venv: venvs.CharmVenv, request: dict[str, Any]
) -> RenderedCharm:
    """Run the charm in its venv for `request`; its work_dir must not exist yet."""
    work = Path(request["work_dir"])
    work.mkdir(parents=True)
    req_file = work / "request.json"
    req_file.write_text(json.dumps(request, indent=1))
    log = work / "render.log"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(work),
        "LANG": "C.UTF-8",
        "PYTHONPYCACHEPREFIX": str(_pycache_dir()),
        "PYTHONHASHSEED": "0",
    }
    began = time.monotonic()
    with log.open("wb") as out:
        proc = subprocess.run(
            [str(venv.python), str(_DRIVERS / "render_charm.py"), str(req_file)],
            cwd=work,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            timeout=300,
            check=False,
        )
    seconds = time.monotonic() - began
    result_file = work / "out" / "result.json"
    if proc.returncode != 0 or not result_file.is_file():
        raise RenderError(
            f"rendering {source.name} {source.label} failed (exit {proc.returncode}): "
            f"{_reason(log)}; full log {log}"
        )
    return _read_output(source, venv, work / "out", seconds)


def _reason(log: Path) -> str:
    lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    for line in reversed(lines):
        if "Error" in line or "error" in line or "refused" in line:
            return line[-400:]
    return lines[-1][-400:] if lines else "no output"


def _read_output(
    source: CharmSource, venv: venvs.CharmVenv, out: Path, seconds: float
) -> RenderedCharm:
    data = json.loads((out / "result.json").read_text())
    relations = {
        r["endpoint"]: {"app": dict(r["local_app_data"]), "unit": dict(r["local_unit_data"])}
        for r in data["relations"]
    }
    containers = data["containers"]
    return RenderedCharm(
        role=source.role,
        source=source,
        venv=venv,
        out=out,
        status=dict(data["status"]),
        plans={name: c["plan"] for name, c in containers.items()},
        files={name: list(c["files"]) for name, c in containers.items()},
        relations=relations,
        journal=dict(data["journal"]),
        python=str(data["python"]),
        ops=str(data["ops"]),
        seconds=seconds,
        notes=list(venv.notes),
        received={
            r["endpoint"]: {
                "app": dict(r.get("remote_app_data") or {}),
                "units": dict(r.get("remote_units_data") or {}),
            }
            for r in data["relations"]
        },
    )


# ---- the pipeline ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RenderedPipeline:
    otelcol: RenderedCharm
    loki: RenderedCharm

    @property
    def loki_push_url(self) -> str:
        """The push URL Loki advertised on `logging` (what the collector was given)."""
        raw = self.loki.published("logging")["unit"].get("endpoint", "")
        try:
            return str(json.loads(raw)["url"])
        except (ValueError, KeyError, TypeError):
            raise RenderError(f"Loki published no push endpoint on `logging` ({raw!r})") from None

    def to_dict(self) -> dict[str, Any]:
        return {"otelcol": self.otelcol.to_dict(), "loki": self.loki.to_dict()}


def render_pipeline(
    otelcol: CharmSource,
    loki: CharmSource,
    work_dir: Path,
    *,
    ca_cert: str,
    ca_key: str,
    otelcol_options: Mapping[str, Any],
    loki_options: Mapping[str, Any],
    otelcol_version: str,
    loki_version: str,
    server_cert: bool = False,
    otelcol_relations: Sequence[Mapping[str, Any]] = (),
    on_step: Callable[[str], None] | None = None,
    signals: Sequence[str] = signal_relations.DEFAULT,
    provider_lib: Path | None = None,
) -> RenderedPipeline:
    """Loki first (its published endpoint is the collector's input), then the collector.
    `*_version` is what the workload binary answers to `--version` (the charm reads it);
    `otelcol_relations` adds relations of the collector (e.g. `receive-otlp` for a contract
    test), as request relation entries. `signals` beyond logs relate the collector to
    Prometheus and Tempo too, written by the provider libraries under `provider_lib` (the
    Prometheus charm's `lib/`)."""
    try:
        backend_rels, backend_exchanges = signal_relations.relations(signals, provider_lib, MODEL)
    except signal_relations.SignalsError as exc:
        raise RenderError(str(exc)) from None

    if work_dir.exists():
        shutil.rmtree(work_dir)
    loki_out = _render_charm(
        loki,
        "Loki",
        on_step,
        lambda: _loki_request(
            loki,
            work_dir / "loki",
            ca_cert=ca_cert,
            ca_key=ca_key,
            options=loki_options,
            version_output=loki_version,
        ),
    )
    otel_out = _render_charm(
        otelcol,
        "otelcol",
        on_step,
        lambda: _otelcol_request(
            otelcol,
            work_dir / "otelcol",
            loki_logging_unit_data=loki_out.published("logging")["unit"],
            ca_cert=ca_cert,
            ca_key=ca_key if server_cert else None,
            options=otelcol_options,
            version_output=otelcol_version,
            extra_relations=[*otelcol_relations, *backend_rels],
            extra_exchanges=backend_exchanges,
        ),
    )
    return RenderedPipeline(otel_out, loki_out)


def _render_charm(
    source: CharmSource,
    name: str,
    on_step: Callable[[str], None] | None,
    request: Callable[[], dict[str, Any]],
) -> RenderedCharm:
    """One charm rendered: its virtualenv made (once per lock), then its driver run on the
    request (built once the virtualenv is there). `on_step` hears each as it starts."""

    def step(text: str) -> None:
        if on_step:
            on_step(text)

    step(f"preparing the {name} charm's virtualenv ({source.label}; once per lock)")
    venv = venvs.ensure(source)
    step(f"rendering the {name} charm {source.label}")
    return run_driver(source, venv, request())
