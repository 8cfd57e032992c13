"""The backend fault proxy (stack/fault_proxy.py) between a client and a real HTTPS server on
loopback: TLS terminated with a certificate of the stack's CA for the backend's name, the
backend's certificate verified for that name, faults in the seeded order, counts and metrics."""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import socket
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from loadgate import tlsclient
from loadgate.stack import faults, tls
from loadgate.stack.fault_proxy import ProxyConfig, run

NAME = "loki-0.loki-endpoints.loadgate.svc.cluster.local"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Backend:
    url: str
    ca_file: Path
    bodies: list[bytes]
    headers: list[dict[str, str]]


@pytest.fixture
def material(tmp_path: Path) -> tls.TLSPaths:
    return tls.write(tls.generate(hostnames=(NAME,), ips=()), tmp_path / "ca")


@pytest.fixture
def backend(material: tls.TLSPaths) -> Iterator[Backend]:
    """An HTTPS server standing for Loki: its certificate names only the in-cluster name."""
    seen = Backend("", material.ca_cert, [], [])

    class Push(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            seen.bodies.append(self.rfile.read(int(self.headers["content-length"])))
            seen.headers.append({k.lower(): v for k, v in self.headers.items()})
            self.send_response(204)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Push)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(material.server_cert, material.server_key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    seen.url = f"https://127.0.0.1:{server.server_address[1]}"
    try:
        yield seen
    finally:
        server.shutdown()
        server.server_close()


def proxy_config(material: tls.TLSPaths, backend: Backend, spec: str) -> ProxyConfig:
    cert, key = tls.issue(
        material.ca_cert.read_bytes(), material.ca_key.read_bytes(), (NAME, "localhost")
    )
    folder = material.ca_cert.parent
    (folder / "proxy.crt").write_bytes(cert)
    (folder / "proxy.key").write_bytes(key)
    return ProxyConfig(
        host="127.0.0.1",
        port=free_port(),
        control_port=free_port(),
        cert_file=str(folder / "proxy.crt"),
        key_file=str(folder / "proxy.key"),
        upstream=backend.url,
        server_name=NAME,
        ca_file=str(material.ca_cert),
        plan=faults.parse(spec).to_dict(),
    )


class Running:
    """The proxy on its own event loop in a thread, stopped at the end."""

    def __init__(self, config: ProxyConfig):
        self.config = config
        self.loop = asyncio.new_event_loop()
        self.task = self.loop.create_task(run(config))
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()
        self.control = httpx.Client(base_url=f"http://127.0.0.1:{config.control_port}")
        for _ in range(100):
            try:
                if self.control.get("/ready").status_code == 200:
                    break
            except httpx.TransportError:
                threading.Event().wait(0.05)
        self.client = tlsclient.verified_client(Path(config.ca_file), NAME, timeout=10.0)

    def _serve(self) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            self.loop.run_until_complete(self.task)

    def push(self, body: bytes) -> httpx.Response:
        return self.client.post(
            f"https://127.0.0.1:{self.config.port}/loki/api/v1/push",
            content=body,
            headers={"content-type": "application/x-protobuf", "content-encoding": "snappy"},
        )

    def close(self) -> None:
        self.client.close()
        self.control.close()
        self.loop.call_soon_threadsafe(self.task.cancel)
        self.thread.join(timeout=10)


@pytest.fixture
def start(material: tls.TLSPaths, backend: Backend) -> Iterator[Any]:
    started: list[Running] = []

    def go(spec: str, **over: Any) -> Running:
        running = Running(replace(proxy_config(material, backend, spec), **over))
        started.append(running)
        return running

    yield go
    for running in started:
        running.close()


def test_before_a_run_everything_passes_then_the_seeded_faults_apply(
    start: Any, backend: Backend
) -> None:
    proxy = start("503=0.5,429=0.2,seed=11")
    # Before the first run's load starts, nothing is injected.
    answer = proxy.push(b"first")
    assert answer.status_code == 204
    assert backend.bodies == [b"first"]
    assert backend.headers[0]["content-encoding"] == "snappy"
    assert backend.headers[0]["content-type"] == "application/x-protobuf"
    assert proxy.control.post("/epoch").json()["passed"] == 1
    expected_decider = faults.Decider(faults.parse("503=0.5,429=0.2,seed=11"))
    statuses = [proxy.push(b"x%d" % i).status_code for i in range(40)]
    expected = [expected_decider.decide(0).status or 204 for _ in range(40)]
    assert statuses == expected
    assert {503, 429, 204} <= set(statuses)
    counts = proxy.control.get("/counts").json()
    injected = sum(s != 204 for s in statuses)
    assert counts["requests"] == 41
    assert (counts["passed"], counts["failed"]) == (41 - injected, injected)
    assert len(backend.bodies) == 41 - injected  # a fault never reaches the backend
    metrics = proxy.control.get("/metrics").text
    assert f'loadgate_backend_fault_requests_total{{outcome="failed"}} {injected}' in metrics
    # A new run starts the sequence over.
    proxy.control.post("/epoch")
    again = faults.Decider(faults.parse("503=0.5,429=0.2,seed=11"))
    assert [proxy.push(b"y").status_code for _ in range(10)] == [
        again.decide(0).status or 204 for _ in range(10)
    ]


def test_the_proxy_presents_the_backends_name_and_checks_the_backends_certificate(
    start: Any, material: tls.TLSPaths
) -> None:
    proxy = start("delay=10ms")
    with (
        tlsclient.verified_client(material.ca_cert, "loki-1.elsewhere") as other,
        pytest.raises(httpx.ConnectError, match=r"CERTIFICATE_VERIFY_FAILED|match"),
    ):
        other.post(f"https://127.0.0.1:{proxy.config.port}/loki/api/v1/push", content=b"x")
    # A backend that does not hold the name the proxy verifies is not talked to.
    wrong = start("delay=10ms", server_name="loki-9.somewhere.else")
    wrong.control.post("/epoch")
    answer = wrong.push(b"x")
    assert answer.status_code == 502
    assert wrong.control.get("/counts").json()["upstream_errors"] == 1
    proxy.control.post("/epoch")
    assert proxy.push(b"x").status_code == 204
    assert proxy.control.get("/counts").json()["delayed"] == 1


def test_an_outage_answers_503_from_its_start(start: Any, backend: Backend) -> None:
    proxy = start("outage=0s+1m")
    proxy.control.post("/epoch")
    assert [proxy.push(b"x").status_code for _ in range(3)] == [503, 503, 503]
    counts = proxy.control.get("/counts").json()
    assert (counts["failed"], counts["outage"], counts["passed"]) == (3, 3, 0)
    assert backend.bodies == []
