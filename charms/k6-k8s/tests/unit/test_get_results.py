"""get-results: status, client figures, gates and verdict of a run, from what k6 left behind."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from fakes import container, otlp_relation, run_record, summary, write_run
from ops import pebble, testing

from charm import K6Charm
from loadgate_contract.summary import Histogram

Ctx = testing.Context[K6Charm]


def get_results(
    ctx: Ctx, disk: Path, service: pebble.ServiceStatus | None, **params: str
) -> dict[str, Any]:
    state = testing.State(
        leader=True, containers={container(disk, service=service)}, relations={otlp_relation()}
    )
    ctx.run(ctx.on.action("get-results", params=params), state)
    return ctx.action_results or {}


def test_passed_run(ctx: Ctx, disk: Path) -> None:
    write_run(disk, "r1", summary_data=summary(requests=1200, p99_ms=12.5))
    results = get_results(ctx, disk, pebble.ServiceStatus.INACTIVE)
    assert results["run-id"] == "r1"
    assert results["status"] == "passed"
    assert results["verdict"] == "PASS"
    assert results["client"]["requests"] == "1200"
    assert results["client"]["p99-ms"] == "12.5"
    assert results["client"]["records-accepted"] == "6000"
    assert results["gates"]["p99-ms"] == {
        "threshold": "< 100 ms",
        "value": "12.5",
        "passed": "True",
        # Of the accepted requests only: a refused one is an error, not a latency.
        "source": "k6 summary (http_req_duration{expected_response:true})",
    }
    assert results["gates"]["error-rate"]["passed"] == "True"
    assert results["units"] == {"k6-0": "passed"}
    full = json.loads(results["result"])
    assert full["client"]["requests"] == 1200
    assert [g["name"] for g in full["gates"]] == ["error_rate", "p99_ms", "logs_per_minute"]
    # The outcome is recorded, so it stays readable after the next run replaced the service.
    assert run_record(disk, "r1")["status"] == "passed"


def test_thresholds_crossed_is_failed(ctx: Ctx, disk: Path) -> None:
    write_run(disk, "r2", summary_data=summary(p99_ms=250.0, thresholds_ok=False))
    results = get_results(ctx, disk, pebble.ServiceStatus.ERROR)
    assert results["status"] == "failed"
    assert results["verdict"] == "FAIL"
    assert results["gates"]["p99-ms"]["passed"] == "False"
    assert "http_req_duration{p(99)<100}" in results["detail"]


def test_error_without_summary_shows_the_tail_of_k6s_log(ctx: Ctx, disk: Path) -> None:
    log = "\n".join(f"line {i}" for i in range(40)) + '\nlevel=error msg="GoError: boom"'
    write_run(disk, "r3", log=log)
    results = get_results(ctx, disk, pebble.ServiceStatus.ERROR)
    assert results["status"] == "error"
    assert results["verdict"] == "FAIL"
    assert "without a summary" in results["stderr-tail"]
    assert "GoError: boom" in results["stderr-tail"]
    assert "line 39" in results["stderr-tail"]
    assert "line 10\n" not in results["stderr-tail"]  # only the tail
    assert "client" not in results


def test_nonzero_exit_without_crossed_threshold_is_error(ctx: Ctx, disk: Path) -> None:
    write_run(disk, "r4", summary_data=summary(), log='level=error msg="script exception"')
    results = get_results(ctx, disk, pebble.ServiceStatus.ERROR)
    assert results["status"] == "error"
    assert "script exception" in results["stderr-tail"]


def test_early_end_without_stop_load_is_error(ctx: Ctx, disk: Path) -> None:
    """k6 killed from outside (e.g. the pod evicted) writes a short summary and exits 105."""
    write_run(disk, "r5", summary_data=summary(duration_s=12.0))
    results = get_results(ctx, disk, pebble.ServiceStatus.INACTIVE)
    assert results["status"] == "error"
    assert "ended after 12.0s of 60s" in results["stderr-tail"]


def test_stopped_run_keeps_partial_figures(ctx: Ctx, disk: Path) -> None:
    write_run(disk, "r6", summary_data=summary(requests=90, duration_s=5.0), stopped=True)
    results = get_results(ctx, disk, pebble.ServiceStatus.INACTIVE)
    assert results["status"] == "stopped"
    assert results["client"]["requests"] == "90"
    assert results["client"]["duration-s"] == "5"
    assert "stopped by stop-load" in results["detail"]


def test_running_run_has_no_verdict_yet(ctx: Ctx, disk: Path) -> None:
    write_run(disk, "r7")
    results = get_results(ctx, disk, pebble.ServiceStatus.ACTIVE)
    assert results["status"] == "running"
    assert "verdict" not in results
    assert run_record(disk, "r7")["status"] is None


def test_an_older_run_by_id(ctx: Ctx, disk: Path) -> None:
    old = write_run(disk, "old", summary_data=summary(), last=False)
    record = json.loads((old / "run.json").read_text())
    record["status"] = "passed"
    (old / "run.json").write_text(json.dumps(record))
    write_run(disk, "new", summary_data=summary(requests=20, duration_s=60.0))
    results = get_results(ctx, disk, pebble.ServiceStatus.INACTIVE, **{"run-id": "old"})
    assert results["run-id"] == "old"
    assert results["status"] == "passed"
    assert results["client"]["requests"] == "1200"


def test_unknown_run_id_fails_naming_it(ctx: Ctx, disk: Path) -> None:
    write_run(disk, "r8", summary_data=summary())
    with pytest.raises(testing.ActionFailed) as failed:
        get_results(ctx, disk, pebble.ServiceStatus.INACTIVE, **{"run-id": "nope"})
    assert failed.value.message.startswith("run-id: no run 'nope'")
    assert "r8" in failed.value.message


@pytest.mark.parametrize("run_id", ["../x", "../../etc/k6", "r/../../x", ".hidden", "a" * 65])
def test_a_run_id_outside_the_pattern_is_refused_before_any_file_is_read(
    ctx: Ctx, disk: Path, run_id: str
) -> None:
    write_run(disk, "r8", summary_data=summary())
    with pytest.raises(testing.ActionFailed) as failed:
        get_results(ctx, disk, pebble.ServiceStatus.INACTIVE, **{"run-id": run_id})
    assert failed.value.message.startswith("run-id: must be 1-64 characters")
    assert repr(run_id) in failed.value.message


def test_no_run_yet(ctx: Ctx, disk: Path) -> None:
    with pytest.raises(testing.ActionFailed) as failed:
        get_results(ctx, disk, None)
    assert "no run on this unit yet" in failed.value.message


def peer_report(run_id: str, status: str, data: dict[str, Any] | None) -> dict[str, str]:
    figures = None
    if data is not None:
        figures = {
            "requests": data["requests"],
            "failed": data["failed"],
            "error_rate": data["error_rate"],
            "p99_ms": data["p99_ms"],
            "records_sent": data["records_sent"],
            "records_accepted": data["records_accepted"],
            "records_per_minute": data["records_per_minute"],
            "duration_s": data["duration_s"],
            "thresholds": {"http_req_duration{p(99)<100}": True},
            "histogram": data["latency_histogram"],
        }
    return {"run": json.dumps({"run_id": run_id, "status": status, "figures": figures})}


def three_unit_state(disk: Path, peer_statuses: tuple[str, str]) -> testing.State:
    # Unit 0 (fast): 1000 requests in bucket 40; units 1 and 2 (slow): 500 requests each.
    write_run(
        disk,
        "multi",
        params={"rate": 60000, "min-logs-per-minute": 0},
        summary_data=summary(requests=1000, p99_ms=2.0, counts={40: 1000}),
        segment=(0, 3),
    )
    slow = summary(requests=500, p99_ms=80.0, counts={60: 490, 88: 10})
    units = ["k6/0", "k6/1", "k6/2"]
    request = {"run_id": "multi", "params": {}, "units": units, "requested": time.time()}
    peers = testing.PeerRelation(
        "k6-peers",
        local_app_data={"run": json.dumps(request)},
        peers_data={
            1: peer_report("multi", peer_statuses[0], slow),
            2: peer_report(
                "multi", peer_statuses[1], slow if peer_statuses[1] != "running" else None
            ),
        },
    )
    k6 = container(disk, service=pebble.ServiceStatus.INACTIVE)
    return testing.State(leader=True, containers={k6}, relations={otlp_relation(), peers})


def test_leader_combines_the_units(ctx: Ctx, disk: Path) -> None:
    ctx.run(ctx.on.action("get-results", params={}), three_unit_state(disk, ("passed", "passed")))
    results = ctx.action_results or {}
    assert results["units"] == {"k6-0": "passed", "k6-1": "passed", "k6-2": "passed"}
    assert results["client"]["requests"] == "2000"  # counts add
    assert results["client"]["records-accepted"] == "10000"
    assert results["client"]["instances"] == "3"
    # p99 of the merged histograms: rank 1980 of 2000 lies in bucket 60 (requests 1001..1980),
    # not the mean of the units' p99s (54 ms) nor the slowest unit's.
    expected = Histogram(counts={60: 1}).upper_ms(60)
    assert float(results["client"]["p99-ms"]) == pytest.approx(expected, rel=1e-5)
    assert results["client"]["p99-source"] == "merged histogram of 3 k6"
    assert results["status"] == "passed"


def test_combined_status_runs_until_every_unit_reported(ctx: Ctx, disk: Path) -> None:
    ctx.run(ctx.on.action("get-results", params={}), three_unit_state(disk, ("passed", "running")))
    results = ctx.action_results or {}
    assert results["status"] == "running"
    assert results["units"]["k6-2"] == "running"
    assert results["client"]["requests"] == "1500"  # what has been reported so far
    assert "no figures (yet) from k6/2" in results["detail"]


def test_combined_error_wins_over_passed(ctx: Ctx, disk: Path) -> None:
    ctx.run(ctx.on.action("get-results", params={}), three_unit_state(disk, ("error", "passed")))
    assert (ctx.action_results or {})["status"] == "error"
