"""stop-load, and how non-leader units follow the leader's run request over k6-peers."""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path

from fakes import OTLP_HTTP, container, context, otlp_relation, run_record, summary, write_run
from ops import pebble, testing

from charm import K6Charm

Ctx = testing.Context[K6Charm]
UNITS = ["k6/0", "k6/1", "k6/2"]


def request(run_id: str, *, stopped: bool = False, age_s: float = 1.0) -> dict[str, str]:
    params = {"run-id": run_id, "rate": 60000, "duration": "10m", "target": OTLP_HTTP}
    data = {
        "run_id": run_id,
        "params": params,
        "units": UNITS,
        "requested": time.time() - age_s,
        "stopped": stopped,
    }
    return {"run": json.dumps(data)}


def test_stop_load_on_the_leader_stops_every_unit(ctx: Ctx, disk: Path) -> None:
    write_run(disk, "r1", segment=(0, 3))
    peers = testing.PeerRelation(
        "k6-peers", local_app_data=request("r1"), peers_data={1: {}, 2: {}}
    )
    k6 = container(disk, service=pebble.ServiceStatus.ACTIVE)
    out = ctx.run(
        ctx.on.action("stop-load"), testing.State(leader=True, containers={k6}, relations={peers})
    )
    assert ctx.action_results == {"run-id": "r1", "stopped": "every unit"}
    assert out.get_container("k6").service_statuses["k6"] == pebble.ServiceStatus.INACTIVE
    assert run_record(disk, "r1")["stopped"] is True
    published = json.loads(out.get_relation(peers.id).local_app_data["run"])
    assert published["stopped"] is True
    assert published["run_id"] == "r1"


def test_stop_load_with_nothing_running(ctx: Ctx, disk: Path) -> None:
    out = ctx.run(
        ctx.on.action("stop-load"), testing.State(leader=True, containers={container(disk)})
    )
    assert ctx.action_results == {"message": "no run is going on"}
    assert "k6" not in out.get_container("k6").plan.services


def test_stop_load_on_a_non_leader_stops_only_itself(ctx: Ctx, disk: Path) -> None:
    write_run(disk, "r1", segment=(1, 3))
    peers = testing.PeerRelation("k6-peers", local_app_data=request("r1"))
    k6 = container(disk, service=pebble.ServiceStatus.ACTIVE)
    out = ctx.run(
        ctx.on.action("stop-load"), testing.State(leader=False, containers={k6}, relations={peers})
    )
    assert (ctx.action_results or {})["stopped"].startswith("this unit")
    assert out.get_container("k6").service_statuses["k6"] == pebble.ServiceStatus.INACTIVE
    assert json.loads(out.get_relation(peers.id).local_app_data["run"])["stopped"] is False


def test_a_unit_starts_its_segment_when_the_leader_asks(tmp_path: Path, disk: Path) -> None:
    ctx = context(tmp_path, unit_id=2)
    peers = testing.PeerRelation(
        "k6-peers", local_app_data=request("r9"), peers_data={0: {}, 1: {}}
    )
    state = testing.State(leader=False, containers={container(disk)}, relations={peers})
    out = ctx.run(ctx.on.relation_changed(peers, remote_unit=0), state)
    k6 = out.get_container("k6")
    assert k6.service_statuses["k6"] == pebble.ServiceStatus.ACTIVE
    argv = shlex.split(k6.plan.services["k6"].command)
    assert argv[argv.index("--execution-segment") + 1] == "2/3:1"
    assert "LOAD_INSTANCE=k6-2" in argv
    assert "LOAD_RUN_ID=r9" in argv
    assert run_record(disk, "r9")["segment"] == [2, 3]
    report = json.loads(out.get_relation(peers.id).local_unit_data["run"])
    assert report == {"run_id": "r9", "status": "running", "figures": None, "detail": ""}

    # The same request again (another peer's change) does not start the run twice.
    again = ctx.run(ctx.on.relation_changed(out.get_relation(peers.id), remote_unit=1), out)
    assert again.get_container("k6").service_statuses["k6"] == pebble.ServiceStatus.ACTIVE
    again_report = json.loads(again.get_relation(peers.id).local_unit_data["run"])
    assert again_report["status"] == "running"


def test_a_unit_outside_the_run_does_nothing(tmp_path: Path, disk: Path) -> None:
    ctx = context(tmp_path, unit_id=7)
    peers = testing.PeerRelation("k6-peers", local_app_data=request("r9"), peers_data={0: {}})
    state = testing.State(leader=False, containers={container(disk)}, relations={peers})
    out = ctx.run(ctx.on.relation_changed(peers, remote_unit=0), state)
    assert "k6" not in out.get_container("k6").plan.services


