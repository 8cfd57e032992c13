"""Core features the k6 charm relies on: spec round trip, per-segment thresholds, k6's log file."""

from __future__ import annotations

import pytest

from loadgate.contract.k6args import Segment, build_command
from loadgate.contract.spec import RunSpec


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"executor": "constant-vus", "vus": 3, "duration": "1h30m", "labels": "rev=69,track=2"},
        {"rate": 120000, "min-logs-per-minute": 0, "p99-ms": 12.5, "target": "https://o:4318"},
        {"executor": "ramping-arrival-rate", "body-min": 10, "body-max": 10, "streams": 2},
    ],
)
def test_to_params_rebuilds_the_same_spec(params: dict[str, object]) -> None:
    spec = RunSpec.from_params(params)
    assert RunSpec.from_params(spec.to_params()) == spec


def variables(argv: list[str]) -> dict[str, str]:
    return dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "-e")


def test_each_segment_checks_its_share_of_the_records_rate() -> None:
    spec = RunSpec.from_params({"rate": 60000, "min-logs-per-minute": 50000})
    whole = build_command(spec, k6_bin="k6", scripts_dir="/s", target="http://o", summary_path="/x")
    assert variables(whole.argv)["LOAD_MIN_LOGS_PER_MINUTE"] == "50000"
    third = build_command(
        spec, k6_bin="k6", scripts_dir="/s", target="http://o", summary_path="/x",
        segment=Segment(2, 3),
    )  # fmt: skip
    assert variables(third.argv)["LOAD_MIN_LOGS_PER_MINUTE"] == "16666"
    assert Segment(2, 3).share == pytest.approx(1 / 3)


def test_log_file_goes_to_k6s_log_output() -> None:
    spec = RunSpec.from_params({})
    cmd = build_command(
        spec, k6_bin="k6", scripts_dir="/s", target="http://o:4318", summary_path="/x",
        log_file="/runs/r 1/k6.log",
    )  # fmt: skip
    assert "--log-output=file=/runs/r 1/k6.log" in cmd.argv
    without = build_command(
        spec, k6_bin="k6", scripts_dir="/s", target="http://o", summary_path="/x"
    )
    assert not any(a.startswith("--log-output") for a in without.argv)
