"""The ledgers of otlp-metrics (data points through the collector's remote write into
Prometheus) and loki-push (lines straight to Loki), in their unit: what each step counts, the
collector's own scrape taken out of `exported`, and unknowns that say why."""

from __future__ import annotations

from dataclasses import replace

from rich.console import Console

from loadgate.contract.scenarios import LOGQL_QUERY, LOKI_PUSH, OTLP_METRICS, OTLP_TRACES
from loadgate.contract.summary import ClientFigures
from loadgate.judge.ledger import Ledger
from loadgate.judge.signal_ledger import build_collector, build_direct
from loadgate.measure.pipeline import PipelineFigures
from loadgate.report.tables import ledger_table

CLIENT = ClientFigures(
    requests=60, failed=0, error_rate=0.0, p99_ms=5.0, records_sent=3000,
    records_accepted=3000, records_per_minute=12_000.0, duration_s=15.0,
)  # fmt: skip
# The collector took in 3,000 of the run's points and 37 of its own scrape; all left.
PIPE = PipelineFigures(
    collector_accepted=3000, collector_refused=0, collector_exported=3037, collector_failed=0,
    collector_enqueue_failed=0, queue_size_max=1, queue_size_end=0, collector_cpu_max=0.1,
    collector_cpu_mean=0.05, collector_rss_max_mib=100, collector_rss_mean_mib=99,
    loki_received=None, loki_discarded=None, collector_own_filtered=None,
    collector_scraped=37,
)  # fmt: skip


def counts(ledger: Ledger) -> list[int | None]:
    return [s.count for s in ledger.steps]


def test_a_clean_metrics_run_balances_in_data_points() -> None:
    ledger = build_collector(CLIENT, PIPE, 3000, OTLP_METRICS)
    assert [s.name for s in ledger.steps] == ["sent", "accepted", "exported", "stored"]
    assert counts(ledger) == [3000] * 4
    assert ledger.balanced
    assert ledger.unit == "data points"
    assert ledger.steps[0].source == "k6 data_points_sent"
    exported = ledger.steps[2]
    assert exported.source == "collector exporter sent - its own scrape"
    assert "37 points of the collector's own scrape taken out" in exported.note
    assert ledger.steps[3].source == "PromQL count in Prometheus"
    assert ledger.to_dict()["unit"] == "data points"
    assert ledger.lost_after_acceptance == 0


def test_failed_exports_leave_the_runs_share_unknown_never_a_loss() -> None:
    pipe = replace(PIPE, collector_failed=50, collector_exported=2987)
    ledger = build_collector(CLIENT, pipe, 2950, OTLP_METRICS)
    exported = ledger.steps[2]
    assert exported.count is None
    assert "50 failed" in exported.note
    assert "at least 2,950" in exported.note  # the stored count bounds it from below
    assert ledger.lost_after_acceptance == 50
    assert not ledger.balanced


def test_an_unknown_scrape_count_makes_exported_unknown() -> None:
    pipe = replace(
        PIPE,
        collector_scraped=None,
        unknown={"collector_scraped": {"reason": "otelcol restarted", "lower_bound": 30}},
    )
    exported = build_collector(CLIENT, pipe, 3000, OTLP_METRICS).steps[2]
    assert exported.count is None
    assert "unknown (at least 3,000 counted)" in exported.note  # the stored count: its bound
    assert "otelcol restarted" in exported.note
    assert exported.source == "collector exporter sent"  # no note of a scrape taken out


def test_a_pipeline_without_a_scrape_of_its_own_exports_as_counted() -> None:
    pipe = replace(PIPE, collector_exported=3000, collector_scraped=None)
    exported = build_collector(CLIENT, pipe, 3000, OTLP_METRICS).steps[2]
    assert (exported.count, exported.source) == (3000, "collector exporter sent")


def test_points_refused_and_lost_in_prometheus_are_explained() -> None:
    client = replace(CLIENT, failed=2, records_accepted=2900)
    pipe = replace(PIPE, collector_accepted=2900, collector_refused=100, collector_exported=2937)
    ledger = build_collector(client, pipe, 2890, OTLP_METRICS)
    accepted, stored = ledger.steps[1], ledger.steps[3]
    assert accepted.lost == 100
    assert "2 failed requests" in accepted.note
    assert "collector refused 100" in accepted.note
    assert stored.lost == 10
    assert ledger.lost_after_acceptance == 10


