"""The saturation gate's judgement: the saturation throughput against its floor, and the check
that the saturation run measured the charm under test.

The figure is what the collector accepted per minute over the steady window (the run's records;
measure/saturation.py). A pipeline that never filled its queue took all it was offered, so its
throughput is at least that figure: it passes a floor it reaches, and fails one it does not
(offer more to tell). Without a floor the gate only asks that the figure was measured, and the
row records it. A figure that could not be measured fails the gate, with the reason.

A saturation figure says something about the charm under test only if that charm gave way first.
For an otelcol revision, Loki throttling the run (its ingestion limit) would make the gate pass
every collector regression: so `measured_component` fails, as "measured the wrong component",
when the run's bottleneck attribution names anything but the component under test (the collector
for otelcol, Loki for loki), or cannot say. "none" (nothing gave way: the pipeline took all it was
offered) passes it: the floor gate then judges a lower bound.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from loadgate.contract import gates as gates_mod
from loadgate.contract.gates import Gate
from loadgate.judge.bottleneck import NONE, UNKNOWN
from loadgate.measure.saturation import GROWING, REFUSING, SATURATED, SaturationFigures
from loadgate.measure.saturation import UNKNOWN as UNKNOWN_STATE
from loadgate.records.result import RunResult

NAME = "saturation_per_minute"
COMPONENT_GATE = "measured_component"


def floor_gate(sat: SaturationFigures | None, floor: float | None) -> Gate:
    """The gate: the saturation throughput at least `floor` records/min (None: measured)."""
    reading = sat.reading if sat is not None else None
    value = reading.per_min if reading is not None else None
    threshold = f">= {gates_mod.format_value(floor, '')}" if floor is not None else "measured"
    if sat is None or reading is None:
        source = "saturation: not measured (the pipeline's figures could not be read)"
    elif reading.state == UNKNOWN_STATE or value is None:
        source = f"saturation: unknown ({sat.reason or 'no accepted count over the window'})"
    elif reading.state == SATURATED:
        source = "collector accepted per minute over the steady window (queue full)"
    elif reading.state == GROWING:
        source = (
            "collector exporter sent on per minute after the warm-up: the queue grew without "
            "filling (the receiver took more than the pipeline sustains)"
        )
    elif reading.state == REFUSING:
        source = (
            "collector accepted per minute after the warm-up: the queue never filled, but its "
            "receiver refused the rest of what was offered (a limit before the queue)"
        )
    else:
        source = (
            "collector accepted per minute after the warm-up: the queue never filled, so the "
            "pipeline takes at least this"
        )
    if floor is None:
        source += "; no floor set"
    passed = value is not None and (floor is None or value >= floor)
    return Gate(NAME, threshold, value, passed, source)


def attribution_of(result: RunResult) -> tuple[str, str]:
    """(what gave way first, its summary) from the run's bottleneck attribution."""
    block: Mapping[str, Any] = (result.bottleneck or {}).get("attribution") or {}
    verdict = str(block.get("verdict") or UNKNOWN)
    summary = str(block.get("summary") or "no attribution recorded")
    return verdict, summary


def _component_gate(result: RunResult, expected: str) -> Gate:
    """1 when `expected` (the component under test) gave way first, or nothing did; 0 when
    another component did; unknown (failed) when attribution cannot say."""
    verdict, summary = attribution_of(result)
    threshold = f"= 1 ({expected} gives way first)"
    if verdict == expected:
        return Gate(COMPONENT_GATE, threshold, 1.0, True, f"what gave way first: {summary}")
    if verdict == NONE:
        note = f"nothing gave way ({summary}): the saturation figure is a lower bound"
        return Gate(COMPONENT_GATE, threshold, 1.0, True, note)
    value = None if verdict == UNKNOWN else 0.0
    return Gate(
        COMPONENT_GATE,
        threshold,
        value,
        False,
        f"measured the wrong component: {summary}; not the {expected} under test",
    )


def with_gates(result: RunResult, *added: Gate) -> RunResult:
    """The result with `added` among its gates (those of the same names replaced) and its
    verdict judged again."""
    names = {g.name for g in added}
    judged = [g for g in result.gates if g.name not in names] + list(added)
    return replace(result, gates=judged, verdict=gates_mod.verdict(judged))


def judge(result: RunResult, floor: float | None, expected: str) -> RunResult:
    """The saturation run judged: its floor and the component it measured, as two more gates."""
    return with_gates(
        result, floor_gate(result.saturation, floor), _component_gate(result, expected)
    )
