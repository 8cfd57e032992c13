"""The loss ledger: each step's count, the loss against the step before, and what explains it."""

from __future__ import annotations

from dataclasses import replace

from rich.console import Console

from loadgate.contract.summary import ClientFigures
from loadgate.judge.ledger import Ledger, Step, build
from loadgate.measure.other_traffic import OtherTraffic
from loadgate.measure.pipeline import PipelineFigures
from loadgate.report.tables import ledger_table

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


# ---- other traffic on the window's edges (issue 38) -------------------------------------------
# Another OTLP client sending 100 records/s beside a 30 s run at 30,000/min: k6 got 15,005
# acknowledged and Loki stores 15,005 of the run's; the collector's counters less the 4,199
# other records Loki holds from the window give 15,006, and 400 of those other records lie
# within 1 s of the window's edges.
RUN = 15_005
OTHER_RECORDS = 4_199
OTHER = OtherTraffic(
    records=OTHER_RECORDS, per_minute=8_398.0, edge_records=400, window_s=30.0, query=""
)
BESIDE = replace(CLIENT, requests=3_001, records_sent=RUN, records_accepted=RUN, duration_s=30.0)
COUNTERS = replace(
    PIPE,
    collector_accepted=15_006 + OTHER_RECORDS,
    collector_exported=15_006 + OTHER_RECORDS,
    loki_received=RUN + OTHER_RECORDS,
)


def render(ledger: Ledger) -> str:
    console = Console(width=200, record=True)
    console.print(ledger_table(ledger))
    return console.export_text()


def test_a_run_that_lost_nothing_beside_other_traffic_balances_within_the_edges() -> None:
    ledger = build(BESIDE, COUNTERS, stored=RUN, other=OTHER)
    # Before issue 38: [15,005, None, None, 15,005] and NOT balanced.
    assert [s.count for s in ledger.steps] == [RUN, 15_006, 15_006, RUN]
    assert ledger.balanced
    accepted, exported, stored = ledger.steps[1:]
    for step in (accepted, exported):
        assert (step.count, step.uncertainty) == (15_006, 400)
        assert step.text() == "15,006 ± 400"
        assert (step.lost, step.surplus) == (0, None)  # +1 is within ± 400: no difference
        assert "4,199 records of other traffic taken out" in step.note
        assert "known within ± 400" in step.note
        assert "unknown" not in step.note
    assert (stored.lost, stored.surplus, stored.uncertainty) == (0, None, 0)
    assert ledger.lost_after_acceptance == 0
    assert ledger.balanced
    table = render(ledger)
    assert "loss ledger (balanced)" in table
    assert "15,006 ± 400" in table
    assert "within ± 400" in table  # accepted against sent, stored against exported
    assert "within ± 800" in table  # exported against accepted: both steps' uncertainty


def test_a_loss_beyond_the_edges_uncertainty_is_shown_and_unbalances() -> None:
    # 1,000 records refused (200 failed requests): the collector's steps less other traffic
    # give 14,006 ± 400 against 15,005 sent, a loss of 999 that the edges do not explain.
    client = replace(BESIDE, failed=200, records_accepted=RUN - 1_000)
    pipe = replace(
        COUNTERS,
        collector_accepted=14_006 + OTHER_RECORDS,
        collector_exported=14_006 + OTHER_RECORDS,
        collector_refused=1_000,
    )
    ledger = build(client, pipe, stored=RUN - 1_000, other=OTHER)
    accepted = ledger.steps[1]
    assert (accepted.count, accepted.uncertainty, accepted.lost) == (14_006, 400, 999)
    assert "collector refused 1,000" in accepted.note
    assert ledger.lost_after_acceptance == 0  # nothing acknowledged is missing
    assert not ledger.balanced
    table = render(ledger)
    assert "loss ledger (NOT balanced)" in table
    assert "999 ± 400" in table


def test_a_loss_of_acknowledged_records_beyond_the_edges_unbalances() -> None:
    # The exporter sent 2,000 fewer of the run's records than the receiver took, and Loki
    # holds 2,000 fewer than k6 saw acknowledged.
    pipe = replace(COUNTERS, collector_exported=13_006 + OTHER_RECORDS)
    ledger = build(BESIDE, pipe, stored=RUN - 2_000, other=OTHER)
    exported = ledger.steps[2]
    assert (exported.count, exported.uncertainty, exported.lost) == (13_006, 400, 2_000)
    assert ledger.lost_after_acceptance == 2_000
    assert not ledger.balanced
    assert "2,000 ± 800" in render(ledger)


def test_without_a_stored_count_the_ledger_cannot_balance() -> None:
    # LogQL failed: nothing says whether an acknowledged record is missing.
    ledger = build(BESIDE, COUNTERS, stored=None, other=OTHER)
    accepted, exported, stored = ledger.steps[1:]
    assert accepted.text() == "15,006 ± 400"
    assert exported.text() == "15,006 ± 400"  # no run's count to match: its edges still bound it
    assert stored.count is None
    assert stored.lost is None
    assert stored.text() == "unknown"  # never 0
    assert ledger.lost_after_acceptance is None
    assert not ledger.balanced
    table = render(ledger)
    assert "loss ledger (NOT balanced)" in table
    assert "LogQL failed" in table


def test_other_traffic_that_could_not_be_counted_leaves_its_steps_unknown_never_0() -> None:
    unread = replace(OTHER, records=None, per_minute=None, edge_records=None)
    ledger = build(BESIDE, COUNTERS, stored=RUN, other=unread)
    accepted, exported = ledger.steps[1:3]
    assert accepted.count is None
    assert exported.count is None
    assert "unknown (at least 15,005 counted)" in accepted.note
    assert (accepted.lost, accepted.uncertainty) == (None, 0)
    # What it could count balances: k6's sent and acknowledged records, all stored.
    assert ledger.balanced
    assert "unknown" in render(ledger)


def test_a_difference_with_no_other_records_on_the_edges_is_shown() -> None:
    quiet_edges = replace(OTHER, edge_records=0)
    ledger = build(BESIDE, COUNTERS, stored=RUN, other=quiet_edges)
    accepted = ledger.steps[1]
    assert (accepted.count, accepted.uncertainty, accepted.surplus) == (15_006, 0, 1)
    assert "no other records near the window's edges" in accepted.note
    assert not ledger.balanced


def test_a_steps_uncertainty_is_written_only_when_it_has_one() -> None:
    ledger = build(BESIDE, COUNTERS, stored=RUN, other=OTHER)
    data = ledger.to_dict()
    assert data["balanced"] is True
    assert [s.get("uncertainty") for s in data["steps"]] == [None, 400, 400, None]
    assert Ledger.from_dict(data) == ledger
    # A record written before issue 38 has no uncertainty: its counts are exact or unknown.
    old = build(CLIENT, PIPE, stored=1000).to_dict()
    assert all("uncertainty" not in s for s in old["steps"])
    assert Step.from_dict(old["steps"][1]).uncertainty == 0
