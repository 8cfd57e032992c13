"""Regenerate the report's fixture records under tests/data/report/results (run by hand:
`.venv/bin/python tests/data/report/regenerate.py`).

- result.json: three real local runs (/work/results-show*, 2026-11-22), trimmed to what the
  report reads (the render details of `environment` dropped), copied as they were otherwise;
  one of them, renamed, stands for a search's first step (rate 100,000).
- series.json: a RunSeries of one of those runs with CPU, RSS and queue samples shaped like a
  60 s local run, its accepted-rate series recorded as missing.
- search.json / compare.json: made with the real record classes (SearchRecord, CompareRecord)
  from a simulated pipeline with a knee at 200,000 records/min, and five repeats a side.
"""

from __future__ import annotations

import json
import math
import shutil
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from loadgate.capacity.compare.record import CompareRecord, RepeatRecord, Side
from loadgate.capacity.compare.rule import (
    BASELINE,
    CANDIDATE,
    CPU_PER_1000,
    P99_AT_RATE,
    capacity_metric,
)
from loadgate.capacity.search.record import SearchRecord
from loadgate.capacity.search.rule import BISECT, SearchPlan, Step, StepOutcome, run_search
from loadgate.judge.attribution import BottleneckFigures, attribute
from loadgate.measure import timeseries as ts
from loadgate.measure.pipeline import Scope

HERE = Path(__file__).parent
OUT = HERE / "results"
SOURCES = {
    "20261122T225748Z-107dd9": Path("/work/results-show"),  # rev160 PASS
    "20261122T225612Z-087f56": Path("/work/results-show"),  # rev221 FAIL
    "20261122T231132Z-31c416": Path("/work/results-show2"),  # rev221 PASS
}
STEP_RUN = "20261123T000000Z-step00"


def trimmed(doc: dict[str, Any]) -> dict[str, Any]:
    env = doc.get("environment") or {}
    charms = env.get("charms") or {}
    doc["environment"] = {
        "profile": env.get("profile"),
        "versions": env.get("versions"),
        "charms": {
            "preset": charms.get("preset"),
            "otelcol": charms.get("otelcol"),
            "loki": charms.get("loki"),
        },
    }
    return doc


def write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")


def knee_outcome(step: Step, run_ids: dict[int, str]) -> StepOutcome:
    """A pipeline whose p99 climbs towards a knee at 200,000 records/min and fails above it."""
    knee = 200_000
    load = step.rate / knee
    passed = step.rate <= knee
    p99 = 20 + 60 * load**4 if passed else 150 + 400 * (load - 1)
    errors = 0.0 if passed else min(0.5, 0.05 * (load - 1) * 10)
    return StepOutcome(
        rate=step.rate,
        passed=passed,
        accepted_per_min=step.rate * (1 - errors),
        p99_ms=round(p99, 2),
        error_rate=round(errors, 4),
        queue_max=1000.0 if not passed else 200.0 * load,
        collector_cpu_cores=round(min(2.0, 1.6 * load), 3),
        loki_discarded=0,
        verdict="PASS" if passed else "FAIL: p99_ms, error_rate",
        run_id=run_ids.get(step.index),
        wall_s=step.duration_s + 8.0,
    )


