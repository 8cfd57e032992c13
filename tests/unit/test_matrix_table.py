"""A matrix's comparison (report/matrix_table.py): a row per cell from its run, the records
lost by exporter, memory against the limit, and the markdown."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from support.runresults import pipeline, run_result

from loadgate.capacity.matrix.record import CellRecord, MatrixRecord
from loadgate.contract.spec import RunSpec
from loadgate.measure.cpu import CpuFigures
from loadgate.measure.resources import (
    BackendFaultCounts,
    GoRuntime,
    ResourceFigures,
    ServiceResources,
    StandinCounts,
)
from loadgate.records.result import RunResult
from loadgate.report import matrix_table as mt

SPEC = RunSpec.from_params({"rate": 60_000, "duration": "30s", "run-id": "mx-a-s-r60000"})


def result(**over: Any) -> RunResult:
    base = run_result(SPEC, p99_ms=20.0, pipe=pipeline(accepted=30_000, queue_size_max=40.0))
    client = replace(base.client, mean_ms=3.0, p90_ms=8.0, p95_ms=12.0, max_ms=90.0)
    return replace(base, client=client, **over)


def cell(cell_id: str = "a.s.r60000", ref: str = "mx-a-s-r60000", **over: Any) -> CellRecord:
    values: dict[str, Any] = dict(
        matrix_id="mx", cell_id=cell_id, experiment="a", scenario="s", load="r60000",
        load_text="60,000/min", kind="run", digest="d", definition={}, status="done",
        attempt=1, ref=ref, started_at=1.0, ended_at=2.0, verdict="PASS",
    )  # fmt: skip
    values.update(over)
    return CellRecord(**values)


def matrix(*cells: str) -> MatrixRecord:
    return MatrixRecord("mx", "mx.yaml", "x", "a test", [{"name": "a", "text": "t"}], [], [],
                        list(cells), 1.0, 2.0)  # fmt: skip


def limited(peak: int | None, oom: int | None, restarts: int | None) -> ServiceResources:
    return ServiceResources("v1", "400Mi", 400 * 2**20, None, None, oom_kills=oom,
                            memory_peak_bytes=peak, restarts=restarts)  # fmt: skip


def test_a_run_row_has_the_seed_reports_figures() -> None:
    cpu = CpuFigures(30.0, 2.0, 30_000, {}, {"otelcol": 6.0}, {}, {}, 0.6, False)
    row = mt.run_row(mt.MatrixRow("a.s.r60000", "a", "s", "60,000/min", "done"), result(cpu=cpu))
    cells: dict[str, str] = dict(zip(mt.MAIN_COLUMNS, mt.main_cells(row), strict=True))
    assert cells["records/min"] == "60,000"
    assert cells["req/s"] == "200.0"
    assert (cells["success"], cells["failure"]) == ("100.00 %", "0.00 %")
    assert [cells[f"{q} ms"] for q in ("mean", "p90", "p95", "p99", "max")] == [
        "3.0", "8.0", "12.0", "20.0", "90.0",
    ]  # fmt: skip
    assert cells["OOM"] == "no limit"
    assert cells["peak memory / limit"] == "80 MiB RSS (no limit)"
    assert cells["CPU"] == "0.20"  # 6 s over 30 s, from the kernel
    assert cells["queue max / capacity"] == "40 / 1,000"
    assert (cells["lost"], cells["verdict"]) == ("0", "PASS")
    assert cells["machine"] == "NOT quiet (0.60 cores elsewhere)"


def test_memory_against_the_limit_with_oom_kills() -> None:
    res = ResourceFigures({"otelcol": limited(390 * 2**20, 2, 2)})
    row = mt.run_row(mt.MatrixRow("c", "a", "s", "l", "done"), result(resources=res))
    assert (row.memory, row.oom, row.restarts) == ("390 MiB / 400 MiB (98%)", "2", 2)
    unknown = ResourceFigures({"otelcol": limited(None, None, None)})
    row = mt.run_row(mt.MatrixRow("c", "a", "s", "l", "done"), result(resources=unknown))
    assert (row.memory, row.oom, row.restarts) == ("unknown / 400 MiB", "unknown", 0)


def with_exporter(exporter: str, **over: Any) -> RunResult:
    base = result(**over)
    env = {"charms": {"hand": {"exporter": exporter}}}
    gates = [replace(g, passed=False) if g.name == "lost_records" else g for g in base.gates]
    return replace(base, environment=env, gates=gates, verdict="FAIL")


def test_lost_counts_the_standin_when_it_stands_in_for_loki() -> None:
    standin = ResourceFigures(standin=StandinCounts(received=29_990, own_dropped=4))
    lost, verdict, notes = mt.lost_and_verdict(with_exporter("standin", resources=standin))
    assert (lost, verdict) == (10, "FAIL")
    assert "the Loki stand-in received 29,990" in notes[0]
    whole = ResourceFigures(standin=StandinCounts(received=30_000, own_dropped=4))
    assert mt.lost_and_verdict(with_exporter("standin", resources=whole))[:2] == (0, "PASS")
    unknown = ResourceFigures(standin=StandinCounts(received=None, own_dropped=None))
    assert mt.lost_and_verdict(with_exporter("standin", resources=unknown))[:2] == (
        None, "FAIL (lost unknown)",
    )  # fmt: skip


def test_an_isolated_collector_stores_nothing() -> None:
    lost, verdict, notes = mt.lost_and_verdict(with_exporter("debug"))
    assert (lost, verdict) == (0, "PASS")  # its exporter took every record
    assert "isolated (debug exporter)" in notes[0]
    lost, verdict, _ = mt.lost_and_verdict(with_exporter("nop"))
    assert (lost, verdict) == (None, "FAIL (lost unknown)")
    assert mt.lost_and_verdict(result())[:2] == (0, "PASS")  # Loki: the ledger's


def test_rows_in_the_matrix_order_with_pending_failed_and_search_cells() -> None:
    record = matrix("a.s.r60000", "a.s.sat", "a.s.search", "b.s.r60000")
    cells = {
        "a.s.r60000": cell(),
        "a.s.sat": cell("a.s.sat", "mx-a-s-sat", status="failed", error="k6 exited 1"),
        "a.s.search": cell("a.s.search", "mx-a-s-search", kind="search", status="running"),
    }
    rows = mt.rows_of(record, cells, {"mx-a-s-r60000": result()}, {})
    assert [r.status for r in rows] == ["done", "failed", "running", "pending"]
    assert rows[1].notes == ["failed to run: k6 exited 1"]
    assert rows[3].experiment == "b"
    text = mt.markdown(record, rows)
    assert text.startswith("# Matrix mx\n\na test\n\nFrom `mx.yaml`; 1 of 4 cells done.")
    assert "| a | s | 60,000/min | 60,000 | 200.0 |" in text
    assert "| a | s | 60,000/min | failed |" in text


def test_further_figures_gc_and_faults() -> None:
    go = GoRuntime("300MiB", True, 40, 80.0, 0, 12, 60.0, 70.0, 90.0, 50.0, 120.0, 30.0)
    fault = BackendFaultCounts("503=0.7", 100, 30, 70, 0, 0, 0)
    res = ResourceFigures(go_runtime=go, backend_fault=fault)
    row = mt.run_row(mt.MatrixRow("c", "a", "s", "l", "done"), result(resources=res))
    more: dict[str, str] = dict(zip(mt.MORE_COLUMNS, mt.more_cells(row), strict=True))
    assert (more["GC/min"], more["GC"], more["heap max"]) == ("80.0", "40", "90 MiB")
    assert more["backend faults"] == "100 pushes: 70 failed, 30 passed"
