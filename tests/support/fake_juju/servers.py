"""The model's Prometheus and Loki for the fake world: HTTPS servers whose answers follow the k6
runs in the fake juju's state, behind a test CA (TLS verified: each unit's certificate names only
its in-cluster FQDN, like the charms').

Prometheus answers from series that follow the runs the fake k6 charm was asked to start; only the
Loki leader's counters are scraped (as the Loki charm's scrape job makes it), and the collector
exports a full copy to each Loki unit through one exporter per unit.
"""

from __future__ import annotations

import datetime as dt
import http.server
import json
import re
import ssl
import threading
import time
from collections.abc import Generator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from loadgate.stack import tls

from ..fakes.prometheus import FakeProm

# The units that answer, and their ports.
SERVED = (("prometheus/0", 9090), ("loki/0", 3100), ("loki/1", 3100))


# ---- a CA that signs a certificate per requested name --------------------------------------


class WorldCA:
    """A CA whose server contexts present a certificate for whatever name the client asks."""

    def __init__(self) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fake juju world CA")])
        now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
        self.name = name
        self.cert = tls.ca_certificate(self.key, name, now, now + dt.timedelta(days=1))
        self.pem = self.cert.public_bytes(serialization.Encoding.PEM).decode()
        self._contexts: dict[str, ssl.SSLContext] = {}
        self._lock = threading.Lock()
        self._folder: Path | None = None

    def context_for(self, hostname: str) -> ssl.SSLContext:
        with self._lock:
            if hostname not in self._contexts:
                self._contexts[hostname] = self._make(hostname)
            return self._contexts[hostname]

    def _make(self, hostname: str) -> ssl.SSLContext:
        assert self._folder is not None
        key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hostname[:64])]))
            .issuer_name(self.name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now)
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(hostname)]), False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False)
            # Python 3.13+ verifies strictly (VERIFY_X509_STRICT): as the certificates charm's
            # do, the certificate names its issuer's key.
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), False
            )
            .sign(self.key, hashes.SHA256())
        )
        stem = self._folder / re.sub(r"[^A-Za-z0-9.-]", "_", hostname)
        stem.with_suffix(".crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        stem.with_suffix(".key").write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(stem.with_suffix(".crt"), stem.with_suffix(".key"))
        return context

    def server_context(self, folder: Path) -> ssl.SSLContext:
        """The listening context: picks the certificate of the name the client sends (SNI)."""
        self._folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        base = self.context_for("fallback.invalid")

        def pick(sock: ssl.SSLSocket, name: str | None, _: ssl.SSLContext) -> None:
            if name:
                sock.context = self.context_for(name)

        base.sni_callback = pick  # pyright: ignore[reportAttributeAccessIssue]
        return base


# ---- Prometheus and Loki answers ------------------------------------------------------------

MIB = 1024 * 1024


@dataclass
class Series:
    metric: str
    labels: dict[str, str]
    value: float


@dataclass
class Telemetry:
    """What the fake Prometheus and Loki know: the runs in the fake juju's state file."""

    state_file: Path
    queries: list[str] = field(default_factory=list[str])
    store: FakeProm = field(default_factory=FakeProm)
    loki_queries: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])

    def runs(self) -> list[dict[str, Any]]:
        state = json.loads(self.state_file.read_text())
        return [r for m in state["models"].values() for r in m.get("runs", [])]

    def loki_units(self) -> list[int]:
        state = json.loads(self.state_file.read_text())
        for m in state["models"].values():
            if "loki" in m["apps"]:
                return list(m["apps"]["loki"]["units"])
        return []

    def series(self) -> list[Series]:
        runs = self.runs()
        total = float(sum(r["requests"] * r["lpr"] for r in runs))
        units = self.loki_units()
        out = [
            Series("otelcol_receiver_accepted_log_records_total", {"receiver": "otlp"}, total),
            Series("otelcol_receiver_refused_log_records_total", {"receiver": "otlp"}, 0.0),
            Series("otelcol_process_memory_rss", {}, 120 * MIB),
            Series("otelcol_process_cpu_seconds_total", {}, 12.5),
            Series("otelcol_process_uptime_total", {}, 3600.0),
            Series("process_start_time_seconds", {"juju_application": "loki"}, 1.7e9),
            # Only the Loki leader is scraped (its scrape job names the leader's address); an
            # older prometheus_scrape library adds no juju_unit label to such a target.
            Series("loki_build_info", {"juju_application": "loki"}, 1.0),
            Series("loki_distributor_lines_received_total", {"juju_application": "loki"}, total),
            Series("loki_discarded_samples_total", {"juju_application": "loki"}, 0.0),
        ]
        for index in range(len(units)):
            exporter = {"exporter": f"loki/send-loki-logs/{index}"}
            out += [
                Series("otelcol_exporter_sent_log_records_total", exporter, total),
                Series("otelcol_exporter_send_failed_log_records_total", exporter, 0.0),
                Series("otelcol_exporter_enqueue_failed_log_records_total", exporter, 0.0),
                Series("otelcol_exporter_queue_size", exporter, 0.0),
            ]
        for run in runs:
            share = run["requests"] / len(run["units"])
            for unit in run["units"]:
                labels = {"run_id": run["run_id"], "instance": unit.replace("/", "-")}
                out.append(Series("k6_http_reqs_total", labels, share))
        return out

    def scrape(self, at: float) -> None:
        """Store every series as a scrape at `at` would (targets named by job and instance)."""
        for series in self.series():
            job = next((j for j in ("otelcol", "k6") if series.metric.startswith(j)), "loki")
            labels = {**series.labels, "job": job, "instance": f"{job}-0"}
            if job == "otelcol":  # the collector charm's topology labels on its own metrics
                labels["juju_application"] = "otelcol"
            if job == "k6":  # remote-written: k6 names its instance itself
                labels["instance"] = series.labels["instance"]
            self.store.add(series.metric, labels, at, series.value)

    def now(self) -> float:
        return time.time()

    def over_time(self, kind: str, inner: str, window_s: float, at: float) -> dict[str, Any] | None:
        """max/avg_over_time of a gauge (None: the gauge's value at `at`, as the fake's gauges
        are constant over the window)."""
        return None

    def data(self, query: str, at: float | None) -> dict[str, Any]:
        """The `data` of Prometheus's answer to an instant query (at `at`, default now)."""
        self.queries.append(query)
        now = self.now()
        self.scrape(now)
        when = now if at is None else at
        if query.startswith("histogram_quantile("):
            return _vector_data(0.0425)
        if "rate(" in query and "otelcol_process_cpu_seconds" in query:
            return _vector_data(0.25)
        over = re.fullmatch(r"(max|avg)_over_time\(\((.*)\)\[(\d+)s:\]\)", query)
        if over:
            answer = self.over_time(over.group(1), over.group(2), float(over.group(3)), when)
            if answer is not None:
                return answer
            query = over.group(2)
        counted = re.fullmatch(r"count\((\w*(?:\{.*\})?)\)", query)
        if counted:
            found = [x for x in self.store.select(counted.group(1)) if self.store.last(x, when)]
            return _vector_data(float(len(found))) if found else _vector_data_none()
        known = ("sum(", "min(timestamp(", "count(last_over_time(")
        if not (re.fullmatch(r"\w*(\{.*\})?\[\d+ms\]", query) or query.startswith(known)):
            raise ValueError(f"the fake Prometheus does not know {query!r}")
        return self.store.answer(query, when)

    def logql(self, unit: str, query: str, at_ns: str | None = None) -> float | None:
        """A LogQL count (the fake's totals do not depend on the time asked)."""
        self.loki_queries.append((unit, query))
        if 'job="otelcol-internal"' in query:
            return 0.0  # the collector's own logs: none in this fake model
        if 'service_name=~".+"' in query:
            return 0.0  # other traffic: no other application logs in this fake model
        m = re.search(r'\|= "run=([^ "]+) "', query)
        if not m:
            raise ValueError(f"the fake Loki does not know {query!r}")
        run = next((r for r in self.runs() if r["run_id"] == m.group(1)), None)
        return None if run is None else float(run["requests"] * run["lpr"])


