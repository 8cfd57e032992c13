"""The Juju helpers without Juju: action results, query answers, settings, skip reason, and the
Juju target over the in-process fake (support.fake_juju.inprocess)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import jubilant
import pytest
import yaml
from support.fake_juju import state
from support.fake_juju.inprocess import (
    CLIENT,
    COLLECTOR_CONFIG,
    FINISHED,
    cos_model,
    make_target,
    status_of,
)

from loadgate.bundle import check as bundle_check
from loadgate.contract.spec import RunSpec
from loadgate.juju import actions, endpoints, reachability, settings
from loadgate.measure.pipeline import Scope, read_counters
from loadgate.measure.queries import PrometheusAPI, QueryError
from loadgate.runner.run import RunError
from loadgate.stack import tls

ROOT = Path(__file__).resolve().parents[2]
CHARMCRAFT = ROOT / "charms" / "k6-k8s" / "charmcraft.yaml"
INTEGRATION = ROOT / "src" / "loadgate" / "data" / "integration"

# ---- action results ------------------------------------------------------------------------


def test_finished_run_figures() -> None:
    state = actions.parse_results(FINISHED)
    assert state.finished
    assert state.status == "passed"
    assert state.verdict == "PASS"
    client = state.client
    assert client is not None
    assert (client.requests, client.failed, client.records_sent) == (1200, 6, 6000)
    assert client.records_accepted == 5970
    assert client.error_rate == pytest.approx(0.005)
    assert client.p99_ms == pytest.approx(42.5)
    assert client.records_per_minute == pytest.approx(59700.0)
    assert client.histogram.total == 1200
    assert client.histogram.quantile_ms(0.99) == pytest.approx(0.05 * 2 ** (81 / 8))


def test_underscored_numeric_fields_are_read_too() -> None:
    client = {k.replace("-", "_"): v for k, v in CLIENT.items() if k != "histogram"}
    state = actions.parse_results({**FINISHED, "client": {**client, "requests": 1200}})
    assert state.client is not None
    assert state.client.requests == 1200
    assert state.client.histogram.total == 0


def test_client_as_json_string() -> None:
    state = actions.parse_results({**FINISHED, "client": json.dumps(CLIENT)})
    assert state.client is not None
    assert state.client.records_accepted == 5970


def test_summary_field_is_the_k6_summary() -> None:
    summary = {
        "format": "loadgate-k6-summary/1",
        "requests": 10,
        "failed": 0,
        "error_rate": 0.0,
        "p99_ms": 3.5,
        "records_sent": 50,
        "records_accepted": 50,
        "records_per_minute": 3000.0,
        "duration_s": 1.0,
    }
    state = actions.parse_results(
        {"run-id": "r1", "status": "failed", "summary": json.dumps(summary)}
    )
    assert state.client is not None
    assert state.client.records_sent == 50


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"status": "done"}, "get-results.status: must be one of running, passed"),
        ({"run-id": ""}, "get-results.run-id: missing"),
        ({"client": None}, "get-results.client: missing for a passed run"),
        (
            {"client": {**CLIENT, "requests": "many"}},
            "client.requests: expected a number",
        ),
        (
            {"client": {**CLIENT, "failed": "1.5"}},
            "client.failed: expected a whole number",
        ),
        ({"client": "{not json"}, "get-results.client: expected a mapping or JSON object"),
        ({"summary": '{"format": "other"}'}, "get-results.summary: not a loadgate k6 summary"),
    ],
)
def test_malformed_results_name_the_field(change: dict[str, Any], message: str) -> None:
    with pytest.raises(actions.ActionResultError, match=message):
        actions.parse_results({**FINISHED, **change})


def test_missing_field_is_named() -> None:
    client = dict(CLIENT)
    del client["records-sent"]
    with pytest.raises(
        actions.ActionResultError, match=r"get-results.client.records-sent: missing"
    ):
        actions.parse_results({**FINISHED, "client": client})


def test_running_run_with_partial_figures() -> None:
    state = actions.parse_results(
        {"run-id": "r1", "status": "running", "client": {"records-sent": "100"}}
    )
    assert not state.finished
    assert state.client is None


def test_error_run_keeps_its_message() -> None:
    state = actions.parse_results({"run-id": "r1", "status": "error", "stderr-tail": "k6: boom"})
    assert state.finished
    assert state.error == "k6: boom"


def test_units_of_a_multi_unit_run() -> None:
    part = {k: v for k, v in CLIENT.items() if k != "histogram"}
    state = actions.parse_results({**FINISHED, "units": {"k6-0": part, "k6-2": part}})
    assert sorted(state.units) == ["k6/0", "k6/2"]
    assert state.units["k6/2"].requests == 1200


def test_start_results() -> None:
    assert actions.parse_start({"run-id": "r9"}) == "r9"
    with pytest.raises(actions.ActionResultError, match="start-load: results have no run-id"):
        actions.parse_start({"id": "r9"})


def test_start_params_are_the_charm_parameters() -> None:
    spec = RunSpec.from_params({"rate": 120000, "labels": "revision=69", "run-id": "r1"})
    params = actions.start_load_params(spec)
    assert params["rate"] == 120000
    assert params["labels"] == "revision=69"
    assert params["run-id"] == "r1"
    assert "streams" not in params
    assert RunSpec.from_params(params) == spec


def test_start_params_against_charmcraft_yaml() -> None:
    """Every parameter sent is one the charm declares; `run-id` is the one the charm must add."""
    declared = set(yaml.safe_load(CHARMCRAFT.read_text())["actions"]["start-load"]["params"])
    assert actions.START_LOAD_PARAMS - declared <= {"run-id"}
    assert declared <= actions.START_LOAD_PARAMS


def test_start_params_refuse_what_the_charm_cannot_take() -> None:
    spec = RunSpec.from_params({"streams": 8})
    with pytest.raises(actions.ActionResultError, match="streams: the k6 charm runs"):
        actions.start_load_params(spec)


@pytest.mark.parametrize(
    ("key", "unit"), [("k6-0", "k6/0"), ("my-k6-12", "my-k6/12"), ("k6/1", "k6/1")]
)
def test_unit_name(key: str, unit: str) -> None:
    """get-results keys a unit by `app-N` (action result keys cannot hold '/')."""
    status = actions.parse_results({"status": "running", "run-id": "r1", "units": {key: "running"}})
    assert status.unit_status == {unit: "running"}


# ---- query answers -------------------------------------------------------------------------


def instant(data: dict[str, Any]) -> float | None:
    """What PrometheusAPI.instant makes of a server answering `data` (status success)."""
    answered = {"status": "success", "data": data}
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json=answered))
    return PrometheusAPI("https://prometheus", httpx.Client(transport=transport)).instant("up")


def test_scalar_of_answers() -> None:
    assert instant({"resultType": "vector", "result": [{"metric": {}, "value": [1, "42"]}]}) == 42.0
    assert instant({"resultType": "scalar", "result": [1, "7.5"]}) == 7.5
    assert instant({"resultType": "vector", "result": []}) is None
    assert instant({"resultType": "vector", "result": [{"value": [1, "NaN"]}]}) is None
    two = {"resultType": "vector", "result": [{"value": [1, "1"]}, {"value": [1, "2"]}]}
    with pytest.raises(QueryError, match="expected one series, got 2"):
        instant(two)


def test_scoped_counters_reach_prometheus() -> None:
    """The Juju scope's queries go over HTTP exactly as the local target's do."""
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.params["query"])
        body = {
            "status": "success",
            "data": {"resultType": "vector", "result": [{"value": [1, "5"]}]},
        }
        return httpx.Response(200, json=body)

    client = httpx.Client(transport=httpx.MockTransport(answer))
    prom = PrometheusAPI("https://prometheus", client)
    scope = Scope(exporter="loki/send-loki-logs/1", loki={"juju_unit": "loki/0"})
    counts = read_counters(prom, scope=scope)
    assert counts["collector_exported"] == 5.0
    assert 'exporter=~"loki/send-loki-logs/1"' in seen[2]
    assert 'juju_unit="loki/0"' in seen[5]
    assert all("loki.*" not in q for q in seen)


def test_prometheus_error_answer() -> None:
    client = httpx.Client(
        transport=httpx.MockTransport(
            lambda r: httpx.Response(
                200, json={"status": "error", "errorType": "bad_data", "error": "parse error"}
            )
        )
    )
    with pytest.raises(QueryError, match="bad_data: parse error"):
        PrometheusAPI("https://prometheus", client).instant("up")


# ---- endpoints -----------------------------------------------------------------------------


def test_unit_endpoints_and_leader() -> None:
    status = status_of(
        {"loki": state.app("loki-k8s", [10, 2])},
        addresses={"loki/10": "10.0.0.10", "loki/2": "10.0.0.2"},
        leaders={"loki": 2},
    )
    units = endpoints.unit_endpoints(status, "loki", "cos")
    assert [u.unit for u in units] == ["loki/2", "loki/10"]
    assert units[0].hostname == "loki-2.loki-endpoints.cos.svc.cluster.local"
    assert units[0].url(3100) == "https://10.0.0.2:3100"
    assert endpoints.leader(status, "loki") == "loki/2"
    with pytest.raises(endpoints.EndpointError, match="application 'tempo' is not in model 'cos'"):
        endpoints.unit_endpoints(status, "tempo", "cos")


def test_unit_without_address() -> None:
    status = status_of({"loki": state.app("loki-k8s", [0])}, addresses={"loki/0": ""})
    with pytest.raises(endpoints.EndpointError, match="unit loki/0 has no address yet"):
        endpoints.unit_endpoints(status, "loki", "m")


@pytest.mark.parametrize(("model", "name"), [("m", "m"), ("ctl:m", "m"), ("ctl:admin/m", "m")])
def test_model_name(model: str, name: str) -> None:
    assert endpoints.model_name(model) == name


def test_ca_from_results() -> None:
    """The `ca` application's get-ca-certificate answer, refused when it holds no PEM."""
    pem = tls.generate().ca_cert_pem.decode()
    juju = cos_model()
    juju.state["ca_pem"] = pem
    assert endpoints.fetch_ca(juju) == pem
    juju.state["ca_pem"] = "no certificate"
    with pytest.raises(endpoints.EndpointError, match="no PEM `ca-certificate`"):
        endpoints.fetch_ca(juju)


