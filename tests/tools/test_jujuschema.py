"""The k6 charm's action schemas as Juju reads them, and its params as `juju run` checks them.

tools/jujuschema runs Juju 3.6's own code (github.com/juju/charm/v12, gojsonschema v1.0.0); see
tests/support/jujuschema.py. charmcraft.yaml's `actions` must load there, bad params must be
refused before they reach the charm, and the defaults Juju inserts must make a valid RunSpec.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from support.jujuschema import (
    K6_CHARMCRAFT_YAML,
    JujuSchemaError,
    ParamsRefusedError,
    SchemaRefusedError,
    check_actions,
    validate_action_params,
)

from loadgate import paths
from loadgate.contract import spec as core_spec
from loadgate.contract.params import PARAMS
from loadgate.contract.scenarios import without_filled_defaults
from loadgate.contract.spec import RunSpec, parse_duration
from loadgate.juju import actions, settings

CHARMCRAFT: dict[str, Any] = yaml.safe_load(K6_CHARMCRAFT_YAML.read_text())
START_PARAMS: dict[str, dict[str, Any]] = CHARMCRAFT["actions"]["start-load"]["params"]
GATES_FILE = paths.integration_defaults_dir() / "gates.yaml"


def start_load(params: dict[str, Any]) -> dict[str, Any]:
    return validate_action_params(K6_CHARMCRAFT_YAML, "start-load", params)


def test_every_action_schema_loads() -> None:
    assert check_actions() == "ok: 3 action schemas load (get-results, start-load, stop-load)"


def test_a_numeric_exclusive_minimum_is_refused_as_juju_refuses_it(tmp_path: Path) -> None:
    """The form p99-ms had (JSON-Schema draft 6+): Juju's draft-4 library cannot load it."""
    broken = yaml.safe_load(K6_CHARMCRAFT_YAML.read_text())
    p99 = broken["actions"]["start-load"]["params"]["p99-ms"]
    p99.pop("minimum")
    p99["exclusiveMinimum"] = 0
    path = tmp_path / "charmcraft.yaml"
    path.write_text(yaml.safe_dump(broken))
    with pytest.raises(SchemaRefusedError, match="exclusiveMinimum must be of a boolean"):
        check_actions(path)


def test_a_default_its_own_schema_refuses_is_caught(tmp_path: Path) -> None:
    broken = yaml.safe_load(K6_CHARMCRAFT_YAML.read_text())
    broken["actions"]["start-load"]["params"]["vus"]["default"] = 0
    path = tmp_path / "charmcraft.yaml"
    path.write_text(yaml.safe_dump(broken))
    with pytest.raises(SchemaRefusedError, match="start-load: its defaults fail its own schema"):
        check_actions(path)


def test_defaults_are_inserted_as_juju_run_does() -> None:
    got = start_load({"rate": 120000, "labels": "revision=69"})
    assert got == {
        "scenario": "otlp-logs",
        "executor": "constant-arrival-rate",
        "vus": 10,
        "rate": 120000,
        "duration": "60s",
        "logs-per-request": 5,
        "requests-per-iteration": 1,
        "body-min": 256,
        "body-max": 2048,
        "p99-ms": 100,
        "max-error-rate": 0.01,
        "labels": "revision=69",
        "target": "",
    }
    # No default for these: the charm derives them (rate: none with constant-vus; the
    # records-per-minute gate from rate; a fresh run id).
    for absent in ("min-logs-per-minute", "run-id"):
        assert absent not in got


def test_given_values_are_kept_and_other_actions_have_no_defaults() -> None:
    got = start_load({"executor": "constant-vus", "vus": 4, "duration": "1h30m", "p99-ms": 2.5})
    assert (got["executor"], got["vus"], got["duration"], got["p99-ms"]) == (
        "constant-vus", 4, "1h30m", 2.5,
    )  # fmt: skip
    assert validate_action_params(K6_CHARMCRAFT_YAML, "get-results", {}) == {}
    assert validate_action_params(K6_CHARMCRAFT_YAML, "get-results", {"run-id": "r-1.2_3"}) == {
        "run-id": "r-1.2_3"
    }
    assert validate_action_params(K6_CHARMCRAFT_YAML, "stop-load", {}) == {}


@pytest.mark.parametrize(
    "given",
    [
        {},
        {"rate": 600000, "duration": "10m", "labels": "revision=69,track=2"},
        {"executor": "constant-vus", "vus": 50, "duration": "5m"},
        {"executor": "ramping-arrival-rate", "body-min": 512, "body-max": 512},
        {"target": "https://otel.example.com:4318", "run-id": "ci-42", "min-logs-per-minute": 0},
    ],
)
def test_what_juju_hands_the_charm_is_a_valid_run_spec(given: dict[str, Any]) -> None:
    """The charm builds its RunSpec from exactly these params: defaults included."""
    params = start_load(given)
    if not params["target"]:
        params["target"] = "http://otelcol-0.otelcol-endpoints.m.svc.cluster.local:4318"
    spec = RunSpec.from_params(params)
    assert spec.duration == params["duration"]


