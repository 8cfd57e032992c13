"""What a gate run returns to a charm repository's test: a small typed summary of the run.

Part of the gate's stable API (`loadgate.gate`): built from the run's full record (the
`result.json` it wrote, whose path it carries), it keeps what a test asserts on and prints: the
verdict, each gate with its threshold and measured value, the loss ledger and, for the
saturation gate, the saturation throughput and what gave way first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

PASS = "PASS"  # noqa: S105 (a verdict, not a password)
FAIL = "FAIL"


@dataclass(frozen=True)
class GateCheck:
    """One gate: `measured` against `threshold`; `measured` is None when it could not be
    measured (the gate then fails), `source` says where the figure came from."""

    name: str
    threshold: str
    measured: float | None
    passed: bool
    source: str

    def line(self) -> str:
        shown = "unknown" if self.measured is None else f"{self.measured:,.6g}"
        verdict = PASS if self.passed else FAIL
        return f"{verdict} {self.name}: measured {shown} against {self.threshold} ({self.source})"


@dataclass(frozen=True)
class LedgerStep:
    """A step of the loss ledger (sent, accepted, exported, stored), in the scenario's unit;
    `count` is None when it could not be counted."""

    name: str
    count: int | None
    note: str = ""

    def text(self) -> str:
        shown = "unknown" if self.count is None else f"{self.count:,}"
        return f"{self.name}={shown}" + (f" ({self.note})" if self.note else "")


@dataclass(frozen=True)
class Saturation:
    """The saturation gate's figure: the run's records the collector took per minute over the
    steady window (None: not measured, with `reason`), the floor it had to reach (None: no
    floor), and what gave way first (the bottleneck attribution's verdict)."""

    per_minute: float | None
    floor: float | None
    limited_by: str
    expected: str  # the component under test, which must be what gave way first
    reason: str = ""


@dataclass(frozen=True)
class GateResult:
    """The outcome of one gate run on the model."""

    scenario: str
    run_id: str
    verdict: str  # PASS or FAIL
    gates: tuple[GateCheck, ...]
    ledger: tuple[LedgerStep, ...]
    unit: str  # what the ledger counts (log records, data points, lines, spans)
    balanced: bool  # every ledger step counted the same
    lost: int | None  # units acknowledged to k6 and not stored (None: not counted)
    bottleneck: str  # what gave way first: collector, loki, generator, none, unknown, ...
    result_file: Path
    labels: Mapping[str, str] = field(default_factory=dict[str, str])
    saturation: Saturation | None = None
    problems: tuple[str, ...] = ()  # figures the run could not read

    @property
    def passed(self) -> bool:
        return self.verdict == PASS

    @property
    def failed_gates(self) -> tuple[GateCheck, ...]:
        return tuple(g for g in self.gates if not g.passed)

    def explain(self) -> str:
        """Several lines for an assertion message: the verdict, every gate, the ledger."""
        lines = [f"{self.scenario} gate {self.verdict} (run {self.run_id}, {self.result_file})"]
        lines += [f"  {g.line()}" for g in self.gates]
        steps = ", ".join(s.text() for s in self.ledger)
        lines.append(f"  ledger ({self.unit}): {steps}; lost after acceptance: {self._lost()}")
        lines.append(f"  what gave way first: {self.bottleneck}")
        lines += [f"  problem: {p}" for p in self.problems]
        return "\n".join(lines)

    def _lost(self) -> str:
        return "unknown" if self.lost is None else f"{self.lost:,}"
