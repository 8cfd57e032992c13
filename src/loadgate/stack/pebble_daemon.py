"""Start a Pebble daemon in the background: its state folder, socket and log file."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from . import procs

_SOCKET_NAME = ".pebble.socket"


def socket_path(state: Path) -> Path:
    return state / _SOCKET_NAME


def spawn(
    pebble: Path,
    state: Path,
    log: Path,
    *,
    args: Sequence[str] = ("run",),
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    cpus: Collection[int] | None = None,
) -> subprocess.Popen[bytes]:
    """`pebble <args>` with PEBBLE=state, in its own session (so Ctrl-C in the caller's terminal
    does not reach it), appending its output, and its services' with --verbose, to `log`; on
    `cpus` (its services start there too, unless their commands move them)."""
    full_env = {**os.environ, **(env or {})}
    full_env["PEBBLE"] = str(state)
    full_env["PEBBLE_SOCKET"] = str(socket_path(state))
    with log.open("ab") as out:
        return subprocess.Popen(
            [str(pebble), *args],
            env=full_env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=cwd,
            preexec_fn=procs.on_cpus(cpus),
        )
