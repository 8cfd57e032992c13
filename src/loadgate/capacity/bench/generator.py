"""The generator benchmark: how many units (log records, data points, lines, spans, queries) per
minute one k6 core generates, for each scenario (the command, `loadgate bench generator`, is
loadgate.cli.bench).

k6 runs the scenario (constant VUs, no remote write) against a collector whose only exporter
is `nop`, so the sink does as little as possible: its OTLP receiver takes otlp-logs,
otlp-metrics and otlp-traces as the real one does; for loki-push the same receiver serves TLS
(a fresh CA, trusted by k6 as a loki-push run trusts the stack's) and takes the push path
(`logs_url_path: /loki/api/v1/push`): it parses the body as JSON and skips what OTLP does not
name, so k6 pays for TLS and its request as against Loki, and the sink stays cheap. A
collector cannot answer queries: logql-query's sink is capacity/bench/query_sink.py (TLS with the
same CA, Loki's push and query paths answered at once), and its k6 also pushes at the run's
push rate, as a real run does. k6's own CPU time comes from the kernel's accounting of the k6
process (wait4 rusage), not from wall-clock time.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from loadgate import paths
from loadgate.contract import k6args
from loadgate.contract.scenarios import LOGQL_QUERY, LOKI_PUSH, OTLP_LOGS, Scenario
from loadgate.contract.spec import RunSpec
from loadgate.contract.summary import read_summary
from loadgate.stack import render
from loadgate.stack import tls as tls_material
from loadgate.stack.layout import Layout
from loadgate.stack.ports import Ports
from loadgate.stack.procs import parent_death_signal, stop_child
from loadgate.stack.profile import PROFILES

_TARGET_PER_CORE = 2_000_000  # log records per minute per k6 core (issue target)
# Each scenario's target, where it has one (units per minute per k6 core).
TARGETS_PER_CORE: dict[str, int] = {OTLP_LOGS.name: _TARGET_PER_CORE}


@dataclass(frozen=True)
class GeneratorFigures:
    records_accepted: int
    wall_s: float
    k6_cpu_s: float
    collector_cpu_s: float

    @property
    def records_per_minute(self) -> float:
        return self.records_accepted * 60 / self.wall_s if self.wall_s else 0.0

    @property
    def records_per_cpu_second(self) -> float:
        return self.records_accepted / self.k6_cpu_s if self.k6_cpu_s else 0.0

    @property
    def records_per_minute_per_core(self) -> float:
        return self.records_per_cpu_second * 60


def _proc_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime + stime
    return ticks / os.sysconf("SC_CLK_TCK")


def _wait_ready(
    url: str, proc: subprocess.Popen[bytes], timeout: float = 20.0, verify: str | bool = True
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the sink exited with code {proc.returncode}")
        try:
            if httpx.get(url, timeout=1.0, verify=verify).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the sink was not healthy after {timeout:.0f}s")


def sink_config(kind: Scenario, ports: Ports, layout: Layout) -> dict[str, Any]:
    """The nop collector a scenario's benchmark sends to: every pipeline its OTLP receiver
    feeds ends in `nop`; for loki-push the receiver serves TLS (the layout's server
    certificate) and takes Loki's push path."""
    config = render.collector_config(PROFILES["nop"], ports, layout)
    pipelines = config["service"]["pipelines"]
    for signal in ("logs", "metrics", "traces"):
        pipelines.setdefault(signal, {"receivers": ["otlp"], "exporters": ["nop"]})
    if kind.name == LOKI_PUSH.name:
        http = config["receivers"]["otlp"]["protocols"]["http"]
        http["logs_url_path"] = kind.path
        http["tls"] = {"cert_file": str(layout.server_cert), "key_file": str(layout.server_key)}
    return config


def sink_target(kind: Scenario, ports: Ports) -> str:
    """Where k6 sends: the receiver's URL, over TLS for a scenario that goes to Loki (the
    certificate names localhost)."""
    if kind.otlp is None:
        return f"https://localhost:{ports.otlp_http}"
    return render.otlp_http_url(ports)


def _start_sink(
    kind: Scenario, ports: Ports, layout: Layout, tls: tls_material.TLSPaths
) -> tuple[subprocess.Popen[bytes], str, str | bool]:
    """The sink process, the URL that says it is ready and how to verify it."""
    log = (layout.logs / "sink.log").open("wb")
    if kind.name == LOGQL_QUERY.name:
        argv = [sys.executable, "-m", "loadgate.capacity.bench.query_sink", str(ports.otlp_http),
                str(layout.server_cert), str(layout.server_key)]  # fmt: skip
        ready: tuple[str, str | bool] = (f"{sink_target(kind, ports)}/ready", str(tls.ca_cert))
    else:
        config = sink_config(kind, ports, layout)
        layout.collector_config.write_text(yaml.safe_dump(config, sort_keys=False))
        argv = [str(paths.bin_dir() / "otelcol"), f"--config={layout.collector_config}"]
        ready = (render.health_urls(ports)["otelcol"], True)
    proc = subprocess.Popen(
        argv, stdout=log, stderr=subprocess.STDOUT, preexec_fn=parent_death_signal()
    )
    log.close()
    return proc, ready[0], ready[1]


def run_generator_bench(spec: RunSpec, ports: Ports, work: Path) -> GeneratorFigures:
    bdir = paths.bin_dir()
    layout = Layout(work)
    for folder in layout.folders():
        folder.mkdir(parents=True, exist_ok=True)
    tls = tls_material.write(tls_material.generate(), layout.tls)
    collector, ready_url, verify = _start_sink(spec.kind, ports, layout, tls)
    try:
        _wait_ready(ready_url, collector, verify=verify)
        cpu_before = _proc_cpu_seconds(collector.pid)
        summary_path = work / "k6-summary.json"
        cmd = k6args.build_command(
            spec,
            k6_bin=bdir / "k6",
            scripts_dir=paths.k6_dir(),
            target=sink_target(spec.kind, ports),
            summary_path=summary_path,
            instance="bench",
            ca_file=tls.ca_cert if spec.kind.otlp is None else None,
        )
        started = time.monotonic()
        with (work / "k6.log").open("wb") as k6_log:
            k6 = subprocess.Popen(
                cmd.argv,
                env={**os.environ, **cmd.env},
                stdout=k6_log,
                stderr=subprocess.STDOUT,
                preexec_fn=parent_death_signal(),
            )
            _, status, usage = os.wait4(k6.pid, 0)
            k6.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - started
        collector_cpu = _proc_cpu_seconds(collector.pid) - cpu_before
        if k6.returncode not in (0, 99):
            raise RuntimeError(f"k6 exited with code {k6.returncode}; see {work / 'k6.log'}")
        client = read_summary(summary_path)
        return GeneratorFigures(
            records_accepted=client.records_accepted,
            wall_s=client.duration_s or wall,
            k6_cpu_s=usage.ru_utime + usage.ru_stime,
            collector_cpu_s=collector_cpu,
        )
    finally:
        stop_child(collector, 10.0)
