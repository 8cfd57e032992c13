"""The gate's stable API without a model: what a run's record becomes for a charm's test
(GateResult), the saturation gate's check that it measured the charm under test, and the plan
resolved from options, `$CHARM_PATH` and the test tree's own settings files."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.fake_juju.charms import k6_charm, upstream_charm

from loadgate import paths
from loadgate.contract.gates import Gate
from loadgate.contract.spec import RunSpec
from loadgate.contract.summary import ClientFigures
from loadgate.gate import GateResult, plan, saturation, summary
from loadgate.judge.ledger import Ledger, Step
from loadgate.measure.saturation import SaturationFigures
from loadgate.records.result import RunResult

CLIENT = ClientFigures(100, 0, 0.0, 10.0, 500, 500, 500.0, 60.0)
OK = Gate("error_rate", "<= 1%", 0.0, True, "k6 errors rate")


def run_result(
    verdict: str = "collector",
    summary_text: str = "",
    stored: int | None = 500,
    sat: SaturationFigures | None = None,
) -> RunResult:
    steps = [Step("sent", 500, "k6", None), Step("stored", stored, "LogQL", None, "a note")]
    attribution: dict[str, Any] = {"verdict": verdict, "summary": summary_text or verdict}
    return RunResult(
        run_id="r1", target="juju", spec=RunSpec(labels={"revision": "221"}), started_at=0.0,
        ended_at=1.0, client=CLIENT, pipeline=None, delivered=None, ledger=Ledger(steps, 500),
        gates=[OK], verdict="PASS", bottleneck={"attribution": attribution}, saturation=sat,
    )  # fmt: skip


# ---- the saturation gate measures the charm under test -------------------------------------


def component_gate(result: RunResult, expected: str) -> Gate:
    """The gate saturation.judge adds for the component the run measured (no floor set)."""
    judged = saturation.judge(result, None, expected)
    return next(g for g in judged.gates if g.name == saturation.COMPONENT_GATE)


@pytest.mark.parametrize(
    ("verdict", "passed", "value", "words"),
    [
        ("collector", True, 1.0, "what gave way first: collector"),
        ("none", True, 1.0, "the saturation figure is a lower bound"),
        ("loki", False, 0.0, "measured the wrong component: loki"),
        ("generator", False, 0.0, "measured the wrong component: generator"),
        ("unknown", False, None, "measured the wrong component: unknown"),
    ],
)
def test_the_saturation_gate_fails_when_another_component_gave_way(
    verdict: str, passed: bool, value: float | None, words: str
) -> None:
    gate = component_gate(run_result(verdict), "collector")
    assert (gate.name, gate.passed, gate.value) == ("measured_component", passed, value)
    assert words in gate.source
    assert gate.threshold == "= 1 (collector gives way first)"


def test_a_loki_charm_expects_loki_to_give_way() -> None:
    assert component_gate(run_result("loki"), "loki").passed
    assert not component_gate(run_result("collector"), "loki").passed


def test_a_run_without_attribution_cannot_show_what_it_measured() -> None:
    gate = component_gate(replace(run_result(), bottleneck=None), "loki")
    assert not gate.passed
    assert "no attribution recorded" in gate.source


def test_judge_adds_the_floor_and_the_component_and_judges_again() -> None:
    sat = SaturationFigures(300_000.0, True, accepted_per_min=180_000.0)
    judged = saturation.judge(run_result("loki", sat=sat), 150_000.0, "collector")
    assert [g.name for g in judged.gates] == [
        "error_rate", "saturation_per_minute", "measured_component",
    ]  # fmt: skip
    assert [g.passed for g in judged.gates] == [True, True, False]
    assert judged.verdict == "FAIL"
    again = saturation.judge(run_result("collector", sat=sat), 150_000.0, "collector")
    assert again.verdict == "PASS"


# ---- the summary a charm's test gets -------------------------------------------------------


def test_a_run_summarized_for_the_charms_test(tmp_path: Path) -> None:
    path = tmp_path / "r1" / "result.json"
    got = summary.summarize(run_result("collector", stored=None), path)
    assert isinstance(got, GateResult)
    assert (got.scenario, got.run_id, got.verdict, got.passed) == ("otlp-logs", "r1", "PASS", True)
    assert got.result_file == path
    assert got.labels == {"revision": "221"}
    assert [(s.name, s.count) for s in got.ledger] == [("sent", 500), ("stored", None)]
    assert got.lost is None  # not counted: never 0
    assert not got.balanced
    assert got.failed_gates == ()
    text = got.explain()
    assert "otlp-logs gate PASS (run r1" in text
    assert "PASS error_rate: measured 0 against <= 1% (k6 errors rate)" in text
    assert "stored=unknown (a note)" in text
    assert "lost after acceptance: unknown" in text


def test_a_saturation_summary_carries_the_figure_and_what_gave_way(tmp_path: Path) -> None:
    sat = SaturationFigures(300_000.0, True, accepted_per_min=180_000.0)
    judged = saturation.judge(run_result("loki", sat=sat), None, "collector")
    got = summary.summarize(judged, tmp_path / "x", floor=None, expected="collector")
    assert got.saturation is not None
    assert (got.saturation.per_minute, got.saturation.limited_by) == (180_000.0, "loki")
    assert got.saturation.expected == "collector"
    assert [g.name for g in got.failed_gates] == ["measured_component"]
    unmeasured = summary.summarize(run_result("none"), tmp_path / "y", expected="collector")
    assert unmeasured.saturation is not None
    assert unmeasured.saturation.per_minute is None
    assert "not measured" in unmeasured.saturation.reason


# ---- the plan: options, $CHARM_PATH and the tree's own settings ------------------------------


def _otelcol(path: Path) -> Path:
    image = {"opentelemetry-collector-image": "ubuntu/opentelemetry-collector:0.130"}
    return upstream_charm(path, "opentelemetry-collector-k8s", "dev", image)


def _loki(path: Path) -> Path:
    images = {"loki-image": "ubuntu/loki:3.7", "node-exporter-image": "prom/node-exporter"}
    return upstream_charm(path, "loki-k8s", "3.7", images)


def test_an_otelcol_charm_under_test_gets_loki_unthrottled(tmp_path: Path) -> None:
    packed = _otelcol(tmp_path / "opentelemetry-collector-k8s_ubuntu@26.04-amd64.charm")
    asked = plan.Asked(env={"CHARM_PATH": str(packed)})
    got = plan.resolve(asked, tmp_path, runs=("otlp-logs",))  # the pull-request gate
    assert got.subject.app == "otelcol"
    assert set(got.local_charms) == {"otelcol"}
    assert [p.name for p in got.overlays] == [plan.LOKI_LIMITS_OVERLAY]
    assert got.gates_file == paths.integration_defaults_dir() / "gates.yaml"
    assert got.scenarios[0] == "otlp-logs"
    assert got.served == ("otlp-logs",)
    assert "traces-standin" not in got.apps
    every = plan.resolve(asked, tmp_path)  # the tests' scenarios unknown: every gated one
    assert [p.name for p in every.overlays] == [plan.TRACES_OVERLAY, plan.LOKI_LIMITS_OVERLAY]
    assert "traces-standin" in every.apps


def test_a_loki_charm_under_test_keeps_lokis_own_limits(tmp_path: Path) -> None:
    packed = _loki(tmp_path / "loki-k8s_ubuntu@26.04-amd64.charm")
    asked = plan.Asked(env={"CHARM_PATH": str(packed)}, scenarios=("loki-push",))
    got = plan.resolve(asked, tmp_path)
    assert (got.subject.app, got.subject.component) == ("loki", "loki")
    assert got.overlays == ()
    assert got.scenarios == ("loki-push",)


def test_the_trees_own_gates_file_comes_first(tmp_path: Path) -> None:
    own = tmp_path / "tests" / "integration" / "gates.yaml"
    own.parent.mkdir(parents=True)
    own.write_text(yaml.safe_dump({"scenarios": {"loki-push": {"rate": 1000}}}))
    got = plan.resolve(plan.Asked(env={}), tmp_path)
    assert (got.gates_file, got.scenarios) == (own, ("loki-push",))


@pytest.mark.parametrize(
    ("asked", "message"),
    [
        (plan.Asked(env={}, scenarios=("tempo",)), r"--gate-scenario: 'tempo' is not gated by"),
        (plan.Asked(env={"CHARM_PATH": "/nope.charm"}), r"\$CHARM_PATH: must name a packed"),
        (plan.Asked(env={}, resources=("loki:loki-image=x",)), r"--resource: loki is not"),
        (plan.Asked(env={}, otelcol_revision="seven"), r"--otelcol-revision: must be a positive"),
    ],
)
def test_a_bad_option_is_refused_with_its_name(asked: plan.Asked, message: str) -> None:
    with pytest.raises(plan.PlanError, match=message):
        plan.resolve(asked, Path("/nonexistent-tree"))


def test_charm_path_of_the_k6_charm_is_refused(tmp_path: Path) -> None:
    k6 = k6_charm(tmp_path / "loadgate-k6-k8s_amd64.charm")
    with pytest.raises(plan.PlanError, match=r"which the load gate does not deploy"):
        plan.resolve(plan.Asked(env={"CHARM_PATH": str(k6)}), tmp_path)
