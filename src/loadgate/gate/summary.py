"""A run's full record (RunResult) summarized as the gate's public GateResult."""

from __future__ import annotations

from pathlib import Path

from loadgate.records.result import RunResult

from .result import GateCheck, GateResult, LedgerStep, Saturation
from .saturation import attribution_of, floor_gate


def summarize(
    result: RunResult,
    path: Path,
    *,
    floor: float | None = None,
    expected: str | None = None,
) -> GateResult:
    """The GateResult of a written run; `expected` (the component under test) marks a
    saturation run, whose figure and floor it adds."""
    limited_by, _ = attribution_of(result)
    ledger = result.ledger
    return GateResult(
        scenario=result.spec.scenario,
        run_id=result.run_id,
        verdict=result.verdict,
        gates=tuple(
            GateCheck(g.name, g.threshold, g.value, g.passed, g.source) for g in result.gates
        ),
        ledger=tuple(LedgerStep(s.name, s.count, s.note) for s in ledger.steps),
        unit=ledger.unit,
        balanced=ledger.balanced,
        lost=ledger.lost_after_acceptance,
        bottleneck=limited_by,
        result_file=path,
        labels=dict(result.spec.labels),
        saturation=_saturation(result, floor, expected) if expected else None,
        problems=tuple(result.problems),
    )


def _saturation(result: RunResult, floor: float | None, expected: str) -> Saturation:
    gate = floor_gate(result.saturation, floor)
    limited_by, _ = attribution_of(result)
    reason = "" if gate.value is not None else gate.source
    return Saturation(gate.value, floor, limited_by, expected, reason)
