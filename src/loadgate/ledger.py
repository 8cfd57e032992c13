"""The loss ledger: sent -> accepted -> exported -> stored, with what explains each difference."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .core.summary import ClientFigures
from .pipeline import PipelineFigures


@dataclass(frozen=True)
class Step:
    name: str
    count: int | None
    source: str
    lost: int | None  # previous step minus this one (None when either is unknown)
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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
        """Records acknowledged to the generator that are not stored in Loki."""
        stored = self.steps[-1].count
        return None if stored is None else self.acknowledged - stored

    def to_dict(self) -> dict[str, Any]:
        return {
            "balanced": self.balanced,
            "acknowledged": self.acknowledged,
            "lost_after_acceptance": self.lost_after_acceptance,
            "steps": [s.to_dict() for s in self.steps],
        }


def _lost(prev: int | None, cur: int | None) -> int | None:
    return None if prev is None or cur is None else prev - cur


def build(client: ClientFigures, pipeline: PipelineFigures | None, stored: int | None) -> Ledger:
    """Each step with the figures that explain a difference from the step before it."""
    sent = client.records_sent
    steps = [Step("sent", sent, "k6 log_records_sent", None)]

    if pipeline is None:
        accepted, source = client.records_accepted, "k6 log_records_accepted (2xx)"
    else:
        accepted, source = pipeline.collector_accepted, "collector receiver accepted"
    notes: list[str] = []
    if client.failed:
        notes.append(f"{client.failed:,} failed requests")
    if pipeline is not None and pipeline.collector_refused:
        notes.append(f"collector refused {pipeline.collector_refused:,}")
    if pipeline is not None and client.records_accepted != accepted:
        notes.append(f"k6 saw {client.records_accepted:,} acknowledged")
    steps.append(Step("accepted", accepted, source, _lost(sent, accepted), "; ".join(notes)))

    last = accepted
    if pipeline is not None:
        exported = pipeline.collector_exported
        note = ""
        if accepted != exported:
            parts = [
                f"{pipeline.collector_failed:,} failed after retries",
                f"{pipeline.collector_enqueue_failed:,} dropped (queue full)",
            ]
            if pipeline.queue_size_end:
                parts.append(f"{pipeline.queue_size_end:.0f} batches still queued")
            note = ", ".join(parts)
        steps.append(
            Step("exported", exported, "collector exporter sent", _lost(accepted, exported), note)
        )
        last = exported

    note = ""
    if pipeline is not None and pipeline.loki_discarded:
        note = (
            f"Loki discarded {pipeline.loki_discarded:,} lines (rate limits; the exporter retries)"
        )
    steps.append(Step("stored", stored, "LogQL count in Loki", _lost(last, stored), note))
    return Ledger(steps, acknowledged=client.records_accepted)
