"""The full record a gate run wrote, for the integration suites' checks beyond GateResult."""

from __future__ import annotations

from loadgate.gate import GateResult
from loadgate.records import result as results
from loadgate.records.result import RunResult


def record(result: GateResult) -> RunResult:
    """The run's result.json, read back."""
    return results.read(result.result_file)
