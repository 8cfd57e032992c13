"""Turn what a charm rendered for its pod into what runs on loopback here. Pure functions.

Every change is reported (`Change`): listeners and in-pod addresses move to 127.0.0.1 and the
stack's ports, storage and certificate paths move into the stack's run directory, the Loki push
URL points at the local Loki while TLS is still verified for the name the charm asked its
certificate for, the collector's self-metrics reader is made explicit (on the stack's port,
with the naming options of the default reader it replaces). A component the local collector
build lacks is removed and listed in `missing`, never silently.
"""

from __future__ import annotations

import copy
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .ports import HOST, Ports

# The collector ports the charm opens -> the stack's port of the same role.
_OTELCOL_PORTS = {
    4317: "otlp_grpc",
    4318: "otlp_http",
    8888: "otelcol_metrics",
    13133: "otelcol_health",
}
_LISTEN_RE = re.compile(r"^(0\.0\.0\.0|localhost|127\.0\.0\.1|\[::\]|::):(\d{1,5})$", re.ASCII)
_URL_HOSTS = ("localhost", "0.0.0.0", "127.0.0.1")  # noqa: S104 (what the charm renders)
KINDS = ("receivers", "processors", "exporters", "extensions", "connectors")
# What the collector's default self-metrics reader does (v0.130: go.opentelemetry.io/collector
# /service/telemetry): Prometheus names without scope info, unit or type suffixes.
_DEFAULT_READER_OPTIONS = {
    "without_scope_info": True,
    "without_type_suffix": True,
    "without_units": True,
}
# Loki settings that only shorten its start (no effect once ready): tens of seconds to ~2 s.
_LOKI_STARTUP = {
    "ingester": {
        "lifecycler": {"min_ready_duration": "0s", "join_after": "0s", "final_sleep": "0s"}
    },
    "frontend": {"scheduler_dns_lookup_period": "1s"},
    "frontend_worker": {"dns_lookup_duration": "1s"},
}
_CERT_KEYS = ("cert_file", "key_file", "ca_file", "client_ca_file")
_SNI = "tls.server_name_override"


@dataclass(frozen=True)
class Change:
    where: str
    before: Any
    after: Any
    why: str

    def text(self) -> str:
        if self.before is None:
            return f"{self.where}: added {self.after!r} ({self.why})"
        if self.after is None:
            return f"{self.where}: removed {self.before!r} ({self.why})"
        return f"{self.where}: {self.before!r} -> {self.after!r} ({self.why})"

    def to_dict(self) -> dict[str, Any]:
        return {"where": self.where, "before": self.before, "after": self.after, "why": self.why}


@dataclass(frozen=True)
class Localized:
    config: dict[str, Any]
    changes: list[Change] = field(default_factory=list[Change])
    missing: list[str] = field(default_factory=list[str])  # components removed (not built)


class LocalizeError(ValueError):
    """The rendered config has something loadgate cannot run on loopback; says what."""


def _walk_strings(node: Any, path: str, fix: Any) -> Any:
    if isinstance(node, dict):
        return {
            k: _walk_strings(v, f"{path}.{k}" if path else str(k), fix) for k, v in node.items()
        }
    if isinstance(node, list):
        return [_walk_strings(v, f"{path}[{i}]", fix) for i, v in enumerate(node)]
    if isinstance(node, str):
        return fix(path, node)
    return node


def _port_of(ports: Ports, port: int, table: Mapping[int, str]) -> int:
    return int(getattr(ports, table[port])) if port in table else port


def _listeners(config: dict[str, Any], ports: Ports, changes: list[Change]) -> dict[str, Any]:
    """`0.0.0.0:4318`, `localhost:8888` and `http://localhost:4318` -> loopback, stack ports."""

    def fix(path: str, value: str) -> str:
        m = _LISTEN_RE.match(value)
        if m:
            port = int(m.group(2))
            new = f"{HOST}:{_port_of(ports, port, _OTELCOL_PORTS)}"
            if new != value:
                why = "loopback, stack port" if port in _OTELCOL_PORTS else "loopback, port kept"
                changes.append(Change(path, value, new, why))
            return new
        if value.startswith(("http://", "https://")):
            parts = urlsplit(value)
            if parts.hostname in _URL_HOSTS and parts.port is not None:
                netloc = f"{HOST}:{_port_of(ports, parts.port, _OTELCOL_PORTS)}"
                new = urlunsplit(parts._replace(netloc=netloc))
                if new != value:
                    changes.append(Change(path, value, new, "loopback, stack port"))
                return new
        return value

    return _walk_strings(config, "", fix)


