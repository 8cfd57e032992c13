"""Lifecycle of the local stack: `up`, `down` and `status` of a Pebble daemon and its services.

A stack runs either what the otelcol and Loki charms render (charm_stack.py: the default) or a
hand-written profile (profile.py) for experiments no charm option expresses. What a running
stack is (`stack.json`) is info.py; the files `up` writes first are stack_files.py."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Collection, Sequence
from pathlib import Path

import httpx
import ops.pebble

from loadgate import paths, tlsclient
from loadgate.build import binaries

from ..charms import signals as signal_relations
from . import cgroups, cpu_split, orphans, pebble_daemon, procs, standin
from .charm_stack import PreparedCharms

# What a running stack is and the files it starts from, importable from here as before.
from .info import SERVICES as SERVICES
from .info import STACK_PARTS as STACK_PARTS
from .info import Owner as Owner
from .info import ServiceStatus as ServiceStatus
from .info import StackChoice as StackChoice
from .info import StackError as StackError
from .info import StackInfo as StackInfo
from .info import StackStatus as StackStatus
from .info import describe_leftovers as describe_leftovers
from .info import leftovers as leftovers
from .info import pebble_client as pebble_client
from .info import read_info as read_info
from .info import running_info as running_info
from .info import service_states as service_states
from .info import signals_of as signals_of
from .info import stack_parts as stack_parts
from .info import stack_processes as stack_processes
from .layout import Layout
from .ports import Ports, busy_ports, port_in_use
from .procs import ProcessId
from .profile import Profile
from .stack_files import Written as Written
from .stack_files import write_configs as write_configs


class _Prober:
    """Readiness probes of the services: Loki's over HTTPS verified against the stack's CA for
    the name its certificate holds, the others over plain HTTP on loopback."""

    def __init__(self, info: StackInfo, timeout: float = 2.0):
        self.plain = httpx.Client(timeout=timeout)
        self.loki = tlsclient.verified_client(info.ca_file, info.loki_server_name, timeout)

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
    _check_can_start(layout, what, ports, bdir)
    try:
        split = cpu_split.from_environment()
    except cpu_split.SplitError as exc:
        raise StackError(str(exc)) from None
    _remove_stale_groups(layout, on_step)
    try:
        written = write_configs(layout, what, ports, bdir, on_step, split)
    except BaseException:
        cgroups.release(layout.cgroups_file)
        raise
    if split is not None and on_step is not None:
        on_step(f"CPU split: {split.describe()}")
    info, proc = _start_pebble(layout, what, ports, bdir, written, split, owner)
    layout.state_file.write_text(json.dumps(info.to_dict(), indent=2))
    try:
        _wait_healthy(info, proc, timeout, on_wait)
    except BaseException:
        down(layout.root)
        raise
    return info


def _start_pebble(
    layout: Layout,
    what: StackChoice,
    ports: Ports,
    bin_dir: Path,
    written: Written,
    split: cpu_split.CpuSplit | None,
    owner: Owner | None,
) -> tuple[StackInfo, subprocess.Popen[bytes]]:
    """Spawn Pebble over the written layers: the stack it now runs (as the state file holds it)
    and Pebble's process."""
    proc = pebble_daemon.spawn(
        bin_dir / "pebble",
        layout.pebble,
        layout.logs / "pebble.log",
        args=("run", "--verbose"),
        # Pebble's HTTPS health check of Loki verifies against this stack's CA.
        env={"SSL_CERT_FILE": str(layout.ca_cert)},
        cwd=layout.root,
        cpus=split.generator if split else None,
    )
    pebble = ProcessId.of(proc.pid)
    info = StackInfo(
        root=layout.root,
        pid=proc.pid,
        ports=ports,
        profile=what if isinstance(what, Profile) else None,
        bin_dir=bin_dir,
        started_at=time.time(),
        pebble_start_ticks=pebble.start_ticks if pebble else 0,
        owner=owner,
        charms=written.charms,
        loki_server_name=written.loki_server_name,
        signals=signals_of(what),
        limits=written.groups,
        backend_fault=written.fault,
        cpu_split=split,
    )
    return info, proc


def _check_can_start(layout: Layout, what: StackChoice, ports: Ports, bin_dir: Path) -> None:
    """Nothing of a stack runs from this directory, the binaries are built, the ports free."""
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
    not_built = binaries.missing(stack_parts(what), bin_dir)
    if not_built:
        raise StackError(
            f"not built at the pinned version: {', '.join(not_built)} (in {bin_dir}); "
            "run `loadgate binaries` first"
        )
    busy = _busy_ports(what, ports)
    if busy:
        listed = ", ".join(f"{name} {port}" for name, port in busy)
        raise StackError(
            f"port in use: {listed}; if it is a loadgate stack, stop it with `loadgate stack down` "
            "(with its LOADGATE_STACK_DIR), else stop what listens there or move this stack with "
            "--base-port"
        )


def _busy_ports(what: StackChoice, ports: Ports) -> list[tuple[str, int]]:
    """The stack's ports already in use, with those of the stand-ins it would run."""
    busy = busy_ports(ports)
    if signal_relations.TRACES in signals_of(what):
        try:
            bports = standin.TRACES.named_ports(standin.TRACES.ports_for(ports))
        except ValueError as exc:
            raise StackError(str(exc)) from None
        busy += [(n, p) for n, p in bports if port_in_use(p)]
    if isinstance(what, PreparedCharms) and what.hand and what.hand.exporter == "standin":
        try:
            sports = standin.LOKI.named_ports(standin.LOKI.ports_for(ports))
        except ValueError as exc:
            raise StackError(str(exc)) from None
        busy += [(n, p) for n, p in sports if port_in_use(p)]
    return busy


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
            client = pebble_client(info)
            running = {s.name for s in client.get_services(list(info.services)) if s.is_running()}
            if running:
                client.stop_services(sorted(running), timeout=timeout)
            stopped += service_lines(info.services, running)
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


ALREADY_STOPPED = "already stopped: "


def service_lines(services: Sequence[str], running: Collection[str]) -> list[str]:
    """What `down` says of the stack's services: those it stopped, and those that had already
    stopped (exited or stopped by hand), so that a service gone before `down` is not reported
    as stopped by it."""
    stopped = [s for s in services if s in running]
    gone = [s for s in services if s not in running]
    return (["services " + ", ".join(stopped)] if stopped else []) + (
        [ALREADY_STOPPED + ", ".join(gone)] if gone else []
    )


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
