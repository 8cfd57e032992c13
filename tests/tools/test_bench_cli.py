"""`loadgate bench generator --scenario …` through the command: the ports checked for real (a
socket each), the benchmark itself a stand-in, each scenario's cost per unit printed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from loadgate import cli
from loadgate.capacity.bench.generator import GeneratorFigures
from loadgate.cli.seams import Seams
from loadgate.contract.spec import RunSpec
from loadgate.stack.ports import Ports

FIGURES = GeneratorFigures(records_accepted=900_000, wall_s=10.0, k6_cpu_s=6.0, collector_cpu_s=4)


@pytest.mark.parametrize(
    ("scenario", "unit"),
    [("otlp-logs", "log record"), ("otlp-metrics", "data point"), ("loki-push", "line")],
)
def test_the_command_benches_the_scenario_asked_for(
    scenario: str, unit: str, capsys: pytest.CaptureFixture[str]
) -> None:
    benched: list[tuple[RunSpec, Ports]] = []

    def bench(spec: RunSpec, ports: Ports, work: Path) -> GeneratorFigures:
        benched.append((spec, ports))
        assert work.is_dir()
        return FIGURES

    def built(names: Sequence[str], *, command: str) -> int:
        return cli.EXIT_OK

    seams = replace(Seams(), build_missing=built, bench_generator=bench)
    argv = ["bench", "generator", "--scenario", scenario, "--duration", "5s", "--base-port",
            "25970"]  # fmt: skip
    assert cli.main(argv, seams=seams) == cli.EXIT_OK
    ((spec, ports),) = benched
    assert spec.scenario == scenario
    assert spec.duration == "5s"
    assert ports == Ports.from_base(25970)
    out = capsys.readouterr().out
    assert f"bench generator: k6 {scenario} against a nop collector" in out
    assert f"k6 CPU per {unit}" in out
    assert "6.67 µs" in out  # 6 s of k6 CPU for 900,000 units
