"""The harness stays truthful when the pipeline, the machine or the user misbehaves (issue 10),
end to end with the real binaries: Loki stopped mid-run, the collector killed mid-run, SIGTERM
and SIGKILL of loadgate, two runs at once, Pebble dying, a broken stack reused."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import StartStack, processes_mentioning

from loadgate import cli
from loadgate.stack import local, orphans, runlock
from loadgate.stack.procs import ProcessId

pytestmark = pytest.mark.local


def wait_until(what: str, probe: Callable[[], object], timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.1)
    pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}")


def result_of(results: Path) -> dict[str, Any]:
    files = list(results.glob("*/result.json"))
    assert len(files) == 1, files
    return json.loads(files[0].read_text())


def show(name: str, result: dict[str, Any]) -> None:
    """The figures the issue asks to see, in the test log (pytest -s shows them)."""
    ledger = result["ledger"]
    steps = ", ".join(f"{s['name']}={s['count']}" for s in ledger["steps"])
    print(f"\n[{name}] ledger: {steps}; balanced={ledger['balanced']}")
    for s in ledger["steps"]:
        if s["note"]:
            print(f"[{name}]   {s['name']}: {s['note']}")
    print(f"[{name}] lost after acceptance: {ledger['lost_after_acceptance']}")
    print(f"[{name}] restarts: {json.dumps(result['restarts'])}")
    print(f"[{name}] pipeline unknown: {json.dumps(result['pipeline']['unknown'])}")
    print(f"[{name}] verdict {result['verdict']}; notes: {result['notes']}")


def assert_truthful(result: dict[str, Any]) -> None:
    """No negative count anywhere; every unknown says why; every loss is explained."""
    ledger = result["ledger"]
    for step in ledger["steps"]:
        assert step["count"] is None or step["count"] >= 0, step
        assert step["lost"] is None or step["lost"] >= 0, step
        if step["count"] is None:
            assert step["note"].startswith("unknown"), step
        if step["lost"]:
            assert step["note"], step
    for name, value in result["pipeline"].items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            assert value >= 0, (name, value)
    acknowledged, stored = ledger["acknowledged"], ledger["steps"][-1]["count"]
    assert stored is not None
    assert ledger["lost_after_acceptance"] == max(0, acknowledged - stored)
    gate = next(g for g in result["gates"] if g["name"] == "lost_records")
    assert gate["value"] == ledger["lost_after_acceptance"]


@pytest.fixture
def own_stack(
    start_stack: StartStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[[int], local.StackInfo]]:
    """A fresh stack for one test, stopped at its end; loadgate pointed at it."""
    started: list[Path] = []

    def start(base_port: int) -> local.StackInfo:
        root = tmp_path / f"stack-{base_port}"
        info = start_stack(root, base_port)
        started.append(root)
        monkeypatch.setenv("LOADGATE_STACK_DIR", str(root))
        monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(tmp_path / "results"))
        return info

    yield start
    for root in started:
        local.down(root)


def after_k6_starts(root: Path, delay: float, action: Callable[[], None]) -> threading.Thread:
    """Run `action` `delay` seconds after the run's k6 started (in a thread)."""

    def go() -> None:
        wait_until("k6 to start", lambda: orphans.read_k6(root), 90)
        time.sleep(delay)
        action()

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    return thread


def test_loki_stopped_for_15s_mid_run(
    own_stack: Callable[[int], local.StackInfo], capsys: pytest.CaptureFixture[str]
) -> None:
    info = own_stack(24720)
    pebble = local.pebble_client(info)

    def stop_loki_for_15s() -> None:
        pebble.stop_services(["loki"])
        time.sleep(15)
        pebble.start_services(["loki"])

    chaos = after_k6_starts(info.root, 6, stop_loki_for_15s)
    # 200 records/s: the 15 s outage (600 requests) fits the collector's queue of 1000.
    code = cli.main(["run", "--duration", "30s", "--rate", "12000", "--drain-timeout", "90"])
    chaos.join(timeout=60)
    out = capsys.readouterr()
    result = result_of(Path(os.environ["LOADGATE_RESULTS_DIR"]))
    show("loki stopped 15s", result)
    assert code in (cli.EXIT_OK, cli.EXIT_GATE_FAILED), out.err
    assert_truthful(result)
    assert result["restarts"]["loki"]["count"] == 1
    assert result["restarts"]["loki"]["supervisor"]["changed_during_run"] is True
    assert result["restarts"]["otelcol"]["count"] == 0
    # Loki's own counter restarted: unknown with a lower bound, never a wrong number.
    pipeline = result["pipeline"]
    assert pipeline["loki_received"] is None
    unknown = pipeline["unknown"]["loki_received"]
    assert "loki restarted 1 time" in unknown["reason"]
    # (Loki counts lines it received, retried pushes included: not bounded by what it stores.)
    assert unknown["lower_bound"] > 0
    # The collector did not restart: its counts are exact.
    counts = [s["count"] for s in result["ledger"]["steps"]]
    assert None not in counts
    assert result["delivered"]["drained"] is True
    # Loki may lose a few records it acknowledged just before it stopped (seen here: 0 to 15
    # of ~40,000): the gate says so, and the ledger names the restart as the cause.
    stored = result["ledger"]["steps"][-1]
    if result["ledger"]["lost_after_acceptance"]:
        assert "Loki restarted during the run" in stored["note"]
    assert "Loki lines received" in out.out
    assert "unknown (at least" in out.out
    assert "loki restarts" in out.out


