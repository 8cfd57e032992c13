"""The resource limits a charm's `cpu` and `memory` options give its workload container, as
Kubernetes would enforce them, and the cgroup settings that enforce the same here. Pure.

The otelcol and Loki charms patch their pod with `adjust_resource_requirements(limits,
requests, adhere_to_requests=True)` (observability_libs' kubernetes_compute_resources_patch):
the options are the limits, the charm's own requests (`0.25` CPU, `200Mi` at the pinned
revisions) are a floor (a limit below its request is raised to it), an empty option is no limit
and a fractional byte count is rounded up. The requests are read from the charm's own
`src/charm.py` (`charm_requests`); when they cannot be read the limits are taken as given, and
said so.

Kubelet then writes the limits into the container's cgroup: memory in bytes (`memory.max`,
v1 `memory.limit_in_bytes`), CPU as a CFS quota of milli-cores x 100 ms / 1000 per 100 ms
period (at least 1 ms; `cpu.max`, v1 `cpu.cfs_quota_us` and `cpu.cfs_period_us`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from . import quantity

_RESOURCES = ("cpu", "memory")
_CFS_PERIOD_US = 100_000  # kubelet's CPU CFS quota period
_MIN_QUOTA_US = 1_000  # kubelet's smallest quota
_REQUESTS = re.compile(
    r"requests\s*=\s*\{\s*[\"']cpu[\"']\s*:\s*[\"'](?P<cpu>[^\"']+)[\"']\s*,\s*"
    r"[\"']memory[\"']\s*:\s*[\"'](?P<memory>[^\"']+)[\"']\s*\}"
)


class LimitError(ValueError):
    """A `cpu` or `memory` option that is no quantity; names the flag, option and forms."""


@dataclass(frozen=True)
class Requests:
    """The requests a charm gives its container (the floor of its limits)."""

    cpu: str
    memory: str


def charm_requests(charm_py: str) -> Requests | None:
    """The requests in a charm's `_resource_reqs_from_config` (`requests = {"cpu": "0.25",
    "memory": "200Mi"}` with `adhere_to_requests=True`); None when the code says otherwise."""
    m = _REQUESTS.search(charm_py)
    if m is None or "adhere_to_requests=True" not in charm_py:
        return None
    try:
        quantity.parse(m["cpu"])
        quantity.parse(m["memory"])
    except quantity.QuantityError:
        return None
    return Requests(m["cpu"], m["memory"])


@dataclass(frozen=True)
class Limits:
    """One charm's container limits: as asked (the options) and as Kubernetes enforces them."""

    cpu: str | None = None  # the option as given (None or "": no limit)
    memory: str | None = None
    cpu_millis: int | None = None  # the enforced limit (None: none)
    memory_bytes: int | None = None
    notes: list[str] = field(default_factory=list[str])  # what the charm's floor changed

    @property
    def any(self) -> bool:
        return self.cpu_millis is not None or self.memory_bytes is not None

    def describe(self) -> str:
        """`memory 200Mi, cpu 250m` (the enforced values)."""
        parts: list[str] = []
        if self.memory_bytes is not None:
            parts.append(f"memory {quantity.show_bytes(self.memory_bytes)}")
        if self.cpu_millis is not None:
            parts.append(f"cpu {quantity.show_millicores(self.cpu_millis)}")
        return ", ".join(parts) or "none"

    def to_dict(self) -> dict[str, Any]:
        return {
            "cpu": self.cpu,
            "memory": self.memory,
            "cpu_millis": self.cpu_millis,
            "memory_bytes": self.memory_bytes,
            "notes": list(self.notes),
        }


def _value(options: Mapping[str, Any], name: str, flag: str) -> Decimal | None:
    raw = options.get(name)
    if raw is None or raw == "":
        return None  # the charm drops an empty limit: no limit
    forms = quantity.CPU_FORMS if name == "cpu" else quantity.MEMORY_FORMS
    try:
        value = quantity.parse(str(raw))
    except quantity.QuantityError:
        raise LimitError(f"{flag}: {name}: must be {forms}; got {raw!r}") from None
    if value < 0:
        raise LimitError(f"{flag}: {name}: must not be negative ({forms}); got {raw!r}")
    return value


def check(options: Mapping[str, Any], flag: str) -> None:
    """Refuse a `cpu` or `memory` option that is no Kubernetes quantity (LimitError)."""
    for name in _RESOURCES:
        _value(options, name, flag)


def from_options(options: Mapping[str, Any], flag: str, requests: Requests | None) -> Limits:
    """The limits the charm's options give, raised to the charm's requests as the charm does
    (`requests` None: taken as given, with a note)."""
    cpu, memory = _value(options, "cpu", flag), _value(options, "memory", flag)
    notes: list[str] = []
    if requests is not None:
        cpu = _floor(cpu, requests.cpu, "cpu", notes)
        memory = _floor(memory, requests.memory, "memory", notes)
    elif cpu is not None or memory is not None:
        notes.append(
            "the charm's requests could not be read from its src/charm.py: the limits are "
            "enforced as given (Kubernetes would raise a limit below the request to it)"
        )
    return Limits(
        cpu=_text(options.get("cpu")),
        memory=_text(options.get("memory")),
        cpu_millis=quantity.millicores(cpu) if cpu is not None else None,
        memory_bytes=quantity.whole_bytes(memory) if memory is not None else None,
        notes=notes,
    )


def _text(raw: Any) -> str | None:
    return None if raw is None else str(raw)


def _floor(value: Decimal | None, request: str, name: str, notes: list[str]) -> Decimal | None:
    if value is None:
        return None
    floor = quantity.parse(request)
    if value < floor:
        notes.append(
            f"{name}: the limit is raised to the charm's request {request}, as the charm's "
            "adjust_resource_requirements(adhere_to_requests=True) does before patching its pod"
        )
        return floor
    return value


def _cpu_quota_us(millis: int, period_us: int = _CFS_PERIOD_US) -> int:
    """Kubelet's CFS quota for a CPU limit (MilliCPUToQuota): at least 1 ms a period."""
    return max(millis * period_us // 1000, _MIN_QUOTA_US)


def v1_settings(limits: Limits) -> dict[str, dict[str, str]]:
    """cgroup v1 files to write, per controller (memory before memory+swap: swap stays 0)."""
    out: dict[str, dict[str, str]] = {}
    if limits.memory_bytes is not None:
        size = str(limits.memory_bytes)
        out["memory"] = {"memory.limit_in_bytes": size, "memory.memsw.limit_in_bytes": size}
    if limits.cpu_millis is not None:
        out["cpu"] = {
            "cpu.cfs_period_us": str(_CFS_PERIOD_US),
            "cpu.cfs_quota_us": str(_cpu_quota_us(limits.cpu_millis)),
        }
    return out


def v2_settings(limits: Limits) -> dict[str, dict[str, str]]:
    """cgroup v2 files to write, per controller (no swap, as kubelet without swap)."""
    out: dict[str, dict[str, str]] = {}
    if limits.memory_bytes is not None:
        out["memory"] = {"memory.max": str(limits.memory_bytes), "memory.swap.max": "0"}
    if limits.cpu_millis is not None:
        out["cpu"] = {"cpu.max": f"{_cpu_quota_us(limits.cpu_millis)} {_CFS_PERIOD_US}"}
    return out


# Files a group may lack (no swap accounting): skipped when absent, never an error.
OPTIONAL_FILES = ("memory.memsw.limit_in_bytes", "memory.swap.max")
