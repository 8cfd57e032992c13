"""The collector's CPU per Loki CPU (`pressure-cpu-loki`): its value from a run's kernel CPU,
and why it is reported beside the verdict when the sides run different Loki (its reference
is then not the same on both sides: a Loki charm's change would read as the collector's)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from support.runresults import run_result
from test_compare_kept import Stacks

from loadgate import cli
from loadgate.build import binaries
from loadgate.capacity.compare import rule
from loadgate.capacity.compare import values as cv
from loadgate.capacity.compare.sides import loki_differs
from loadgate.charms.sources import CharmSource
from loadgate.contract.spec import RunSpec
from loadgate.measure.cpu import CpuFigures
from loadgate.stack import charm_stack
from loadgate.stack.choice import StackRequest
from loadgate.stack.profile import Profile

DEFAULTS = cv.parse_metrics(",".join(cv.DEFAULT_METRICS))


def source(role: str, commit: str = "c1") -> CharmSource:
    return CharmSource(
        role=role, name=role, given="x", kind="snapshot", location="x", ref=None, commit=commit,
        dirty=False, revisions=(1,), path=Path("/src"), base=None, workload_tag=None,
        lock_sha256="0",
    )  # fmt: skip


def prepared(
    otelcol_commit: str = "c1", loki_commit: str = "l1", loki_options: dict[str, str] | None = None
) -> charm_stack.PreparedCharms:
    return charm_stack.PreparedCharms(
        source("otelcol", otelcol_commit), source("loki", loki_commit), {}, loki_options or {},
        binaries.part("otelcol"), binaries.part("loki"),
    )  # fmt: skip


def test_a_collector_charm_change_keeps_the_same_loki() -> None:
    assert loki_differs(prepared("c1"), prepared("c2")) is None
    assert loki_differs(Profile(), Profile(queue_size=5000)) is None


def test_a_loki_charm_change_is_named() -> None:
    assert loki_differs(prepared(loki_commit="l1"), prepared(loki_commit="l2")) == (
        "its charm's commit"
    )
    assert loki_differs(prepared(), prepared(loki_options={"retention-period": "7"})) == (
        "its options"
    )
    assert loki_differs(Profile(), prepared()) == (
        "one side's Loki is hand-written, the other's rendered by its charm"
    )


def test_the_cpu_per_loki_cpu_goes_beside_the_verdict_when_loki_differs() -> None:
    assert [m.gates for m in DEFAULTS] == [True, False, False, True]
    moved = rule.beside_when_loki_differs(DEFAULTS)
    assert [(m.name, m.gates) for m in moved] == [
        (rule.SATURATION.name, True), (rule.PRESSURE_P99.name, False),
        (rule.PRESSURE_CPU_PROBE.name, False), (rule.PRESSURE_CPU_LOKI.name, False),
    ]  # fmt: skip
    # Compared alone, it still gates (a metric beside gates when none other does).
    alone = rule.beside_when_loki_differs(cv.parse_metrics("pressure-cpu-loki"))
    assert [m.gates for m in alone] == [True]


@pytest.mark.parametrize(
    ("used", "expected"),
    [
        ({"otelcol": 9.0, "loki": 4.5}, 2.0),
        ({"otelcol": 9.0, "loki": 0.0}, None),  # Loki used none: no reference
        ({"otelcol": 9.0}, None),  # Loki not read
        ({"loki": 4.5}, None),
    ],
)
def test_the_value_is_the_collectors_cpu_seconds_over_lokis(
    used: dict[str, float], expected: float | None
) -> None:
    cpu = CpuFigures(
        window_s=30.0, idle_s=5.0, records=70_000, idle_cores={"otelcol": 0.01},
        used_s=dict[str, float | None](used), marginal_s={"otelcol": 8.7},
        per_1000_records={"otelcol": 0.12}, busy_elsewhere_cores=0.05, quiet=True,
    )  # fmt: skip
    result = replace(run_result(RunSpec(rate=60_000, duration="30s")), cpu=cpu)
    values, sources = cv.pressure_values(result)
    if expected is None:
        assert values[rule.PRESSURE_CPU_LOKI.name] is None  # unknown, never 0
        assert rule.PRESSURE_CPU_LOKI.name not in sources
        assert (
            "the kernel read no CPU of" in cv.unknown_reasons(result)[rule.PRESSURE_CPU_LOKI.name]
        )
    else:
        assert values[rule.PRESSURE_CPU_LOKI.name] == pytest.approx(expected)
        assert sources[rule.PRESSURE_CPU_LOKI.name] == "kernel"
        assert rule.PRESSURE_CPU_LOKI.name not in cv.unknown_reasons(result)


def test_compare_says_and_records_the_cpu_per_loki_cpu_beside_when_the_sides_loki_differ(
    cli_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Loki charm's change (`loki-config` on one side here, a fake resolver: nothing is
    rendered): the notice names how Loki differs, and the record has the metric beside."""

    def resolve(request: StackRequest) -> charm_stack.PreparedCharms:
        assert request.charms is not None
        return prepared(loki_options=dict(p.split("=", 1) for p in request.charms.loki_pairs))

    seams = replace(Stacks().seams(), resolve_stack=resolve)
    argv = ["compare", "--baseline", "otelcol=rev221", "--candidate",
            "otelcol=rev221 loki-config=retention-period=7", "--repeats", "1", "--duration",
            "10s", "--metrics", "saturation,pressure-cpu-loki", "--compare-id", "lk"]  # fmt: skip
    cli.main(argv, seams=seams)
    err = " ".join(capsys.readouterr().err.split())
    assert "the sides' Loki differ (its options): the collector's CPU per Loki CPU" in err
    record = json.loads((cli_env / "lk" / "compare.json").read_text())
    gates = {d["metric"]["name"]: d["metric"].get("gates", True) for d in record["decisions"]}
    assert gates == {rule.SATURATION.name: True, rule.PRESSURE_CPU_LOKI.name: False}
    # The same Loki on both sides: it gates, and nothing is said.
    cli.main([*argv[:4], "otelcol=rev221", *argv[5:-1], "lk2"], seams=seams)
    assert "Loki differ" not in capsys.readouterr().err
    record = json.loads((cli_env / "lk2" / "compare.json").read_text())
    assert all(d["metric"].get("gates", True) for d in record["decisions"])
