"""The backend fault proxy between the collector and Loki (`--backend-fault`), end to end with
the real binaries and TLS at both ends: a share of the collector's pushes answered 503 is
retried from its persistent queue, and once the faults stop the queue drains and the ledger
balances; the proxy's counts are in result.json, the figures table and Prometheus."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from loadgate import cli
from loadgate.stack import local

pytestmark = pytest.mark.local


def test_503s_on_a_share_are_retried_and_the_ledger_balances_once_they_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "stack"
    monkeypatch.setenv("LOADGATE_STACK_DIR", str(root))
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(tmp_path / "results"))
    try:
        code = cli.main([
            "run", "--backend-fault", "503=0.6,until=15s,seed=3", "--base-port", "25540",
            "--duration", "20s", "--rate", "12000", "--drain-timeout", "150",
            "--run-id", "fault-503", "--keep-stack",
        ])  # fmt: skip
        out = capsys.readouterr().out
        result = json.loads((tmp_path / "results" / "fault-503" / "result.json").read_text())
        fault = result["resources"]["backend_fault"]
        ledger = result["ledger"]
        print(f"\n[503] proxy: {json.dumps(fault)}; ledger: {json.dumps(ledger['steps'])}")
        assert code == cli.EXIT_OK, out
        # The proxy answered a share with 503 and the collector sent those pushes again.
        assert fault["spec"] == "503=0.6,until=15s,seed=3"
        assert fault["failed"] > 0
        assert fault["outage"] == fault["upstream_errors"] == 0
        assert fault["requests"] == fault["passed"] + fault["failed"]
        assert fault["passed"] >= result["client"]["requests"]  # every push got through
        # Once the 503s stopped the queue drained: nothing lost, nothing given up on.
        assert result["delivered"]["drained"] is True
        assert ledger["balanced"] is True
        assert ledger["lost_after_acceptance"] == 0
        assert result["pipeline"]["collector_failed"] == 0
        assert [s["lost"] for s in ledger["steps"][1:]] == [0, 0, 0]
        assert "backend faults" in out
        # Prometheus scraped the proxy's counts (what a run or a dashboard can read).
        info = local.read_info(root)
        assert info is not None
        answer = httpx.get(
            f"{info.prometheus_url}/api/v1/query",
            params={"query": 'loadgate_backend_fault_requests_total{outcome="failed"}'},
        ).json()
        (series,) = answer["data"]["result"]
        assert float(series["value"][1]) >= fault["failed"]
    finally:
        local.down(root)
