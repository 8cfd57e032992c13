"""The charms' `cpu` and `memory` options enforced as Kubernetes enforces them, end to end with
the real binaries: a collector over its memory limit is OOM-killed by the kernel and restarted
by Pebble, a CPU limit throttles it, every figure lands in result.json and the figures table,
and every control group made is removed (at `stack down`, and after a stack died)."""

from __future__ import annotations

import json
import os
import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import processes_mentioning

from loadgate import cli
from loadgate.stack import cgroups, choice, local, procs
from loadgate.stack.ports import Ports

pytestmark = pytest.mark.local

MI = 2**20
# A batch processor that holds every record for two minutes: the collector's memory grows with
# the load until the kernel kills it (what a memory-hungry pipeline does to its pod).
HOLD_EVERYTHING = "batch:\n  timeout: 120s\n  send_batch_size: 100000000\n"


def result_of(results: Path) -> dict[str, Any]:
    (path,) = results.glob("*/result.json")
    return json.loads(path.read_text())


def stack_groups_left(root: Path) -> list[str]:
    """Folders of this stack's control groups still there, in every hierarchy of ours."""
    name = cgroups.stack_group_name(root)
    return [
        h.path + "/" + name for h in cgroups.this_process().values() if Path(h.path, name).exists()
    ]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LOADGATE_STACK_DIR", str(tmp_path / "stack"))
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(tmp_path / "results"))
    return tmp_path


