"""Unit status, and what the charm takes from send-otlp, receive-ca-cert and send-remote-write."""

from __future__ import annotations

import json
import time
from pathlib import Path

from fakes import (
    OTLP_HTTP,
    PEM_A,
    PEM_B,
    PROM_RW,
    ca_relation,
    container,
    otlp_relation,
    remote_write_relation,
    summary,
    write_run,
)
from ops import pebble, testing

from charm import K6Charm
from targets import NO_TARGET

Ctx = testing.Context[K6Charm]


def status_after_update(ctx: Ctx, state: testing.State) -> object:
    return ctx.run(ctx.on.update_status(), state).unit_status


def test_waiting_while_the_container_is_unreachable(ctx: Ctx, disk: Path) -> None:
    state = testing.State(containers={container(disk, can_connect=False)})
    assert status_after_update(ctx, state) == testing.WaitingStatus(
        "waiting for the k6 container (Pebble)"
    )


def test_blocked_without_any_target(ctx: Ctx, disk: Path) -> None:
    state = testing.State(containers={container(disk)})
    assert status_after_update(ctx, state) == testing.BlockedStatus(NO_TARGET)


def test_idle_with_a_related_collector(ctx: Ctx, disk: Path) -> None:
    state = testing.State(containers={container(disk)}, relations={otlp_relation()})
    assert status_after_update(ctx, state) == testing.ActiveStatus("idle")


def test_running(ctx: Ctx, disk: Path) -> None:
    write_run(disk, "r1")
    k6 = container(disk, service=pebble.ServiceStatus.ACTIVE)
    state = testing.State(containers={k6}, relations={otlp_relation()})
    assert status_after_update(ctx, state) == testing.ActiveStatus("running r1 (1/1 units)")


def test_running_counts_the_units_that_run(ctx: Ctx, disk: Path) -> None:
    write_run(disk, "r1", segment=(0, 3))
    units = ["k6/0", "k6/1", "k6/2"]
    req = {"run_id": "r1", "params": {}, "units": units, "requested": time.time()}
    peers = testing.PeerRelation(
        "k6-peers",
        local_app_data={"run": json.dumps(req)},
        peers_data={1: {"run": json.dumps({"run_id": "r1", "status": "running"})}, 2: {}},
    )
    k6 = container(disk, service=pebble.ServiceStatus.ACTIVE)
    state = testing.State(leader=True, containers={k6}, relations={otlp_relation(), peers})
    assert status_after_update(ctx, state) == testing.ActiveStatus("running r1 (2/3 units)")


def test_last_run_pass(ctx: Ctx, disk: Path) -> None:
    write_run(disk, "r2", summary_data=summary())
    k6 = container(disk, service=pebble.ServiceStatus.INACTIVE)
    state = testing.State(containers={k6}, relations={otlp_relation()})
    assert status_after_update(ctx, state) == testing.ActiveStatus("last run r2: PASS")


def test_last_run_fail(ctx: Ctx, disk: Path) -> None:
    write_run(disk, "r3", summary_data=summary(p99_ms=300.0, thresholds_ok=False))
    k6 = container(disk, service=pebble.ServiceStatus.ERROR)
    state = testing.State(containers={k6}, relations={otlp_relation()})
    assert status_after_update(ctx, state) == testing.ActiveStatus("last run r3: FAIL")


def test_last_run_stopped_and_error_say_so(ctx: Ctx, disk: Path) -> None:
    write_run(disk, "r4", summary_data=summary(duration_s=3.0), stopped=True)
    k6 = container(disk, service=pebble.ServiceStatus.INACTIVE)
    state = testing.State(containers={k6})
    # A run was made (with target=), so no Blocked although nothing is related.
    assert status_after_update(ctx, state) == testing.ActiveStatus("last run r4: FAIL (stopped)")


def test_related_endpoint_without_scheme_gets_one(ctx: Ctx, disk: Path) -> None:
    rel = otlp_relation(
        [{"protocol": "http", "endpoint": "otel:4318", "telemetries": ["logs"], "insecure": True}]
    )
    state = testing.State(leader=True, containers={container(disk)}, relations={rel})
    ctx.run(ctx.on.action("start-load", params={}), state)
    assert (ctx.action_results or {})["target"] == "http://otel:4318"


def test_related_endpoint_for_metrics_only_is_no_target(ctx: Ctx, disk: Path) -> None:
    rel = otlp_relation(
        [{"protocol": "http", "endpoint": OTLP_HTTP, "telemetries": ["metrics"], "insecure": True}]
    )
    state = testing.State(containers={container(disk)}, relations={rel})
    assert status_after_update(ctx, state) == testing.BlockedStatus(NO_TARGET)


def test_ca_certificates_are_written_and_removed(ctx: Ctx, disk: Path) -> None:
    rel = ca_relation(PEM_B, PEM_A)
    state = testing.State(leader=True, containers={container(disk)}, relations={rel})
    created = ctx.run(ctx.on.relation_created(rel), state)
    # The leader tells the provider it speaks certificate_transfer v1.
    assert created.get_relation(rel.id).local_app_data == {"version": "1"}
    out = ctx.run(ctx.on.relation_changed(created.get_relation(rel.id), remote_unit=0), created)
    bundle = (disk / "etc-k6" / "ca" / "bundle.pem").read_text()
    assert PEM_A in bundle
    assert PEM_B in bundle
    gone = ctx.run(ctx.on.relation_broken(out.get_relation(rel.id)), out)
    assert not (disk / "etc-k6" / "ca" / "bundle.pem").exists()
    assert gone.unit_status == testing.BlockedStatus(NO_TARGET)


def test_ca_from_a_v0_provider_unit(ctx: Ctx, disk: Path) -> None:
    rel = testing.Relation(
        "receive-ca-cert",
        remote_units_data={
            0: {
                "ca": json.dumps(PEM_A),
                "certificate": json.dumps(PEM_A),
                "chain": json.dumps([PEM_A]),
                "version": "0",
            }
        },
    )
    state = testing.State(containers={container(disk)}, relations={rel})
    ctx.run(ctx.on.relation_changed(rel, remote_unit=0), state)
    assert PEM_A in (disk / "etc-k6" / "ca" / "bundle.pem").read_text()


def test_remote_write_takes_the_first_valid_url(ctx: Ctx, disk: Path) -> None:
    other = PROM_RW.replace("prometheus-0", "prometheus-1")
    rel = remote_write_relation(other, PROM_RW)
    bad = testing.Relation(
        "send-remote-write",
        remote_app_name="junk",
        remote_units_data={0: {"remote_write": "not json"}, 1: {"remote_write": '{"url": 5}'}},
    )
    state = testing.State(
        leader=True, containers={container(disk)}, relations={rel, bad, otlp_relation()}
    )
    with ctx(ctx.on.update_status(), state) as manager:
        assert manager.charm.remote_write.urls == sorted([other, PROM_RW])
        assert manager.charm.remote_write.url == PROM_RW
        manager.run()


def test_no_remote_write_relation_no_url(ctx: Ctx, disk: Path) -> None:
    state = testing.State(containers={container(disk)})
    with ctx(ctx.on.update_status(), state) as manager:
        assert manager.charm.remote_write.url is None
        manager.run()
