"""start-load: good parameters start k6 in the background; bad ones fail, naming the parameter."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml
from fakes import (
    OTLP_HTTP,
    PEM_A,
    PROM_RW,
    ca_relation,
    container,
    otlp_relation,
    remote_write_relation,
    write_run,
)
from ops import pebble, testing

from charm import K6Charm
from targets import NO_TARGET

Ctx = testing.Context[K6Charm]


def started_argv(out: testing.State) -> list[str]:
    service = out.get_container("k6").plan.services["k6"]
    return shlex.split(service.command)


def env_args(argv: list[str]) -> dict[str, str]:
    """The -e KEY=VALUE script variables of a k6 argv."""
    pairs = [argv[i + 1] for i, arg in enumerate(argv) if arg == "-e"]
    return dict(p.split("=", 1) for p in pairs)


def final_state(failed: pytest.ExceptionInfo[testing.ActionFailed]) -> testing.State:
    state = failed.value.state
    assert isinstance(state, testing.State)
    return state


def assert_nothing_started(out: testing.State) -> None:
    k6 = out.get_container("k6")
    assert "k6" not in k6.plan.services
    assert k6.service_statuses.get("k6") != pebble.ServiceStatus.ACTIVE
    for rel in out.relations:
        if rel.endpoint == "k6-peers":
            assert "run" not in rel.local_app_data


def test_starts_against_the_related_collector(ctx: Ctx, disk: Path) -> None:
    peers = testing.PeerRelation("k6-peers")
    state = testing.State(
        leader=True, containers={container(disk)}, relations={otlp_relation(), peers}
    )
    out = ctx.run(
        ctx.on.action("start-load", params={"rate": 120000, "duration": "10m", "labels": "rev=69"}),
        state,
    )
    results = ctx.action_results or {}
    run_id = results["run-id"]
    assert results["target"] == OTLP_HTTP
    assert results["units"] == "1"

    k6 = out.get_container("k6")
    assert k6.service_statuses["k6"] == pebble.ServiceStatus.ACTIVE
    service = k6.plan.services["k6"]
    assert service.startup == "disabled"
    assert service.on_success == "ignore"
    assert service.on_failure == "ignore"
    argv = started_argv(out)
    assert argv[:2] == ["/usr/bin/k6", "run"]
    assert argv[-1] == "/etc/k6/scripts/otlp-logs.js"
    assert f"--log-output=file=/var/lib/k6/runs/{run_id}/k6.log" in argv
    assert "--address=127.0.0.1:6565" in argv
    assert "--execution-segment" not in argv  # one unit: the whole load
    variables = env_args(argv)
    assert variables["LOAD_TARGET"] == OTLP_HTTP
    assert variables["LOAD_RATE"] == "120000"
    assert variables["LOAD_DURATION"] == "10m"
    assert variables["LOAD_LABELS"] == "rev=69"
    assert variables["LOAD_RUN_ID"] == run_id
    assert variables["LOAD_SUMMARY"] == f"/var/lib/k6/runs/{run_id}/summary.json"
    assert "experimental-prometheus-rw" not in argv  # no remote-write relation: no output
    assert "k6-running" in k6.plan.checks

    fs = k6.get_filesystem(ctx)
    assert (fs / "etc/k6/scripts/otlp-logs.js").is_file()
    assert (fs / "etc/k6/scripts/lib/config.js").is_file()
    record = json.loads((disk / "var-lib-k6" / "runs" / run_id / "run.json").read_text())
    assert record["params"]["rate"] == 120000
    assert record["segment"] == [0, 1]
    assert (disk / "var-lib-k6" / "runs" / "last").read_text() == run_id

    peer = out.get_relation(peers.id)
    request = json.loads(peer.local_app_data["run"])
    assert request["run_id"] == run_id
    assert request["units"] == ["k6/0"]
    assert json.loads(peer.local_unit_data["run"])["status"] == "running"
    assert out.unit_status == testing.ActiveStatus(f"running {run_id} (1/1 units)")


def test_target_parameter_needs_no_relation(ctx: Ctx, disk: Path) -> None:
    state = testing.State(leader=True, containers={container(disk)})
    out = ctx.run(
        ctx.on.action("start-load", params={"target": "https://otel.example.com:4318/"}), state
    )
    assert env_args(started_argv(out))["LOAD_TARGET"] == "https://otel.example.com:4318"


def test_target_parameter_overrides_the_relation(ctx: Ctx, disk: Path) -> None:
    state = testing.State(leader=True, containers={container(disk)}, relations={otlp_relation()})
    out = ctx.run(ctx.on.action("start-load", params={"target": "http://10.1.2.3:4318"}), state)
    assert env_args(started_argv(out))["LOAD_TARGET"] == "http://10.1.2.3:4318"


def test_remote_write_url_goes_to_k6(ctx: Ctx, disk: Path) -> None:
    state = testing.State(
        leader=True,
        containers={container(disk)},
        relations={otlp_relation(), remote_write_relation(PROM_RW)},
    )
    out = ctx.run(ctx.on.action("start-load", params={}), state)
    argv = started_argv(out)
    assert argv[argv.index("-o") + 1] == "experimental-prometheus-rw"
    env = out.get_container("k6").plan.services["k6"].environment
    assert env["K6_PROMETHEUS_RW_SERVER_URL"] == PROM_RW
    assert env["K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM"] == "true"


def test_related_ca_is_trusted_by_k6(ctx: Ctx, disk: Path) -> None:
    state = testing.State(
        leader=True, containers={container(disk)}, relations={otlp_relation(), ca_relation(PEM_A)}
    )
    out = ctx.run(ctx.on.action("start-load", params={}), state)
    env = out.get_container("k6").plan.services["k6"].environment
    assert env["SSL_CERT_FILE"] == "/etc/k6/ca/bundle.pem"
    assert PEM_A in (disk / "etc-k6" / "ca" / "bundle.pem").read_text()


BAD_PARAMS: list[tuple[dict[str, Any], str, str]] = [
    ({"body-min": 4096, "body-max": 1024}, "body-min", "must not exceed body-max"),
    ({"duration": "0s"}, "duration", "more than 0s"),
    ({"duration": "25h"}, "duration", "at most 24h"),
    ({"labels": "revision"}, "labels", "k=v"),
    ({"labels": "run_id=x"}, "labels", "reserved"),
    ({"executor": "constant-vus", "rate": 1000}, "rate", "arrival-rate executors"),
    ({"rate": 3, "logs-per-request": 5}, "rate", "per minute"),
    ({"target": "ftp://otel:4318"}, "target", "http:// or https://"),
    ({"target": "http://otel:4318/v1/logs"}, "target", "without a path"),
    ({"target": "http://[::1:4318"}, "target", "Invalid IPv6 URL"),
    ({"target": "http://collector:99999"}, "target", "port must be a number from 1 to 65535"),
    ({"target": "http://collector:0"}, "target", "port must be a number from 1 to 65535"),
    ({"run-id": "../x"}, "run-id", "starting with a letter or digit"),
    ({"max-error-rate": 1.5}, "max-error-rate", "at most 1"),
    ({"p99-ms": 0.0}, "p99-ms", "greater than 0"),
    ({"vus": 0}, "vus", "between 1 and"),
]


@pytest.mark.parametrize(("params", "name", "allowed"), BAD_PARAMS)
def test_bad_parameter_fails_naming_it_and_starts_nothing(
    ctx: Ctx, disk: Path, params: dict[str, Any], name: str, allowed: str
) -> None:
    peers = testing.PeerRelation("k6-peers")
    state = testing.State(
        leader=True, containers={container(disk)}, relations={otlp_relation(), peers}
    )
    with pytest.raises(testing.ActionFailed) as failed:
        ctx.run(ctx.on.action("start-load", params=params), state)
    assert f"{name}: " in failed.value.message
    assert allowed in failed.value.message
    assert_nothing_started(final_state(failed))
    assert not (disk / "var-lib-k6" / "runs").exists()


def test_every_bad_parameter_is_named_at_once(ctx: Ctx, disk: Path) -> None:
    state = testing.State(leader=True, containers={container(disk)}, relations={otlp_relation()})
    with pytest.raises(testing.ActionFailed) as failed:
        ctx.run(
            ctx.on.action("start-load", params={"duration": "soon", "labels": "x", "vus": 0}),
            state,
        )
    for name in ("duration", "labels", "vus"):
        assert f"{name}: " in failed.value.message


def test_no_target_anywhere_fails_and_blocks(ctx: Ctx, disk: Path) -> None:
    state = testing.State(leader=True, containers={container(disk)})
    with pytest.raises(testing.ActionFailed) as failed:
        ctx.run(ctx.on.action("start-load", params={}), state)
    assert failed.value.message == NO_TARGET
    assert_nothing_started(final_state(failed))
    assert final_state(failed).unit_status == testing.BlockedStatus(NO_TARGET)


def test_grpc_only_relation_is_no_target(ctx: Ctx, disk: Path) -> None:
    grpc_only = otlp_relation(
        [{"protocol": "grpc", "endpoint": "otelcol-0:4317", "telemetries": ["logs"]}]
    )
    state = testing.State(leader=True, containers={container(disk)}, relations={grpc_only})
    with pytest.raises(testing.ActionFailed) as failed:
        ctx.run(ctx.on.action("start-load", params={}), state)
    assert failed.value.message == NO_TARGET


def test_refused_while_a_run_is_going_on(ctx: Ctx, disk: Path) -> None:
    write_run(disk, "busy-run")
    k6 = container(disk, service=pebble.ServiceStatus.ACTIVE)
    state = testing.State(leader=True, containers={k6}, relations={otlp_relation()})
    with pytest.raises(testing.ActionFailed) as failed:
        ctx.run(ctx.on.action("start-load", params={}), state)
    assert "busy-run is going on" in failed.value.message
    assert "stop-load" in failed.value.message
    assert (
        final_state(failed).get_container("k6").plan.services["k6"].command.endswith("otlp-logs.js")
    )
    assert sorted(p.name for p in (disk / "var-lib-k6" / "runs").iterdir()) == ["busy-run", "last"]


def test_refused_while_a_peer_still_runs(ctx: Ctx, disk: Path) -> None:
    peers = testing.PeerRelation(
        "k6-peers",
        peers_data={1: {"run": json.dumps({"run_id": "old", "status": "running"})}},
    )
    state = testing.State(
        leader=True, containers={container(disk)}, relations={otlp_relation(), peers}
    )
    with pytest.raises(testing.ActionFailed) as failed:
        ctx.run(ctx.on.action("start-load", params={}), state)
    assert "old is going on" in failed.value.message
    assert_nothing_started(final_state(failed))


def test_only_the_leader_starts(ctx: Ctx, disk: Path) -> None:
    state = testing.State(leader=False, containers={container(disk)}, relations={otlp_relation()})
    with pytest.raises(testing.ActionFailed) as failed:
        ctx.run(ctx.on.action("start-load", params={}), state)
    assert "leader" in failed.value.message
    assert_nothing_started(final_state(failed))


def test_container_not_ready(ctx: Ctx, disk: Path) -> None:
    state = testing.State(
        leader=True, containers={container(disk, can_connect=False)}, relations={otlp_relation()}
    )
    with pytest.raises(testing.ActionFailed) as failed:
        ctx.run(ctx.on.action("start-load", params={}), state)
    assert "not ready" in failed.value.message
    assert final_state(failed).unit_status == testing.WaitingStatus(
        "waiting for the k6 container (Pebble)"
    )


def test_leader_splits_the_load_over_three_units(ctx: Ctx, disk: Path) -> None:
    peers = testing.PeerRelation("k6-peers", peers_data={1: {}, 2: {}})
    state = testing.State(
        leader=True, containers={container(disk)}, relations={otlp_relation(), peers}
    )
    out = ctx.run(
        ctx.on.action("start-load", params={"rate": 60000, "min-logs-per-minute": 57000}), state
    )
    argv = started_argv(out)
    assert argv[argv.index("--execution-segment") + 1] == "0:1/3"
    assert argv[argv.index("--execution-segment-sequence") + 1] == "0,1/3,2/3,1"
    # k6 thresholds are per process: each unit checks its share of the records-per-minute gate.
    assert env_args(argv)["LOAD_MIN_LOGS_PER_MINUTE"] == "19000"
    request = json.loads(out.get_relation(peers.id).local_app_data["run"])
    assert request["units"] == ["k6/0", "k6/1", "k6/2"]
    assert request["params"]["min-logs-per-minute"] == 57000
    assert request["stopped"] is False
    assert (ctx.action_results or {})["units"] == "3"
    run_id = request["run_id"]
    assert out.unit_status == testing.ActiveStatus(f"running {run_id} (1/3 units)")


def juju_defaults() -> dict[str, Any]:
    """The start-load parameters Juju fills in from the schema defaults in charmcraft.yaml."""
    meta = yaml.safe_load((Path(__file__).resolve().parents[2] / "charmcraft.yaml").read_text())
    params = meta["actions"]["start-load"]["params"]
    return {name: spec["default"] for name, spec in params.items() if "default" in spec}


@pytest.mark.parametrize(
    "given", [{}, {"executor": "constant-vus", "vus": 4}, {"executor": "ramping-arrival-rate"}]
)
def test_schema_defaults_as_juju_applies_them_are_valid(
    ctx: Ctx, disk: Path, given: dict[str, Any]
) -> None:
    state = testing.State(leader=True, containers={container(disk)}, relations={otlp_relation()})
    out = ctx.run(ctx.on.action("start-load", params={**juju_defaults(), **given}), state)
    assert out.get_container("k6").service_statuses["k6"] == pebble.ServiceStatus.ACTIVE
    variables = env_args(started_argv(out))
    assert variables["LOAD_EXECUTOR"] == given.get("executor", "constant-arrival-rate")
    if given.get("executor") == "constant-vus":
        assert "LOAD_RATE" not in variables
    else:
        assert variables["LOAD_RATE"] == "60000"


def test_the_models_proxy_settings_reach_k6(
    ctx: Ctx, disk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Juju gives the charm the model's juju-http(s)-proxy / juju-no-proxy; k6 (Go) reads these."""
    monkeypatch.setenv("JUJU_CHARM_HTTP_PROXY", "http://squid.internal:3128")
    monkeypatch.setenv("JUJU_CHARM_HTTPS_PROXY", "http://squid.internal:3129")
    monkeypatch.setenv("JUJU_CHARM_NO_PROXY", "127.0.0.1,localhost,.svc.cluster.local")
    state = testing.State(leader=True, containers={container(disk)}, relations={otlp_relation()})
    out = ctx.run(ctx.on.action("start-load", params={}), state)
    env = out.get_container("k6").plan.services["k6"].environment
    assert env["HTTP_PROXY"] == "http://squid.internal:3128"
    assert env["HTTPS_PROXY"] == "http://squid.internal:3129"
    assert env["NO_PROXY"] == "127.0.0.1,localhost,.svc.cluster.local"
    assert env["GOGC"] == "400"  # k6's own settings are still there


def test_no_proxy_settings_no_proxy_variables(
    ctx: Ctx, disk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("JUJU_CHARM_HTTP_PROXY", "JUJU_CHARM_HTTPS_PROXY", "JUJU_CHARM_NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("JUJU_CHARM_HTTPS_PROXY", "")  # unset in the model: Juju passes it empty
    state = testing.State(leader=True, containers={container(disk)}, relations={otlp_relation()})
    out = ctx.run(ctx.on.action("start-load", params={}), state)
    env = out.get_container("k6").plan.services["k6"].environment
    assert not {"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"} & set(env)


def test_send_remote_write_takes_one_prometheus() -> None:
    """k6 writes to one URL: the endpoint says so, and Juju refuses a second relation."""
    meta = yaml.safe_load((Path(__file__).resolve().parents[2] / "charmcraft.yaml").read_text())
    assert meta["requires"]["send-remote-write"]["limit"] == 1
