"""A short saturation run on the real stack (issue 17): offered far more than the default
pipeline takes, its queue fills, the throughput over the steady window is measured at each
step, and the ledger still accounts for every record (the refused ones explained)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loadgate import cli
from loadgate.stack import local

pytestmark = pytest.mark.local


def test_a_saturation_run_measures_its_steady_window_and_its_ledger_is_exact(
    stack_to_fill: local.StackInfo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("LOADGATE_STACK_DIR", str(stack_to_fill.root))
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(tmp_path / "results"))
    code = cli.main(["run", "--saturate", "--duration", "30s", "--run-id", "saturated"])
    out = capsys.readouterr().out
    assert code == cli.EXIT_OK, out
    result = json.loads((tmp_path / "results" / "saturated" / "result.json").read_text())
    sat = result["saturation"]
    assert sat["saturated"] is True, sat
    assert sat["offered_per_min"] == 300_000
    assert sat["window_s"] >= 10
    accepted = sat["accepted_per_min"]
    assert 0 < accepted < 300_000
    # In the steady state what comes in goes out: the steps agree within a few percent.
    assert sat["exported_per_min"] == pytest.approx(accepted, rel=0.05)
    assert sat["stored_per_min"] == pytest.approx(accepted, rel=0.05)
    assert sat["refused_per_min"] > 0
    assert "saturation throughput" in out
    # The whole run's ledger: every record k6 saw accepted was exported and stored.
    steps = {s["name"]: s["count"] for s in result["ledger"]["steps"]}
    acknowledged = result["client"]["records_accepted"]
    assert steps["accepted"] == steps["exported"] == steps["stored"] == acknowledged
    assert steps["sent"] == result["client"]["records_sent"] > acknowledged
    assert result["ledger"]["lost_after_acceptance"] == 0
    assert result["bottleneck"]["attribution"]["verdict"] == "collector"
    # The load window is k6's first request to its last, and the CPU came from the kernel.
    window = result["load_window"]
    assert window["last_request"] - window["first_request"] == pytest.approx(30, abs=1.5)
    cpu = result["cpu"]
    assert cpu["used_s"]["otelcol"] > 0
    assert cpu["per_1000_records"]["otelcol"] > 0
    assert cpu["busy_elsewhere_cores"] is not None
    # The stack's CPU split, recorded with the figures it shaped.
    split = stack_to_fill.cpu_split
    assert result["environment"]["cpu_split"] == (split.to_dict() if split else None)
    if split is not None:  # the pipeline alone on its CPUs: what they can give, nearly all
        pipeline_cores = (cpu["used_s"]["otelcol"] + cpu["used_s"]["loki"]) / cpu["window_s"]
        assert pipeline_cores <= len(split.pipeline) + 0.1
