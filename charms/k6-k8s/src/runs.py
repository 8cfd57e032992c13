"""A load run on one unit: its record (run.json) and how its outcome is told from what k6 left."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from loadgate_contract.summary import ClientFigures

RUNNING = "running"
PASSED = "passed"
FAILED = "failed"
ERROR = "error"
STOPPED = "stopped"
PENDING = "pending"  # a unit that was asked to run but has not reported yet
MISSING = "missing"  # a unit that had not reported an outcome by the run's deadline
TERMINAL = (PASSED, FAILED, ERROR, STOPPED)

# k6's own test duration may fall a little short of the requested one (timer granularity);
# anything shorter than this means k6 was ended early (SIGTERM from outside, pod eviction...).
EARLY_END_TOLERANCE_S = 1.0


@dataclass
class RunRecord:
    """What a unit ran and, once known, how it ended: `<runs>/<run-id>/run.json`."""

    run_id: str
    params: dict[str, Any]  # RunSpec.to_params(): from_params() rebuilds the spec
    segment: tuple[int, int]  # (index, count)
    instance: str
    started: float
    stopped: bool = False
    status: str | None = None  # set once the outcome is terminal
    finished: float | None = None
    detail: str = ""

    def to_json(self) -> str:
        data = asdict(self)
        data["segment"] = list(self.segment)
        return json.dumps(data, indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> RunRecord:
        data = json.loads(text)
        index, count = data["segment"]
        return cls(
            run_id=str(data["run_id"]),
            params=dict(data["params"]),
            segment=(int(index), int(count)),
            instance=str(data["instance"]),
            started=float(data["started"]),
            stopped=bool(data.get("stopped", False)),
            status=data.get("status"),
            finished=data.get("finished"),
            detail=str(data.get("detail") or ""),
        )


@dataclass(frozen=True)
class Outcome:
    """The state of one unit's run, as get-results and the status report it."""

    run_id: str
    status: str
    figures: ClientFigures | None
    detail: str = ""  # why (an error's k6 log tail, what was stopped)
    record: RunRecord | None = field(default=None, compare=False)


def failed_thresholds(figures: ClientFigures) -> list[str]:
    return sorted(name for name, ok in figures.thresholds.items() if not ok)


def classify(
    service: str,
    *,
    stopped: bool,
    figures: ClientFigures | None,
    duration_s: float,
    summary_problem: str = "",
) -> tuple[str, str]:
    """Status and reason of a run from the k6 service state and the summary k6 wrote.

    `service` is Pebble's view of the k6 service: "active", "inactive" (exited 0 or stopped),
    "error" (exited non-zero: 99 when thresholds failed, other codes for errors) or "unknown"
    (not in the plan: the pod restarted, e.g. `juju refresh`, and the run's record survived on
    the unit's storage). Pebble does not expose the exit code, so the summary tells a threshold
    failure from other errors: k6 writes it at the end of every run that got past init, also
    when aborted by SIGTERM (exit 105, measured with k6 v1.8.1). With the service gone, a
    complete summary without a crossed threshold is a pass (k6 exits 0 then); a short one means
    the restart cut the run.
    """
    if service == "active":
        return RUNNING, ""
    if stopped:
        return STOPPED, "stopped by stop-load; the figures cover the part that ran"
    restarted = " (the pod restarted: Pebble no longer knows the k6 service)"
    gone = restarted if service == "unknown" else ""
    if figures is None:
        return ERROR, f"k6 ended without a summary ({summary_problem or 'none written'}){gone}"
    if figures.duration_s + EARLY_END_TOLERANCE_S < duration_s:
        return ERROR, (
            f"k6 ended after {figures.duration_s:.1f}s of {duration_s:g}s without stop-load "
            f"(killed or aborted){gone}"
        )
    crossed = failed_thresholds(figures)
    if crossed:
        return FAILED, "thresholds crossed: " + ", ".join(crossed)
    if service in ("inactive", "unknown"):
        return PASSED, ""
    return ERROR, f"k6 exited with an error (service {service}) although no threshold failed"
