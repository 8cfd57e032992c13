"""The scenario registry (contract/scenarios.py, measure/scenarios.py) and what derives from it:
each scenario's parameters, validation (another scenario's parameter refused, bounds named),
its k6 command and its gates' names."""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from loadgate.contract import k6args
from loadgate.contract import scenarios as reg
from loadgate.contract.gates import judge, lost_gate
from loadgate.contract.params import BY_NAME, PARAMS, SCENARIOS
from loadgate.contract.spec import RunSpec, SpecError
from loadgate.contract.summary import ClientFigures
from loadgate.measure import scenarios as measures

ROOT = Path(__file__).resolve().parents[2]
NEW = [reg.OTLP_METRICS, reg.LOKI_PUSH, reg.OTLP_TRACES, reg.LOGQL_QUERY]


def test_every_scenario_is_registered_once_with_a_script_and_its_measures() -> None:
    assert SCENARIOS == reg.NAMES == (
        "otlp-logs", "otlp-metrics", "loki-push", "otlp-traces", "logql-query",
    )  # fmt: skip
    assert list(measures.BY_NAME) == list(reg.NAMES)
    assert {s.name: s.script for s in reg.ALL} == k6args.SCENARIO_FILES
    for kind in reg.ALL:
        assert (ROOT / "k6" / kind.script).is_file(), kind.script
        assert set(kind.per_request) <= set(kind.params), kind.name
        assert all(p in BY_NAME for p in kind.params), kind.name
        assert measures.of(kind.name).scenario is kind
    for field in ("per_minute_gate", "sent_metric", "accepted_metric", "unit"):
        values = [getattr(s, field) for s in reg.ALL]
        assert len(set(values)) == len(values), field
    # A delivery gate per unit a ledger counts: logql-query's ledger counts lines, as
    # loki-push's does, under the same gate; every other unit has a gate of its own.
    lost = {s.as_ledger().unit: s.lost_gate for s in reg.ALL}
    assert len(set(lost.values())) == len(lost) == len(reg.ALL) - 1
    assert reg.LOGQL_QUERY.lost_gate == reg.LOKI_PUSH.lost_gate == "lost_lines"


def test_what_each_scenario_measures() -> None:
    logs, metrics, push, traces, query = (measures.of(s.name) for s in reg.ALL)
    assert (logs.own_logs, logs.through_collector, logs.store.name) == (True, True, "loki")
    assert (metrics.own_logs, metrics.through_collector) == (False, True)
    assert metrics.store.name == "prometheus"
    assert metrics.signals == ("logs", "metrics")
    assert metrics.exporter == "prometheusremotewrite.*"
    assert (push.own_logs, push.through_collector, push.store.name) == (False, False, "loki")
    assert (traces.own_logs, traces.through_collector) == (False, True)
    assert traces.store.name == "traces-standin"
    assert traces.signals == ("logs", "traces")
    assert traces.exporter == "otlphttp/send-traces.*"
    assert traces.backend == "traces"
    assert (query.own_logs, query.through_collector, query.store.name) == (False, False, "loki")
    assert (query.reads, push.reads, traces.reads) == (True, False, False)
    with pytest.raises(KeyError, match="otlp-logs, otlp-metrics, loki-push, otlp-traces, logql"):
        measures.of("otlp-profiles")


def test_a_parameter_is_common_or_some_scenarios_own() -> None:
    own = {p for s in reg.ALL for p in s.params}
    assert own == reg.OWN_PARAMS
    common = [p.name for p in PARAMS if p.name not in own]
    assert {"scenario", "executor", "vus", "rate", "duration", "p99-ms", "labels"} <= set(common)
    assert reg.takers("body-min") == ("otlp-logs", "loki-push", "logql-query")
    assert reg.takers("loki-streams") == ("loki-push", "logql-query")
    assert reg.takers("spans-per-trace") == ("otlp-traces",)
    assert reg.applies("vus", reg.OTLP_METRICS)
    assert not reg.applies("logs-per-request", reg.OTLP_METRICS)
    # The later scenarios' own parameters have no action-schema default: Juju would fill it in
    # for every scenario, and the others refuse it. otlp-logs' keep theirs (the charm drops
    # them, at their default, for another scenario: below).
    later = own - set(reg.OTLP_LOGS.params)
    assert later
    assert all(not BY_NAME[p].schema_default for p in later)
    assert all(BY_NAME[p].schema_default for p in reg.OTLP_LOGS.params if BY_NAME[p].action)


