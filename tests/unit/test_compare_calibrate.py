"""Thresholds and spreads that can be re-derived (issue 33, defect 8; issue 38): the default
thresholds and calibrated paired spreads come from a margins file shipped as package data,
`loadgate calibrate` measures the spreads behind a margins file (a value's, pooled within sides,
and a pair's worsening, pooled within comparisons; from A/A pairs it runs, or from recorded
comparisons) and writes one, the thresholds in force with those spreads, that `compare
--margins-file` takes, and `loadgate compare --replay ID` decides a recorded comparison again
under today's rule, from its runs' result.json (refused when one is missing). Fake stacks and
runs: no processes."""

from __future__ import annotations

import json
import math
import random
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_comparing_pairs import NOP, SatStack, steady

from loadgate import cli, paths
from loadgate.capacity.compare import calibration, margins_file, rule
from loadgate.capacity.compare import replay as replaying
from loadgate.capacity.compare.record import CompareRecord, RepeatRecord
from loadgate.capacity.compare.rule import BASELINE, CANDIDATE

ROOT = Path(__file__).resolve().parents[2]

RECORDED = Path(__file__).parents[1] / "data" / "report" / "saturation"
MARGINS_1127 = Path(__file__).parents[1] / "data" / "margins-2026-11-27.yaml"  # shipped until 38
SAT, P99, CPU = "saturation_per_min", "pressure_p99_ms", "pressure_cpu_s_per_1000_records"
KEYS = {SAT: "saturation", P99: "pressure-p99", CPU: "pressure-cpu"}
MEASURED = "measured by loadgate calibrate"


