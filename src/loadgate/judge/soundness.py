"""Whether a run's figures count: a run that lost units the generator saw acknowledged, or
whose ledger cannot say whether it did (its stored count unknown), is unsound, and a
saturation, pressure or capacity figure taken from it is unknown for that run, with the reason
(`Unsound`). Units stored that the generator never saw acknowledged are a surplus, not a loss.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from loadgate.contract import typed as f
from loadgate.judge.ledger import Ledger


@dataclass(frozen=True)
class Unsound:
    """A run whose figures do not count: `lost` acknowledged units not stored (None: unknown,
    the ledger cannot be checked) and why, in words."""

    run_id: str
    lost: int | None
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: object, where: str = "unsound") -> Unsound:
        return f.read(cls, data, where)


def unsound(run_id: str, ledger: Ledger) -> Unsound | None:
    """Why the figures of run `run_id` with this ledger do not count (None: they do)."""
    lost = ledger.lost_after_acceptance
    if lost is None:
        stored = ledger.steps[-1]
        why = stored.note or "the stored count is unknown"
        return Unsound(run_id, None, f"its ledger cannot be checked: {stored.name} {why}")
    if lost > 0:
        return Unsound(run_id, lost, f"it lost {lost:,} acknowledged {ledger.unit}")
    return None
