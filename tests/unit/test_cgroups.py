"""Control groups for the charms' limits (stack/cgroups.py, cgexec.py, resource_use.py): finding
this process's groups, making a stack's groups in fake v1 and v2 trees (folders here, not the
kernel's), what is NOT enforced and why, the wrapper's arguments, and the figures of a run."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from loadgate.measure.resources import Exit
from loadgate.stack import cgexec, cgroups, resource_use
from loadgate.stack.cgroups import Group, Hierarchy, Placement
from loadgate.stack.limits import Limits

MI = 2**20
LIMITS = Limits(cpu="250m", memory="200Mi", cpu_millis=250, memory_bytes=200 * MI)

# This machine's kind of view: v1 memory and cpu, a v2 mount with no controller of ours.
PROC_V1 = """9:name=systemd:/
4:memory:/process_api/abc
1:cpu:/
0::/
"""
MOUNTS_V1 = """31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""


def test_this_machines_kind_of_view_is_v1_for_both() -> None:
    found = cgroups.own_hierarchies(PROC_V1, MOUNTS_V1, {"/sys/fs/cgroup/unified": ("hugetlb",)})
    assert found == {
        "memory": Hierarchy("memory", 1, "/sys/fs/cgroup/memory/process_api/abc"),
        "cpu": Hierarchy("cpu", 1, "/sys/fs/cgroup/cpu"),
    }


def test_a_pure_v2_view_uses_the_unified_group_for_the_controllers_it_lists() -> None:
    proc = "0::/user.slice/app.scope\n"
    mounts = "25 21 0:22 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n"
    folder = "/sys/fs/cgroup/user.slice/app.scope"
    found = cgroups.own_hierarchies(proc, mounts, {folder: ("cpuset", "cpu", "memory", "pids")})
    assert found == {
        "memory": Hierarchy("memory", 2, folder),
        "cpu": Hierarchy("cpu", 2, folder),
    }
    assert cgroups.own_hierarchies(proc, mounts, {folder: ("pids",)}) == {}


def test_a_hierarchy_mounted_from_inside_and_escaped_mount_points() -> None:
    # A container sees its own group as the mount's root; a space is written \040.
    proc = "5:memory,cpu:/docker/c1/svc\n"
    mounts = "40 30 0:33 /docker/c1 /sys/fs/my\\040cg rw - cgroup cgroup rw,memory,cpu\n"
    found = cgroups.own_hierarchies(proc, mounts, {})
    assert found["memory"].path == "/sys/fs/my cg/svc"
    assert found["cpu"] == Hierarchy("cpu", 1, "/sys/fs/my cg/svc")
    outside = "5:memory:/elsewhere\n"
    assert cgroups.own_hierarchies(outside, mounts, {}) == {}


def fake_v1(tmp_path: Path) -> dict[str, Hierarchy]:
    """Folders standing for v1 memory and cpu hierarchies (the files a group would have)."""
    out: dict[str, Hierarchy] = {}
    for controller in ("memory", "cpu"):
        own = tmp_path / controller / "own"
        own.mkdir(parents=True)
        out[controller] = Hierarchy(controller, 1, str(own))
    return out


def test_groups_are_made_and_limited_in_each_v1_hierarchy(tmp_path: Path) -> None:
    root = tmp_path / "stack"
    placed = cgroups.place(root, {"otelcol": LIMITS, "loki": Limits()}, fake_v1(tmp_path))
    name = cgroups.stack_group_name(root)
    mem = tmp_path / "memory" / "own" / name / "otelcol"
    cpu = tmp_path / "cpu" / "own" / name / "otelcol"
    assert (mem / "memory.limit_in_bytes").read_text() == str(200 * MI)
    assert not (mem / "memory.memsw.limit_in_bytes").exists()  # no swap accounting: skipped
    assert (cpu / "cpu.cfs_quota_us").read_text() == "25000"
    assert (cpu / "cpu.cfs_period_us").read_text() == "100000"
    assert list(placed.placements) == ["otelcol"]  # loki has no limit: no group
    p = placed.placements["otelcol"]
    assert p.not_enforced == {}
    assert p.groups == [Group("memory", 1, str(mem)), Group("cpu", 1, str(cpu))]
    assert p.procs_files == sorted([str(mem / "cgroup.procs"), str(cpu / "cgroup.procs")])
    # deepest first, so that removal can go in order
    assert placed.made.index(str(mem)) < placed.made.index(str(mem.parent))
    assert cgroups.StackGroups.from_dict(placed.to_dict()) == placed