def test_exporter_that_writes_to_a_loki_unit() -> None:
    exporters = endpoints.loki_exporters(COLLECTOR_CONFIG)
    assert sorted(exporters) == ["loki/send-loki-logs/0", "loki/send-loki-logs/1"]
    loki0 = endpoints.unit_endpoints(cos_model().status(), "loki", "cos")[0]
    assert (loki0.unit, loki0.address) == ("loki/0", "10.0.0.1")
    assert endpoints.exporter_for(exporters, loki0) == "loki/send-loki-logs/1"
    five = status_of({"loki": state.app("loki-k8s", [5])}, addresses={"loki/5": "10.0.0.5"})
    other = endpoints.unit_endpoints(five, "loki", "cos")[0]
    with pytest.raises(endpoints.EndpointError, match="expected one collector Loki exporter"):
        endpoints.exporter_for(exporters, other)


def test_related_app_data() -> None:
    info = jubilant.UnitInfo._from_dict(  # pyright: ignore[reportPrivateUsage]
        {
            "opened-ports": [],
            "charm": "local:k6-k8s-0",
            "leader": True,
            "relation-info": [
                {
                    "relation-id": 3,
                    "endpoint": "send-otlp",
                    "related-endpoint": "receive-otlp",
                    "application-data": {"endpoints": '[{"endpoint": "https://otelcol-0:4318"}]'},
                },
                {
                    "relation-id": 4,
                    "endpoint": "receive-ca-cert",
                    "related-endpoint": "send-ca-cert",
                    "application-data": {},
                },
            ],
        }
    )
    data = endpoints.related_app_data(info, "send-otlp")
    assert data == [{"endpoints": '[{"endpoint": "https://otelcol-0:4318"}]'}]
    assert endpoints.related_app_data(info, "send-remote-write") == []


