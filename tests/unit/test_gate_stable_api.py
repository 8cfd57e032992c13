"""The gate's stable API, as docs/charm-ci.md documents it: what `loadgate.gate` exports, what
LoadGate offers, and the fields of what it returns. A change here is a change of the API a
charm repository's tests rely on: it fails this test first, on purpose."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import loadgate.gate as gate
from loadgate.gate import GateCheck, GateResult, LedgerStep, LoadGate, Saturation

DOC = Path(__file__).resolve().parents[2] / "docs" / "charm-ci.md"


def test_the_exported_names() -> None:
    assert sorted(gate.__all__) == [
        "FAIL", "GateCheck", "GateError", "GateResult", "LedgerStep", "LoadGate", "PASS",
        "Saturation",
    ]  # fmt: skip


def test_what_loadgate_offers() -> None:
    public = {n for n, _ in inspect.getmembers(LoadGate) if not n.startswith("_")}
    assert public == {"charm_under_test", "deploy", "model", "run", "saturation", "scenarios"}
    assert list(inspect.signature(LoadGate.run).parameters) == ["self", "scenario"]
    assert inspect.signature(LoadGate.run).parameters["scenario"].default is None


def fields(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def test_the_result_fields() -> None:
    assert fields(GateResult) == [
        "scenario", "run_id", "verdict", "gates", "ledger", "unit", "balanced", "lost",
        "bottleneck", "result_file", "labels", "saturation", "problems",
    ]  # fmt: skip
    assert fields(GateCheck) == ["name", "threshold", "measured", "passed", "source"]
    assert fields(LedgerStep) == ["name", "count", "note"]
    assert fields(Saturation) == ["per_minute", "floor", "limited_by", "expected", "reason"]
    assert {"passed", "failed_gates", "explain"} <= set(dir(GateResult))


def test_the_docs_name_every_part_of_the_api() -> None:
    text = DOC.read_text()
    for name in [*gate.__all__, "loadgate_scenario", "explain()", "failed_gates", "result_file"]:
        assert name in text, f"docs/charm-ci.md does not name {name}"
