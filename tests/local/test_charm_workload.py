"""The k6 charm's workload module against a real Pebble daemon running the real k6 binary.

The charm's container is played by a temp dir (its paths hold spaces, so the argv Pebble
shlex-splits must survive quoting) served by `pebble run`; k6 loads the collector of the suite's
shared local stack (conftest.py).

Measured with k6 v1.8.1 and these tests: k6 ends on SIGTERM (Pebble's stop) with exit 105 and
still runs handleSummary, so a stopped run keeps partial figures; Pebble shows that exit as
`inactive`, the same as exit 0, hence the `stopped` flag the workload records before stopping.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import ops.pebble
import pytest

from loadgate.stack import local as stack_local
from loadgate.stack import pebble_daemon

CHARM = Path(__file__).resolve().parents[2] / "charms" / "k6-k8s"
sys.path.insert(0, str(CHARM / "src"))

from loadgate_contract.k6args import Segment  # noqa: E402  (the charm's own copy of the core)
from loadgate_contract.spec import RunSpec  # noqa: E402
from workload import CHECK, K6Workload, Paths  # noqa: E402

pytestmark = pytest.mark.local


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def collector_url(stack: stack_local.StackInfo) -> str:
    """The collector's OTLP/HTTP base URL on the suite's shared stack."""
    return stack.otlp_http_url


@pytest.fixture(scope="module")
def pebble_client(
    built_bin_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ops.pebble.Client]:
    state = tmp_path_factory.mktemp("pebble") / "pebble state"
    state.mkdir()
    daemon = pebble_daemon.spawn(
        built_bin_dir / "pebble", state, state / "pebble.log", args=("run", "--hold")
    )
    client = ops.pebble.Client(socket_path=str(pebble_daemon.socket_path(state)))
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                client.get_system_info()
                break
            except (ops.pebble.ConnectionError, FileNotFoundError, ConnectionError) as exc:
                if time.monotonic() > deadline or daemon.poll() is not None:
                    raise RuntimeError(f"pebble did not start; see {state / 'pebble.log'}") from exc
                time.sleep(0.1)
        yield client
    finally:
        try:
            if any(s.is_running() for s in client.get_services()):
                client.stop_services([s.name for s in client.get_services() if s.is_running()])
        except (ops.pebble.Error, OSError):
            pass
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=20)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()


@pytest.fixture
def workload(pebble_client: ops.pebble.Client, built_bin_dir: Path, tmp_path: Path) -> K6Workload:
    """The charm's workload with its container paths in a temp dir (with spaces)."""
    container = tmp_path / "container root"
    where = Paths(
        k6_bin=str(built_bin_dir / "k6"),
        scripts=str(container / "etc" / "k6 scripts"),
        runs=str(container / "var" / "lib" / "k6 runs"),
        ca_bundle=str(container / "etc" / "k6" / "ca" / "bundle.pem"),
    )
    w = K6Workload(
        pebble_client,
        where,
        api_address=f"127.0.0.1:{free_port()}",
        check_period="1s",
        check_threshold=1,
    )
    w.push_scripts(CHARM / "src" / "k6")
    return w


WHOLE = Segment(0, 1)


def start(
    workload: K6Workload,
    target: str,
    duration: str,
    segment: Segment = WHOLE,
    extra: dict[str, object] | None = None,
) -> RunSpec:
    params = {"target": target, "rate": 6000, "labels": "test=charm", "duration": duration}
    spec = RunSpec.from_params({**params, **(extra or {})})
    workload.start(spec, target=target, instance="k6-k8s-0", segment=segment)
    return spec


def wait_until(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.25)


def check_status(client: ops.pebble.Client) -> ops.pebble.CheckStatus | str:
    return client.get_checks(names=[CHECK])[0].status


