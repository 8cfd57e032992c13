"""get-results: a run's status, client figures, gates and verdict, as Juju action results.

The `result` key holds the same figures as JSON, with the field names of `loadgate run`'s
result.json (`client`, `gates`, `verdict`), for programs such as the integration suites.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import runs
from loadgate_core.gates import FAIL, Gate, judge, verdict
from loadgate_core.spec import RunSpec
from loadgate_core.summary import ClientFigures
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


def status_message(report: RunReport, running_units: int, all_units: int) -> str:
    """The unit status line for this run."""
    if report.status == runs.RUNNING:
        return f"running {report.run_id} ({running_units}/{all_units} units)"
    suffix = (
        f" ({report.final_status})" if report.final_status in (runs.ERROR, runs.STOPPED) else ""
    )
    return f"last run {report.run_id}: {report.verdict}{suffix}"


def run_report(
    outcome: Outcome,
    unit: str,
    *,
    request: RunRequest | None = None,
    peer_reports: Mapping[str, UnitReport] | None = None,
    present: Collection[str] = (),
) -> RunReport:
    """This unit's run, combined with its peers' reports when they ran it together.

    Without a request for the same run (or with `request=None`), the report covers this unit's
    own segment only, judged against its share of the records-per-minute gate.
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
        combined = combine_reports(outcome.run_id, request.units, reports)
        details = [
            f"{name}: {reports[name].detail}"
            for name in request.units
            if name in reports and reports[name].run_id == outcome.run_id and reports[name].detail
        ]
        if combined.missing:
            details.append("no figures (yet) from " + ", ".join(combined.missing))
        return RunReport(
            outcome.run_id,
            combined.status,
            spec,
            combined.figures,
            combined.units,
            "\n".join(details),
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
    )
