"""`loadgate run` around the load: one run per stack, a stack stopped only by the run that
started it, stacks left by dead runs found, and SIGTERM / SIGHUP handled like Ctrl-C."""

from __future__ import annotations

import argparse
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from loadgate import cli
from loadgate.cli import run as run_cli
from loadgate.contract.spec import RunSpec
from loadgate.runner.run import RunError
from loadgate.stack import local, runlock
from loadgate.stack.ports import Ports
from loadgate.stack.procs import ProcessId
from loadgate.stack.profile import Profile

DEAD = ProcessId(os.getpid(), 1)  # this PID with another start time: a process that is gone


def returns(value: Any) -> Callable[..., Any]:
    """A stand-in that takes any arguments and returns `value`."""

    def stand_in(*args: Any, **kwargs: Any) -> Any:
        return value

    return stand_in


class Calls:
    def __init__(self) -> None:
        self.started: list[local.Owner | None] = []
        self.downs = 0
        self.closed = 0
        self.ran = 0


def info_of(root: Path, owner: local.Owner | None, pebble: ProcessId | None = None) -> Any:
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


@pytest.fixture
def flow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Calls:
    """cmd_run with the stack, k6 and the load replaced by recorders."""
    calls = Calls()
    root = tmp_path / "stack"
    monkeypatch.setenv("LOADGATE_STACK_DIR", str(root))
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setattr(run_cli, "build_missing", returns(cli.EXIT_OK))
    # The stack asked for, resolved: a hand profile here (no charm rendering in these tests).
    monkeypatch.setattr(run_cli, "prepare_stack", returns(Profile()))

    def start_stack(
        args: argparse.Namespace, owner: local.Owner | None = None, what: Any = None
    ) -> Any:
        calls.started.append(owner)
        return info_of(root, owner)

    def down(root: Path | None = None, timeout: float = 20.0) -> list[str]:
        calls.downs += 1
        return []

    class Target:
        def __init__(self, info: local.StackInfo):
            pass

        def close(self) -> None:
            calls.closed += 1

    def run_with(target: Any, spec: RunSpec, args: argparse.Namespace, **kw: Any) -> int:
        calls.ran += 1
        return cli.EXIT_OK

    monkeypatch.setattr(run_cli, "start_stack", start_stack)
    monkeypatch.setattr(local, "down", down)
    monkeypatch.setattr(run_cli, "LocalTarget", Target)
    monkeypatch.setattr(run_cli, "run_with", run_with)
    return calls


def root_of() -> Path:
    return Path(os.environ["LOADGATE_STACK_DIR"])


@pytest.mark.parametrize(
    ("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, 130)]
)
def test_a_stop_signal_mid_run_stops_the_load_and_the_stack_it_started(
    flow: Calls,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    sig: int,
    code: int,
) -> None:
    def run_with(target: Any, spec: RunSpec, args: argparse.Namespace, **kw: Any) -> int:
        os.kill(os.getpid(), sig)
        time.sleep(5)
        raise AssertionError("the signal did not interrupt the run")

    monkeypatch.setattr(run_cli, "run_with", run_with)
    assert cli.main(["run", "--run-id", "sig"]) == code
    assert flow.closed == 1  # the target (k6) was stopped
    assert flow.downs == 1  # the stack this run started was stopped
    assert "interrupted" in capsys.readouterr().err
    runlock.acquire(root_of(), runlock.Holder.me("run", "next")).release()  # lock released
    # The handlers are restored after the command.
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_a_signal_during_the_clean_up_waits_for_it_to_finish(
    flow: Calls, monkeypatch: pytest.MonkeyPatch
) -> None:
    finished: list[bool] = []

    def down(root: Path | None = None, timeout: float = 20.0) -> list[str]:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)
        finished.append(True)
        return []

    monkeypatch.setattr(local, "down", down)
    assert cli.main(["run"]) == 143
    assert finished == [True]


def test_a_second_run_on_the_same_stack_is_refused_naming_the_first(
    flow: Calls, capsys: pytest.CaptureFixture[str]
) -> None:
    holder = runlock.Holder.me("run", "first-run")
    with runlock.held(root_of(), holder):
        assert cli.main(["run", "--run-id", "second-run"]) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "in use by run first-run" in err
    assert f"loadgate pid {os.getpid()}" in err
    assert flow.started == []
    assert flow.ran == 0
    assert flow.downs == 0


