"""The figures of `resources` of result.json: what the stack's enforced limits did to each
limited charm container over the run (OOM kills, restarts, peak memory against the limit, CPU
throttling), and what the backend fault proxy did to the collector's pushes. A figure that
could not be read is None (unknown), never 0. Absent from runs without limits and faults.

Measured by stack/resource_use.py (the kernel's counters, Pebble's log, the proxy's counts)
and go_runtime.py; records/result.py writes and reads them."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from loadgate.contract import typed as f


@dataclass(frozen=True)
class Exit:
    """A service exit its supervisor saw during the run (Pebble: `stopped unexpectedly`)."""

    service: str
    code: int  # 128 + N for a signal N: 137 is SIGKILL (the OOM killer's)
    at: float

    def to_dict(self) -> dict[str, Any]:
        return {"service": self.service, "code": self.code, "at": self.at}


@dataclass(frozen=True)
class ServiceResources:
    """One charm container's limits and what they did over the run."""

    cgroup: str  # "v1", "v2", "v1+v2" or "none" (nothing enforced)
    memory_limit: str | None  # the charm option as given
    memory_limit_bytes: int | None  # enforced (None: no limit, or not enforced)
    cpu_limit: str | None
    cpu_limit_millis: int | None
    not_enforced: dict[str, str] = field(default_factory=dict[str, str])  # resource -> why
    oom_kills: int | None = None
    memory_failcnt: int | None = None  # v1: times usage hit the limit (reclaim), not kills
    memory_peak_bytes: int | None = None
    memory_peak_source: str = ""
    cpu_periods: int | None = None
    cpu_throttled_periods: int | None = None
    cpu_throttled_s: float | None = None
    restarts: int | None = None  # starts after an exit during the run (Pebble's log)
    exits: list[Exit] = field(default_factory=list[Exit])
    notes: list[str] = field(default_factory=list[str])
    source: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "cgroup": self.cgroup,
            "memory_limit": self.memory_limit,
            "memory_limit_bytes": self.memory_limit_bytes,
            "cpu_limit": self.cpu_limit,
            "cpu_limit_millis": self.cpu_limit_millis,
            "not_enforced": dict(self.not_enforced),
            "oom_kills": self.oom_kills,
            "memory_failcnt": self.memory_failcnt,
            "memory_peak_bytes": self.memory_peak_bytes,
            "memory_peak_source": self.memory_peak_source,
            "cpu_periods": self.cpu_periods,
            "cpu_throttled_periods": self.cpu_throttled_periods,
            "cpu_throttled_s": f.real(self.cpu_throttled_s),
            "restarts": self.restarts,
            "exits": [e.to_dict() for e in self.exits],
            "notes": list(self.notes),
            "source": self.source,
        }


@dataclass(frozen=True)
class BackendFaultCounts:
    """What the fault proxy between the collector and Loki did over the run."""

    spec: str  # the --backend-fault value
    requests: int | None
    passed: int | None  # forwarded to Loki, Loki's answer returned
    failed: int | None  # answered by the proxy with an injected status (outage included)
    outage: int | None  # of `failed`, inside the outage window
    delayed: int | None  # forwarded after an added delay
    upstream_errors: int | None  # Loki could not be reached: answered 502
    source: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "requests": self.requests,
            "passed": self.passed,
            "failed": self.failed,
            "outage": self.outage,
            "delayed": self.delayed,
            "upstream_errors": self.upstream_errors,
            "source": self.source,
        }


_REALS = (
    "gc_per_minute", "heap_live_max_mib", "heap_goal_max_mib", "heap_alloc_max_mib",
    "heap_alloc_mean_mib", "sys_max_mib", "window_s",
)  # fmt: skip


@dataclass(frozen=True)
class GoRuntime:
    """The collector's Go runtime over the run (measure.go_runtime): garbage collections from
    its gctrace (None without `gc-trace=on`: unknown) and heap sizes from its own metrics."""

    gomemlimit: str | None  # GOMEMLIMIT as set by hand (None: the runtime's default)
    gc_trace: bool  # whether GODEBUG=gctrace=1 was on (the count needs it)
    gc_count: int | None
    gc_per_minute: float | None
    gc_forced: int | None
    gc_cpu_percent: int | None  # of the process's CPU in GC since it started, at the last GC
    heap_live_max_mib: float | None  # gctrace: the live heap after a collection, at most
    heap_goal_max_mib: float | None  # gctrace: the heap goal, at most
    heap_alloc_max_mib: float | None  # Prometheus: otelcol_process_runtime_heap_alloc_bytes
    heap_alloc_mean_mib: float | None
    sys_max_mib: float | None  # Prometheus: ..._total_sys_memory_bytes
    window_s: float
    problems: list[str] = field(default_factory=list[str])
    source: str = ""

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for key in _REALS:
            out[key] = f.real(out[key])
        return out


@dataclass(frozen=True)
class StandinCounts:
    """What the Loki stand-in (a second collector, `--hand exporter=standin`) received of the
    run: its receiver's accepted records less the collector's own, which it drops."""

    received: int | None  # the run's records (None: unknown)
    own_dropped: int | None  # the collector's own log records it dropped
    source: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ResourceFigures:
    """Per limited charm container (`otelcol`, `loki`), the backend fault proxy's counts, and
    on a stack with hand changes the collector's Go runtime and the Loki stand-in's counts."""

    services: dict[str, ServiceResources] = field(default_factory=dict[str, ServiceResources])
    backend_fault: BackendFaultCounts | None = None
    go_runtime: GoRuntime | None = None
    standin: StandinCounts | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "services": {k: v.to_dict() for k, v in self.services.items()},
            "backend_fault": self.backend_fault.to_dict() if self.backend_fault else None,
        }
        if self.go_runtime is not None:  # records before issue 20 have neither
            out["go_runtime"] = self.go_runtime.to_dict()
        if self.standin is not None:
            out["standin"] = self.standin.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: object, where: str = "resources") -> ResourceFigures:
        return f.read(cls, data, where)
