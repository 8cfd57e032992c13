"""Judge a run: each gate with its threshold, the measured value and PASS/FAIL."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .spec import RunSpec
from .summary import ClientFigures

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
    """The gates of a run. `lost_records` (accepted by the generator but not stored) adds the
    delivery gate when the pipeline side was measured."""
    gates = [
        _gate("error_rate", "<=", spec.max_error_rate, client.error_rate, "%", "k6 errors rate"),
        _gate("p99_ms", "<", spec.p99_ms, client.p99_ms, "ms", f"{client.p99_source}"),
    ]
    min_lpm = spec.effective_min_logs_per_minute
    if min_lpm > 0:
        gates.append(
            _gate(
                "logs_per_minute",
                ">=",
                min_lpm,
                client.records_per_minute,
                "",
                "k6 log_records_accepted per minute",
            )
        )
    if lost_records is not None:
        gates.append(
            _gate("lost_records", "<=", 0, lost_records, "", "k6 accepted - LogQL count in Loki")
        )
    return gates


def verdict(gates: list[Gate]) -> str:
    return PASS if gates and all(g.passed for g in gates) else FAIL
