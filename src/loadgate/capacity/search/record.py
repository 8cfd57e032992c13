"""The search record, `results/<search_id>/search.json`: the plan, each step with the figures
attribution read and its verdict, and where the search ended.

`to_dict`/`from_dict` (and JSON text); `from_dict` checks every field and raises
`fields.RecordError` naming the first bad one. The stack description is an opaque object the
caller provides (sources, commits, workload versions, profile, target). No I/O here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, cast

from loadgate.capacity.search.rule import (
    SATURATION,
    Search,
    SearchPlan,
    SearchResult,
    Step,
    StepOutcome,
    with_older_defaults,
)
from loadgate.judge.attribution import Attribution, BottleneckFigures
from loadgate.judge.soundness import Unsound
from loadgate.records import fields as f

SEARCH_FORMAT = "loadgate-search/1"
SEARCH_FILE = "search.json"


@dataclass(frozen=True)
class SearchStepRecord:
    """One step: what was asked, what it gave, the figures attribution read, its verdict."""

    step: Step
    outcome: StepOutcome
    figures: BottleneckFigures | None = None
    attribution: Attribution | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step.to_dict(),
            "outcome": self.outcome.to_dict(),
            "figures": self.figures.to_dict() if self.figures else None,
            "attribution": self.attribution.to_dict() if self.attribution else None,
        }

    @classmethod
    def from_dict(cls, data: object, where: str = "step") -> SearchStepRecord:
        return f.read(cls, data, where)


@dataclass(frozen=True)
class SearchRecord:
    """search.json. `result.wall_s` sums the steps' wall times; `wall_s` is the whole search's
    (with stack start, settling and everything between steps), when the caller measured it.
    `losses` are the steps whose runs lost acknowledged records (`lost_records` in all): a
    comparison counts a candidate's as a loss, whatever its capacity."""

    FORMAT: ClassVar[str] = SEARCH_FORMAT
    FILE: ClassVar[str] = SEARCH_FILE

    search_id: str
    stack: dict[str, Any]
    plan: SearchPlan
    steps: tuple[SearchStepRecord, ...]
    result: SearchResult
    started_at: float | None = None
    ended_at: float | None = None
    wall_s: float | None = None
    notes: tuple[str, ...] = ()

    @property
    def bottleneck(self) -> Attribution | None:
        """What gave way at the knee: the attribution of the last failed step at the lowest
        failing rate (None when nothing failed or that step has no attribution). A saturation
        step is never it: it was not judged by the search's gates."""
        high = self.result.lowest_failing_per_min
        for record in reversed(self.steps):
            judged = record.step.phase != SATURATION
            if judged and record.step.rate == high and not record.outcome.passed:
                return record.attribution
        return None

    @property
    def losses(self) -> tuple[Unsound, ...]:
        """Each step whose run lost acknowledged records (k6 saw them acknowledged, the store
        does not hold them), in step order, as judge.soundness says of a run: its run id (the
        search's id and the step's index when it has none), how many and where. A step whose
        ledger could not say is not among them: its loss is unknown, not shown."""
        return tuple(
            Unsound(
                s.outcome.run_id or f"{self.search_id} step {s.step.index}",
                s.outcome.lost,
                f"it lost {s.outcome.lost:,} acknowledged records "
                f"({s.step.phase} at {s.step.rate:,}/min)",
            )
            for s in self.steps
            if s.outcome.lost
        )

    @property
    def lost_records(self) -> int:
        """Acknowledged records the search's steps lost, all together (0: none shown)."""
        return sum(s.outcome.lost for s in self.steps)

    @classmethod
    def build(
        cls,
        search_id: str,
        stack: Mapping[str, Any],
        search: Search,
        attributions: Sequence[tuple[BottleneckFigures | None, Attribution | None]] = (),
        *,
        started_at: float | None = None,
        ended_at: float | None = None,
        wall_s: float | None = None,
        notes: Sequence[str] = (),
    ) -> SearchRecord:
        """The record of a search (finished or not), its steps zipped with their figures and
        attributions in step order (steps without one get None)."""
        history = search.history
        if len(attributions) > len(history):
            raise ValueError(f"{len(attributions)} attributions for {len(history)} steps")
        padded = list(attributions) + [(None, None)] * (len(history) - len(attributions))
        steps = tuple(
            SearchStepRecord(step, outcome, figures, attribution)
            for (step, outcome), (figures, attribution) in zip(history, padded, strict=True)
        )
        return cls(
            search_id,
            dict(stack),
            search.plan,
            steps,
            search.result(),
            started_at=started_at,
            ended_at=ended_at,
            wall_s=wall_s,
            notes=tuple(notes),
        )

    def to_dict(self) -> dict[str, Any]:
        bottleneck = self.bottleneck
        return {
            "format": SEARCH_FORMAT,
            "search_id": self.search_id,
            "stack": self.stack,
            "plan": self.plan.to_dict(),
            "result": self.result.to_dict(),
            "bottleneck": bottleneck.to_dict() if bottleneck else None,
            "steps": [s.to_dict() for s in self.steps],
            "started_at": f.real(self.started_at),
            "ended_at": f.real(self.ended_at),
            "wall_s": f.real(self.wall_s),
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, data: object, where: str = "search") -> SearchRecord:
        """The record; its `bottleneck` is derived from the steps, not read. A plan written
        before the saturate method reads as a bisect one."""
        if isinstance(data, Mapping) and "plan" in data:
            record = cast(Mapping[str, Any], data)
            data = {**record, "plan": with_older_defaults(record["plan"])}
        return f.read(cls, data, where)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, allow_nan=False) + "\n"

    @classmethod
    def from_json(cls, text: str) -> SearchRecord:
        return cls.from_dict(f.parse_json(text, "search"))
