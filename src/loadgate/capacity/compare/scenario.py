"""What a comparison of a scenario other than otlp-logs may measure, and in which unit. Pure.

- `saturation` is measured of log records through the collector only (measure.saturation: the
  steady window of a full queue, the records stored in Loki), so another scenario cannot
  compare it, nor take its pressure rate from it: its pressure metrics need `--pressure-rate`.
- The CPU metrics are the collector's CPU per 1,000 units: a scenario whose load does not pass
  the collector (loki-push, logql-query) cannot compare them.
- Without `--metrics`, otlp-logs compares its defaults (values.DEFAULT_METRICS), any
  other scenario what it can measure at its fixed rate: p99 and, through the collector, CPU.
- The metrics' units say the scenario's unit where they say records (`spans/min`,
  `CPU s per 1,000 spans`); otlp-logs keeps its records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from loadgate.capacity.compare import rule
from loadgate.capacity.compare import values as cv
from loadgate.contract.scenarios import OTLP_LOGS, Scenario
from loadgate.measure import scenarios as scenario_measures

_CPU_METRICS = (
    rule.CPU_PER_1000.name, rule.PRESSURE_CPU.name, rule.PRESSURE_CPU_PROBE.name,
    rule.PRESSURE_CPU_K6.name, rule.PRESSURE_CPU_LOKI.name,
)  # fmt: skip
_PER_MINUTE = "records/min"
_CPU_UNIT = "CPU s"


def default_metrics(kind: Scenario) -> tuple[str, ...]:
    """`--metrics` keys when none are given: otlp-logs' defaults, or the fixed-rate ones."""
    if kind.name == OTLP_LOGS.name:
        return cv.DEFAULT_METRICS
    measures = scenario_measures.of(kind.name)
    return ("p99", "cpu") if measures.through_collector else ("p99",)


def problems(
    kind: Scenario, metrics: Sequence[rule.Metric], pressure_rate_given: bool
) -> list[tuple[str, str]]:
    """(flag, why) for each metric the scenario cannot be compared on."""
    measures = scenario_measures.of(kind.name)
    names = {m.name for m in metrics}
    found: list[tuple[str, str]] = []
    if not measures.own_logs and rule.SATURATION.name in names:
        found.append(
            (
                "--metrics",
                f"saturation is measured of otlp-logs only, not {kind.name}: compare "
                "p99, cpu, pressure-p99 with --pressure-rate, or capacity",
            )
        )
    pressured = names & set(cv.PRESSURE_METRICS)
    if not measures.own_logs and pressured and not pressure_rate_given:
        found.append(
            (
                "--pressure-rate",
                f"required for pressure metrics of {kind.name}: its pressure rate cannot come "
                f"from a saturation run (measured of otlp-logs only); give {kind.short}/min",
            )
        )
    if not measures.through_collector and names & set(_CPU_METRICS):
        found.append(
            (
                "--metrics",
                "cpu, pressure-cpu, pressure-cpu-probe and pressure-cpu-k6 are the "
                "collector's CPU, and "
                f"{kind.name}'s load does not pass the collector: compare p99, pressure-p99 "
                "or capacity",
            )
        )
    return found


def in_unit(metrics: Sequence[rule.Metric], kind: Scenario) -> tuple[rule.Metric, ...]:
    """The metrics with the scenario's unit where they count units (otlp-logs: unchanged)."""
    if kind.name == OTLP_LOGS.name:
        return tuple(metrics)
    out: list[rule.Metric] = []
    for m in metrics:
        if m.unit == _PER_MINUTE:
            m = replace(m, unit=f"{kind.short}/min")
        elif m.name in _CPU_METRICS and m.unit == _CPU_UNIT:
            m = replace(m, unit=f"{_CPU_UNIT} per 1,000 {kind.short}")
        out.append(m)
    return tuple(out)
