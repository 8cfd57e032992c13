"""The Juju target with the scenarios other than otlp-logs (jubilant answered in-process): a
load that goes to Loki itself gets the followed Loki unit's URL as `target=`, an OTLP one the
related collector (no target), and while a run goes on its progress comes from k6's counters
of the scenario's unit in the model's Prometheus; the fake k6 charm counts each scenario's
units per request as the registry does."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import pytest
from support.fake_juju import state
from support.fake_juju.inprocess import FINISHED, LOKI_SCRAPED, cos_model, make_target

from loadgate.contract import params as table
from loadgate.contract import scenarios as reg
from loadgate.contract.spec import RunSpec
from loadgate.juju.actions import start_load_params

LOKI_URL = "https://loki-0.loki-endpoints.cos.svc.cluster.local:3100"


@pytest.mark.parametrize(
    ("scenario", "target"),
    [("loki-push", LOKI_URL), ("logql-query", LOKI_URL), ("otlp-traces", None),
     ("otlp-metrics", None), ("otlp-logs", None)],
)  # fmt: skip
def test_a_loki_scenario_goes_to_the_followed_loki_unit(
    tmp_path: Path, scenario: str, target: str | None
) -> None:
    juju = cos_model([FINISHED])
    runner_target = make_target(juju, tmp_path)
    assert runner_target.loki_url() == LOKI_URL  # loki/0 leads and is followed
    spec = RunSpec.from_params({"scenario": scenario, "run-id": "r1", "duration": "2s"})
    runner_target.start(spec, tmp_path)
    (start,) = [p for _, action, p in juju.actions_run() if action == "start-load"]
    assert start.get("target") == target
    assert start["scenario"] == scenario
    runner_target.close()


def test_the_targets_own_ca_folder_goes_when_it_closes_a_given_one_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    target = make_target(cos_model([FINISHED]), None)
    (own,) = (tmp_path / "tmp").glob("loadgate-juju-*")
    assert (own / "juju-ca.crt").is_file()
    target.close()
    assert not own.exists()
    given = tmp_path / "given"
    given.mkdir()
    make_target(cos_model([FINISHED]), given).close()
    assert (given / "juju-ca.crt").is_file()


def test_a_target_given_stays() -> None:
    spec = RunSpec.from_params(
        {"scenario": "loki-push", "target": "https://loki.other:3100", "run-id": "r1"}
    )
    assert start_load_params(spec)["target"] == "https://loki.other:3100"


def test_progress_while_running_comes_from_k6s_counters_of_the_scenarios_unit(
    tmp_path: Path,
) -> None:
    running = {"run-id": "r1", "status": "running"}  # no figures until k6's summary
    answers = {
        **LOKI_SCRAPED,
        'sum({__name__=~"k6_spans_sent(_total)?",run_id="r1"})': 4500.0,
        'sum({__name__=~"k6_spans_accepted(_total)?",run_id="r1"})': 4455.0,
        'sum({__name__=~"k6_log_records_sent(_total)?",run_id="r1"})': 1.0,
    }
    target = make_target(cos_model([running, FINISHED]), tmp_path, answers)
    target.start(RunSpec.from_params({"scenario": "otlp-traces", "run-id": "r1"}), tmp_path)
    progress = target.poll()
    assert progress is not None
    assert (progress.records_sent, progress.records_accepted) == (4500, 4455)
    assert target.poll() is None
    target.close()


def test_progress_is_zero_while_prometheus_has_no_counters(tmp_path: Path) -> None:
    running = {"run-id": "r1", "status": "running"}
    target = make_target(cos_model([running, FINISHED]), tmp_path)
    target.start(RunSpec.from_params({"scenario": "logql-query", "run-id": "r1"}), tmp_path)
    progress = target.poll()
    assert progress is not None
    assert (progress.records_sent, progress.records_accepted) == (0, 0)
    target.close()


def test_the_fake_k6_charm_counts_units_per_request_as_the_registry() -> None:
    assert set(state.PER_REQUEST) == set(reg.NAMES)
    for kind in reg.ALL:
        assert list(state.PER_REQUEST[kind.name]) == list(kind.per_request), kind.name
        for name, default in state.PER_REQUEST[kind.name].items():
            assert table.BY_NAME[name].default == default, name
        spec = RunSpec.from_params({"scenario": kind.name})
        assert state.units_per_request({"scenario": kind.name}) == spec.units_per_request
    given = {"scenario": "otlp-traces", "traces-per-request": 3, "spans-per-trace": 7}
    assert state.units_per_request(given) == 21 == math.prod((3, 7))