def test_a_v2_group_delegates_its_controllers(tmp_path: Path) -> None:
    own = tmp_path / "unified" / "own"
    own.mkdir(parents=True)
    found = {c: Hierarchy(c, 2, str(own)) for c in ("memory", "cpu")}
    placed = cgroups.place(tmp_path / "stack", {"otelcol": LIMITS}, found)
    group = own / cgroups.stack_group_name(tmp_path / "stack") / "otelcol"
    assert (group / "memory.max").read_text() == str(200 * MI)
    assert (group / "cpu.max").read_text() == "25000 100000"
    assert (own / "cgroup.subtree_control").read_text() in ("+memory", "+cpu")
    assert placed.placements["otelcol"].procs_files == [str(group / "cgroup.procs")]


def test_a_limit_that_cannot_be_written_is_not_enforced_and_says_why(tmp_path: Path) -> None:
    hierarchies = fake_v1(tmp_path)
    blocker = Path(hierarchies["cpu"].path) / cgroups.stack_group_name(tmp_path / "s")
    blocker.write_text("a file where the group would go")
    placed = cgroups.place(tmp_path / "s", {"otelcol": LIMITS}, {**hierarchies})
    p = placed.placements["otelcol"]
    assert [g.controller for g in p.groups] == ["memory"]
    assert "cannot write" in p.not_enforced["cpu"]
    assert "(cgroup v1)" in p.not_enforced["cpu"]
    lines = cgroups.describe(placed)
    assert lines[0] == "otelcol limits enforced (cgroup v1): memory 200Mi"
    assert lines[1].startswith("otelcol cpu limit 250m is NOT enforced: cannot write")


def test_no_hierarchy_means_not_enforced_and_no_wrapper(tmp_path: Path) -> None:
    placed = cgroups.place(tmp_path / "s", {"loki": LIMITS}, {})
    p = placed.placements["loki"]
    assert p.groups == []
    assert p.not_enforced == {
        "memory": "no cgroup hierarchy with the memory controller",
        "cpu": "no cgroup hierarchy with the cpu controller",
    }
    assert cgroups.wrapper_argv(p) == []
    assert all("NOT enforced" in line for line in cgroups.describe(placed))


def test_the_wrapper_joins_each_group_then_runs_the_command() -> None:
    p = Placement("otelcol", LIMITS, [Group("memory", 1, "/m/g"), Group("cpu", 1, "/c/g")])
    argv = cgroups.wrapper_argv(p)
    assert argv[1:3] == ["-I", cgexec.__file__]
    assert argv[3:] == ["--join", "/c/g/cgroup.procs", "--join", "/m/g/cgroup.procs", "--"]
    assert cgexec.split([*argv[3:], "/bin/otelcol", "--config=x"]) == (
        ["/c/g/cgroup.procs", "/m/g/cgroup.procs"],
        ["/bin/otelcol", "--config=x"],
    )
    for bad in (["/bin/x"], ["--join", "a", "--"], ["--into", "a", "--", "x"], ["--join", "--"]):
        with pytest.raises(ValueError, match="usage"):
            cgexec.split(bad)


def test_the_wrapper_stops_when_it_cannot_join(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "gone" / "cgroup.procs")
    assert cgexec.main(["--join", missing, "--", "/bin/true"]) == cgexec.EXIT_CANNOT_JOIN
    assert f"cannot join {missing}" in capsys.readouterr().err