def test_a_late_request_is_reported_not_run(tmp_path: Path, disk: Path) -> None:
    ctx = context(tmp_path, unit_id=1)
    peers = testing.PeerRelation(
        "k6-peers", local_app_data=request("r9", age_s=3600), peers_data={0: {}}
    )
    state = testing.State(leader=False, containers={container(disk)}, relations={peers})
    out = ctx.run(ctx.on.relation_changed(peers, remote_unit=0), state)
    assert "k6" not in out.get_container("k6").plan.services
    report = json.loads(out.get_relation(peers.id).local_unit_data["run"])
    assert report["status"] == "error"
    assert "late" in report["detail"]


def test_a_unit_stops_when_the_leader_stops_the_run(tmp_path: Path, disk: Path) -> None:
    ctx = context(tmp_path, unit_id=1)
    write_run(disk, "r9", segment=(1, 3), summary_data=summary(requests=50, duration_s=4.0))
    peers = testing.PeerRelation(
        "k6-peers", local_app_data=request("r9", stopped=True), peers_data={0: {}}
    )
    k6 = container(disk, service=pebble.ServiceStatus.ACTIVE)
    out = ctx.run(
        ctx.on.relation_changed(peers, remote_unit=0),
        testing.State(leader=False, containers={k6}, relations={peers}),
    )
    assert out.get_container("k6").service_statuses["k6"] == pebble.ServiceStatus.INACTIVE
    report = json.loads(out.get_relation(peers.id).local_unit_data["run"])
    assert report["status"] == "stopped"
    assert report["figures"]["requests"] == 50  # partial figures travel to the leader
    assert report["figures"]["histogram"]["counts"] == {"60": 50}


def test_completion_is_noticed_through_the_check(ctx: Ctx, disk: Path) -> None:
    """k6 exits, its REST API check goes down, Juju says pebble-check-failed: record and report."""
    write_run(disk, "r1", summary_data=summary())
    layer = pebble.Layer(
        {
            "services": {"k6": {"override": "replace", "command": "k6 run x.js"}},
            "checks": {
                "k6-running": {
                    "override": "replace",
                    "threshold": 2,
                    "http": {"url": "http://127.0.0.1:6565/v1/status"},
                }
            },
        }
    )
    info = testing.CheckInfo("k6-running", status=pebble.CheckStatus.DOWN, failures=2, threshold=2)
    k6 = testing.Container(
        "k6",
        can_connect=True,
        layers={"k6": layer},
        service_statuses={"k6": pebble.ServiceStatus.INACTIVE},
        check_infos={info},
        mounts=container(disk).mounts,
    )
    peers = testing.PeerRelation("k6-peers")
    state = testing.State(leader=True, containers={k6}, relations={peers, otlp_relation()})
    out = ctx.run(ctx.on.pebble_check_failed(k6, info), state)
    assert run_record(disk, "r1")["status"] == "passed"
    report = json.loads(out.get_relation(peers.id).local_unit_data["run"])
    assert report["status"] == "passed"
    assert report["figures"]["requests"] == 1200
    assert out.unit_status == testing.ActiveStatus("last run r1: PASS")


def test_stop_load_after_every_unit_finished_changes_nothing(ctx: Ctx, disk: Path) -> None:
    write_run(disk, "r1", segment=(0, 3), summary_data=summary())
    done = {"run": json.dumps({"run_id": "r1", "status": "passed"})}
    peers = testing.PeerRelation(
        "k6-peers", local_app_data=request("r1"), peers_data={1: done, 2: done}
    )
    k6 = container(disk, service=pebble.ServiceStatus.INACTIVE)
    state = testing.State(leader=True, containers={k6}, relations={peers})
    out = ctx.run(ctx.on.action("stop-load"), state)
    assert ctx.action_results == {"message": "no run is going on"}
    assert json.loads(out.get_relation(peers.id).local_app_data["run"])["stopped"] is False
    assert run_record(disk, "r1")["stopped"] is False


def test_stop_load_reaches_peers_that_have_not_started_yet(ctx: Ctx, disk: Path) -> None:
    write_run(disk, "r1", segment=(0, 3), summary_data=summary())
    peers = testing.PeerRelation(
        "k6-peers", local_app_data=request("r1"), peers_data={1: {}, 2: {}}
    )
    k6 = container(disk, service=pebble.ServiceStatus.INACTIVE)
    state = testing.State(leader=True, containers={k6}, relations={peers})
    out = ctx.run(ctx.on.action("stop-load"), state)
    assert ctx.action_results == {"run-id": "r1", "stopped": "every unit"}
    assert json.loads(out.get_relation(peers.id).local_app_data["run"])["stopped"] is True
