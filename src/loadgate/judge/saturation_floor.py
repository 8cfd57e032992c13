"""The saturation floor: a gate on the pipeline's saturation throughput, added to a run's gates.

The figure is what the collector accepted per minute over the steady window (the run's records;
measure/saturation.py). A pipeline that never filled its queue took all it was offered, so its
throughput is at least that figure: it passes a floor it reaches, and fails one it does not
(offer more to tell). Without a floor the gate only asks that the figure was measured, and the
row records it. A figure that could not be measured fails the gate, with the reason.
"""

from __future__ import annotations

from dataclasses import replace

from loadgate.contract import gates as gates_mod
from loadgate.contract.gates import Gate
from loadgate.measure.saturation import SaturationFigures
from loadgate.records.result import RunResult

NAME = "saturation_per_minute"


def floor_gate(sat: SaturationFigures | None, floor: float | None) -> Gate:
    """The gate: the saturation throughput at least `floor` records/min (None: measured)."""
    value = sat.accepted_per_min if sat is not None and sat.saturated is not None else None
    if sat is not None and sat.growing:
        value = sat.throughput
    threshold = f">= {gates_mod.format_value(floor, '')}" if floor is not None else "measured"
    if sat is None:
        source = "saturation: not measured (the pipeline's figures could not be read)"
    elif sat.saturated is None or value is None:
        source = f"saturation: unknown ({sat.reason or 'no accepted count over the window'})"
    elif sat.saturated:
        source = "collector accepted per minute over the steady window (queue full)"
    elif sat.growing:
        source = (
            "collector exporter sent on per minute after the warm-up: the queue grew without "
            "filling (the receiver took more than the pipeline sustains)"
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


def with_gate(result: RunResult, gate: Gate) -> RunResult:
    """The result with `gate` among its gates (one of the same name replaced) and its verdict
    judged again."""
    judged = [g for g in result.gates if g.name != gate.name] + [gate]
    return replace(result, gates=judged, verdict=gates_mod.verdict(judged))
