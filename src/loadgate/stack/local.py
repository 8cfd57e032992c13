"""Lifecycle of the local stack: `up`, `down` and `status` of a Pebble daemon and its services.

A stack runs either what the otelcol and Loki charms render (charm_stack.py: the default) or a
hand-written profile (profile.py) for experiments no charm option expresses."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import ops.pebble
import yaml

from loadgate import paths
from loadgate.build import binaries
from loadgate.stack import tls as tls_material

from ..charms import signals as signal_relations
from . import (
    backends,
    cgroups,
    charm_stack,
    fault_service,
    logs_standin,
    orphans,
    pebble_daemon,
    procs,
    render,
)
from .cgroups import StackGroups
from .charm_stack import CharmStackError, PreparedCharms
from .fault_service import FaultService
from .hand import HandChanges
from .layout import Layout
from .ports import Ports, busy_ports, port_in_use
from .procs import ProcessId
from .profile import Profile

# What a stack runs: the charms' rendering (prepared sources and options), or a hand profile.
StackChoice = PreparedCharms | Profile

SERVICES = ("otelcol", "loki", "prometheus")
STACK_PARTS = ("pebble", "otelcol", "loki", "prometheus")


def signals_of(what: StackChoice) -> tuple[str, ...]:
    return signal_relations.DEFAULT if isinstance(what, Profile) else what.signals


def stack_parts(what: StackChoice) -> tuple[str, ...]:
    """The binaries a stack runs: a charm stack's workloads are its revisions' versions."""
    if isinstance(what, Profile):
        return STACK_PARTS
    return ("pebble", what.otelcol_part.name, what.loki_part.name, "prometheus")


class StackError(RuntimeError):
    """The stack cannot be started, reached or stopped; the message says why and what to do."""


@dataclass(frozen=True)
class Owner:
    """The run that started a stack; it stops the stack at its end unless told to keep it.
    A stack started by `loadgate stack up` has no owner and is stopped only by `stack down`."""

    process: ProcessId
    run_id: str
    keep: bool

    def to_dict(self) -> dict[str, Any]:
        return {"process": self.process.to_dict(), "run_id": self.run_id, "keep": self.keep}

    @classmethod
    def from_dict(cls, data: Any) -> Owner | None:
        if not isinstance(data, dict):
            return None
        process = ProcessId.from_dict(data.get("process"))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        if process is None:
            return None
        return cls(process, str(data.get("run_id") or ""), bool(data.get("keep")))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]


@dataclass(frozen=True)
class StackInfo:
    """What a running stack is: written to stack.json by `up`, read by everything else."""

    root: Path
    pid: int
    ports: Ports
    profile: Profile | None  # a hand-written stack's profile; None when the charms rendered it
    bin_dir: Path
    started_at: float
    pebble_start_ticks: int = 0  # with `pid`, the Pebble daemon's identity (0: not recorded)
    owner: Owner | None = None
    # A charm-rendered stack: the sources, options, workloads and what localizing changed.
    charms: dict[str, Any] | None = None
    loki_server_name: str = render.LOKI_TLS_SERVER_NAME  # the name Loki's certificate holds
    signals: tuple[str, ...] = signal_relations.DEFAULT
    limits: StackGroups | None = None  # the charms' resource limits: groups, what is enforced
    backend_fault: FaultService | None = None  # the fault proxy before Loki (--backend-fault)

    @property
    def traces(self) -> bool:
        return signal_relations.TRACES in self.signals

    @property
    def backend_ports(self) -> backends.BackendPorts | None:
        """The traces backend stand-in's ports (None: the stack runs none)."""
        return backends.BackendPorts.for_ports(self.ports) if self.traces else None

    @property
    def hand(self) -> HandChanges | None:
        """The hand changes made on the charms' rendering (None: none)."""
        data = (self.charms or {}).get("hand")
        return HandChanges.from_dict(data) if isinstance(data, dict) else None

    @property
    def logs_standin_ports(self) -> logs_standin.StandinPorts | None:
        """The Loki stand-in's ports (None: the stack runs none)."""
        changes = self.hand
        if changes is None or changes.exporter != "standin":
            return None
        return logs_standin.StandinPorts.for_ports(self.ports)

    @property
    def services(self) -> tuple[str, ...]:
        """The Pebble services of the stack."""
        extra = (backends.STANDIN_SERVICE,) if self.traces else ()
        if self.logs_standin_ports is not None:
            extra += (logs_standin.SERVICE,)
        if self.backend_fault is not None:
            extra += (fault_service.SERVICE,)
        return (*SERVICES, *extra)

    def health_urls(self) -> dict[str, str]:
        urls = render.health_urls(self.ports)
        if self.backend_ports is not None:
            urls[backends.STANDIN_SERVICE] = backends.health_url(self.backend_ports)
        if self.logs_standin_ports is not None:
            urls[logs_standin.SERVICE] = logs_standin.health_url(self.logs_standin_ports)
        if self.backend_fault is not None:
            urls[fault_service.SERVICE] = self.backend_fault.ready_url
        return urls

    def service_ports(self) -> dict[str, int]:
        out = {
            "otelcol": self.ports.otlp_http,
            "loki": self.ports.loki_http,
            "prometheus": self.ports.prometheus,
        }
        if self.backend_ports is not None:
            out[backends.STANDIN_SERVICE] = self.backend_ports.traces_otlp_http
        if self.logs_standin_ports is not None:
            out[logs_standin.SERVICE] = self.logs_standin_ports.otlp_http
        if self.backend_fault is not None:
            out[fault_service.SERVICE] = self.backend_fault.port
        return out

    @property
    def name(self) -> str:
        """What the stack runs, for people: a charm preset (`charms:batch`) or a profile."""
        if self.charms is not None:
            return f"charms:{self.charms.get('preset') or 'charm-default'}"
        return self.profile.name if self.profile else "?"

    def loki_client(self, timeout: float = 30.0) -> httpx.Client:
        """An HTTPS client for Loki: the stack's CA only, its certificate checked for its name."""
        return tls_material.verified_client(self.ca_file, self.loki_server_name, timeout)

    @property
    def otelcol_binary(self) -> Path:
        part = (self.charms or {}).get("otelcol", {}).get("workload", {}).get("part", "otelcol")
        return binaries.binary_path(str(part), self.bin_dir)

    @property
    def pebble(self) -> ProcessId:
        return ProcessId(self.pid, self.pebble_start_ticks)

    def pebble_alive(self) -> bool:
        if self.pebble_start_ticks:
            return self.pebble.alive()
        return _pid_alive(self.pid)

    @property
    def abandoned(self) -> bool:
        """Started by a run that ended (or died) without stopping it and without keeping it."""
        return self.owner is not None and not self.owner.keep and not self.owner.process.alive()

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
            "profile": self.profile.to_dict() if self.profile else None,
            "charms": self.charms,
            "loki_server_name": self.loki_server_name,
            "bin_dir": str(self.bin_dir),
            "started_at": self.started_at,
            "pebble_start_ticks": self.pebble_start_ticks,
            "owner": self.owner.to_dict() if self.owner else None,
            **(
                {} if signal_relations.is_default(self.signals) else {"signals": list(self.signals)}
            ),
            # Only on stacks that have them: others keep their shape.
            **({"limits": self.limits.to_dict()} if self.limits else {}),
            **({"backend_fault": self.backend_fault.to_dict()} if self.backend_fault else {}),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StackInfo:
        return cls(
            root=Path(d["root"]),
            pid=int(d["pid"]),
            ports=Ports(**d["ports"]),
            profile=Profile(**d["profile"]) if d.get("profile") else None,
            charms=d.get("charms"),
            loki_server_name=str(d.get("loki_server_name") or render.LOKI_TLS_SERVER_NAME),
            bin_dir=Path(d["bin_dir"]),
            started_at=float(d["started_at"]),
            pebble_start_ticks=int(d.get("pebble_start_ticks") or 0),
            owner=Owner.from_dict(d.get("owner")),
            signals=tuple(d.get("signals") or signal_relations.DEFAULT),
            limits=StackGroups.from_dict(d["limits"]) if d.get("limits") else None,
            backend_fault=(
                FaultService.from_dict(d["backend_fault"]) if d.get("backend_fault") else None
            ),
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
    running: bool  # the Pebble daemon runs
    info: StackInfo | None
    services: list[ServiceStatus] = field(default_factory=list[ServiceStatus])
    # Processes of the stack that outlived its Pebble daemon: (name, pid).
    leftovers: list[tuple[str, int]] = field(default_factory=list[tuple[str, int]])

    @property
    def healthy(self) -> bool:
        return self.running and bool(self.services) and all(s.healthy for s in self.services)

    @property
    def pebble_gone(self) -> bool:
        return not self.running and bool(self.leftovers)


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
    if info is None or not info.pebble_alive():
        return None
    return info


def stack_processes(info: StackInfo) -> list[ProcessId]:
    """Every live process the stack started: its Pebble daemon and the services Pebble runs.

    They share the session Pebble created (`start_new_session`), which no unrelated process
    joins: a `tail` of the stack's log or another stack's services never match."""
    return procs.session_members(info.pebble)


def leftovers(info: StackInfo) -> list[tuple[str, int]]:
    """Processes of the stack other than its Pebble daemon, by executable name."""
    return [(_name_of(p.pid), p.pid) for p in stack_processes(info) if p.pid != info.pid]


def _name_of(pid: int) -> str:
    exe = procs.exe(pid)
    if exe:
        return Path(exe.removesuffix(" (deleted)")).name
    argv = procs.cmdline(pid)
    return Path(argv[0]).name if argv else "?"


def describe_leftovers(found: list[tuple[str, int]]) -> str:
    return ", ".join(f"{name} (pid {pid})" for name, pid in found)


def pebble_client(info: StackInfo) -> ops.pebble.Client:
    return ops.pebble.Client(socket_path=str(info.layout.pebble_socket))


def _rfc3339(text: str) -> float | None:
    """Seconds since the epoch of Pebble's RFC 3339 times (nanosecond fractions)."""
    m = re.fullmatch(r"(.+?T\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)", text, re.ASCII)
    if m is None:
        return None
    base, frac, zone = m.groups()
    try:
        stamp = datetime.fromisoformat(base + ("+00:00" if zone == "Z" else zone))
    except ValueError:
        return None
    return stamp.timestamp() + (float("0." + frac) if frac else 0.0)


def service_states(info: StackInfo) -> dict[str, dict[str, Any]]:
    """Each service as Pebble sees it: current state and since when (its last start or stop).
    Empty when Pebble does not answer."""
    transport = httpx.HTTPTransport(uds=str(info.layout.pebble_socket))
    try:
        with httpx.Client(transport=transport, timeout=2.0) as client:
            answer = client.get("http://pebble/v1/services").json()
    except (httpx.HTTPError, ValueError):
        return {}
    out: dict[str, dict[str, Any]] = {}
    for item in answer.get("result") or []:
        since = item.get("current-since")
        out[str(item.get("name"))] = {
            "current": str(item.get("current")),
            "since": _rfc3339(since) if isinstance(since, str) else None,
            "source": "Pebble",
        }
    return out


class _Prober:
    """Readiness probes of the services: Loki's over HTTPS verified against the stack's CA for
    the name its certificate holds, the others over plain HTTP on loopback."""

    def __init__(self, info: StackInfo, timeout: float = 2.0):
        self.plain = httpx.Client(timeout=timeout)
        self.loki = tls_material.verified_client(info.ca_file, info.loki_server_name, timeout)

    def __call__(self, name: str, url: str) -> tuple[bool, str]:
        client = self.loki if name == "loki" else self.plain
        try:
            resp = client.get(url)
        except httpx.HTTPError as exc:
            return False, type(exc).__name__
        return resp.status_code == 200, f"HTTP {resp.status_code}"

    def __enter__(self) -> _Prober:
        return self

    def __exit__(self, *_: object) -> None:
        self.plain.close()
        self.loki.close()


def _clear_run_dir(layout: Layout) -> None:
    """Empty the run directory, keeping its lock file (a held flock must keep its file)."""
    if not layout.root.is_dir():
        return
    for child in layout.root.iterdir():
        if child == layout.lock_file:
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


@dataclass(frozen=True)
class Written:
    """What write_configs decided beyond the files: Loki's certificate name, the charm report."""

    loki_server_name: str = render.LOKI_TLS_SERVER_NAME
    charms: dict[str, Any] | None = None
    traces_server_name: str | None = None
    groups: StackGroups | None = None
    fault: FaultService | None = None


def write_configs(
    layout: Layout,
    what: StackChoice,
    ports: Ports,
    bin_dir: Path,
    on_step: Callable[[str], None] | None = None,
) -> Written:
    """Fresh run directory: TLS material, the three configs and the Pebble layer; for a charm
    stack, rendered by the charms with this stack's CA and localized (charm_stack.py)."""
    _clear_run_dir(layout)
    for folder in layout.folders():
        folder.mkdir(parents=True, exist_ok=True)
    material = tls_material.generate()
    tls_material.write(material, layout.tls)
    written = Written()
    if isinstance(what, Profile):
        configs = {
            layout.collector_config: render.collector_config(what, ports, layout),
            layout.loki_config: render.loki_config(what, ports, layout),
        }
        layer = render.pebble_layer(bin_dir, ports, layout)
    else:
        fault = fault_service.allocate(what.backend_fault) if what.backend_fault else None
        try:
            files = charm_stack.build(
                what,
                layout,
                ports,
                bin_dir,
                material.ca_cert_pem.decode(),
                material.ca_key_pem.decode(),
                on_step=on_step,
                loki_via=fault.port if fault else None,
            )
        except CharmStackError as exc:
            raise StackError(str(exc)) from None
        configs = {
            layout.collector_config: files.collector_config,
            layout.loki_config: files.loki_config,
        }
        services = {name: dict(svc) for name, svc in files.services.items()}
        checks = dict(files.checks)
        if fault is not None:
            fault = replace(fault, server_name=files.loki_server_name)
            fault_service.write(fault, layout, ports)
            services[fault_service.SERVICE] = fault_service.pebble_service(layout)
            checks[f"{fault_service.SERVICE}-ready"] = fault_service.pebble_check(fault)
        groups = cgroups.enter(
            services, files.roles, what.limits_by_role(), layout.root, layout.cgroups_file
        )
        layer = render.charm_layer(services, checks, bin_dir, ports, layout)
        written = Written(
            files.loki_server_name, files.report, files.traces_server_name, groups, fault
        )
    configs[layout.prometheus_config] = render.prometheus_config(
        ports,
        layout,
        written.loki_server_name,
        out_of_order=signal_relations.METRICS in signals_of(what),
    )
    if written.traces_server_name is not None and not isinstance(what, Profile):
        binary = binaries.binary_path(what.otelcol_part.name, bin_dir)
        _add_traces_standin(layout, ports, material, written.traces_server_name, binary, configs,
                            layer)  # fmt: skip
    if isinstance(what, PreparedCharms) and what.hand and what.hand.exporter == "standin":
        binary = binaries.binary_path(what.otelcol_part.name, bin_dir)
        logs_standin.add(layout, ports, material, binary, configs, layer)
    if written.fault is not None:
        configs[layout.prometheus_config]["scrape_configs"].append(
            fault_service.scrape_job(written.fault)
        )
    for path, cfg in configs.items():
        path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    layers = layout.pebble / "layers"
    layers.mkdir(parents=True, exist_ok=True)
    (layers / "001-loadgate.yaml").write_text(yaml.safe_dump(layer, sort_keys=False))
    return written


def _add_traces_standin(
    layout: Layout,
    ports: Ports,
    material: tls_material.TLSMaterial,
    server_name: str,
    binary: Path,
    configs: dict[Path, dict[str, Any]],
    layer: dict[str, Any],
) -> None:
    """The traces backend stand-in: its certificate (the stack CA, for the name the collector
    was given), its config, service, readiness check and Prometheus scrape job."""
    bports = backends.BackendPorts.for_ports(ports)
    cert, key = tls_material.issue_server_cert(material, (server_name,))
    cert_file, key_file = layout.tls / "traces-standin.crt", layout.tls / "traces-standin.key"
    cert_file.write_bytes(cert)
    key_file.touch(mode=0o600)
    key_file.write_bytes(key)
    config = layout.config / "traces-standin.yaml"
    configs[config] = backends.standin_config(bports, cert_file, key_file)
    name = backends.STANDIN_SERVICE
    layer["services"][name] = backends.standin_service(binary, config, layout.root)
    layer["checks"][f"{name}-ready"] = backends.standin_check(bports)
    configs[layout.prometheus_config]["scrape_configs"].append(backends.standin_scrape_job(bports))


def _service_log_tail(layout: Layout, service: str, lines: int = 5) -> list[str]:
    log = layout.logs / "pebble.log"
    if not log.is_file():
        return []
    tagged = [ln for ln in log.read_text(errors="replace").splitlines() if f"[{service}]" in ln]
    return tagged[-lines:]


def up(
    what: StackChoice,
    ports: Ports,
    *,
    root: Path | None = None,
    bin_dir: Path | None = None,
    timeout: float = 60.0,
    on_wait: Callable[[dict[str, bool], float], None] | None = None,
    owner: Owner | None = None,
    on_step: Callable[[str], None] | None = None,
) -> StackInfo:
    """Start the stack and return once every service is healthy; on any failure, stop it all.

    `what`: prepared charm sources (charm_stack.prepare) or a hand profile. `owner` is the run
    starting it (None: `loadgate stack up`); `on_step` hears the rendering steps."""
    layout = Layout(root or paths.stack_dir())
    bdir = bin_dir or paths.bin_dir()
    existing = read_info(layout.root)
    if existing is not None and existing.pebble_alive():
        raise StackError(
            f"a stack is already running from {layout.root} (pebble pid {existing.pid}); "
            "use it, or stop it first with `loadgate stack down`"
        )
    if existing is not None and (left := leftovers(existing)):
        raise StackError(
            f"the stack at {layout.root} lost its Pebble daemon (pid {existing.pid}) but its "
            f"services still run: {describe_leftovers(left)}; stop them with `loadgate stack down`"
        )
    not_built = binaries.missing(stack_parts(what), bdir)
    if not_built:
        raise StackError(
            f"not built at the pinned version: {', '.join(not_built)} (in {bdir}); "
            "run `loadgate binaries` first"
        )
    busy = busy_ports(ports)
    if signal_relations.TRACES in signals_of(what):
        try:
            bports = backends.BackendPorts.for_ports(ports)
        except ValueError as exc:
            raise StackError(str(exc)) from None
        busy += [(n, p) for n, p in bports.items() if port_in_use(p)]
    if isinstance(what, PreparedCharms) and what.hand and what.hand.exporter == "standin":
        try:
            sports = logs_standin.StandinPorts.for_ports(ports)
        except ValueError as exc:
            raise StackError(str(exc)) from None
        busy += [(n, p) for n, p in sports.items() if port_in_use(p)]
    if busy:
        listed = ", ".join(f"{name} {port}" for name, port in busy)
        raise StackError(
            f"port in use: {listed}; if it is a loadgate stack, stop it with `loadgate stack down` "
            "(with its LOADGATE_STACK_DIR), else stop what listens there or move this stack with "
            "--base-port"
        )

    _remove_stale_groups(layout, on_step)
    try:
        written = write_configs(layout, what, ports, bdir, on_step)
    except BaseException:
        cgroups.release(layout.cgroups_file)
        raise
    proc = pebble_daemon.spawn(
        bdir / "pebble",
        layout.pebble,
        layout.logs / "pebble.log",
        args=("run", "--verbose"),
        # Pebble's HTTPS health check of Loki verifies against this stack's CA.
        env={"SSL_CERT_FILE": str(layout.ca_cert)},
        cwd=layout.root,
    )
    pebble = ProcessId.of(proc.pid)
    info = StackInfo(
        root=layout.root,
        pid=proc.pid,
        ports=ports,
        profile=what if isinstance(what, Profile) else None,
        bin_dir=bdir,
        started_at=time.time(),
        pebble_start_ticks=pebble.start_ticks if pebble else 0,
        owner=owner,
        charms=written.charms,
        loki_server_name=written.loki_server_name,
        signals=signals_of(what),
        limits=written.groups,
        backend_fault=written.fault,
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
    urls = info.health_urls()
    start = time.monotonic()
    healthy = dict.fromkeys(urls, False)
    with _Prober(info, timeout=1.0) as probe:
        while True:
            if proc.poll() is not None:
                raise StackError(
                    f"pebble exited with code {proc.returncode} during start; "
                    f"see {info.layout.logs / 'pebble.log'}"
                )
            for name, url in urls.items():
                if not healthy[name]:
                    healthy[name], _ = probe(name, url)
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


def down(root: Path | None = None, timeout: float = 20.0) -> list[str]:
    """Stop the Pebble daemon and its services, then whatever of the stack outlived it.

    Only processes the stack started are touched: the recorded Pebble daemon (PID and start
    time) and the members of its session. Returns what it stopped, as human-readable lines.
    Safe to call when nothing runs.
    """
    layout = Layout(root or paths.stack_dir())
    stopped: list[str] = []
    info = read_info(layout.root)
    if info is None:
        return stopped + _release_groups(layout)
    if info.pebble_alive():
        try:
            pebble_client(info).stop_services(list(info.services), timeout=timeout)
            stopped.append("services " + ", ".join(info.services))
            pebble_client(info).stop_services(list(info.services), timeout=timeout)
            stopped.append("services " + ", ".join(info.services))
        except (ops.pebble.Error, OSError, TimeoutError):
            pass  # pebble may be starting or gone; the signals below still stop everything
        procs.terminate(info.pebble, timeout)
        stopped.append(f"pebble (pid {info.pid})")
    for name, pid in leftovers(info):
        proc = ProcessId.of(pid)
        if proc is not None and procs.terminate(proc, 5.0):
            stopped.append(f"leftover {name} (pid {pid})")
    stopped += _release_groups(layout)
    layout.state_file.unlink(missing_ok=True)
    return stopped


def _release_groups(layout: Layout) -> list[str]:
    """Remove the stack's control groups; what was removed, or why one is left."""
    gone, left = cgroups.release(layout.cgroups_file)
    stacks = sorted({Path(g).name for g in gone if Path(g).name.startswith(cgroups.STACK_PREFIX)})
    lines = [f"control groups {', '.join(stacks)} ({len(gone)} folders)"] if gone else []
    return lines + [f"control group NOT removed: {why}" for why in left]


def _remove_stale_groups(layout: Layout, on_step: Callable[[str], None] | None) -> None:
    found, left = orphans.remove_stale_groups(layout.root)
    if found and on_step:
        on_step(f"found: {found}")
    if left:
        raise StackError(
            f"control groups of an earlier stack at {layout.root} cannot be removed: "
            + "; ".join(left)
        )


def status(root: Path | None = None) -> StackStatus:
    info = read_info(root)
    if info is None:
        return StackStatus(running=False, info=None)
    alive = info.pebble_alive()
    left = [] if alive else leftovers(info)
    if not alive and not left:
        return StackStatus(running=False, info=info)
    port_of = info.service_ports()
    pebble_state: dict[str, str] = {}
    if alive:
        try:
            for svc in pebble_client(info).get_services(list(info.services)):
                current = svc.current
                state = current.value if isinstance(current, ops.pebble.ServiceStatus) else current
                pebble_state[svc.name] = str(state)
        except (ops.pebble.Error, OSError):
            pass
    fallback = "unknown" if alive else "pebble gone"
    out: list[ServiceStatus] = []
    with _Prober(info) as probe:
        for name, url in info.health_urls().items():
            ok, detail = probe(name, url)
            out.append(
                ServiceStatus(name, port_of[name], pebble_state.get(name, fallback), ok, detail)
            )
    return StackStatus(running=alive, info=info, services=out, leftovers=left)
