"""The loss ledger: sent -> accepted -> exported -> stored, with what explains each difference.

A step whose count could not be measured exactly is unknown (None) with the reason, never a
guess; a step that holds more than the one before says so instead of showing a negative loss.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from loadgate.contract.summary import ClientFigures
from loadgate.measure.counters import Count
from loadgate.measure.pipeline import PipelineFigures
from loadgate.records import fields as f


@dataclass(frozen=True)
class Step:
    name: str
    count: int | None
    source: str
    lost: int | None  # previous step minus this one, never negative (None when either is unknown)
    note: str = ""
    surplus: int | None = None  # how many more than the previous step this one holds

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: object, where: str = "step") -> Step:
        return f.read(cls, data, where)


@dataclass(frozen=True)
class Ledger:
    steps: list[Step]
    acknowledged: int  # records the generator was told were accepted (2xx responses)

    @property
    def balanced(self) -> bool:
        counts = [s.count for s in self.steps]
        return None not in counts and len(set(counts)) == 1

    @property
    def lost_after_acceptance(self) -> int | None:
        """Records acknowledged to the generator that are not stored in Loki (never negative:
        a store holding more than was acknowledged is `stored_unacknowledged`)."""
        stored = self.steps[-1].count
        return None if stored is None else max(0, self.acknowledged - stored)

    @property
    def stored_unacknowledged(self) -> int | None:
        """Records stored although k6 never saw them acknowledged (a lost response)."""
        stored = self.steps[-1].count
        return None if stored is None else max(0, stored - self.acknowledged)

    def to_dict(self) -> dict[str, Any]:
        return {
            "balanced": self.balanced,
            "acknowledged": self.acknowledged,
            "lost_after_acceptance": self.lost_after_acceptance,
            "stored_unacknowledged": self.stored_unacknowledged,
            "steps": [s.to_dict() for s in self.steps],
        }

    @classmethod
    def from_dict(cls, data: object, where: str = "ledger") -> Ledger:
        """The ledger `to_dict` wrote (its derived figures are recomputed, not read)."""
        return f.read(cls, data, where)


def _compare(prev: int | None, cur: int | None) -> tuple[int | None, int | None]:
    """(lost, surplus) of a step against the one before it."""
    if prev is None or cur is None:
        return None, None
    if cur > prev:
        return 0, cur - prev
    return prev - cur, None


def _step(name: str, count: Count, source: str, prev: int | None, notes: list[str]) -> Step:
    lost, surplus = _compare(prev, count.value)
    if count.value is None:
        bound = (
            f" (at least {count.lower_bound:,} counted)" if count.lower_bound is not None else ""
        )
        notes = [f"unknown{bound}: {count.reason or 'not measured'}", *notes]
    return Step(name, count.value, source, lost, "; ".join(notes), surplus)


def dropped_after_acceptance(pipeline: PipelineFigures) -> Count:
    """Records the exporter could not queue after the receiver had acknowledged them (a
    processor such as batch in between). Without one, a full queue makes the receiver refuse
    the request instead: those records are among `refused`, not lost after acceptance."""
    enqueue_failed = pipeline.count("collector_enqueue_failed")
    refused = pipeline.count("collector_refused")
    if enqueue_failed.value is None or refused.value is None:
        bound = enqueue_failed.lower_bound if enqueue_failed.value is None else None
        reason = enqueue_failed.reason or refused.reason
        return Count(None, 0 if bound is not None else None, reason)
    return Count(max(0, enqueue_failed.value - refused.value))


def own_records(pipeline: PipelineFigures, own_stored: int | None) -> tuple[Count, Count]:
    """The collector's own log records in its counters: (accepted, exported).

    Charm revisions since rev219 send the collector's own logs into its own OTLP receiver and
    on to Loki (job `otelcol-internal`), except those about its Loki exporter, which a filter
    (the loop breaker) drops. So the receiver also accepted `filtered + stored` own records
    and the exporter also sent `stored` of them, where `stored` is a LogQL count of the window.
    This holds when every own record that passed the filter reached Loki, as every run record
    that is stored did; a run with losses says so at the steps it cannot split."""
    filtered = pipeline.count("collector_own_filtered")
    if own_stored is None:
        unknown = Count(None, None, "the collector's own records in Loki could not be counted")
        return unknown, unknown
    if filtered.value is None:
        return Count(None, None, filtered.reason), Count(own_stored)
    return Count(filtered.value + own_stored), Count(own_stored)


def _minus(total: Count, own: Count, what: str) -> Count:
    if total.value is None:
        return total
    if own.value is None:
        return Count(None, total.value, f"{what}: {own.reason}")
    if own.value > total.value:
        return Count(None, None, f"{what}: {own.value:,} own records > {total.value:,} in all")
    return Count(total.value - own.value)


def build(
    client: ClientFigures,
    pipeline: PipelineFigures | None,
    stored: int | None,
    own_stored: int | None = 0,
) -> Ledger:
    """Each step with the figures that explain a difference from the step before it.

    The collector's steps count the run's records only: its own log records (see
    `own_records`) are taken out, and said so."""
    sent = client.records_sent
    steps = [Step("sent", sent, "k6 log_records_sent", None)]

    notes: list[str] = []
    if client.failed:
        notes.append(f"{client.failed:,} failed requests")
    if pipeline is None:
        accepted = Count(client.records_accepted)
        source = "k6 log_records_accepted (2xx)"
    else:
        own_accepted, own_exported = own_records(pipeline, own_stored)
        accepted = _minus(pipeline.count("collector_accepted"), own_accepted, "own records")
        source = "collector receiver accepted"
        if own_accepted.value:
            source += " - its own log records"
            notes.append(
                f"the collector's own log records taken out: {own_accepted.value:,} "
                f"({pipeline.count('collector_own_filtered').text()} dropped by its loop "
                f"breaker, {own_stored:,} stored in Loki as job otelcol-internal)"
            )
        refused = pipeline.count("collector_refused")
        queue_full = pipeline.count("collector_enqueue_failed").value
        if refused.value:
            full = min(queue_full or 0, refused.value)
            notes.append(
                f"collector refused {refused.value:,}"
                + (f" ({full:,} with its sending queue full)" if full else "")
            )
        elif refused.value is None:
            notes.append(f"collector refused: {refused.text()}")
        if client.records_accepted != accepted.value:
            notes.append(f"k6 saw {client.records_accepted:,} acknowledged")
    steps.append(_step("accepted", accepted, source, sent, notes))

    last = accepted.value
    if pipeline is not None:
        own_exported = own_records(pipeline, own_stored)[1]
        exported = _minus(pipeline.count("collector_exported"), own_exported, "own records")
        notes = []
        if own_exported.value:
            notes.append(f"the collector's {own_exported.value:,} own log records taken out")
        if accepted.value is None or accepted.value != exported.value:
            failed = pipeline.count("collector_failed")
            notes += [
                f"{failed.text()} failed after retries",
                f"{dropped_after_acceptance(pipeline).text()} dropped (queue full)",
            ]
            if pipeline.queue_size_end:
                notes.append(f"{pipeline.queue_size_end:.0f} batches still queued")
        steps.append(_step("exported", exported, "collector exporter sent", last, notes))
        last = exported.value

    notes = []
    if pipeline is not None:
        discarded = pipeline.count("loki_discarded")
        if discarded.value:
            notes.append(
                f"Loki discarded {discarded.value:,} lines (rate limits; the exporter retries)"
            )
        elif discarded.value is None:
            notes.append(f"Loki discarded: {discarded.text()}")
    loki_restarts = len(pipeline.restarts.get("loki", [])) if pipeline is not None else 0
    if loki_restarts and stored is not None and last is not None and stored < last:
        notes.append(
            f"Loki restarted during the run: {last - stored:,} records it acknowledged are not "
            "stored (lost around its restart)"
        )
    if stored is not None and stored > client.records_accepted:
        notes.append(
            f"Loki holds {stored - client.records_accepted:,} records k6 never saw "
            "acknowledged (their response was lost, e.g. the collector died after accepting "
            "them)"
        )
    stored_count = Count(stored) if stored is not None else Count(None, None, "LogQL failed")
    steps.append(_step("stored", stored_count, "LogQL count in Loki", last, notes))
    return Ledger(steps, acknowledged=client.records_accepted)
