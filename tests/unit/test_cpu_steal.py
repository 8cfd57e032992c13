"""The CPU steal (`--hand cpu-steal=N`): its value, its group's quota, and how its worker is armed
(stack/steal_service.py, stack/cpu_steal.py). Pure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loadgate.stack import cgroups, cpu_steal, hand, steal_service
from loadgate.stack.cgroups import Hierarchy
from loadgate.stack.hand import HandChanges, HandError
from loadgate.stack.info import StackError
from loadgate.targets.local import process_name


def test_the_steal_is_a_hand_change_spelled_back_and_recorded() -> None:
    changes = hand.parse(["cpu-steal=10"])
    assert changes == HandChanges(cpu_steal=10)
    assert changes.pairs() == ["cpu-steal=10"]
    assert HandChanges.from_dict(changes.to_dict()) == changes
    # A record written before the key existed reads as no steal.
    older = {k: v for k, v in changes.to_dict().items() if k != "cpu_steal"}
    assert HandChanges.from_dict(older).cpu_steal == 0
    assert hand.parse(["cpu-steal=0"]).empty


@pytest.mark.parametrize("value", ["91", "-1", "ten", "10%", "1.5"])
def test_a_bad_steal_names_the_key_and_the_range(value: str) -> None:
    with pytest.raises(HandError, match=r"--hand: cpu-steal: must be an integer from 0 to 90"):
        hand.parse([f"cpu-steal={value}"])


def test_the_steal_leaves_the_collectors_config_alone_and_says_so() -> None:
    config = {"exporters": {"loki/x": {"sending_queue": {"queue_size": 9}}}, "service": {}}
    services = {"otelcol": {"command": "/bin/otelcol"}}
    made = hand.apply(config, services, HandChanges(cpu_steal=10))
    assert (made.config, made.services) == (config, services)
    (change,) = made.changes
    assert change.where == "services.cpu-steal"
    assert "cpu-steal=10" in change.why


@pytest.mark.parametrize(
    ("share", "cpus", "millis"), [(10, (1,), 100), (90, (1,), 900), (30, (1, 2, 3), 900)]
)
def test_the_quota_is_the_share_of_the_pipelines_cpus(
    share: int, cpus: tuple[int, ...], millis: int
) -> None:
    limits = steal_service.limits(share, cpus)
    assert (limits.cpu, limits.cpu_millis, limits.memory_bytes) == (f"{millis}m", millis, None)


def test_more_than_its_one_worker_can_take_is_refused_with_the_most_it_can() -> None:
    with pytest.raises(
        HandError, match=r"cpu-steal: 40 % of the pipeline's 3 CPUs is 1200m.*at most 33"
    ):
        steal_service.limits(40, (1, 2, 3))


def test_arming_holds_the_loads_end_and_a_margin() -> None:
    text = steal_service.arm_text(1_000.0, 30.0)
    assert cpu_steal.armed_until(text) == pytest.approx(1_035.0)


@pytest.mark.parametrize("text", ["", "0", "-5", "nan", "soon", "1 2"])
def test_anything_but_a_time_ahead_leaves_the_worker_idle(text: str) -> None:
    assert cpu_steal.armed_until(text) == 0.0


def test_the_workers_cpu_is_named_for_the_steal_not_for_python() -> None:
    argv = ["/usr/bin/python3", "-I", "/x/loadgate/stack/cpu_steal.py", "/run/cpu-steal.until"]
    assert process_name("python3.11", argv) == steal_service.SERVICE
    assert process_name("python3.11", ["/usr/bin/python3", "-m", "other"]) == "python3.11"


@pytest.mark.parametrize(
    ("share", "cpus", "period", "quota"),
    [(10, (1,), 10_000, 1_000), (50, (1,), 10_000, 5_000), (3, (1,), 33_334, 1_000),
     (1, (1,), 100_000, 1_000), (5, (1, 2, 3), 10_000, 1_500)],
)  # fmt: skip
def test_the_period_is_short_with_a_quota_of_a_millisecond_at_least(
    share: int, cpus: tuple[int, ...], period: int, quota: int
) -> None:
    assert steal_service.period_quota_us(share, cpus) == (period, quota)
    assert quota / period == pytest.approx(share * len(cpus) / 100, rel=0.001)


def test_the_group_outweighs_the_rest_in_either_version() -> None:
    assert steal_service.settings(10, (1,), 1) == {
        "cpu.shares": "262144", "cpu.cfs_period_us": "10000", "cpu.cfs_quota_us": "1000"
    }  # fmt: skip
    assert steal_service.settings(10, (1,), 2) == {"cpu.weight": "10000", "cpu.max": "1000 10000"}


def test_the_group_goes_beside_the_stacks_and_is_recorded_with_it(tmp_path: Path) -> None:
    hierarchy = tmp_path / "cpu"
    hierarchy.mkdir()
    root = tmp_path / "stack"
    found = {"cpu": Hierarchy("cpu", 1, str(hierarchy))}
    groups = steal_service.place(root, 10, (1,), found)
    folder = hierarchy / f"{cgroups.stack_group_name(root)}-cpu-steal"
    assert groups.made == [str(folder)]
    assert (folder / "cpu.cfs_quota_us").read_text() == "1000"
    assert (folder / "cpu.shares").read_text() == "262144"
    # Recorded with the stack's groups (none here: no charm limits), the worker inside it.
    services = {"cpu-steal": {"command": "python3 -I cpu_steal.py /x"}, "otelcol": {"command": "o"}}
    roles = {"cpu-steal": "cpu-steal", "otelcol": "otelcol"}
    record = tmp_path / "cgroups.json"
    placed = cgroups.enter(services, roles, {}, root, record, found, also=groups)
    assert placed is not None
    assert placed.placements["cpu-steal"].services == ["cpu-steal"]
    assert str(folder / "cgroup.procs") in services["cpu-steal"]["command"]
    assert services["otelcol"]["command"] == "o"
    assert json.loads(record.read_text())["made"] == [str(folder)]


def test_a_steal_the_kernel_cannot_hold_is_refused_with_why_and_nothing_left(
    tmp_path: Path,
) -> None:
    with pytest.raises(StackError, match=r"cpu-steal=10: its CPU quota cannot be enforced: no cgr"):
        steal_service.place(tmp_path / "stack", 10, (1,), {})
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    found = {"cpu": Hierarchy("cpu", 1, str(not_a_folder))}
    with pytest.raises(StackError, match=r"cannot be enforced: cannot write .*file"):
        steal_service.place(tmp_path / "stack", 10, (1,), found)
    assert list(tmp_path.iterdir()) == [not_a_folder]


def test_a_share_beyond_its_worker_is_refused_before_any_group_is_made(tmp_path: Path) -> None:
    hierarchy = tmp_path / "cpu"
    hierarchy.mkdir()
    found = {"cpu": Hierarchy("cpu", 1, str(hierarchy))}
    with pytest.raises(HandError, match=r"at most 33 here"):
        steal_service.place(tmp_path / "stack", 40, (1, 2, 3), found)
    assert list(hierarchy.iterdir()) == []
