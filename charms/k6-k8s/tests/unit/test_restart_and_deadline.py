"""Runs survive a pod restart (`juju refresh`, eviction), and every run ends by its deadline.

A restart is simulated as Kubernetes does it: a new k6 container whose Pebble knows nothing (no
layer, no service), with the unit's storage mounted again at /var/lib/k6 (kept) or replaced by
an empty one (lost, e.g. a refresh from a revision without storage), while Juju keeps the peer
databags.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from fakes import (
    CHARM_DIR,
    OTLP_HTTP,
    container,
    context,
    otlp_relation,
    run_record,
    summary,
    write_run,
)
from ops import pebble, testing

import runs
from loadgate_contract.summary import parse_summary
from peers import REPORT_GRACE_S, START_WINDOW_S, RunRequest, UnitReport
from segments import combine_reports
from workload import Paths

UNITS = ["k6/0", "k6/1", "k6/2"]


def request(
    run_id: str, *, age_s: float = 1.0, stopped: bool = False, params: dict[str, Any] | None = None
) -> dict[str, str]:
    given = {"run-id": run_id, "rate": 60000, "duration": "60s", "target": OTLP_HTTP}
    given.update(params or {})
    req = RunRequest(run_id, given, UNITS, time.time() - age_s, stopped)
    return req.to_databag()


def report(run_id: str, status: str, **summary_args: Any) -> dict[str, str]:
    figures = parse_summary(summary(**summary_args)) if summary_args else None
    return UnitReport(run_id, status, figures).to_databag()


def published(out: testing.State, peers: testing.PeerRelation) -> dict[str, Any]:
    return json.loads(out.get_relation(peers.id).local_unit_data["run"])


def new_pod(disk: Path) -> testing.Container:
    """The k6 container of a new pod: Pebble's plan is empty; /var/lib/k6 is `disk`'s."""
    return container(disk)


def fresh_disk(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name
    (folder / "var-lib-k6").mkdir(parents=True)
    (folder / "etc-k6").mkdir(parents=True)
    return folder


def finish_k6(state: testing.State, disk: Path, run_id: str, **summary_args: Any) -> testing.State:
    """k6 ends: its summary is on disk and Pebble shows the service inactive (exit 0)."""
    (disk / "var-lib-k6" / "runs" / run_id / "summary.json").write_text(
        json.dumps(summary(**summary_args))
    )
    k6 = state.get_container("k6")
    done = dataclasses.replace(k6, service_statuses={"k6": pebble.ServiceStatus.INACTIVE})
    return dataclasses.replace(state, containers={done})


def restarted(state: testing.State, pod: testing.Container) -> testing.State:
    return dataclasses.replace(state, containers={pod})


# ---- storage -------------------------------------------------------------------------------


def test_runs_live_on_juju_storage_mounted_where_the_workload_keeps_them() -> None:
    meta = yaml.safe_load((CHARM_DIR / "charmcraft.yaml").read_text())
    assert meta["storage"]["runs"]["type"] == "filesystem"
    mounts = meta["containers"]["k6"]["mounts"]
    assert mounts == [{"storage": "runs", "location": "/var/lib/k6"}]
    assert Paths().runs.startswith("/var/lib/k6/")


def test_the_charm_runs_with_its_storage_attached(tmp_path: Path, disk: Path) -> None:
    ctx = context(tmp_path)
    runs_storage = testing.Storage("runs")
    state = testing.State(
        containers={container(disk)}, storages={runs_storage}, relations={otlp_relation()}
    )
    out = ctx.run(ctx.on.storage_attached(runs_storage), state)
    assert out.unit_status == testing.ActiveStatus("idle")


# ---- a finished run is never started again -------------------------------------------------


def started_then_passed(tmp_path: Path, disk: Path) -> tuple[testing.State, testing.PeerRelation]:
    """Unit k6/1 follows the leader's request r9, and k6 passes."""
    ctx = context(tmp_path, unit_id=1)
    peers = testing.PeerRelation("k6-peers", local_app_data=request("r9"), peers_data={0: {}})
    state = testing.State(containers={container(disk)}, relations={peers, otlp_relation()})
    out = ctx.run(ctx.on.relation_changed(peers, remote_unit=0), state)
    assert out.get_container("k6").service_statuses["k6"] == pebble.ServiceStatus.ACTIVE
    out = ctx.run(ctx.on.update_status(), finish_k6(out, disk, "r9"))
    assert published(out, peers)["status"] == "passed"
    return out, peers


