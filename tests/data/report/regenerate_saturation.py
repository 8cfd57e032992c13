"""Regenerate the saturation fixtures under tests/data/report/saturation (run by hand:
`PYTHONPATH=src .venv/bin/python tests/data/report/regenerate_saturation.py`).

Made with the real record classes (RunResult, SaturationFigures, CpuFigures, CompareRecord), so
each result.json is shaped exactly as records/result.py writes it (with `saturation`, `cpu` and
`load_window` blocks), and compare.json as a sequential `loadgate compare` writes it:

- compare-sat: rev160 (baseline) against rev221 (candidate), the default metrics, 2 pairs (a
  10-minute budget spent).
  Each side and pair has a saturation run (`-sat`, 300,000/min offered, queue full) and a
  pressure run (`-pr`, at 0.7 x the first baseline saturation); rev221 saturates about 16 %
  lower (a regression), its p99 and CPU per 1,000 records under pressure are higher.
- sat-rev221-solo: one `loadgate run --saturate` of rev221 outside any comparison.

The revisions and scenario match the searches of tests/data/report/results (rev160 at 238,000,
rev221 at 200,000), so a report of both folders shows saturation beside capacity.
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from loadgate.capacity.compare.record import CompareRecord, Pressure, RepeatRecord, Side
from loadgate.capacity.compare.rule import (
    BASELINE,
    CANDIDATE,
    PRESSURE_CPU,
    PRESSURE_P99,
    SATURATION,
)
from loadgate.capacity.compare.sequential import BUDGET_SPENT, Plan
from loadgate.contract.spec import RunSpec
from loadgate.measure.cpu import CpuFigures
from loadgate.measure.saturation import SATURATE_PARAMS, SaturationFigures
from loadgate.records.result import RunResult

HERE = Path(__file__).parent
OUT = HERE / "saturation"
sys.path.insert(0, str(HERE.parents[1]))  # tests/: its support/runresults.py
from support.runresults import pipeline, run_result  # noqa: E402

T0 = 1_795_000_000.0  # 2026-11-18, after the runs of tests/data/report/results
SATURATION_PER_MIN = {"160": [238_400.0, 236_900.0], "221": [201_300.0, 199_100.0]}
PRESSURE_P99_MS = {"160": [14.1, 13.8], "221": [19.6, 20.2]}
CPU_PER_1000 = {"160": [0.1052, 0.1031], "221": [0.1187, 0.1214]}
FRACTION = 0.7


def cpu_block(records: int, per_1000: float, window_s: float) -> CpuFigures:
    marginal = per_1000 * records / 1000
    idle = 0.012
    return CpuFigures(
        window_s=window_s,
        idle_s=6.0,
        records=records,
        idle_cores={"otelcol": idle, "loki": 0.02, "k6": None},
        used_s={"otelcol": round(marginal + idle * window_s, 3), "loki": 4.1, "k6": 9.8},
        marginal_s={"otelcol": round(marginal, 3), "loki": 3.5, "k6": None},
        per_1000_records={"otelcol": per_1000, "loki": round(3.5 / records * 1000, 6), "k6": None},
        busy_elsewhere_cores=0.04,
        quiet=True,
        unknown={"k6": "not running while idle (started for the load): no idle rate to take out"},
    )


def saturated(
    offered: float, accepted: float, start: float, full: bool = True
) -> SaturationFigures:
    """A run's saturation block: its queue full from 5 s in (`full`), or never (the window after
    the first fifth of the load, all that was offered taken)."""
    return SaturationFigures(
        offered_per_min=offered,
        saturated=full,
        window_start=start + (9.0 if full else 6.0),
        window_end=start + 29.0,
        window_s=20.0 if full else 23.0,
        fill_s=5.0 if full else None,
        accepted_per_min=accepted,
        exported_per_min=accepted * 0.998,
        stored_per_min=accepted * 0.997,
        refused_per_min=max(0.0, offered - accepted),
        queue_capacity=1000.0,
    )


def a_run(spec: RunSpec, start: float, ratio: float, p99: float, per_1000: float) -> RunResult:
    """A 30 s run of `spec` accepting `ratio` of what it offered, timed from `start`."""
    offered = spec.offered_logs_per_minute or spec.rate
    accepted = round(offered * spec.duration_s / 60 * ratio)
    result = run_result(
        spec, accepted_ratio=ratio, p99_ms=p99, error_rate=round(1 - ratio, 4),
        pipe=pipeline(accepted=accepted, collector_cpu_mean=0.9, queue_size_max=1000.0
                      if ratio < 1 else 40.0),
    )  # fmt: skip
    window = {
        "first_request": start,
        "last_request": start + 30.0,
        "k6_started": start - 0.4,
        "k6_start_s": 0.4,
        "source": "k6's REST API polled every 0.1 s at the edges",
    }
    return replace(
        result,
        started_at=start,
        ended_at=start + 30.0,
        cpu=cpu_block(accepted, per_1000, 30.0),
        load_window=window,
    )


def spec_of(run_id: str, labels: dict[str, str], **params: Any) -> RunSpec:
    return RunSpec.from_params(
        {"duration": "30s", "run-id": run_id, "labels": labels, **params}, loopback_only=True
    )


def write(result: RunResult) -> None:
    path = OUT / result.run_id / "result.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result.to_dict(), indent=1) + "\n")


def comparison() -> None:
    runs: list[RepeatRecord] = []
    pressure: Pressure | None = None
    start = T0
    for pair in range(2):
        for side, revision in ((BASELINE, "160"), (CANDIDATE, "221")):
            run_id = f"compare-sat-{side[0]}{pair + 1}"
            labels = {"revision": revision, "compare": "compare-sat", "side": side,
                      "repeat": str(pair + 1)}  # fmt: skip
            sat = SATURATION_PER_MIN[revision][pair]
            sat_spec = spec_of(f"{run_id}-sat", labels, **SATURATE_PARAMS)
            offered = float(sat_spec.offered_logs_per_minute or sat_spec.rate)
            sat_run = a_run(sat_spec, start, sat / offered, 160.0, 0.11)
            write(replace(sat_run, saturation=saturated(offered, sat, start)))
            if pressure is None:
                pressure = Pressure(FRACTION, round(sat * FRACTION), sat, f"{run_id}-sat")
            pr_spec = spec_of(f"{run_id}-pr", labels, rate=pressure.rate_per_min, vus=300)
            p99, cpu = PRESSURE_P99_MS[revision][pair], CPU_PER_1000[revision][pair]
            rate = float(pressure.rate_per_min)
            pr_run = a_run(pr_spec, start + 60.0, 1.0, p99, cpu)
            write(replace(pr_run, saturation=saturated(rate, rate, start + 60.0, full=False)))
            values: dict[str, float | None] = {
                SATURATION.name: sat, PRESSURE_P99.name: p99, PRESSURE_CPU.name: cpu,
            }  # fmt: skip
            refs = (f"{run_id}-sat", f"{run_id}-pr")
            runs.append(RepeatRecord(len(runs), side, pair + 1, values, refs[0], refs,
                                     {PRESSURE_CPU.name: "kernel"}))  # fmt: skip
            start += 150.0
    record = CompareRecord.build(
        "compare-sat",
        Side("otelcol rev160", {"settings": "otelcol=rev160", "kind": "charms"}),
        Side("otelcol rev221", {"settings": "otelcol=rev221", "kind": "charms"}),
        runs,
        (SATURATION, PRESSURE_P99, PRESSURE_CPU),
        started_at=T0 - 5.0,
        ended_at=start,
        plan=Plan(2, 5, budget_s=600.0),
        stopped=BUDGET_SPENT,
        pressure=pressure,
    )
    path = OUT / "compare-sat" / "compare.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(record.to_json())


def main() -> int:
    if OUT.exists():
        shutil.rmtree(OUT)
    comparison()
    solo = spec_of("sat-rev221-solo", {"revision": "221"}, **SATURATE_PARAMS)
    start = T0 + 3600.0
    accepted = 202_600.0
    run = a_run(solo, start, accepted / 300_000, 170.0, 0.12)
    write(replace(run, saturation=saturated(300_000.0, accepted, start)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
