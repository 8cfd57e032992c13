"""The `target` URL of a run: a base URL (scheme, host, port; no path, query, credentials),
on loopback for local runs. Standard library only (shared with the k6 charm)."""

from __future__ import annotations

from urllib.parse import urlsplit

from .scenarios import OTLP_LOGS, Scenario


def check_target(target: str, loopback_only: bool, kind: Scenario = OTLP_LOGS) -> str | None:
    shape = f"must be an http:// or https:// URL of {kind.target}; got {target!r}"
    try:
        parts = urlsplit(target)
        hostname = parts.hostname  # raises ValueError on a malformed IPv6 literal
    except ValueError as exc:
        return f"{shape} ({exc})"
    if parts.scheme not in ("http", "https") or not hostname:
        return shape
    port_problem = _check_port(parts.netloc, target)
    if port_problem:
        return port_problem
    if parts.username is not None or parts.password is not None:
        return f"must not carry credentials (user:password@); got {parts.scheme}://…@{hostname}"
    if parts.query or parts.fragment:
        return f"must be the receiver's base URL without a query or fragment; got {target!r}"
    if parts.path not in ("", "/"):
        return (
            f"must be the receiver's base URL without a path ({kind.path} is added); got {target!r}"
        )
    if loopback_only and not _is_loopback(hostname):
        return (
            "local runs send traffic only to loopback (127.0.0.0/8, ::1, localhost); "
            f"got {hostname!r}"
        )
    return None


def _check_port(netloc: str, target: str) -> str | None:
    """The URL's port, if any, must be a number from 1 to 65535."""
    host_port = netloc.rpartition("@")[2]
    if host_port.startswith("["):
        _, bracket, rest = host_port.partition("]")
        port = rest[1:] if bracket and rest.startswith(":") else None
    else:
        port = host_port.partition(":")[2] if ":" in host_port else None
    if port is None:
        return None
    if not port.isascii() or not port.isdigit() or not 1 <= int(port) <= 65535:
        return f"port must be a number from 1 to 65535; got {port!r} in {target!r}"
    return None


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    if host.startswith("127."):
        return (
            all(p.isdigit() and 0 <= int(p) <= 255 for p in host.split("."))
            and host.count(".") == 3
        )
    return host in ("::1", "[::1]")
