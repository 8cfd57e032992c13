"""How a run's outcome is told from Pebble's service state and k6's summary."""

from __future__ import annotations

import pytest

import runs
from loadgate_contract.summary import ClientFigures
from runs import RunRecord, classify


def figures(duration_s: float = 60.0, thresholds_ok: bool = True) -> ClientFigures:
    return ClientFigures(
        requests=100,
        failed=0,
        error_rate=0.0,
        p99_ms=5.0,
        records_sent=500,
        records_accepted=500,
        records_per_minute=500.0,
        duration_s=duration_s,
        thresholds={"http_req_duration{p(99)<100}": thresholds_ok},
    )


@pytest.mark.parametrize(
    ("service", "stopped", "summary", "status", "reason"),
    [
        ("active", False, None, runs.RUNNING, ""),
        ("active", True, None, runs.RUNNING, ""),  # stop requested, k6 still writing its summary
        ("inactive", False, figures(), runs.PASSED, ""),  # exit 0
        ("error", False, figures(thresholds_ok=False), runs.FAILED, "thresholds crossed"),  # 99
        ("error", False, figures(), runs.ERROR, "exited with an error"),  # e.g. 107, 108
        ("error", False, None, runs.ERROR, "without a summary"),  # init error, bad flag
        ("inactive", True, figures(duration_s=5), runs.STOPPED, "stop-load"),  # SIGTERM: 105
        ("inactive", True, None, runs.STOPPED, "stop-load"),
        ("inactive", False, figures(duration_s=5), runs.ERROR, "ended after 5.0s of 60s"),
        # The pod restarted (the record survived on storage, the Pebble plan did not):
        ("unknown", False, figures(), runs.PASSED, ""),  # k6 had finished: a complete summary
        ("unknown", False, figures(duration_s=5), runs.ERROR, "the pod restarted"),  # cut short
        ("unknown", False, None, runs.ERROR, "the pod restarted"),  # killed before a summary
        ("unknown", False, figures(thresholds_ok=False), runs.FAILED, "thresholds crossed"),
        ("inactive", False, figures(duration_s=59.5), runs.PASSED, ""),  # timer granularity
    ],
)
def test_classify(
    service: str, stopped: bool, summary: ClientFigures | None, status: str, reason: str
) -> None:
    got, why = classify(service, stopped=stopped, figures=summary, duration_s=60.0)
    assert got == status
    assert reason in why


def test_record_round_trip() -> None:
    record = RunRecord("r", {"run-id": "r", "rate": 5}, (1, 3), "k6-1", 12.0, stopped=True)
    assert RunRecord.from_json(record.to_json()) == record
