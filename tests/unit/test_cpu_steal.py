"""The CPU steal (`--hand cpu-steal=N`): its value, its group's quota, and how its worker is armed
(stack/steal_service.py, stack/cpu_steal.py). Pure."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadgate.stack import cpu_steal, hand, stack_files, steal_service
from loadgate.stack.cgroups import Group, Placement, StackGroups
from loadgate.stack.hand import HandChanges, HandError
from loadgate.stack.info import StackError
from loadgate.stack.layout import Layout
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


def test_a_steal_the_kernel_cannot_hold_is_refused_with_why(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    with pytest.raises(StackError, match=r"cpu-steal=10: its CPU quota cannot be enforced: no cpu"):
        stack_files._steal_enforced(None, 10, layout)  # pyright: ignore[reportPrivateUsage]
    why = "no cgroup hierarchy with the cpu controller"
    placement = Placement(steal_service.SERVICE, steal_service.limits(10, (1,)), [], {"cpu": why})
    groups = StackGroups({steal_service.SERVICE: placement}, [])
    with pytest.raises(StackError, match=f"cannot be enforced: {why}"):
        stack_files._steal_enforced(groups, 10, layout)  # pyright: ignore[reportPrivateUsage]


def test_a_group_that_cannot_be_weighed_is_refused(tmp_path: Path) -> None:
    gone = str(tmp_path / "no-such-group")
    group = Group("cpu", 1, gone)
    placement = Placement(steal_service.SERVICE, steal_service.limits(10, (1,)), [group])
    groups = StackGroups({steal_service.SERVICE: placement}, [])
    with pytest.raises(StackError, match=r"cannot weigh its group .*no-such-group"):
        stack_files._steal_enforced(groups, 10, Layout(tmp_path))  # pyright: ignore[reportPrivateUsage]


def test_the_weight_goes_where_the_kernel_reads_it(tmp_path: Path) -> None:
    steal_service.weigh(str(tmp_path), 1)
    assert (tmp_path / "cpu.shares").read_text() == "262144"
    steal_service.weigh(str(tmp_path), 2)
    assert (tmp_path / "cpu.weight").read_text() == "10000"
