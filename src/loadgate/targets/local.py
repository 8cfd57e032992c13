"""The local target: a k6 process against the local stack's collector on loopback."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from loadgate import paths, procfs
from loadgate.build import binaries
from loadgate.charms import signals as signal_relations
from loadgate.contract import k6args
from loadgate.contract.scenarios import OTLP_LOGS
from loadgate.contract.spec import RunSpec
from loadgate.contract.summary import ClientFigures, SummaryError, read_summary
from loadgate.measure import cpu
from loadgate.measure.pipeline import Scope
from loadgate.measure.queries import LokiAPI, PrometheusAPI
from loadgate.runner.target import (
    LoadWindow,
    NamesCollectorSeries,
    ProbesSpeed,
    Progress,
    ReportsResources,
    RunError,
    SeesProcesses,
    Supervised,
    WaitsForQuiet,
)
from loadgate.tlsclient import client_context, verified_client

from ..measure.resources import ResourceFigures
from ..stack import local as stack_local
from ..stack import orphans, procs, render, standin, steal_service
from ..stack.cpu_split import CpuSplit
from ..stack.info import StackInfo
from ..stack.procs import ProcessId
from ..stack.resource_use import ResourceWatch
from .probe_process import ProbeProcess

_SUMMARY_FILE = "k6-summary.json"
_K6_LOG = "k6.log"
_K6_THRESHOLDS_FAILED = 99


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _machine_cores() -> int:
    """The cores this process (and k6, which inherits its affinity) may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


# The stand-ins run the collector's binary: told apart from it by their config file.
_STEAL_SCRIPT = "cpu_steal.py"
_STANDIN_CONFIGS = {f"{s.service}.yaml": s.service for s in (standin.LOKI, standin.TRACES)}


def _k6_preexec(split: CpuSplit | None) -> Callable[[], None]:
    """k6's `preexec_fn`: it dies with loadgate, and runs on the generator's CPUs when the
    stack is split."""
    death = procs.parent_death_signal()
    pin = procs.on_cpus(split.generator if split else None)
    if pin is None:
        return death

    def preexec() -> None:
        death()
        pin()

    return preexec


def process_name(exe: str, argv: list[str]) -> str:
    """A stack process's name for its CPU: its executable's, or a stand-in's service name
    (the same `otelcol` binary as the collector under test, another config), or the CPU
    steal's worker (a Python script, as the fault proxy is)."""
    if any(arg.endswith(f"/{_STEAL_SCRIPT}") for arg in argv):
        return steal_service.SERVICE
    for arg in argv:
        for config, service in _STANDIN_CONFIGS.items():
            if arg.endswith(f"/{config}"):
                return service
    return exe


def _log_tail(path: Path, lines: int = 8) -> str:
    if not path.is_file():
        return "(no output)"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


