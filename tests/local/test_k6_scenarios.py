"""otlp-metrics and loki-push with the real k6 binary (otlp-traces and logql-query:
test_k6_traces_and_queries.py): the options each scenario derives from LOAD_* match RunSpec
and the registry's names, the payloads its builders make have the shape the
collector and Loki take (captured off the wire), the metrics clock never repeats a
millisecond, and the summary accounts for every request in the scenario's unit."""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import threading
from collections import defaultdict
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from test_k6_scenario import Capture, js_number

from loadgate import paths
from loadgate.contract import k6args
from loadgate.contract import scenarios as reg
from loadgate.contract.spec import RunSpec
from loadgate.contract.summary import read_summary
from loadgate.stack import tls

pytestmark = pytest.mark.local

HERE = Path(__file__).resolve().parent
# The k6 scenario's key and function, as k6/lib/scenarios.js declares them.
K6_SCENARIO = {"otlp-logs": "logs", "otlp-metrics": "metrics", "loki-push": "push",
               "otlp-traces": "traces", "logql-query": "query"}  # fmt: skip
K6_EXEC = {"otlp-logs": "sendLogs", "otlp-metrics": "sendMetrics", "loki-push": "pushLines",
           "otlp-traces": "sendTraces", "logql-query": "queryLines"}  # fmt: skip


def inspect(bin_dir: Path, spec: RunSpec) -> dict[str, Any]:
    """`k6 inspect` of the spec's scenario with the same -e variables k6 run would get."""
    cmd = k6args.build_command(
        spec, k6_bin=bin_dir / "k6", scripts_dir=paths.k6_dir(), target="http://127.0.0.1:9",
        summary_path="/dev/null", hosts={"loki.test": "127.0.0.1"},
    )  # fmt: skip
    variables = cmd.argv[cmd.argv.index("run") + 1 : -1]
    argv = [str(bin_dir / "k6"), "inspect", "--execution-requirements"]
    argv += [a for a in variables if not a.startswith("--")]
    argv.append(cmd.argv[-1])
    return json.loads(subprocess.run(argv, check=True, capture_output=True, text=True).stdout)


@pytest.mark.parametrize("kind", reg.ALL, ids=[s.name for s in reg.ALL])
def test_each_scenario_derives_the_runspecs_options_and_the_registrys_names(
    built_bin_dir: Path, kind: reg.Scenario
) -> None:
    spec = RunSpec.from_params({"scenario": kind.name, "rate": 120_000, "labels": "rev=3"})
    opts = inspect(built_bin_dir, spec)
    key = K6_SCENARIO[kind.name]
    # A scenario that pushes what it queries (logql-query) pushes on a k6 scenario of its own,
    # at its push rate in requests of loki-push's shape, whatever its queries' executor.
    pushes = {"push"} if kind.pushed else set()
    assert set(opts["scenarios"]) == {key} | pushes
    if kind.pushed:
        push = opts["scenarios"]["push"]
        assert (push["exec"], push["executor"]) == ("pushLines", "constant-arrival-rate")
        assert push["rate"] == spec.push_rate // spec.lines_per_push
        assert opts["thresholds"][kind.wrong_metric] == ["count<1"]
        assert opts["thresholds"][kind.duration_metric] == [f"p(99)<{js_number(spec.p99_ms)}"]
    scenario = opts["scenarios"][key]
    assert scenario["exec"] == K6_EXEC[kind.name]
    assert scenario["rate"] == spec.iterations_per_minute
    assert scenario["maxVUs"] == spec.max_vus
    rate = spec.effective_min_logs_per_minute / 60
    assert opts["thresholds"][kind.accepted_metric] == [f"rate>={js_number(rate)}"]
    assert opts["tags"] == {"rev": "3", "run_id": spec.run_id, "scenario": kind.name,
                            "instance": "k6"}  # fmt: skip
    assert opts["hosts"] == {"loki.test": "127.0.0.1"}


@pytest.fixture
def capture() -> Iterator[str]:
    Capture.bodies, Capture.count = [], 0
    server = ThreadingHTTPServer(("127.0.0.1", 0), Capture)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


LOKI_NAME = "loki-0.loki-endpoints.test.svc.cluster.local"


