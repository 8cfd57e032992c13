"""The shapes of `results/<search_id>/search.json` and `results/<compare_id>/compare.json`.

Dataclasses with `to_dict`/`from_dict` (and JSON text helpers); `from_dict` checks every field
and raises `fields.RecordError` naming the first bad one. The stack and side descriptions are
opaque objects the caller provides (sources, commits, workload versions, profile, target).
Writing the files is the caller's: these functions do no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from loadgate.capacity.compare_rule import (
    BASELINE,
    CANDIDATE,
    CONFIDENCE,
    ORDERS,
    RULE,
    Metric,
    MetricDecision,
    decide,
    exit_code,
    overall,
)
from loadgate.capacity.search_rule import Search, SearchPlan, SearchResult, Step, StepOutcome
from loadgate.judge.attribution import Attribution, BottleneckFigures
from loadgate.records import fields as f

SEARCH_FORMAT = "loadgate-search/1"
COMPARE_FORMAT = "loadgate-compare/1"
SEARCH_FILE = "search.json"
COMPARE_FILE = "compare.json"


def _format(d: Mapping[str, Any], expected: str, where: str) -> None:
    got = d.get("format")
    if got != expected:
        raise f.RecordError(f"{where}.format: expected {expected!r}, got {got!r}")


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
        d = f.mapping(data, where)
        figures, attribution = d.get("figures"), d.get("attribution")
        return cls(
            step=Step.from_dict(d.get("step"), f"{where}.step"),
            outcome=StepOutcome.from_dict(d.get("outcome"), f"{where}.outcome"),
            figures=(
                BottleneckFigures.from_dict(figures, f"{where}.figures")
                if figures is not None
                else None
            ),
            attribution=(
                Attribution.from_dict(attribution, f"{where}.attribution")
                if attribution is not None
                else None
            ),
        )


@dataclass(frozen=True)
class SearchRecord:
    """search.json. `result.wall_s` sums the steps' wall times; `wall_s` is the whole search's
    (with stack start, settling and everything between steps), when the caller measured it."""

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
        failing rate (None when nothing failed or that step has no attribution)."""
        high = self.result.lowest_failing_per_min
        for record in reversed(self.steps):
            if record.step.rate == high and not record.outcome.passed:
                return record.attribution
        return None

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
        d = f.mapping(data, where)
        _format(d, SEARCH_FORMAT, where)
        return cls(
            search_id=f.text(d, "search_id", where),
            stack=f.obj(d, "stack", where),
            plan=SearchPlan.from_dict(d.get("plan"), f"{where}.plan"),
            steps=tuple(f.items(d, "steps", where, SearchStepRecord.from_dict)),
            result=SearchResult.from_dict(d.get("result"), f"{where}.result"),
            started_at=f.opt_number(d, "started_at", where),
            ended_at=f.opt_number(d, "ended_at", where),
            wall_s=f.opt_number(d, "wall_s", where),
            notes=tuple(f.strings(d, "notes", where)),
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, allow_nan=False) + "\n"

    @classmethod
    def from_json(cls, text: str) -> SearchRecord:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise f.RecordError(f"search: not JSON: {exc}") from None
        return cls.from_dict(data)


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a short name and the caller's opaque description of it."""

    name: str  # e.g. "otelcol rev 221"
    description: dict[str, Any] = field(default_factory=dict[str, Any])

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description}

    @classmethod
    def from_dict(cls, data: object, where: str = "side") -> Side:
        d = f.mapping(data, where)
        return cls(name=f.text(d, "name", where), description=f.obj(d, "description", where))


@dataclass(frozen=True)
class RepeatRecord:
    """One run of the schedule: its side and repeat, the metric values it measured (None: not
    measured), and the search or run behind it."""

    position: int
    side: str  # BASELINE or CANDIDATE
    repeat: int
    values: dict[str, float | None]
    ref: str | None = None  # search_id or run_id

    def to_dict(self) -> dict[str, Any]:
        return {
            "position": self.position,
            "side": self.side,
            "repeat": self.repeat,
            "values": {name: f.real(v) for name, v in self.values.items()},
            "ref": self.ref,
        }

    @classmethod
    def from_dict(cls, data: object, where: str = "run") -> RepeatRecord:
        d = f.mapping(data, where)
        side = f.text(d, "side", where)
        if side not in (BASELINE, CANDIDATE):
            raise f.RecordError(f"{where}.side: must be {BASELINE} or {CANDIDATE}; got {side!r}")
        raw = f.obj(d, "values", where)
        values = {name: f.opt_number(raw, name, f"{where}.values") for name in raw}
        return cls(
            position=f.integer(d, "position", where),
            side=side,
            repeat=f.integer(d, "repeat", where),
            values=values,
            ref=f.opt_text(d, "ref", where),
        )


