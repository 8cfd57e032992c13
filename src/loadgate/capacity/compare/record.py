"""The comparison record, `results/<compare_id>/compare.json`: both sides, the schedule's runs
with the values they measured, a decision per metric and the rule; the plan (a fixed number of
repeats, or pairs added until settled) and why it stopped; the pressure rate and where it came
from; whether it was an A/A comparison (the same stack on both sides); the least outcome that
fails (`fail_on`); the runs whose figures did not count (each run's `unsound`: it lost
acknowledged records, or its ledger cannot say), and the check they make (`lost_records`): a
candidate run that lost acknowledged records makes the comparison a regression whatever the
metrics say; the baseline's only makes its values unknown.

`to_dict`/`from_dict` (and JSON text); `from_dict` checks every field and raises
`fields.RecordError` naming the first bad one. The sides' descriptions are opaque objects the
caller provides (sources, commits, workload versions, profile, target). No I/O here.

Format 2 (issue 33) is today's rule. A record of format 1 (the previous rule: its 5 % per
metric, guards, exit 2 when too noisy) is read with its decisions, verdict and exit code as
recorded, and written back as it was: `loadgate compare --replay` decides it again.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from loadgate.capacity.compare.rule import (
    BASELINE,
    CANDIDATE,
    CONFIDENCE,
    DEFAULT_FAIL_ON,
    FAIL_ON,
    REGRESSION,
    RULE,
    Metric,
    MetricDecision,
    overall,
    verdict_exit_code,
)
from loadgate.capacity.compare.run_order import ORDERS
from loadgate.capacity.compare.sequential import LAST_LOOK_STOPS, Plan, decide_all
from loadgate.capacity.compare.stack_modes import FRESH, STACK_MODES
from loadgate.judge.soundness import Unsound
from loadgate.records import fields as f

COMPARE_FORMAT = "loadgate-compare/2"
_PREVIOUS_FORMAT = "loadgate-compare/1"  # the rule before issue 33: read as recorded
COMPARE_FILE = "compare.json"


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a short name and the caller's opaque description of it."""

    name: str  # e.g. "otelcol rev 221"
    description: dict[str, Any] = field(default_factory=dict[str, Any])

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description}

    @classmethod
    def from_dict(cls, data: object, where: str = "side") -> Side:
        return f.read(cls, data, where)


@dataclass(frozen=True)
class Pressure:
    """The rate of the pressure runs (p99 and CPU per 1,000 records under pressure): a fraction
    of the first saturation throughput the comparison measured (either side's), set once per
    comparison."""

    fraction: float | None  # of the first saturation throughput (None: a rate was given)
    rate_per_min: int
    saturation_per_min: float | None  # the saturation it was set from (None: given by a flag)
    set_by: str  # the saturation run it was set from, or the flag that gave it

    def to_dict(self) -> dict[str, Any]:
        return {
            "fraction": f.real(self.fraction),
            "rate_per_min": self.rate_per_min,
            "saturation_per_min": f.real(self.saturation_per_min),
            "set_by": self.set_by,
        }

    @classmethod
    def from_dict(cls, data: object, where: str = "pressure") -> Pressure:
        return f.read(cls, data, where)

    @property
    def summary(self) -> str:
        """The rate and where it came from, in a line."""
        if self.fraction is None or self.saturation_per_min is None:
            return f"pressure rate {self.rate_per_min:,}/min (given by {self.set_by})"
        return (
            f"pressure rate {self.rate_per_min:,}/min: {self.fraction:g} x the first "
            f"saturation measured, {self.saturation_per_min:,.0f}/min ({self.set_by})"
        )


@dataclass(frozen=True)
class RepeatRecord:
    """One run of the schedule: its side and repeat, the metric values it measured (None: not
    measured), the search or run behind it, and its runs whose figures did not count."""

    position: int
    side: str = field(metadata=f.one_of((BASELINE, CANDIDATE), f"{BASELINE} or {CANDIDATE}"))
    repeat: int
    values: dict[str, float | None]
    ref: str | None = None  # search_id or run_id (the first of `refs`)
    refs: tuple[str, ...] = ()  # every run and search of this repeat
    # Metric name -> where its value came from, for a metric measured more than one way (the
    # collector's CPU: "kernel" or "prometheus").
    sources: dict[str, str] = field(default_factory=dict[str, str])
    # The runs of this repeat that lost acknowledged records or whose ledger cannot say.
    unsound: tuple[Unsound, ...] = ()
    # What broke in this repeat: its stack did not start, a run failed or failed its gates.
    failures: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "position": self.position,
            "side": self.side,
            "repeat": self.repeat,
            "values": {name: f.real(v) for name, v in self.values.items()},
            "ref": self.ref,
            "refs": list(self.refs),
            "sources": dict(self.sources),
            "unsound": [u.to_dict() for u in self.unsound],
            **({"failures": list(self.failures)} if self.failures else {}),
        }

    @classmethod
    def from_dict(cls, data: object, where: str = "run") -> RepeatRecord:
        return f.read(cls, data, where)


