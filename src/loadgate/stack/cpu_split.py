"""The local stack's CPU split: the pipeline (the collector, Loki and the backends they write
to) on CPUs of its own, the load generator (k6) and the measuring side (Prometheus, Pebble,
the fault proxy) on the others, as pods on separate nodes or cores would be.

Unsplit, on a 2-core machine, a saturated pipeline's throughput followed the CPU the kernel
happened to leave Loki while k6 competed for the same cores (run-to-run spread 6.4 %, pooled
over seven A/A comparisons of rev221); split, the same saturation runs spread 2.5 %
(docs/measurements.md). A revision changes the pipeline's own cost, which the split measures
without k6's share of the CPU in the way.

`LOADGATE_CPU_SPLIT` chooses: `auto` (the default: split when this process may use at least
two CPUs; the generator side takes a quarter of them, at least one) or `off` (everything
everywhere, as before 2026-11-26). The split is applied by `cgexec.py --cpus` in front of
each pipeline service's command, the Pebble daemon and k6 start on the generator side, and
it is recorded in stack.json and in every result's `environment.cpu_split`: figures of
split and unsplit stacks are not comparable.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from . import cgexec, fault_service

ENV = "LOADGATE_CPU_SPLIT"
_AUTO = "auto"
_OFF = "off"
_SETTINGS = (_AUTO, _OFF)
# Services that stay with the generator: they measure or stand for the network.
_GENERATOR_SIDE = frozenset({"prometheus", fault_service.SERVICE})


class SplitError(ValueError):
    """A bad LOADGATE_CPU_SPLIT (names the variable and the allowed values)."""


@dataclass(frozen=True)
class CpuSplit:
    """CPU numbers of each side."""

    generator: tuple[int, ...]
    pipeline: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        """As stack.json and each result's `environment.cpu_split` hold it (`text` for people;
        `from_dict` reads the CPU lists only)."""
        return {
            "generator": list(self.generator),
            "pipeline": list(self.pipeline),
            "text": self.describe(),
        }

    @classmethod
    def from_dict(cls, data: Any) -> CpuSplit | None:
        if not isinstance(data, Mapping):
            return None
        sides: list[tuple[int, ...]] = []
        for key in ("generator", "pipeline"):
            value: Any = data.get(key)  # pyright: ignore[reportUnknownMemberType]
            if not isinstance(value, list) or not value:
                return None
            sides.append(tuple(int(n) for n in value))  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
        return cls(sides[0], sides[1])

    def describe(self) -> str:
        return (
            f"the collector and Loki on CPU {_cpus(self.pipeline)}; "
            f"k6, Prometheus and Pebble on CPU {_cpus(self.generator)}"
        )


def _cpus(cpus: Collection[int]) -> str:
    return ",".join(str(n) for n in sorted(cpus))


def choose(setting: str, usable: Collection[int]) -> CpuSplit | None:
    """The split for a setting and the CPUs this process may use (None: no split)."""
    if setting not in _SETTINGS:
        raise SplitError(f"{ENV}: must be one of {', '.join(_SETTINGS)}; got {setting!r}")
    cpus = sorted(usable)
    if setting == _OFF or len(cpus) < 2:
        return None
    generator = max(1, len(cpus) // 4)
    return CpuSplit(tuple(cpus[:generator]), tuple(cpus[generator:]))


def from_environment(environ: Mapping[str, str] | None = None) -> CpuSplit | None:
    """The split LOADGATE_CPU_SPLIT asks for on this machine (raises SplitError)."""
    setting = (os.environ if environ is None else environ).get(ENV, _AUTO).strip() or _AUTO
    return choose(setting, os.sched_getaffinity(0))


def place(services: dict[str, dict[str, Any]], split: CpuSplit | None) -> None:
    """Rewrite each pipeline service's Pebble command (in place) to run on the pipeline's
    CPUs through `cgexec.py`; a command it already wraps (the charms' limits) keeps its
    groups in the same wrapper."""
    if split is None:
        return
    for name, service in services.items():
        if name in _GENERATOR_SIDE:
            continue
        groups, _, command = cgexec.unwrap(shlex.split(service["command"]))
        service["command"] = shlex.join([*cgexec.prefix(groups, split.pipeline), *command])
