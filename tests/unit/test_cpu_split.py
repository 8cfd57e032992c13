"""The local stack's CPU split: which CPUs each side gets, the commands that put the pipeline
on its own, the setting's errors, and its record."""

from __future__ import annotations

import os
import shlex
import sys
from typing import Any

import pytest

from loadgate.stack import cgexec, cgroups, cpu_split
from loadgate.stack.cgroups import Group, Placement
from loadgate.stack.cpu_split import CpuSplit, SplitError
from loadgate.stack.limits import Limits


def test_two_cpus_give_the_generator_one_and_the_pipeline_the_other() -> None:
    assert cpu_split.choose("auto", {0, 1}) == CpuSplit((0,), (1,))


def test_the_generator_side_takes_a_quarter_of_many_cpus() -> None:
    assert cpu_split.choose("auto", range(8)) == CpuSplit((0, 1), (2, 3, 4, 5, 6, 7))
    assert cpu_split.choose("auto", {7, 2, 5}) == CpuSplit((2,), (5, 7))


def test_no_split_when_off_or_on_one_cpu() -> None:
    assert cpu_split.choose("off", {0, 1, 2, 3}) is None
    assert cpu_split.choose("auto", {3}) is None


def test_a_bad_setting_names_the_variable_and_the_allowed_values() -> None:
    with pytest.raises(SplitError, match=r"LOADGATE_CPU_SPLIT: must be one of auto, off; got 'on'"):
        cpu_split.choose("on", {0, 1})
    with pytest.raises(SplitError, match="LOADGATE_CPU_SPLIT"):
        cpu_split.from_environment({cpu_split.ENV: "half"})


def test_the_environment_defaults_to_auto() -> None:
    assert cpu_split.from_environment({}) == cpu_split.choose("auto", os.sched_getaffinity(0))
    assert cpu_split.from_environment({cpu_split.ENV: " "}) == cpu_split.from_environment({})
    assert cpu_split.from_environment({cpu_split.ENV: "off"}) is None


def test_the_split_is_recorded_and_read_back() -> None:
    split = CpuSplit((0,), (1, 2, 3))
    assert CpuSplit.from_dict(split.to_dict()) == split
    assert split.describe() == (
        "the collector and Loki on CPU 1,2,3; k6, Prometheus and Pebble on CPU 0"
    )
    for bad in (None, [], {"generator": [0]}, {"generator": [], "pipeline": [1]}, "0,1"):
        assert CpuSplit.from_dict(bad) is None


def _services() -> dict[str, dict[str, Any]]:
    return {
        name: {"command": shlex.join([f"/bin/{name}", f"--config=/c/{name}.yaml"])}
        for name in ("otelcol", "loki", "prometheus", "backend-fault", "traces-standin")
    }


def test_place_moves_the_pipeline_services_and_leaves_the_measuring_side() -> None:
    services = _services()
    cpu_split.place(services, CpuSplit((0,), (1,)))
    for name in ("otelcol", "loki", "traces-standin"):
        argv = shlex.split(services[name]["command"])
        assert argv[:3] == [sys.executable, "-I", cgexec.__file__]
        assert cgexec.unwrap(argv) == (
            [],
            {1},
            [f"/bin/{name}", f"--config=/c/{name}.yaml"],
        )
    assert services["prometheus"] == _services()["prometheus"]
    assert services["backend-fault"] == _services()["backend-fault"]


def test_place_without_a_split_changes_nothing() -> None:
    services = _services()
    cpu_split.place(services, None)
    assert services == _services()


def test_a_command_in_control_groups_takes_the_cpus_in_the_same_wrapper() -> None:
    placement = Placement("otelcol", Limits(cpu="500m", cpu_millis=500), [Group("cpu", 1, "/c/g")])
    wrapped = [*cgroups.wrapper_argv(placement), "/bin/otelcol", "--config=x"]
    services = {"otelcol": {"command": shlex.join(wrapped)}}
    cpu_split.place(services, CpuSplit((0,), (1,)))
    argv = shlex.split(services["otelcol"]["command"])
    assert argv.count(cgexec.__file__) == 1
    assert cgexec.unwrap(argv) == (["/c/g/cgroup.procs"], {1}, ["/bin/otelcol", "--config=x"])


def test_cgexec_refuses_malformed_cpus(capsys: pytest.CaptureFixture[str]) -> None:
    assert cgexec.main(["--cpus", "one", "--", "/bin/true"]) == 2
    assert "--cpus: CPU numbers separated by commas; got 'one'" in capsys.readouterr().err
    assert cgexec.main(["--cpus", "0", "--cpus", "1", "--", "/bin/true"]) == 2
    assert "usage" in capsys.readouterr().err


def test_cgexec_stops_when_it_cannot_take_the_cpus(capsys: pytest.CaptureFixture[str]) -> None:
    assert cgexec.main(["--cpus", "4095", "--", "/bin/true"]) == cgexec.EXIT_CANNOT_JOIN
    assert "cannot run on CPUs [4095]" in capsys.readouterr().err
