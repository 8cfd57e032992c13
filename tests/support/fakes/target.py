"""The one fake target (runner.target.ScopedTarget), with the abilities a test gives it.

Its load goes to a SimulatedStack on the stack's virtual clock: `start` starts k6's sending,
`poll` runs the stack up to the clock's now, `finish` gives k6's figures of what it sent, and
Prometheus and Loki answer from the stack. Without a stack it is a target that is opened,
described and closed but never loaded (tests that fake the runs themselves), and its
Prometheus is `prom`.

Of the abilities only some targets have (runner.target), it has those a test can set: the
quiet wait (`quiet_s`), the collector's and the stand-in's series, resource figures, and its
processes' CPU (`processes`: every process's CPU at a time, as the kernel would read it; the
load window is then the load's, read at its edges); each unset reads as the ability's absence.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from loadgate.contract.spec import RunSpec
from loadgate.contract.summary import ClientFigures
from loadgate.measure.cpu import CpuReading
from loadgate.measure.pipeline import Scope
from loadgate.measure.queries import LokiAPI, PrometheusAPI
from loadgate.measure.resources import ResourceFigures
from loadgate.runner.target import (
    LoadWindow,
    NamesCollectorSeries,
    NamesStandinSeries,
    Progress,
    ReportsResources,
    SeesProcesses,
    WaitsForQuiet,
)

from .prometheus import FakeProm
from .stack import SimulatedStack

# What k6 reports of a finished load: (units sent, the spec) -> its figures.
ClientOf = Callable[[int, RunSpec], ClientFigures]


def every_unit_accepted(sent: int, spec: RunSpec) -> ClientFigures:
    """k6's figures of a clean load: every unit sent was accepted, quickly."""
    return ClientFigures(
        requests=sent // spec.records_per_iteration,
        failed=0,
        error_rate=0.0,
        p99_ms=3.0,
        records_sent=sent,
        records_accepted=sent,
        records_per_minute=sent * 60 / spec.duration_s,
        duration_s=spec.duration_s,
    )


class FakeTarget(
    WaitsForQuiet, NamesCollectorSeries, NamesStandinSeries, ReportsResources, SeesProcesses
):
    def __init__(
        self,
        stack: SimulatedStack | None = None,
        *,
        name: str = "fake",
        prom: FakeProm | None = None,
        environment: dict[str, Any] | None = None,
        scope: Scope | None = None,
        quiet_s: float = 0.0,
        collector: dict[str, str] | None = None,
        standin: tuple[dict[str, str], str] | None = None,
        resources: ResourceFigures | None = None,
        processes: Callable[[float], CpuReading] | None = None,
        client: ClientOf = every_unit_accepted,
        on_close: Callable[[], None] | None = None,
    ):
        self.stack, self.name = stack, name
        self.prom = prom or (stack.prom if stack is not None else FakeProm())
        self.env = dict(environment or {})
        self.scope = scope or Scope()
        self.quiet_s = quiet_s
        self.collector = dict(collector or {})
        self.standin = standin
        self.resources = resources
        self.processes = processes
        self.cpu_reads: list[float] = []  # when the runner read every process's CPU
        self.load_edges: tuple[CpuReading, CpuReading] | None = None
        self.client = client
        self.on_close = on_close
        self.spec: RunSpec | None = None
        self.stopped = False
        self.closed = 0

    def _stack(self) -> SimulatedStack:
        assert self.stack is not None, "a target without a stack is never loaded"
        return self.stack

    # ---- runner.target.Target -------------------------------------------------------------------

    def prometheus(self) -> PrometheusAPI:
        return self.prom.api()

    def loki(self) -> LokiAPI:
        def handle(request: httpx.Request) -> httpx.Response:
            params = request.url.params
            at = int(params["time"]) / 1e9 if "time" in params else None
            value = self._stack().loki_answer(params["query"], at)
            result = [{"metric": {}, "value": [0, str(value)]}]
            body = {"status": "success", "data": {"resultType": "vector", "result": result}}
            return httpx.Response(200, json=body)

        return LokiAPI("https://loki", httpx.Client(transport=httpx.MockTransport(handle)))

    def start(self, spec: RunSpec, out_dir: Path) -> None:
        self.spec = spec
        stack = self._stack()
        stack.start_load(spec.duration_s)
        if self.processes is not None:
            now = stack.clock.now
            self.load_edges = (self.processes(now), self.processes(now + spec.duration_s))

    def poll(self) -> Progress | None:
        stack = self._stack()
        stack.run_until(stack.clock.now)
        if stack.clock.now >= stack.sending_until:
            return None
        assert self.spec is not None
        return Progress(0, self.spec.duration_s, stack.sent, stack.sent, 0.0)

    def finish(self) -> ClientFigures:
        assert self.spec is not None, "finish before start"
        return self.client(self._stack().sent, self.spec)

    def stop(self) -> None:
        self.stopped = True

    def environment(self) -> dict[str, Any]:
        return dict(self.env)

    def close(self) -> None:
        self.closed += 1
        if self.on_close is not None:
            self.on_close()

    # ---- the abilities a test sets --------------------------------------------------------------

    def collector_series(self) -> dict[str, str]:
        return dict(self.collector)

    def standin_series(self) -> tuple[dict[str, str], str] | None:
        return self.standin

    def resource_figures(self) -> ResourceFigures | None:
        return self.resources

    def poll_interval(self) -> float:
        return 1.0

    def cpu_reading(self) -> CpuReading | None:
        if self.processes is None:
            return None
        now = self._stack().clock.now
        self.cpu_reads.append(now)
        return self.processes(now)

    def load_window(self) -> LoadWindow | None:
        if self.load_edges is None:
            return None
        first, last = self.load_edges
        return LoadWindow(first.at, last.at, first.at, (first, last), "the fake's processes")

    def generator_figures(self) -> dict[str, Any]:
        return {}
