"""Unknown is never 0 (issue 33, defect 2): a measured 0 and a missing figure are told apart on
every figure path: the search's saturation reading, the saturation counts over the steady
window, the kernel's marginal CPU (a negative one is unknown, with its reason), and every
missing figure of a run fed through result.json, the end-of-run tables, the report's rows, the
matrix's row and the comparison's values."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from typing import Any

import httpx
import pytest
from rich.console import Console
from support.fakes.prometheus import FakeProm
from support.figures_table import figure_values
from support.runresults import run_result

from loadgate.capacity.compare import values as cv
from loadgate.capacity.compare.rule import (
    PRESSURE_CPU,
    PRESSURE_CPU_K6,
    PRESSURE_CPU_LOKI,
    PRESSURE_CPU_PROBE,
)
from loadgate.capacity.search import driver as searching
from loadgate.contract.scenarios import OTLP_METRICS
from loadgate.contract.spec import RunSpec
from loadgate.contract.summary import ClientFigures
from loadgate.judge import ledger as ledger_mod
from loadgate.judge.signal_ledger import build_collector
from loadgate.measure import cpu
from loadgate.measure import queries as q
from loadgate.measure import saturation as sat
from loadgate.measure.cpu import CpuFigures, CpuReading, ProcessCpu
from loadgate.measure.pipeline import PipelineFigures, Scope
from loadgate.measure.queries import LokiAPI
from loadgate.measure.resources import (
    BackendFaultCounts,
    GoRuntime,
    ResourceFigures,
    ServiceResources,
    StandinCounts,
)
from loadgate.measure.saturation import SaturationFigures
from loadgate.records.result import RunResult
from loadgate.report import matrix_table, tables
from loadgate.report.runs import run_of

SPEC = RunSpec(rate=140_000, duration="30s", run_id="r1")


def as_json(result: RunResult) -> dict[str, Any]:
    """result.json's content, as `records.result.write` writes it."""
    return json.loads(json.dumps(result.to_dict()))


def text(renderable: object) -> str:
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(renderable)
    return out.getvalue()


# ---- the search's saturation reading -----------------------------------------------------------


def window(**figures: float | None) -> SaturationFigures:
    """A saturated steady window: 200,000/min accepted, 190,000 exported and stored."""
    full = SaturationFigures(300_000.0, True, 1000.0, 1020.0, 20.0, 5.0, accepted_per_min=200_000.0,
                             exported_per_min=190_000.0, stored_per_min=190_000.0,
                             queue_capacity=1000.0)  # fmt: skip
    return replace(full, **figures)  # pyright: ignore[reportArgumentType]


def test_the_searchs_saturation_takes_a_measured_zero_and_falls_through_only_an_unknown() -> None:
    result = run_result(SPEC)
    read = searching.saturation_of(replace(result, saturation=window(exported_per_min=0.0)))
    assert read[1] == 0.0  # the exporter sent nothing over the window: measured, not missing
    read = searching.saturation_of(replace(result, saturation=window(exported_per_min=None)))
    assert read[1] == 200_000.0  # unknown: the collector's accepted, as documented
    both = window(exported_per_min=None, accepted_per_min=None)
    assert searching.saturation_of(replace(result, saturation=both))[1] == 190_000.0


def test_without_a_window_an_unknown_queue_high_water_mark_leaves_the_throughput_unknown() -> None:
    result = run_result(SPEC, accepted_ratio=0.5)
    no_window = SaturationFigures(300_000.0, None, reason="fewer than two scrapes")
    assert result.pipeline is not None
    unread = replace(result, saturation=no_window,
                     pipeline=replace(result.pipeline, queue_size_max=None))  # fmt: skip
    saturated, throughput, _, note = searching.saturation_of(unread)
    assert throughput is None  # not k6's accepted rate as if the queue had held nothing
    assert "the queue's high-water mark is unknown" in note
    assert saturated is True  # k6 got half the offered rate in: that much is known


def test_without_a_window_a_queue_holding_more_than_was_accepted_is_unknown_not_zero() -> None:
    result = run_result(SPEC, accepted_ratio=0.01)  # 1,400/min accepted over 30 s: 700 records
    assert result.pipeline is not None
    full = replace(result, saturation=SaturationFigures(300_000.0, None, reason="no window"),
                   pipeline=replace(result.pipeline, queue_size_max=1000.0))  # fmt: skip
    _, throughput, _, note = searching.saturation_of(full)
    assert throughput is None
    assert "more than k6 had accepted" in note


# ---- the saturation counts over the steady window ---------------------------------------------


def _loki_nothing_else(request: httpx.Request) -> httpx.Response:
    query = request.url.params["query"]
    value = 3000.0 * 20 if "run=r1 " in query and "|=" in query else 0.0
    result = [{"metric": {}, "value": [0, str(value)]}]
    body = {"status": "success", "data": {"resultType": "vector", "result": result}}
    return httpx.Response(200, json=body)


