"""The k6 command: an argv list whose -e variables carry the spec, never a shell string."""

from __future__ import annotations

import itertools
import shlex
from pathlib import Path

import pytest

from loadgate.contract import k6args
from loadgate.contract.spec import RunSpec


def _env_of(argv: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for flag, value in itertools.pairwise(argv):
        if flag == "-e":
            key, _, val = value.partition("=")
            out[key] = val
    return out


def _command(
    spec: RunSpec,
    *,
    summary_path: str = "/out/summary.json",
    remote_write_url: str | None = None,
    ca_file: str | None = None,
    segment: k6args.Segment | None = None,
) -> k6args.K6Command:
    return k6args.build_command(
        spec,
        k6_bin="/bin/k6",
        scripts_dir="/k6",
        target="http://127.0.0.1:4318/",
        summary_path=summary_path,
        remote_write_url=remote_write_url,
        ca_file=ca_file,
        segment=segment,
    )


def test_every_parameter_travels_as_an_env_argument() -> None:
    spec = RunSpec.from_params(
        {
            "run-id": "r1",
            "rate": 120_000,
            "duration": "2m",
            "logs-per-request": 10,
            "requests-per-iteration": 2,
            "body-min": 100,
            "body-max": 200,
            "p99-ms": 50.5,
            "max-error-rate": 0.02,
            "min-logs-per-minute": 100_000,
            "labels": "revision=69,channel=2/edge",
            "vus": 7,
        }
    )
    cmd = _command(spec)
    assert cmd.argv[:2] == ["/bin/k6", "run"]
    assert cmd.argv[-1] == str(Path("/k6/otlp-logs.js"))
    env = _env_of(cmd.argv)
    assert env == {
        "LOAD_TARGET": "http://127.0.0.1:4318",
        "LOAD_EXECUTOR": "constant-arrival-rate",
        "LOAD_VUS": "7",
        "LOAD_DURATION": "2m",
        "LOAD_LOGS_PER_REQUEST": "10",
        "LOAD_REQUESTS_PER_ITERATION": "2",
        "LOAD_BODY_MIN": "100",
        "LOAD_BODY_MAX": "200",
        "LOAD_P99_MS": "50.5",
        "LOAD_MAX_ERROR_RATE": "0.02",
        "LOAD_MIN_LOGS_PER_MINUTE": "100000",
        "LOAD_RUN_ID": "r1",
        "LOAD_INSTANCE": "k6",
        "LOAD_STREAMS": "4",
        "LOAD_LABELS": "channel=2/edge,revision=69",
        "LOAD_SUMMARY": "/out/summary.json",
        "LOAD_RATE": "120000",
        "LOAD_PREALLOCATED_VUS": "11",  # 100 iterations/s at twice 50.5 ms, more than 7
        "LOAD_MAX_VUS": "100",  # one second of iterations (6,000 per minute)
    }
    assert cmd.env["GOGC"] == k6args.K6_GOGC
    assert "--address=" in cmd.argv  # no REST API unless asked


def test_constant_vus_sends_no_rate() -> None:
    env = _env_of(_command(RunSpec.from_params({"executor": "constant-vus"})).argv)
    assert "LOAD_RATE" not in env
    assert "LOAD_MAX_VUS" not in env
    assert "LOAD_PREALLOCATED_VUS" not in env


def test_the_default_run_starts_with_vus_for_its_latency_tail() -> None:
    """60,000 records/min in requests of 5 is 200 iterations a second: 10 pre-allocated VUs
    were all busy after a 50 ms hiccup, and k6 dropped the iterations that fell due (4 on a
    quiet machine). It starts with enough for twice the p99 gate (100 ms): 40."""
    spec = RunSpec.from_params({})
    env = _env_of(_command(spec).argv)
    assert (env["LOAD_VUS"], env["LOAD_PREALLOCATED_VUS"], env["LOAD_MAX_VUS"]) == (
        "10", "40", "200",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("params", "preallocated"),
    [
        ({}, 40),  # 200 iterations/s x 0.2 s
        ({"vus": 60}, 60),  # --vus is the fewest
        ({"rate": 1003}, 10),  # a slow rate keeps --vus
        ({"p99-ms": 10_000}, 100),  # a lax gate: at most PREALLOCATED_VUS_MAX
        ({"vus": 300, "p99-ms": 3_600_000, "rate": 300_000}, 300),  # --saturate's, as asked
        ({"vus": 1, "p99-ms": 1000, "rate": 15_000}, 50),  # never above max_vus (50)
        ({"executor": "ramping-arrival-rate"}, 40),
        ({"executor": "constant-vus", "vus": 7}, 7),
        # Its VUs ask an instant and a range query in turn over their own probes: spread over
        # 100 VUs at 10 queries a second, each asked one (the local suite found no range query).
        ({"scenario": "logql-query", "rate": 600, "p99-ms": 5000}, 10),
    ],
)
def test_preallocated_vus(params: dict[str, object], preallocated: int) -> None:
    spec = RunSpec.from_params(params)
    assert spec.preallocated_vus == preallocated
    assert spec.vus <= spec.preallocated_vus <= max(spec.max_vus, spec.vus)


def test_argv_survives_a_round_trip_through_a_command_line() -> None:
    # Pebble takes a command line; shlex.join/split must give back exactly the argv.
    spec = RunSpec.from_params({"labels": "channel=2/edge", "run-id": "r-1", "p99-ms": 12.5})
    argv = _command(spec, summary_path="/out dir/s.json").argv
    assert shlex.split(shlex.join(argv)) == argv


def test_remote_write_and_ca() -> None:
    spec = RunSpec.from_params({})
    cmd = _command(spec, remote_write_url="http://prom:9090/api/v1/write", ca_file="/tls/ca.crt")
    i = cmd.argv.index("-o")
    assert cmd.argv[i + 1] == "experimental-prometheus-rw"
    assert cmd.env["K6_PROMETHEUS_RW_SERVER_URL"] == "http://prom:9090/api/v1/write"
    assert cmd.env["K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM"] == "true"
    assert cmd.env["SSL_CERT_FILE"] == "/tls/ca.crt"


@pytest.mark.parametrize(
    ("index", "count", "segment", "sequence"),
    [
        (0, 3, "0:1/3", "0,1/3,2/3,1"),
        (1, 3, "1/3:2/3", "0,1/3,2/3,1"),
        (2, 3, "2/3:1", "0,1/3,2/3,1"),
        (1, 2, "1/2:1", "0,1/2,1"),
    ],
)
def test_execution_segments(index: int, count: int, segment: str, sequence: str) -> None:
    seg = k6args.Segment(index, count)
    assert (seg.segment, seg.sequence) == (segment, sequence)
    argv = _command(RunSpec.from_params({}), segment=seg).argv
    assert argv[argv.index("--execution-segment") + 1] == segment
    assert argv[argv.index("--execution-segment-sequence") + 1] == sequence
    assert _env_of(argv)["LOAD_HISTOGRAM"] == "1"


def test_single_instance_has_no_segment_and_no_histogram() -> None:
    argv = _command(RunSpec.from_params({}), segment=k6args.Segment(0, 1)).argv
    assert "--execution-segment" not in argv
    assert "LOAD_HISTOGRAM" not in _env_of(argv)


def test_segment_out_of_range() -> None:
    with pytest.raises(ValueError, match="out of range"):
        k6args.Segment(3, 3)
