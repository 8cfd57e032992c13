"""A process's fields from /proc/<pid>/stat (Linux): its identity (PID and start time), its
session and its CPU time so far.

Shared below `stack.procs` (processes by identity: recorded, checked, stopped) and
`measure.cpu` (CPU seconds from the kernel), which both read it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


@dataclass(frozen=True)
class Stat:
    """The fields of /proc/<pid>/stat loadgate uses."""

    pid: int
    state: str
    ppid: int
    pgid: int
    sid: int
    start_ticks: int  # clock ticks after boot: with the PID, a process's identity
    cpu_ticks: int = 0  # user + system CPU time so far, in clock ticks (utime + stime)


def _parse_stat(text: str) -> Stat:
    """Parse /proc/<pid>/stat; the command name may hold spaces and parentheses."""
    head, _, tail = text.rpartition(")")
    pid = int(head.split("(", 1)[0])
    fields = tail.split()
    # fields[0] is field 3 (state); starttime is field 22.
    return Stat(
        pid=pid,
        state=fields[0],
        ppid=int(fields[1]),
        pgid=int(fields[2]),
        sid=int(fields[3]),
        start_ticks=int(fields[19]),
        cpu_ticks=int(fields[11]) + int(fields[12]),
    )


def stat(pid: int) -> Stat | None:
    """The process's fields, None when it is gone or cannot be read."""
    try:
        return _parse_stat((PROC / str(pid) / "stat").read_text())
    except (OSError, ValueError, IndexError):
        return None


def clock_ticks() -> int:
    """Clock ticks per second, the unit of /proc's times."""
    return os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float | None:
    """A live process's CPU time so far (user + system), None when it cannot be read."""
    st = stat(pid)
    return None if st is None else st.cpu_ticks / clock_ticks()