def test_an_unreadable_loop_breaker_count_leaves_the_accepted_rate_unknown() -> None:
    prom = FakeProm()
    exp = {"exporter": "loki/send-loki-logs/0"}
    flt = {"filter": "filter/internal-telemetry-loop-breaker/otelcol/0"}
    for t in range(998, 1062, 2):
        prom.add(q.COLLECTOR_QUEUE_SIZE, exp, t, 1000.0 if t >= 1004 else 100.0)
        prom.add(q.COLLECTOR_QUEUE_CAPACITY, exp, t, 1000.0)
        prom.add(q.COLLECTOR_ACCEPTED, {"receiver": "otlp"}, t, 3000.0 * (t - 998))
        prom.add(q.COLLECTOR_EXPORTED, exp, t, 3000.0 * (t - 998))
        prom.add(q.COLLECTOR_REFUSED, {"receiver": "otlp"}, t, 0.0)
        # the loop breaker's counter resets inside the window: its increase is unknown
        prom.add("otelcol_processor_filter_logs.filtered", flt, t, 50.0 if t < 1030 else 2.0)
    loki = LokiAPI("http://loki", httpx.Client(transport=httpx.MockTransport(_loki_nothing_else)))
    figures = sat.measure(prom.api(), loki, Scope(exporter="loki/send-loki-logs/0"), "r1",
                          (1000.0, 1060.0), 300_000.0)  # fmt: skip
    assert figures.saturated is True
    assert figures.exported_per_min == 180_000.0
    assert figures.accepted_per_min is None  # not 180,000 as if the filter had dropped none


# ---- the kernel's marginal CPU -----------------------------------------------------------------


def reading(at: float, otelcol: float, k6: float | None = None) -> CpuReading:
    procs: dict[str, ProcessCpu | None] = {"otelcol": ProcessCpu(10, 1, otelcol)}
    if k6 is not None:
        procs["k6"] = ProcessCpu(20, 2, k6)
    return CpuReading(at, procs, None, 2)


def test_a_negative_marginal_cpu_is_unknown_with_its_reason() -> None:
    value, why = cpu.marginal(15.5, 0.02, 30.0)
    assert (value, why) == (pytest.approx(14.9), "")
    value, why = cpu.marginal(0.1, 0.02, 30.0)
    assert value is None
    assert why.startswith("negative (-0.50 s): the idle baseline was busier than the run")
    assert cpu.marginal(None, 0.02, 30.0) == (None, "not read at both edges of the window")
    # Idle at 0.5 cores for 5 s, then 3 s of CPU over a 30 s window: less than 30 x 0.5.
    fig = cpu.figures((reading(0.0, 0.0), reading(5.0, 2.5)),
                      (reading(10.0, 10.0), reading(40.0, 13.0)), 70_000)  # fmt: skip
    assert fig.marginal_s["otelcol"] is None
    assert fig.per_1000_records["otelcol"] is None
    assert fig.unknown["otelcol"].startswith("negative (-12.00 s): the idle baseline")


def negative_cpu() -> CpuFigures:
    return cpu.figures((reading(0.0, 0.0, None), reading(5.0, 2.5, None)),
                       (reading(10.0, 10.0, 1.0), reading(40.0, 13.0, 7.0)), 70_000)  # fmt: skip


def test_a_negative_marginal_cpu_reaches_result_json_the_table_and_compare_as_unknown() -> None:
    result = replace(run_result(SPEC), cpu=negative_cpu())
    data = as_json(result)
    assert data["cpu"]["marginal_s"]["otelcol"] is None
    assert data["cpu"]["per_1000_records"]["otelcol"] is None
    assert data["cpu"]["unknown"]["otelcol"].startswith("negative")
    assert RunResult.from_dict(data) == result
    shown = text(tables.figures_table(result))
    assert "otelcol CPU s per 1,000 records (marginal)" in shown
    assert "unknown: negative (-12.00 s): the idle baseline was busier" in shown
    values, sources = cv.pressure_values(result)
    assert values[PRESSURE_CPU.name] is None
    assert values[PRESSURE_CPU_K6.name] is None
    assert sources == {}
    assert cv.unknown_reasons(result) == {
        PRESSURE_CPU.name: data["cpu"]["unknown"]["otelcol"],
        PRESSURE_CPU_PROBE.name: data["cpu"]["unknown"]["otelcol"],
        PRESSURE_CPU_K6.name: data["cpu"]["unknown"]["otelcol"],
        # Its used seconds are known, but the kernel read no Loki here (the collector alone).
        PRESSURE_CPU_LOKI.name: "the kernel read no CPU of loki over the load window",
    }


def test_a_cpu_block_written_before_the_reasons_reads_with_none() -> None:
    data = as_json(replace(run_result(SPEC), cpu=negative_cpu()))
    del data["cpu"]["unknown"]
    assert RunResult.from_dict(data).cpu is not None


# ---- every missing figure, through every reader ------------------------------------------------


