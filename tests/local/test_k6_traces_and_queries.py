"""otlp-traces and logql-query with the real k6 binary: the traces builder's payloads off the wire
(trees of spans of the sizes asked, parent links inside a trace, ids, attributes, the run id on
every resource), and logql-query against a Loki-like server over TLS by Loki's name that keeps
what it is pushed and answers LogQL counts from it: its queries, instant and range, come out
right when the server answers truly and wrong when it does not, and its summary accounts for
the lines it pushed beside them."""

from __future__ import annotations

import json
import re
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlsplit

import pytest
from test_k6_scenario import Capture
from test_k6_scenarios import LOKI_NAME, attrs, run_k6

from loadgate.contract.spec import RunSpec
from loadgate.contract.summary import read_summary
from loadgate.stack import tls

pytestmark = pytest.mark.local

SERVICES = {"loadgate-frontend", "loadgate-api", "loadgate-db"}


@pytest.fixture
def capture() -> Iterator[str]:
    Capture.bodies, Capture.count = [], 0
    server = ThreadingHTTPServer(("127.0.0.1", 0), Capture)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def check_traces_body(doc: dict[str, Any], trace_ids: set[str]) -> int:
    """One otlp-traces request (4 traces of 9 spans on average, 6 attributes of 40 chars):
    its shape; returns its spans."""
    spans: list[dict[str, Any]] = []
    seen_services: set[str] = set()
    for rs in doc["resourceSpans"]:
        resource = attrs(rs["resource"]["attributes"])
        assert resource["run"] == "traces-1"
        assert resource["loadtest.label.revision"] == "7"
        assert resource["service.instance.id"].startswith("test-vu")
        seen_services.add(resource["service.name"])
        (ss,) = rs["scopeSpans"]
        assert ss["scope"]["name"] == "loadgate.k6"
        spans += ss["spans"]
    assert seen_services <= SERVICES
    assert "loadgate-frontend" in seen_services  # every trace has its root there
    by_trace: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        assert re.fullmatch(r"[0-9a-f]{32}", span["traceId"])
        assert re.fullmatch(r"[0-9a-f]{16}", span["spanId"])
        by_trace.setdefault(span["traceId"], []).append(span)
        values = attrs(span["attributes"])
        assert len(span["attributes"]) == 6
        assert all(len(v) == 40 for v in values.values())
        assert int(span["endTimeUnixNano"]) >= int(span["startTimeUnixNano"])
    assert len(by_trace) == 4
    assert not trace_ids & set(by_trace)  # a trace id is never reused
    trace_ids.update(by_trace)
    sizes = sorted(len(s) for s in by_trace.values())
    assert sum(sizes) == 36
    assert all(6 <= n <= 12 for n in sizes), sizes
    for trace in by_trace.values():
        ids = {s["spanId"]: s for s in trace}
        assert len(ids) == len(trace)  # span ids unique in their trace
        roots = [s for s in trace if not s.get("parentSpanId")]
        assert len(roots) == 1
        assert roots[0]["kind"] == 2  # a server span
        for span in trace:
            parent = ids.get(span.get("parentSpanId", ""))
            if span is roots[0]:
                continue
            assert parent is not None, span  # the parent is in the same trace
            assert int(parent["startTimeUnixNano"]) <= int(span["startTimeUnixNano"])
            assert int(span["endTimeUnixNano"]) <= int(parent["endTimeUnixNano"])
    return len(spans)


def test_otlp_traces_payloads_and_summary(
    built_bin_dir: Path, capture: str, tmp_path: Path
) -> None:
    spec = RunSpec.from_params(
        {"scenario": "otlp-traces", "run-id": "traces-1", "rate": 8640, "duration": "3s",
         "traces-per-request": 4, "spans-per-trace": 9, "span-attributes": 6,
         "attribute-size": 40, "labels": "revision=7"}
    )  # fmt: skip
    proc = run_k6(built_bin_dir, spec, capture, tmp_path)
    assert proc.returncode == 99, proc.stdout + proc.stderr  # every fourth request fails
    requests = len(Capture.bodies)
    assert requests >= 10
    trace_ids: set[str] = set()
    for content_type, raw in Capture.bodies:
        assert content_type == "application/json"
        assert check_traces_body(json.loads(raw), trace_ids) == 36
    client = read_summary(tmp_path / "summary.json")
    failures = requests // 4
    assert client.requests == requests
    assert client.records_sent == requests * 36
    assert client.records_accepted == (requests - failures) * 36
    assert "spans sent" in proc.stdout


# ---- logql-query against a Loki-like server ---------------------------------------------------

_MARKER = re.compile(r'\|= "((?:[^"\\]|\\.)*)" \[(\d+)ms\]')


