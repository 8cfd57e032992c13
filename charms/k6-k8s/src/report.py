"""get-results: a run's status, client figures, gates and verdict, as Juju action results.

The `result` key holds the same figures as JSON, with the field names of `loadgate run`'s
result.json (`client`, `gates`, `verdict`), for programs such as the integration suites.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import runs
from loadgate_contract.gates import FAIL, Gate, judge, verdict
from loadgate_contract.spec import RunSpec
from loadgate_contract.summary import ClientFigures
from peers import RunRequest, UnitReport
from runs import Outcome
from segments import combine_reports


@dataclass(frozen=True)
class RunReport:
    run_id: str
    status: str
    spec: RunSpec
    figures: ClientFigures | None
    units: dict[str, str] = field(default_factory=dict[str, str])
    detail: str = ""
    covers: list[str] = field(default_factory=list[str])  # units whose figures are judged

    @property
    def missing(self) -> list[str]:
        """Units of the run whose figures the verdict lacks."""
        return [u for u in self.units if u not in self.covers]

    @property
    def gates(self) -> list[Gate]:
        return judge(self.spec, self.figures) if self.figures is not None else []

    @property
    def verdict(self) -> str | None:
        """PASS or FAIL once the run is over; None while it runs.

        A stopped run or one that ended in error proved nothing: FAIL, whatever its partial
        figures say (they stay readable in `client` and `gates`).
        """
        if self.status == runs.RUNNING:
            return None
        if self.status in (runs.STOPPED, runs.ERROR) or self.figures is None:
            return FAIL
        return verdict(self.gates)

    @property
    def final_status(self) -> str:
        """With several units, a run whose units passed but whose combined gates fail failed."""
        if self.status == runs.PASSED and self.verdict == FAIL:
            return runs.FAILED
        return self.status

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "status": self.final_status,
            "verdict": self.verdict,
            "labels": dict(self.spec.labels),
            "spec": self.spec.to_params(),
            "client": self.figures.to_dict() if self.figures else None,
            "gates": [g.to_dict() for g in self.gates],
            "units": dict(self.units),
            "covers": list(self.covers),
            "missing": self.missing,
            "detail": self.detail,
        }


def _kebab(name: str) -> str:
    return name.replace("_", "-").replace("/", "-").lower()


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def action_results(report: RunReport) -> dict[str, Any]:
    """Juju action results: keys of lowercase letters, digits and hyphens; values as text."""
    results: dict[str, Any] = {
        "run-id": report.run_id,
        "status": report.final_status,
        "units": {_kebab(u): s for u, s in report.units.items()},
        "covers": _covers(report),
        "result": json.dumps(report.to_dict(), sort_keys=True),
    }
    if report.verdict is not None:
        results["verdict"] = report.verdict
    if report.figures is not None:
        client = report.figures.to_dict()
        client.pop("thresholds", None)
        results["client"] = {_kebab(k): _text(v) for k, v in client.items()}
        results["gates"] = {
            _kebab(g.name): {
                "threshold": g.threshold,
                "value": _text(g.value),
                "passed": _text(g.passed),
                "source": g.source,
            }
            for g in report.gates
        }
    if report.detail:
        key = "stderr-tail" if report.final_status == runs.ERROR else "detail"
        results[key] = report.detail
    return results


def _covers(report: RunReport) -> str:
    """Which units' figures the verdict judges, e.g. `k6/0, k6/1 (2 of 3 units)`."""
    names = ", ".join(report.covers) or "no unit"
    return f"{names} ({len(report.covers)} of {len(report.units)} units)"


def status_message(report: RunReport, running_units: int, all_units: int) -> str:
    """The unit status line for this run."""
    if report.status == runs.RUNNING:
        return f"running {report.run_id} ({running_units}/{all_units} units)"
    notes: list[str] = []
    if report.final_status in (runs.ERROR, runs.STOPPED):
        notes.append(report.final_status)
    silent = [u for u, s in report.units.items() if s == runs.MISSING]
    if silent:
        notes.append("no report from " + ", ".join(silent))
    suffix = f" ({'; '.join(notes)})" if notes else ""
    return f"last run {report.run_id}: {report.verdict}{suffix}"


def run_report(
    outcome: Outcome,
    unit: str,
    *,
    request: RunRequest | None = None,
    peer_reports: Mapping[str, UnitReport] | None = None,
    present: Collection[str] = (),
    now: float | None = None,
) -> RunReport:
    """This unit's run, combined with its peers' reports when they ran it together.

    Without a request for the same run (or with `request=None`), the report covers this unit's
    own segment only, judged against its share of the records-per-minute gate. Past the
    request's deadline, a unit that has not reported its outcome is `missing`: the run is no
    longer running, and the verdict says which units it covers.
    """
    if outcome.record is None:
        raise ValueError(f"run {outcome.run_id} has no record")
    spec = RunSpec.from_params(outcome.record.params)
    own = UnitReport(outcome.run_id, outcome.status, outcome.figures, outcome.detail)
    if request is not None and request.run_id == outcome.run_id and len(request.units) > 1:
        reports = dict(peer_reports or {})
        reports[unit] = own
        for name in request.units:
            if name not in reports and name not in present:
                reports[name] = UnitReport(
                    outcome.run_id, runs.ERROR, None, "the unit left before reporting"
                )
        overdue = request.overdue(time.time() if now is None else now)
        combined = combine_reports(
            outcome.run_id,
            request.units,
            reports,
            overdue=overdue,
            still_running=[unit] if outcome.status == runs.RUNNING else [],
        )
        details = [
            f"{name}: {reports[name].detail}"
            for name in request.units
            if name in reports and reports[name].run_id == outcome.run_id and reports[name].detail
        ]
        silent = [u for u, s in combined.units.items() if s == runs.MISSING]
        if silent:
            deadline = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(request.deadline))
            details.append(
                f"no outcome reported by the deadline ({deadline}) from {', '.join(silent)}; "
                "the verdict covers " + (", ".join(combined.covers) or "no unit")
            )
        without = [u for u in combined.missing if u not in silent]
        if without:
            details.append("no figures (yet) from " + ", ".join(without))
        return RunReport(
            outcome.run_id,
            combined.status,
            spec,
            combined.figures,
            combined.units,
            "\n".join(details),
            combined.covers,
        )
    count = outcome.record.segment[1]
    if count > 1:
        share = math.floor(spec.effective_min_logs_per_minute / count)
        spec = replace(spec, min_logs_per_minute=share)
    return RunReport(
        outcome.run_id,
        outcome.status,
        spec,
        outcome.figures,
        {unit: outcome.status},
        outcome.detail,
        [unit] if outcome.figures is not None else [],
    )
