"""Other traffic: log records the collector carried in a run's window that were neither the
run's nor its own (other applications' logs, on a model's shared pipeline), as Loki counts
them. The ledger takes them out of the collector's steps (judge/ledger.py)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class OtherTraffic:
    """Log records the collector carried in the run's window that were not the run's nor its
    own: other applications' logs, counted where they end up (Loki)."""

    records: int | None  # lines Loki holds from the counters' window (None: unknown)
    per_minute: float | None  # records / the window's minutes
    edge_records: int | None  # of those, within EDGE_S of the window's start or end
    window_s: float
    query: str
    edge_s: float = 1.0
    source: str = "Loki LogQL instant query: every stream but the run's and job otelcol-internal"
    # records/min the collector accepted while the baseline / the end waited (Prometheus).
    before_per_minute: float | None = None
    after_per_minute: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
