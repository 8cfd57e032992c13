"""HTTPS clients that trust one CA: the local stack's (a fresh CA per stack, made by
`stack.tls`) or the one a Juju model's certificates charm hands out, and check the server's
certificate for the name it was issued to.

Standard library and httpx only (no `cryptography`): the Juju target, the local target and
the measuring clients use it without the stack's certificate making.
"""

from __future__ import annotations

import ssl
from pathlib import Path

import httpx


def client_context(ca_file: Path) -> ssl.SSLContext:
    """A client TLS context that trusts only the given CA and checks host names."""
    return ssl.create_default_context(cafile=str(ca_file))


class ServerNameTransport(httpx.BaseTransport):
    """Connects where the URL says and verifies the server's certificate for `server_name`
    (a unit's in-cluster name, which this machine cannot resolve)."""

    def __init__(self, server_name: str, context: ssl.SSLContext):
        self.server_name = server_name
        self._inner = httpx.HTTPTransport(verify=context)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.extensions = {**request.extensions, "sni_hostname": self.server_name}
        return self._inner.handle_request(request)

    def close(self) -> None:
        self._inner.close()


def verified_client(ca_file: Path, server_name: str, timeout: float = 30.0) -> httpx.Client:
    """An HTTPS client trusting only `ca_file`, checking the certificate names `server_name`."""
    return httpx.Client(
        transport=ServerNameTransport(server_name, client_context(ca_file)), timeout=timeout
    )
