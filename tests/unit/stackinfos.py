"""Running stacks as `local.read_info` and `local.status` give them, for tests of what uses a
stack without starting one (the command line's flow, the stack session)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from loadgate.stack import local
from loadgate.stack.ports import Ports
from loadgate.stack.procs import ProcessId
from loadgate.stack.profile import Profile

DEAD = ProcessId(os.getpid(), 1)  # this PID with another start time: a process that is gone


def info_of(
    root: Path, owner: local.Owner | None, pebble: ProcessId | None = None
) -> local.StackInfo:
    """A running stack's info at `root`, started by `owner` (None: `loadgate stack up`)."""
    me = pebble or ProcessId.me()  # a live process stands in for Pebble
    return local.StackInfo(
        root=root,
        pid=me.pid,
        ports=Ports.from_base(24800),
        profile=Profile(),
        bin_dir=root / "bin",
        started_at=time.time(),
        pebble_start_ticks=me.start_ticks,
        owner=owner,
    )


def healthy(info: local.StackInfo, sick: dict[str, str] | None = None) -> local.StackStatus:
    """Its status: every service healthy but those `sick` (name: detail)."""
    services = [
        local.ServiceStatus(
            name,
            1,
            "inactive" if name in (sick or {}) else "active",
            name not in (sick or {}),
            (sick or {}).get(name, "HTTP 200"),
        )
        for name in ("otelcol", "loki", "prometheus")
    ]
    return local.StackStatus(running=True, info=info, services=services)