# ---- settings: revisions.yaml and gates.yaml ----------------------------------------------


def _files(tmp_path: Path, revisions: dict[str, Any], gates: dict[str, Any]) -> tuple[Path, Path]:
    r, g = tmp_path / "revisions.yaml", tmp_path / "gates.yaml"
    r.write_text(yaml.safe_dump(revisions))
    g.write_text(yaml.safe_dump(gates))
    return r, g


SEEN = "juju info opentelemetry-collector-k8s --channel dev/edge, 2026-11-01"
REVISIONS = {
    "otelcol": {
        "channel": "dev/edge",
        "revisions": [{"revision": 200, "seen": SEEN}, {"revision": 201, "seen": SEEN}],
        "default": 201,
    }
}
GATES = {
    "defaults": {"rate": 60000, "duration": "5m", "p99-ms": 200},
    "revisions": {"200": {"p99-ms": 300}},
}


def test_option_wins_over_the_matrix_file(tmp_path: Path) -> None:
    r, _ = _files(tmp_path, REVISIONS, GATES)
    assert settings.resolve_otelcol("200", None, r) == settings.OtelcolPin(
        "dev/edge", 200, "option"
    )
    assert settings.resolve_otelcol(None, "0.130/edge", r).channel == "0.130/edge"
    assert settings.resolve_otelcol(None, None, r) == settings.OtelcolPin(
        "dev/edge", 201, "revisions.yaml default"
    )
    assert settings.matrix(r) == ["200", "201"]


