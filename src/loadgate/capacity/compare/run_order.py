"""The order of a comparison's runs: its pairs interleaved, in the order `--order` asks for
(each pair's, the first's too, drawn from the comparison's id by default)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from .rule import BASELINE, CANDIDATE

ORDERS = ("random", "ABAB", "ABBA")
DEFAULT_ORDER = "random"


@dataclass(frozen=True)
class ScheduledRun:
    position: int  # order of the run, from 0
    side: str  # BASELINE or CANDIDATE
    repeat: int  # from 1

    def to_dict(self) -> dict[str, Any]:
        return {"position": self.position, "side": self.side, "repeat": self.repeat}


def schedule(repeats: int, order: str = "ABAB", seed: str = "") -> list[ScheduledRun]:
    """The runs of a comparison, interleaved: A B A B ... ("ABAB"); with the pair's order
    swapped every other pair, A B B A A B ... ("ABBA"), which also cancels a linear drift; or
    ("random") each pair in an order drawn from `seed` (the comparison's id: the same id, the
    same schedule), the first too: a side that always ran first would carry whatever the first
    run of a comparison carries (the pressure rate comes from the first saturation measured,
    whichever side's). Random order is what keeps a machine whose speed drifts in a rhythm near
    a pair's length from slowing one side in every pair: an A/A comparison with ABAB on the
    development VM was called a regression when its slow stretches fell on the candidate's
    slot in all 4 pairs."""
    if not 1 <= repeats <= 100:
        raise ValueError(f"repeats: must be an integer between 1 and 100; got {repeats!r}")
    if order not in ORDERS:
        raise ValueError(f"order: must be one of {', '.join(ORDERS)}; got {order!r}")
    runs: list[ScheduledRun] = []
    for i in range(repeats):
        pair = (BASELINE, CANDIDATE)
        if (order == "ABBA" and i % 2 == 1) or (order == "random" and _swapped(seed, i)):
            pair = (CANDIDATE, BASELINE)
        for side in pair:
            runs.append(ScheduledRun(len(runs), side, i + 1))
    return runs


def _swapped(seed: str, pair_index: int) -> bool:
    """Whether pair `pair_index` (0-based) runs the candidate first: one bit of a hash of the
    seed and the pair (stable across processes, unlike hash())."""
    digest = hashlib.sha256(f"{seed}/{pair_index}".encode()).digest()
    return bool(digest[0] & 1)
