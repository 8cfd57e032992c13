"""The backend fault proxy: a stack service between the collector's Loki exporter and Loki
(`python -m loadgate.stack.fault_proxy CONFIG`), run by Pebble when `--backend-fault` asks.

It terminates TLS with a certificate from the stack's CA for the name the collector verifies
(Loki's), decides each request's fault (faults.Decider), and forwards the rest to Loki over TLS,
verifying Loki's certificate for that name with the stack's CA. HTTP/1.1 (h11), asyncio.

Its control port (plain HTTP on loopback) serves `/metrics` (Prometheus text, scraped by the
stack's Prometheus), `/counts` (the same as JSON), `/ready`, and `POST /epoch`: a run's load
starts, so the faults begin, and the outage clock and the random sequence start over (answers
the counts then). Until the first run's load starts it passes every request: what the stack
sends before (the collector's start-up logs) reaches Loki before the run's baseline.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import h11
import httpx

from loadgate.stack.faults import Decider, Decision, FaultPlan
from loadgate.tlsclient import client_context

_HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "host",
     "content-length", "proxy-authorization", "proxy-authenticate"}
)  # fmt: skip
_PASS = Decision(None)
_Answer = tuple[int, list[tuple[str, str]], bytes]
_Handler = Callable[[h11.Request, bytes], Awaitable[_Answer]]


@dataclass
class _Counts:
    requests: int = 0
    passed: int = 0
    failed: int = 0
    outage: int = 0
    delayed: int = 0
    upstream_errors: int = 0


@dataclass(frozen=True)
class ProxyConfig:
    host: str
    port: int
    control_port: int
    cert_file: str
    key_file: str
    upstream: str  # https://127.0.0.1:PORT (Loki)
    server_name: str  # the name Loki's certificate holds (and the proxy's)
    ca_file: str
    plan: dict[str, Any]

    @classmethod
    def load(cls, path: Path) -> ProxyConfig:
        return cls(**json.loads(path.read_text()))


class _FaultProxy:
    def __init__(self, config: ProxyConfig):
        self.config = config
        self.plan = FaultPlan.from_dict(config.plan)
        self.decider = Decider(self.plan)
        self.counts = _Counts()
        self.epoch = time.monotonic()
        self.armed = False  # faults only from the first run's load start (POST /epoch)
        context = client_context(Path(config.ca_file))
        self.client = httpx.AsyncClient(
            transport=httpx.AsyncHTTPTransport(verify=context), timeout=60.0
        )

    async def push(self, request: h11.Request, body: bytes) -> _Answer:
        """One request from the collector: a fault, or Loki's answer."""
        self.counts.requests += 1
        decision = self.decider.decide(time.monotonic() - self.epoch) if self.armed else _PASS
        if decision.delay_s > 0:
            self.counts.delayed += 1
            await asyncio.sleep(decision.delay_s)
        if decision.status is not None:
            self.counts.failed += 1
            self.counts.outage += int(decision.outage)
            text = b"loadgate backend fault: injected %d\n" % decision.status
            return decision.status, [("content-type", "text/plain")], text
        headers = [(k.decode(), v.decode()) for k, v in request.headers]
        forwarded = self.client.build_request(
            request.method.decode(),
            self.config.upstream + request.target.decode(),
            headers=[(k, v) for k, v in headers if k.lower() not in _HOP_BY_HOP],
            content=body,
            extensions={"sni_hostname": self.config.server_name},
        )
        try:
            response = await self.client.send(forwarded, stream=True)
            payload = b"".join([chunk async for chunk in response.aiter_raw()])
            await response.aclose()
        except httpx.HTTPError as exc:
            self.counts.upstream_errors += 1
            return 502, [("content-type", "text/plain")], f"loki unreachable: {exc}\n".encode()
        self.counts.passed += 1
        kept = [(k, v) for k, v in response.headers.items() if k.lower() not in _HOP_BY_HOP]
        return response.status_code, kept, payload

    async def control(self, request: h11.Request, body: bytes) -> _Answer:
        del body
        method, target = request.method.decode(), request.target.decode()
        if (method, target) == ("POST", "/epoch"):
            self.epoch = time.monotonic()
            self.decider.restart()
            self.armed = True
            return self._json(asdict(self.counts))
        if method == "GET" and target == "/counts":
            return self._json(asdict(self.counts))
        if method == "GET" and target == "/metrics":
            return 200, [("content-type", "text/plain; version=0.0.4")], self.metrics().encode()
        if method == "GET" and target == "/ready":
            return 200, [("content-type", "text/plain")], b"ready\n"
        return 404, [("content-type", "text/plain")], b"not found\n"

    def _json(self, data: dict[str, Any]) -> _Answer:
        data = {**data, "spec": self.plan.spec}
        return 200, [("content-type", "application/json")], json.dumps(data).encode()

    def metrics(self) -> str:
        c = self.counts
        lines = ["# TYPE loadgate_backend_fault_requests_total counter"]
        for outcome, value in (
            ("passed", c.passed),
            ("failed", c.failed),
            ("upstream_error", c.upstream_errors),
        ):
            lines.append(f'loadgate_backend_fault_requests_total{{outcome="{outcome}"}} {value}')
        lines += [
            "# TYPE loadgate_backend_fault_outage_total counter",
            f"loadgate_backend_fault_outage_total {c.outage}",
            "# TYPE loadgate_backend_fault_delayed_total counter",
            f"loadgate_backend_fault_delayed_total {c.delayed}",
        ]
        return "\n".join(lines) + "\n"


