"""Margins that can be re-derived (issue 33, defect 8): the default margins come from a margins
file shipped as package data, `loadgate calibrate` measures the spreads behind a margins file
(from A/A pairs it runs, or from recorded comparisons) and writes one that `compare
--margins-file` takes, and `loadgate compare --replay ID` decides a recorded comparison again
under today's rule, from its runs' result.json. Fake stacks and runs: no processes."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_comparing_pairs import NOP, SatStack, steady

from loadgate import cli, paths
from loadgate.capacity.compare.record import CompareRecord
from loadgate.capacity.compare.rule import BASELINE, CANDIDATE

RECORDED = Path(__file__).parents[1] / "data" / "report" / "saturation"
SAT, P99, CPU = "saturation_per_min", "pressure_p99_ms", "pressure_cpu_s_per_1000_records"
KEYS = {SAT: "saturation", P99: "pressure-p99", CPU: "pressure-cpu"}
CARRIED = "carried over from the previous constants, not yet re-measured by loadgate calibrate"


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
    assert CARRIED in data["status"]
    spreads = {key: (m["spread"], m["df"]) for key, m in data["metrics"].items()}
    assert spreads == {
        "saturation": (0.0294, 38), "pressure-p99": (0.1558, 38), "pressure-cpu": (0.0316, 38),
    }  # fmt: skip


def test_the_default_margins_are_the_shipped_files(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cli.main(["compare", "--replay", "compare-sat"])
    capsys.readouterr()
    margins = {key: m["margin_percent"] / 100 for key, m in shipped()["metrics"].items()}
    replayed = json.loads(capsys_free_replay(results))
    assert {KEYS[d["metric"]["name"]]: d["metric"]["margin"] for d in replayed["decisions"]} == (
        pytest.approx(margins)
    )


def capsys_free_replay(results: Path) -> str:
    """The re-decision of compare-sat, written beside it (`--write`)."""
    assert cli.main(["compare", "--replay", "compare-sat", "--write"]) in (0, 1, 3)
    return (results / "compare-sat" / "compare-replay.json").read_text()


# ---- compare --replay ---------------------------------------------------------------------------


def test_a_replay_prints_the_tables_under_todays_rule_and_writes_nothing(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = listing(results)
    code = cli.main(["compare", "--replay", "compare-sat"])
    out = capsys.readouterr()
    assert listing(results) == before  # nothing written
    text = words(out.out)
    assert "replay of compare-sat under today's rule" in text
    assert "recorded under the previous rule: verdict regression (exit 1)" in text
    assert "saturation_per_min: after 2 pairs (the last look" in text  # the decisions' reasons
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
        entry = data["metrics"][key]
        assert entry["spread"] == pytest.approx(spread, rel=1e-3)
        assert entry["df"] == df == 2
        low, high = entry["spread_interval"]
        assert low < spread < high  # a chi-square interval on 2 df: wide
        assert entry["margin_percent"] > 0
        assert f"{spread * 100:.1f} %" in text
    assert "pairs 3 4 5 6 7 8" in text  # the margins N pairs can bound
    assert CARRIED not in data["status"]


def test_a_spread_too_wide_for_any_margin_is_said_and_left_out_of_the_file(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = results / "compare-sat" / "compare.json"
    recorded = json.loads(path.read_text())
    for i, run in enumerate(recorded["runs"]):  # p99s a factor 3 apart within each side
        run["values"][P99] = 2.0 * (3.0 if i % 4 < 2 else 1.0)
    path.write_text(json.dumps(recorded))
    out_file = tmp_path / "margins.yaml"
    assert cli.main(["calibrate", "--from", "compare-sat", "--output", str(out_file)]) == 0
    text = words(capsys.readouterr().out)
    assert "none (none)" in text  # the p99's margins at every number of pairs shown
    assert (
        "pressure-p99: no margin is bounded at 4 pairs (--margin-pairs) at the spread's upper "
        "bound" in text
    )
    assert "the margins file leaves pressure-p99 out, so compare keeps its shipped margin" in text
    assert sorted(yaml.safe_load(out_file.read_text())["metrics"]) == [
        "pressure-cpu", "saturation",
    ]  # fmt: skip


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
