"""A fake Juju world for dry runs: a fake `juju` on PATH, and the model's Prometheus and Loki as
small HTTPS servers with a test CA (TLS verified: each unit's certificate names only its
in-cluster FQDN, like the charms').

- The `juju` on PATH is fake_juju.py. In the snap layout (the default) it is
  `<tmp>/snap/bin/juju`, a symbolic link to `<tmp>/usr/bin/snap` (as /snap/bin/juju links to
  snapd's launcher), and it reads only what the strictly confined snap can read: files under
  $HOME outside hidden folders.
- Prometheus (prometheus/0) and the Loki units listen on their real ports (9090, 3100) on
  addresses of their own in 127.0.0.0/8, which `juju status` reports as the pod addresses.
- Prometheus answers from series that follow the runs the fake k6 charm was asked to start;
  only the Loki leader's counters are scraped (as the Loki charm's scrape job makes it), and
  the collector exports a full copy to each Loki unit through one exporter per unit.
"""

from __future__ import annotations

import datetime as dt
import http.server
import json
import os
import random
import re
import socket
import ssl
import sys
import threading
import time
import zipfile
from collections.abc import Generator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from fakeprom import FakeProm

from loadgate.stack import tls

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
FAKE_JUJU = HERE / "fake_juju.py"
K6_CHARMCRAFT = ROOT / "charms" / "k6-k8s" / "charmcraft.yaml"
MIB = 1024 * 1024
# Channel heads the fake Charmhub resolves (a fixed number, for the dry runs only).
HEADS: dict[str, dict[str, int]] = {
    "opentelemetry-collector-k8s": {"dev/edge": 207, "0.130/edge": 150},
    "loki-k8s": {"3.7/edge": 310},
    "self-signed-certificates": {"1/stable": 400},
    "prometheus-k8s": {"3.11/edge": 290},
    "grafana-k8s": {"dev/edge": 180},
    "alertmanager-k8s": {"0.31/edge": 170},
    "catalogue-k8s": {"3.0/edge": 90},
    "traefik-k8s": {"latest/stable": 250},
}


# ---- packed charms -------------------------------------------------------------------------


def fake_charm(path: Path, metadata: Mapping[str, Any]) -> Path:
    """A .charm archive holding metadata.yaml (what charmcraft writes into every pack)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("metadata.yaml", yaml.safe_dump(dict(metadata)))
        z.writestr("manifest.yaml", "analysis: {}\n")
    return path


def k6_charm(path: Path) -> Path:
    """A packed k6 charm as charmcraft would pack charms/k6-k8s (its metadata only)."""
    source = yaml.safe_load(K6_CHARMCRAFT.read_text())
    keys = ("name", "summary", "description", "containers", "resources", "peers", "requires",
            "provides", "storage", "assumes")  # fmt: skip
    return fake_charm(path, {k: source[k] for k in keys if k in source})


# ---- a CA that signs a certificate per requested name --------------------------------------


class TestCA:
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

_SELECTOR = re.compile(
    r"(?P<metric>[a-zA-Z_:][a-zA-Z0-9_:]*)\{(?P<sel>[^}]*)\}|(?P<bare>[a-zA-Z_:][a-zA-Z0-9_:]*)"
)
_MATCHER = re.compile(r'(\w+)(=~|=)"((?:[^"\\]|\\.)*)"')


@dataclass
class Series:
    metric: str
    labels: dict[str, str]
    value: float


def matchers(selector: str) -> list[tuple[str, str, str]]:
    return [
        (k, op, v.replace('\\"', '"').replace("\\\\", "\\"))
        for k, op, v in _MATCHER.findall(selector)
    ]


def matches(series: Series, found: list[tuple[str, str, str]]) -> bool:
    for key, op, value in found:
        have = series.labels.get(key, "")
        if op == "=" and have != value:
            return False
        if op == "=~" and not re.fullmatch(value, have):
            return False
    return True


@dataclass
class Model:
    """What the fake Prometheus and Loki know: the runs from the fake juju's state."""

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
            if job == "k6":  # remote-written: k6 names its instance itself
                labels["instance"] = series.labels["instance"]
            self.store.add(series.metric, labels, at, series.value)

    def data(self, query: str, at: float | None) -> dict[str, Any]:
        """The `data` of Prometheus's answer to an instant query (at `at`, default now)."""
        self.queries.append(query)
        now = time.time()
        self.scrape(now)
        when = now if at is None else at
        if query.startswith("histogram_quantile("):
            return _vector_data(0.0425)
        if "rate(" in query and "otelcol_process_cpu_seconds" in query:
            return _vector_data(0.25)
        over = re.fullmatch(r"(?:max|avg)_over_time\(\((.*)\)\[\d+s:\]\)", query)
        if over:
            query = over.group(1)  # the fake's gauges are constant over the window
        counted = re.fullmatch(r"count\((\w*(?:\{.*\})?)\)", query)
        if counted:
            found = [x for x in self.store.select(counted.group(1)) if self.store.last(x, when)]
            return _vector_data(float(len(found))) if found else _vector_data_none()
        known = ("sum(", "min(timestamp(", "count(last_over_time(")
        if not (re.fullmatch(r"\w*(\{.*\})?\[\d+ms\]", query) or query.startswith(known)):
            raise ValueError(f"the fake Prometheus does not know {query!r}")
        return self.store.answer(query, when)

    def logql(self, unit: str, query: str) -> float | None:
        self.loki_queries.append((unit, query))
        if 'job="otelcol-internal"' in query:
            return 0.0  # the collector's own logs: none in this fake model
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


