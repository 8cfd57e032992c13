"""The integration suite per scenario: gates.yaml's `scenarios`, their layers and errors, the
scenarios a run picks, the traces backend they need on a model, and where its spans are
counted there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from support.fakes.target import FakeTarget

from loadgate import paths
from loadgate.gate import plan, saturation_settings
from loadgate.gate.subject import Subject
from loadgate.juju import model, settings
from loadgate.measure import scenarios as measures
from loadgate.measure import signal_queries as sq
from loadgate.measure import stores
from loadgate.runner.run_parts import scenario_store

GATES_FILE = paths.integration_defaults_dir() / "gates.yaml"
FIVE = ["otlp-logs", "otlp-metrics", "otlp-traces", "loki-push", "logql-query"]


def _gates(tmp_path: Path, doc: dict[str, Any]) -> Path:
    path = tmp_path / "gates.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


LAYERED: dict[str, Any] = {
    "defaults": {"duration": "5m", "vus": 20, "p99-ms": 100},
    "scenarios": {
        "loki-push": {"rate": 120000, "p99-ms": 3000},
        "otlp-logs": {"rate": 60000, "logs-per-request": 5},
    },
    "revisions": {
        "207": {"duration": "2m", "scenarios": {"loki-push": {"p99-ms": 4000}}},
    },
}


# ---- the committed file ----------------------------------------------------------------------


def test_loadgate_gates_every_scenario() -> None:
    assert settings.gate_scenarios(GATES_FILE) == FIVE
    for name in FIVE:
        spec = settings.gate_spec(GATES_FILE, None, {"revision": "1"}, scenario=name)
        assert spec.scenario == name
        assert spec.effective_min_logs_per_minute is not None  # a per-minute gate each
    # The Loki charm's own draft load tests gate p(99) < 3000 ms on its read and write paths.
    assert settings.gate_spec(GATES_FILE, None, {}, scenario="logql-query").p99_ms == 3000
    # The first scenario is what the suites that are not per scenario load with.
    assert settings.gate_spec(GATES_FILE, None, {}).scenario == "otlp-logs"


def test_saturation_stays_on_otlp_logs() -> None:
    gate = saturation_settings.saturation_gate(GATES_FILE, None, {"revision": "1"})
    assert gate.spec.scenario == "otlp-logs"
    assert gate.spec.logs_per_request == 5  # scenarios.otlp-logs's records


# ---- layers ---------------------------------------------------------------------------------


def test_layers_apply_in_order(tmp_path: Path) -> None:
    g = _gates(tmp_path, LAYERED)
    assert settings.gate_scenarios(g) == ["loki-push", "otlp-logs"]
    layers = settings.gate_layers(g, 207, "loki-push")
    assert [field for field, _ in layers] == [
        "defaults", "scenarios.loki-push", "revisions.207", "revisions.207.scenarios.loki-push",
    ]  # fmt: skip
    spec = settings.gate_spec(g, 207, {}, scenario="loki-push")
    assert (spec.rate, spec.p99_ms, spec.duration) == (120000, 4000, "2m")
    logs = settings.gate_spec(g, 207, {}, scenario="otlp-logs")
    assert (logs.rate, logs.p99_ms, logs.duration, logs.logs_per_request) == (60000, 100, "2m", 5)
    # Another revision: its overrides do not apply.
    assert settings.gate_spec(g, 1, {}, scenario="loki-push").p99_ms == 3000
    # No scenario named: the first the file gates.
    assert settings.gate_spec(g, None, {}).scenario == "loki-push"


def test_a_file_without_scenarios_gates_the_one_of_defaults(tmp_path: Path) -> None:
    g = _gates(tmp_path, {"defaults": {"scenario": "loki-push", "rate": 1000}})
    assert settings.gate_scenarios(g) == ["loki-push"]
    assert settings.gate_spec(g, None, {}).scenario == "loki-push"
    assert settings.gate_scenarios(_gates(tmp_path, {"defaults": {}})) == ["otlp-logs"]


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (
            {"scenarios": {"otlp-log": {}}},
            "scenarios.otlp-log: unknown scenario; allowed: otlp-logs, otlp-metrics, loki-push, "
            "otlp-traces, logql-query",
        ),
        ({"scenarios": {}}, "scenarios: must name at least one scenario"),
        ({"scenarios": ["otlp-logs"]}, "scenarios: must be a mapping of scenario names"),
        ({"scenarios": {"otlp-logs": 5}}, "scenarios.otlp-logs: must be a mapping"),
        (
            {"scenarios": {"otlp-logs": {"scenario": "loki-push"}}},
            "scenarios.otlp-logs.scenario: the key names the scenario",
        ),
        (
            {"defaults": {"scenario": "otlp-logs"}, "scenarios": {"loki-push": {}}},
            "defaults.scenario: the scenarios are the keys of `scenarios`",
        ),
        (
            {"scenarios": {"otlp-logs": {}}, "revisions": {"207": {"scenarios": {"tempo": {}}}}},
            "revisions.207.scenarios.tempo: unknown scenario",
        ),
    ],
)
def test_a_bad_scenarios_section_names_the_field(
    tmp_path: Path, doc: dict[str, Any], message: str
) -> None:
    g = _gates(tmp_path, doc)
    with pytest.raises(settings.SettingsError, match=message.replace("(", r"\(")):
        settings.gate_spec(g, 207, {})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        # A scenario's own parameter where another scenario takes the run.
        (
            {"defaults": {"logs-per-request": 5}},
            "defaults.logs-per-request: applies to otlp-logs only, not loki-push",
        ),
        (
            {"scenarios": {"loki-push": {"rate": -5}}},
            "scenarios.loki-push.rate: must be an integer between 1 and",
        ),
        (
            {"revisions": {"207": {"scenarios": {"loki-push": {"p99-ms": 0}}}}},
            "revisions.207.scenarios.loki-push.p99-ms: must be",
        ),
    ],
)
def test_a_bad_parameter_names_the_layer_that_set_it(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    doc = {**LAYERED, **change}
    g = _gates(tmp_path, doc)
    with pytest.raises(settings.SettingsError, match=message):
        settings.gate_spec(g, 207, {}, scenario="loki-push")


# ---- which scenarios a suite runs, and what the model needs for them --------------------------


def test_chosen_scenarios_keep_the_file_order() -> None:
    assert plan.chosen_scenarios(FIVE, [], GATES_FILE) == tuple(FIVE)
    picked = plan.chosen_scenarios(FIVE, ["loki-push", "otlp-logs"], GATES_FILE)
    assert picked == ("otlp-logs", "loki-push")
    with pytest.raises(plan.PlanError, match=r"--gate-scenario: 'tempo' is not gated by .*"):
        plan.chosen_scenarios(FIVE, ["tempo"], GATES_FILE)


LOKI_UNDER_TEST = Subject("loki", "$CHARM_PATH")  # no Loki limits overlay: Loki is measured


def test_traces_bring_their_backend_overlay(tmp_path: Path) -> None:
    ci = tmp_path / "ci-small-storage.yaml"
    assert plan.overlays_for([ci], ["otlp-logs"], LOKI_UNDER_TEST) == [ci]
    own = paths.overlays_dir() / plan.TRACES_OVERLAY
    assert plan.overlays_for([ci], ["otlp-logs", "otlp-traces"], LOKI_UNDER_TEST) == [ci, own]
    given = tmp_path / plan.TRACES_OVERLAY  # the user's own copy: not added twice
    assert plan.overlays_for([given], ["otlp-traces"], LOKI_UNDER_TEST) == [given]


def test_the_model_needs_the_traces_backend_only_for_traces() -> None:
    def apps(scenarios: tuple[str, ...]) -> tuple[str, ...]:
        return plan.Plan(
            Path("b.yaml"), (), {}, settings.OtelcolPin("dev/edge", None, "x"), GATES_FILE,
            scenarios, LOKI_UNDER_TEST,
        ).apps  # fmt: skip

    assert apps(("otlp-logs",)) == model.BUNDLE_APPS
    assert apps(("otlp-logs", "otlp-traces")) == (*model.BUNDLE_APPS, model.TRACES_STANDIN_APP)


def test_the_overlay_adds_the_application_the_target_follows() -> None:
    doc = yaml.safe_load((paths.overlays_dir() / plan.TRACES_OVERLAY).read_text())
    assert list(doc["applications"]) == [model.TRACES_STANDIN_APP]
    assert doc["applications"][model.TRACES_STANDIN_APP]["charm"] == "opentelemetry-collector-k8s"
    assert ["otelcol:send-traces", "traces-standin:receive-traces"] in doc["relations"]
    # Its counters reach the model's Prometheus: what the `stored` step reads.
    assert ["traces-standin:send-remote-write", "prometheus:receive-remote-write"] in doc[
        "relations"
    ]


# ---- where the spans are counted ------------------------------------------------------------


LOCAL = FakeTarget(name="local")
ON_MODEL = FakeTarget(
    name="juju", standin=({"juju_application": "traces-standin"}, "application traces-standin")
)


def test_the_stand_in_is_found_by_the_targets_matchers() -> None:
    local = scenario_store("otlp-traces", LOCAL)
    assert local is measures.of("otlp-traces").store
    family = '{__name__=~"otelcol_receiver_accepted_spans(_total)?",'
    assert local.anchor == sq.standin_spans() == family + 'job="traces-standin"}'
    on_model = scenario_store("otlp-traces", ON_MODEL)
    assert isinstance(on_model, stores.StandinStore)
    selector = family + 'juju_application="traces-standin"}'
    assert on_model.anchor == on_model.selector == selector
    assert on_model.query("r", 10.0, 20.0) == (
        f"increase of {selector} from raw samples over (10.000, 20.000]"
    )
    assert "application traces-standin, not Tempo" in on_model.source
    # Other scenarios' stores are the same wherever they run.
    assert scenario_store("otlp-logs", ON_MODEL) is measures.of("otlp-logs").store
