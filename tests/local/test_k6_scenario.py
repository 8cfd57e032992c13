"""The k6 scenario with the real k6 binary: the options it derives from LOAD_* match RunSpec, its
payloads have the OTLP shape, and its summary accounts for every request it sent."""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from loadgate import paths
from loadgate.contract import k6args
from loadgate.contract.spec import RunSpec
from loadgate.contract.summary import read_summary
from loadgate.stack import tls

pytestmark = pytest.mark.local


def js_number(value: float) -> str:
    """How JavaScript prints a number."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def k6_options(bin_dir: Path, spec: RunSpec) -> dict[str, Any]:
    cmd = k6args.build_command(
        spec,
        k6_bin=bin_dir / "k6",
        scripts_dir=paths.k6_dir(),
        target="http://127.0.0.1:9",
        summary_path="/dev/null",
    )
    # `k6 inspect` evaluates the script's init context with the same -e variables.
    variables = cmd.argv[cmd.argv.index("run") + 1 : -1]
    argv = [str(bin_dir / "k6"), "inspect", "--execution-requirements"]
    argv += [a for a in variables if not a.startswith("--")]
    argv.append(cmd.argv[-1])
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"rate": 200_000, "logs-per-request": 5, "requests-per-iteration": 4, "vus": 20},
        {"rate": 1003, "logs-per-request": 5, "p99-ms": 12.5, "max-error-rate": 0.05},
        {"executor": "ramping-arrival-rate", "rate": 600_000, "duration": "10m"},
        {"executor": "constant-vus", "vus": 7, "duration": "90s"},
    ],
)
def test_k6_derives_the_same_options_as_runspec(
    built_bin_dir: Path, params: dict[str, Any]
) -> None:
    spec = RunSpec.from_params(params)
    opts = k6_options(built_bin_dir, spec)
    scenario = opts["scenarios"]["logs"]
    assert scenario["executor"] == spec.executor
    if spec.executor == "constant-vus":
        assert scenario["vus"] == spec.vus
    else:
        assert scenario["preAllocatedVUs"] == spec.preallocated_vus
        assert scenario["maxVUs"] == spec.max_vus
        assert scenario["timeUnit"] == "1m0s"
        if spec.executor == "constant-arrival-rate":
            assert scenario["rate"] == spec.iterations_per_minute
        else:
            assert scenario["stages"][0]["target"] == spec.iterations_per_minute
    thresholds = opts["thresholds"]
    assert thresholds["errors"] == [f"rate<={js_number(spec.max_error_rate)}"]
    # The p99 is of accepted requests only: a refused one is an error, not a latency.
    assert thresholds["http_req_duration{expected_response:true}"] == [
        f"p(99)<{js_number(spec.p99_ms)}"
    ]
    assert "http_req_duration" not in thresholds
    if spec.effective_min_logs_per_minute:
        rate = spec.effective_min_logs_per_minute / 60
        assert thresholds["log_records_accepted"] == [f"rate>={js_number(rate)}"]
    else:
        assert "log_records_accepted" not in thresholds


class Capture(BaseHTTPRequestHandler):
    bodies: ClassVar[list[tuple[str, bytes]]] = []
    lock = threading.Lock()
    count = 0
    failure_delay_s = 0.0

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with Capture.lock:
            Capture.count += 1
            n = Capture.count
            Capture.bodies.append((self.headers.get("Content-Type", ""), body))
        status = 503 if n % 4 == 0 else 200  # every fourth request fails
        if status != 200:
            time.sleep(Capture.failure_delay_s)  # slow refusals: a p99 that counted them shows it
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def capture_server() -> Iterator[str]:
    Capture.bodies, Capture.count = [], 0
    server = ThreadingHTTPServer(("127.0.0.1", 0), Capture)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_payloads_and_summary_account_for_every_request(
    built_bin_dir: Path, capture_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Capture, "failure_delay_s", 0.4)
    spec = RunSpec.from_params(
        {
            "run-id": "payload-1",
            "rate": 1200,  # 4 requests per second
            "duration": "3s",
            "logs-per-request": 3,
            "body-min": 40,
            "body-max": 60,
            "labels": "revision=7",
        }
    )
    summary_path = tmp_path / "summary.json"
    cmd = k6args.build_command(
        spec,
        k6_bin=built_bin_dir / "k6",
        scripts_dir=paths.k6_dir(),
        target=capture_server,
        summary_path=summary_path,
        instance="test",
    )
    # With the duration buckets several k6 instances merge their p99 from (LOAD_HISTOGRAM).
    env = {**os.environ, **cmd.env, "LOAD_HISTOGRAM": "1"}
    proc = subprocess.run(cmd.argv, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 99, proc.stdout + proc.stderr  # error-rate threshold crossed

    requests = len(Capture.bodies)
    assert requests >= 10
    seen: set[str] = set()
    for content_type, raw in Capture.bodies:
        assert content_type == "application/json"
        doc = json.loads(raw)
        (resource_logs,) = doc["resourceLogs"]
        attrs = {
            a["key"]: a["value"]["stringValue"] for a in resource_logs["resource"]["attributes"]
        }
        assert attrs["service.name"] == "loadgate-k6"
        assert attrs["loadtest.run_id"] == "payload-1"
        assert attrs["loadtest.label.revision"] == "7"
        assert attrs["service.instance.id"].startswith("test-s")
        (scope_logs,) = resource_logs["scopeLogs"]
        assert scope_logs["scope"]["name"] == "loadgate.k6"
        records = scope_logs["logRecords"]
        assert len(records) == 3
        for rec in records:
            assert int(rec["timeUnixNano"]) > 1_600_000_000 * 10**9
            assert rec["observedTimeUnixNano"] == rec["timeUnixNano"]
            assert (rec["severityNumber"], rec["severityText"]) == (9, "INFO")
            body = rec["body"]["stringValue"]
            assert body.startswith("run=payload-1 i=test vu=")
            _, _, text = body.partition(" it=")
            text = text.split(" ", 1)[1]
            assert 40 <= len(text) <= 60, text
            record_attrs = {a["key"] for a in rec["attributes"]}
            assert record_attrs == {"vu", "stream_id"}
            assert body not in seen  # every line is unique: Loki never deduplicates
            seen.add(body)

    client = read_summary(summary_path)
    failures = requests // 4
    assert client.requests == requests
    assert client.failed == failures
    assert client.error_rate == pytest.approx(failures / requests)
    assert client.records_sent == requests * 3
    assert client.records_accepted == (requests - failures) * 3
    assert client.thresholds["errors{rate<=0.01}"] is False
    assert "log records sent" in proc.stdout  # the text summary for people
    # The refusals took 400 ms, a quarter of the requests: the p99 and the duration histogram
    # hold the accepted requests only.
    assert client.p99_ms is not None
    assert client.p99_ms < 300
    assert sum(client.histogram.counts.values()) == requests - failures
    merged_p99 = client.histogram.quantile_ms(0.99)
    assert merged_p99 is not None
    assert merged_p99 < 300


@pytest.fixture
def https_capture_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The capture server behind TLS with a fresh CA; yields its URL and the CA file."""
    material = tls.write(tls.generate(), tmp_path / "tls")
    Capture.bodies, Capture.count = [], 0
    server = ThreadingHTTPServer(("127.0.0.1", 0), Capture)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(material.server_cert, material.server_key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"https://localhost:{server.server_address[1]}", material.ca_cert
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("trust_ca", [True, False])
def test_https_targets_are_verified_against_the_given_ca(
    built_bin_dir: Path, https_capture_server: tuple[str, Path], tmp_path: Path, trust_ca: bool
) -> None:
    url, ca_file = https_capture_server
    spec = RunSpec.from_params({"rate": 600, "duration": "2s", "run-id": "tls-1"})
    summary_path = tmp_path / "summary.json"
    cmd = k6args.build_command(
        spec,
        k6_bin=built_bin_dir / "k6",
        scripts_dir=paths.k6_dir(),
        target=url,
        summary_path=summary_path,
        ca_file=ca_file if trust_ca else None,
    )
    env = {**os.environ, **cmd.env}
    if not trust_ca:
        env.pop("SSL_CERT_FILE", None)
    subprocess.run(cmd.argv, env=env, capture_output=True, check=False)
    client = read_summary(summary_path)
    assert client.requests > 0
    if trust_ca:
        assert len(Capture.bodies) == client.requests  # every request reached the server
    else:
        # Without the CA, k6 refuses the server's certificate: nothing is delivered.
        assert Capture.bodies == []
        assert client.failed == client.requests
        assert client.records_accepted == 0