def test_what_juju_filled_in_for_another_scenario_is_dropped_not_refused() -> None:
    defaults = {p.name: p.default for p in PARAMS}
    filled = {"logs-per-request": 5, "body-min": 256, "body-max": 2048, "vus": 10}
    metrics = reg.without_filled_defaults({"scenario": "otlp-metrics", **filled}, defaults)
    assert metrics == {"scenario": "otlp-metrics", "vus": 10}
    assert RunSpec.from_params(metrics).kind is reg.OTLP_METRICS
    push = reg.without_filled_defaults({"scenario": "loki-push", **filled}, defaults)
    assert push == {"scenario": "loki-push", "body-min": 256, "body-max": 2048, "vus": 10}
    # A value that is not the default was asked for: it stays, and the scenario refuses it.
    asked = reg.without_filled_defaults({"scenario": "otlp-metrics", "body-min": 100}, defaults)
    with pytest.raises(
        SpecError, match="body-min: applies to otlp-logs, loki-push and logql-query only"
    ):
        RunSpec.from_params(asked)
    traces = reg.without_filled_defaults({"scenario": "otlp-traces", **filled}, defaults)
    assert traces == {"scenario": "otlp-traces", "vus": 10}
    query = reg.without_filled_defaults({"scenario": "logql-query", **filled}, defaults)
    assert query == {"scenario": "logql-query", "body-min": 256, "body-max": 2048, "vus": 10}
    logs = {"scenario": "otlp-logs", **filled}
    assert reg.without_filled_defaults(logs, defaults) == logs


@pytest.mark.parametrize(
    ("params", "units", "per_minute"),
    [
        ({"scenario": "otlp-metrics"}, 50, 1200),  # 10 series x 5 points
        ({"scenario": "otlp-metrics", "series-per-request": 3, "points-per-series": 7}, 21, 2857),
        ({"scenario": "loki-push"}, 100, 600),  # 10 streams x 10 lines
        ({"scenario": "loki-push", "streams-per-request": 2, "lines-per-stream": 4}, 8, 7500),
        ({"scenario": "otlp-traces"}, 45, 1333),  # 5 traces x 9 spans
        ({"scenario": "otlp-traces", "traces-per-request": 2, "spans-per-trace": 6}, 12, 5000),
        ({"scenario": "logql-query"}, 1, 60_000),  # a query a request: the rate is queries
    ],
)
def test_units_per_request_and_the_arrival_rate(
    params: dict[str, Any], units: int, per_minute: int
) -> None:
    spec = RunSpec.from_params({**params, "rate": 60_000})
    assert spec.units_per_request == units
    assert spec.records_per_iteration == units
    assert spec.iterations_per_minute == per_minute
    assert spec.effective_min_logs_per_minute == int(0.95 * per_minute * units)


