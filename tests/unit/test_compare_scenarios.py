"""`loadgate compare --scenario …`: the scenario and its parameters as shared flags, the metrics
each scenario can be compared on (saturation is otlp-logs'; the collector's CPU needs a load
through it) in its unit, the scope of its pipeline (its signal and exporter, the collector's own
series) where the comparison runs and settles, and the stack it asks for."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from support.fakes.target import FakeTarget
from test_comparing import NOP, NOP_5000, A, FakeSearch, FakeStack

from loadgate import cli
from loadgate.capacity.compare import driver as comparing
from loadgate.capacity.compare import rule
from loadgate.capacity.compare import scenario as cs
from loadgate.capacity.compare.rule import BASELINE
from loadgate.capacity.compare.run_order import ScheduledRun
from loadgate.capacity.search.rule import FOUND
from loadgate.contract import scenarios as reg
from loadgate.contract.spec import RunSpec
from loadgate.measure import signal_counters as sc
from loadgate.measure.pipeline import Scope
from loadgate.records.result import RunResult
from loadgate.stack.choice import StackRequest
from loadgate.stack.ports import Ports
from loadgate.stack.profile import Profile


def test_each_scenarios_default_metrics() -> None:
    assert cs.default_metrics(reg.OTLP_LOGS) == (
        "saturation", "pressure-p99", "pressure-cpu-probe", "pressure-cpu-loki"
    )  # fmt: skip
    assert cs.default_metrics(reg.OTLP_METRICS) == ("p99", "cpu")
    assert cs.default_metrics(reg.OTLP_TRACES) == ("p99", "cpu")
    assert cs.default_metrics(reg.LOKI_PUSH) == ("p99",)
    assert cs.default_metrics(reg.LOGQL_QUERY) == ("p99",)


def names(problems: list[tuple[str, str]]) -> list[str]:
    return [flag for flag, _ in problems]


def test_what_a_scenario_cannot_be_compared_on() -> None:
    every = rule.METRICS
    assert cs.problems(reg.OTLP_LOGS, every, pressure_rate_given=False) == []
    traces = cs.problems(reg.OTLP_TRACES, every, pressure_rate_given=False)
    assert names(traces) == ["--metrics", "--pressure-rate"]
    assert "saturation is measured of otlp-logs only, not otlp-traces" in traces[0][1]
    assert "give spans/min" in traces[1][1]
    assert names(cs.problems(reg.OTLP_TRACES, every, pressure_rate_given=True)) == ["--metrics"]
    query = cs.problems(reg.LOGQL_QUERY, (rule.CPU_PER_1000, rule.P99_AT_RATE), True)
    assert names(query) == ["--metrics"]
    assert "logql-query's load does not pass the collector" in query[0][1]
    fixed = (rule.P99_AT_RATE, rule.CAPACITY)
    assert all(cs.problems(kind, fixed, False) == [] for kind in reg.ALL)


def test_the_metrics_speak_the_scenarios_unit() -> None:
    metrics = (rule.CAPACITY, rule.CPU_PER_1000, rule.P99_AT_RATE, rule.PRESSURE_CPU)
    spans = cs.in_unit(metrics, reg.OTLP_TRACES)
    assert [m.unit for m in spans] == [
        "spans/min", "CPU s per 1,000 spans", "ms", "CPU s per 1,000 spans",
    ]  # fmt: skip
    assert [m.name for m in spans] == [m.name for m in metrics]  # the records' keys stay
    assert cs.in_unit(metrics, reg.OTLP_LOGS) == metrics  # otlp-logs: records, as before
    assert cs.in_unit((rule.CAPACITY,), reg.LOGQL_QUERY)[0].unit == "queries/min"


@dataclass
class ScopedStack(FakeStack):
    """The fake stack, its target with the collector's own series, and what each run got."""

    specs: list[RunSpec] = field(default_factory=list[RunSpec])
    scopes: list[Scope] = field(default_factory=list[Scope])
    asked: list[tuple[str, ...]] = field(default_factory=list[tuple[str, ...]])

    def open_target(self, info: Any) -> FakeTarget:
        target = super().open_target(info)
        target.collector = {"job": "otelcol"}
        return target

    def execute(self, spec: RunSpec, target: Any, results_root: Path, **kw: Any) -> RunResult:
        self.specs.append(spec)
        self.scopes.append(kw["scope"])
        return super().execute(spec, target, results_root, **kw)

    def resolve(self, request: StackRequest) -> Any:
        self.asked.append(request.charms.signals if request.charms else ())
        return Profile()


@pytest.fixture
def scoped() -> ScopedStack:
    return ScopedStack()


def compare(stack: ScopedStack, *argv: str, repeats: int = 2) -> int:
    seams = stack.seams(resolve_stack=stack.resolve)
    flags = ["--repeats", str(repeats), "--duration", "10s"]
    return cli.main(["compare", *flags, *argv], seams=seams)


