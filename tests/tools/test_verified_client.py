"""The client loadgate talks to a Juju model's Prometheus and Loki with: TLS verified against the
model's CA for the unit's in-cluster name, against a real HTTPS server on loopback."""

from __future__ import annotations

import http.server
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from loadgate import tlsclient
from loadgate.stack import tls


@dataclass
class _TLSServer:
    url: str
    ca_file: Path
    name: str


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[_TLSServer]:
    """A real HTTPS server whose certificate names only an in-cluster FQDN (like the charms')."""
    name = "loki-0.loki-endpoints.cos.svc.cluster.local"
    material = tls.generate(hostnames=(name,), ips=())
    files = tls.write(material, tmp_path)

    class Ready(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"ready")

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = http.server.HTTPServer(("127.0.0.1", 0), Ready)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(files.server_cert, files.server_key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield _TLSServer(f"https://127.0.0.1:{server.server_address[1]}", files.ca_cert, name)
    finally:
        server.shutdown()
        server.server_close()


def test_verified_client_checks_the_unit_name(tls_server: _TLSServer) -> None:
    with tlsclient.verified_client(tls_server.ca_file, tls_server.name) as client:
        assert client.get(f"{tls_server.url}/ready").text == "ready"


def test_verified_client_refuses_another_name(tls_server: _TLSServer) -> None:
    with (
        tlsclient.verified_client(
            tls_server.ca_file, "loki-1.loki-endpoints.cos.svc.cluster.local"
        ) as client,
        pytest.raises(httpx.ConnectError, match=r"CERTIFICATE_VERIFY_FAILED|match"),
    ):
        client.get(f"{tls_server.url}/ready")


def test_verified_client_refuses_another_ca(tls_server: _TLSServer, tmp_path: Path) -> None:
    other = tls.write(tls.generate(), tmp_path / "other")
    with (
        tlsclient.verified_client(other.ca_cert, tls_server.name) as client,
        pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"),
    ):
        client.get(f"{tls_server.url}/ready")