@pytest.fixture
def results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A results folder holding the recorded comparison compare-sat and its runs."""
    root = tmp_path / "results"
    shutil.copytree(RECORDED, root)
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(root))
    monkeypatch.setenv("LOADGATE_STACK_DIR", str(tmp_path / "stack"))
    return root


def listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def shipped() -> dict[str, Any]:
    return yaml.safe_load((paths.data_dir() / "margins.yaml").read_text())


def words(text: str) -> str:
    return " ".join(text.split())


# ---- the shipped margins file ------------------------------------------------------------------


def test_the_shipped_margins_file_says_where_its_spreads_come_from() -> None:
    data = shipped()
    recorded = [p.name for folder in RECORDS for p in (ROOT / folder).iterdir() if p.is_dir()]
    assert data["status"].startswith(
        f"{MEASURED} from {len(recorded)} comparison(s): kaa10-cost0-1-000258, "
    )
    assert sorted(data["sources"]) == sorted(recorded)  # every one recorded in the repo
    assert data["command"].startswith("loadgate calibrate --from kaa10-cost0-1-000258 --from ")
    assert data["command"].endswith(
        "--metrics saturation,pressure-p99,pressure-cpu-probe,pressure-cpu-loki --margins "
        "saturation=6 --output src/loadgate/data/margins.yaml"
    )
    spreads = {key: (m["spread"], m["df"]) for key, m in data["metrics"].items()}
    assert spreads == SPREADS
    paired = {key: (m["paired_spread"], m["paired_df"]) for key, m in data["metrics"].items()}
    assert paired == PAIRED
    levels = {key: (m["level_spread"], m["level_df"]) for key, m in data["metrics"].items()}
    assert levels == LEVELS
    # The thresholds are practical choices, not chosen from the spreads (issue 38).
    thresholds = {key: m["margin_percent"] for key, m in data["metrics"].items()}
    assert thresholds == {
        "saturation": 6, "pressure-p99": 10, "pressure-cpu-probe": 5, "pressure-cpu-loki": 5,
    }  # fmt: skip


# What `loadgate calibrate` measured from the kept-stack comparisons recorded in the repo.
RECORDS = ("docs/records/2026-11-28-kept", "docs/records/2026-11-29-probe",
           "docs/records/2026-11-29-morning")  # fmt: skip
# pressure-cpu-loki: read again from the pressure runs' result.json (docs/records/cpu-per-loki.tsv).
SPREADS = {"saturation": (0.04905, 172), "pressure-p99": (0.2321, 172),
           "pressure-cpu-probe": (0.0556, 112), "pressure-cpu-loki": (0.01652, 172)}  # fmt: skip
PAIRED = {"saturation": (0.04893, 86), "pressure-p99": (0.29125, 86),
          "pressure-cpu-probe": (0.06856, 56), "pressure-cpu-loki": (0.02349, 86)}  # fmt: skip
LEVELS = {"saturation": (0.02697, 14), "pressure-p99": (0.05997, 14),
          "pressure-cpu-probe": (0.05156, 9), "pressure-cpu-loki": (0.00565, 14)}  # fmt: skip


def test_the_default_margins_are_the_shipped_files(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cli.main(["compare", "--replay", "compare-sat"])
    capsys.readouterr()
    file = shipped()["metrics"]
    replayed = json.loads(capsys_free_replay(results))
    got = {KEYS[d["metric"]["name"]]: d["metric"] for d in replayed["decisions"]}
    assert set(got) == {"saturation", "pressure-p99", "pressure-cpu"}  # as recorded
    for key in ("saturation", "pressure-p99"):  # the file's metrics: its margin and spread
        assert got[key]["margin"] == pytest.approx(file[key]["margin_percent"] / 100)
        assert got[key]["paired_spread"] == pytest.approx(file[key]["paired_spread"])
    # Not in the file: the table's (rule.METRICS).
    assert got["pressure-cpu"]["margin"] == rule.PRESSURE_CPU.margin
    assert got["pressure-cpu"]["paired_spread"] == pytest.approx(rule.PRESSURE_CPU.paired_spread)


def capsys_free_replay(results: Path) -> str:
    """The re-decision of compare-sat, written beside it (`--write`)."""
    assert cli.main(["compare", "--replay", "compare-sat", "--write"]) in (0, 1, 3)
    return (results / "compare-sat" / "compare-replay.json").read_text()


# ---- compare --replay ---------------------------------------------------------------------------


def test_a_replay_prints_the_tables_under_todays_rule_and_writes_nothing(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = listing(results)
    # Under the calibration its arithmetic below was written for (2026-11-27's, fixed here).
    code = cli.main(["compare", "--replay", "compare-sat", "--margins-file", str(MARGINS_1127)])
    out = capsys.readouterr()
    assert listing(results) == before  # nothing written
    text = words(out.out)
    assert "replay of compare-sat under today's rule" in text
    assert "recorded under the previous rule: verdict regression (exit 1)" in text
    # Today's rule settles the saturation at the first look (the recording ran to its budget):
    # the decisions' reasons, in the paired rule's words.
    assert "stopped: decided" in text
    assert (
        "saturation_per_min: at 2 pairs (look 1 of 4, bounds at 99.96%): worsening +15.8 %" in text
    )
    assert "spread of a pair 3.3%, calibrated with its own, 18 df" in text
    assert "reported beside, deciding nothing: pressure_p99_ms" in text
    verdict = text.rsplit("verdict ", 1)[1].split(" ", 1)[0]
    assert verdict in ("regression", "worse", "no-regression", "too-noisy")
    assert code == {"regression": 1, "worse": 0, "no-regression": 0, "too-noisy": 3}[verdict]


def test_a_replay_reads_its_runs_values_again_from_their_result_json(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = results / "compare-sat-c2-sat" / "result.json"
    data = json.loads(path.read_text())
    data["saturation"]["accepted_per_min"] = 150_000.0
    path.write_text(json.dumps(data))
    cli.main(["compare", "--replay", "compare-sat", "--write"])
    capsys.readouterr()
    record = CompareRecord.from_json((results / "compare-sat" / "compare-replay.json").read_text())
    values = [r.values[SAT] for r in record.runs if r.side == CANDIDATE]
    assert values == [201_300.0, 150_000.0]
    assert any("compare-sat-c2-sat" in n and "199,100" in n for n in record.notes)


def test_a_replay_with_metrics_decides_the_recorded_runs_on_todays_metrics(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """compare-sat compared saturation, the p99 and the raw CPU; `--metrics` decides its runs on
    today's default metrics instead, the ones it did not compare read from the runs' records:
    the collector's CPU per Loki CPU of its pressure runs (Loki used 4.1 s in each)."""
    argv = ["compare", "--replay", "compare-sat", "--write", "--metrics",
            "saturation,pressure-p99,pressure-cpu-probe,pressure-cpu-loki"]  # fmt: skip
    assert cli.main(argv) == 1
    capsys.readouterr()
    record = CompareRecord.from_json((results / "compare-sat" / "compare-replay.json").read_text())
    names = [d.metric.name for d in record.decisions]
    assert names == [rule.SATURATION.name, rule.PRESSURE_P99.name,
                     rule.PRESSURE_CPU_PROBE.name, rule.PRESSURE_CPU_LOKI.name]  # fmt: skip
    per_loki = next(d for d in record.decisions if d.metric.name == rule.PRESSURE_CPU_LOKI.name)
    assert per_loki.baseline == pytest.approx((9.138 / 4.1, 8.963 / 4.1))
    assert per_loki.candidate == pytest.approx((10.264 / 4.1, 10.49 / 4.1))
    assert per_loki.metric.gates
    assert cli.main(["compare", "--replay", "compare-sat", "--metrics", "speed"]) == 2
    assert "--metrics: unknown 'speed'" in words(capsys.readouterr().err)


