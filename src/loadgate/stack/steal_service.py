"""The CPU steal as a service of the local stack (`--hand cpu-steal=N`): a known regression on
demand of the machine, not of the collector. A worker (cpu_steal.py) on the pipeline's CPUs,
in a control group whose CFS quota is N % of those CPUs, spins while a run of its stack loads:
the collector and Loki have N % less CPU, their CPU per record is unchanged, and the kernel
holds the share (the worker is throttled at its quota; `resources.services.cpu-steal` of each
run says in how many periods).

Pure: `limits` (the group's quota), `pebble_service`, `arm_text`. `arm` and `disarm` write the
file the worker reads (each run's load start, the run's end).
"""

from __future__ import annotations

import sys
from collections.abc import Collection
from pathlib import Path
from typing import Any

from . import cpu_steal, pebble_plan
from .hand import HandError
from .layout import Layout
from .limits import Limits

SERVICE = "cpu-steal"
# After the load's planned end the worker keeps on this long at most (k6's start-up, the
# load's last second): it stops by itself, and the run's end disarms it sooner.
_ARM_MARGIN_S = 5.0
_ONE_WORKER_MILLIS = 1000  # one worker spins on one CPU at most


def limits(share_pct: int, pipeline_cpus: Collection[int]) -> Limits:
    """The worker's group: `share_pct` % of the pipeline's CPUs as a CPU limit. Raises
    HandError when that is more than the one CPU its single worker can use."""
    cpus = max(1, len(pipeline_cpus))
    millis = share_pct * 10 * cpus
    if millis > _ONE_WORKER_MILLIS:
        most = _ONE_WORKER_MILLIS // (10 * cpus)
        raise HandError(
            f"cpu-steal: {share_pct} % of the pipeline's {cpus} CPUs is {millis}m, more than "
            f"the one CPU its worker can use; at most {most} here"
        )
    return Limits(cpu=f"{millis}m", cpu_millis=millis)


# The worker's group outweighs the pipeline's threads (the kernel's default weight is 1024 a
# group or thread in v1, 100 in v2), so its quota, not its fair share, is what it gets.
WEIGHT_FILES = {1: ("cpu.shares", "262144"), 2: ("cpu.weight", "10000")}


def weigh(group_path: str, version: int) -> None:
    """Give the worker's group the most weight (OSError when the kernel refuses it)."""
    name, value = WEIGHT_FILES[version]
    (Path(group_path) / name).write_text(value)


def arm_file(layout: Layout) -> Path:
    return layout.config / "cpu-steal.until"


def pebble_service(layout: Layout) -> dict[str, Any]:
    """The worker under Pebble: this Python, the script by path (no loadgate import)."""
    argv = [sys.executable, "-I", str(Path(cpu_steal.__file__).resolve()), str(arm_file(layout))]
    summary = "CPU steal: spins on the pipeline's CPUs at its quota while a run loads"
    return pebble_plan.service(summary, argv, layout.root)


def arm_text(now: float, load_s: float) -> str:
    """What arms the worker for a load of `load_s` starting `now` (epoch seconds)."""
    return f"{now + load_s + _ARM_MARGIN_S:.3f}\n"


def arm(layout: Layout, now: float, load_s: float) -> None:
    arm_file(layout).write_text(arm_text(now, load_s))


def disarm(layout: Layout) -> None:
    arm_file(layout).write_text("0\n")