def all_unknown() -> RunResult:
    """A run of which nothing but k6's counts could be read: Prometheus, Loki, the kernel's
    per-process figures, the saturation window, the resources all unknown."""
    client = ClientFigures(requests=14_000, failed=0, error_rate=None, p99_ms=None,
                           records_sent=70_000, records_accepted=70_000,
                           records_per_minute=140_000.0, duration_s=30.0)  # fmt: skip
    pipeline = PipelineFigures.unmeasured("Prometheus down")
    nothing: dict[str, float | None] = {"otelcol": None}
    unknown_cpu = CpuFigures(30.0, 5.0, 70_000, nothing, nothing, nothing, nothing, None, None,
                             unknown={"otelcol": "not read at both edges"})  # fmt: skip
    service = ServiceResources("v2", "200Mi", 200 * 2**20, "500m", 500, cpu_periods=100,
                               cpu_throttled_periods=40)  # fmt: skip
    go = GoRuntime(None, True, 12, None, 0, None, None, None, None, None, None, 30.0)
    fault = BackendFaultCounts("outage=10s", 40, None, None, None, None, None)
    result = run_result(SPEC)
    return replace(
        result, client=client, pipeline=pipeline, delivered=None,
        ledger=ledger_mod.build(client, pipeline, None), cpu=unknown_cpu,
        saturation=SaturationFigures(300_000.0, None, reason="fewer than two scrapes"),
        resources=ResourceFigures({"otelcol": service}, fault, go, StandinCounts(None, None)),
    )  # fmt: skip


def test_every_missing_figure_stays_unknown_in_result_json() -> None:
    result = all_unknown()
    data = as_json(result)
    assert RunResult.from_dict(data) == result
    assert data["client"]["p99_ms"] is None
    assert all(data["pipeline"][k] is None for k in ("collector_accepted", "queue_size_max"))
    assert data["ledger"]["lost_after_acceptance"] is None
    assert data["cpu"]["per_1000_records"] == {"otelcol": None}
    assert data["saturation"]["accepted_per_min"] is None
    assert data["resources"]["services"]["otelcol"]["cpu_throttled_s"] is None


def test_every_missing_figure_reads_unknown_in_the_tables() -> None:
    result = all_unknown()
    assert result.resources is not None
    assert result.resources.go_runtime is not None
    service = result.resources.services["otelcol"]
    standin = replace(result.resources, standin=StandinCounts(1000, None))
    values = figure_values(replace(result, resources=standin))
    assert (
        "throttled 40/100 periods (unknown s)"
        in values[f"otelcol limits (cgroup {service.cgroup})"]
    )
    assert values["collector Go runtime"].startswith("GC 12 (unknown/min, 0 forced)")
    assert values["received by the Loki stand-in"] == (
        "1,000 of the run's records (and unknown of the collector's own)"
    )
    fault = result.resources.backend_fault
    assert fault is not None
    assert values[f"backend faults ({fault.spec})"] == (
        "40 requests: unknown passed, unknown failed (unknown in the outage), unknown delayed, "
        "unknown Loki unreachable"
    )
    shown = "\n".join(
        text(t)
        for t in (
            tables.figures_table(result),
            tables.ledger_table(result.ledger),
            tables.verdict_table(result),
        )
    )
    assert "otelcol CPU s per 1,000 records (marginal)" in shown
    assert "unknown: not read at both edges" in shown
    assert "0.0000" not in shown
    assert "0.0 s" not in shown


def test_every_missing_figure_is_unknown_in_the_report_the_matrix_and_compare() -> None:
    result = all_unknown()
    run = run_of(result)
    figures = ("accepted_per_min", "exported_per_min", "stored_per_min", "p99_ms", "error_rate",
               "cpu_s_per_1000", "rss_mib_per_1000_per_min", "saturation_per_min")  # fmt: skip
    assert {name: getattr(run, name) for name in figures} == dict.fromkeys(figures)
    row = matrix_table.run_row(matrix_table.MatrixRow("c", "e", "s", "l", "done"), result)
    assert (row.cpu_cores, row.lost, row.failure, row.gc_per_min) == (None, None, None, None)
    assert row.latency_ms == (None,) * 5
    assert row.saturation == ""
    assert "unknown" in row.memory
    assert cv.saturation_value(result)[0] is None
    assert set(cv.fixed_rate_values(result).values()) == {None}
    assert set(cv.pressure_values(result)[0].values()) == {None}
    assert cv.cpu_per_k6_cpu(result) is None


# ---- the other scenarios' ledgers --------------------------------------------------------------


def test_more_own_scrape_points_than_exported_leave_the_runs_export_unknown_not_zero() -> None:
    pipe = replace(
        PipelineFigures.unmeasured("-"), collector_accepted=3000, collector_exported=30,
        collector_failed=0, collector_enqueue_failed=0, collector_refused=0,
        collector_scraped=37, unknown={},
    )  # fmt: skip
    client = ClientFigures(
        requests=60, failed=0, error_rate=0.0, p99_ms=5.0, records_sent=3000,
        records_accepted=3000, records_per_minute=12_000.0, duration_s=15.0,
    )  # fmt: skip
    exported = build_collector(client, pipe, 0, OTLP_METRICS).steps[2]
    assert exported.count is None  # 30 exported, 37 of them its own: the counts disagree
    assert "unknown (at least 0 counted)" in exported.note
    assert "37 points of its own scrape > 30 exported" in exported.note