class LocalTarget(
    SeesProcesses, ProbesSpeed, WaitsForQuiet, Supervised, ReportsResources, NamesCollectorSeries
):
    name = "local"
    # Before the baseline and after the drain, the collector must have accepted nothing for
    # this long (runner.target.WaitsForQuiet): Prometheus scrapes the local stack every 2 s.
    quiet_s = 3.0

    def __init__(self, stack: StackInfo, *, remote_write: bool = True):
        self.stack = stack
        self.remote_write = remote_write
        self._http = httpx.Client(verify=client_context(stack.ca_file), timeout=30.0)
        # Loki's certificate names the host the charm asked for (verified as such).
        self._loki = verified_client(stack.ca_file, stack.loki_server_name, timeout=30.0)
        self._api = httpx.Client(timeout=2.0)
        self._proc: subprocess.Popen[bytes] | None = None
        self._k6: ProcessId | None = None
        self._out_dir: Path | None = None
        self._api_port = 0
        self._started = 0.0
        self._duration = 0.0
        self._k6_cpu_total: float | None = None  # user + sys, from the kernel when reaped
        self._k6_cpu_at_load: float | None = None  # k6's CPU when its first record was sent
        self._vus_max: int | None = None  # most VUs k6's API reported in use (every second)
        # The load window, first request to last, and the CPU of every process at its edges.
        self._first_at: float | None = None
        self._last_at: float | None = None
        self._k6_started_at = 0.0
        self._cpu_edges: list[cpu.CpuReading] = []
        self._resources: ResourceWatch | None = None  # the stack's limits and faults, per run
        self._probe: ProbeProcess | None = None  # the machine's speed beside the load, per run
        # The scenario's k6 counters of units sent and acknowledged (its REST API names).
        self._counters = (OTLP_LOGS.sent_metric, OTLP_LOGS.accepted_metric)

    @property
    def scope(self) -> Scope:
        """The pipeline under test's series: the collector's exporter the hand changes chose
        (its Loki exporter unless another was asked for), and the stack's Loki."""
        changes = self.stack.hand
        return Scope() if changes is None else Scope(exporter=changes.scope_exporter)

    def prometheus(self) -> PrometheusAPI:
        return PrometheusAPI(self.stack.prometheus_url, self._http)

    def loki(self) -> LokiAPI:
        return LokiAPI(self.stack.loki_url, self._loki)

    def load_target(self, spec: RunSpec) -> tuple[str, dict[str, str]]:
        """Where the scenario's load goes on this stack, and the names k6 must resolve itself:
        the collector's OTLP/HTTP receiver, or for a scenario whose target is no OTLP one
        (loki-push, logql-query) Loki under the name its certificate holds (k6 maps it to
        loopback and verifies TLS against the stack's CA)."""
        if spec.target:
            return spec.target, {}
        if spec.kind.otlp is None:
            name = self.stack.loki_server_name
            return f"https://{name}:{self.stack.ports.loki_http}", {name: "127.0.0.1"}
        return self.stack.otlp_http_url, {}

    def command(self, spec: RunSpec, out_dir: Path) -> k6args.K6Command:
        self._api_port = _free_port()
        rw = f"{self.stack.prometheus_url}/api/v1/write" if self.remote_write else None
        target, hosts = self.load_target(spec)
        return k6args.build_command(
            spec,
            k6_bin=binaries.binary_path("k6", self.stack.bin_dir),
            scripts_dir=paths.k6_dir(),
            target=target,
            summary_path=out_dir / _SUMMARY_FILE,
            instance="local",
            remote_write_url=rw,
            ca_file=self.stack.ca_file,
            api_address=f"127.0.0.1:{self._api_port}",
            hosts=hosts,
        )

    def start(self, spec: RunSpec, out_dir: Path) -> None:
        cmd = self.command(spec, out_dir)
        self._out_dir = out_dir
        self._duration = spec.duration_s
        self._counters = (spec.kind.sent_metric, spec.kind.accepted_metric)
        self._k6_cpu_total = None
        self._k6_cpu_at_load = None
        self._vus_max = None
        (out_dir / _SUMMARY_FILE).unlink(missing_ok=True)
        self._resources = ResourceWatch.begin(self.stack, spec.duration_s)
        split = self.stack.cpu_split
        self._stop_probe()
        self._probe = ProbeProcess.start(out_dir, split.pipeline if split else (), spec.duration_s)
        log = (out_dir / _K6_LOG).open("wb")
        self._started = time.monotonic()
        self._first_at = self._last_at = None
        self._cpu_edges = []
        self._k6_started_at = time.time()
        # k6 dies with loadgate (even after a SIGKILL of loadgate), and runs in its own process
        # group: a terminal's Ctrl-C reaches loadgate only, which stops k6 and then the stack.
        self._proc = subprocess.Popen(
            cmd.argv,
            env={**os.environ, **cmd.env},
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=out_dir,
            preexec_fn=_k6_preexec(self.stack.cpu_split),
            process_group=0,
        )
        log.close()
        self._k6 = ProcessId.of(self._proc.pid)
        if self._k6 is not None:
            orphans.record_k6(
                self.stack.root, orphans.K6Record(self._k6, ProcessId.me(), spec.run_id)
            )

    def _metric(self, name: str) -> dict[str, Any]:
        resp = self._api.get(f"http://127.0.0.1:{self._api_port}/v1/metrics/{name}")
        if resp.status_code != 200:
            return {}
        return resp.json()["data"]["attributes"]["sample"]

    def _exited(self) -> bool:
        """Whether k6 has ended, without reaping it: `finish` reaps it and reads its CPU."""
        assert self._proc is not None
        if self._proc.returncode is not None:
            return True
        try:
            info = os.waitid(os.P_PID, self._proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return self._proc.poll() is not None
        return info is not None

    def _reap(self) -> int:
        """Wait for k6 and take its exit code and CPU time (user + sys, its children's
        included) from the kernel's accounting of the reaped process."""
        assert self._proc is not None
        if self._proc.returncode is None:
            try:
                _, status, usage = os.wait4(self._proc.pid, 0)
            except ChildProcessError:
                return self._proc.wait()
            self._proc.returncode = os.waitstatus_to_exitcode(status)
            self._k6_cpu_total = usage.ru_utime + usage.ru_stime
        return self._proc.returncode

    def poll_interval(self) -> float:
        """How soon the runner should poll again (runner.target.SeesProcesses): often while
        waiting for k6's first request and near the load's end, so the window's edges (and the
        CPU read at them) are within a tenth of a second."""
        now = time.time()
        if self._first_at is None or (
            self._last_at is None and now >= self._first_at + self._duration - 1.5
        ):
            return 0.1
        return 1.0

    def _edge(self, now: float) -> None:
        """Mark the load window's first or last edge, reading every process's CPU there."""
        self._cpu_edges.append(self.cpu_reading(now))
        if self._first_at is None:
            self._first_at = now
        else:
            self._last_at = now

    def _due_edge(self, sent: int, now: float) -> bool:
        """The first record was just seen, or the scenario's duration has passed since."""
        if self._first_at is None:
            return sent > 0
        return self._last_at is None and now >= self._first_at + self._duration

    def poll(self) -> Progress | None:
        if self._proc is None:
            return None
        if self._exited():
            if self._first_at is not None and self._last_at is None:
                self._edge(time.time())  # k6 ended before its duration: the window ends here
            return None
        elapsed = time.monotonic() - self._started
        try:
            vus = self._metric("vus").get("value")
            if isinstance(vus, int | float):
                self._vus_max = max(self._vus_max or 0, int(vus))
            sent = int(self._metric(self._counters[0]).get("count", 0))
            now = time.time()
            if self._due_edge(sent, now):
                self._edge(now)
            if sent > 0 and self._k6_cpu_at_load is None:
                self._k6_cpu_at_load = procfs.cpu_seconds(self._proc.pid)
            accepted = int(self._metric(self._counters[1]).get("count", 0))
            errors = float(self._metric("errors").get("rate", 0.0))
        except (httpx.HTTPError, KeyError, ValueError):
            sent = accepted = 0
            errors = 0.0
        return Progress(elapsed, self._duration, sent, accepted, errors)

    def finish(self) -> ClientFigures:
        if self._proc is None or self._out_dir is None:
            raise RunError("k6 was not started")
        code = self._reap()
        self._forget()
        self._stop_probe()
        log = self._out_dir / _K6_LOG
        if code not in (0, _K6_THRESHOLDS_FAILED):
            raise RunError(f"k6 exited with code {code}:\n{_log_tail(log)}\n(full log {log})")
        try:
            return read_summary(self._out_dir / _SUMMARY_FILE)
        except SummaryError as exc:
            raise RunError(f"{exc}; k6 exited {code}:\n{_log_tail(log)}") from None

    def _forget(self) -> None:
        if self._k6 is not None:
            orphans.forget_k6(self.stack.root, self._k6)
            self._k6 = None

    def _stop_probe(self) -> None:
        if self._probe is not None:
            self._probe.stop()

    def speed_probe(self, start: float, end: float) -> tuple[float | None, int]:
        """The probe's median CPU ns per job over [start, end] and its jobs there
        (runner.target.ProbesSpeed); (None, 0) when no probe ran."""
        return self._probe.reading(start, end) if self._probe is not None else (None, 0)

    def stop(self) -> None:
        self._stop_probe()
        if self._proc is not None:
            procs.stop_child(self._proc, 15.0)
        if self._proc is not None and self._proc.poll() is not None:
            self._forget()

    def generator_figures(self) -> dict[str, Any]:
        """What this machine measured of k6 (runner.target.SeesProcesses): its CPU seconds over
        its life, the machine's cores and the most VUs in use (None when not measured)."""
        total, at_load = self._k6_cpu_total, self._k6_cpu_at_load
        load = total - at_load if total is not None and at_load is not None else None
        return {
            "k6_cpu_s": round(load, 3) if load is not None else None,
            "k6_cpu_total_s": round(total, 3) if total is not None else None,
            "machine_cores": _machine_cores(),
            "vus_max": self._vus_max,
            "source": "k6 CPU: the kernel's rusage of the reaped k6 process (user + sys, its "
            "children included); k6_cpu_s is what it used from its first record sent (read "
            "from /proc, polled every second) to its exit, without its start-up; VUs: k6's "
            "REST API `vus` gauge, sampled every second",
        }

    def _cpu_pids(self) -> dict[str, int | None]:
        """The processes whose CPU a run reads: the stack's services by name, its Pebble, k6
        (while it runs) and this loadgate process."""
        pids: dict[str, int | None] = {"pebble": self.stack.pid}
        for name, pid in stack_local.leftovers(self.stack):
            pids.setdefault(process_name(name, procs.cmdline(pid)), pid)
        running = self._proc is not None and self._proc.returncode is None
        pids["k6"] = self._proc.pid if running and self._proc is not None else None
        pids["loadgate"] = os.getpid()
        return pids

    def cpu_reading(self, at: float | None = None) -> cpu.CpuReading:
        """Every process's CPU seconds now (runner.target.SeesProcesses)."""
        return cpu.read(self._cpu_pids(), time.time() if at is None else at)

    def load_window(self) -> LoadWindow | None:
        """From k6's first request to its last, with the CPU read at both edges
        (runner.target.SeesProcesses); None when k6 sent nothing."""
        if self._first_at is None or self._last_at is None or len(self._cpu_edges) != 2:
            return None
        return LoadWindow(
            first_request=self._first_at,
            last_request=self._last_at,
            k6_started=self._k6_started_at,
            cpu=(self._cpu_edges[0], self._cpu_edges[1]),
            source="k6's REST API polled every 0.1 s at the edges: its first record sent, "
            "and the scenario's duration after it (or k6's exit, if sooner)",
        )

    def resource_figures(self) -> ResourceFigures | None:
        """What the stack's resource limits and backend faults did from the load's start
        (runner.target.ReportsResources); None on a stack with neither."""
        if self._resources is None:
            return None
        return self._resources.figures(self.prometheus())

    def collector_series(self) -> dict[str, str]:
        """The collector's series as the stack's Prometheus scrapes them (runner.target.
        NamesCollectorSeries). With the metrics signal the collector also remote-writes its own
        metrics there (under job otelcol-internal), a second copy of every counter; with the
        traces signal the stand-in backend, a collector too, has counters of the same names."""
        if signal_relations.is_default(self.stack.signals):
            return {}
        return {"job": render.COLLECTOR_JOB}

    def service_states(self) -> dict[str, dict[str, Any]]:
        """Each service as the stack's Pebble daemon sees it (runner.target.Supervised)."""
        return stack_local.service_states(self.stack)

    def environment(self) -> dict[str, Any]:
        """`environment` of result.json: what the stack ran. A charm stack records each charm's
        source (repository, ref, commit, revisions), its options, its workload image tag and
        the binary that ran it, and what localizing changed."""
        profile = self.stack.profile.to_dict() if self.stack.profile else {"name": self.stack.name}
        env: dict[str, Any] = {
            "profile": profile,
            "stack": self.stack.name,
            "versions": {p.name: p.version for p in binaries.PARTS},
            "stack_dir": str(self.stack.root),
        }
        if self.stack.charms is not None:
            env["charms"] = self.stack.charms
        split = self.stack.cpu_split
        env["cpu_split"] = split.to_dict() if split else None
        return env

    def close(self) -> None:
        self.stop()
        self._http.close()
        self._api.close()
        self._loki.close()