def test_prometheus_holding_more_than_acknowledged_says_so() -> None:
    ledger = build_collector(CLIENT, PIPE, 3005, OTLP_METRICS)
    stored = ledger.steps[3]
    assert stored.surplus == 5
    assert "Prometheus holds 5 data points k6 never saw acknowledged" in stored.note
    assert ledger.stored_unacknowledged == 5


def test_a_loki_push_ledger_has_no_collector_steps() -> None:
    client = replace(CLIENT, records_sent=3000, records_accepted=2900, failed=1)
    pipe = replace(PIPE, loki_received=2900, loki_discarded=0)
    ledger = build_direct(client, pipe, 2900, LOKI_PUSH)
    assert [s.name for s in ledger.steps] == ["sent", "accepted", "stored"]
    assert counts(ledger) == [3000, 2900, 2900]
    assert ledger.steps[1].source == "k6 lines_accepted (2xx)"
    assert "1 failed requests" in ledger.steps[1].note
    assert ledger.steps[2].source == "LogQL count in Loki"
    assert ledger.unit == "lines"
    assert ledger.lost_after_acceptance == 0


def test_a_loki_push_ledger_notes_what_loki_discarded_and_an_unknown_store() -> None:
    pipe = replace(PIPE, loki_received=3000, loki_discarded=120)
    ledger = build_direct(CLIENT, pipe, 2880, LOKI_PUSH)
    assert "Loki discarded 120 lines" in ledger.steps[2].note
    assert ledger.lost_after_acceptance == 120
    unknown = build_direct(CLIENT, None, None, LOKI_PUSH)
    assert unknown.steps[2].count is None
    assert "LogQL count in Loki failed" in unknown.steps[2].note
    assert unknown.lost_after_acceptance is None


def render(ledger: Ledger) -> str:
    console = Console(width=200, record=True)
    console.print(ledger_table(ledger))
    return console.export_text()


def test_the_ledger_table_names_the_unit() -> None:
    assert " data points " in render(build_collector(CLIENT, PIPE, 3000, OTLP_METRICS))
    assert " lines " in render(build_direct(CLIENT, PIPE, 3000, LOKI_PUSH))
    logs = Ledger(build_direct(CLIENT, PIPE, 3000, LOKI_PUSH).steps, acknowledged=3000)
    assert " records " in render(logs)  # otlp-logs' ledgers keep their column
    assert "unit" not in logs.to_dict()


# A traces pipeline: no scrape of the collector's own enters it.
SPANS = replace(PIPE, collector_exported=3000, collector_scraped=None)


def test_a_clean_traces_run_balances_in_spans() -> None:
    ledger = build_collector(CLIENT, SPANS, 3000, OTLP_TRACES)
    assert counts(ledger) == [3000] * 4
    assert ledger.unit == "spans"
    assert [s.source for s in ledger.steps] == [
        "k6 spans_sent", "collector receiver accepted", "collector exporter sent",
        "spans the traces backend received",
    ]  # fmt: skip
    assert " spans " in render(ledger)


def test_spans_the_traces_backend_did_not_get_are_lost_and_explained() -> None:
    pipe = replace(SPANS, collector_exported=2950, collector_failed=50)
    ledger = build_collector(CLIENT, pipe, 2950, OTLP_TRACES)
    exported = ledger.steps[2]
    assert exported.lost == 50
    assert "50 failed after retries" in exported.note
    assert ledger.lost_after_acceptance == 50
    unknown = build_collector(CLIENT, SPANS, None, OTLP_TRACES)
    assert "spans the traces backend received failed" in unknown.steps[3].note


def test_logql_querys_ledger_counts_the_lines_it_pushed() -> None:
    kind = LOGQL_QUERY.as_ledger()
    assert (kind.unit, kind.sent_metric, kind.accepted_metric) == (
        "lines", "lines_sent", "lines_accepted",
    )  # fmt: skip
    assert kind.lost_gate == "lost_lines"
    assert LOGQL_QUERY.unit == "queries"  # its own unit stays the queries'
    assert OTLP_TRACES.as_ledger() is OTLP_TRACES
    client = replace(CLIENT, records_sent=600, records_accepted=600, lines_sent=5000,
                     lines_accepted=4990)  # fmt: skip
    sent, acknowledged = client.ledger_counts()
    pushed = replace(client, records_sent=sent, records_accepted=acknowledged)
    ledger = build_direct(pushed, replace(PIPE, loki_discarded=0), 4990, kind)
    assert counts(ledger) == [5000, 4990, 4990]
    assert ledger.steps[1].source == "k6 lines_accepted (2xx)"
    assert ledger.unit == "lines"
    assert ledger.lost_after_acceptance == 0