def test_a_replay_with_fail_on_worse_and_margins_decides_as_a_live_compare(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Saturation is 15.7 % lower on the candidate, both sides within 0.5 %: with a 50 % margin
    # the bounds show it worse but not by the margin.
    argv = ["compare", "--replay", "compare-sat", "--margins", "saturation=50,pressure-cpu=50"]
    assert cli.main(argv) == 0
    assert "verdict worse" in words(capsys.readouterr().out)
    assert cli.main([*argv, "--fail-on", "worse"]) == 1
    capsys.readouterr()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--replay", "nope"], "--replay: no recorded comparison nope"),
        (["--replay", "compare-sat", *NOP], "--replay: --baseline"),
        (["--replay", "compare-sat", "--fail-on", "better"], "--fail-on"),
        (["--replay", "compare-sat", "--margins-file", "missing.yaml"], "missing.yaml"),
    ],
)
def test_bad_replays_are_refused_with_exit_2(
    results: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert cli.main(["compare", *argv]) == 2
    out = capsys.readouterr()
    assert message in words(out.err)


# ---- loadgate calibrate -----------------------------------------------------------------------


def pooled(record: dict[str, Any], name: str) -> tuple[float, int]:
    """The spread pooled within sides: sqrt(sum of squared log deviations / sum of (n - 1))."""
    squares, df = 0.0, 0
    for side in (BASELINE, CANDIDATE):
        logs = [math.log(r["values"][name]) for r in record["runs"] if r["side"] == side]
        mean = sum(logs) / len(logs)
        squares += sum((x - mean) ** 2 for x in logs)
        df += len(logs) - 1
    return math.sqrt(squares / df), df


def paired(record: dict[str, Any], name: str) -> tuple[float, int]:
    """The spread of a pair's worsening ln B - ln A about the comparison's own mean."""
    by = {(r["side"], r["repeat"]): math.log(r["values"][name]) for r in record["runs"]}
    diffs = [by[CANDIDATE, k] - by[BASELINE, k] for k in sorted({k for _, k in by})]
    mean = sum(diffs) / len(diffs)
    return math.sqrt(sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1)), len(diffs) - 1


