"""What a running stack is: `stack.json` (StackInfo, written by `up`, read by everything else),
what it runs (a charm rendering or a hand profile), its processes and Pebble's view of them."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import ops.pebble

from loadgate import paths, tlsclient

from ..charms import signals as signal_relations
from . import cpu_steal, fault_service, procs, render, standin
from .cgroups import StackGroups
from .charm_stack import PreparedCharms
from .cpu_split import CpuSplit
from .fault_service import FaultService
from .hand import HandChanges
from .layout import Layout
from .ports import Ports
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
    cpu_split: CpuSplit | None = None  # the pipeline's and the generator's CPUs (None: shared)

    @property
    def traces(self) -> bool:
        return signal_relations.TRACES in self.signals

    @property
    def _backend_ports(self) -> standin.StandinPorts | None:
        """The traces backend stand-in's ports (None: the stack runs none)."""
        return standin.TRACES.ports_for(self.ports) if self.traces else None

    @property
    def hand(self) -> HandChanges | None:
        """The hand changes made on the charms' rendering (None: none)."""
        data = (self.charms or {}).get("hand")
        return HandChanges.from_dict(data) if isinstance(data, dict) else None

    @property
    def logs_standin_ports(self) -> standin.StandinPorts | None:
        """The Loki stand-in's ports (None: the stack runs none)."""
        changes = self.hand
        if changes is None or changes.exporter != "standin":
            return None
        return standin.LOKI.ports_for(self.ports)

    @property
    def services(self) -> tuple[str, ...]:
        """The Pebble services of the stack."""
        extra = (standin.TRACES.service,) if self.traces else ()
        if self.logs_standin_ports is not None:
            extra += (standin.LOKI.service,)
        if self.backend_fault is not None:
            extra += (fault_service.SERVICE,)
        if self.hand is not None and self.hand.cpu_steal:
            extra += (cpu_steal.SERVICE,)
        return (*SERVICES, *extra)

    def health_urls(self) -> dict[str, str]:
        urls = render.health_urls(self.ports)
        if self._backend_ports is not None:
            urls[standin.TRACES.service] = standin.health_url(self._backend_ports)
        if self.logs_standin_ports is not None:
            urls[standin.LOKI.service] = standin.health_url(self.logs_standin_ports)
        if self.backend_fault is not None:
            urls[fault_service.SERVICE] = self.backend_fault.ready_url
        return urls

    def service_ports(self) -> dict[str, int]:
        out = {
            "otelcol": self.ports.otlp_http,
            "loki": self.ports.loki_http,
            "prometheus": self.ports.prometheus,
        }
        if self._backend_ports is not None:
            out[standin.TRACES.service] = self._backend_ports.otlp_http
        if self.logs_standin_ports is not None:
            out[standin.LOKI.service] = self.logs_standin_ports.otlp_http
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
        return tlsclient.verified_client(self.ca_file, self.loki_server_name, timeout)

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
            **({"cpu_split": self.cpu_split.to_dict()} if self.cpu_split else {}),
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
            cpu_split=CpuSplit.from_dict(d.get("cpu_split")),
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