def make_handler(model: Model, unit: str) -> type[http.server.BaseHTTPRequestHandler]:
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
                    data = model.data(query, float(at) if at else None)
                    body = {"status": "success", "data": data}
                elif url.path == "/loki/api/v1/query" and unit.startswith("loki/"):
                    body = _vector(model.logql(unit, query))
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


# ---- the world -----------------------------------------------------------------------------


@dataclass
class World:
    root: Path
    home: Path
    bin_dir: Path
    juju: Path
    state_file: Path
    log_file: Path
    ca_file: Path
    model: Model
    addresses: dict[str, str]

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a process that should see this world (and no real juju)."""
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("JUJU", "LOADGATE_", "PYTEST", "TOX_", "CHARM_PATH"))
        }
        env.update(
            PATH=f"{self.bin_dir}{os.pathsep}{Path(sys.executable).parent}",
            HOME=str(self.home),
            FAKE_JUJU_STATE=str(self.state_file),
            FAKE_JUJU_LOG=str(self.log_file),
            LOADGATE_RESULTS_DIR=str(self.root / "results"),
            PYTHONUNBUFFERED="1",
            **extra,
        )
        return env

    def state(self) -> dict[str, Any]:
        return json.loads(self.state_file.read_text())

    def edit_state(self, **changes: Any) -> None:
        state = self.state()
        state.update(changes)
        self.state_file.write_text(json.dumps(state, indent=1, sort_keys=True))

    def calls(self) -> list[dict[str, Any]]:
        if not self.log_file.exists():
            return []
        return [json.loads(line) for line in self.log_file.read_text().splitlines()]


def _free_subnet() -> str:
    """127.A.B: a loopback /24 whose .1-.3 have ports 9090 and 3100 free."""
    for _ in range(50):
        prefix = f"127.{random.randint(100, 250)}.{random.randint(1, 250)}"  # noqa: S311
        try:
            for host in (1, 2, 3):
                for port in (9090, 3100):
                    with socket.socket() as s:
                        s.bind((f"{prefix}.{host}", port))
        except OSError:
            continue
        return prefix
    raise RuntimeError("no free loopback address for the fake Prometheus and Loki")


@contextmanager
def world(
    tmp_path: Path,
    *,
    snap: bool = True,
    models: Mapping[str, Mapping[str, Any]] | None = None,
    loki_leader: int = 1,
) -> Generator[World]:
    """The fake world; `models` pre-creates models (name -> {"apps": ...}) in the state."""
    root = tmp_path / "world"
    home = root / "home"
    home.mkdir(parents=True)
    if snap:
        launcher = root / "usr" / "bin" / "snap"
        bin_dir = root / "snap" / "bin"
    else:
        launcher = root / "opt" / "juju" / "bin" / "juju"
        bin_dir = launcher.parent
    launcher.parent.mkdir(parents=True, exist_ok=True)
    launcher.write_text(
        f"#!{sys.executable}\n"
        "import os, runpy, sys\n"
        "if os.path.basename(sys.argv[0]) != 'juju':\n"
        "    sys.exit('snap: unknown command ' + os.path.basename(sys.argv[0]))\n"
        f"sys.argv[0] = {str(FAKE_JUJU)!r}\n"
        f"runpy.run_path({str(FAKE_JUJU)!r}, run_name='__main__')\n"
    )
    launcher.chmod(0o755)
    juju = bin_dir / "juju"
    if snap:
        bin_dir.mkdir(parents=True, exist_ok=True)
        juju.symlink_to(launcher)
    ca = TestCA()
    ca_file = root / "ca.crt"
    ca_file.write_text(ca.pem)
    prefix = _free_subnet()
    addresses = {
        "prometheus/0": f"{prefix}.1",
        "loki/0": f"{prefix}.2",
        "loki/1": f"{prefix}.3",
    }
    state_file = root / "state.json"
    state = {
        "controller": "k8s",
        "confined": snap,
        "models": {name: {"apps": {}, "runs": [], **dict(m)} for name, m in (models or {}).items()},
        "ca_pem_file": str(ca_file),
        "addresses": addresses,
        "leaders": {"loki": loki_leader},
        "heads": HEADS,
    }
    state_file.write_text(json.dumps(state, indent=1, sort_keys=True))
    model = Model(state_file)
    context = ca.server_context(root / "certs")
    servers: list[http.server.ThreadingHTTPServer] = []
    for unit, port in (("prometheus/0", 9090), ("loki/0", 3100), ("loki/1", 3100)):
        server = http.server.ThreadingHTTPServer((addresses[unit], port), make_handler(model, unit))
        server.socket = context.wrap_socket(server.socket, server_side=True)
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield World(
            root, home, bin_dir, juju, state_file, root / "juju-calls.jsonl", ca_file, model,
            addresses,
        )  # fmt: skip
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()


def deployed_apps(
    otelcol: Mapping[str, Any] | None = None, loki_units: int = 2
) -> dict[str, dict[str, Any]]:
    """A model state that already holds the bundle (for --model reuse and `loadgate run`)."""
    bundle = yaml.safe_load((ROOT / "bundles" / "bundle.yaml").read_text())
    apps: dict[str, dict[str, Any]] = {}
    for app, spec in bundle["applications"].items():
        charm, channel = spec["charm"], spec.get("channel", "")
        entry: dict[str, Any]
        if charm.startswith("./"):
            entry = {"charm": "loadgate-k6-k8s", "origin": "local", "rev": 1, "channel": ""}
        else:
            entry = {"charm": charm, "origin": "charmhub", "rev": HEADS[charm][channel],
                     "channel": channel}  # fmt: skip
        scale = loki_units if app == "loki" else int(spec.get("scale", 1))
        entry.update(units=list(range(scale)), next_unit=scale)
        apps[app] = entry
    if otelcol:
        apps["otelcol"].update(otelcol)
    return apps


def upstream_charm(path: Path, charm: str, track: str, images: Mapping[str, str | None]) -> Path:
    """A packed upstream charm (as its own repository's CI packs it), with the endpoints and
    storage src/loadgate/data/upstream-charms.yaml records for that track, and OCI image resources
    (None: a resource whose metadata names no upstream-source)."""
    data = yaml.safe_load((ROOT / "src" / "loadgate" / "data" / "upstream-charms.yaml").read_text())
    recorded = data["charms"][charm]["tracks"][track]
    metadata: dict[str, Any] = {"name": charm, "containers": {}, "resources": {}}
    for name, ep in recorded["endpoints"].items():
        entry = {"interface": ep["interface"], **({"limit": ep["limit"]} if "limit" in ep else {})}
        metadata.setdefault(ep["role"], {})[name] = entry
    metadata["storage"] = {name: {"type": "filesystem"} for name in recorded.get("storage", [])}
    for name, image in images.items():
        spec: dict[str, Any] = {"type": "oci-image", "description": name}
        if image:
            spec["upstream-source"] = image
        metadata["resources"][name] = spec
    return fake_charm(path, metadata)
