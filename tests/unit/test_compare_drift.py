"""benchmarks/compare_drift.py: the spreads it prints, from recorded comparisons."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from support import benchmark_script

SIDES = ("baseline", "candidate")
DRIFT = benchmark_script.load("compare_drift")


def _record(results: Path, compare_id: str, cpu: list[tuple[str, int, float]]) -> None:
    """A compare.json with runs of CPU values, and a pressure run's series for the first."""
    runs = [
        {
            "position": i,
            "side": side,
            "repeat": repeat,
            "values": {DRIFT.CPU: value, DRIFT.SATURATION: 60_000.0 * (1 + i / 100)},
            "refs": [f"{compare_id}-{side[0]}{repeat}-sat", f"{compare_id}-{side[0]}{repeat}-pr"],
        }
        for i, (side, repeat, value) in enumerate(cpu)
    ]
    (results / compare_id).mkdir(parents=True)
    (results / compare_id / "compare.json").write_text(json.dumps({"runs": runs}))
    # 30 s of load: the collector's CPU per record alternates 0.9 and 1.1 after the first 12 s.
    samples = [(100.0 + t, 1.0 if t < 12 else (0.9 if t % 4 else 1.1)) for t in range(0, 31, 2)]
    series = {
        "load_started": 100.0,
        "load_ended": 130.0,
        "series": {
            "collector_cpu_cores": {"samples": [[t, v] for t, v in samples]},
            "collector_accepted_per_s": {"samples": [[t, 1.0] for t, _ in samples]},
        },
    }
    pressure = results / f"{compare_id}-b1-pr"
    pressure.mkdir()
    (pressure / "series.json").write_text(json.dumps(series))


def test_a_shared_drift_is_run_to_run_spread_not_a_pairs(tmp_path: Path) -> None:
    # Both sides double over the comparison; within each pair the candidate is 10 % higher.
    drift = [1.0, 1.3, 1.6, 2.0]
    cpu = []
    for pair, level in enumerate(drift, start=1):
        cpu += [("baseline", pair, level), ("candidate", pair, level * 1.1)]
    _record(tmp_path, "c1", cpu)
    runs = DRIFT.side_runs(tmp_path, "c1")
    spreads = DRIFT.spreads(runs, DRIFT.CPU)
    assert spreads["pair"] == pytest.approx(0.0, abs=1e-12)
    assert spreads["run_to_run"] == pytest.approx(
        math.sqrt(sum((math.log(v) - sum(map(math.log, drift)) / 4) ** 2 for v in drift) / 3)
    )
    # The first pressure run's series: 0.9 and 1.1 after the first 12 s, the idle start left out.
    assert runs[0].began == 100.0
    assert runs[0].cpu_cv == pytest.approx(0.1 / 1.0 * math.sqrt(10 / 9), rel=0.1)
    assert runs[1].cpu_cv is None  # no series recorded for it


def test_the_pair_spread_pools_within_comparisons(tmp_path: Path) -> None:
    a_runs = [("baseline", 1, 1.0), ("candidate", 1, 1.1), ("baseline", 2, 1.0)]
    a_runs.append(("candidate", 2, 1.0))
    _record(tmp_path, "a", a_runs)
    _record(tmp_path, "b", [(side, pair, 2.0) for pair in (1, 2, 3) for side in SIDES])
    a = DRIFT.spreads(DRIFT.side_runs(tmp_path, "a"), DRIFT.CPU)
    b = DRIFT.spreads(DRIFT.side_runs(tmp_path, "b"), DRIFT.CPU)
    spread, df = DRIFT.pooled_pair_spread([a, b])
    assert df == 3
    # Only "a" spreads: ln 1.1 and 0 have the variance (ln 1.1)^2 / 2 on 1 df, pooled over 3.
    assert spread == pytest.approx(math.sqrt(math.log(1.1) ** 2 / 2 / 3))
    assert DRIFT.main([str(tmp_path / "missing"), "--results", str(tmp_path)]) == 2


def test_the_cpu_in_probe_jobs_is_read_from_the_pressure_runs_record(tmp_path: Path) -> None:
    # The comparison did not compare it: the pressure run's result.json has the CPU per 1,000
    # records (0.2 s) and the probe's median job (2 ms): 100 jobs per 1,000 records.
    _record(tmp_path, "p", [("baseline", 1, 0.2), ("candidate", 1, 0.2)])
    cpu = {"per_1000_records": {"otelcol": 0.2}, "probe_ns_per_job": 2_000_000.0}
    (tmp_path / "p-b1-pr" / "result.json").write_text(json.dumps({"cpu": cpu}))
    first, second = DRIFT.side_runs(tmp_path, "p")
    assert first.cpu_probe == pytest.approx(100.0)
    assert first.value(DRIFT.PROBE) == first.cpu_probe
    assert second.cpu_probe is None  # no record of its run: unknown, not 0


def _stats(diffs: list[float]) -> dict[str, float | None]:
    """A comparison's spreads as `spreads` gives them, from its pairs' log differences."""
    n = len(diffs)
    mean = sum(diffs) / n
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
    return {"run_to_run": None, "pair": sd, "pair_df": float(n - 1), "mean": mean}


def test_a_level_each_comparisons_stacks_hold_is_beyond_the_pairs_spread() -> None:
    # Four A/As whose pairs spread alike (+-2 %: a pair's variance 0.02^2 * 4/3 on 3 df), each
    # shifted as a whole by its stacks' level: -4, 0, +4, 0 %.
    pairs = [0.02, -0.02, 0.02, -0.02]
    levels = [-0.04, 0.0, 0.04, 0.0]
    found = [_stats([p + level for p in pairs]) for level in levels]
    spread, k = DRIFT.stack_level(found)
    of_mean = 0.02**2 * 4 / 3 / 4
    assert k == 4
    assert spread == pytest.approx(math.sqrt(0.04**2 * 2 / 3 - of_mean))
    # The same pairs with no level between comparisons: nothing beyond the pairs (0, not less).
    assert DRIFT.stack_level([_stats(pairs)] * 4)[0] == 0.0
    # Too few comparisons to say: unknown.
    assert DRIFT.stack_level(found[:2]) == (None, 2)