def _cert_paths(node: Any, path: str, files: Mapping[str, Path], changes: list[Change]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            where = f"{path}.{key}" if path else str(key)
            if key in _CERT_KEYS and isinstance(value, str) and value in files:
                node[key] = str(files[value])
                changes.append(Change(where, value, node[key], "the file the charm wrote"))
            else:
                _cert_paths(value, where, files, changes)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _cert_paths(value, f"{path}[{i}]", files, changes)


def component_type(component_id: str) -> str:
    return component_id.split("/", 1)[0]


def _drop_missing(
    config: dict[str, Any], available: frozenset[str], changes: list[Change]
) -> list[str]:
    """Remove components whose type the local build lacks (from their section and every
    pipeline); a pipeline left without receivers or exporters goes too. Returns the ids."""
    dropped: list[str] = []
    for kind in KINDS:
        section = config.get(kind) or {}
        for cid in list(section):
            if component_type(cid) not in available:
                del section[cid]
                dropped.append(cid)
                changes.append(
                    Change(f"{kind}.{cid}", "configured", None, "not in the local build")
                )
    service = config.get("service") or {}
    if "extensions" in service:
        service["extensions"] = [e for e in service["extensions"] if e not in dropped]
    pipelines = service.get("pipelines") or {}
    for name in list(pipelines):
        pipe = pipelines[name]
        for kind in ("receivers", "processors", "exporters"):
            if kind in pipe:
                pipe[kind] = [c for c in pipe[kind] if c not in dropped]
        if not pipe.get("receivers") or not pipe.get("exporters"):
            del pipelines[name]
            why = "no receiver or exporter left"
            changes.append(Change(f"service.pipelines.{name}", "configured", None, why))
    return dropped


@dataclass(frozen=True)
class OtelcolLocal:
    """Where the localized collector runs: ports, storage, the CA file, the local Loki."""

    ports: Ports
    storage_dir: Path
    ca_file: Path
    files: Mapping[str, Path]  # container path -> the local copy of a file the charm wrote
    available: frozenset[str] | None = None  # component types of the local build
    # Where the Loki exporter pushes, when not Loki itself: the backend fault proxy's port.
    loki_via: int | None = None


def otelcol(config: Mapping[str, Any], where: OtelcolLocal) -> Localized:
    changes: list[Change] = []
    cfg = _listeners(copy.deepcopy(dict(config)), where.ports, changes)

    for name, exporter in (cfg.get("exporters") or {}).items():
        if component_type(name) != "loki" or not isinstance(exporter, dict):
            continue
        endpoint = str(exporter.get("endpoint") or "")
        parts = urlsplit(endpoint)
        if not parts.hostname:
            raise LocalizeError(f"exporters.{name}.endpoint: no host in {endpoint!r}")
        port = where.loki_via or where.ports.loki_http
        local = urlunsplit(parts._replace(netloc=f"{HOST}:{port}"))
        exporter["endpoint"] = local
        why = (
            "the backend fault proxy before the local Loki" if where.loki_via else "the local Loki"
        )
        changes.append(Change(f"exporters.{name}.endpoint", endpoint, local, why))
        if parts.scheme == "https":
            tls = exporter.setdefault("tls", {})
            if "server_name_override" not in tls:
                tls["server_name_override"] = parts.hostname
                why = "verify the name Loki's certificate holds"
                changes.append(Change(f"exporters.{name}.{_SNI}", None, parts.hostname, why))
            if "ca_file" not in tls:
                tls["ca_file"] = str(where.ca_file)
                why = "the CA the charm installed in its container's trust store"
                changes.append(Change(f"exporters.{name}.tls.ca_file", None, tls["ca_file"], why))

    for name, ext in (cfg.get("extensions") or {}).items():
        if component_type(name) == "file_storage" and isinstance(ext, dict):
            before = ext.get("directory")
            ext["directory"] = str(where.storage_dir)
            where_text = f"extensions.{name}.directory"
            changes.append(Change(where_text, before, ext["directory"], "the stack's storage"))

    _cert_paths(cfg, "", where.files, changes)
    _metrics_reader(cfg, where.ports, changes)
    missing = _drop_missing(cfg, where.available, changes) if where.available is not None else []
    return Localized(cfg, changes, missing)


def _metrics_reader(cfg: dict[str, Any], ports: Ports, changes: list[Change]) -> None:
    telemetry = cfg.setdefault("service", {}).setdefault("telemetry", {})
    metrics = telemetry.setdefault("metrics", {})
    if metrics.get("level") == "none":
        return
    readers = metrics.get("readers")
    if readers:
        for i, reader in enumerate(readers):
            prom = ((reader.get("pull") or {}).get("exporter") or {}).get("prometheus")
            if isinstance(prom, dict):
                before = f"{prom.get('host')}:{prom.get('port')}"
                prom["host"], prom["port"] = HOST, ports.otelcol_metrics
                after = f"{HOST}:{ports.otelcol_metrics}"
                where = f"service.telemetry.metrics.readers[{i}]"
                changes.append(Change(where, before, after, "loopback, stack port"))
        return
    prometheus = {"host": HOST, "port": ports.otelcol_metrics, **_DEFAULT_READER_OPTIONS}
    reader = {"pull": {"exporter": {"prometheus": prometheus}}}
    metrics["readers"] = [reader]
    why = "the default reader (localhost:8888), made explicit on the stack's port"
    changes.append(Change("service.telemetry.metrics.readers", None, reader, why))


@dataclass(frozen=True)
class LokiLocal:
    ports: Ports
    data_dir: Path
    files: Mapping[str, Path]
    fast_start: bool = True


def loki(config: Mapping[str, Any], where: LokiLocal) -> Localized:
    changes: list[Change] = []

    def fix(path: str, value: str) -> str:
        if value in where.files:
            new = str(where.files[value])
            changes.append(Change(path, value, new, "the file the charm wrote"))
            return new
        if value == "/loki" or value.startswith("/loki/"):
            rest = value[len("/loki") :].lstrip("/")
            new = str(where.data_dir / rest) if rest else str(where.data_dir)
            changes.append(Change(path, value, new, "the stack's data"))
            return new
        return value

    cfg = _walk_strings(copy.deepcopy(dict(config)), "", fix)
    server = cfg.setdefault("server", {})
    wanted = {
        "http_listen_address": HOST,
        "http_listen_port": where.ports.loki_http,
        "grpc_listen_address": HOST,
        "grpc_listen_port": where.ports.loki_grpc,
    }
    for key, value in wanted.items():
        if server.get(key) != value:
            changes.append(Change(f"server.{key}", server.get(key), value, "loopback, stack port"))
            server[key] = value
    common = cfg.setdefault("common", {})
    ring = common.setdefault("ring", {})
    for holder, where_text in (
        (ring, "common.ring.instance_addr"),
        (common, "common.instance_addr"),
    ):
        if holder.get("instance_addr") != HOST:
            why = "the address it advertises to itself"
            changes.append(Change(where_text, holder.get("instance_addr"), HOST, why))
            holder["instance_addr"] = HOST
    if where.fast_start:
        _merge(cfg, _LOKI_STARTUP, "", changes, "startup only: ready in seconds")
    return Localized(cfg, changes, [])


def _merge(
    cfg: dict[str, Any], extra: Mapping[str, Any], path: str, changes: list[Change], why: str
) -> None:
    for key, value in extra.items():
        where = f"{path}.{key}" if path else key
        if isinstance(value, Mapping):
            _merge(cfg.setdefault(key, {}), value, where, changes, why)
        elif cfg.get(key) != value:
            changes.append(Change(where, cfg.get(key), value, why))
            cfg[key] = value


# ---- the Pebble plan -----------------------------------------------------------------------


def _command(text: str, workload: str, binary: Path, files: Mapping[str, Path]) -> str:
    """A service or exec-check command: the workload binary (`workload` by its name in the
    image) and the files it names, local."""
    argv = shlex.split(text)
    if not argv:
        raise LocalizeError("empty command in the charm's plan")
    out = [str(binary) if Path(argv[0]).name == workload else argv[0]]
    for arg in argv[1:]:
        for container_path, local in files.items():
            if container_path in arg:
                arg = arg.replace(container_path, str(local))
        out.append(arg)
    return shlex.join(out)


def plan(
    planned: Mapping[str, Any],
    workload: str,
    binary: Path,
    files: Mapping[str, Path],
    ports: Ports,
    working_dir: Path,
) -> tuple[dict[str, Any], list[Change]]:
    """The charm's Pebble services and checks, runnable here: commands localized, HTTP checks
    on loopback ports, services enabled and restarted on failure as in a pod."""
    changes: list[Change] = []
    services: dict[str, Any] = {}
    for name, svc in (planned.get("services") or {}).items():
        new = dict(svc)
        new["command"] = _command(str(svc.get("command", "")), workload, binary, files)
        if new["command"] != svc.get("command"):
            why = "the local binary and files"
            changes.append(
                Change(f"services.{name}.command", svc.get("command"), new["command"], why)
            )
        new["working-dir"] = str(working_dir)
        new.setdefault("startup", "enabled")
        if new["startup"] != "enabled":
            why = "the charm starts it after planning"
            changes.append(Change(f"services.{name}.startup", new["startup"], "enabled", why))
            new["startup"] = "enabled"
        services[name] = new
    checks: dict[str, Any] = {}
    for name, check in (planned.get("checks") or {}).items():
        new = copy.deepcopy(dict(check))
        if "exec" in new:
            new["exec"]["command"] = _command(str(new["exec"]["command"]), workload, binary, files)
            new["exec"]["working-dir"] = str(working_dir)
        if "http" in new:
            new["http"] = _listeners({"url": new["http"]["url"]}, ports, [])
        if new != check:
            changes.append(Change(f"checks.{name}", check, new, "local command or port"))
        checks[name] = new
    return {"services": services, "checks": checks}, changes