def test_collector_killed_mid_run(
    own_stack: Callable[[int], local.StackInfo], capsys: pytest.CaptureFixture[str]
) -> None:
    info = own_stack(24730)

    def kill_collector() -> None:
        found = [pid for name, pid in local.leftovers(info) if name == "otelcol"]
        assert len(found) == 1, local.leftovers(info)
        os.kill(found[0], signal.SIGKILL)  # Pebble restarts it after its 1 s back-off

    chaos = after_k6_starts(info.root, 6, kill_collector)
    code = cli.main(["run", "--duration", "20s", "--rate", "12000", "--drain-timeout", "90"])
    chaos.join(timeout=30)
    out = capsys.readouterr()
    result = result_of(Path(os.environ["LOADGATE_RESULTS_DIR"]))
    show("otelcol kill -9", result)
    assert code in (cli.EXIT_OK, cli.EXIT_GATE_FAILED), out.err
    assert_truthful(result)
    assert result["restarts"]["otelcol"]["count"] == 1
    assert result["restarts"]["otelcol"]["supervisor"]["changed_during_run"] is True
    accepted, exported = result["ledger"]["steps"][1], result["ledger"]["steps"][2]
    for step in (accepted, exported):
        assert step["count"] is None
        assert "otelcol restarted 1 time" in step["note"]
    assert result["pipeline"]["unknown"]["collector_accepted"]["lower_bound"] > 0
    assert result["restarts"]["loki"]["count"] == 0
    assert "otelcol restarts" in out.out


def loadgate_child(root: Path, results: Path, *argv: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "LOADGATE_STACK_DIR": str(root), "LOADGATE_RESULTS_DIR": str(results)}
    return subprocess.Popen(
        [sys.executable, "-m", "loadgate.cli", *argv],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


@pytest.fixture
def child_runs(built_bin_dir: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    children: list[subprocess.Popen[bytes]] = []
    yield children
    for child in children:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_sigterm_mid_run_leaves_no_process_and_a_second_run_is_refused(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    child_runs: list[subprocess.Popen[bytes]],
) -> None:
    root, results = tmp_path / "stack", tmp_path / "results"
    first = loadgate_child(
        root, results, "run", "--duration", "60s", "--rate", "6000", "--base-port", "24740",
        "--run-id", "first-run",
    )  # fmt: skip
    child_runs.append(first)
    k6 = wait_until("the first run's k6", lambda: orphans.read_k6(root), 90).process
    stack = local.read_info(root)
    assert stack is not None
    assert stack.owner is not None
    assert stack.owner.run_id == "first-run"
    members = local.stack_processes(stack)
    assert len(members) >= 4  # pebble, otelcol, loki, prometheus

    # Two runs at once: the second is refused, naming the first, and starts nothing.
    monkeypatch.setenv("LOADGATE_STACK_DIR", str(root))
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(tmp_path / "results-2"))
    code = cli.main(["run", "--duration", "5s", "--base-port", "24740", "--run-id", "second"])
    err = capsys.readouterr().err
    print(f"\n[two runs] second run: exit {code}: {err.strip()}")
    assert code == cli.EXIT_BAD_INPUT
    assert "in use by run first-run" in err
    assert f"loadgate pid {first.pid}" in err
    assert not (tmp_path / "results-2" / "second").exists()

    # SIGTERM (a CI cancel): k6 stopped, the stack the run started stopped, exit 143.
    first.send_signal(signal.SIGTERM)
    first.wait(timeout=90)
    stderr = first.stderr.read().decode() if first.stderr else ""
    print(f"[sigterm] first run: exit {first.returncode}; stderr tail: {stderr[-300:]!r}")
    assert first.returncode == 128 + signal.SIGTERM, stderr
    assert "SIGTERM" in stderr
    assert not k6.alive()
    assert [m for m in members if m.alive()] == []
    assert processes_mentioning(root) == []
    assert local.read_info(root) is None
    assert not runlock.is_locked(root)
    print(f"[sigterm] k6 pid {k6.pid} and the stack's {len(members)} processes are gone")


def test_after_sigkill_of_loadgate_the_next_run_finds_what_it_left(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    child_runs: list[subprocess.Popen[bytes]],
) -> None:
    root, results = tmp_path / "stack", tmp_path / "results"
    doomed = loadgate_child(
        root, results, "run", "--duration", "60s", "--rate", "6000", "--base-port", "24750",
        "--run-id", "killed-run",
    )  # fmt: skip
    child_runs.append(doomed)
    k6 = wait_until("the run's k6", lambda: orphans.read_k6(root), 90).process
    doomed.send_signal(signal.SIGKILL)
    doomed.wait()
    # k6 is tied to loadgate: it does not go on sending load.
    wait_until("k6 to die with loadgate", lambda: not k6.alive(), 10)
    stack = local.read_info(root)
    assert stack is not None
    assert stack.pebble_alive()  # the stack is left behind...
    assert stack.abandoned  # ...and known to be abandoned

    monkeypatch.setenv("LOADGATE_STACK_DIR", str(root))
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(tmp_path / "results-next"))
    code = cli.main(
        ["run", "--duration", "3s", "--rate", "3000", "--base-port", "24750", "--run-id", "next"]
    )
    out = capsys.readouterr()
    print(f"\n[after sigkill] next run said: {out.err.strip()[:600]}")
    assert code == cli.EXIT_OK, out.err
    assert f"run killed-run (loadgate pid {doomed.pid}" in out.err
    assert "died while it held the stack" in out.err
    assert "was started by run killed-run" in out.err
    assert "ended without stopping it" in out.err
    assert not stack.pebble_alive()
    assert processes_mentioning(root) == []
    assert result_of(tmp_path / "results-next")["ledger"]["balanced"] is True