def _vector_data(value: float) -> dict[str, Any]:
    return {"resultType": "vector", "result": [{"metric": {}, "value": [time.time(), repr(value)]}]}


def _vector_data_none() -> dict[str, Any]:
    return {"resultType": "vector", "result": []}


def _vector(value: float | None) -> dict[str, Any]:
    result = [] if value is None else [{"metric": {}, "value": [time.time(), repr(value)]}]
    return {"status": "success", "data": {"resultType": "vector", "result": result}}


def make_handler(telemetry: Telemetry, unit: str) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = urlsplit(self.path)
            query = parse_qs(url.query).get("query", [""])[0]
            try:
                if url.path == "/ready":
                    self._send(200, b"ready", "text/plain")
                    return
                if url.path == "/api/v1/query" and unit.startswith("prometheus/"):
                    at = parse_qs(url.query).get("time", [None])[0]
                    data = telemetry.data(query, float(at) if at else None)
                    body = {"status": "success", "data": data}
                elif url.path == "/loki/api/v1/query" and unit.startswith("loki/"):
                    at_ns = parse_qs(url.query).get("time", [None])[0]
                    body = _vector(telemetry.logql(unit, query, at_ns))
                else:
                    self._send(404, b"not found", "text/plain")
                    return
            except ValueError as exc:
                body = {"status": "error", "errorType": "bad_data", "error": str(exc)}
                self._send(400, json.dumps(body).encode(), "application/json")
                return
            self._send(200, json.dumps(body).encode(), "application/json")

        def _send(self, code: int, body: bytes, kind: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler


@contextmanager
def serve(
    telemetry: Telemetry, ca: WorldCA, addresses: Mapping[str, str], certs: Path
) -> Generator[None]:
    """Prometheus and the Loki units listening on their addresses, until the block ends."""
    context = ca.server_context(certs)
    servers: list[http.server.ThreadingHTTPServer] = []
    try:
        for unit, port in SERVED:
            handler = make_handler(telemetry, unit)
            server = http.server.ThreadingHTTPServer((addresses[unit], port), handler)
            server.socket = context.wrap_socket(server.socket, server_side=True)
            servers.append(server)
            threading.Thread(target=server.serve_forever, daemon=True).start()
        yield
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
