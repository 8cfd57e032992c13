"""Lifecycle of the local stack: `up`, `down` and `status` of a Pebble daemon and its services."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import ops.pebble
import yaml

from .. import binaries, paths
from .. import tls as tls_material
from . import pebble_daemon, render
from .layout import Layout
from .ports import Ports, busy_ports
from .profile import Profile

SERVICES = ("otelcol", "loki", "prometheus")
STACK_PARTS = ("pebble", "otelcol", "loki", "prometheus")


class StackError(RuntimeError):
    """The stack cannot be started, reached or stopped; the message says why and what to do."""


@dataclass(frozen=True)
class StackInfo:
    """What a running stack is: written to stack.json by `up`, read by everything else."""

    root: Path
    pid: int
    ports: Ports
    profile: Profile
    bin_dir: Path
    started_at: float

    @property
    def layout(self) -> Layout:
        return Layout(self.root)

    @property
    def ca_file(self) -> Path:
        return self.layout.ca_cert

    @property
    def otlp_http_url(self) -> str:
        return render.otlp_http_url(self.ports)

    @property
    def prometheus_url(self) -> str:
        return render.prometheus_base_url(self.ports)

    @property
    def loki_url(self) -> str:
        return render.loki_base_url(self.ports)

    def to_dict(self) -> dict[str, Any]:
        return {
            "root": str(self.root),
            "pid": self.pid,
            "ports": self.ports.to_dict(),
            "profile": self.profile.to_dict(),
            "bin_dir": str(self.bin_dir),
            "started_at": self.started_at,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StackInfo:
        return cls(
            root=Path(d["root"]),
            pid=int(d["pid"]),
            ports=Ports(**d["ports"]),
            profile=Profile(**d["profile"]),
            bin_dir=Path(d["bin_dir"]),
            started_at=float(d["started_at"]),
        )


@dataclass
class ServiceStatus:
    name: str
    port: int
    pebble: str  # active / inactive / error / backoff / unknown
    healthy: bool
    detail: str = ""


@dataclass
class StackStatus:
    running: bool
    info: StackInfo | None
    services: list[ServiceStatus] = field(default_factory=list[ServiceStatus])

    @property
    def healthy(self) -> bool:
        return self.running and bool(self.services) and all(s.healthy for s in self.services)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of ours still answers kill(0); look at its state.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def read_info(root: Path | None = None) -> StackInfo | None:
    layout = Layout(root or paths.stack_dir())
    if not layout.state_file.is_file():
        return None
    return StackInfo.from_dict(json.loads(layout.state_file.read_text()))


def running_info(root: Path | None = None) -> StackInfo | None:
    info = read_info(root)
    if info is None or not _pid_alive(info.pid):
        return None
    return info


def pebble_client(info: StackInfo) -> ops.pebble.Client:
    return ops.pebble.Client(socket_path=str(info.layout.pebble_socket))


def _http_client(info: StackInfo, timeout: float = 2.0) -> httpx.Client:
    return httpx.Client(verify=tls_material.client_context(info.ca_file), timeout=timeout)


def _probe(client: httpx.Client, url: str) -> tuple[bool, str]:
    try:
        resp = client.get(url)
    except httpx.HTTPError as exc:
        return False, type(exc).__name__
    return resp.status_code == 200, f"HTTP {resp.status_code}"


def write_configs(layout: Layout, profile: Profile, ports: Ports, bin_dir: Path) -> None:
    """Fresh run directory: TLS material, the three configs and the Pebble layer."""
    if layout.root.exists():
        shutil.rmtree(layout.root)
    for folder in layout.folders():
        folder.mkdir(parents=True, exist_ok=True)
    tls_material.write(tls_material.generate(), layout.tls)
    dump = {
        layout.collector_config: render.collector_config(profile, ports, layout),
        layout.loki_config: render.loki_config(profile, ports, layout),
        layout.prometheus_config: render.prometheus_config(ports, layout),
    }
    for path, cfg in dump.items():
        path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    layers = layout.pebble / "layers"
    layers.mkdir(parents=True, exist_ok=True)
    layer = render.pebble_layer(bin_dir, ports, layout)
    (layers / "001-loadgate.yaml").write_text(yaml.safe_dump(layer, sort_keys=False))


def _service_log_tail(layout: Layout, service: str, lines: int = 5) -> list[str]:
    log = layout.logs / "pebble.log"
    if not log.is_file():
        return []
    tagged = [ln for ln in log.read_text(errors="replace").splitlines() if f"[{service}]" in ln]
    return tagged[-lines:]


def up(
    profile: Profile,
    ports: Ports,
    *,
    root: Path | None = None,
    bin_dir: Path | None = None,
    timeout: float = 60.0,
    on_wait: Callable[[dict[str, bool], float], None] | None = None,
) -> StackInfo:
    """Start the stack and return once every service is healthy; on any failure, stop it all."""
    layout = Layout(root or paths.stack_dir())
    bdir = bin_dir or paths.bin_dir()
    existing = running_info(layout.root)
    if existing is not None:
        raise StackError(
            f"a stack is already running from {layout.root} (pebble pid {existing.pid}); "
            "use it, or stop it first with `loadgate stack down`"
        )
    not_built = binaries.missing(STACK_PARTS, bdir)
    if not_built:
        raise StackError(
            f"not built at the pinned version: {', '.join(not_built)} (in {bdir}); "
            "run `loadgate binaries` first"
        )
    busy = busy_ports(ports)
    if busy:
        listed = ", ".join(f"{name} {port}" for name, port in busy)
        raise StackError(
            f"port in use: {listed}; stop what listens there or move the stack with --base-port"
        )

    write_configs(layout, profile, ports, bdir)
    proc = pebble_daemon.spawn(
        bdir / "pebble",
        layout.pebble,
        layout.logs / "pebble.log",
        args=("run", "--verbose"),
        # Pebble's HTTPS health check of Loki verifies against this stack's CA.
        env={"SSL_CERT_FILE": str(layout.ca_cert)},
        cwd=layout.root,
    )
    info = StackInfo(
        root=layout.root,
        pid=proc.pid,
        ports=ports,
        profile=profile,
        bin_dir=bdir,
        started_at=time.time(),
    )
    layout.state_file.write_text(json.dumps(info.to_dict(), indent=2))
    try:
        _wait_healthy(info, proc, timeout, on_wait)
    except BaseException:
        down(layout.root)
        raise
    return info


def _wait_healthy(
    info: StackInfo,
    proc: subprocess.Popen[bytes],
    timeout: float,
    on_wait: Callable[[dict[str, bool], float], None] | None,
) -> None:
    urls = render.health_urls(info.ports)
    start = time.monotonic()
    healthy = dict.fromkeys(urls, False)
    with _http_client(info, timeout=1.0) as client:
        while True:
            if proc.poll() is not None:
                raise StackError(
                    f"pebble exited with code {proc.returncode} during start; "
                    f"see {info.layout.logs / 'pebble.log'}"
                )
            for name, url in urls.items():
                if not healthy[name]:
                    healthy[name], _ = _probe(client, url)
            elapsed = time.monotonic() - start
            if on_wait:
                on_wait(dict(healthy), elapsed)
            if all(healthy.values()):
                return
            if elapsed > timeout:
                sick = [n for n, ok in healthy.items() if not ok]
                details = []
                for name in sick:
                    tail = _service_log_tail(info.layout, name, 3)
                    details.append(f"{name}: " + (" | ".join(tail) if tail else "no output"))
                raise StackError(
                    f"not healthy after {timeout:.0f}s: {', '.join(sick)}; "
                    + "; ".join(details)
                    + f"; full log {info.layout.logs / 'pebble.log'}"
                )
            time.sleep(0.2)


def _processes_under(root: Path) -> list[int]:
    """Processes whose command line names a path in the run directory (a service left behind)."""
    marker = str(root)
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline and _pid_alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        if not _pid_alive(pid):
            return True
        time.sleep(0.1)
    return not _pid_alive(pid)


def down(root: Path | None = None, timeout: float = 20.0) -> list[str]:
    """Stop the Pebble daemon and its services; kill anything of the stack that is left.

    Returns what it stopped, as human-readable lines. Safe to call when nothing runs.
    """
    layout = Layout(root or paths.stack_dir())
    stopped: list[str] = []
    info = read_info(layout.root)
    if info is not None and _pid_alive(info.pid):
        try:
            pebble_client(info).stop_services(list(SERVICES), timeout=timeout)
            stopped.append("services " + ", ".join(SERVICES))
        except (ops.pebble.Error, OSError, TimeoutError):
            pass  # pebble may be starting or gone; the signals below still stop everything
        os.kill(info.pid, signal.SIGTERM)
        if not _wait_gone(info.pid, timeout):
            os.kill(info.pid, signal.SIGKILL)
            _wait_gone(info.pid, 5)
        stopped.append(f"pebble (pid {info.pid})")
    for pid in _processes_under(layout.root):
        try:
            os.kill(pid, signal.SIGKILL)
            _wait_gone(pid, 5)
            stopped.append(f"leftover process {pid}")
        except ProcessLookupError:
            pass
    layout.state_file.unlink(missing_ok=True)
    return stopped


def status(root: Path | None = None) -> StackStatus:
    info = running_info(root)
    if info is None:
        return StackStatus(running=False, info=read_info(root))
    port_of = {
        "otelcol": info.ports.otlp_http,
        "loki": info.ports.loki_http,
        "prometheus": info.ports.prometheus,
    }
    pebble_state: dict[str, str] = {}
    try:
        for svc in pebble_client(info).get_services(list(SERVICES)):
            current = svc.current
            state = current.value if isinstance(current, ops.pebble.ServiceStatus) else current
            pebble_state[svc.name] = str(state)
    except (ops.pebble.Error, OSError):
        pass
    out: list[ServiceStatus] = []
    with _http_client(info) as client:
        for name, url in render.health_urls(info.ports).items():
            ok, detail = _probe(client, url)
            out.append(
                ServiceStatus(name, port_of[name], pebble_state.get(name, "unknown"), ok, detail)
            )
    return StackStatus(running=True, info=info, services=out)