def test_removal_goes_deepest_first_and_reports_what_is_left(tmp_path: Path) -> None:
    stack = tmp_path / "g"
    (stack / "otelcol").mkdir(parents=True)
    (stack / "loki").mkdir()
    (stack / "loki" / "cgroup.procs").write_text("4242\n")  # a group still holding a process
    left = cgroups.remove([str(stack / "otelcol"), str(stack / "loki"), str(stack)], timeout=0)
    assert not (stack / "otelcol").exists()
    assert len(left) == 2
    assert "processes 4242" in left[0]
    record = tmp_path / "cgroups.json"
    groups = cgroups.StackGroups(made=[str(stack / "loki" / "nothing")])
    cgroups.save(groups, record)
    assert cgroups.release(record) == ([str(stack / "loki" / "nothing")], [])
    assert not record.exists()
    assert cgroups.release(record) == ([], [])


def write_files(folder: Path, files: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)


def test_readings_of_v1_and_v2_groups(tmp_path: Path) -> None:
    write_files(
        tmp_path / "m1",
        {
            "memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
            "memory.failcnt": "17\n",
            "memory.max_usage_in_bytes": "1048576\n",
        },
    )
    write_files(
        tmp_path / "c1",
        {"cpu.stat": "nr_periods 40\nnr_throttled 12\nthrottled_time 3000000000\n"},
    )
    v1 = Placement(
        "otelcol",
        LIMITS,
        [Group("memory", 1, str(tmp_path / "m1")), Group("cpu", 1, str(tmp_path / "c1"))],
    )
    assert resource_use.read(v1) == resource_use.Reading(2, 17, 1048576, 40, 12, 3_000_000_000)
    resource_use.reset_peak(v1)
    assert (tmp_path / "m1" / "memory.max_usage_in_bytes").read_text() == "0"
    write_files(
        tmp_path / "u",
        {
            "memory.events": "low 0\nhigh 0\nmax 9\noom 1\noom_kill 1\n",
            "cpu.stat": "usage_usec 9\nnr_periods 5\nnr_throttled 2\nthrottled_usec 1500\n",
        },
    )
    group = str(tmp_path / "u")
    v2 = Placement("loki", LIMITS, [Group("memory", 2, group), Group("cpu", 2, group)])
    # no memory.peak (older kernels): unknown, not 0
    assert resource_use.read(v2) == resource_use.Reading(1, None, None, 5, 2, 1_500_000)


PEBBLE_LOG = """\
2026-11-23T17:30:05.339Z [pebble] Started daemon.
2026-11-23T17:30:06.000Z [pebble] Service "otelcol" starting: /x/cgexec.py --join a -- /bin/otelcol
2026-11-23T17:31:00.100Z [otelcol] some output Service "otelcol" stopped unexpectedly with code 1
2026-11-23T17:31:00.250Z [pebble] Service "otelcol" stopped unexpectedly with code 137
2026-11-23T17:31:00.251Z [pebble] Service "otelcol" on-failure action is "restart", waiting ~500ms
2026-11-23T17:31:00.760Z [pebble] Service "otelcol" starting: /x/cgexec.py --join a -- /bin/otelcol
2026-11-23T17:31:02.000Z [pebble] Service "loki" stopped unexpectedly with code 2
"""


def test_pebbles_exits_and_starts_since_the_load_started() -> None:
    since = 1795455060.0  # 2026-11-23T17:31:00Z
    exits, starts = resource_use.pebble_events(PEBBLE_LOG.splitlines(), ["otelcol"], since)
    assert exits == [Exit("otelcol", 137, 1795455060.25)]
    assert starts == 1
    every, all_starts = resource_use.pebble_events(PEBBLE_LOG.splitlines(), ["otelcol"], 0)
    assert (len(every), all_starts) == (1, 2)
    loki, _ = resource_use.pebble_events(PEBBLE_LOG.splitlines(), ["loki"], since)
    assert [e.code for e in loki] == [2]


