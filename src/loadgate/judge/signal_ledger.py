"""The ledgers of the scenarios other than otlp-logs, in their unit (contract/scenarios.py):

- through the collector (otlp-metrics; the pattern for other signals): sent (k6) -> accepted
  (the collector's receiver of the load) -> exported (its exporter under test, less what its
  own scrape took in: that leaves by the same exporter) -> stored (the scenario's store);
- straight to the backend (loki-push): sent -> accepted (k6's 2xx) -> stored.

As in ledger.py: a step that could not be measured exactly is unknown with the reason and its
lower bound, never a guess, and a step holding more than the one before says so.
"""

from __future__ import annotations

from loadgate.contract.scenarios import Scenario
from loadgate.contract.summary import ClientFigures
from loadgate.judge.ledger import Ledger, Step, dropped_after_acceptance, step
from loadgate.measure.counters import Count
from loadgate.measure.pipeline import SCRAPED, PipelineFigures


def _sent(client: ClientFigures, kind: Scenario) -> Step:
    return Step("sent", client.records_sent, f"k6 {kind.sent_metric}", None)


def _stored(
    client: ClientFigures, stored: int | None, kind: Scenario, last: int | None, notes: list[str]
) -> Step:
    if stored is not None and stored > client.records_accepted:
        notes.append(
            f"{kind.backend} holds {stored - client.records_accepted:,} "
            f"{kind.unit} k6 never saw acknowledged (their response was lost)"
        )
    count = Count(stored) if stored is not None else Count(None, None, f"{kind.store} failed")
    return step("stored", count, kind.store, last, notes)


def _exported_of_load(pipeline: PipelineFigures, stored: int | None) -> tuple[Count, str]:
    """The exporter's count less what the collector's own scrape took in (metrics), and the
    note that says so. Exact when every scraped point left too (nothing failed, dropped or
    queued); otherwise, or when the scrape counted more than the exporter sent, unknown with
    the stored count as its lower bound."""
    exported = pipeline.count("collector_exported")
    if pipeline.collector_scraped is None and SCRAPED not in pipeline.unknown:
        return exported, ""  # no scrape of its own in this pipeline
    scraped = pipeline.count(SCRAPED)
    if exported.value is None:
        return exported, ""
    if scraped.value is None:
        return Count(None, stored, f"its own scrape's points unknown: {scraped.reason}"), ""
    note = f"{scraped.value:,} points of the collector's own scrape taken out"
    failed = pipeline.count("collector_failed")
    dropped = dropped_after_acceptance(pipeline)
    if failed.value or dropped.value or failed.value is None or dropped.value is None:
        why = f"{failed.text()} failed and {dropped.text()} dropped: the run's share is unknown"
        return Count(None, stored, why), note
    if scraped.value > exported.value:  # the counts disagree: unknown, not 0
        why = f"{scraped.value:,} points of its own scrape > {exported.value:,} exported"
        return Count(None, stored, why), note
    return Count(exported.value - scraped.value), note


def build_collector(
    client: ClientFigures, pipeline: PipelineFigures, stored: int | None, kind: Scenario
) -> Ledger:
    """sent -> accepted -> exported -> stored through the collector, in the scenario's unit."""
    steps = [_sent(client, kind)]
    notes: list[str] = []
    if client.failed:
        notes.append(f"{client.failed:,} failed requests")
    accepted = pipeline.count("collector_accepted")
    refused = pipeline.count("collector_refused")
    if refused.value:
        notes.append(f"collector refused {refused.value:,}")
    elif refused.value is None:
        notes.append(f"collector refused: {refused.text()}")
    if client.records_accepted != accepted.value:
        notes.append(f"k6 saw {client.records_accepted:,} acknowledged")
    steps.append(
        step("accepted", accepted, "collector receiver accepted", client.records_sent, notes)
    )

    exported, note = _exported_of_load(pipeline, stored)
    notes = [note] if note else []
    if accepted.value is None or accepted.value != exported.value:
        notes += [
            f"{pipeline.count('collector_failed').text()} failed after retries",
            f"{dropped_after_acceptance(pipeline).text()} dropped (queue full)",
        ]
        if pipeline.queue_size_end:
            notes.append(f"{pipeline.queue_size_end:.0f} batches still queued")
    source = "collector exporter sent" + (" - its own scrape" if note else "")
    steps.append(step("exported", exported, source, accepted.value, notes))
    steps.append(_stored(client, stored, kind, exported.value, []))
    return Ledger(steps, acknowledged=client.records_accepted, unit=kind.unit)


def build_direct(
    client: ClientFigures, pipeline: PipelineFigures | None, stored: int | None, kind: Scenario
) -> Ledger:
    """sent -> accepted (k6's 2xx) -> stored: the load goes to the store itself."""
    notes = [f"{client.failed:,} failed requests"] if client.failed else []
    accepted = Count(client.records_accepted)
    source = f"k6 {kind.accepted_metric} (2xx)"
    steps = [_sent(client, kind), step("accepted", accepted, source, client.records_sent, notes)]
    notes = []
    if pipeline is not None:
        discarded = pipeline.count("loki_discarded")
        if discarded.value:
            notes.append(f"Loki discarded {discarded.value:,} lines (all streams; rate limits)")
        elif discarded.value is None:
            notes.append(f"Loki discarded: {discarded.text()}")
        if pipeline.restarts.get("loki"):
            notes.append("Loki restarted during the run")
    steps.append(_stored(client, stored, kind, accepted.value, notes))
    return Ledger(steps, acknowledged=client.records_accepted, unit=kind.unit)
