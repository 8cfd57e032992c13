"""The loss ledger: sent -> accepted -> exported -> stored, with what explains each difference.

A step whose count could not be measured is unknown (None) with the reason, never a guess; a
step known only within a margin (other traffic near the window's edges) is its count with that
uncertainty, and shows a loss, or a surplus, only beyond it; a step that holds more than the one
before says so instead of showing a negative loss.
This module builds the ledger of log records through the collector (otlp-logs), with the
collector's own records and other traffic taken out; judge/signal_ledger.py builds those of
the other scenarios, in their unit, from the same steps.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from loadgate.contract import typed as f
from loadgate.contract.summary import ClientFigures
from loadgate.measure.counters import Count
from loadgate.measure.other_traffic import OtherTraffic
from loadgate.measure.pipeline import PipelineFigures


@dataclass(frozen=True)
class Step:
    name: str
    count: int | None
    source: str
    # The previous step minus this one when that exceeds both steps' uncertainty, else 0; never
    # negative (None when either is unknown).
    lost: int | None
    note: str = ""
    # How many more than the previous step this one holds, beyond both steps' uncertainty.
    surplus: int | None = None
    # The count is known within ± this many (other traffic near the window's edges); 0: exact.
    # Records before issue 38 have none: every count they hold is exact or unknown.
    uncertainty: int = 0

    def text(self) -> str:
        """The count as people read it: `15,006`, `15,006 ± 400` or `unknown`."""
        if self.count is None:
            return "unknown"
        return f"{self.count:,}" + (f" ± {self.uncertainty:,}" if self.uncertainty else "")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if not self.uncertainty:  # an exact or unknown count is written as before issue 38
            del d["uncertainty"]
        return d

    @classmethod
    def from_dict(cls, data: object, where: str = "step") -> Step:
        return f.read(cls, data, where)


@dataclass(frozen=True)
class Ledger:
    steps: list[Step]
    acknowledged: int  # records the generator was told were accepted (2xx responses)
    # Other traffic the collector carried in the window (taken out of its steps): its count
    # (None: unknown, or none measured) and what it is.
    other: int | None = field(default=None, metadata=f.json_key("other_traffic"))
    other_note: str = field(default="", metadata=f.json_key("other_traffic_note"))
    unit: str = "log records"  # what the steps count (the scenario's unit)

    @property
    def balanced(self) -> bool:
        """Whether nothing is missing: the stored count (exact, by LogQL) holds every record k6
        saw acknowledged, and every step that was counted agrees with it within that step's
        uncertainty, so no step shows a loss or a surplus. A step that could not be counted
        shows neither; a stored count that could not be made leaves the ledger unbalanced."""
        stored = self.steps[-1].count
        if stored is None or self.lost_after_acceptance:
            return False
        return all(_agrees(s, stored) for s in self.steps)

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
        d: dict[str, Any] = {
            "balanced": self.balanced,
            "acknowledged": self.acknowledged,
            "lost_after_acceptance": self.lost_after_acceptance,
            "stored_unacknowledged": self.stored_unacknowledged,
            "steps": [s.to_dict() for s in self.steps],
        }
        if self.other is not None or self.other_note:  # records before issue 18 have neither
            d.update(other_traffic=self.other, other_traffic_note=self.other_note)
        if self.unit != Ledger.unit:  # log records' ledgers, older ones too, have none
            d["unit"] = self.unit
        return d

    @classmethod
    def from_dict(cls, data: object, where: str = "ledger") -> Ledger:
        """The ledger `to_dict` wrote (its derived figures are recomputed, not read)."""
        return f.read(cls, data, where)


def _agrees(s: Step, stored: int) -> bool:
    """Whether step `s` agrees with the stored count within its uncertainty (or was not
    counted, so shows no difference)."""
    return s.count is None or abs(s.count - stored) <= s.uncertainty


@dataclass(frozen=True)
class Within:
    """A collector step's count as the ledger takes it: the Count, the ± it is known within
    (other traffic near the window's edges; 0: exact) and the note that says what was taken
    out (empty: nothing)."""

    count: Count
    uncertainty: int = 0
    note: str = ""


def _compare(prev: int | None, cur: int | None, margin: int = 0) -> tuple[int | None, int | None]:
    """(lost, surplus) of a step against the one before it; a difference within `margin` (the
    two steps' uncertainties added) is neither."""
    if prev is None or cur is None:
        return None, None
    if cur - prev > margin:
        return 0, cur - prev
    if prev - cur > margin:
        return prev - cur, None
    return 0, None


def step(
    name: str,
    count: Count,
    source: str,
    prev: int | None,
    notes: list[str],
    *,
    uncertainty: int = 0,
    prev_uncertainty: int = 0,
) -> Step:
    """A step against the one before it (`prev`, known within ± `prev_uncertainty`); an
    unknown count says why (and its lower bound), a count known within ± `uncertainty` shows
    a loss or a surplus only beyond both uncertainties."""
    lost, surplus = _compare(prev, count.value, prev_uncertainty + uncertainty)
    if count.value is None:
        bound = (
            f" (at least {count.lower_bound:,} counted)" if count.lower_bound is not None else ""
        )
        notes = [f"unknown{bound}: {count.reason or 'not measured'}", *notes]
    within = uncertainty if count.value is not None else 0
    return Step(name, count.value, source, lost, "; ".join(notes), surplus, within)


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


def _own_records(pipeline: PipelineFigures, own_stored: int | None) -> tuple[Count, Count]:
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


def _other_blocker(pipeline: PipelineFigures) -> str:
    """Why other traffic cannot be taken out of `accepted` exactly (empty: it can). Other
    records the collector accepted but did not deliver (failed, dropped, still queued) are in
    its counters but not in Loki, where other traffic is counted."""
    reasons: list[str] = []
    failed = pipeline.count("collector_failed")
    dropped = dropped_after_acceptance(pipeline)
    if failed.value is None or failed.value:
        reasons.append(f"{failed.text()} records failed after retries")
    if dropped.value is None or dropped.value:
        reasons.append(f"{dropped.text()} dropped after acceptance")
    if pipeline.queue_size_end:
        reasons.append(f"{pipeline.queue_size_end:.0f} batches still queued")
    return ", ".join(reasons)


def _without_other(count: Count, other: OtherTraffic | None, reference: int | None,
                  blocker: str = "") -> Within:  # fmt: skip
    """A collector step less the other traffic, with its uncertainty and the note that says so.

    Exact when the difference equals `reference`, the same step counted from the run's side
    alone (k6's acknowledged records for `accepted`, the run's records in Loki for
    `exported`). Otherwise the difference is the count, known within ± the other records that
    lie near the window's edges: their time stamps (set by their senders) and the collector's
    counting (by scrape) may put them on different sides of an edge, so the counters may hold
    up to that many more or fewer of them than Loki's count of the window. It is a loss, or a
    surplus, only beyond that. Unknown, with `reference` as lower bound (every record k6 saw
    acknowledged was accepted; every stored one exported), when other traffic could not be
    counted, when other records did not reach Loki (`blocker`), or when the difference falls
    short of `reference` by more than the edges explain (other records in Loki that never
    passed the collector): those cannot be told apart from the run's, and are never a loss."""
    if other is None or other.records == 0 or count.value is None:
        return Within(count)
    if other.records is None:
        reason = "other traffic could not be counted (Loki failed), so it cannot be taken out"
        return Within(Count(None, reference, reason))
    value = count.value - other.records
    note = f"{other.records:,} records of other traffic taken out"
    if blocker:
        reason = f"other traffic ({other.records:,} records) cannot be split from the run's: "
        return Within(Count(None, reference, reason + blocker), note=note)
    if value == reference:
        return Within(Count(value), note=note)
    edges = other.edge_records
    if edges is None:
        reason = "other traffic's records near the window's edges could not be counted"
        return Within(Count(None, reference, reason), note=note)
    if reference is not None and value < reference - edges:
        # Fewer than the run's own count beyond the edges: not the run's loss (k6 saw them
        # acknowledged; Loki holds them), but other records counted in Loki that never passed
        # the collector (a client pushing to Loki directly), which cannot be told apart.
        own = f"{reference:,}"
        reason = (
            f"other traffic ({other.records:,} records) cannot be split from the run's: the "
            f"counters less other traffic give {value:,}, the run's own count {own}, more than "
            f"the {edges:,} other records near the window's edges explain (other records that "
            "did not pass through the collector)"
        )
        return Within(Count(None, reference, reason), note=note)
    if not edges:  # nothing on the edges: the difference is the run's
        return Within(Count(value), note=f"{note}; no other records near the window's edges")
    return Within(Count(value), edges, f"{note}; {_edge_note(edges, other.edge_s)}")


def _edge_note(edges: int, edge_s: float) -> str:
    """Why a collector step less other traffic is known only within ± its edge records."""
    return (
        f"known within ± {edges:,}: that many other records lie within {edge_s:g}s of the "
        "window's edges, where their time stamps (set by their senders) and the collector's "
        "counting (by scrape) may fall on different sides"
    )


def _other_note(other: OtherTraffic | None) -> str:
    if other is None or other.records == 0:
        return ""
    if other.records is None:
        return "other traffic: unknown (Loki could not count it)"
    rate = f" ({other.per_minute:,.0f}/min)" if other.per_minute else ""
    return (
        f"stored in Loki in the window{rate}, neither the run's nor the collector's own: "
        "taken out of accepted and exported"
    )


def build(
    client: ClientFigures,
    pipeline: PipelineFigures | None,
    stored: int | None,
    own_stored: int | None = 0,
    other: OtherTraffic | None = None,
) -> Ledger:
    """Each step with the figures that explain a difference from the step before it.

    The collector's steps count the run's records only: its own log records (see
    `_own_records`) and other traffic (`_without_other`) are taken out, and said so."""
    sent = client.records_sent
    steps = [Step("sent", sent, "k6 log_records_sent", None)]

    notes: list[str] = []
    if client.failed:
        notes.append(f"{client.failed:,} failed requests")
    if pipeline is None:
        accepted = Within(Count(client.records_accepted))
        source = "k6 log_records_accepted (2xx)"
    else:
        accepted, source = _collector_accepted(client, pipeline, own_stored, other, notes)
    steps.append(_after(steps[-1], "accepted", accepted, source, notes))

    if pipeline is not None:
        exported, notes = _collector_exported(pipeline, accepted.count, own_stored, other, stored)
        steps.append(_after(steps[-1], "exported", exported, "collector exporter sent", notes))

    stored_count = Count(stored) if stored is not None else Count(None, None, "LogQL failed")
    notes = _stored_notes(client, pipeline, stored, steps[-1])
    steps.append(_after(steps[-1], "stored", Within(stored_count), "LogQL count in Loki", notes))
    return Ledger(
        steps,
        acknowledged=client.records_accepted,
        other=other.records if other is not None else None,
        other_note=_other_note(other),
    )


def _after(prev: Step, name: str, count: Within, source: str, notes: list[str]) -> Step:
    """The step `name` after `prev`, with the notes that explain it."""
    return step(
        name,
        count.count,
        source,
        prev.count,
        notes,
        uncertainty=count.uncertainty,
        prev_uncertainty=prev.uncertainty,
    )


def _collector_accepted(
    client: ClientFigures,
    pipeline: PipelineFigures,
    own_stored: int | None,
    other: OtherTraffic | None,
    notes: list[str],
) -> tuple[Within, str]:
    """The collector's accepted count of the run's records and its source; appends to `notes`
    what explains it."""
    own_accepted = _own_records(pipeline, own_stored)[0]
    total = _minus(pipeline.count("collector_accepted"), own_accepted, "own records")
    accepted = _without_other(total, other, client.records_accepted, _other_blocker(pipeline))
    other_note = accepted.note
    if other_note:
        notes.append(other_note)
    source = "collector receiver accepted"
    if own_accepted.value:
        source += " - its own log records"
        notes.append(
            f"the collector's own log records taken out: {own_accepted.value:,} "
            f"({pipeline.count('collector_own_filtered').text()} dropped by its loop "
            f"breaker, {own_stored:,} stored in Loki as job otelcol-internal)"
        )
    if other_note:
        source += " - other traffic"
    notes.extend(_refused_notes(pipeline))
    if client.records_accepted != accepted.count.value:
        notes.append(f"k6 saw {client.records_accepted:,} acknowledged")
    return accepted, source


def _refused_notes(pipeline: PipelineFigures) -> list[str]:
    """What the collector refused (and how many with its sending queue full)."""
    refused = pipeline.count("collector_refused")
    queue_full = pipeline.count("collector_enqueue_failed").value
    if refused.value:
        full = min(queue_full or 0, refused.value)
        return [
            f"collector refused {refused.value:,}"
            + (f" ({full:,} with its sending queue full)" if full else "")
        ]
    if refused.value is None:
        return [f"collector refused: {refused.text()}"]
    return []


def _collector_exported(
    pipeline: PipelineFigures,
    accepted: Count,
    own_stored: int | None,
    other: OtherTraffic | None,
    stored: int | None,
) -> tuple[Within, list[str]]:
    """The collector's exported count of the run's records and the notes that explain it."""
    own_exported = _own_records(pipeline, own_stored)[1]
    total = _minus(pipeline.count("collector_exported"), own_exported, "own records")
    exported = _without_other(total, other, stored)
    notes: list[str] = []
    if own_exported.value:
        notes.append(f"the collector's {own_exported.value:,} own log records taken out")
    if exported.note:
        notes.append(exported.note)
    if accepted.value is None or accepted.value != exported.count.value:
        failed = pipeline.count("collector_failed")
        notes += [
            f"{failed.text()} failed after retries",
            f"{dropped_after_acceptance(pipeline).text()} dropped (queue full)",
        ]
        if pipeline.queue_size_end:
            notes.append(f"{pipeline.queue_size_end:.0f} batches still queued")
    return exported, notes


def _stored_notes(
    client: ClientFigures, pipeline: PipelineFigures | None, stored: int | None, last: Step
) -> list[str]:
    """What explains the stored count against the step before it (`last`): Loki's discards,
    its restarts, records k6 never saw acknowledged."""
    notes: list[str] = []
    if pipeline is not None:
        discarded = pipeline.count("loki_discarded")
        if discarded.value:
            notes.append(
                f"Loki discarded {discarded.value:,} lines (rate limits; the exporter retries)"
            )
        elif discarded.value is None:
            notes.append(f"Loki discarded: {discarded.text()}")
    loki_restarts = len(pipeline.restarts.get("loki", [])) if pipeline is not None else 0
    lost = _compare(last.count, stored, last.uncertainty)[0]
    if loki_restarts and lost:
        within = f" ± {last.uncertainty:,}" if last.uncertainty else ""
        notes.append(
            f"Loki restarted during the run: {lost:,}{within} records it acknowledged are not "
            "stored (lost around its restart)"
        )
    if stored is not None and stored > client.records_accepted:
        notes.append(
            f"Loki holds {stored - client.records_accepted:,} records k6 never saw "
            "acknowledged (their response was lost, e.g. the collector died after accepting "
            "them)"
        )
    return notes
