"""What the runner asks of a target (where the load goes, where the figures come from), and
the errors and progress it reports."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from loadgate.contract.spec import RunSpec
from loadgate.contract.summary import ClientFigures
from loadgate.measure.cpu import CpuReading
from loadgate.measure.queries import LokiAPI, PrometheusAPI
from loadgate.measure.resources import ResourceFigures

# Optional on a target: `service_states() -> dict[str, dict[str, Any]]`, each service's state
# as its supervisor sees it ({"current": "active", "since": <epoch seconds>}).
SERVICE_STATES = "service_states"
# Optional on a target: `quiet_s`, how long the collector must have taken in none of its own
# log records before the baseline and after the drain (0: not waited for). The collector's own
# logs (the charm's internal-telemetry loop) then sit inside the window or outside it, never
# across its edges.
QUIET_S = "quiet_s"
# Optional on a target: `generator_figures() -> dict[str, Any]`, what it measured of the load
# generator itself once the load finished (`k6_cpu_s`, `machine_cores`, `vus_max`, `source`).
GENERATOR_FIGURES = "generator_figures"
# Optional on a target: `poll_interval() -> float`, how soon to poll again (default 1 s).
POLL_INTERVAL = "poll_interval"
# Optional on a target: `load_window() -> LoadWindow | None`, the load from k6's first request
# to its last, with every process's CPU read at both edges (a target that sees its processes).
LOAD_WINDOW = "load_window"
# Optional on a target: `cpu_reading() -> CpuReading`, every process's CPU now.
CPU_READING = "cpu_reading"
# Optional on a target: `resource_figures() -> ResourceFigures | None`, what the stack's
# enforced resource limits and backend faults did over the run (OOM kills, throttling, ...).
RESOURCE_FIGURES = "resource_figures"
# Optional on a target: `collector_series() -> dict[str, str]`, label matchers of the
# collector's own series in its Prometheus when it holds other copies of them (a local stack
# carrying metrics: the collector also remote-writes its own metrics there).
COLLECTOR_SERIES = "collector_series"
# Optional on a target: `standin_series() -> tuple[dict[str, str], str]`, label matchers of the
# traces backend stand-in's own series and what they pick, for the result's source, where they
# are not the local stack's (job traces-standin): on Juju, its application.
STANDIN_SERIES = "standin_series"


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


def quiet_seconds(target: Target) -> float:
    return float(getattr(target, QUIET_S, 0.0) or 0.0)


def service_states(target: Target) -> dict[str, dict[str, Any]]:
    """Each service's state as the target's supervisor sees it (empty: no supervisor)."""
    answer = getattr(target, SERVICE_STATES, None)
    answer = answer() if callable(answer) else None
    if not isinstance(answer, dict):
        return {}
    return {str(k): dict(v) for k, v in answer.items() if isinstance(v, dict)}  # pyright: ignore[reportUnknownArgumentType]


def poll_interval(target: Target) -> float:
    ask = getattr(target, POLL_INTERVAL, None)
    answer = ask() if callable(ask) else None
    return float(answer) if isinstance(answer, int | float) and answer > 0 else 1.0


def load_window(target: Target) -> LoadWindow | None:
    ask = getattr(target, LOAD_WINDOW, None)
    answer = ask() if callable(ask) else None
    return answer if isinstance(answer, LoadWindow) else None


def collector_series(target: Target) -> dict[str, str]:
    ask = getattr(target, COLLECTOR_SERIES, None)
    answer = ask() if callable(ask) else None
    if not isinstance(answer, dict):
        return {}
    return {str(k): str(v) for k, v in answer.items()}  # pyright: ignore[reportUnknownVariableType]


def standin_series(target: Target) -> tuple[dict[str, str], str] | None:
    ask = getattr(target, STANDIN_SERIES, None)
    answer = ask() if callable(ask) else None
    if not isinstance(answer, tuple) or len(answer) != 2:  # pyright: ignore[reportUnknownArgumentType]
        return None
    matchers, where = answer  # pyright: ignore[reportUnknownVariableType]
    return {str(k): str(v) for k, v in matchers.items()}, str(where)  # pyright: ignore[reportUnknownVariableType, reportUnknownMemberType]


def cpu_reading(target: Target) -> CpuReading | None:
    ask = getattr(target, CPU_READING, None)
    answer = ask() if callable(ask) else None
    return answer if isinstance(answer, CpuReading) else None


def generator_figures(target: Target, spec: RunSpec) -> dict[str, Any]:
    """`generator` of result.json: the VU ceiling the spec gave k6 and what the target measured
    of k6 itself (nothing on a target that cannot see its processes)."""
    out: dict[str, Any] = {"vus_limit": spec.max_vus if spec.offered_logs_per_minute else spec.vus}
    measure = getattr(target, GENERATOR_FIGURES, None)
    answer = measure() if callable(measure) else None
    if isinstance(answer, dict):
        out.update({str(k): v for k, v in answer.items()})  # pyright: ignore[reportUnknownVariableType]
    return out


def resource_figures(target: Target) -> ResourceFigures | None:
    """`resources` of result.json (None: the target has no limits or faults to report)."""
    measure = getattr(target, RESOURCE_FIGURES, None)
    answer = measure() if callable(measure) else None
    return answer if isinstance(answer, ResourceFigures) else None
