"""What the k6 charm's own get-results code returns, read by loadgate's action parser.

The charm's code (charms/k6-k8s/src/report.py) runs in a separate interpreter so that its modules
(runs, peers, report, ...) stay out of this one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from loadgate.juju import actions

ROOT = Path(__file__).resolve().parents[2]

CHARM_REPORT = """
import json, sys
from loadgate_contract.spec import RunSpec
from loadgate_contract.summary import ClientFigures
from report import RunReport, action_results
spec = RunSpec.from_params({"run-id": "r7", "rate": 60000})
figures = ClientFigures(requests=1200, failed=6, error_rate=0.005, p99_ms=42.5,
    records_sent=6000, records_accepted=5970, records_per_minute=59700.0, duration_s=60.0,
    instances=3)
reports = [
    RunReport("r7", "passed", spec, figures, {"k6/0": "passed", "k6/1": "passed"}),
    RunReport("r7", "running", spec, None, {"k6/0": "running"}),
    RunReport("r7", "error", spec, None, {"k6/0": "error"}, "k6: exit 107"),
]
json.dump([action_results(r) for r in reports], sys.stdout)
"""


def _charm_results() -> list[dict[str, Any]]:
    src = ROOT / "charms" / "k6-k8s" / "src"
    done = subprocess.run(
        [sys.executable, "-c", CHARM_REPORT],
        cwd=src,
        env={**os.environ, "PYTHONPATH": str(src)},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def test_results_of_the_k6_charm_itself() -> None:
    passed, running, error = (actions.parse_results(r) for r in _charm_results())
    assert passed.status == "passed"
    assert passed.verdict in ("PASS", "FAIL")
    assert passed.client is not None
    assert (passed.client.requests, passed.client.records_accepted) == (1200, 5970)
    assert passed.client.p99_ms == pytest.approx(42.5)
    assert passed.client.instances == 3
    assert passed.unit_status == {"k6/0": "passed", "k6/1": "passed"}
    assert not running.finished
    assert running.client is None
    assert error.status == "error"
    assert error.error == "k6: exit 107"
