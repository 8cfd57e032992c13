"""Localize the collector's metric and trace exporters: the charm points them at the Prometheus
and Tempo its relations named (in-cluster names); here they go to the stack's backends on
loopback. Pure functions; every change is reported as in localize.py.

An HTTPS endpoint stays HTTPS when the local backend serves TLS: the CA the charm installed in
its trust store becomes `tls.ca_file`, and the certificate is checked for the name the charm
was given (`tls.server_name_override`). When the local backend serves plain HTTP (the stack's
Prometheus, which k6 and loadgate's own clients reach over HTTP), the scheme changes and the
change says that this hop is not encrypted here.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .localize import Change, Localized, LocalizeError, component_type

_REMOTE_WRITE = "prometheusremotewrite"
_TRACES_PREFIX = "otlphttp/send-traces"


@dataclass(frozen=True)
class Backend:
    """Where a local backend listens: `url` (scheme, host, port), its role for people, and
    for TLS the name its certificate holds (None: plain HTTP)."""

    role: str
    url: str
    tls: bool = False


@dataclass(frozen=True)
class SignalTargets:
    remote_write: Backend | None = None  # the local Prometheus (remote-write receiver)
    traces: Backend | None = None  # the local traces backend (OTLP/HTTP)
    ca_file: Path | None = None  # the CA the charm installed (verifies TLS backends)


def exporter_role(name: str) -> str | None:
    """`metrics` for a remote-write exporter, `traces` for the send-traces one, else None."""
    if component_type(name) == _REMOTE_WRITE:
        return "metrics"
    if name.startswith(_TRACES_PREFIX):
        return "traces"
    return None


def _move(name: str, exporter: dict[str, Any], backend: Backend, ca: Path | None,
          changes: list[Change]) -> None:  # fmt: skip
    endpoint = str(exporter.get("endpoint") or "")
    rendered, local = urlsplit(endpoint), urlsplit(backend.url)
    if not rendered.hostname:
        raise LocalizeError(f"exporters.{name}.endpoint: no host in {endpoint!r}")
    new = urlunsplit(rendered._replace(scheme=local.scheme, netloc=local.netloc))
    exporter["endpoint"] = new
    why = f"the local {backend.role}"
    if rendered.scheme == "https" and not backend.tls:
        why += " (plain HTTP here: this hop is not encrypted locally)"
    changes.append(Change(f"exporters.{name}.endpoint", endpoint, new, why))
    if rendered.scheme != "https" or not backend.tls:
        return
    tls = exporter.setdefault("tls", {})
    if "server_name_override" not in tls:
        tls["server_name_override"] = rendered.hostname
        why = f"verify the name the {backend.role}'s certificate holds"
        changes.append(Change(f"exporters.{name}.tls.server_name_override", None,
                              rendered.hostname, why))  # fmt: skip
    if "ca_file" not in tls:
        if ca is None:
            raise LocalizeError(f"exporters.{name}: HTTPS to the {backend.role} but no CA file")
        tls["ca_file"] = str(ca)
        why = "the CA the charm installed in its container's trust store"
        changes.append(Change(f"exporters.{name}.tls.ca_file", None, str(ca), why))


def exporters(localized: Localized, targets: SignalTargets) -> Localized:
    """The collector config with its remote-write and send-traces exporters moved to the local
    backends; a rendered exporter without a local backend is an error naming it."""
    cfg = copy.deepcopy(localized.config)
    changes = list(localized.changes)
    wanted: Mapping[str, Backend | None] = {
        "metrics": targets.remote_write,
        "traces": targets.traces,
    }
    for name, exporter in (cfg.get("exporters") or {}).items():
        role = exporter_role(str(name))
        if role is None or not isinstance(exporter, dict):
            continue
        backend = wanted[role]
        if backend is None:
            raise LocalizeError(
                f"exporters.{name}: the charm renders a {role} exporter but the stack runs no "
                f"{role} backend (ask for it with --signals …,{role})"
            )
        _move(str(name), exporter, backend, targets.ca_file, changes)  # pyright: ignore[reportUnknownArgumentType]
    return Localized(cfg, changes, list(localized.missing))