def test_run_passes_and_its_figures_are_read_back(workload: K6Workload, collector_url: str) -> None:
    client = workload.client
    spec = start(workload, collector_url, "6s")

    outcome = workload.outcome()
    assert outcome is not None
    assert outcome.run_id == spec.run_id
    assert outcome.status == "running"
    assert workload.is_running()
    wait_until(lambda: check_status(client) == ops.pebble.CheckStatus.UP, 10, "k6's API check up")

    # The completion signal: once k6 exits, its API check goes down (Juju: pebble-check-failed).
    wait_until(lambda: not workload.is_running(), 40, "k6 to finish")
    wait_until(lambda: check_status(client) == ops.pebble.CheckStatus.DOWN, 10, "check down")

    outcome = workload.outcome()
    assert outcome is not None
    assert outcome.status == "passed", outcome.detail
    figures = outcome.figures
    assert figures is not None
    raw = json.loads(Path(workload.paths.in_run(spec.run_id, "summary.json")).read_text())
    assert figures.requests == raw["requests"] > 60  # 20 requests/s for 6s
    assert figures.records_sent == figures.requests * spec.logs_per_request
    assert figures.records_accepted == figures.records_sent
    assert figures.failed == 0
    assert figures.p99_ms is not None
    assert figures.p99_ms < spec.p99_ms
    assert 5.5 <= figures.duration_s < 15
    assert figures.thresholds
    assert all(figures.thresholds.values())

    record = workload.record(spec.run_id)
    assert record is not None
    assert record.status == "passed"  # recorded: readable after the next run replaced the plan
    assert check_status(client) == ops.pebble.CheckStatus.INACTIVE  # quiet between runs
    assert workload.last_run_id() == spec.run_id


def test_a_segment_sends_its_share_and_counts_durations_for_combining(
    workload: K6Workload, collector_url: str
) -> None:
    """Unit 2 of 2: half the requests, and the duration histogram the leader merges for p99."""
    spec = start(workload, collector_url, "4s", Segment(1, 2))
    wait_until(lambda: not workload.is_running(), 40, "k6 to finish")
    outcome = workload.outcome(spec.run_id)
    assert outcome is not None
    assert outcome.status == "passed", outcome.detail
    figures = outcome.figures
    assert figures is not None
    assert 30 <= figures.requests <= 50  # 20 requests/s for 4s, halved
    assert sum(figures.histogram.counts.values()) == figures.requests
    # The histogram's p99 is the upper bound of a bucket (2^(1/8) wide) that holds a request at
    # or above k6's own p99: between that and the slowest request's bucket.
    raw = json.loads(Path(workload.paths.in_run(spec.run_id, "summary.json")).read_text())
    p99 = figures.histogram.quantile_ms(0.99)
    assert p99 is not None
    assert figures.p99_ms is not None
    assert figures.p99_ms <= p99 <= raw["max_ms"] * 2 ** (1 / 8) * 1.001


def test_stop_load_midway_keeps_partial_figures(workload: K6Workload, collector_url: str) -> None:
    spec = start(workload, collector_url, "60s")
    time.sleep(4)
    assert workload.outcome() is not None
    assert workload.is_running()

    assert workload.stop() == spec.run_id
    assert not workload.is_running()
    assert workload.service_state() == "inactive"  # Pebble shows k6's exit 105 like exit 0

    outcome = workload.outcome()
    assert outcome is not None
    assert outcome.status == "stopped"
    assert "stop-load" in outcome.detail
    figures = outcome.figures
    assert figures is not None  # k6 ran handleSummary on SIGTERM
    assert figures.requests > 20
    assert figures.duration_s < 30
    assert figures.records_accepted == figures.records_sent

    assert workload.stop() is None  # nothing left to stop


def test_crossed_threshold_is_failed(workload: K6Workload, collector_url: str) -> None:
    spec = start(workload, collector_url, "3s", extra={"p99-ms": 0.001})
    wait_until(lambda: not workload.is_running(), 40, "k6 to finish")
    assert workload.service_state() == "error"  # k6 exit 99
    outcome = workload.outcome(spec.run_id)
    assert outcome is not None
    assert outcome.status == "failed"
    assert "http_req_duration{expected_response:true}{p(99)<0.001}" in outcome.detail


def test_k6_that_cannot_start_is_an_error_with_its_log(
    pebble_client: ops.pebble.Client, built_bin_dir: Path, tmp_path: Path, collector_url: str
) -> None:
    where = Paths(
        k6_bin=str(built_bin_dir / "k6"),
        scripts=str(tmp_path / "no scripts here"),
        runs=str(tmp_path / "runs"),
    )
    workload = K6Workload(pebble_client, where, api_address=f"127.0.0.1:{free_port()}")
    spec = start(workload, collector_url, "5s")  # k6 exits at once: no exception here
    wait_until(lambda: not workload.is_running(), 10, "k6 to exit")
    outcome = workload.outcome(spec.run_id)
    assert outcome is not None
    assert outcome.status == "error"
    assert "without a summary" in outcome.detail
    assert "couldn't be found on local disk" in outcome.detail  # the tail of k6's log
