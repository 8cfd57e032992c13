"""The scenarios on the command line: `run --scenario` refuses another scenario's flags and
starts nothing, asks the stack for what the scenario needs (otlp-metrics: the metrics signal),
and `bench generator --scenario` prints each scenario's cost per unit."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from test_run_flags import run_main
from test_run_flow import Calls

from loadgate import cli
from loadgate.capacity.bench.generator import GeneratorFigures, sink_config, sink_target
from loadgate.cli import bench
from loadgate.contract.scenarios import LOGQL_QUERY, LOKI_PUSH, OTLP_LOGS, OTLP_METRICS, OTLP_TRACES
from loadgate.stack.choice import StackRequest
from loadgate.stack.layout import Layout
from loadgate.stack.ports import Ports
from loadgate.stack.profile import Profile


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LOADGATE_STACK_DIR", str(tmp_path / "stack"))
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("LOADGATE_BIN_DIR", str(tmp_path / "bin"))
    return tmp_path


@pytest.mark.parametrize(
    ("argv", "flag", "said"),
    [
        (["--scenario", "otlp-metrics", "--logs-per-request", "5"], "--logs-per-request",
         "applies to otlp-logs only, not otlp-metrics"),
        (["--scenario", "otlp-metrics", "--body-max", "100"], "--body-max",
         "applies to otlp-logs, loki-push and logql-query only"),
        (["--scenario", "otlp-traces", "--spans-per-trace", "101"], "--spans-per-trace",
         "between 1 and 100"),
        (["--scenario", "otlp-traces", "--lines-per-stream", "5"], "--lines-per-stream",
         "applies to loki-push and logql-query only, not otlp-traces"),
        (["--scenario", "logql-query", "--push-rate", "99"], "--push-rate",
         "at least one push request (100 lines"),
        (["--scenario", "logql-query", "--executor", "constant-vus", "--rate", "60"], "--rate",
         "applies to arrival-rate executors, not constant-vus"),
        (["--scenario", "logql-query", "--traces-per-request", "2"], "--traces-per-request",
         "applies to otlp-traces only, not logql-query"),
        (["--scenario", "loki-push", "--series-per-request", "3"], "--series-per-request",
         "applies to otlp-metrics only, not loki-push"),
        (["--scenario", "otlp-metrics", "--points-per-series", "0"], "--points-per-series",
         "between 1 and 100"),
        (["--scenario", "loki-push", "--streams-per-request", "50", "--loki-streams", "20"],
         "--streams-per-request", "must not exceed loki-streams (20)"),
        (["--scenario", "loki-push", "--lines-per-stream", "1001"], "--lines-per-stream",
         "between 1 and 1000"),
    ],
)  # fmt: skip
def test_bad_scenario_flags_are_refused_and_nothing_starts(
    isolated: Path, argv: list[str], flag: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_main(["run", *argv]) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    line = next(ln for ln in err.splitlines() if ln.strip().startswith(f"{flag}:"))
    assert said in line
    for folder in ("stack", "results", "bin"):
        assert not (isolated / folder).exists(), folder


def test_an_otlp_metrics_run_asks_for_a_stack_carrying_metrics(
    isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = Calls(isolated / "stack")
    asked: list[StackRequest] = []

    def resolve(request: StackRequest) -> Any:
        asked.append(request)
        return Profile()

    seams = replace(flow.seams, resolve_stack=resolve)
    code = cli.main(["run", "--scenario", "otlp-metrics", "--run-id", "m1"], seams=seams)
    assert code == cli.EXIT_OK
    assert [r.charms.signals if r.charms else None for r in asked] == [("logs", "metrics")]
    assert "otlp-metrics needs the metrics signal" in capsys.readouterr().err
    asked.clear()
    code = cli.main(["run", "--scenario", "loki-push", "--run-id", "p1"], seams=seams)
    assert code == cli.EXIT_OK
    assert [r.charms.signals if r.charms else None for r in asked] == [("logs",)]
    asked.clear()
    code = cli.main(["run", "--scenario", "otlp-traces", "--run-id", "t1"], seams=seams)
    assert code == cli.EXIT_OK
    assert [r.charms.signals if r.charms else None for r in asked] == [("logs", "traces")]
    assert "otlp-traces needs the traces signal" in capsys.readouterr().err
    asked.clear()
    code = cli.main(["run", "--scenario", "logql-query", "--run-id", "q1"], seams=seams)
    assert [r.charms.signals if r.charms else None for r in asked] == [("logs",)]
    # The simulated k6 reports no answers checked: unknown, so the gate fails (never a pass).
    assert code == cli.EXIT_GATE_FAILED
    assert "wrong_answers" in capsys.readouterr().out


FIGURES = GeneratorFigures(records_accepted=600_000, wall_s=10.0, k6_cpu_s=4.0, collector_cpu_s=3)


@pytest.mark.parametrize(
    ("argv", "rows"),
    [
        ([], ["log records per k6 CPU-second", "150,000", "(target 2,000,000)",
              "k6 CPU per log record", "6.67 µs", "5 records/request"]),
        (["--scenario", "otlp-metrics", "--series-per-request", "4"],
         ["data points per k6 CPU-second", "k6 CPU per data point", "20 points/request"]),
        (["--scenario", "loki-push", "--lines-per-stream", "2"],
         ["lines per minute per k6 core", "k6 CPU per line", "20 lines/request"]),
        (["--scenario", "otlp-traces", "--traces-per-request", "2", "--spans-per-trace", "10"],
         ["spans per k6 CPU-second", "k6 CPU per span", "20 spans/request",
          "against a nop collector"]),
        (["--scenario", "logql-query", "--push-rate", "1200"],
         ["queries per k6 CPU-second", "k6 CPU per query", "1 query/request",
          "1,200 lines/min (push-rate)", "sink CPU time", "against a sink answering as Loki"]),
    ],
)  # fmt: skip
def test_bench_generator_prints_each_scenarios_cost_per_unit(
    argv: list[str], rows: list[str]
) -> None:
    args = cli.build_parser().parse_args(["bench", "generator", *argv])
    spec = bench.bench_spec(args)
    assert spec.executor == "constant-vus"
    assert spec.max_error_rate == 1
    console = Console(width=200, record=True)
    console.print(bench.bench_table(spec, FIGURES))
    out = console.export_text()
    for row in rows:
        assert row in out, row


def test_bench_generator_refuses_another_scenarios_flag(
    isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["bench", "generator", "--scenario", "otlp-metrics", "--logs-per-request", "5"]
    assert run_main(argv) == cli.EXIT_BAD_INPUT
    assert "--logs-per-request: applies to otlp-logs only" in capsys.readouterr().err
    for folder in ("stack", "results", "bin"):
        assert not (isolated / folder).exists(), folder


def test_the_bench_sink_takes_each_scenarios_requests(tmp_path: Path) -> None:
    ports, layout = Ports.from_base(25990), Layout(tmp_path)
    for kind in (OTLP_LOGS, OTLP_METRICS, OTLP_TRACES):
        config = sink_config(kind, ports, layout)
        assert set(config["service"]["pipelines"]) == {"logs", "metrics", "traces"}
        assert "tls" not in config["receivers"]["otlp"]["protocols"]["http"]
        assert sink_target(kind, ports) == f"http://127.0.0.1:{ports.otlp_http}"
    # logql-query's sink is no collector (it answers queries): TLS on the same port, by name.
    assert sink_target(LOGQL_QUERY, ports) == f"https://localhost:{ports.otlp_http}"
    push = sink_config(LOKI_PUSH, ports, layout)["receivers"]["otlp"]["protocols"]["http"]
    assert push["logs_url_path"] == "/loki/api/v1/push"
    assert push["tls"] == {"cert_file": str(layout.server_cert), "key_file": str(layout.server_key)}
    assert sink_target(LOKI_PUSH, ports) == f"https://localhost:{ports.otlp_http}"