def test_channel_head_without_a_default(tmp_path: Path) -> None:
    r, _ = _files(tmp_path, {"otelcol": {"channel": "dev/edge", "revisions": []}}, GATES)
    assert settings.resolve_otelcol(None, None, r) == settings.OtelcolPin(
        "dev/edge", None, "channel head"
    )
    assert settings.matrix(r) == ["head"]


@pytest.mark.parametrize(
    ("revision", "channel", "message"),
    [
        ("abc", None, "--otelcol-revision: must be a positive whole number; got 'abc'"),
        ("0", None, "--otelcol-revision: must be a positive whole number"),
        (None, "dev", "--otelcol-channel: must be a channel track/risk"),
    ],
)
def test_bad_options_name_the_option(
    tmp_path: Path, revision: str | None, channel: str | None, message: str
) -> None:
    r, _ = _files(tmp_path, REVISIONS, GATES)
    with pytest.raises(settings.SettingsError, match=message):
        settings.resolve_otelcol(revision, channel, r)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (200, r"each revision must be a mapping \{revision: N, seen: where it was seen\}"),
        ({"revision": 200}, "revision 200 needs `seen`: where and when it was seen"),
        ({"revision": "x", "seen": SEEN}, "must be a positive whole number; got 'x'"),
    ],
)
def test_a_revision_nobody_saw_is_refused(tmp_path: Path, entry: Any, message: str) -> None:
    """Numbers nobody has seen on Charmhub do not belong in revisions.yaml (issue 12, 16)."""
    r, _ = _files(tmp_path, {"otelcol": {"channel": "dev/edge", "revisions": [entry]}}, GATES)
    with pytest.raises(settings.SettingsError, match=message):
        settings.load_revisions(r)


def test_default_must_be_a_listed_revision(tmp_path: Path) -> None:
    revisions = {"otelcol": {"channel": "dev/edge", "revisions": [], "default": 200}}
    r, _ = _files(tmp_path, revisions, GATES)
    with pytest.raises(settings.SettingsError, match="revision 200 is not one of the listed"):
        settings.load_revisions(r)


def test_gates_defaults_and_overrides(tmp_path: Path) -> None:
    _, g = _files(tmp_path, REVISIONS, GATES)
    assert settings.gate_params(g, 200) == {"rate": 60000, "duration": "5m", "p99-ms": 300}
    assert settings.gate_params(g, 201)["p99-ms"] == 200
    labels = {"revision": "200", "otelcol_channel": "dev/edge"}
    spec = settings.gate_spec(g, 200, labels)
    assert spec.p99_ms == 300
    assert spec.labels == labels
    assert settings.gate_spec(g, None, {"otelcol_charm": "local"}).p99_ms == 200


def test_bad_gate_names_the_parameter(tmp_path: Path) -> None:
    _, g = _files(tmp_path, REVISIONS, {"defaults": {"p99": 100}})
    with pytest.raises(
        settings.SettingsError, match=r"gates.yaml: defaults.p99: unknown parameter"
    ):
        settings.gate_spec(g, None, {})


def test_committed_matrix_and_gates_are_valid() -> None:
    channel, revisions, _ = settings.load_revisions(INTEGRATION / "revisions.yaml")
    assert bundle_check.track_of(channel) in ("dev", "0.130")
    # An empty matrix gates the head of the channel (the workflow's "head" job).
    for revision in revisions or [None]:
        spec = settings.gate_spec(INTEGRATION / "gates.yaml", revision, {"revision": "1"})
        assert actions.start_load_params(spec)


def test_matrix_command_for_the_workflow(capsys: pytest.CaptureFixture[str]) -> None:
    assert settings.main(["matrix", str(INTEGRATION / "revisions.yaml")]) == 0
    matrix = json.loads(capsys.readouterr().out)
    assert matrix == settings.matrix(INTEGRATION / "revisions.yaml")
    assert settings.main(["matrix"]) == 2