def test_stack_down_after_pebble_died_stops_only_what_the_stack_started(
    own_stack: Callable[[int], local.StackInfo],
    stack: local.StackInfo,
    capsys: pytest.CaptureFixture[str],
) -> None:
    info = own_stack(24760)
    other, other_root = stack, stack.root  # another stack: the suite's shared one
    tail = subprocess.Popen(
        ["tail", "-f", str(info.root / "logs" / "pebble.log")], stdout=subprocess.DEVNULL
    )
    try:
        services = local.leftovers(info)
        assert {name for name, _ in services} == {"otelcol", "loki", "prometheus"}
        os.kill(info.pid, signal.SIGKILL)
        wait_until("pebble to die", lambda: not info.pebble_alive(), 10)

        assert cli.main(["stack", "status"]) == cli.EXIT_BAD_INPUT
        err = capsys.readouterr().err
        print(f"\n[pebble gone] status: {err.strip()}")
        assert f"Pebble daemon (pid {info.pid}) is gone, but its services still run" in err
        assert "`loadgate stack down`" in err

        assert cli.main(["run", "--duration", "3s", "--base-port", "24760"]) == 2
        err = capsys.readouterr().err
        print(f"[pebble gone] run: {err.strip()}")
        assert "lost its Pebble daemon" in err
        assert "`loadgate stack down`" in err

        # A service writes its output to Pebble's pipe: with Pebble gone, the next line it
        # writes kills it (SIGPIPE). Those still alive now are the ones `down` must stop.
        still = [pid for _, pid in local.leftovers(info)]
        assert still, "every service died with Pebble: nothing left to test"
        assert cli.main(["stack", "down"]) == cli.EXIT_OK
        err = capsys.readouterr().err
        # One more may die of SIGPIPE between that look and `down` (seen 2026-11-28): `down`
        # names what it stopped, and afterwards none of the stack's services is alive.
        named = [pid for pid in still if f"(pid {pid})" in err]
        assert named, f"`stack down` named none of {still}: {err}"
        alive = [pid for _, pid in services if (p := ProcessId.of(pid)) and p.alive()]
        assert alive == []
        assert tail.poll() is None  # a tail of the stack's log is not the stack's
        assert local.status(other_root).healthy  # nor is another stack
        assert len(local.stack_processes(other)) >= 4
    finally:
        tail.kill()
        tail.wait()


def test_a_broken_running_stack_is_refused_before_the_load(
    own_stack: Callable[[int], local.StackInfo], capsys: pytest.CaptureFixture[str]
) -> None:
    info = own_stack(24780)
    pebble = local.pebble_client(info)
    for service, said in (("prometheus", "Prometheus is down"), ("loki", "loki is not healthy")):
        pebble.stop_services([service])
        try:
            assert cli.main(["run", "--duration", "3s"]) == cli.EXIT_BAD_INPUT
            err = capsys.readouterr().err
            print(f"\n[{service} stopped] run: {err.strip()}")
            assert said in err
            assert "nothing was started" in err
            assert orphans.read_k6(info.root) is None
        finally:
            pebble.start_services([service])
    assert list(Path(os.environ["LOADGATE_RESULTS_DIR"]).glob("*/result.json")) == []
