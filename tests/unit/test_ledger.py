"""The loss ledger: each step's count, the loss against the step before, and what explains it."""

from __future__ import annotations

from dataclasses import replace

from loadgate.contract.summary import ClientFigures
from loadgate.judge.ledger import build
from loadgate.measure.pipeline import PipelineFigures

CLIENT = ClientFigures(
    requests=200,
    failed=0,
    error_rate=0.0,
    p99_ms=5.0,
    records_sent=1000,
    records_accepted=1000,
    records_per_minute=1000.0,
    duration_s=60.0,
)
PIPE = PipelineFigures(
    collector_accepted=1000,
    collector_refused=0,
    collector_exported=1000,
    collector_failed=0,
    collector_enqueue_failed=0,
    queue_size_max=3,
    queue_size_end=0,
    collector_cpu_max=0.2,
    collector_cpu_mean=0.1,
    collector_rss_max_mib=50,
    collector_rss_mean_mib=45,
    loki_received=1000,
    loki_discarded=0,
)


def test_balanced_ledger() -> None:
    ledger = build(CLIENT, PIPE, stored=1000)
    assert [s.name for s in ledger.steps] == ["sent", "accepted", "exported", "stored"]
    assert [s.count for s in ledger.steps] == [1000] * 4
    assert [s.lost for s in ledger.steps] == [None, 0, 0, 0]
    assert ledger.balanced
    assert ledger.lost_after_acceptance == 0
    assert ledger.to_dict()["balanced"] is True


def test_failed_requests_explain_the_first_loss() -> None:
    client = replace(CLIENT, failed=10, records_accepted=950)
    pipe = replace(PIPE, collector_accepted=950, collector_exported=950, collector_refused=50)
    ledger = build(client, pipe, stored=950)
    accepted = ledger.steps[1]
    assert accepted.lost == 50
    assert "10 failed requests" in accepted.note
    assert "collector refused 50" in accepted.note
    assert not ledger.balanced
    assert ledger.lost_after_acceptance == 0  # nothing acknowledged was lost


def test_export_and_storage_losses_are_explained() -> None:
    pipe = replace(
        PIPE,
        collector_exported=900,
        collector_failed=60,
        collector_enqueue_failed=40,
        queue_size_end=2,
        loki_discarded=120,
    )
    ledger = build(CLIENT, pipe, stored=890)
    exported, stored = ledger.steps[2], ledger.steps[3]
    assert exported.lost == 100
    assert "60 failed after retries" in exported.note
    assert "40 dropped (queue full)" in exported.note
    assert "2 batches still queued" in exported.note
    assert stored.lost == 10
    assert "Loki discarded 120" in stored.note
    assert ledger.lost_after_acceptance == 110


def test_collector_and_k6_disagreeing_is_shown() -> None:
    ledger = build(CLIENT, replace(PIPE, collector_accepted=990, collector_exported=990), 990)
    assert "k6 saw 1,000 acknowledged" in ledger.steps[1].note


def test_without_pipeline_figures_or_stored_count() -> None:
    ledger = build(CLIENT, None, stored=None)
    assert [s.name for s in ledger.steps] == ["sent", "accepted", "stored"]
    assert ledger.steps[-1].lost is None
    assert ledger.lost_after_acceptance is None
    assert not ledger.balanced


def test_a_full_queue_refuses_and_is_not_counted_as_dropped_after_acceptance() -> None:
    # Without a processor in between, a full sending queue makes the receiver refuse the
    # request: the enqueue failures are the refused records, not losses after acceptance.
    client = replace(CLIENT, failed=50, records_accepted=750)
    pipe = replace(
        PIPE,
        collector_accepted=750,
        collector_refused=250,
        collector_enqueue_failed=250,
        collector_exported=740,
    )
    ledger = build(client, pipe, stored=750)
    accepted, exported = ledger.steps[1], ledger.steps[2]
    assert "collector refused 250 (250 with its sending queue full)" in accepted.note
    assert "0 dropped (queue full)" in exported.note


def test_records_lost_around_a_loki_restart_are_named() -> None:
    pipe = replace(PIPE, loki_received=None, restarts={"loki": [123.0], "otelcol": []})
    ledger = build(CLIENT, pipe, stored=985)
    stored = ledger.steps[-1]
    assert stored.lost == 15
    assert "Loki restarted during the run: 15 records it acknowledged are not stored" in (
        stored.note
    )
    assert ledger.lost_after_acceptance == 15
