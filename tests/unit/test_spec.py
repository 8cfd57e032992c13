"""RunSpec validation: every bad parameter is named with what is allowed; good ones derive rates."""

from __future__ import annotations

import pytest

from loadgate.contract.spec import RunSpec, SpecError, parse_duration, parse_labels


def test_defaults_are_a_constant_arrival_rate_minute() -> None:
    spec = RunSpec.from_params({})
    assert spec.executor == "constant-arrival-rate"
    assert spec.duration_s == 60
    assert spec.iterations_per_minute == 12_000  # 60,000 records / 5 per request
    assert spec.effective_min_logs_per_minute == 57_000
    assert spec.run_id


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("60s", 60), ("10m", 600), ("1h30m", 5400), ("500ms", 0.5), ("1m30s", 90), ("2.5s", 2.5)],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["abc", "", "10", "m", "5x", "-5s", "1s1h"])
def test_parse_duration_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="k6 duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("params", "field", "fragment"),
    [
        ({"rate": -5}, "rate", "between 1 and"),
        ({"rate": "lots"}, "rate", "integer"),
        ({"body-min": 3000, "body-max": 2048}, "body-min", "must not exceed body-max (2048)"),
        ({"executor": "shared-iterations"}, "executor", "constant-vus, constant-arrival-rate"),
        ({"duration": "abc"}, "duration", "k6 duration"),
        ({"duration": "0s"}, "duration", "more than 0s"),
        ({"duration": "25h"}, "duration", "at most 24h"),
        ({"p99-ms": 0}, "p99-ms", "greater than 0"),
        ({"max-error-rate": 1.5}, "max-error-rate", "at most 1"),
        ({"vus": 0}, "vus", "between 1 and"),
        ({"vus": 2.5}, "vus", "integer"),
        ({"logs-per-request": 0}, "logs-per-request", "between 1 and 1000"),
        ({"requests-per-iteration": 101}, "requests-per-iteration", "between 1 and 100"),
        ({"scenario": "traces"}, "scenario", "otlp-logs"),
        ({"labels": "revision"}, "labels", "k=v"),
        ({"labels": "run_id=1"}, "labels", "reserved"),
        ({"labels": "bad-key=1"}, "labels", "must match"),
        ({"labels": "rev=has space"}, "labels", "letters, digits"),
        ({"rate": 3, "logs-per-request": 5}, "rate", "at least one iteration"),
        ({"executor": "constant-vus", "rate": 1000}, "rate", "arrival-rate executors"),
        ({"target": "ftp://x"}, "target", "http:// or https://"),
        ({"target": "http://127.0.0.1:4318/v1/logs"}, "target", "without a path"),
        ({"run-id": "has space"}, "run-id", "letters, digits"),
        ({"colour": "red"}, "colour", "unknown parameter"),
    ],
)
def test_bad_parameters_are_named(params: dict[str, object], field: str, fragment: str) -> None:
    with pytest.raises(SpecError) as info:
        RunSpec.from_params(params)
    messages = dict(info.value.problems)
    assert field in messages, info.value.problems
    assert fragment in messages[field]


def test_every_bad_parameter_is_reported_at_once() -> None:
    with pytest.raises(SpecError) as info:
        RunSpec.from_params({"rate": -1, "duration": "x", "executor": "nope"})
    assert set(info.value.fields) == {"rate", "duration", "executor"}


def test_local_runs_refuse_targets_off_loopback() -> None:
    with pytest.raises(SpecError, match="loopback"):
        RunSpec.from_params({"target": "http://10.1.2.3:4318"}, loopback_only=True)
    ok = RunSpec.from_params({"target": "http://127.0.0.2:4318/"}, loopback_only=True)
    assert ok.target == "http://127.0.0.2:4318"
    assert RunSpec.from_params({"target": "http://10.1.2.3:4318"}).target == "http://10.1.2.3:4318"


def test_required_target() -> None:
    with pytest.raises(SpecError, match="target: is required"):
        RunSpec.from_params({}, require_target=True)


def test_snake_and_kebab_case_are_the_same_parameter() -> None:
    a = RunSpec.from_params({"logs_per_request": 7, "run_id": "r1"})
    b = RunSpec.from_params({"logs-per-request": 7, "run-id": "r1"})
    assert a == b


def test_arrival_arithmetic_with_batched_requests() -> None:
    spec = RunSpec.from_params(
        {"rate": 200_000, "logs-per-request": 5, "requests-per-iteration": 4, "vus": 20}
    )
    assert spec.records_per_iteration == 20
    assert spec.iterations_per_minute == 10_000
    assert spec.offered_logs_per_minute == 200_000
    assert spec.max_vus == 200  # 10x the pre-allocated VUs beats one second of iterations (167)


def test_rate_that_does_not_divide_is_rounded_and_reported() -> None:
    spec = RunSpec.from_params({"rate": 1003, "logs-per-request": 5})
    assert spec.iterations_per_minute == 201
    assert spec.offered_logs_per_minute == 1005


def test_min_logs_per_minute_explicit_and_derived() -> None:
    assert RunSpec.from_params({"min-logs-per-minute": 0}).effective_min_logs_per_minute == 0
    ramp = RunSpec.from_params({"executor": "ramping-arrival-rate"})
    assert ramp.effective_min_logs_per_minute == 0
    vus = RunSpec.from_params({"executor": "constant-vus", "vus": 3})
    assert vus.offered_logs_per_minute is None
    assert vus.effective_min_logs_per_minute == 0


def test_labels_parse_and_round_trip() -> None:
    assert parse_labels("revision=69, channel=2/edge") == {"revision": "69", "channel": "2/edge"}
    spec = RunSpec.from_params({"labels": "revision=69"})
    assert RunSpec.from_params(spec.to_params()) == spec


def test_to_dict_has_every_parameter_and_derived_figures() -> None:
    d = RunSpec.from_params({"run-id": "r1"}).to_dict()
    expected = {
        "scenario", "executor", "vus", "rate", "duration", "logs_per_request", "body_min",
        "body_max", "p99_ms", "max_error_rate", "labels", "run_id", "duration_s",
        "iterations_per_minute", "effective_min_logs_per_minute",
    }  # fmt: skip
    assert expected <= set(d)