def side_values(runs: Sequence[RepeatRecord], side: str, metric: str) -> list[float | None]:
    """A metric's values on one side, in repeat order (None where a run did not measure it)."""
    chosen = sorted((r for r in runs if r.side == side), key=lambda r: (r.repeat, r.position))
    return [r.values.get(metric) for r in chosen]


@dataclass(frozen=True)
class CompareRecord:
    """compare.json: both sides, the schedule's runs, a decision per metric, the rule."""

    FORMAT: ClassVar[str] = COMPARE_FORMAT
    FORMATS: ClassVar[tuple[str, ...]] = (COMPARE_FORMAT, _PREVIOUS_FORMAT)  # read by from_dict
    FILE: ClassVar[str] = COMPARE_FILE

    compare_id: str
    baseline: Side
    candidate: Side
    repeats: int
    order: str = field(metadata=f.one_of(ORDERS))
    runs: tuple[RepeatRecord, ...]
    decisions: tuple[MetricDecision, ...]
    confidence: float = CONFIDENCE  # that every bound holds together (format 1: each)
    rule: str = RULE
    started_at: float | None = None
    ended_at: float | None = None
    notes: tuple[str, ...] = ()
    plan: Plan | None = None  # None: a fixed number of repeats (records before issue 17)
    stopped: str | None = None  # sequential.STOPS; None: running or cut short
    pressure: Pressure | None = None
    aa: bool = False  # both sides run the same stack (a calibration of the noise)
    fail_on: str = field(default=DEFAULT_FAIL_ON, metadata=f.one_of(FAIL_ON))
    # Where the repeats ran: fresh stacks (and every record before issue 38) or kept ones.
    stacks: str = field(default=FRESH, metadata=f.one_of(STACK_MODES))
    # A record of the previous rule (format 1): its verdict, exit code and text as recorded.
    recorded: Recorded | None = None

    @property
    def candidate_lost(self) -> tuple[Unsound, ...]:
        """The candidate's runs that lost acknowledged records."""
        return tuple(u for r in self.runs if r.side == CANDIDATE for u in r.unsound if u.lost)

    @property
    def lost_records(self) -> str | None:
        """The lost-records check: what the candidate lost, where (None: nothing it lost)."""
        lost = self.candidate_lost
        if not lost:
            return None
        where = "; ".join(f"{u.reason.removeprefix('it ')} in {u.run_id}" for u in lost)
        return f"lost records: the candidate {where}: a regression whatever the metrics say"

    @property
    def broken(self) -> str | None:
        """What broke on the candidate where the baseline measured (None: nothing): the metrics
        it left unknown, by pair, with the failures of its runs in those pairs. Every metric
        compared counts, those reported beside the verdict too: a value left unknown is a run
        that failed, or failed its gates (a candidate that sheds load at the pressure rate
        leaves the pressure metrics unknown), whatever the metric decides."""
        pairs = sorted({p for d in self.decisions for p in d.broken_pairs})
        if not pairs or self.recorded:
            return None
        parts: list[str] = []
        for pair in pairs:
            left = [d.metric.name for d in self.decisions if pair in d.broken_pairs]
            why = [w for r in self.runs if r.side == CANDIDATE and r.repeat == pair
                   for w in r.failures]  # fmt: skip
            text = f"pair {pair}: {', '.join(left)} unknown"
            parts.append(text + (f" ({'; '.join(why)})" if why else ""))
        return (
            "broken candidate: it left metrics the baseline measured unknown: "
            + "; ".join(parts)
            + ": a regression whatever the others say"
        )

    @property
    def verdict(self) -> str:
        if self.recorded:
            return self.recorded.verdict
        if self.candidate_lost or self.broken is not None:
            return REGRESSION
        return overall(self.decisions)

    @property
    def exit_code(self) -> int:
        if self.recorded:
            return self.recorded.exit_code
        return verdict_exit_code(self.verdict, self.fail_on)

    @property
    def plan_summary(self) -> str:
        """How many pairs ran, under which plan, why it stopped, the order; A/A when it was."""
        plan = self.plan
        if plan is None or not plan.sequential:
            text = f"{self.repeats} repeat(s) a side"
        else:
            budget = f", budget {plan.budget_s / 60:g} min" if plan.budget_s else ""
            text = f"{self.repeats} pair(s) of {plan.min_pairs}-{plan.max_pairs}{budget}"
        if self.stopped:
            text += f", stopped: {self.stopped}"
        text += f", order {self.order}, {self.stacks} stacks"
        return text + (", A/A" if self.aa else "")

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
        plan: Plan | None = None,
        stopped: str | None = None,
        pressure: Pressure | None = None,
        aa: bool = False,
        fail_on: str = DEFAULT_FAIL_ON,
        stacks: str = FRESH,
    ) -> CompareRecord:
        """Decide every metric from the runs' values (in repeat order) and record it all:
        under `plan` (`sequential`), or, without one, in one look at all the repeats; the
        comparison's 5 % shared by its metrics either way."""
        if order not in ORDERS:
            raise ValueError(f"order: must be one of {', '.join(ORDERS)}; got {order!r}")
        repeats = max((r.repeat for r in runs), default=0)
        a = {m.name: side_values(runs, BASELINE, m.name) for m in metrics}
        b = {m.name: side_values(runs, CANDIDATE, m.name) for m in metrics}
        decisions = decide_all(
            metrics, a, b, plan or Plan.fixed(max(repeats, 1)), stopped in LAST_LOOK_STOPS
        )
        if plan is None:
            decisions = tuple(replace(d, pairs=repeats) for d in decisions)
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
            plan=plan,
            stopped=stopped,
            pressure=pressure,
            aa=aa,
            fail_on=fail_on,
            stacks=stacks,
        )

    def to_dict(self) -> dict[str, Any]:
        data = self._fields()
        if self.recorded:  # the previous rule's record, written back as that rule wrote it
            data.update(format=_PREVIOUS_FORMAT, verdict=self.verdict, exit_code=self.exit_code)
            del data["fail_on"], data["stacks"]
            was = self.recorded.data.get("plan")
            if isinstance(was, dict) and data["plan"] is not None and "method" in was:
                data["plan"]["method"] = was["method"]
        return data

    def _fields(self) -> dict[str, Any]:
        return {
            "format": COMPARE_FORMAT,
            "compare_id": self.compare_id,
            "baseline": self.baseline.to_dict(),
            "candidate": self.candidate.to_dict(),
            "repeats": self.repeats,
            "order": self.order,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "lost_records": self.lost_records,
            "decisions": [d.to_dict() for d in self.decisions],
            "runs": [r.to_dict() for r in self.runs],
            "confidence": f.real(self.confidence),
            "rule": self.rule,
            "started_at": f.real(self.started_at),
            "ended_at": f.real(self.ended_at),
            "notes": list(self.notes),
            "plan": self.plan.to_dict() if self.plan is not None else None,
            "stopped": self.stopped,
            "pressure": self.pressure.to_dict() if self.pressure is not None else None,
            "aa": self.aa,
            "fail_on": self.fail_on,
            "stacks": self.stacks,
        }

    @classmethod
    def from_dict(cls, data: object, where: str = "compare") -> CompareRecord:
        """The record; `verdict` and `exit_code` are derived from the decisions, and a stored
        value that disagrees is refused. A record of format 1 keeps its recorded ones."""
        d = f.mapping(data, where)
        if d.get("format") == _PREVIOUS_FORMAT:
            record = f.read(cls, {**d, "format": COMPARE_FORMAT}, where)
            was = f.read(Recorded, d, where)
            return replace(record, recorded=replace(was, data=dict(d)))
        record = f.read(cls, data, where)
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
        return cls.from_dict(f.parse_json(text, "compare"))


@dataclass(frozen=True)
class Recorded:
    """A record of the previous rule (format 1): the verdict and exit code it was stored with,
    and its text (the mapping read), written back unchanged."""

    verdict: str
    exit_code: int
    data: dict[str, Any] = field(default_factory=dict[str, Any], compare=False, repr=False)
