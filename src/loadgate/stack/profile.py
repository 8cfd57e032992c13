"""Collector and Loki settings a run can vary: the 'profile' of the pipeline under test."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

Exporter = Literal["loki", "nop", "debug"]
_EXPORTERS: tuple[str, ...] = ("loki", "nop", "debug")


@dataclass(frozen=True)
class Profile:
    """What the otelcol charm's config exposes, plus Loki's limits.

    Defaults are the charms' defaults: queue_size 1000 with file_storage, retries for 5 minutes,
    no processors, Loki ingestion 4 MB/s with 15 MB burst.
    """

    name: str = "charm-default"
    exporter: Exporter = "loki"
    queue_size: int = 1000
    sending_queue: bool = True
    queue_storage: bool = True
    retry_max_elapsed: str = "5m"
    # The charm's `processors` option: processor name -> settings (None for defaults).
    processors: dict[str, dict[str, Any] | None] = field(default_factory=dict[str, Any])
    loki_ingestion_rate_mb: float = 4
    loki_ingestion_burst_size_mb: float = 15

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


PROFILES: dict[str, Profile] = {
    "charm-default": Profile(),
    "batch": Profile(
        name="batch",
        processors={
            "batch": {"timeout": "5s", "send_batch_size": 1024, "send_batch_max_size": 2048}
        },
    ),
    "memory-limiter": Profile(
        name="memory-limiter",
        processors={
            "memory_limiter": {"check_interval": "1s", "limit_mib": 1000, "spike_limit_mib": 200}
        },
    ),
    "batch-memory-limiter": Profile(
        name="batch-memory-limiter",
        processors={
            "memory_limiter": {"check_interval": "1s", "limit_mib": 1000, "spike_limit_mib": 200},
            "batch": {"timeout": "5s", "send_batch_size": 1024, "send_batch_max_size": 2048},
        },
    ),
    "queue-5000": Profile(name="queue-5000", queue_size=5000),
    "nop": Profile(name="nop", exporter="nop"),
}


def get(name: str, queue_size: int | None = None) -> Profile:
    """A named profile, optionally with another queue size. Unknown names are refused."""
    if name not in PROFILES:
        allowed = ", ".join(sorted(PROFILES))
        raise ValueError(f"profile: unknown profile {name!r}; allowed: {allowed}")
    prof = PROFILES[name]
    if queue_size is not None:
        if queue_size < 1:
            raise ValueError(f"queue-size: must be a positive integer, got {queue_size}")
        prof = replace(prof, queue_size=queue_size)
    return prof
