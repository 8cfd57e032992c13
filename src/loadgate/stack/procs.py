"""Processes by identity: a PID together with its start time, so a reused PID is never mistaken
for the process loadgate started, and the members of a session (a Pebble daemon's services).

Linux only: everything is read from /proc/<pid>/stat (`loadgate.procfs`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from loadgate.procfs import PROC, stat

_PR_SET_DEATHSIG = 1


@dataclass(frozen=True)
class ProcessId:
    """A process as loadgate recorded it: PID and start time (clock ticks after boot)."""

    pid: int
    start_ticks: int

    @classmethod
    def of(cls, pid: int) -> ProcessId | None:
        st = stat(pid)
        return None if st is None else cls(pid, st.start_ticks)

    @classmethod
    def me(cls) -> ProcessId:
        found = cls.of(os.getpid())
        assert found is not None
        return found

    def alive(self) -> bool:
        """The very process recorded still runs (not a zombie, not a newer one with its PID)."""
        st = stat(self.pid)
        return st is not None and st.start_ticks == self.start_ticks and st.state not in "ZX"

    def to_dict(self) -> dict[str, int]:
        return {"pid": self.pid, "start_ticks": self.start_ticks}

    @classmethod
    def from_dict(cls, data: Any) -> ProcessId | None:
        if not isinstance(data, dict):
            return None
        try:
            return cls(int(data["pid"]), int(data["start_ticks"]))  # pyright: ignore[reportUnknownArgumentType]
        except (KeyError, TypeError, ValueError):
            return None


def exe(pid: int) -> str | None:
    """The executable of a process (None when it is gone or not readable)."""
    try:
        return os.readlink(PROC / str(pid) / "exe")
    except OSError:
        return None


def cmdline(pid: int) -> list[str]:
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def all_pids() -> list[int]:
    return [int(entry.name) for entry in PROC.iterdir() if entry.name.isdigit()]


def session_members(leader: ProcessId) -> list[ProcessId]:
    """Live processes of the session `leader` created (its PID is their session id), started
    no earlier than it. Linux does not hand out a PID that is still some process's session id,
    so while any member lives these are exactly the leader's descendants that kept its session."""
    found: list[ProcessId] = []
    for pid in all_pids():
        st = stat(pid)
        if (
            st is not None
            and st.sid == leader.pid
            and st.start_ticks >= leader.start_ticks
            and st.state not in "ZX"
        ):
            found.append(ProcessId(pid, st.start_ticks))
    return found


def _reap(pid: int) -> None:
    """Collect a child of ours that exited (harmless for any other process)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _wait_gone(proc: ProcessId, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        _reap(proc.pid)
        if not proc.alive():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def signal_if_alive(proc: ProcessId, sig: int) -> bool:
    """Send `sig` only if the recorded process still runs; True if it was sent."""
    if not proc.alive():
        return False
    try:
        os.kill(proc.pid, sig)
    except ProcessLookupError:
        return False
    return True


def stop_child(proc: subprocess.Popen[bytes], timeout: float) -> None:
    """Stop a child this process started and reap it: SIGTERM, then SIGKILL after `timeout`
    (nothing when it has ended already)."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def terminate(proc: ProcessId, timeout: float = 10.0) -> bool:
    """SIGTERM, then SIGKILL after `timeout`. True if the process was running."""
    if not signal_if_alive(proc, signal.SIGTERM):
        return False
    if not _wait_gone(proc, timeout):
        signal_if_alive(proc, signal.SIGKILL)
        _wait_gone(proc, 5.0)
    return True


def parent_death_signal(sig: int = signal.SIGKILL) -> Callable[[], None]:
    """A `preexec_fn` that asks the kernel to send `sig` to the child when this process dies,
    so a child (k6) cannot outlive loadgate, even after a SIGKILL. Call it in the thread that
    will wait for the child (the kernel ties the signal to the creating thread)."""
    parent = os.getpid()

    def preexec() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_DEATHSIG, sig, 0, 0, 0) != 0:
            os._exit(126)
        if os.getppid() != parent:  # the parent died before the request took effect
            os._exit(126)

    return preexec


def on_cpus(cpus: Collection[int] | None) -> Callable[[], None] | None:
    """A `preexec_fn` that puts the child on these CPUs (None: nothing to do)."""
    if not cpus:
        return None
    chosen = set(cpus)

    def pin() -> None:
        os.sched_setaffinity(0, chosen)

    return pin
