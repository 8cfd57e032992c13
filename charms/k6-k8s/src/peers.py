"""What the units of the app tell each other over the peer relation `k6-peers`.

- The leader's application databag holds the run request (`run`): the validated parameters,
  the units that take part (their order gives each its execution segment), and whether the run
  was stopped.
- Each unit's databag holds its report (`run`): the run id, its status and its summary figures,
  histogram counts included, so that the leader combines them without averaging percentiles.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from loadgate_contract.spec import RunSpec, parse_duration
from loadgate_contract.summary import ClientFigures, Histogram

KEY = "run"
# A unit that sees a run request later than this (a slow hook queue, a new pod) does not start it.
START_WINDOW_S = 300.0
# Once the last unit could have ended (duration after the start window), how long the units have
# to report their outcome: k6's kill-delay (30 s), its summary, the hook that reports it.
REPORT_GRACE_S = 120.0


def figures_to_data(figures: ClientFigures) -> dict[str, Any]:
    data = figures.to_dict()
    hist = figures.histogram
    data["histogram"] = {
        "base_ms": hist.base_ms,
        "per_octave": hist.per_octave,
        "counts": {str(b): n for b, n in sorted(hist.counts.items())},
    }
    return data


def _optional(data: Mapping[str, Any], key: str) -> int | None:
    """A count only some scenarios report (logql-query's pushed lines, wrong answers)."""
    value = data.get(key)
    return int(value) if value is not None else None


def figures_from_data(data: Mapping[str, Any]) -> ClientFigures:
    hist = data.get("histogram") or {}
    p99 = data.get("p99_ms")
    return ClientFigures(
        requests=int(data["requests"]),
        failed=int(data["failed"]),
        error_rate=float(data["error_rate"]),
        p99_ms=float(p99) if p99 is not None else None,
        records_sent=int(data["records_sent"]),
        records_accepted=int(data["records_accepted"]),
        records_per_minute=float(data["records_per_minute"]),
        duration_s=float(data["duration_s"]),
        dropped_iterations=int(data.get("dropped_iterations", 0)),
        p99_source=str(data.get("p99_source", "k6 summary")),
        instances=int(data.get("instances", 1)),
        thresholds={str(k): bool(v) for k, v in (data.get("thresholds") or {}).items()},
        histogram=Histogram(
            base_ms=float(hist.get("base_ms", 0.05)),
            per_octave=int(hist.get("per_octave", 8)),
            counts={int(b): int(n) for b, n in (hist.get("counts") or {}).items()},
        ),
        lines_sent=_optional(data, "lines_sent"),
        lines_accepted=_optional(data, "lines_accepted"),
        wrong_answers=_optional(data, "wrong_answers"),
    )


@dataclass(frozen=True)
class RunRequest:
    """The leader's request: every listed unit runs its segment of the run."""

    run_id: str
    params: dict[str, Any]
    units: list[str]
    requested: float
    stopped: bool = False

    @property
    def duration_s(self) -> float:
        try:
            return parse_duration(str(self.params.get("duration") or RunSpec.duration))
        except ValueError:
            return parse_duration(RunSpec.duration)

    @property
    def deadline(self) -> float:
        """When every unit of the run must have reported its outcome (epoch seconds).

        After it, a unit that has not is named as missing and the run is no longer running.
        """
        return self.requested + START_WINDOW_S + self.duration_s + REPORT_GRACE_S

    def overdue(self, now: float) -> bool:
        return now > self.deadline

    def to_databag(self) -> dict[str, str]:
        data = {
            "run_id": self.run_id,
            "params": self.params,
            "units": self.units,
            "requested": self.requested,
            "stopped": self.stopped,
        }
        return {KEY: json.dumps(data, sort_keys=True)}

    @classmethod
    def from_databag(cls, bag: Mapping[str, str]) -> RunRequest | None:
        raw = bag.get(KEY)
        if not raw:
            return None
        data = json.loads(raw)
        return cls(
            run_id=str(data["run_id"]),
            params=dict(data["params"]),
            units=[str(u) for u in data["units"]],
            requested=float(data["requested"]),
            stopped=bool(data.get("stopped", False)),
        )


@dataclass(frozen=True)
class UnitReport:
    """One unit's state of one run, with its figures once k6 wrote a summary."""

    run_id: str
    status: str
    figures: ClientFigures | None = None
    detail: str = ""

    def to_databag(self) -> dict[str, str]:
        data: dict[str, Any] = {
            "run_id": self.run_id,
            "status": self.status,
            "figures": figures_to_data(self.figures) if self.figures else None,
            "detail": self.detail[-2000:],  # the tail of an error is enough; databags are small
        }
        return {KEY: json.dumps(data, sort_keys=True)}

    @classmethod
    def from_databag(cls, bag: Mapping[str, str]) -> UnitReport | None:
        raw = bag.get(KEY)
        if not raw:
            return None
        data = json.loads(raw)
        figures = data.get("figures")
        return cls(
            run_id=str(data["run_id"]),
            status=str(data["status"]),
            figures=figures_from_data(figures) if figures else None,
            detail=str(data.get("detail") or ""),
        )