def test_stack_down_is_refused_while_a_run_holds_the_stack(
    flow: Calls, capsys: pytest.CaptureFixture[str]
) -> None:
    with runlock.held(root_of(), runlock.Holder.me("run", "busy-run")):
        assert cli.main(["stack", "down"]) == cli.EXIT_BAD_INPUT
    assert "in use by run busy-run" in capsys.readouterr().err
    assert flow.downs == 0


@pytest.mark.parametrize("outcome", ["pass", "error"])
def test_a_run_that_did_not_start_the_stack_never_stops_it(
    flow: Calls, monkeypatch: pytest.MonkeyPatch, outcome: str
) -> None:
    info = info_of(root_of(), owner=None)  # started by `loadgate stack up`
    monkeypatch.setattr(local, "read_info", returns(info))
    monkeypatch.setattr(local, "status", returns(healthy(info)))
    if outcome == "error":

        def broken(*args: Any, **kw: Any) -> int:
            raise RunError("k6 exited with code 107")

        monkeypatch.setattr(run_cli, "run_with", broken)
    code = cli.main(["run"])
    assert code == (cli.EXIT_OK if outcome == "pass" else cli.EXIT_BAD_INPUT)
    assert flow.started == []
    assert flow.downs == 0


def test_a_stack_abandoned_by_a_dead_run_is_named_stopped_and_replaced(
    flow: Calls, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    info = info_of(root_of(), owner=local.Owner(DEAD, "killed-run", keep=False))
    monkeypatch.setattr(local, "read_info", returns(info))
    monkeypatch.setattr(local, "leftovers", returns([]))
    assert cli.main(["run", "--run-id", "next-run"]) == cli.EXIT_OK
    err = capsys.readouterr().err
    assert "was started by run killed-run" in err
    assert "ended without stopping it" in err
    assert flow.downs == 2  # the abandoned one, then this run's own at its end
    assert [o.run_id if o else None for o in flow.started] == ["next-run"]


def test_a_stack_kept_by_a_finished_run_is_reused_and_kept(
    flow: Calls, monkeypatch: pytest.MonkeyPatch
) -> None:
    info = info_of(root_of(), owner=local.Owner(DEAD, "kept-run", keep=True))
    monkeypatch.setattr(local, "read_info", returns(info))
    monkeypatch.setattr(local, "status", returns(healthy(info)))
    assert cli.main(["run"]) == cli.EXIT_OK
    assert flow.started == []
    assert flow.downs == 0
    assert flow.ran == 1


@pytest.mark.parametrize(
    ("sick", "said"),
    [
        ({"loki": "ConnectError"}, "loki is not healthy (ConnectError, pebble: inactive)"),
        ({"prometheus": "ConnectError"}, "Prometheus is down (ConnectError"),
    ],
)
def test_a_broken_running_stack_is_refused_before_any_load(
    flow: Calls,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    sick: dict[str, str],
    said: str,
) -> None:
    info = info_of(root_of(), owner=None)
    monkeypatch.setattr(local, "read_info", returns(info))
    monkeypatch.setattr(local, "status", returns(healthy(info, sick)))
    assert cli.main(["run"]) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert said in err
    assert flow.ran == 0
    assert flow.downs == 0


def test_the_lock_names_its_holder_and_outlives_nothing(tmp_path: Path) -> None:
    first = runlock.acquire(tmp_path, runlock.Holder.me("run", "a"))
    assert runlock.is_locked(tmp_path)
    with pytest.raises(runlock.BusyError) as info:
        runlock.acquire(tmp_path, runlock.Holder.me("run", "b"))
    assert info.value.holder is not None
    assert info.value.holder.run_id == "a"
    first.release()
    assert not runlock.is_locked(tmp_path)
    second = runlock.acquire(tmp_path, runlock.Holder.me("run", "b"))
    assert second.previous is None  # a clean release leaves no record behind
    second.release()


def test_a_record_left_by_a_dead_holder_is_reported_as_previous(tmp_path: Path) -> None:
    dead = runlock.Holder(DEAD, "run", "crashed", 1.0)
    runlock.lock_path(tmp_path).write_text(__import__("json").dumps(dead.to_dict()))
    lock = runlock.acquire(tmp_path, runlock.Holder.me("run", "now"))
    assert lock.previous == dead
    lock.release()