def test_a_collector_over_its_memory_limit_is_oom_killed_and_restarted(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hold = env / "hold.yaml"
    hold.write_text(HOLD_EVERYTHING)
    code = cli.main([
        "run", "--charm-config", "memory=200Mi", "--charm-config", f"processors=@{hold}",
        "--base-port", "25510", "--duration", "30s", "--rate", "120000",
        "--body-min", "8192", "--body-max", "8192", "--drain-timeout", "20",
    ])  # fmt: skip
    out = capsys.readouterr().out
    result = result_of(env / "results")
    used = result["resources"]["services"]["otelcol"]
    print(f"\n[oom] resources: {json.dumps(used)}")
    assert code == cli.EXIT_GATE_FAILED, out  # records held in memory died with it
    assert used["cgroup"] in ("v1", "v2")
    assert used["not_enforced"] == {}
    assert used["memory_limit_bytes"] == 200 * MI
    # The kernel killed it, at its limit, and Pebble saw SIGKILL (128 + 9) and restarted it.
    assert used["oom_kills"] >= 1
    assert used["exits"]
    assert {e["code"] for e in used["exits"]} == {137}
    assert len(used["exits"]) == used["oom_kills"]
    # Pebble restarted it after each kill (the last restart may still wait out its back-off).
    assert used["restarts"] >= 1
    assert len(used["exits"]) - 1 <= used["restarts"] <= len(used["exits"])
    if used["memory_peak_bytes"] is not None:  # v2 kernels without memory.peak: unknown
        # At its limit: the v1 high-water mark may stand a page or a charge batch above it
        # (measured once: 200 MiB + 4,096 bytes).
        assert 190 * MI <= used["memory_peak_bytes"] <= 201 * MI
    # Prometheus saw restarts too, from the collector's own uptime (a start it never scraped
    # it cannot see).
    assert 1 <= result["restarts"]["otelcol"]["count"] <= used["restarts"]
    assert "otelcol limits (cgroup" in out
    assert "OOM kill(s)" in out
    assert stack_groups_left(env / "stack") == []  # the run stopped its stack: groups gone


def test_a_cpu_limit_throttles_the_collector(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 100m is below the charm's request (0.25): the pod would get 250m, and so does this stack.
    # 120,000 records/min ask the collector for about 0.26 cores or more (0.13 CPU s per 1,000
    # records on its own CPU, more shared): above the quota, so it is throttled.
    code = cli.main([
        "run", "--charm-config", "cpu=100m", "--base-port", "25520",
        "--duration", "15s", "--rate", "120000", "--drain-timeout", "60",
    ])  # fmt: skip
    captured = capsys.readouterr()
    out = captured.out
    result = result_of(env / "results")
    used = result["resources"]["services"]["otelcol"]
    print(f"\n[cpu] resources: {json.dumps(used)}")
    assert code in (cli.EXIT_OK, cli.EXIT_GATE_FAILED), out
    assert (used["cpu_limit"], used["cpu_limit_millis"]) == ("100m", 250)
    assert any("raised to the charm's request 0.25" in n for n in used["notes"])
    assert used["memory_limit_bytes"] is None
    assert used["cpu_periods"] > 0
    assert 0 < used["cpu_throttled_periods"] <= used["cpu_periods"]
    assert used["cpu_throttled_s"] > 0
    assert (used["oom_kills"], used["restarts"], used["exits"]) == (None, 0, [])
    said = captured.err.replace("\n", " ")
    assert re.search(r"otelcol limits enforced \(cgroup v[12]\): cpu 250m", said), said
    assert "throttled" in out
    assert stack_groups_left(env / "stack") == []


def test_a_cpu_steal_takes_its_share_of_the_pipelines_cpus_while_the_load_runs(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `--hand cpu-steal=20`: a worker in a group of its own, at 20 % of the pipeline's CPUs,
    # spins while the run loads; the kernel throttles it at that quota, and it stops after.
    # A saturation run: where the collector and Loki want every cycle, the worker still gets
    # its share (inside the stack's group, at the default weight, it got 0.1 %).
    code = cli.main([
        "run", "--saturate", "--hand", "cpu-steal=20", "--base-port", "25530",
        "--duration", "15s", "--drain-timeout", "60",
    ])  # fmt: skip
    out = capsys.readouterr().out
    result = result_of(env / "results")
    used = result["resources"]["services"]["cpu-steal"]
    cpus = len(result["environment"]["cpu_split"]["pipeline"])
    worker_s = result["cpu"]["used_s"]["cpu-steal"]
    window_s = result["cpu"]["window_s"]
    print(f"\n[steal] resources: {json.dumps(used)}; worker {worker_s} s over {window_s} s")
    assert code in (cli.EXIT_OK, cli.EXIT_GATE_FAILED), out
    assert used["cpu_limit_millis"] == 200 * cpus
    assert used["not_enforced"] == {}
    # Always runnable while armed: throttled in most of the load's periods, at its share.
    assert used["cpu_throttled_periods"] > 0.5 * used["cpu_periods"] > 0
    assert 0.15 * cpus * window_s <= worker_s <= 0.25 * cpus * window_s
    assert "hand: cpu-steal=20" in json.dumps(result["environment"])
    assert stack_groups_left(env / "stack") == []
    assert not Path(
        f"{cgroups.this_process()['cpu'].path}/{cgroups.stack_group_name(env / 'stack')}-cpu-steal"
    ).exists()
    # The run's stack went down with it, the worker too (Pebble stopped it as a service).
    assert processes_mentioning(env / "stack" / "config" / "cpu-steal.until") == []


def test_groups_of_a_stack_that_died_are_removed_by_the_next(
    built_bin_dir: Path, tmp_path: Path
) -> None:
    prepared = choice.request(choice.StackFlags(charm_config=("memory=1Gi",))).prepare()
    root = tmp_path / "stack"
    info = local.up(prepared, Ports.from_base(25530), root=root, bin_dir=built_bin_dir)
    try:
        assert info.limits is not None
        placement = info.limits.placements["otelcol"]
        (group,) = [g for g in placement.groups if g.controller == "memory"]
        assert (Path(group.path) / "memory.limit_in_bytes").read_text().strip() == str(2**30)
        inside = cgroups.members(group.path)
        assert inside
        assert all("otelcol" in (procs.exe(p) or "") for p in inside)
        # The whole stack dies at once (Pebble and its services): its groups stay behind.
        for member in local.stack_processes(info):
            os.kill(member.pid, signal.SIGKILL)
        for member in local.stack_processes(info):
            procs.terminate(member, 5.0)
        assert stack_groups_left(root)
        deadline = time.monotonic() + 10  # killed processes leave their group as they exit
        while cgroups.members(group.path) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = {p: procs.cmdline(p) for p in cgroups.members(group.path)}
        assert left == {}
        steps: list[str] = []
        again = local.up(
            prepared, Ports.from_base(25530), root=root, bin_dir=built_bin_dir,
            on_step=steps.append,
        )  # fmt: skip
        assert any("control groups of a stack that is gone, removed" in s for s in steps)
        assert again.limits is not None
        assert cgroups.members(again.limits.placements["otelcol"].groups[0].path)
    finally:
        stopped = local.down(root)
    assert any(line.startswith("control groups loadgate-") for line in stopped)
    assert stack_groups_left(root) == []
    assert not (root / "cgroups.json").exists()
