"""`loadgate run` through the real stack: a balanced ledger and passing gates, an impossible p99
that fails with exit code 1, and a run that starts and stops its own stack."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ShortRun, processes_mentioning

from loadgate import cli
from loadgate.stack import local

pytestmark = pytest.mark.local


def result_of(results: Path) -> dict[str, Any]:
    files = list(results.glob("*/result.json"))
    assert len(files) == 1, files
    return json.loads(files[0].read_text())


@pytest.fixture
def use_stack(stack: local.StackInfo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point loadgate at the module's running stack; results go to a fresh folder."""
    monkeypatch.setenv("LOADGATE_STACK_DIR", str(stack.root))
    results = tmp_path / "results"
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(results))
    return results


def test_short_run_balances_the_ledger_and_passes(
    short_run: ShortRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The suite's short run (conftest.py: 15 s at 12,000 records/min, labelled revision=test),
    which the dashboard's queries read too."""
    out, results = short_run.out, short_run.results
    assert short_run.code == cli.EXIT_OK, out
    result = result_of(results)
    assert result["verdict"] == "PASS"
    assert all(g["passed"] for g in result["gates"])
    assert {g["name"] for g in result["gates"]} == {
        "error_rate", "p99_ms", "logs_per_minute", "lost_records",
    }  # fmt: skip
    client, pipeline = result["client"], result["pipeline"]
    sent = client["records_sent"]
    assert sent > 0
    assert sent == client["records_accepted"]
    assert sent == pipeline["collector_accepted"]
    assert sent == pipeline["collector_exported"]
    assert sent == pipeline["loki_received"]
    assert sent == result["delivered"]["records"]
    assert result["delivered"]["drained"] is True
    assert result["ledger"]["balanced"] is True
    assert [s["count"] for s in result["ledger"]["steps"]] == [sent] * 4
    assert result["labels"] == {"revision": "test"}
    assert result["spec"]["rate"] == 12000
    # Every figure the issue asks for is present.
    for key in ("requests", "failed", "error_rate", "p99_ms", "records_per_minute"):
        assert key in client
    for key in ("collector_refused", "collector_failed", "queue_size_max", "collector_cpu_max",
                "collector_rss_max_mib", "loki_discarded"):  # fmt: skip
        assert key in pipeline
    assert pipeline["collector_rss_max_mib"] > 1
    run_dir = results / result["run_id"]
    assert (run_dir / "k6-summary.json").is_file()
    assert "verdict PASS" in out
    assert "loss ledger (balanced)" in out
    # k6's own CPU, measured on this machine, and what gave way: nothing, every figure clean.
    generator = result["generator"]
    assert generator["k6_cpu_s"] > 0
    assert generator["k6_cpu_total_s"] >= generator["k6_cpu_s"]
    assert generator["machine_cores"] >= 1
    # VUs busy, sampled every second: at this rate a request takes a few ms, so often 0.
    assert 0 <= generator["vus_max"] <= generator["vus_limit"]
    assert pipeline["queue_capacity"] == 1000  # the charm's default queue_size
    assert result["bottleneck"]["attribution"]["verdict"] == "none"
    assert result["bottleneck"]["figures"]["k6_cpu_s"] == generator["k6_cpu_s"]
    assert "bottleneck: none" in out
    # The collector over time (series.json), from Prometheus range queries over the run.
    series = json.loads((run_dir / "series.json").read_text())
    assert series["format"] == "loadgate-series/1"
    for name in ("collector_cpu_cores", "queue_size", "collector_rss_mib"):
        samples = series["series"][name]["samples"]
        assert len(samples) >= 5, (name, series["series"][name]["missing"])
        assert all(t0 <= t1 for (t0, _), (t1, _) in itertools.pairwise(samples))
    assert max(v for _, v in series["series"]["collector_cpu_cores"]["samples"]) > 0
    assert max(v for _, v in series["series"]["collector_rss_mib"]["samples"]) > 1
    # ... and the report: page, HTML and PNGs (the run's series among them).
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(results))
    assert cli.main(["report"]) == cli.EXIT_OK
    page = results / "report"
    split = result["environment"]["cpu_split"]  # a split stack's runs get rows of their own
    name = "test"
    if split:
        name += f" (cpu split {len(split['generator'])}:{len(split['pipeline'])})"
    assert (
        f"| {name} | otlp-logs constant-arrival-rate | 12,000/min | 1 |"
        in (page / "report.md").read_text()
    )
    pngs = {p.name for p in page.glob("*.png")}
    assert {"knee.png", "capacity.png", f"series-{result['run_id']}.png"} <= pngs
    assert (page / "report.html").is_file()


def test_impossible_p99_fails_with_exit_code_1_naming_the_gate(
    use_stack: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.main(["run", "--duration", "5s", "--rate", "3000", "--p99-ms", "0.001"])
    out = capsys.readouterr().out
    assert code == cli.EXIT_GATE_FAILED, out
    result = result_of(use_stack)
    assert result["verdict"] == "FAIL"
    failed = [g["name"] for g in result["gates"] if not g["passed"]]
    assert failed == ["p99_ms"]
    assert "verdict FAIL" in out
    assert "p99_ms" in out


def test_a_run_against_a_stack_of_another_profile_is_refused(
    use_stack: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.main(["run", "--duration", "5s", "--profile", "batch"])
    err = capsys.readouterr().err
    assert code == cli.EXIT_BAD_INPUT
    assert "not the one this run asks for (otelcol options:" in err
    assert "processors" in err
    assert not use_stack.exists()


def test_run_starts_and_stops_its_own_stack(
    built_bin_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = tmp_path / "own-stack"
    monkeypatch.setenv("LOADGATE_STACK_DIR", str(root))
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(tmp_path / "results"))
    code = cli.main(["run", "--duration", "5s", "--rate", "3000", "--base-port", "24700"])
    out = capsys.readouterr()
    assert code == cli.EXIT_OK, out.out + out.err
    assert "stack stopped" in out.err
    assert local.running_info(root) is None
    assert processes_mentioning(root) == []
    assert result_of(tmp_path / "results")["ledger"]["balanced"] is True