async def _serve_http(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, handler: _Handler
) -> None:
    """HTTP/1.1 on one connection, request after request (keep-alive), until either side
    closes it."""
    conn = h11.Connection(h11.SERVER)
    request: h11.Request | None = None
    body = bytearray()
    try:
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                if conn.they_are_waiting_for_100_continue:
                    writer.write(
                        conn.send(h11.InformationalResponse(status_code=100, headers=[])) or b""
                    )
                conn.receive_data(await reader.read(65536))
            elif isinstance(event, h11.Request):
                request, body = event, bytearray()
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage) and request is not None:
                status, headers, payload = await handler(request, bytes(body))
                headers = [*headers, ("content-length", str(len(payload)))]
                for part in (h11.Response(status_code=status, headers=headers),
                             h11.Data(data=payload), h11.EndOfMessage()):  # fmt: skip
                    writer.write(conn.send(part) or b"")
                await writer.drain()
                if conn.our_state is h11.MUST_CLOSE:
                    break
                conn.start_next_cycle()
            else:
                break  # closed, or a state h11 leaves us nothing to do in
    except (h11.ProtocolError, ConnectionError, ssl.SSLError):
        pass
    finally:
        writer.close()


def _server_context(config: ProxyConfig) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(config.cert_file, config.key_file)
    context.set_alpn_protocols(["http/1.1"])
    return context


async def run(config: ProxyConfig) -> None:
    proxy = _FaultProxy(config)

    async def on_push(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await _serve_http(r, w, proxy.push)

    async def on_control(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await _serve_http(r, w, proxy.control)

    pushes = await asyncio.start_server(
        on_push, config.host, config.port, ssl=_server_context(config)
    )
    controls = await asyncio.start_server(on_control, config.host, config.control_port)
    print(
        f"backend fault proxy {proxy.plan.spec!r}: {config.host}:{config.port} -> "
        f"{config.upstream} ({config.server_name}); control {config.host}:{config.control_port}",
        flush=True,
    )
    async with pushes, controls:
        await asyncio.gather(pushes.serve_forever(), controls.serve_forever())


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m loadgate.stack.fault_proxy CONFIG.json", file=sys.stderr)
        return 2
    asyncio.run(run(ProxyConfig.load(Path(argv[0]))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