# ---- skip reason ---------------------------------------------------------------------------


@dataclass
class _Juju:
    """Answers for the juju CLI calls the skip check makes."""

    answers: dict[str, tuple[int, str, str]] = field(
        default_factory=dict[str, tuple[int, str, str]]
    )
    calls: list[list[str]] = field(default_factory=list[list[str]])

    def __call__(self, argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
        self.calls.append(list(argv))
        code, out, err = self.answers[argv[1]]
        return subprocess.CompletedProcess(list(argv), code, out, err)


CONTROLLERS = json.dumps({"controllers": {"k8s": {}}, "current-controller": "k8s"})


@pytest.mark.parametrize(
    ("answers", "controller", "reason"),
    [
        (
            {"controllers": (1, "", "ERROR no controller API\n")},
            None,
            "`juju controllers` failed: ERROR no controller API",
        ),
        ({"controllers": (0, "{}", "")}, None, "`juju controllers` lists none"),
        (
            {"controllers": (0, json.dumps({"controllers": {"k8s": {}}}), "")},
            None,
            "no current controller",
        ),
        ({"controllers": (0, CONTROLLERS, "")}, "lxd", "controller 'lxd' is not one of ['k8s']"),
        (
            {"controllers": (0, CONTROLLERS, ""), "models": (1, "", "connection refused")},
            None,
            "controller 'k8s' did not answer: connection refused",
        ),
        ({"controllers": (0, CONTROLLERS, ""), "models": (0, "{}", "")}, None, None),
    ],
)
def test_skip_reason(
    answers: dict[str, tuple[int, str, str]], controller: str | None, reason: str | None
) -> None:
    fake = _Juju(answers)
    got = reachability.skip_reason(controller, which=lambda _: "/usr/bin/juju", run=fake)
    if reason is None:
        assert got is None
        assert fake.calls[-1] == [
            "/usr/bin/juju",
            "models",
            "--controller",
            "k8s",
            "--format",
            "json",
        ]
    else:
        assert got is not None
        assert got.startswith(f"no Juju controller reachable: {reason}")


def test_skip_reason_without_the_cli() -> None:
    reason = reachability.skip_reason(which=lambda _: None)
    assert reason == "no Juju controller reachable: the `juju` CLI is not on PATH"


# ---- the Juju target's run flow (jubilant calls answered in-process) -----------------------


def test_target_follows_the_run_to_its_end(tmp_path: Path) -> None:
    running = {
        "run-id": "r1",
        "status": "running",
        "client": {**CLIENT, "records-sent": "100"},
    }
    juju = cos_model([running, FINISHED])
    target = make_target(juju, tmp_path)
    assert target.scope == Scope(
        exporter="loki/send-loki-logs/1",
        loki={"juju_application": "loki"},
        rate_window="3m",
        scrape_interval_s=60.0,
    )
    assert target.prometheus().base_url == "https://10.0.0.3:9090"
    assert target.loki().base_url == "https://10.0.0.1:3100"
    target.start(RunSpec.from_params({"run-id": "r1", "duration": "2s"}), tmp_path)
    progress = target.poll()
    assert progress is not None
    assert progress.records_sent == 100
    assert target.poll() is None
    client = target.finish()
    assert client.records_accepted == 5970
    assert json.loads((tmp_path / "get-results.json").read_text())["status"] == "passed"
    ran = juju.actions_run()
    assert [a for _, a, _ in ran] == [
        "get-ca-certificate",
        "start-load",
        "get-results",
        "get-results",
    ]
    assert ran[1][2]["run-id"] == "r1"
    target.close()


def test_target_refuses_a_run_id_it_did_not_ask_for(tmp_path: Path) -> None:
    target = make_target(cos_model(k6_own_run_id="charm-own-id"), tmp_path)
    with pytest.raises(RunError, match="its start-load must take `run-id`"):
        target.start(RunSpec.from_params({"run-id": "r1"}), tmp_path)


def test_target_reports_a_k6_error(tmp_path: Path) -> None:
    juju = cos_model([{"run-id": "r1", "status": "error", "error": "k6 exited 107: bad script"}])
    target = make_target(juju, tmp_path)
    target.start(RunSpec.from_params({"run-id": "r1"}), tmp_path)
    assert target.poll() is None
    with pytest.raises(RunError, match="ended in error: k6 exited 107: bad script"):
        target.finish()