@pytest.mark.parametrize("storage", ["kept", "lost"])
def test_a_new_pod_never_starts_the_finished_run_again(
    tmp_path: Path, disk: Path, storage: str
) -> None:
    before, peers = started_then_passed(tmp_path, disk)
    pod_disk = disk if storage == "kept" else fresh_disk(tmp_path, "new-storage")
    ctx = context(tmp_path, unit_id=1)
    after = ctx.run(ctx.on.pebble_ready(new_pod(pod_disk)), restarted(before, new_pod(pod_disk)))
    # The request is still in the databag and within its start window: nothing starts.
    assert "k6" not in after.get_container("k6").plan.services
    assert published(after, peers)["status"] == "passed"
    assert published(after, peers)["figures"]["requests"] == 1200
    if storage == "kept":
        assert run_record(disk, "r9")["status"] == "passed"  # history survives
    # Hours later, the reported PASS does not flip to "arrived late".
    later = dataclasses.replace(
        after.get_relation(peers.id), local_app_data=request("r9", age_s=3 * 3600)
    )
    others = {r for r in after.relations if r.id != peers.id}
    hours_later = dataclasses.replace(
        after, containers={new_pod(pod_disk)}, relations={later, *others}
    )
    final = ctx.run(ctx.on.relation_changed(later, remote_unit=0), hours_later)
    assert published(final, peers)["status"] == "passed"
    assert "k6" not in final.get_container("k6").plan.services


def test_a_stopped_run_is_not_started_again_by_a_new_pod(tmp_path: Path, disk: Path) -> None:
    write_run(
        disk, "r9", segment=(1, 3), summary_data=summary(requests=50, duration_s=4.0), stopped=True
    )
    peers = testing.PeerRelation(
        "k6-peers",
        local_app_data=request("r9", stopped=True),
        local_unit_data=report("r9", runs.STOPPED, requests=50, duration_s=4.0),
        peers_data={0: {}},
    )
    ctx = context(tmp_path, unit_id=1)
    state = testing.State(containers={new_pod(disk)}, relations={peers})
    out = ctx.run(ctx.on.pebble_ready(new_pod(disk)), state)
    assert "k6" not in out.get_container("k6").plan.services
    assert published(out, peers)["status"] == "stopped"


def test_a_unit_asked_to_run_a_stopped_request_reports_stopped(tmp_path: Path, disk: Path) -> None:
    peers = testing.PeerRelation(
        "k6-peers", local_app_data=request("r9", stopped=True), peers_data={0: {}}
    )
    ctx = context(tmp_path, unit_id=2)
    out = ctx.run(
        ctx.on.relation_changed(peers, remote_unit=0),
        testing.State(containers={container(disk)}, relations={peers}),
    )
    assert "k6" not in out.get_container("k6").plan.services
    mine = published(out, peers)
    assert (mine["run_id"], mine["status"]) == ("r9", "stopped")
    assert "before this unit started" in mine["detail"]


# ---- a restart during a run ----------------------------------------------------------------


def test_restart_during_a_run_with_storage_ends_the_run_in_error(
    tmp_path: Path, disk: Path
) -> None:
    """k6 got SIGTERM with the pod, wrote a short summary on the storage; the unit says so."""
    write_run(disk, "r9", segment=(1, 3), summary_data=summary(requests=300, duration_s=15.0))
    peers = testing.PeerRelation(
        "k6-peers",
        local_app_data=request("r9", age_s=20),
        local_unit_data=report("r9", runs.RUNNING),
        peers_data={0: {}},
    )
    ctx = context(tmp_path, unit_id=1)
    state = testing.State(containers={new_pod(disk)}, relations={peers})
    out = ctx.run(ctx.on.pebble_ready(new_pod(disk)), state)
    assert "k6" not in out.get_container("k6").plan.services  # not restarted
    mine = published(out, peers)
    assert mine["status"] == "error"
    assert "ended after 15.0s of 60s" in mine["detail"]
    assert "the pod restarted" in mine["detail"]
    assert mine["figures"]["requests"] == 300  # what ran is still counted
    assert run_record(disk, "r9")["status"] == "error"


def test_restart_during_a_run_without_storage_reports_the_loss(tmp_path: Path, disk: Path) -> None:
    peers = testing.PeerRelation(
        "k6-peers",
        local_app_data=request("r9", age_s=20),
        local_unit_data=report("r9", runs.RUNNING),
        peers_data={0: {}},
    )
    ctx = context(tmp_path, unit_id=1)
    state = testing.State(containers={new_pod(disk)}, relations={peers})
    out = ctx.run(ctx.on.pebble_ready(new_pod(disk)), state)
    assert "k6" not in out.get_container("k6").plan.services
    mine = published(out, peers)
    assert mine["status"] == "error"
    assert "run state was lost" in mine["detail"]


def test_the_leader_without_its_storage_still_reports_the_run(tmp_path: Path, disk: Path) -> None:
    """get-results and the status come from the databags Juju kept."""
    peers = testing.PeerRelation(
        "k6-peers",
        local_app_data=request("r9", age_s=90, params={"min-logs-per-minute": 0}),
        local_unit_data=report("r9", runs.PASSED, requests=1000, counts={40: 1000}),
        peers_data={
            1: report("r9", runs.PASSED, requests=500, counts={60: 500}),
            2: report("r9", runs.PASSED, requests=500, counts={60: 500}),
        },
    )
    ctx = context(tmp_path)
    state = testing.State(
        leader=True, containers={new_pod(disk)}, relations={peers, otlp_relation()}
    )
    out = ctx.run(ctx.on.action("get-results", params={}), state)
    results = ctx.action_results or {}
    assert results["run-id"] == "r9"
    assert results["status"] == "passed"
    assert results["client"]["requests"] == "2000"
    assert results["covers"] == "k6/0, k6/1, k6/2 (3 of 3 units)"
    assert out.unit_status == testing.ActiveStatus("last run r9: PASS")


