"""start-load with scenario=otlp-metrics|loki-push: each scenario's script and parameters reach
k6; otlp-metrics goes to the related collector's endpoint that takes metrics, loki-push to the
target given (Loki's own push API, no relation of the charm names it); another scenario's
parameter, a bad value or a loki-push without its target fail, naming it, and start nothing."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml
from fakes import CHARM_DIR, OTLP_HTTP, PEM_A, ca_relation, container, otlp_relation
from ops import testing

from charm import K6Charm

Ctx = testing.Context[K6Charm]
LOKI = "https://loki-0.loki-endpoints.cos.svc.cluster.local:3100"


def started(out: testing.State) -> tuple[list[str], dict[str, str]]:
    """The k6 argv of the started service and its -e script variables."""
    argv = shlex.split(out.get_container("k6").plan.services["k6"].command)
    pairs = [argv[i + 1] for i, arg in enumerate(argv) if arg == "-e"]
    return argv, dict(p.split("=", 1) for p in pairs)


def test_otlp_metrics_runs_its_script_against_the_collector(ctx: Ctx, disk: Path) -> None:
    state = testing.State(leader=True, containers={container(disk)}, relations={otlp_relation()})
    params = {"scenario": "otlp-metrics", "series-per-request": 12, "points-per-series": 3,
              "histogram-buckets": 5, "rate": 36000}  # fmt: skip
    out = ctx.run(ctx.on.action("start-load", params=params), state)
    argv, env = started(out)
    assert argv[-1] == "/etc/k6/scripts/otlp-metrics.js"
    assert env["LOAD_TARGET"] == OTLP_HTTP
    assert (env["LOAD_SERIES_PER_REQUEST"], env["LOAD_POINTS_PER_SERIES"]) == ("12", "3")
    assert env["LOAD_HISTOGRAM_BUCKETS"] == "5"
    assert "LOAD_LOGS_PER_REQUEST" not in env
    assert env["LOAD_MIN_LOGS_PER_MINUTE"] == "34200"  # 95 % of 36,000 points
    results = ctx.action_results or {}
    record = json.loads((disk / "var-lib-k6" / "runs" / results["run-id"] / "run.json").read_text())
    assert record["params"]["scenario"] == "otlp-metrics"
    assert "body-min" not in record["params"]


def test_otlp_metrics_needs_an_endpoint_that_takes_metrics(ctx: Ctx, disk: Path) -> None:
    logs_only = otlp_relation(
        [{"protocol": "http", "endpoint": OTLP_HTTP, "telemetries": ["logs"], "insecure": True}]
    )
    state = testing.State(leader=True, containers={container(disk)}, relations={logs_only})
    with pytest.raises(testing.ActionFailed) as failed:
        ctx.run(ctx.on.action("start-load", params={"scenario": "otlp-metrics"}), state)
    assert "no OTLP target" in failed.value.message
    # The same relation serves otlp-logs.
    out = ctx.run(ctx.on.action("start-load", params={}), state)
    assert started(out)[1]["LOAD_TARGET"] == OTLP_HTTP


def test_loki_push_goes_to_the_target_given_trusting_the_related_ca(ctx: Ctx, disk: Path) -> None:
    state = testing.State(
        leader=True, containers={container(disk)}, relations={otlp_relation(), ca_relation(PEM_A)}
    )
    params = {"scenario": "loki-push", "target": LOKI, "streams-per-request": 4,
              "lines-per-stream": 25, "loki-streams": 400, "body-max": 512}  # fmt: skip
    out = ctx.run(ctx.on.action("start-load", params=params), state)
    argv, env = started(out)
    assert argv[-1] == "/etc/k6/scripts/loki-push.js"
    assert env["LOAD_TARGET"] == LOKI  # never the related collector
    assert (env["LOAD_STREAMS_PER_REQUEST"], env["LOAD_LINES_PER_STREAM"]) == ("4", "25")
    assert (env["LOAD_LOKI_STREAMS"], env["LOAD_BODY_MAX"]) == ("400", "512")
    service = out.get_container("k6").plan.services["k6"]
    assert service.environment["SSL_CERT_FILE"] == "/etc/k6/ca/bundle.pem"


def juju_defaults() -> dict[str, Any]:
    """What `juju run` fills in from the schema before the charm sees the parameters."""
    meta = yaml.safe_load((CHARM_DIR / "charmcraft.yaml").read_text())
    params = meta["actions"]["start-load"]["params"]
    return {name: spec["default"] for name, spec in params.items() if "default" in spec}


@pytest.mark.parametrize("scenario", ["otlp-metrics", "loki-push"])
def test_the_defaults_juju_fills_in_do_not_stop_another_scenario(
    ctx: Ctx, disk: Path, scenario: str
) -> None:
    """Juju fills in otlp-logs' schema defaults (logs-per-request=5, …) whatever the scenario:
    the charm drops those that do not apply to it, and the run starts."""
    state = testing.State(leader=True, containers={container(disk)}, relations={otlp_relation()})
    params = {**juju_defaults(), "scenario": scenario, "target": LOKI if scenario == "loki-push"
              else ""}  # fmt: skip
    assert params["logs-per-request"] == 5
    out = ctx.run(ctx.on.action("start-load", params=params), state)
    argv, env = started(out)
    assert argv[-1] == f"/etc/k6/scripts/{scenario}.js"
    assert "LOAD_LOGS_PER_REQUEST" not in env
    assert ("LOAD_BODY_MIN" in env) == (scenario == "loki-push")


def test_loki_push_without_a_target_fails_naming_it(ctx: Ctx, disk: Path) -> None:
    state = testing.State(leader=True, containers={container(disk)}, relations={otlp_relation()})
    with pytest.raises(testing.ActionFailed) as failed:
        ctx.run(ctx.on.action("start-load", params={"scenario": "loki-push"}), state)
    assert failed.value.message == "loki-push needs target=: the base URL of Loki (its push API)"
    out = failed.value.state
    assert isinstance(out, testing.State)
    assert "k6" not in out.get_container("k6").plan.services


BAD: list[tuple[dict[str, Any], str, str]] = [
    ({"scenario": "otlp-metrics", "logs-per-request": 7}, "logs-per-request",
     "applies to otlp-logs only, not otlp-metrics"),
    ({"scenario": "loki-push", "target": LOKI, "series-per-request": 3}, "series-per-request",
     "applies to otlp-metrics only, not loki-push"),
    ({"scenario": "otlp-metrics", "points-per-series": 0}, "points-per-series",
     "between 1 and 100"),
    ({"series-per-request": 12}, "series-per-request", "applies to otlp-metrics only"),
    ({"scenario": "loki-push", "target": LOKI, "streams-per-request": 9, "loki-streams": 3},
     "streams-per-request", "must not exceed loki-streams (3)"),
    ({"scenario": "loki-push", "target": f"{LOKI}/loki/api/v1/push"}, "target",
     "(/loki/api/v1/push is added)"),
    ({"scenario": "otlp-traces"}, "scenario", "otlp-logs, otlp-metrics, loki-push"),
]  # fmt: skip


@pytest.mark.parametrize(("params", "name", "allowed"), BAD)
def test_bad_scenario_parameters_fail_naming_them(
    ctx: Ctx, disk: Path, params: dict[str, Any], name: str, allowed: str
) -> None:
    state = testing.State(leader=True, containers={container(disk)}, relations={otlp_relation()})
    with pytest.raises(testing.ActionFailed) as failed:
        ctx.run(ctx.on.action("start-load", params=params), state)
    assert f"{name}: " in failed.value.message
    assert allowed in failed.value.message
    assert not (disk / "var-lib-k6" / "runs").exists()