def test_the_figures_of_a_run_are_increases_and_unknown_stays_unknown() -> None:
    p = Placement("otelcol", LIMITS, [Group("memory", 1, "/m"), Group("cpu", 1, "/c")])
    start = resource_use.Reading(1, 0, 0, 100, 10, 2_000_000_000)
    end = resource_use.Reading(3, 5, 200 * MI, 160, 40, 5_500_000_000)
    exits = [Exit("otelcol", 137, 1.0), Exit("otelcol", 137, 2.0)]
    got = resource_use.figures(p, start, end, exits, 2)
    assert (got.oom_kills, got.memory_failcnt, got.memory_peak_bytes) == (2, 5, 200 * MI)
    assert (got.cpu_periods, got.cpu_throttled_periods, got.cpu_throttled_s) == (60, 30, 3.5)
    assert (got.restarts, got.cgroup) == (2, "v1")
    assert (got.memory_limit_bytes, got.cpu_limit_millis) == (200 * MI, 250)
    assert got.memory_peak_source == resource_use.PEAK_V1
    unknown = resource_use.figures(p, resource_use.Reading(), end, [], None)
    assert (unknown.oom_kills, unknown.cpu_throttled_s, unknown.restarts) == (None, None, None)
    # a counter that went down (a group made anew) is unknown, never negative
    assert resource_use.figures(p, end, start, [], 0).oom_kills is None
    nothing = Placement("loki", LIMITS, [], {"memory": "no hierarchy", "cpu": "no hierarchy"})
    none = resource_use.figures(nothing, resource_use.Reading(), resource_use.Reading(), [], 0)
    assert (none.cgroup, none.memory_limit_bytes, none.cpu_limit_millis) == ("none", None, None)
    assert none.not_enforced == {"memory": "no hierarchy", "cpu": "no hierarchy"}


def test_the_services_of_a_limited_container_start_in_its_group(tmp_path: Path) -> None:
    services = {
        "otelcol": {"command": "/bin/otelcol --config=/x/otelcol.yaml"},
        "loki": {"command": "/bin/loki -config.file=/x/loki.yaml"},
        "prometheus": {"command": "/bin/prometheus"},
    }
    roles = {"otelcol": "otelcol", "loki": "loki"}
    wanted = {"otelcol": LIMITS, "loki": Limits()}
    record = tmp_path / "cgroups.json"
    groups = cgroups.enter(services, roles, wanted, tmp_path / "s", record, fake_v1(tmp_path))
    assert groups is not None
    assert list(groups.placements) == ["otelcol"]
    assert groups.placements["otelcol"].services == ["otelcol"]
    argv = shlex.split(services["otelcol"]["command"])
    assert argv[:3] == [sys.executable, "-I", cgexec.__file__]
    assert argv[-2:] == ["/bin/otelcol", "--config=/x/otelcol.yaml"]
    assert services["loki"]["command"] == "/bin/loki -config.file=/x/loki.yaml"
    assert services["prometheus"]["command"] == "/bin/prometheus"
    assert cgroups.StackGroups.from_dict(json.loads(record.read_text())) == groups
    untouched = {"otelcol": {"command": "/bin/otelcol"}}
    assert cgroups.enter(untouched, roles, {"otelcol": Limits()}, tmp_path, record) is None
    assert untouched == {"otelcol": {"command": "/bin/otelcol"}}


def test_a_v2_group_with_processes_of_its_own_gets_the_stacks_group_beside_it(
    tmp_path: Path,
) -> None:
    parent = tmp_path / "unified" / "app.slice"
    own = parent / "session.scope"
    own.mkdir(parents=True)
    (parent / "cgroup.controllers").write_text("cpu memory pids\n")
    (parent / "cgroup.subtree_control").write_text("cpu memory\n")
    (own / "cgroup.subtree_control").mkdir()  # stands for a write the kernel refuses (EBUSY)
    found = {c: Hierarchy(c, 2, str(own)) for c in ("memory", "cpu")}
    placed = cgroups.place(tmp_path / "stack", {"otelcol": LIMITS}, found)
    group = parent / cgroups.stack_group_name(tmp_path / "stack") / "otelcol"
    assert placed.placements["otelcol"].not_enforced == {}
    assert placed.placements["otelcol"].procs_files == [str(group / "cgroup.procs")]
    assert (group / "memory.max").read_text() == str(200 * MI)
    # A parent that does not hand the controller down: NOT enforced, with the kernel's answer.
    (parent / "cgroup.subtree_control").write_text("pids\n")
    again = cgroups.place(tmp_path / "other", {"otelcol": LIMITS}, found)
    assert "cannot write" in again.placements["otelcol"].not_enforced["memory"]
