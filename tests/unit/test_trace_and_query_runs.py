"""The run flow of otlp-traces and logql-query against the simulated stack of
test_scenario_runs (a virtual clock, Prometheus scraping every 2 s): otlp-traces counts spans
through the collector's traces pipeline into the traces backend stand-in (its own receiver
counter, read once it was scraped after the drain), logql-query's ledger counts the lines it
pushed while its unit is queries, and each balances to its unit."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from rich.console import Console
from support.fakes.stack import SimulatedStack
from support.fakes.target import FakeTarget
from test_scenario_runs import run, stack_for

from loadgate.contract.spec import RunSpec
from loadgate.contract.summary import ClientFigures
from loadgate.measure import scenarios as measures
from loadgate.measure import signal_queries as sq
from loadgate.measure.pipeline import Scope
from loadgate.records.result import RunResult
from loadgate.report.tables import figures_table, ledger_table
from loadgate.runner import run as runner


def traces_stack() -> SimulatedStack:
    """k6 -> the collector's traces pipeline -> the stand-in, which counts what its receiver
    accepted (its own counter, scraped as job traces-standin, receiver `otlp` as the
    collector's)."""
    return stack_for("otlp-traces")


def run_traces(stack: SimulatedStack, tmp_path: Path) -> RunResult:
    return run(stack, tmp_path)


def test_a_clean_traces_run_balances_to_the_span(tmp_path: Path) -> None:
    stack = traces_stack()
    result = run_traces(stack, tmp_path)
    assert stack.sent == 2000
    assert [s.name for s in result.ledger.steps] == ["sent", "accepted", "exported", "stored"]
    assert [s.count for s in result.ledger.steps] == [2000] * 4, result.ledger
    assert result.ledger.balanced
    assert result.ledger.unit == "spans"
    assert result.ledger.steps[0].source == "k6 spans_sent"
    assert result.ledger.steps[2].source == "collector exporter sent"  # no scrape to take out
    assert [g.name for g in result.gates] == [
        "error_rate", "p99_ms", "spans_per_minute", "lost_spans",
    ]  # fmt: skip
    assert result.verdict == "PASS"
    pipe = result.pipeline
    assert pipe is not None
    # The collector's own counters, not the stand-in's of the same name.
    assert (pipe.collector_accepted, pipe.collector_exported) == (2000, 2000)
    assert pipe.collector_scraped is None
    delivered = result.delivered
    assert delivered is not None
    assert delivered.records == 2000
    assert "stand-in" in delivered.source
    assert "not only the run's" in delivered.source
    assert 'job="traces-standin"' in delivered.query
    assert result.bottleneck is not None
    figures = result.bottleneck["figures"]
    assert figures["collector_send_failed"] == 0  # the traces exporter's, nothing failed
    assert figures["loki_received"] is None  # Loki is off its path
    data = json.loads((tmp_path / "r1" / "result.json").read_text())
    assert data["ledger"]["unit"] == "spans"
    assert data["spec"]["spans_per_trace"] == 9
    assert "logs_per_request" not in data["spec"]


def test_the_read_back_waits_for_a_scrape_of_the_standin_after_the_drain(
    tmp_path: Path,
) -> None:
    """The stand-in's scrape lags what the collector exported (a scrape of its own, at its own
    phase): read at the drain's end its counter would be short; one scrape later it is not."""
    stack = traces_stack()
    stack.standin_lag = 1.5
    result = run_traces(stack, tmp_path)
    assert [s.count for s in result.ledger.steps] == [2000] * 4
    assert not result.problems


def test_the_standin_counts_every_span_it_received_and_the_ledger_shows_the_surplus(
    tmp_path: Path,
) -> None:
    """The limit of a stand-in that keeps nothing to search: spans someone else sent it in the
    run's window are counted as stored; the ledger says the store holds more than k6 saw
    acknowledged instead of hiding it."""
    stack = traces_stack()
    stack.standin_others = 30
    result = run_traces(stack, tmp_path)
    stored = result.ledger.steps[-1]
    assert stored.count == 2030
    assert stored.surplus == 30
    assert "the traces backend holds 30 spans k6 never saw acknowledged" in stored.note
    assert result.ledger.lost_after_acceptance == 0


def test_the_traces_scope_reads_the_collectors_span_counters() -> None:
    scope = measures.of("otlp-traces").scope(Scope(collector={"job": "otelcol"}))
    sel = scope.selectors()
    assert sel["collector_accepted"] == (
        '{__name__=~"otelcol_receiver_accepted_spans(_total)?",job="otelcol",receiver=~"otlp.*"}'
    )
    assert 'exporter=~"otlphttp/send-traces.*"' in sel["collector_exported"]
    assert "collector_scraped" not in sel
    assert "collector_own_filtered" not in sel
    assert sq.standin_spans() == (
        '{__name__=~"otelcol_receiver_accepted_spans(_total)?",job="traces-standin"}'
    )
    assert measures.of("otlp-traces").store.anchor == sq.standin_spans()


def queries_answered(lines: int, spec: RunSpec) -> ClientFigures:
    """k6's figures of a logql-query run: its unit is queries (one a request), its pushes go to
    Loki."""
    return ClientFigures(
        requests=lines // 100 + 600, failed=0, error_rate=0.0, p99_ms=40.0,
        records_sent=600, records_accepted=600, records_per_minute=1800.0,
        duration_s=spec.duration_s, lines_sent=lines, lines_accepted=lines, wrong_answers=0,
    )  # fmt: skip


def query_stack() -> SimulatedStack:
    return stack_for("logql-query")


def run_query(stack: SimulatedStack, tmp_path: Path, target: FakeTarget) -> RunResult:
    spec = RunSpec.from_params(
        {"scenario": "logql-query", "duration": "20s", "rate": 1800, "run-id": "r1"}
    )
    return runner.execute(spec, target, tmp_path, clock=stack.clock)


def test_a_clean_logql_query_run_balances_to_the_line_and_gates_its_queries(
    tmp_path: Path,
) -> None:
    stack = query_stack()
    result = run_query(stack, tmp_path, FakeTarget(stack, client=queries_answered))
    assert [s.name for s in result.ledger.steps] == ["sent", "accepted", "stored"]
    assert [s.count for s in result.ledger.steps] == [2000] * 3
    assert result.ledger.unit == "lines"
    assert result.ledger.steps[0].source == "k6 lines_sent"
    assert result.ledger.steps[1].source == "k6 lines_accepted (2xx)"
    assert result.ledger.balanced
    assert [g.name for g in result.gates] == [
        "error_rate", "p99_ms", "queries_per_minute", "wrong_answers", "lost_lines",
    ]  # fmt: skip
    assert result.verdict == "PASS"
    assert result.client.records_accepted == 600  # queries
    console = Console(width=200, record=True)
    console.print(figures_table(result))
    console.print(ledger_table(result.ledger))
    text = console.export_text()
    assert "queries per minute accepted" in text
    assert "p99 query duration" in text
    assert "wrong answers (counts off what was pushed)" in text
    assert "2,000 / 2,000" in text  # lines pushed / accepted
    assert " lines " in text  # the ledger's column
    data = json.loads((tmp_path / "r1" / "result.json").read_text())
    assert (data["client"]["lines_sent"], data["client"]["wrong_answers"]) == (2000, 0)
    assert data["spec"]["push_rate"] == 6000
    assert data["bottleneck"]["figures"]["wrong_answers"] == 0


def test_wrong_answers_fail_the_run_and_name_loki(tmp_path: Path) -> None:
    stack = query_stack()

    def wrong(lines: int, spec: RunSpec) -> ClientFigures:
        return replace(queries_answered(lines, spec), wrong_answers=3)

    result = run_query(stack, tmp_path, FakeTarget(stack, client=wrong))
    gates = {g.name: g for g in result.gates}
    assert not gates["wrong_answers"].passed
    assert result.verdict == "FAIL"
    assert result.bottleneck is not None
    attribution = result.bottleneck["attribution"]
    assert attribution["verdict"] == "loki"
    assert "Loki answered 3 queries with counts off what was pushed" in attribution["summary"]


def test_a_logs_run_records_no_query_figures(tmp_path: Path) -> None:
    """The figures only logql-query has are left out of other scenarios' records."""
    client = ClientFigures(
        requests=1, failed=0, error_rate=0.0, p99_ms=1.0, records_sent=5, records_accepted=5,
        records_per_minute=5.0, duration_s=60.0,
    )  # fmt: skip
    assert not {"lines_sent", "lines_accepted", "wrong_answers"} & set(client.to_dict())
    assert client.ledger_counts() == (5, 5)
    query = replace(client, lines_sent=70, lines_accepted=69, wrong_answers=0)
    assert query.ledger_counts() == (70, 69)
    assert query.to_dict()["lines_accepted"] == 69
