"""What the runner asks of a target (where the load goes, where the figures come from), and
the errors and progress it reports.

`Target` is what every target does. What only some targets can do is a protocol of its own
(`SeesProcesses`, `WaitsForQuiet`, ...), checked at run time with `isinstance`; a target that
lacks one is read as not having it (the runner's defaults below). The real targets name the
abilities they have as their bases, so pyright checks each signature.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from loadgate.contract.spec import RunSpec
from loadgate.contract.summary import ClientFigures
from loadgate.measure.cpu import CpuReading
from loadgate.measure.pipeline import Scope
from loadgate.measure.queries import LokiAPI, PrometheusAPI
from loadgate.measure.resources import ResourceFigures


class RunError(RuntimeError):
    """The run could not be carried out (k6 error, unreachable API); exit code 2."""


@dataclass(frozen=True)
class Progress:
    elapsed_s: float
    total_s: float
    records_sent: int
    records_accepted: int
    error_rate: float
    detail: str = ""


@dataclass(frozen=True)
class LoadWindow:
    """The load as it really ran: from k6's first request to its last (epoch seconds), when
    k6 itself started (it prepares its VUs before the first request), and the CPU of every
    process at the two edges."""

    first_request: float
    last_request: float
    k6_started: float
    cpu: tuple[CpuReading, CpuReading]
    source: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "first_request": self.first_request,
            "last_request": self.last_request,
            "k6_started": self.k6_started,
            "k6_start_s": round(self.first_request - self.k6_started, 3),
            "source": self.source,
        }


class Target(Protocol):
    """What every target does: run the load, follow it, give k6's figures, and answer for the
    pipeline (its Prometheus and Loki)."""

    name: str

    def prometheus(self) -> PrometheusAPI: ...

    def loki(self) -> LokiAPI: ...

    def start(self, spec: RunSpec, out_dir: Path) -> None: ...

    def poll(self) -> Progress | None:
        """Live progress while the load runs; None once it has finished."""
        ...

    def finish(self) -> ClientFigures:
        """The client figures of the finished load (raises RunError if k6 failed)."""
        ...

    def stop(self) -> None: ...

    def environment(self) -> dict[str, Any]: ...


class ScopedTarget(Target, Protocol):
    """A target that knows which series are its pipeline under test (the exporter `--hand`
    chose, or on Juju the followed Loki unit's copy): what a command's run and a search's
    settling read."""

    @property
    def scope(self) -> Scope: ...


class OpenedTarget(ScopedTarget, Protocol):
    """A target a command opens on a running stack and closes once done with it (a local stack's:
    the seams and drivers that open one per stack take this)."""

    def close(self) -> None: ...


# ---- what only some targets can do ------------------------------------------------------------


@runtime_checkable
class SeesProcesses(Protocol):
    """A target that sees its processes (k6 and the stack's): the load window from k6's first
    request to its last, every process's CPU, and what k6 itself cost."""

    def poll_interval(self) -> float:
        """How soon to poll again (without this ability, or not above 0: every second)."""
        ...

    def load_window(self) -> LoadWindow | None:
        """The load from k6's first request to its last, with every process's CPU read at both
        edges (None: k6 sent nothing)."""
        ...

    def cpu_reading(self) -> CpuReading | None:
        """Every process's CPU now (None: not read)."""
        ...

    def generator_figures(self) -> dict[str, Any]:
        """What it measured of the load generator once the load finished (`k6_cpu_s`,
        `machine_cores`, `vus_max`, `source`)."""
        ...


@runtime_checkable
class ProbesSpeed(Protocol):
    """A target that runs the speed probe (measure.speed_probe) beside each run's load."""

    def speed_probe(self, start: float, end: float) -> tuple[float | None, int]:
        """The probe's median CPU ns per job over [start, end] (epoch s), and how many of its
        jobs ended there ((None, n): too few to say)."""
        ...


@runtime_checkable
class WaitsForQuiet(Protocol):
    """`quiet_s`: how long the collector must have taken in none of its own log records before
    the baseline and after the drain (0: not waited for). The collector's own logs (the charm's
    internal-telemetry loop) then sit inside the window or outside it, never across its
    edges."""

    quiet_s: float


@runtime_checkable
class Supervised(Protocol):
    def service_states(self) -> dict[str, dict[str, Any]]:
        """Each service's state as its supervisor sees it (`{"current": "active", "since":
        <epoch seconds>}`)."""
        ...


@runtime_checkable
class ReportsResources(Protocol):
    def resource_figures(self) -> ResourceFigures | None:
        """What the stack's enforced resource limits and backend faults did over the run (OOM
        kills, throttling, ...); None: it has neither."""
        ...


@runtime_checkable
class NamesCollectorSeries(Protocol):
    def collector_series(self) -> dict[str, str]:
        """Label matchers of the collector's own series in its Prometheus when it holds other
        copies of them (a local stack carrying metrics: the collector also remote-writes its own
        metrics there); empty: every copy is the collector's."""
        ...


@runtime_checkable
class NamesStandinSeries(Protocol):
    def standin_series(self) -> tuple[dict[str, str], str] | None:
        """Label matchers of the traces backend stand-in's own series and what they pick, for
        the result's source, where they are not the local stack's (job traces-standin): on
        Juju, its application. None: the local stack's."""
        ...


# ---- the runner's reading of them: a target without an ability gives the default -------------


def quiet_seconds(target: Target) -> float:
    return target.quiet_s if isinstance(target, WaitsForQuiet) else 0.0


def service_states(target: Target) -> dict[str, dict[str, Any]]:
    """Each service's state as the target's supervisor sees it (empty: no supervisor)."""
    if not isinstance(target, Supervised):
        return {}
    return {name: dict(state) for name, state in target.service_states().items()}


def poll_interval(target: Target) -> float:
    answer = target.poll_interval() if isinstance(target, SeesProcesses) else None
    return answer if answer is not None and answer > 0 else 1.0


def load_window(target: Target) -> LoadWindow | None:
    return target.load_window() if isinstance(target, SeesProcesses) else None


def collector_series(target: Target) -> dict[str, str]:
    return dict(target.collector_series()) if isinstance(target, NamesCollectorSeries) else {}


def standin_series(target: Target) -> tuple[dict[str, str], str] | None:
    return target.standin_series() if isinstance(target, NamesStandinSeries) else None


def cpu_reading(target: Target) -> CpuReading | None:
    return target.cpu_reading() if isinstance(target, SeesProcesses) else None


def generator_figures(target: Target, spec: RunSpec) -> dict[str, Any]:
    """`generator` of result.json: the VU ceiling the spec gave k6 and what the target measured
    of k6 itself (nothing on a target that cannot see its processes)."""
    out: dict[str, Any] = {"vus_limit": spec.max_vus if spec.offered_logs_per_minute else spec.vus}
    if isinstance(target, SeesProcesses):
        out.update(target.generator_figures())
    return out


def speed_probe(target: Target, start: float, end: float) -> tuple[float | None, int]:
    """The speed probe's median CPU ns per job over [start, end] and its jobs there ((None, 0):
    a target that runs no probe)."""
    return target.speed_probe(start, end) if isinstance(target, ProbesSpeed) else (None, 0)


def resource_figures(target: Target) -> ResourceFigures | None:
    """`resources` of result.json (None: the target has no limits or faults to report)."""
    return target.resource_figures() if isinstance(target, ReportsResources) else None