@pytest.mark.parametrize(
    ("params", "field", "fragment"),
    [
        ({"scenario": "otlp-metrics", "logs-per-request": 5}, "logs-per-request",
         "applies to otlp-logs only, not otlp-metrics"),
        ({"scenario": "otlp-metrics", "body-min": 10}, "body-min",
         "applies to otlp-logs, loki-push and logql-query only, not otlp-metrics"),
        ({"series-per-request": 3}, "series-per-request", "applies to otlp-metrics only"),
        ({"scenario": "loki-push", "points-per-series": 2}, "points-per-series", "otlp-metrics"),
        ({"scenario": "otlp-metrics", "series-per-request": 0}, "series-per-request",
         "between 1 and 1000"),
        ({"scenario": "otlp-metrics", "points-per-series": 101}, "points-per-series",
         "between 1 and 100"),
        ({"scenario": "otlp-metrics", "histogram-buckets": "x"}, "histogram-buckets",
         "integer"),
        ({"scenario": "loki-push", "lines-per-stream": 1001}, "lines-per-stream",
         "between 1 and 1000"),
        ({"scenario": "loki-push", "loki-streams": 0}, "loki-streams", "between 1 and 100000"),
        ({"scenario": "loki-push", "streams-per-request": 20, "loki-streams": 10},
         "streams-per-request", "must not exceed loki-streams (10)"),
        ({"scenario": "otlp-metrics", "rate": 10}, "rate",
         "at least one iteration (50 points) per minute"),
        ({"scenario": "loki-push", "target": "https://loki:3100/loki/api/v1/push"}, "target",
         "(/loki/api/v1/push is added)"),
        ({"scenario": "loki-push", "target": "ftp://loki"}, "target", "URL of Loki"),
        ({"scenario": "otlp-spans"}, "scenario",
         "otlp-logs, otlp-metrics, loki-push, otlp-traces, logql-query"),
        ({"scenario": "otlp-traces", "traces-per-request": 0}, "traces-per-request",
         "between 1 and 1000"),
        ({"scenario": "otlp-traces", "spans-per-trace": 101}, "spans-per-trace",
         "between 1 and 100"),
        ({"scenario": "otlp-traces", "span-attributes": 129}, "span-attributes",
         "between 0 and 128"),
        ({"scenario": "otlp-traces", "attribute-size": 16385}, "attribute-size",
         "between 1 and 16384"),
        ({"scenario": "otlp-traces", "attribute-size": 2.5}, "attribute-size", "integer"),
        ({"scenario": "otlp-traces", "rate": 44}, "rate",
         "at least one iteration (45 spans) per minute"),
        ({"scenario": "otlp-traces", "target": "https://otelcol:4318/v1/traces"}, "target",
         "(/v1/traces is added)"),
        ({"scenario": "otlp-logs", "span-attributes": 3}, "span-attributes",
         "applies to otlp-traces only, not otlp-logs"),
        ({"scenario": "logql-query", "push-rate": 99}, "push-rate",
         "at least one push request (100 lines: streams-per-request x lines-per-stream)"),
        ({"scenario": "logql-query", "push-rate": 0}, "push-rate", "between 1 and 1000000000"),
        ({"scenario": "logql-query", "query-window": 86401}, "query-window",
         "between 1 and 86400"),
        ({"scenario": "logql-query", "target": "https://loki:3100/loki/api/v1/query"},
         "target", "(/loki/api/v1/query is added)"),
        ({"scenario": "logql-query", "target": "ftp://loki"}, "target", "URL of Loki"),
        ({"scenario": "loki-push", "push-rate": 6000}, "push-rate",
         "applies to logql-query only, not loki-push"),
        ({"scenario": "logql-query", "histogram-buckets": 3}, "histogram-buckets",
         "applies to otlp-metrics only, not logql-query"),
    ],
)  # fmt: skip
def test_bad_scenario_parameters_are_named(
    params: dict[str, Any], field: str, fragment: str
) -> None:
    with pytest.raises(SpecError) as info:
        RunSpec.from_params(params)
    messages = dict(info.value.problems)
    assert field in messages, info.value.problems
    assert fragment in messages[field]


def test_loki_push_needs_its_target_named_as_loki() -> None:
    with pytest.raises(SpecError, match="target: is required: an http"):
        RunSpec.from_params({"scenario": "loki-push"}, require_target=True)
    with pytest.raises(SpecError, match="URL of Loki"):
        RunSpec.from_params({"scenario": "loki-push"}, require_target=True)


@pytest.mark.parametrize("kind", reg.ALL, ids=[s.name for s in reg.ALL])
def test_to_params_holds_the_scenarios_parameters_and_round_trips(kind: reg.Scenario) -> None:
    spec = RunSpec.from_params({"scenario": kind.name, "run-id": "r1", "labels": "rev=1"})
    params = spec.to_params()
    assert RunSpec.from_params(params) == spec
    others = reg.OWN_PARAMS - set(kind.params)
    assert not others & set(params)
    assert set(kind.params) <= set(params)
    d = spec.to_dict()
    assert not {p.replace("-", "_") for p in others} & set(d)
    assert {p.replace("-", "_") for p in kind.params} <= set(d)


def test_the_logs_spec_dict_is_what_it_was() -> None:
    """otlp-logs records keep their shape: no other scenario's field in `spec`."""
    d = RunSpec.from_params({"run-id": "r1"}).to_dict()
    assert set(d) == {
        "scenario", "executor", "vus", "rate", "duration", "logs_per_request",
        "requests_per_iteration", "body_min", "body_max", "p99_ms", "max_error_rate",
        "min_logs_per_minute", "labels", "target", "run_id", "streams", "duration_s",
        "iterations_per_minute", "effective_min_logs_per_minute",
    }  # fmt: skip


