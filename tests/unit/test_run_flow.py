"""`loadgate run` around the load: one run per stack, a stack stopped only by the run that
started it, stacks left by dead runs found, and SIGTERM / SIGHUP handled like Ctrl-C."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from stackinfos import DEAD, healthy, info_of
from support.fakes.target import FakeTarget
from support.runresults import run_result

from loadgate import cli
from loadgate.cli.seams import Seams
from loadgate.contract.spec import RunSpec
from loadgate.records.result import RunResult
from loadgate.runner.run import RunError
from loadgate.stack import local, runlock
from loadgate.stack.ops import StackOps
from loadgate.stack.ports import Ports
from loadgate.stack.profile import Profile


def returns(value: Any) -> Callable[..., Any]:
    """A stand-in that takes any arguments and returns `value`."""

    def stand_in(*args: Any, **kwargs: Any) -> Any:
        return value

    return stand_in


class Calls:
    """cmd_run's world as recorders: stacks started and stopped, targets closed, runs made."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.started: list[local.Owner | None] = []
        self.downs = 0
        self.closed = 0
        self.ran = 0
        self.seams = Seams(
            # The stack asked for, resolved: a hand profile here (no charm rendering).
            resolve_stack=returns(Profile()),
            build_missing=returns(cli.EXIT_OK),
            stack=StackOps(up=self.up, down=self.down),
            open_target=self.open_target,
            execute=self.execute,
        )

    def up(self, what: Any, ports: Ports, **kw: Any) -> local.StackInfo:
        self.started.append(kw["owner"])
        return info_of(self.root, kw["owner"])

    def down(self, root: Path | None = None, timeout: float = 20.0) -> list[str]:
        self.downs += 1
        return []

    def open_target(self, info: local.StackInfo) -> FakeTarget:
        return FakeTarget(on_close=self.count_close)

    def count_close(self) -> None:
        self.closed += 1

    def execute(self, spec: RunSpec, target: Any, results_root: Path, **kw: Any) -> RunResult:
        self.ran += 1
        return run_result(spec)  # complete and passed

    def with_stack(self, **ops: Any) -> Seams:
        """The seams with these stack operations replaced."""
        return replace(self.seams, stack=replace(self.seams.stack, **ops))


@pytest.fixture
def flow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Calls:
    """cmd_run with the stack, k6 and the load replaced by recorders."""
    root = tmp_path / "stack"
    monkeypatch.setenv("LOADGATE_STACK_DIR", str(root))
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(tmp_path / "results"))
    return Calls(root)


def root_of() -> Path:
    return Path(os.environ["LOADGATE_STACK_DIR"])


@pytest.mark.parametrize(
    ("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, 130)]
)
def test_a_stop_signal_mid_run_stops_the_load_and_the_stack_it_started(
    flow: Calls, capsys: pytest.CaptureFixture[str], sig: int, code: int
) -> None:
    def execute(spec: RunSpec, target: Any, results_root: Path, **kw: Any) -> RunResult:
        os.kill(os.getpid(), sig)
        time.sleep(5)
        raise AssertionError("the signal did not interrupt the run")

    assert cli.main(["run", "--run-id", "sig"], seams=replace(flow.seams, execute=execute)) == code
    assert flow.closed == 1  # the target (k6) was stopped
    assert flow.downs == 1  # the stack this run started was stopped
    assert "interrupted" in capsys.readouterr().err
    runlock.acquire(root_of(), runlock.Holder.me("run", "next")).release()  # lock released
    # The handlers are restored after the command.
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_a_signal_during_the_clean_up_waits_for_it_to_finish(flow: Calls) -> None:
    finished: list[bool] = []

    def down(root: Path | None = None, timeout: float = 20.0) -> list[str]:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)
        finished.append(True)
        return []

    assert cli.main(["run"], seams=flow.with_stack(down=down)) == 143
    assert finished == [True]


def test_a_second_run_on_the_same_stack_is_refused_naming_the_first(
    flow: Calls, capsys: pytest.CaptureFixture[str]
) -> None:
    holder = runlock.Holder.me("run", "first-run")
    with runlock.held(root_of(), holder):
        assert cli.main(["run", "--run-id", "second-run"], seams=flow.seams) == cli.EXIT_BAD_INPUT
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
        assert cli.main(["stack", "down"], seams=flow.seams) == cli.EXIT_BAD_INPUT
    assert "in use by run busy-run" in capsys.readouterr().err
    assert flow.downs == 0


@pytest.mark.parametrize("outcome", ["pass", "error"])
def test_a_run_that_did_not_start_the_stack_never_stops_it(flow: Calls, outcome: str) -> None:
    info = info_of(root_of(), owner=None)  # started by `loadgate stack up`
    seams = flow.with_stack(read_info=returns(info), status=returns(healthy(info)))
    if outcome == "error":

        def broken(*args: Any, **kw: Any) -> RunResult:
            raise RunError("k6 exited with code 107")

        seams = replace(seams, execute=broken)
    code = cli.main(["run"], seams=seams)
    assert code == (cli.EXIT_OK if outcome == "pass" else cli.EXIT_BAD_INPUT)
    assert flow.started == []
    assert flow.downs == 0


def test_a_stack_abandoned_by_a_dead_run_is_named_stopped_and_replaced(
    flow: Calls, capsys: pytest.CaptureFixture[str]
) -> None:
    info = info_of(root_of(), owner=local.Owner(DEAD, "killed-run", keep=False))
    seams = flow.with_stack(read_info=returns(info), leftovers=returns([]))
    assert cli.main(["run", "--run-id", "next-run"], seams=seams) == cli.EXIT_OK
    err = capsys.readouterr().err
    assert "was started by run killed-run" in err
    assert "ended without stopping it" in err
    assert flow.downs == 2  # the abandoned one, then this run's own at its end
    assert [o.run_id if o else None for o in flow.started] == ["next-run"]


def test_a_stack_kept_by_a_finished_run_is_reused_and_kept(flow: Calls) -> None:
    info = info_of(root_of(), owner=local.Owner(DEAD, "kept-run", keep=True))
    seams = flow.with_stack(read_info=returns(info), status=returns(healthy(info)))
    assert cli.main(["run"], seams=seams) == cli.EXIT_OK
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
    flow: Calls, capsys: pytest.CaptureFixture[str], sick: dict[str, str], said: str
) -> None:
    info = info_of(root_of(), owner=None)
    seams = flow.with_stack(read_info=returns(info), status=returns(healthy(info, sick)))
    assert cli.main(["run"], seams=seams) == cli.EXIT_BAD_INPUT
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


def test_stack_down_says_which_services_it_stopped_and_which_were_gone(
    flow: Calls, capsys: pytest.CaptureFixture[str]
) -> None:
    def down(root: Path | None = None, timeout: float = 20.0) -> list[str]:
        return ["services otelcol, loki", "already stopped: prometheus", "pebble (pid 7)"]

    seams = flow.with_stack(down=down)
    root_of().mkdir(parents=True, exist_ok=True)
    assert cli.main(["stack", "down"], seams=seams) == cli.EXIT_OK
    out = capsys.readouterr()
    text = out.out + out.err
    assert "stopped: services otelcol, loki, pebble (pid 7)" in text
    assert "already stopped: prometheus" in text
    assert "stopped: services otelcol, loki, already" not in text
