"""start-load with scenario=otlp-metrics|loki-push|otlp-traces|logql-query: each scenario's
script and parameters reach k6; otlp-metrics and otlp-traces go to the related collector's
endpoint that takes their telemetry, loki-push and logql-query to the target given (Loki's own
push and query APIs, no relation of the charm names them); another scenario's parameter, a bad
value or a Loki scenario without its target fail, naming it, and start nothing."""

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


def test_otlp_traces_runs_its_script_against_the_collector(ctx: Ctx, disk: Path) -> None:
    state = testing.State(leader=True, containers={container(disk)}, relations={otlp_relation()})
    params = {"scenario": "otlp-traces", "traces-per-request": 4, "spans-per-trace": 8,
              "span-attributes": 30, "attribute-size": 64, "rate": 32000}  # fmt: skip
    out = ctx.run(ctx.on.action("start-load", params=params), state)
    argv, env = started(out)
    assert argv[-1] == "/etc/k6/scripts/otlp-traces.js"
    assert env["LOAD_TARGET"] == OTLP_HTTP
    assert (env["LOAD_TRACES_PER_REQUEST"], env["LOAD_SPANS_PER_TRACE"]) == ("4", "8")
    assert (env["LOAD_SPAN_ATTRIBUTES"], env["LOAD_ATTRIBUTE_SIZE"]) == ("30", "64")
    assert env["LOAD_RATE"] == "32000"
    assert env["LOAD_MIN_LOGS_PER_MINUTE"] == "30400"  # 95 % of 32,000 spans
    assert "LOAD_LOGS_PER_REQUEST" not in env


def test_otlp_traces_needs_an_endpoint_that_takes_traces(ctx: Ctx, disk: Path) -> None:
    no_traces = otlp_relation(
        [{"protocol": "http", "endpoint": OTLP_HTTP, "telemetries": ["logs", "metrics"],
          "insecure": True}]
    )  # fmt: skip
    state = testing.State(leader=True, containers={container(disk)}, relations={no_traces})
    with pytest.raises(testing.ActionFailed) as failed:
        ctx.run(ctx.on.action("start-load", params={"scenario": "otlp-traces"}), state)
    assert "no OTLP target" in failed.value.message


def test_logql_query_queries_the_target_given_at_its_own_rates(ctx: Ctx, disk: Path) -> None:
    state = testing.State(
        leader=True, containers={container(disk)}, relations={otlp_relation(), ca_relation(PEM_A)}
    )
    params = {"scenario": "logql-query", "target": LOKI, "push-rate": 12000, "query-window": 120,
              "loki-streams": 50, "p99-ms": 3000}  # fmt: skip
    out = ctx.run(ctx.on.action("start-load", params=params), state)
    argv, env = started(out)
    assert argv[-1] == "/etc/k6/scripts/logql-query.js"
    assert env["LOAD_TARGET"] == LOKI  # never the related collector
    assert (env["LOAD_PUSH_RATE"], env["LOAD_QUERY_WINDOW"]) == ("12000", "120")
    assert env["LOAD_RATE"] == "600"  # its own default: queries per minute
    assert env["LOAD_MIN_LOGS_PER_MINUTE"] == "570"
    assert (env["LOAD_LOKI_STREAMS"], env["LOAD_P99_MS"]) == ("50", "3000")
    service = out.get_container("k6").plan.services["k6"]
    assert service.environment["SSL_CERT_FILE"] == "/etc/k6/ca/bundle.pem"


LOKI_SCENARIOS = ("loki-push", "logql-query")


@pytest.mark.parametrize("scenario", ["otlp-metrics", "loki-push", "otlp-traces", "logql-query"])
def test_the_defaults_juju_fills_in_do_not_stop_another_scenario(
    ctx: Ctx, disk: Path, scenario: str
) -> None:
    """Juju fills in otlp-logs' schema defaults (logs-per-request=5, …) whatever the scenario:
    the charm drops those that do not apply to it, and the run starts."""
    state = testing.State(leader=True, containers={container(disk)}, relations={otlp_relation()})
    params = {**juju_defaults(), "scenario": scenario, "target": LOKI if scenario in
              LOKI_SCENARIOS else ""}  # fmt: skip
    assert params["logs-per-request"] == 5
    out = ctx.run(ctx.on.action("start-load", params=params), state)
    argv, env = started(out)
    assert argv[-1] == f"/etc/k6/scripts/{scenario}.js"
    assert "LOAD_LOGS_PER_REQUEST" not in env
    assert ("LOAD_BODY_MIN" in env) == (scenario in LOKI_SCENARIOS)


@pytest.mark.parametrize(
    ("scenario", "api"), [("loki-push", "its push API"), ("logql-query", "its push and query APIs")]
)
def test_a_loki_scenario_without_a_target_fails_naming_it(
    ctx: Ctx, disk: Path, scenario: str, api: str
) -> None:
    state = testing.State(leader=True, containers={container(disk)}, relations={otlp_relation()})
    with pytest.raises(testing.ActionFailed) as failed:
        ctx.run(ctx.on.action("start-load", params={"scenario": scenario}), state)
    assert failed.value.message == f"{scenario} needs target=: the base URL of Loki ({api})"
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
    ({"scenario": "otlp-spans"}, "scenario",
     "otlp-logs, otlp-metrics, loki-push, otlp-traces, logql-query"),
    ({"scenario": "otlp-traces", "spans-per-trace": 101}, "spans-per-trace", "between 1 and 100"),
    ({"scenario": "otlp-traces", "span-attributes": -1}, "span-attributes", "between 0 and 128"),
    ({"scenario": "otlp-traces", "attribute-size": 0}, "attribute-size", "between 1 and 16384"),
    ({"scenario": "otlp-traces", "lines-per-stream": 3}, "lines-per-stream",
     "applies to loki-push and logql-query only, not otlp-traces"),
    ({"scenario": "logql-query", "target": LOKI, "traces-per-request": 3}, "traces-per-request",
     "applies to otlp-traces only, not logql-query"),
    ({"scenario": "logql-query", "target": LOKI, "push-rate": 50}, "push-rate",
     "at least one push request (100 lines"),
    ({"scenario": "logql-query", "target": LOKI, "query-window": 0}, "query-window",
     "between 1 and 86400"),
    ({"scenario": "loki-push", "target": LOKI, "query-window": 30}, "query-window",
     "applies to logql-query only, not loki-push"),
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