def main() -> int:
    if OUT.exists():
        shutil.rmtree(OUT)
    for run_id, root in SOURCES.items():
        doc = json.loads((root / run_id / "result.json").read_text())
        write(OUT / run_id / "result.json", trimmed(doc))
    # The search's first step, as a run (rate 100,000).
    step = trimmed(
        json.loads(
            (Path("/work/results-show2") / "20261122T231132Z-31c416" / "result.json").read_text()
        )
    )
    step["run_id"] = STEP_RUN
    step["spec"]["rate"] = 100_000
    step["spec"]["run_id"] = STEP_RUN
    step["started_at"] += 3600
    step["ended_at"] += 3600
    write(OUT / STEP_RUN / "result.json", step)

    # series.json of the rev221 PASS run: 2 s steps from 10 s before the load to the drain.
    run = json.loads((OUT / "20261122T231132Z-31c416" / "result.json").read_text())
    t0, t1 = run["started_at"], run["ended_at"]
    times = [t0 - 10 + 2 * i for i in range(int((t1 + 12 - (t0 - 10)) / 2))]

    def shape(t: float, low: float, high: float) -> float:
        inside = t0 <= t <= t1
        return round(low + (high - low) * (1 - math.exp(-(t - t0) / 8)) if inside else low, 3)

    scope_queries = ts.queries(Scope())
    series = ts.RunSeries(
        run_id=run["run_id"],
        start=t0 - 10,
        end=t1 + 12,
        step_s=2.0,
        load_started=t0,
        load_ended=t1,
        series={
            ts.CPU: ts.TimeSeries(
                ts.CPU,
                scope_queries[ts.CPU],
                "cores",
                tuple((t, shape(t, 0.01, 0.42)) for t in times),
            ),
            ts.RSS: ts.TimeSeries(
                ts.RSS,
                scope_queries[ts.RSS],
                "MiB",
                tuple((t, shape(t, 70.0, 118.0)) for t in times),
            ),
            ts.QUEUE: ts.TimeSeries(
                ts.QUEUE,
                scope_queries[ts.QUEUE],
                "records",
                tuple((t, shape(t, 0.0, 300.0)) for t in times),
            ),
            ts.ACCEPTED: ts.TimeSeries(
                ts.ACCEPTED,
                scope_queries[ts.ACCEPTED],
                "records/s",
                missing="Prometheus has no data for it in the window",
            ),
        },
    )
    write(OUT / run["run_id"] / ts.SERIES_FILE, series.to_dict())

    # A search of rev221 whose first step is STEP_RUN, and one of rev160 known by its stack.
    for search_id, knee_scale, stack, ids in (
        ("search-rev221", 1.0, {"target": "local", "profile": "charm-default"}, {0: STEP_RUN}),
        (
            "search-rev160",
            1.25,
            {
                "target": "local",
                "scenario": "otlp-logs constant-arrival-rate",
                "charms": {"otelcol": {"source": {"revisions": [160]}, "options": {}}},
            },
            {},
        ),
    ):
        pairs: list[tuple[BottleneckFigures, Any]] = []

        def execute(
            step: Step,
            scale: float = knee_scale,
            ids: dict[int, str] = ids,
            pairs: list[tuple[BottleneckFigures, Any]] = pairs,
        ) -> StepOutcome:
            scaled = Step(
                step.index, round(step.rate / scale), step.duration_s, step.phase, step.attempt
            )
            out = knee_outcome(scaled, ids)
            out = replace(
                out, rate=step.rate, accepted_per_min=step.rate * (1 - (out.error_rate or 0))
            )
            figures = BottleneckFigures(
                offered_per_min=float(step.rate),
                accepted_per_min=out.accepted_per_min,
                duration_s=float(step.duration_s),
                error_rate=out.error_rate,
                p99_ms=out.p99_ms,
                failed_gates=() if out.passed else ("p99_ms", "error_rate"),
                machine_cores=2.0,
                queue_max=out.queue_max,
                queue_capacity=1000.0,
                collector_refused=0 if out.passed else 500,
                collector_enqueue_failed=0,
                collector_send_failed=0,
                collector_cpu_max=out.collector_cpu_cores,
                loki_received=int(step.rate * step.duration_s / 60),
                loki_discarded=0,
            )
            pairs.append((figures, attribute(figures)))
            return out

        search = run_search(SearchPlan(method=BISECT), execute)
        record = SearchRecord.build(
            search_id, stack, search, pairs, started_at=run["started_at"] + 7200, wall_s=260.0
        )
        write(OUT / search_id / "search.json", record.to_dict())

    # A comparison: queue 1000 (baseline) against queue 5000, five repeats a side (ABAB).
    base = [203_000, 198_000, 205_000, 200_000, 201_000]
    cand = [229_000, 224_000, 232_000, 226_000, 230_000]
    p99 = ([41.2, 39.8, 43.0, 40.5, 42.1], [55.5, 52.9, 57.0, 54.1, 56.3])
    cpu = ([0.39, 0.40, 0.38, 0.41, 0.39], [0.43, 0.44, 0.42, 0.45, 0.43])
    runs: list[RepeatRecord] = []
    for i in range(5):
        for side, k in ((BASELINE, 0), (CANDIDATE, 1)):
            values: dict[str, float | None] = {
                "capacity_per_min": float((base, cand)[k][i]),
                "p99_ms": p99[k][i],
                "cpu_s_per_1000_records": cpu[k][i],
            }
            runs.append(RepeatRecord(len(runs), side, i + 1, values, ref=f"run-{side}-{i + 1}"))
    metrics = (capacity_metric(0.05), P99_AT_RATE, CPU_PER_1000)
    record = CompareRecord.build(
        "compare-queue",
        Side("rev221 queue_size=1000", {"source": "rev221", "options": {"queue_size": 1000}}),
        Side("rev221 queue_size=5000", {"source": "rev221", "options": {"queue_size": 5000}}),
        runs,
        metrics,
        started_at=run["started_at"] + 9000,
    )
    write(OUT / "compare-queue" / "compare.json", record.to_dict())
    return 0


if __name__ == "__main__":
    sys.exit(main())
