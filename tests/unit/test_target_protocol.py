"""The target protocol (runner.target): each real target has the abilities beyond `Target` it
declares, and no other (they are checked at run time by structure, so a method of the same
name would be enough); a target without one reads as the runner's default."""

from __future__ import annotations

from typing import Any

from support.fakes.target import FakeTarget

from loadgate.contract.spec import RunSpec
from loadgate.runner import target as runner_target
from loadgate.targets.juju import JujuTarget
from loadgate.targets.local import LocalTarget

ABILITIES: tuple[Any, ...] = (
    runner_target.SeesProcesses,
    runner_target.WaitsForQuiet,
    runner_target.Supervised,
    runner_target.ReportsResources,
    runner_target.NamesCollectorSeries,
    runner_target.NamesStandinSeries,
)


def abilities(target: object) -> set[str]:
    return {ability.__name__ for ability in ABILITIES if isinstance(target, ability)}


def test_each_real_target_has_the_abilities_it_declares_and_no_other() -> None:
    # Not constructed (no stack, no model): the abilities are the class's.
    local = LocalTarget.__new__(LocalTarget)
    juju = JujuTarget.__new__(JujuTarget)
    assert abilities(local) == {
        "SeesProcesses", "WaitsForQuiet", "Supervised", "ReportsResources",
        "NamesCollectorSeries",
    }  # fmt: skip
    assert abilities(juju) == {"NamesCollectorSeries", "NamesStandinSeries"}
    for target, cls in ((local, LocalTarget), (juju, JujuTarget)):
        declared = {base.__name__ for base in cls.__mro__ if base in ABILITIES}
        assert abilities(target) == declared


def test_a_target_without_an_ability_reads_as_the_runners_default() -> None:
    juju = JujuTarget.__new__(JujuTarget)  # it sees no process, waits for no quiet, ...
    spec = RunSpec.from_params({"rate": 3000, "vus": 7})
    assert runner_target.quiet_seconds(juju) == 0.0
    assert runner_target.service_states(juju) == {}
    assert runner_target.poll_interval(juju) == 1.0
    assert runner_target.load_window(juju) is None
    assert runner_target.cpu_reading(juju) is None
    assert runner_target.generator_figures(juju, spec) == {"vus_limit": spec.max_vus}
    assert runner_target.resource_figures(juju) is None


def test_the_fake_targets_abilities_read_as_absent_until_a_test_sets_them() -> None:
    bare = FakeTarget()
    spec = RunSpec.from_params({"rate": 3000})
    assert runner_target.quiet_seconds(bare) == 0.0
    assert runner_target.poll_interval(bare) == 1.0
    assert runner_target.cpu_reading(bare) is None
    assert runner_target.load_window(bare) is None
    assert runner_target.generator_figures(bare, spec) == {"vus_limit": spec.max_vus}
    assert runner_target.collector_series(bare) == {}
    assert runner_target.standin_series(bare) is None
    assert runner_target.resource_figures(bare) is None
    series = ({"juju_application": "traces-standin"}, "application traces-standin")
    told = FakeTarget(quiet_s=3.0, collector={"job": "otelcol"}, standin=series)
    assert runner_target.quiet_seconds(told) == 3.0
    assert runner_target.collector_series(told) == {"job": "otelcol"}
    assert runner_target.standin_series(told) == series