def test_a_traces_comparison_runs_its_scenario_in_its_unit_on_a_stack_carrying_traces(
    cli_env: Path,
    scoped: ScopedStack,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = compare(
        scoped, "--baseline", "queue-size=1000", "--candidate", "queue-size=5000",
        "--scenario", "otlp-traces", "--traces-per-request", "3", "--rate", "27000",
        "--compare-id", "ct", repeats=3,
    )  # fmt: skip
    # 3 pairs: the collector's CPU has no calibrated spread, so 2 identical pairs (1 degree of
    # freedom) cannot rule out twice its 5 % threshold: too noisy (exit 3).
    err = capsys.readouterr().err
    assert code in (cli.EXIT_OK, cli.EXIT_GATE_FAILED), err
    assert scoped.asked == [("logs", "traces")] * 2  # each side's stack carries traces
    assert "otlp-traces needs the traces signal" in err
    assert len(scoped.specs) == 6
    for spec in scoped.specs:
        assert (spec.scenario, spec.traces_per_request, spec.rate) == ("otlp-traces", 3, 27000)
        assert spec.executor == "constant-arrival-rate"
    for scope in scoped.scopes:
        assert scope.signal is sc.TRACES
        assert scope.exporter == "otlphttp/send-traces.*"
        assert scope.collector == {"job": "otelcol"}  # not the stand-in's counters
    stored = json.loads((cli_env / "ct" / "compare.json").read_text())
    units = {d["metric"]["name"]: d["metric"]["unit"] for d in stored["decisions"]}
    assert units == {rule.P99_AT_RATE.name: "ms", rule.CPU_PER_1000.name: "CPU s per 1,000 spans"}


def test_a_loki_push_comparison_compares_its_p99_on_hand_stacks(
    cli_env: Path,
    scoped: ScopedStack,
) -> None:
    compare(scoped, *NOP, *NOP_5000, "--scenario", "loki-push", "--loki-streams", "40",
            "--compare-id", "cl")  # fmt: skip
    assert {(s.scenario, s.loki_streams) for s in scoped.specs} == {("loki-push", 40)}
    assert all(s.signal is None for s in scoped.scopes)  # Loki's figures only
    stored = json.loads((cli_env / "cl" / "compare.json").read_text())
    assert [d["metric"]["name"] for d in stored["decisions"]] == [rule.P99_AT_RATE.name]


def test_an_otlp_logs_comparison_is_what_it_was(cli_env: Path, scoped: ScopedStack) -> None:
    compare(scoped, *NOP, *NOP_5000, "--metrics", "p99,cpu", "--compare-id", "co")
    assert {s.scenario for s in scoped.specs} == {"otlp-logs"}
    assert all(s == replace(Scope(), collector={"job": "otelcol"}) for s in scoped.scopes)
    stored = json.loads((cli_env / "co" / "compare.json").read_text())
    units = [d["metric"]["unit"] for d in stored["decisions"]]
    assert units == ["ms", "CPU s"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--scenario", "loki-push", "--metrics", "cpu"],
         "--metrics: cpu, pressure-cpu, pressure-cpu-probe and pressure-cpu-k6 are the "
         "collector's CPU, and loki-push's load does not pass the collector"),
        (["--scenario", "otlp-metrics", "--metrics", "saturation"],
         "--metrics: saturation is measured of otlp-logs only, not otlp-metrics"),
        (["--scenario", "logql-query", "--metrics", "pressure-p99"],
         "--pressure-rate: required for pressure metrics of logql-query"),
        (["--scenario", "logql-query", "--push-rate", "5"],
         "--push-rate: must be at least one push request"),
        (["--span-attributes", "3"], "--span-attributes: applies to otlp-traces only"),
        (["--scenario", "otlp-spans"], "--scenario: must be one of otlp-logs, otlp-metrics"),
    ],
)  # fmt: skip
def test_what_a_scenario_cannot_do_is_refused_and_nothing_starts(
    cli_env: Path,
    scoped: ScopedStack,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    message: str,
) -> None:
    scoped.fail_up = AssertionError("a stack was started")
    assert compare(scoped, *NOP, *NOP_5000, *argv) == cli.EXIT_BAD_INPUT
    err = " ".join(capsys.readouterr().err.split())
    assert message in err
    assert not cli_env.exists()
    assert scoped.asked == []


@dataclass
class ScopedSearch(FakeSearch):
    """The fake search, keeping the scope it settles and runs with."""

    scopes: list[Scope] = field(default_factory=list[Scope])

    def __call__(self, *args: Any, **kw: Any) -> Any:
        self.scopes.append(kw["scope"])
        return super().__call__(*args, **kw)


def test_a_capacity_search_settles_on_the_scenarios_collector_series(
    tmp_path: Path, scoped: ScopedStack
) -> None:
    """A stack carrying metrics holds two copies of the collector's counters (scraped and
    remote-written): the search's settle and runs read the scraped one, of the scenario's
    exporter."""
    search = ScopedSearch(FOUND, 900_000)
    repeat = comparing.LocalRepeats(
        root=tmp_path / "stack", ports=Ports.from_base(None),
        spec=RunSpec.from_params({"scenario": "otlp-metrics", "rate": 60_000}),
        results_root=tmp_path / "results", compare_id="cm",
        metrics=comparing.parse_metrics("capacity"), stack=scoped.ops,
        open_target=scoped.open_target, execute=scoped.execute, search=search,
    )  # fmt: skip
    outcome = repeat(ScheduledRun(0, BASELINE, 1), A)
    assert outcome.values == {rule.CAPACITY.name: 900_000.0}
    (scope,) = search.scopes
    assert scope.signal is sc.METRICS
    assert scope.exporter == "prometheusremotewrite.*"
    assert scope.collector == {"job": "otelcol"}
    assert 'job="otelcol"' in scope.queue_size()
