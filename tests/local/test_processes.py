"""Process ties without the stack: a child dies with its parent, a crashed lock holder leaves
no stuck lock, and a k6 left by a dead run is found and stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from loadgate import procfs
from loadgate.stack import orphans, runlock
from loadgate.stack.procs import ProcessId

pytestmark = pytest.mark.local


def wait_until(what: str, probe: object, timeout: float = 10.0) -> None:
    assert callable(probe)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if probe():
            return
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


def test_a_child_tied_to_loadgate_dies_with_it_even_after_sigkill(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import subprocess, time, pathlib
                from loadgate.stack.procs import parent_death_signal
                child = subprocess.Popen(["sleep", "60"], preexec_fn=parent_death_signal())
                pathlib.Path({str(pid_file)!r}).write_text(str(child.pid))
                time.sleep(60)
                """
            ),
        ]
    )
    try:
        wait_until("the child", pid_file.exists)
        child = ProcessId.of(int(pid_file.read_text()))
        assert child is not None
        assert child.alive()
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        wait_until("the child to die with its parent", lambda: not child.alive(), 5)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


def test_a_lock_holder_killed_with_sigkill_leaves_the_lock_free(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import pathlib, time
                from loadgate.stack import runlock
                lock = runlock.acquire(pathlib.Path({str(tmp_path)!r}),
                                       runlock.Holder.me("run", "doomed"))
                time.sleep(60)
                """
            ),
        ]
    )
    try:
        wait_until("the holder to take the lock", lambda: runlock.is_locked(tmp_path))
        with pytest.raises(runlock.BusyError, match=f"run doomed \\(loadgate pid {holder.pid}"):
            runlock.acquire(tmp_path, runlock.Holder.me("run", "next"))
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        lock = runlock.acquire(tmp_path, runlock.Holder.me("run", "next"))
        assert lock.previous is not None
        assert lock.previous.run_id == "doomed"
        assert lock.previous.process.pid == holder.pid
        lock.release()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def test_a_k6_left_by_a_dead_run_is_found_and_stopped(tmp_path: Path) -> None:
    stray = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        k6 = ProcessId.of(stray.pid)
        assert k6 is not None
        dead_owner = ProcessId(os.getpid(), 1)  # this PID, another start time: gone
        orphans.record_k6(tmp_path, orphans.K6Record(k6, dead_owner, "crashed-run"))
        found = orphans.stop_orphan_k6(tmp_path)
        assert found is not None
        assert f"k6 (pid {stray.pid}) of run crashed-run was still sending load" in found
        stray.wait(timeout=10)
        assert not k6.alive()
        assert orphans.read_k6(tmp_path) is None
    finally:
        if stray.poll() is None:
            stray.kill()
            stray.wait()


def test_a_k6_of_a_live_run_is_left_alone(tmp_path: Path) -> None:
    stray = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        k6 = ProcessId.of(stray.pid)
        assert k6 is not None
        orphans.record_k6(tmp_path, orphans.K6Record(k6, ProcessId.me(), "live-run"))
        assert orphans.stop_orphan_k6(tmp_path) is None
        assert k6.alive()
        assert orphans.read_k6(tmp_path) is not None
    finally:
        stray.kill()
        stray.wait()


def test_a_reused_pid_is_not_the_recorded_process() -> None:
    me = ProcessId.me()
    assert me.alive()
    assert not ProcessId(me.pid, me.start_ticks + 1).alive()
    assert procfs.stat(me.pid) is not None
