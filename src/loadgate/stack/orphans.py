"""What a run that died (SIGKILL, a crash, a lost machine session) may have left behind, found
by the next run that takes the stack's lock: its k6 process and the stack it started.

k6 is tied to loadgate by a parent-death signal, so it should not survive; the record of which
k6 a run started (k6.json in the stack's run directory, with PID and start time) is the check
that it did not. The control groups a dead stack made (cgroups.json) are removed before a new
stack starts in its run directory.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import cgroups, procs
from .layout import Layout
from .procs import ProcessId


@dataclass(frozen=True)
class K6Record:
    process: ProcessId  # the k6 process
    owner: ProcessId  # the loadgate process that started it
    run_id: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "process": self.process.to_dict(),
            "owner": self.owner.to_dict(),
            "run_id": self.run_id,
        }

    @classmethod
    def from_dict(cls, data: Any) -> K6Record | None:
        if not isinstance(data, dict):
            return None
        process = ProcessId.from_dict(data.get("process"))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        owner = ProcessId.from_dict(data.get("owner"))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        if process is None or owner is None:
            return None
        return cls(process, owner, str(data.get("run_id") or ""))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]


def record_k6(root: Path, record: K6Record) -> None:
    path = Layout(root).k6_file
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record.to_dict()))
    tmp.replace(path)


def read_k6(root: Path) -> K6Record | None:
    try:
        return K6Record.from_dict(json.loads(Layout(root).k6_file.read_text()))
    except (OSError, json.JSONDecodeError):
        return None


def forget_k6(root: Path, process: ProcessId) -> None:
    """Remove the record if it is still the one of `process`."""
    record = read_k6(root)
    if record is not None and record.process == process:
        Layout(root).k6_file.unlink(missing_ok=True)


def stop_orphan_k6(root: Path) -> str | None:
    """Stop a k6 that a dead run left sending load; say what was found (None: nothing)."""
    record = read_k6(root)
    if record is None or record.owner.alive():
        return None
    Layout(root).k6_file.unlink(missing_ok=True)
    if not record.process.alive():
        return None
    procs.terminate(record.process, timeout=5.0)
    return (
        f"k6 (pid {record.process.pid}) of run {record.run_id} was still sending load after "
        f"its loadgate process (pid {record.owner.pid}) died: stopped it"
    )


def remove_stale_groups(root: Path) -> tuple[str | None, list[str]]:
    """Remove the control groups a stack that is gone left (its services are gone too: `up`
    refuses while any runs): (what was found, the groups that could not be removed)."""
    gone, left = cgroups.release(Layout(root).cgroups_file)
    found = f"control groups of a stack that is gone, removed: {', '.join(gone)}" if gone else None
    return found, left
