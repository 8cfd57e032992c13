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
    lost: int | None  # difference from the previous step (None when either side is unknown)
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Ledger:
    steps: list[Step]

    @property
    def balanced(self) -> bool:
        counts = [s.count for s in self.steps]
        return None not in counts and len(set(counts)) == 1

    @property
    def lost_after_acceptance(self) -> int | None:
        """Records the generator saw accepted (2xx) that are not stored in Loki."""
        accepted = self.steps[1].count if len(self.steps) > 1 else None
        stored = self.steps[-1].count
        if accepted is None or stored is None:
            return None
        return accepted - stored

    def to_dict(self) -> dict[str, Any]:
        return {
            "balanced": self.balanced,
            "lost_after_acceptance": self.lost_after_acceptance,
            "steps": [s.to_dict() for s in self.steps],
        }


def _diff(prev: int | None, cur: int | None) -> int | None:
    return None if prev is None or cur is None else prev - cur


def build(client: ClientFigures, pipeline: PipelineFigures | None, stored: int | None) -> Ledger:
    """Each step of the ledger with the figures that explain a difference."""
    sent = client.records_sent
    accepted_client = client.records_accepted
    steps = [Step("sent", sent, "k6 log_records_sent", None)]
    rejected = sent - accepted_client
    steps.append(
        Step(
            "accepted",
            accepted_client,
            "k6 log_records_accepted (2xx)",
            rejected,
            f"{client.failed} failed requests" if rejected else "",
        )
    )
    if pipeline is None:
        steps.append(Step("stored", stored, "LogQL count in Loki", _diff(accepted_client, stored)))
        return Ledger(steps)

    notes = []
    if pipeline.collector_accepted != accepted_client:
        notes.append(f"collector counted {pipeline.collector_accepted:,} accepted")
    exported = pipeline.collector_exported
    lost_export = accepted_client - exported
    if lost_export:
        parts = [
            f"{pipeline.collector_failed:,} failed after retries",
            f"{pipeline.collector_enqueue_failed:,} dropped (queue full)",
        ]
        if pipeline.queue_size_end:
            parts.append(f"{pipeline.queue_size_end:.0f} batches still queued")
        notes.append(", ".join(parts))
    steps.append(
        Step(
            "exported",
            exported,
            "Prometheus otelcol_exporter_sent_log_records_total",
            lost_export,
            "; ".join(notes),
        )
    )
    note = ""
    if pipeline.loki_discarded:
        note = f"Loki discarded {pipeline.loki_discarded:,} lines (e.g. rate limited, then retried)"
    steps.append(Step("stored", stored, "LogQL count of the run's records", _diff(exported, stored), note))
    return Ledger(steps)