@pytest.mark.parametrize(
    ("action", "params", "reason"),
    [
        ("start-load", {"rate": -5}, "(root).rate"),
        ("start-load", {"rate": 1.5}, "must be of type integer"),
        ("start-load", {"rate": 2_000_000_000}, "(root).rate"),
        ("start-load", {"ratee": 5}, 'additional property "ratee" is not allowed'),
        ("start-load", {"p99-ms": 0}, "(root).p99-ms"),
        ("start-load", {"p99-ms": -1}, "(root).p99-ms"),
        ("start-load", {"duration": ""}, "(root).duration : does not match pattern"),
        ("start-load", {"duration": "soon"}, "(root).duration : does not match pattern"),
        ("start-load", {"run-id": "../x"}, "(root).run-id : does not match pattern"),
        ("start-load", {"executor": "per-vu-iterations"}, "(root).executor"),
        ("start-load", {"max-error-rate": 1.5}, "(root).max-error-rate"),
        ("start-load", {"vus": 0}, "(root).vus"),
        ("start-load", {"body-max": 2_000_000}, "(root).body-max"),
        ("start-load", {"labels": 69}, "must be of type string"),
        ("get-results", {"run-id": "../x"}, "(root).run-id : does not match pattern"),
        ("get-results", {"run-id": ""}, "(root).run-id : does not match pattern"),
        ("get-results", {"id": "r1"}, 'additional property "id" is not allowed'),
        ("stop-load", {"force": True}, 'additional property "force" is not allowed'),
    ],
)
def test_bad_params_are_refused(action: str, params: dict[str, Any], reason: str) -> None:
    with pytest.raises(ParamsRefusedError) as refused:
        validate_action_params(K6_CHARMCRAFT_YAML, action, params)
    assert reason in refused.value.reason
    assert refused.value.reason.startswith(f"action {action}: validation failed:")
    assert "\n" not in refused.value.reason


def test_asking_for_no_such_action_is_not_a_refusal() -> None:
    with pytest.raises(JujuSchemaError, match='no action "run-load"'):
        validate_action_params(K6_CHARMCRAFT_YAML, "run-load", {})


DURATIONS = [
    "60s", "10m", "1h", "1h30m", "1m30s", "1.5s", "500ms", "1m10ms", "2h3m4s5ms", "0.25s",
    "", "s", "m", "90", "1.5m", "1s1m", "10 m", "-1s", "1d", "1h1h", "ms5",
]  # fmt: skip


@pytest.mark.parametrize("duration", DURATIONS)
def test_the_duration_pattern_agrees_with_the_run_spec(duration: str) -> None:
    """What Juju lets through is what RunSpec parses, and the reverse."""
    try:
        parse_duration(duration)
        parses = True
    except ValueError:
        parses = False
    try:
        start_load({"duration": duration})
        juju_accepts = True
    except ParamsRefusedError:
        juju_accepts = False
    assert juju_accepts == parses


def test_run_id_patterns_are_the_run_specs() -> None:
    get_results = CHARMCRAFT["actions"]["get-results"]["params"]["run-id"]
    assert START_PARAMS["run-id"]["pattern"] == core_spec.RUN_ID_PATTERN
    assert get_results["pattern"] == core_spec.RUN_ID_PATTERN


@pytest.mark.parametrize(
    ("param", "low", "high"),
    [
        ("vus", 1, core_spec.MAX_VUS),
        ("rate", 1, core_spec.MAX_RATE),
        ("logs-per-request", 1, core_spec.MAX_LOGS_PER_REQUEST),
        ("requests-per-iteration", 1, core_spec.MAX_REQUESTS_PER_ITERATION),
        ("body-min", 1, core_spec.MAX_BODY),
        ("body-max", 1, core_spec.MAX_BODY),
        ("min-logs-per-minute", 0, core_spec.MAX_RATE),
        ("max-error-rate", 0, 1),
    ],
)
def test_schema_bounds_are_the_run_specs(param: str, low: int, high: int) -> None:
    schema = START_PARAMS[param]
    assert (schema["minimum"], schema["maximum"]) == (low, high)
    start_load({param: high})  # the bounds themselves are allowed
    with pytest.raises(ParamsRefusedError):
        start_load({param: high + 1})


# ---- the integration suite's gate runs, one per scenario of gates.yaml -----------------------


@pytest.mark.parametrize("scenario", settings.gate_scenarios(GATES_FILE))
def test_every_gated_scenario_starts_as_juju_validates_it(scenario: str) -> None:
    """What the suite hands start-load for each scenario of loadgate's gates.yaml passes Juju's
    validation, and the charm (dropping the otlp-logs defaults Juju fills in, as charm.py does)
    rebuilds the very run the suite asked for."""
    spec = settings.gate_spec(GATES_FILE, None, {"revision": "1"}, scenario=scenario)
    params = actions.start_load_params(spec)
    validated = start_load(params)
    assert {k: validated[k] for k in params} == params
    seen = without_filled_defaults(validated, {p.name: p.default for p in PARAMS})
    seen["target"] = seen.get("target") or "https://otelcol-0.otelcol-endpoints.m.svc:4318"
    rebuilt = RunSpec.from_params(seen)
    assert rebuilt.scenario == spec.scenario == scenario
    assert (rebuilt.rate, rebuilt.p99_ms, rebuilt.duration) == (
        spec.rate,
        spec.p99_ms,
        spec.duration,
    )
    assert rebuilt.effective_min_logs_per_minute == spec.effective_min_logs_per_minute