# ---- the deadline --------------------------------------------------------------------------


def test_the_deadline_is_duration_plus_start_window_plus_grace() -> None:
    req = RunRequest("r", {"duration": "10m"}, UNITS, 1000.0)
    assert req.deadline == 1000.0 + START_WINDOW_S + 600 + REPORT_GRACE_S
    assert not req.overdue(req.deadline)
    assert req.overdue(req.deadline + 1)


def overdue_age(duration_s: float = 60) -> float:
    return START_WINDOW_S + duration_s + REPORT_GRACE_S + 30


def leader_state(disk: Path, peer2: dict[str, str], age_s: float) -> testing.State:
    write_run(disk, "r9", segment=(0, 3), summary_data=summary(requests=1000, counts={40: 1000}))
    peers = testing.PeerRelation(
        "k6-peers",
        local_app_data=request("r9", age_s=age_s),
        peers_data={1: report("r9", runs.PASSED, requests=500, counts={60: 500}), 2: peer2},
    )
    k6 = container(disk, service=pebble.ServiceStatus.INACTIVE)
    return testing.State(leader=True, containers={k6}, relations={peers, otlp_relation()})


@pytest.mark.parametrize(
    "peer2", [{}, report("r9", runs.RUNNING)], ids=["never-reported", "last-said-running"]
)
def test_after_the_deadline_a_silent_unit_is_named_and_the_run_ends(
    ctx: testing.Context[Any], disk: Path, peer2: dict[str, str]
) -> None:
    out = ctx.run(ctx.on.action("get-results", params={}), leader_state(disk, peer2, overdue_age()))
    results = ctx.action_results or {}
    assert results["status"] == "error"
    assert results["verdict"] == "FAIL"
    assert results["units"] == {"k6-0": "passed", "k6-1": "passed", "k6-2": "missing"}
    assert results["covers"] == "k6/0, k6/1 (2 of 3 units)"
    assert results["client"]["requests"] == "1500"
    assert "no outcome reported by the deadline" in results["stderr-tail"]
    assert "from k6/2" in results["stderr-tail"]
    full = json.loads(results["result"])
    assert (full["covers"], full["missing"]) == (["k6/0", "k6/1"], ["k6/2"])
    assert out.unit_status == testing.ActiveStatus("last run r9: FAIL (error; no report from k6/2)")


def test_before_the_deadline_a_silent_unit_keeps_the_run_running(
    ctx: testing.Context[Any], disk: Path
) -> None:
    out = ctx.run(ctx.on.update_status(), leader_state(disk, {}, age_s=60))
    assert out.unit_status == testing.ActiveStatus("running r9 (0/3 units)")


def test_an_overdue_running_report_does_not_hold_up_the_next_run(
    ctx: testing.Context[Any], disk: Path
) -> None:
    state = leader_state(disk, report("r9", runs.RUNNING), overdue_age())
    ctx.run(ctx.on.action("start-load", params={"run-id": "r10"}), state)
    assert (ctx.action_results or {})["run-id"] == "r10"


def test_a_running_report_within_the_deadline_holds_up_the_next_run(
    ctx: testing.Context[Any], disk: Path
) -> None:
    state = leader_state(disk, report("r9", runs.RUNNING), age_s=60)
    with pytest.raises(testing.ActionFailed, match="r9 is going on"):
        ctx.run(ctx.on.action("start-load", params={"run-id": "r10"}), state)


def test_this_units_own_k6_still_running_is_running_past_the_deadline() -> None:
    reports = {"k6/0": UnitReport("r", runs.RUNNING), "k6/1": UnitReport("r", runs.PASSED)}
    combined = combine_reports("r", ["k6/0", "k6/1"], reports, overdue=True, still_running=["k6/0"])
    assert combined.status == runs.RUNNING
    assert combined.units == {"k6/0": runs.RUNNING, "k6/1": runs.PASSED}


def test_get_results_right_after_a_restart_without_storage_says_the_run_was_lost(
    tmp_path: Path, disk: Path
) -> None:
    """Before any hook has corrected the databag, get-results does not claim `running`."""
    peers = testing.PeerRelation(
        "k6-peers",
        local_app_data=request("r9", age_s=20),
        local_unit_data=report("r9", runs.RUNNING),
        peers_data={0: {}},
    )
    ctx = context(tmp_path, unit_id=1)
    ctx.run(
        ctx.on.action("get-results", params={}),
        testing.State(containers={new_pod(disk)}, relations={peers}),
    )
    results = ctx.action_results or {}
    assert (results["run-id"], results["status"], results["verdict"]) == ("r9", "error", "FAIL")
    assert "run state was lost" in results["stderr-tail"]
