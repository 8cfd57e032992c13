"""benchmarks/compare_injected.py: what it reads of a try's runs besides the verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import benchmark_script

INJECTED = benchmark_script.load("compare_injected")


def _run(results: Path, run_id: str, periods: int | None, throttled: int | None) -> None:
    otelcol = {"cpu_limit": "540m", "cpu_periods": periods, "cpu_throttled_periods": throttled}
    (results / run_id).mkdir(parents=True)
    result = {"resources": {"services": {"otelcol": otelcol}}}
    (results / run_id / "result.json").write_text(json.dumps(result))


def test_throttled_shares_are_each_sides_range_over_its_saturation_runs(tmp_path: Path) -> None:
    _run(tmp_path, "q-b1-sat", 400, 4)
    _run(tmp_path, "q-b2-sat", 400, 0)
    _run(tmp_path, "q-c1-sat", 400, 120)
    _run(tmp_path, "q-c2-sat", 380, 38)
    _run(tmp_path, "q-c1-pr", 400, 400)  # a pressure run: not read
    runs = [
        {"side": side, "refs": [f"q-{side[0]}{n}-sat", f"q-{side[0]}{n}-pr"]}
        for side in ("baseline", "candidate")
        for n in (1, 2)
    ]
    text = INJECTED.throttled_text({"runs": runs}, tmp_path)
    assert text == "; collector throttled in baseline 0%-1%, candidate 10%-30% of CPU periods"


def test_no_throttling_counters_say_nothing_rather_than_zero(tmp_path: Path) -> None:
    _run(tmp_path, "q-b1-sat", None, None)  # no cgroup counters (no quota group)
    runs = [{"side": "baseline", "refs": ["q-b1-sat", "q-b1-pr"]},
            {"side": "candidate", "refs": ["q-c1-sat", "q-c1-pr"]}]  # fmt: skip
    assert INJECTED.throttled_text({"runs": runs}, tmp_path) == ""


def test_a_decision_without_bounds_or_means_reads_unknown_not_a_crash() -> None:
    decision = {"metric": {"name": "saturation_per_min"}, "decision": "too-noisy",
                "change": 0.05, "lower": None, "upper": None,
                "baseline_mean": 60000.0, "candidate_mean": None}  # fmt: skip
    record = {"verdict": "too-noisy", "repeats": 2, "decisions": [decision]}
    verdict, pairs, text = INJECTED._summary(record)
    assert (verdict, pairs) == ("too-noisy", 2)
    expected = "saturation_per_min too-noisy +5.0 % (unknown .. unknown), means 6e+04 -> unknown"
    assert text == expected


def test_the_steal_knob_runs_the_default_compare_against_a_stolen_candidate(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert INJECTED.main(["--knob", "steal", "--steals", "0,10", "--tries", "1", "--dry-run"]) == 0
    aa, steal = capsys.readouterr().out.splitlines()
    assert aa.endswith("--baseline otelcol=rev221 --candidate otelcol=rev221")
    assert "--compare-id inj-steal10-1 " in steal
    assert steal.endswith("--candidate otelcol=rev221 hand=cpu-steal=10")


def test_a_steal_out_of_range_is_refused_naming_the_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        INJECTED.main(["--knob", "steal", "--steals", "95", "--dry-run"])
    assert "--steals: each from 0 to 90" in capsys.readouterr().err


def test_the_workers_throttling_is_read_beside_the_collectors(tmp_path: Path) -> None:
    worker = {"cpu_limit": "100m", "cpu_periods": 1000, "cpu_throttled_periods": 940}
    (tmp_path / "s-c1-sat").mkdir()
    result = {"resources": {"services": {"cpu-steal": worker}}}
    (tmp_path / "s-c1-sat" / "result.json").write_text(json.dumps(result))
    runs = [{"side": "candidate", "refs": ["s-c1-sat", "s-c1-pr"]}]
    assert INJECTED.throttled_text({"runs": runs}, tmp_path) == ""
    text = INJECTED.throttled_text({"runs": runs}, tmp_path, "cpu-steal")
    assert text == "; cpu-steal throttled in candidate 94% of CPU periods"