def test_calibrate_reads_a_metric_the_comparison_did_not_compare_from_its_runs_records(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """compare-sat compared no CPU per Loki CPU; its pressure runs' result.json hold the
    collector's and Loki's CPU seconds, so calibrate reads it from them, says so, and pools
    it: the pairs' ln(B/A) of 10.264/4.1 over 9.138/4.1 and 10.49/4.1 over 8.963/4.1."""
    out_file = tmp_path / "margins.yaml"
    argv = ["calibrate", "--from", "compare-sat", "--metrics", "saturation,pressure-cpu-loki",
            "--output", str(out_file)]  # fmt: skip
    assert cli.main(argv) == 0
    text = words(capsys.readouterr().out)
    assert (
        "compare-sat: pressure-cpu-loki not compared there: read again from its runs' records"
        in text
    )
    diffs = [math.log(10.264 / 9.138), math.log(10.49 / 8.963)]
    mean = sum(diffs) / 2
    spread = math.sqrt(sum((d - mean) ** 2 for d in diffs))
    entry = yaml.safe_load(out_file.read_text())["metrics"]["pressure-cpu-loki"]
    assert (entry["paired_spread"], entry["paired_df"]) == (pytest.approx(spread, abs=1e-5), 1)
    assert "sharing its 5 % error: saturation 4.00%, pressure-cpu-loki 1.00%" in text
    # Without the runs' records it cannot: refused, naming the comparison and the metric.
    shutil.rmtree(results / "compare-sat-c2-pr")
    assert cli.main(argv) == cli.EXIT_BAD_INPUT
    err = words(capsys.readouterr().err)
    assert "--from compare-sat: pressure-cpu-loki not compared there:" in err
    assert "compare-sat-c2-pr" in err


def test_calibrate_from_a_recorded_comparison_pools_the_spreads_and_writes_a_margins_file(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "margins.yaml"
    code = cli.main(["calibrate", "--from", "compare-sat", "--output", str(out_file)])
    assert code == 0
    text = words(capsys.readouterr().out)
    recorded = json.loads((results / "compare-sat" / "compare.json").read_text())
    data = yaml.safe_load(out_file.read_text())
    assert data["command"] == f"loadgate calibrate --from compare-sat --output {out_file}"
    assert data["date"]
    assert data["machine"]["cpus"] >= 1
    for name, key in KEYS.items():
        spread, df = pooled(recorded, name)
        pair, pair_df = paired(recorded, name)
        entry = data["metrics"][key]
        assert entry["spread"] == pytest.approx(spread, rel=1e-3)
        assert entry["df"] == df == 2
        low, high = entry["spread_interval"]
        assert low < spread < high  # a chi-square interval on 2 df: wide
        assert entry["paired_spread"] == pytest.approx(pair, abs=1e-5)
        assert entry["paired_df"] == pair_df == 1
        assert f"{key}: a value's spread {spread * 100:.1f} % (90 % interval" in text
        assert f"a pair's worsening {pair * 100:.1f} % (" in text
    # The thresholds in force (the shipped file's), not chosen from these spreads.
    assert {k: m["margin_percent"] for k, m in data["metrics"].items()} == {
        "saturation": 6, "pressure-p99": 10, "pressure-cpu": 5,
    }  # fmt: skip
    assert "threshold 10 % (reported beside the verdict)" in text
    assert "the worsening N pairs call a regression 80 % of the time" in text
    assert "pairs 2 3 4 5 6 7 8 worsening" in text  # saturation and CPU: from 2 pairs
    assert "pairs 3 4 5 6 7 8 worsening" in text  # the p99: from 3 pairs
    assert data["status"] == f"{MEASURED} from 1 comparison(s): compare-sat"


def test_a_spread_too_wide_for_its_threshold_is_starred_and_its_threshold_kept(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """p99s a factor 3 apart within each pair: at every number of pairs shown the bounds are
    too wide for its threshold (*); the file keeps the threshold in force with the spreads."""
    path = results / "compare-sat" / "compare.json"
    recorded = json.loads(path.read_text())
    for i, run in enumerate(recorded["runs"]):  # runs B1 A1 B2 A2: 6 2 2 6
        run["values"][P99] = 2.0 * (3.0 if i in (0, 3) else 1.0)
    path.write_text(json.dumps(recorded))
    out_file = tmp_path / "margins.yaml"
    assert cli.main(["calibrate", "--from", "compare-sat", "--output", str(out_file)]) == 0
    text = words(capsys.readouterr().out)
    row = text.split("pressure-p99: ", 1)[1].split("pressure-cpu: ", 1)[0]
    assert "a pair's worsening 155.4 % (" in row  # sqrt(2) ln 3: no drift shared to cancel
    shown = row.split(" pairs 3 4 5 6 7 8 worsening ", 1)[1]
    assert shown.count("*") == 6  # 3 to 8 pairs: each too noisy at that spread
    entry = yaml.safe_load(out_file.read_text())["metrics"]["pressure-p99"]
    assert entry["margin_percent"] == 10
    assert entry["paired_spread"] == pytest.approx(math.sqrt(2) * math.log(3), abs=1e-5)
    assert entry["paired_df"] == 1


def test_compare_takes_a_margins_file_and_margins_win_per_key(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "margins.yaml"
    assert cli.main(["calibrate", "--from", "compare-sat", "--output", str(out_file)]) == 0
    margins = {k: m["margin_percent"] / 100 for k, m in yaml.safe_load(out_file.read_text())[
        "metrics"].items()}  # fmt: skip
    argv = ["compare", "--replay", "compare-sat", "--write", "--margins-file", str(out_file),
            "--margins", "pressure-cpu=35"]  # fmt: skip
    cli.main(argv)
    capsys.readouterr()
    record = json.loads((results / "compare-sat" / "compare-replay.json").read_text())
    got = {KEYS[d["metric"]["name"]]: d["metric"]["margin"] for d in record["decisions"]}
    assert got == pytest.approx({**margins, "pressure-cpu": 0.35})


def test_calibrate_runs_a_a_pairs_of_one_stack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "results"
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(root))
    monkeypatch.setenv("LOADGATE_STACK_DIR", str(tmp_path / "stack"))
    fake = SatStack({BASELINE: steady(200_000, wobble=0.02), CANDIDATE: steady(200_000)})
    out_file = tmp_path / "m.yaml"
    argv = ["calibrate", "--profile", "hand-nop", "--pairs", "3", "--metrics", "saturation",
            "--compare-id", "cal", "--output", str(out_file)]  # fmt: skip
    assert cli.main(argv, seams=fake.seams()) == 0
    capsys.readouterr()
    record = CompareRecord.from_json((root / "cal" / "compare.json").read_text())
    assert record.aa
    assert record.repeats == 3
    data = yaml.safe_load(out_file.read_text())
    assert data["metrics"]["saturation"]["df"] == 4
    assert data["sources"] == ["cal"]


def test_a_replay_applies_todays_soundness_to_the_recorded_runs(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A candidate run whose result.json shows acknowledged records lost: its values are unknown
    and the replay is a regression whatever the metrics say, stopped at that pair."""
    path = results / "compare-sat-c1-pr" / "result.json"
    data = json.loads(path.read_text())
    data["ledger"]["steps"][-1]["count"] -= 40  # stored: 40 fewer than were acknowledged
    path.write_text(json.dumps(data))
    assert cli.main(["compare", "--replay", "compare-sat", "--write"]) == 1
    assert "lost records: the candidate lost 40" in words(capsys.readouterr().out)
    record = CompareRecord.from_json((results / "compare-sat" / "compare-replay.json").read_text())
    assert record.verdict == "regression"
    assert record.stopped == "decided"
    assert record.repeats == 1
    first = next(r for r in record.runs if r.side == CANDIDATE)
    assert first.values[P99] is None
    assert [u.run_id for u in first.unsound] == ["compare-sat-c1-pr"]


# ---- the paired spread (issue 38) ---------------------------------------------------------------


def drifting(
    r: random.Random, compare_id: str, pairs: int, drift: float, noise: float, worse: float = 0.0
) -> CompareRecord:
    """compare-sat's record with `pairs` pairs of saturations: each pair moved by a drift both
    its runs share (log standard deviation `drift`), each run by its own noise, the candidate
    `worse` lower in logs."""
    template = CompareRecord.from_json((RECORDED / "compare-sat" / "compare.json").read_text())
    runs: list[RepeatRecord] = []
    for k in range(1, pairs + 1):
        shared = r.gauss(0.0, drift)
        a = 200_000.0 * math.exp(shared + r.gauss(0.0, noise))
        b = 200_000.0 * math.exp(shared - worse + r.gauss(0.0, noise))
        runs += [RepeatRecord(2 * k - 2, BASELINE, k, {SAT: a}),
                 RepeatRecord(2 * k - 1, CANDIDATE, k, {SAT: b})]  # fmt: skip
    return replace(template, compare_id=compare_id, runs=tuple(runs), repeats=pairs)


def test_pairing_cancels_a_drift_both_sides_of_a_pair_share() -> None:
    """A drift of 10 % shared within each pair and 1 % noise a run: a value's spread within a
    side is about 10 %, a pair's worsening about sqrt(2) x 1 %; a comparison's constant
    worsening is its own mean, not spread; only complete pairs count."""
    r = random.Random(38)  # noqa: S311 (a simulation)
    records = [
        drifting(r, "d1", 6, 0.10, 0.01),
        drifting(r, "d2", 6, 0.10, 0.01, worse=0.10),
        drifting(r, "d3", 6, 0.10, 0.01),
        drifting(r, "d4", 6, 0.10, 0.01),
    ]
    broken = list(records[3].runs)
    broken[5] = replace(broken[5], values={SAT: None})  # d4's pair 3: no candidate value
    records[3] = replace(records[3], runs=tuple(broken))
    within = calibration.pooled(records, SAT)
    pair = calibration.paired(records, SAT)
    assert within is not None
    assert pair is not None
    assert within.df == 4 * 10 - 1
    assert pair.df == 5 + 5 + 5 + 4  # each comparison's complete pairs less one
    assert within.spread > 0.06
    assert 0.5 * math.sqrt(2) * 0.01 < pair.spread < 1.6 * math.sqrt(2) * 0.01
    assert pair.spread < within.spread / 4
    # No noise of its own: the drift and the constant worsening cancel exactly.
    exact = calibration.paired([drifting(r, "d5", 5, 0.10, 0.0, worse=0.10)], SAT)
    assert exact is not None
    assert exact.df == 4
    assert exact.spread == pytest.approx(0.0, abs=1e-12)
    assert calibration.paired([drifting(r, "d6", 1, 0.10, 0.01)], SAT) is None  # one pair


def test_calibrate_writes_the_paired_spread_and_compare_takes_it(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`loadgate calibrate --output` writes each metric's paired spread and its degrees of
    freedom beside a value's; `margins_file.apply` sets them on the metrics, and a comparison
    with `--margins-file` decides with them."""
    r = random.Random(7)  # noqa: S311 (a simulation)
    drift = drifting(r, "drift", 6, 0.10, 0.01)
    (results / "drift").mkdir()
    (results / "drift" / "compare.json").write_text(drift.to_json())
    out_file = tmp_path / "margins.yaml"
    argv = ["calibrate", "--from", "drift", "--metrics", "saturation", "--output", str(out_file)]
    assert cli.main(argv) == 0
    text = words(capsys.readouterr().out)
    within = calibration.pooled([drift], SAT)
    pair = calibration.paired([drift], SAT)
    assert within is not None
    assert pair is not None
    assert pair.df == 5
    assert pair.spread < within.spread / 3
    assert f"a pair's worsening {pair.spread * 100:.1f} % (" in text
    entry = yaml.safe_load(out_file.read_text())["metrics"]["saturation"]
    assert entry["paired_spread"] == pytest.approx(pair.spread, abs=1e-5)
    assert entry["paired_df"] == 5
    assert entry["spread"] == pytest.approx(within.spread, abs=1e-5)
    assert entry["margin_percent"] == 6  # the threshold in force
    written = margins_file.read(out_file)
    (sat, cpu) = margins_file.apply((rule.SATURATION, rule.PRESSURE_CPU), written)
    assert (sat.paired_spread, sat.paired_df) == (entry["paired_spread"], 5)
    assert (cpu.paired_spread, cpu.paired_df) == (
        rule.PRESSURE_CPU.paired_spread, rule.PRESSURE_CPU.paired_df
    )  # fmt: skip  # not in the file: the table's
    argv = ["compare", "--replay", "compare-sat", "--write", "--margins-file", str(out_file)]
    cli.main(argv)
    capsys.readouterr()
    record = json.loads((results / "compare-sat" / "compare-replay.json").read_text())
    used = {d["metric"]["name"]: d["metric"] for d in record["decisions"]}
    assert (used[SAT]["paired_spread"], used[SAT]["paired_df"]) == (entry["paired_spread"], 5)
    assert "calibrated with its own, 6 df" in next(
        d["reason"] for d in record["decisions"] if d["metric"]["name"] == SAT
    )


# ---- a replay reads every run again (issue 38, item 8) ------------------------------------------


def test_a_replay_of_a_comparison_missing_a_runs_result_json_is_refused(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run's result.json is gone: its recorded values cannot be checked again (soundness,
    gates), so the replay is refused naming it, not decided on the values compare.json holds."""
    (results / "compare-sat-c2-pr" / "result.json").unlink()
    record = replaying.recorded(results, "compare-sat")
    with pytest.raises(replaying.ReplayError, match=r"^compare-sat-c2-pr: no result\.json: "):
        replaying.replay(results, record, replaying.todays_metrics(record))
    before = listing(results)
    assert cli.main(["compare", "--replay", "compare-sat", "--write"]) == 2
    err = words(capsys.readouterr().err)
    assert "--replay: compare-sat-c2-pr: no result.json" in err
    assert listing(results) == before  # nothing written