class LokiLike(BaseHTTPRequestHandler):
    """Keeps every pushed line with its time stamp; answers `sum(count_over_time({…} |= "m"
    [Nms]))` from them (instant at `time`; range at start, start+step, … end): truly, or
    one more than true (`lie` 1), or none at all (`lie` -1: a querier that misses what its
    ingesters hold)."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    lines: ClassVar[list[tuple[int, str]]] = []
    kinds: ClassVar[dict[str, int]] = {}
    lie = 0
    lock = threading.Lock()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with LokiLike.lock:
            for stream in body["streams"]:
                for stamp, line in stream["values"]:
                    LokiLike.lines.append((int(stamp), line))
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def count(self, marker: str, lo_ns: int, hi_ns: int) -> int:
        if self.lie < 0:
            return 0
        with LokiLike.lock:
            return sum(1 for t, line in LokiLike.lines if lo_ns < t <= hi_ns and marker in line)

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        q = {k: v[0] for k, v in parse_qs(url.query).items()}
        m = _MARKER.search(q["query"])
        assert m is not None, q["query"]
        marker, window = json.loads(f'"{m.group(1)}"'), int(m.group(2)) * 1_000_000
        kind = "range" if url.path.endswith("query_range") else "instant"
        LokiLike.kinds[kind] = LokiLike.kinds.get(kind, 0) + 1
        if kind == "instant":
            at = int(q["time"])
            value = self.count(marker, at - window, at) + max(0, self.lie)
            result: list[dict[str, Any]] = [{"metric": {}, "value": [at / 1e9, str(value)]}]
            data = {"resultType": "vector", "result": result}
        else:
            step = int(q["step"].removesuffix("ms")) * 1_000_000
            points = []
            for t in range(int(q["start"]), int(q["end"]) + 1, step):
                n = self.count(marker, t - step, t)
                if n:
                    points.append([t / 1e9, str(n)])
            if self.lie > 0:
                points.append([int(q["end"]) / 1e9, str(self.lie)])
            data = {"resultType": "matrix", "result": [{"metric": {}, "values": points}]}
        raw = json.dumps({"status": "success", "data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def loki_like(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    material = tls.generate()
    written = tls.write(material, tmp_path / "tls")
    cert, key = tls.issue_server_cert(material, (LOKI_NAME,), ips=())
    (tmp_path / "loki.crt").write_bytes(cert)
    (tmp_path / "loki.key").write_bytes(key)
    LokiLike.lines, LokiLike.kinds, LokiLike.lie = [], {}, 0
    server = ThreadingHTTPServer(("127.0.0.1", 0), LokiLike)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "loki.crt", tmp_path / "loki.key")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"https://{LOKI_NAME}:{server.server_address[1]}", written.ca_cert
    server.shutdown()
    server.server_close()


def query_spec(**extra: Any) -> RunSpec:
    return RunSpec.from_params(
        {"scenario": "logql-query", "run-id": "query-1", "rate": 600, "duration": "4s",
         "push-rate": 1200, "streams-per-request": 2, "lines-per-stream": 5, "loki-streams": 4,
         "body-min": 20, "body-max": 30, "query-window": 30, "p99-ms": 5000, **extra}
    )  # fmt: skip


def test_logql_query_checks_true_answers_right_and_accounts_for_its_pushes(
    built_bin_dir: Path, loki_like: tuple[str, Path], tmp_path: Path
) -> None:
    url, ca = loki_like
    proc = run_k6(
        built_bin_dir, query_spec(), url, tmp_path, ca_file=ca, hosts={LOKI_NAME: "127.0.0.1"}
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    client = read_summary(tmp_path / "summary.json")
    assert client.records_accepted >= 30  # 10 queries a second for 4 s
    assert client.records_sent == client.records_accepted
    assert client.wrong_answers == 0
    assert LokiLike.kinds["instant"] >= 10
    assert LokiLike.kinds["range"] >= 10
    # Pushed: the bulk (10 lines a request, 2 a second) and a probe line per query.
    probes = [line for _, line in LokiLike.lines if " q=" in line.split(" p=")[0]]
    assert len(probes) == client.records_sent
    assert client.lines_sent == client.lines_accepted == len(LokiLike.lines)
    assert client.lines_sent is not None
    assert client.lines_sent - len(probes) >= 60
    assert all(line.startswith("run=query-1 i=test ") for _, line in LokiLike.lines)
    assert all(t % 1_000_000 == 500_000 for t, line in LokiLike.lines if line in probes)
    assert "wrong answers 0" in proc.stdout
    assert client.p99_ms is not None


@pytest.mark.parametrize("lie", [1, -1])
def test_logql_query_counts_answers_off_what_was_pushed_as_wrong(
    built_bin_dir: Path, loki_like: tuple[str, Path], tmp_path: Path, lie: int
) -> None:
    url, ca = loki_like
    LokiLike.lie = lie
    # Two VUs: each queries five times a second, so its answers soon cover probes it had
    # acknowledged more than the ingestion delay before (those an answer must count).
    spec = query_spec(vus=2)
    proc = run_k6(built_bin_dir, spec, url, tmp_path, ca_file=ca, hosts={LOKI_NAME: "127.0.0.1"})
    assert proc.returncode == 99, proc.stdout + proc.stderr  # its threshold crossed
    client = read_summary(tmp_path / "summary.json")
    assert client.records_accepted >= 30
    assert client.thresholds["wrong_answers{count<1}"] is False
    assert client.wrong_answers is not None
    if lie > 0:
        # One more than the VU ever sent is outside the bounds of every answer.
        assert client.wrong_answers == client.records_accepted
    else:
        # None of what it had acknowledged a second before: caught once the VU has such
        # probes (after its first second), so in most answers of a 4 s run. (An answer
        # short only of the last second's probes passes: within the ingestion delay.)
        assert client.wrong_answers >= client.records_accepted // 2