def side_values(runs: Sequence[RepeatRecord], side: str, metric: str) -> list[float | None]:
    """A metric's values on one side, in repeat order (None where a run did not measure it)."""
    chosen = sorted((r for r in runs if r.side == side), key=lambda r: (r.repeat, r.position))
    return [r.values.get(metric) for r in chosen]


@dataclass(frozen=True)
class CompareRecord:
    """compare.json: both sides, the schedule's runs, a decision per metric, the rule."""

    compare_id: str
    baseline: Side
    candidate: Side
    repeats: int
    order: str
    runs: tuple[RepeatRecord, ...]
    decisions: tuple[MetricDecision, ...]
    confidence: float = CONFIDENCE
    rule: str = RULE
    started_at: float | None = None
    ended_at: float | None = None
    notes: tuple[str, ...] = ()

    @property
    def verdict(self) -> str:
        return overall(self.decisions)

    @property
    def exit_code(self) -> int:
        return exit_code(self.decisions)

    @classmethod
    def build(
        cls,
        compare_id: str,
        baseline: Side,
        candidate: Side,
        runs: Sequence[RepeatRecord],
        metrics: Sequence[Metric],
        order: str = "ABAB",
        *,
        confidence: float = CONFIDENCE,
        started_at: float | None = None,
        ended_at: float | None = None,
        notes: Sequence[str] = (),
    ) -> CompareRecord:
        """Decide every metric from the runs' values (in repeat order) and record it all."""
        if order not in ORDERS:
            raise ValueError(f"order: must be one of {', '.join(ORDERS)}; got {order!r}")
        repeats = max((r.repeat for r in runs), default=0)
        decisions = tuple(
            decide(
                metric,
                side_values(runs, BASELINE, metric.name),
                side_values(runs, CANDIDATE, metric.name),
                confidence,
            )
            for metric in metrics
        )
        return cls(
            compare_id,
            baseline,
            candidate,
            repeats,
            order,
            tuple(runs),
            decisions,
            confidence=confidence,
            started_at=started_at,
            ended_at=ended_at,
            notes=tuple(notes),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": COMPARE_FORMAT,
            "compare_id": self.compare_id,
            "baseline": self.baseline.to_dict(),
            "candidate": self.candidate.to_dict(),
            "repeats": self.repeats,
            "order": self.order,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "decisions": [d.to_dict() for d in self.decisions],
            "runs": [r.to_dict() for r in self.runs],
            "confidence": f.real(self.confidence),
            "rule": self.rule,
            "started_at": f.real(self.started_at),
            "ended_at": f.real(self.ended_at),
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, data: object, where: str = "compare") -> CompareRecord:
        """The record; `verdict` and `exit_code` are derived from the decisions, and a stored
        value that disagrees is refused."""
        d = f.mapping(data, where)
        _format(d, COMPARE_FORMAT, where)
        order = f.text(d, "order", where)
        if order not in ORDERS:
            raise f.RecordError(f"{where}.order: must be one of {', '.join(ORDERS)}; got {order!r}")
        record = cls(
            compare_id=f.text(d, "compare_id", where),
            baseline=Side.from_dict(d.get("baseline"), f"{where}.baseline"),
            candidate=Side.from_dict(d.get("candidate"), f"{where}.candidate"),
            repeats=f.integer(d, "repeats", where),
            order=order,
            runs=tuple(f.items(d, "runs", where, RepeatRecord.from_dict)),
            decisions=tuple(f.items(d, "decisions", where, MetricDecision.from_dict)),
            confidence=f.number(d, "confidence", where),
            rule=f.text(d, "rule", where),
            started_at=f.opt_number(d, "started_at", where),
            ended_at=f.opt_number(d, "ended_at", where),
            notes=tuple(f.strings(d, "notes", where)),
        )
        for key, derived in (("verdict", record.verdict), ("exit_code", record.exit_code)):
            if key in d and d[key] != derived:
                raise f.RecordError(
                    f"{where}.{key}: {d[key]!r} disagrees with the decisions ({derived!r})"
                )
        return record

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, allow_nan=False) + "\n"

    @classmethod
    def from_json(cls, text: str) -> CompareRecord:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise f.RecordError(f"compare: not JSON: {exc}") from None
        return cls.from_dict(data)
