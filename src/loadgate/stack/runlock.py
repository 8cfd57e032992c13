"""One run at a time per stack: an exclusive flock on a file in the stack's run directory.

The kernel drops a flock when its holder exits, however it exits, so a crash never leaves the
stack locked. The holder writes who it is into the file (process, command, run id), which gives
the refusal its message and lets the next holder see that the previous one died mid-run (the
record is cleared on a normal release).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import time
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .procs import ProcessId

_LOCK_NAME = "run.lock"


@dataclass(frozen=True)
class Holder:
    """Who holds (or last held) a stack's lock."""

    process: ProcessId
    command: str  # "run", "stack up", "stack down"
    run_id: str = ""
    since: float = 0.0

    @classmethod
    def me(cls, command: str, run_id: str = "") -> Holder:
        return cls(ProcessId.me(), command, run_id, time.time())

    def describe(self) -> str:
        what = f"run {self.run_id}" if self.run_id else f"`loadgate {self.command}`"
        since = time.strftime("%H:%M:%S", time.localtime(self.since)) if self.since else "?"
        return f"{what} (loadgate pid {self.process.pid}, since {since})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "process": self.process.to_dict(),
            "command": self.command,
            "run_id": self.run_id,
            "since": self.since,
        }

    @classmethod
    def from_dict(cls, data: Any) -> Holder | None:
        if not isinstance(data, dict):
            return None
        process = ProcessId.from_dict(data.get("process"))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        if process is None:
            return None
        return cls(
            process,
            str(data.get("command") or "?"),  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
            str(data.get("run_id") or ""),  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
            float(data.get("since") or 0.0),  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        )


class BusyError(RuntimeError):
    """Another process holds the stack's lock."""

    def __init__(self, root: Path, holder: Holder | None):
        self.root = root
        self.holder = holder
        who = holder.describe() if holder else "another loadgate process"
        super().__init__(
            f"the stack at {root} is in use by {who}; one run at a time per stack: wait for it, "
            f"stop it (kill -TERM {holder.process.pid if holder else '<pid>'}), or give this run "
            "its own stack with LOADGATE_STACK_DIR and --base-port"
        )


def lock_path(root: Path) -> Path:
    return root / _LOCK_NAME


def read_holder(root: Path) -> Holder | None:
    """The record in the lock file: the holder, or the last one if it died holding it."""
    try:
        text = lock_path(root).read_text()
    except OSError:
        return None
    try:
        return Holder.from_dict(json.loads(text)) if text.strip() else None
    except json.JSONDecodeError:
        return None


def is_locked(root: Path) -> bool:
    """Whether some process holds the lock now. The probe takes a shared lock for an instant
    when it is free, so a run starting at that very instant would be refused: for tests and
    diagnostics, not for `stack status` (which reads the holder's record instead)."""
    try:
        fd = os.open(lock_path(root), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return True
        raise
    finally:
        os.close(fd)
    return False


class RunLock:
    """The held lock of one stack directory."""

    def __init__(self, root: Path, fd: int, holder: Holder, previous: Holder | None):
        self.root = root
        self._fd = fd
        self.holder = holder
        # A record left by a holder that did not release: it died holding the lock.
        self.previous = previous

    def _write(self, holder: Holder | None) -> None:
        data = b"" if holder is None else json.dumps(holder.to_dict()).encode()
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, data, 0)
        os.fsync(self._fd)

    def update(self, holder: Holder) -> None:
        self.holder = holder
        self._write(holder)

    def release(self) -> None:
        if self._fd < 0:
            return
        with contextlib.suppress(OSError):
            self._write(None)
        os.close(self._fd)  # closing drops the flock
        self._fd = -1


def acquire(root: Path, holder: Holder) -> RunLock:
    """Take the stack's lock without waiting; raise Busy naming the holder if it is taken."""
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path(root), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise BusyError(root, read_holder(root)) from None
        raise
    previous = read_holder(root)  # the lock was free: a record here is a dead holder's
    lock = RunLock(root, fd, holder, previous)
    lock.update(holder)
    return lock


@contextlib.contextmanager
def held(root: Path, holder: Holder) -> Generator[RunLock]:
    lock = acquire(root, holder)
    try:
        yield lock
    finally:
        lock.release()
