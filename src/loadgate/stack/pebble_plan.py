"""The parts of the local stack's Pebble plan, built in one place: a service started with
the layer and restarted a second after it fails, and a `ready` check probed every 2 s (three
failures in a row make it fail). The stack's own services (render.py), the stand-in collectors
(standin.py) and the backend fault proxy (fault_service.py) are all built here; the charms'
services come from their own plans (charm_build.py)."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def service(
    summary: str,
    argv: Sequence[str],
    working_dir: Path,
    environment: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A service entry: `argv` run in `working_dir` (with `environment` added, if any),
    started with the layer, restarted 1 s after a failure."""
    entry: dict[str, Any] = {
        "override": "replace",
        "summary": summary,
        "command": shlex.join(argv),
        "startup": "enabled",
        "working-dir": str(working_dir),
    }
    if environment is not None:
        entry["environment"] = dict(environment)
    entry.update({"on-failure": "restart", "backoff-delay": "1s"})
    return entry


def ready_check(probe: Mapping[str, Any]) -> dict[str, Any]:
    """A `ready` check entry: `probe` ({"http": {"url": ...}} or {"tcp": {...}}) every 2 s,
    2 s to answer, failing after 3 misses in a row."""
    return {
        "override": "replace",
        "level": "ready",
        "period": "2s",
        "timeout": "2s",
        "threshold": 3,
        **probe,
    }


def http_check(url: str) -> dict[str, Any]:
    """A `ready` check that GETs `url` (Pebble verifies a certificate for the URL's host)."""
    return ready_check({"http": {"url": url}})


def layer(summary: str, services: Mapping[str, Any], checks: Mapping[str, Any]) -> dict[str, Any]:
    """A layer of these services and checks."""
    return {"summary": summary, "services": dict(services), "checks": dict(checks)}
