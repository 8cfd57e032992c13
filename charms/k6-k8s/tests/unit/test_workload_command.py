"""The k6 service: its argv survives Pebble's command parsing, and its layer never restarts k6."""

from __future__ import annotations

import shlex

import pytest
from ops import pebble

from loadgate_contract.k6args import Segment, build_command
from loadgate_contract.spec import RunSpec
from workload import CHECK, SERVICE, K6Workload, Paths, WorkloadError, service_command


class NoPebble:
    """layer() and service_command() need no Pebble; any call would be a bug."""

    def __getattr__(self, name: str) -> object:
        raise AssertionError(f"unexpected Pebble call {name}")


@pytest.mark.parametrize(
    "argv",
    [
        ["/usr/bin/k6", "run", "-e", "THRESHOLD=p(99)<100", "/etc/k6/scripts/otlp-logs.js"],
        ["/opt/my k6/k6", "run", "--log-output=file=/var/lib/k6 runs/r 1/k6.log", "a b.js"],
        ["k6", "run", "-e", 'X=it\'s "quoted"', "-e", "Y=$HOME;rm -rf /", "-e", "Z=`id`|&"],
        ["k6", "run", "-e", "EMPTY=", "", "tab\there", "new\nline"],
    ],
)
def test_service_command_round_trips_through_shlex(argv: list[str]) -> None:
    """Pebble shlex-splits `command`: the split must give back exactly the argv."""
    assert shlex.split(service_command(argv)) == argv


def test_bare_brackets_are_refused() -> None:
    """Pebble reads a bare [ ... ] as its default-arguments group, even quoted."""
    with pytest.raises(WorkloadError, match=r"'\['"):
        service_command(["k6", "run", "[", "x", "]"])


def test_real_command_round_trips_with_spaces_in_paths() -> None:
    spec = RunSpec.from_params({"target": "http://otel:4318", "p99-ms": 99.5, "labels": "rev=69"})
    paths = Paths(k6_bin="/opt/k 6/k6", scripts="/srv/my scripts", runs="/srv/run dir")
    command = build_command(
        spec,
        k6_bin=paths.k6_bin,
        scripts_dir=paths.scripts,
        target="http://otel:4318",
        summary_path=paths.in_run(spec.run_id, "summary.json"),
        segment=Segment(1, 2),
        log_file=paths.in_run(spec.run_id, "k6.log"),
    )
    workload = K6Workload(NoPebble(), paths)  # type: ignore[arg-type]
    service = pebble.Layer(workload.layer(spec, command.argv, command.env)).services[SERVICE]
    assert shlex.split(service.command) == command.argv
    assert "/srv/my scripts/otlp-logs.js" in shlex.split(service.command)


def test_layer_runs_k6_once_and_watches_its_api() -> None:
    spec = RunSpec.from_params({"target": "http://otel:4318"})
    workload = K6Workload(NoPebble(), Paths(), api_address="127.0.0.1:7000")  # type: ignore[arg-type]
    layer = pebble.Layer(workload.layer(spec, ["k6", "run", "x.js"], {"SSL_CERT_FILE": "/ca.pem"}))
    service = layer.services[SERVICE]
    assert service.startup == "disabled"
    assert service.on_success == "ignore"
    assert service.on_failure == "ignore"
    assert service.kill_delay == "30s"  # time for k6 to write its summary after SIGTERM
    assert service.environment == {"SSL_CERT_FILE": "/ca.pem"}
    check = layer.checks[CHECK]
    assert check.http == {"url": "http://127.0.0.1:7000/v1/status"}
    # The check only tells the charm that k6 ended; it never restarts anything.
    assert check.level == pebble.CheckLevel.UNSET