def _env(argv: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for flag, value in itertools.pairwise(argv):
        if flag == "-e":
            key, _, val = value.partition("=")
            out[key] = val
    return out


COMMON = {
    "LOAD_TARGET", "LOAD_EXECUTOR", "LOAD_VUS", "LOAD_DURATION", "LOAD_REQUESTS_PER_ITERATION",
    "LOAD_P99_MS", "LOAD_MAX_ERROR_RATE", "LOAD_MIN_LOGS_PER_MINUTE", "LOAD_RUN_ID",
    "LOAD_INSTANCE", "LOAD_LABELS", "LOAD_SUMMARY", "LOAD_RATE", "LOAD_PREALLOCATED_VUS",
    "LOAD_MAX_VUS",
}  # fmt: skip


def test_the_k6_command_of_otlp_metrics_carries_its_own_parameters() -> None:
    spec = RunSpec.from_params(
        {"scenario": "otlp-metrics", "series-per-request": 4, "points-per-series": 3,
         "histogram-buckets": 6, "rate": 1200, "run-id": "m1"}
    )  # fmt: skip
    cmd = k6args.build_command(
        spec, k6_bin="/bin/k6", scripts_dir="/k6", target="http://127.0.0.1:4318",
        summary_path="/out/s.json",
    )  # fmt: skip
    assert cmd.argv[-1] == str(Path("/k6/otlp-metrics.js"))
    env = _env(cmd.argv)
    assert set(env) == COMMON | {
        "LOAD_SERIES_PER_REQUEST", "LOAD_POINTS_PER_SERIES", "LOAD_HISTOGRAM_BUCKETS",
    }  # fmt: skip
    assert (env["LOAD_SERIES_PER_REQUEST"], env["LOAD_POINTS_PER_SERIES"]) == ("4", "3")
    assert env["LOAD_HISTOGRAM_BUCKETS"] == "6"
    assert env["LOAD_MIN_LOGS_PER_MINUTE"] == str(spec.effective_min_logs_per_minute)


def test_the_k6_command_of_loki_push_resolves_lokis_name_itself() -> None:
    spec = RunSpec.from_params({"scenario": "loki-push", "run-id": "p1", "loki-streams": 50})
    name = "loki-0.loki-endpoints.loadgate.svc.cluster.local"
    cmd = k6args.build_command(
        spec, k6_bin="/bin/k6", scripts_dir="/k6", target=f"https://{name}:3100",
        summary_path="/out/s.json", ca_file="/tls/ca.crt", hosts={name: "127.0.0.1"},
    )  # fmt: skip
    assert cmd.argv[-1] == str(Path("/k6/loki-push.js"))
    env = _env(cmd.argv)
    assert set(env) == COMMON | {
        "LOAD_STREAMS_PER_REQUEST", "LOAD_LINES_PER_STREAM", "LOAD_LOKI_STREAMS",
        "LOAD_BODY_MIN", "LOAD_BODY_MAX", "LOAD_HOSTS",
    }  # fmt: skip
    assert env["LOAD_HOSTS"] == f"{name}=127.0.0.1"
    assert env["LOAD_LOKI_STREAMS"] == "50"
    assert cmd.env["SSL_CERT_FILE"] == "/tls/ca.crt"


def client(per_minute: float = 60_000.0) -> ClientFigures:
    return ClientFigures(
        requests=100, failed=0, error_rate=0.0, p99_ms=5.0, records_sent=1000,
        records_accepted=1000, records_per_minute=per_minute, duration_s=60.0,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("scenario", "per_minute", "lost", "source"),
    [
        ("otlp-logs", "logs_per_minute", "lost_records", "k6 accepted - LogQL count in Loki"),
        ("otlp-metrics", "points_per_minute", "lost_points",
         "k6 accepted - PromQL count in Prometheus"),
        ("loki-push", "lines_per_minute", "lost_lines", "k6 accepted - LogQL count in Loki"),
    ],
)  # fmt: skip
def test_the_gates_are_named_for_the_unit(
    scenario: str, per_minute: str, lost: str, source: str
) -> None:
    spec = RunSpec.from_params({"scenario": scenario, "rate": 60_000})
    gates = judge(spec, client(), lost_records=0)
    assert [g.name for g in gates] == ["error_rate", "p99_ms", per_minute, lost]
    assert gates[-1].source == source
    assert gates[2].source == f"k6 {spec.kind.accepted_metric} per minute"
    unknown = lost_gate(spec, None)
    assert (unknown.name, unknown.passed, unknown.value) == (lost, False, None)
    assert unknown.source == f"{source}: unknown"


def test_the_k6_command_of_otlp_traces_carries_its_own_parameters() -> None:
    spec = RunSpec.from_params(
        {"scenario": "otlp-traces", "traces-per-request": 3, "spans-per-trace": 7,
         "span-attributes": 40, "attribute-size": 100, "rate": 2100, "run-id": "t1"}
    )  # fmt: skip
    cmd = k6args.build_command(
        spec, k6_bin="/bin/k6", scripts_dir="/k6", target="http://127.0.0.1:4318",
        summary_path="/out/s.json",
    )  # fmt: skip
    assert cmd.argv[-1] == str(Path("/k6/otlp-traces.js"))
    env = _env(cmd.argv)
    assert set(env) == COMMON | {
        "LOAD_TRACES_PER_REQUEST", "LOAD_SPANS_PER_TRACE", "LOAD_SPAN_ATTRIBUTES",
        "LOAD_ATTRIBUTE_SIZE",
    }  # fmt: skip
    assert (env["LOAD_TRACES_PER_REQUEST"], env["LOAD_SPANS_PER_TRACE"]) == ("3", "7")
    assert (env["LOAD_SPAN_ATTRIBUTES"], env["LOAD_ATTRIBUTE_SIZE"]) == ("40", "100")
    assert spec.iterations_per_minute == 100  # 2,100 spans / 21 a request
    assert env["LOAD_MIN_LOGS_PER_MINUTE"] == "1995"


def test_the_k6_command_of_logql_query_carries_both_rates() -> None:
    spec = RunSpec.from_params(
        {"scenario": "logql-query", "push-rate": 30_000, "query-window": 120, "run-id": "q1"}
    )
    name = "loki-0.loki-endpoints.loadgate.svc.cluster.local"
    cmd = k6args.build_command(
        spec, k6_bin="/bin/k6", scripts_dir="/k6", target=f"https://{name}:3100",
        summary_path="/out/s.json", ca_file="/tls/ca.crt", hosts={name: "127.0.0.1"},
    )  # fmt: skip
    assert cmd.argv[-1] == str(Path("/k6/logql-query.js"))
    env = _env(cmd.argv)
    assert set(env) == COMMON | {
        "LOAD_PUSH_RATE", "LOAD_QUERY_WINDOW", "LOAD_STREAMS_PER_REQUEST",
        "LOAD_LINES_PER_STREAM", "LOAD_LOKI_STREAMS", "LOAD_BODY_MIN", "LOAD_BODY_MAX",
        "LOAD_HOSTS",
    }  # fmt: skip
    # The rate is queries (its own default, 600 a minute); the push rate lines.
    assert (env["LOAD_RATE"], env["LOAD_PUSH_RATE"]) == ("600", "30000")
    assert env["LOAD_QUERY_WINDOW"] == "120"
    assert env["LOAD_MIN_LOGS_PER_MINUTE"] == "570"
    assert cmd.env["SSL_CERT_FILE"] == "/tls/ca.crt"


def test_logql_query_takes_its_own_default_rate_and_any_other_given() -> None:
    assert RunSpec.from_params({"scenario": "logql-query"}).rate == 600
    assert RunSpec.from_params({"scenario": "logql-query", "rate": 1200}).rate == 1200
    assert RunSpec.from_params({"scenario": "otlp-traces"}).rate == 60_000
    vus = RunSpec.from_params({"scenario": "logql-query", "executor": "constant-vus"})
    assert vus.offered_logs_per_minute is None  # constant VUs: no rate
    assert "rate" not in vus.to_params()


@pytest.mark.parametrize(
    ("scenario", "names", "lost_source"),
    [
        ("otlp-traces", ["spans_per_minute", "lost_spans"],
         "k6 accepted - spans the traces backend received"),
        ("logql-query", ["queries_per_minute", "wrong_answers", "lost_lines"],
         "k6 accepted - LogQL count in Loki"),
    ],
)  # fmt: skip
def test_the_new_scenarios_gates(scenario: str, names: list[str], lost_source: str) -> None:
    spec = RunSpec.from_params({"scenario": scenario, "rate": 600})
    figures = replace(client(600.0), lines_sent=10, lines_accepted=10, wrong_answers=0)
    gates = judge(spec, figures, lost_records=0)
    assert [g.name for g in gates] == ["error_rate", "p99_ms", *names]
    assert all(g.passed for g in gates)
    assert gates[-1].source == lost_source


def test_a_wrong_or_unknown_answer_fails_logql_querys_gate() -> None:
    spec = RunSpec.from_params({"scenario": "logql-query"})
    wrong = {g.name: g for g in judge(spec, replace(client(600.0), wrong_answers=2))}
    assert not wrong["wrong_answers"].passed
    assert wrong["wrong_answers"].value == 2
    assert wrong["wrong_answers"].threshold == "<= 0"
    unknown = {g.name: g for g in judge(spec, client(600.0))}  # the summary had none
    assert (unknown["wrong_answers"].passed, unknown["wrong_answers"].value) == (False, None)
    assert unknown["p99_ms"].source == "k6 summary (query_duration)"