@pytest.fixture
def loki_like(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The capture server behind TLS, its certificate for Loki's in-cluster name only (no IP):
    k6 reaches it on loopback by that name (LOAD_HOSTS) and verifies it with the CA."""
    material = tls.generate()
    written = tls.write(material, tmp_path / "tls")
    cert, key = tls.issue_server_cert(material, (LOKI_NAME,), ips=())
    (tmp_path / "loki.crt").write_bytes(cert)
    (tmp_path / "loki.key").write_bytes(key)
    Capture.bodies, Capture.count = [], 0
    server = ThreadingHTTPServer(("127.0.0.1", 0), Capture)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "loki.crt", tmp_path / "loki.key")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"https://{LOKI_NAME}:{server.server_address[1]}", written.ca_cert
    server.shutdown()
    server.server_close()


def run_k6(
    bin_dir: Path, spec: RunSpec, target: str, tmp_path: Path, **kw: Any
) -> subprocess.CompletedProcess[str]:
    cmd = k6args.build_command(
        spec, k6_bin=bin_dir / "k6", scripts_dir=paths.k6_dir(), target=target,
        summary_path=tmp_path / "summary.json", instance="test", **kw,
    )  # fmt: skip
    env = {**os.environ, **cmd.env}
    return subprocess.run(cmd.argv, env=env, capture_output=True, text=True, check=False)


def attrs(items: list[dict[str, Any]]) -> dict[str, str]:
    return {a["key"]: a["value"]["stringValue"] for a in items}


def check_metrics_body(doc: dict[str, Any], stamps: dict[tuple[str, str], list[int]]) -> int:
    """The shape of one otlp-metrics request (4 series x 3 points, 5 buckets); the points' time
    stamps per series (VU, series) go to `stamps`. Returns its data points."""
    (rm,) = doc["resourceMetrics"]
    resource = attrs(rm["resource"]["attributes"])
    assert resource["service.name"] == "loadgate-k6"
    assert resource["loadtest.run_id"] == "metrics-1"
    assert resource["loadtest.label.revision"] == "7"
    assert resource["service.instance.id"].startswith("test-vu")
    (sm,) = rm["scopeMetrics"]
    assert sm["scope"]["name"] == "loadgate.k6"
    kinds = {m["name"]: m for m in sm["metrics"]}
    assert set(kinds) == {"loadgate_k6_gauge", "loadgate_k6_counter", "loadgate_k6_histogram"}
    assert kinds["loadgate_k6_counter"]["sum"]["isMonotonic"] is True
    points = 0
    for metric in sm["metrics"]:
        kind = next(k for k in ("gauge", "sum", "histogram") if k in metric)
        if kind != "gauge":
            assert metric[kind]["aggregationTemporality"] == 2  # cumulative: remote write takes it
        for point in metric[kind]["dataPoints"]:
            labels = attrs(point["attributes"])
            assert labels["run"] == "metrics-1"
            series = (resource["service.instance.id"], labels["series"])
            stamps[series].append(int(point["timeUnixNano"]))
            if kind == "histogram":
                counts = [int(c) for c in point["bucketCounts"]]
                assert len(counts) == 5
                assert point["explicitBounds"] == [1, 2, 4, 8]
                assert int(point["count"]) == sum(counts)
            else:
                assert isinstance(point["asDouble"], int | float)
            points += 1
    series_of_kind = {
        k: {
            attrs(p["attributes"])["series"] for p in m[next(iter(set(m) - {"name"}))]["dataPoints"]
        }
        for k, m in kinds.items()
    }
    assert series_of_kind == {
        "loadgate_k6_gauge": {"0", "3"}, "loadgate_k6_counter": {"1"},
        "loadgate_k6_histogram": {"2"},
    }  # fmt: skip
    assert points == 12
    return points


def test_otlp_metrics_payloads_and_summary(
    built_bin_dir: Path, capture: str, tmp_path: Path
) -> None:
    spec = RunSpec.from_params(
        {"scenario": "otlp-metrics", "run-id": "metrics-1", "rate": 14_400, "duration": "3s",
         "series-per-request": 4, "points-per-series": 3, "histogram-buckets": 5,
         "labels": "revision=7"}
    )  # fmt: skip
    proc = run_k6(built_bin_dir, spec, capture, tmp_path)
    assert proc.returncode == 99, proc.stdout + proc.stderr  # every fourth request fails
    requests = len(Capture.bodies)
    assert requests >= 10
    stamps: dict[tuple[str, str], list[int]] = defaultdict(list)
    for content_type, raw in Capture.bodies:
        assert content_type == "application/json"
        check_metrics_body(json.loads(raw), stamps)
    for series, times in stamps.items():
        # One sample a millisecond per series, never repeated (Prometheus keeps one).
        assert all(t % 1_000_000 == 0 for t in times), series
        assert len(set(times)) == len(times), series
    client = read_summary(tmp_path / "summary.json")
    failures = requests // 4
    assert client.requests == requests
    assert client.records_sent == requests * 12
    assert client.records_accepted == (requests - failures) * 12
    assert "data points sent" in proc.stdout


def test_the_metrics_clock_never_goes_back_or_repeats(built_bin_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "clock.json"
    script = HERE / "k6" / "metrics_clock.js"
    argv = [str(built_bin_dir / "k6"), "run", "--quiet", "--no-usage-report", "-e",
            f"OUT={out}", str(script)]  # fmt: skip
    subprocess.run(argv, check=True, capture_output=True)
    data = json.loads(out.read_text())
    stamps: dict[str, list[int]] = defaultdict(list)
    for body in data["bodies"]:
        for metric in body["resourceMetrics"][0]["scopeMetrics"][0]["metrics"]:
            kind = next(k for k in ("gauge", "sum", "histogram") if k in metric)
            for point in metric[kind]["dataPoints"]:
                series = attrs(point["attributes"])["series"]
                stamps[series].append(int(point["timeUnixNano"]) // 1_000_000)
    assert set(stamps) == {"0", "1", "2"}
    for times in stamps.values():
        assert times == sorted(set(times))  # strictly increasing in the order built
        assert times[:4] == [999_997, 999_998, 999_999, 1_000_000]  # ending at `now`
        assert times[-4:] == [1_999_997, 1_999_998, 1_999_999, 2_000_000]  # caught up
        assert len(times) == 4 * len(data["nows"])


def test_loki_push_payloads_over_tls_by_lokis_name(
    built_bin_dir: Path, loki_like: tuple[str, Path], tmp_path: Path
) -> None:
    url, ca = loki_like
    spec = RunSpec.from_params(
        {"scenario": "loki-push", "run-id": "push-1", "rate": 3600, "duration": "3s",
         "streams-per-request": 3, "lines-per-stream": 5, "loki-streams": 7, "body-min": 30,
         "body-max": 50, "labels": "revision=7"}
    )  # fmt: skip
    port = url.rsplit(":", 1)[1]
    proc = run_k6(built_bin_dir, spec, url, tmp_path, ca_file=ca, hosts={LOKI_NAME: "127.0.0.1"})
    assert proc.returncode == 99, proc.stdout + proc.stderr
    requests = len(Capture.bodies)
    assert requests >= 10, port
    seen: set[str] = set()
    streams_seen: set[str] = set()
    for content_type, raw in Capture.bodies:
        assert content_type == "application/json"
        doc = json.loads(raw)
        assert len(doc["streams"]) == 3
        for stream in doc["streams"]:
            labels = stream["stream"]
            assert labels["job"] == labels["service_name"] == "loadgate-k6"
            assert (labels["instance"], labels["loadtest_revision"]) == ("test", "7")
            streams_seen.add(labels["stream"])
            assert len(stream["values"]) == 5
            for stamp, line in stream["values"]:
                assert len(stamp) == 19  # nanoseconds since the epoch, as Loki takes them
                assert line.startswith("run=push-1 i=test vu=")
                text = line.partition(" it=")[2].split(" ", 1)[1]
                assert 30 <= len(text) <= 50, text
                assert line not in seen  # no two lines equal: Loki never deduplicates one
                seen.add(line)
    assert streams_seen <= {f"s{k}" for k in range(7)}
    assert len(streams_seen) > 3  # requests take the streams in turn
    client = read_summary(tmp_path / "summary.json")
    failures = requests // 4
    assert client.records_sent == requests * 15
    assert client.records_accepted == (requests - failures) * 15
    assert "lines sent" in proc.stdout


def test_loki_push_refuses_a_certificate_for_another_name(
    built_bin_dir: Path, loki_like: tuple[str, Path], tmp_path: Path
) -> None:
    url, ca = loki_like
    other = url.replace(LOKI_NAME, "loki.other.test")
    spec = RunSpec.from_params({"scenario": "loki-push", "rate": 600, "duration": "2s"})
    run_k6(built_bin_dir, spec, other, tmp_path, ca_file=ca, hosts={"loki.other.test": "127.0.0.1"})
    client = read_summary(tmp_path / "summary.json")
    assert client.requests > 0
    assert client.failed == client.requests  # TLS verified: nothing reached the server
    assert Capture.bodies == []
