"""Judge a run: each gate with its threshold, the measured value and PASS/FAIL."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .spec import RunSpec
from .summary import ClientFigures
from .typed import read

PASS = "PASS"  # noqa: S105 (a verdict, not a password)
FAIL = "FAIL"


@dataclass(frozen=True)
class Gate:
    name: str
    threshold: str  # human-readable comparison, e.g. "< 100 ms"
    value: float | None  # None when it could not be measured: the gate fails
    passed: bool
    source: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: object, where: str = "gate") -> Gate:
        return read(cls, data, where)


def _gate(name: str, op: str, limit: float, value: float | None, unit: str, source: str) -> Gate:
    if value is None:
        passed = False
    elif op == "<":
        passed = value < limit
    elif op == "<=":
        passed = value <= limit
    elif op == ">=":
        passed = value >= limit
    else:
        raise ValueError(f"unknown comparison {op!r}")
    return Gate(name, f"{op} {format_value(limit, unit)}", value, passed, source)


def format_value(value: float, unit: str) -> str:
    """A figure with its unit: `1%`, `100 ms`, `57000`."""
    if unit == "%":
        return f"{value * 100:.4g}%"
    if unit:
        return f"{value:.4g} {unit}"
    return f"{value:,.0f}" if value == int(value) else f"{value:,.1f}"


def judge(spec: RunSpec, client: ClientFigures, lost_records: int | None = None) -> list[Gate]:
    """The gates of a run. `lost_records` (units accepted by the generator but not stored)
    adds the delivery gate when the pipeline side was measured. The per-minute and delivery
    gates are named for the scenario's unit (contract/scenarios.py): `logs_per_minute` and
    `lost_records` for otlp-logs, `points_per_minute` and `lost_points` for otlp-metrics, …; a
    scenario that checks its answers (logql-query) adds its gate on wrong ones, and its
    delivery gate counts what it pushed (`lost_lines`)."""
    kind = spec.kind
    p99_source = f"{client.p99_source} ({kind.duration_metric})"
    gates = [
        _gate("error_rate", "<=", spec.max_error_rate, client.error_rate, "%", "k6 errors rate"),
        _gate("p99_ms", "<", spec.p99_ms, client.p99_ms, "ms", p99_source),
    ]
    min_lpm = spec.effective_min_logs_per_minute
    if min_lpm > 0:
        gates.append(
            _gate(
                kind.per_minute_gate,
                ">=",
                min_lpm,
                client.records_per_minute,
                "",
                f"k6 {kind.accepted_metric} per minute",
            )
        )
    if kind.wrong_gate:
        source = f"k6 {kind.wrong_metric}: counts off what the query's VU had pushed by then"
        gates.append(_gate(kind.wrong_gate, "<=", 0, client.wrong_answers, "", source))
    if lost_records is not None:
        gates.append(lost_gate(spec, lost_records))
    return gates


def lost_gate(spec: RunSpec, lost: int | None) -> Gate:
    """The delivery gate: units k6 saw acknowledged that the store does not hold (<= 0);
    unknown (so failed) when the store could not count them."""
    kind = spec.kind
    source = f"k6 accepted - {kind.store}"
    if lost is None:
        return Gate(kind.lost_gate, "<= 0", None, False, f"{source}: unknown")
    return _gate(kind.lost_gate, "<=", 0, lost, "", source)


def verdict(gates: list[Gate]) -> str:
    return PASS if gates and all(g.passed for g in gates) else FAIL
