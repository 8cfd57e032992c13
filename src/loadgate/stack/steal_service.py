"""The CPU steal as a service of the local stack (`--hand cpu-steal=N`): a known regression on
demand of the machine, not of the collector. A worker (cpu_steal.py) on the pipeline's CPUs,
in a control group beside the stack's whose CFS quota is N % of those CPUs and whose weight
outranks every other, spins while a run of its stack loads:
the collector and Loki have N % less CPU, their CPU per record is unchanged, and the kernel
holds the share (the worker is throttled at its quota; `resources.services.cpu-steal` of each
run says in how many periods).

Pure: `limits` (the share as a CPU limit, for the record), `settings` (its group's files),
`pebble_service`, `arm_text`. `place` makes its group; `arm` and `disarm` write the file the
worker reads (each run's load start, the run's end).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from . import cgroups, cpu_steal, pebble_plan
from .hand import HandError
from .info import StackError
from .layout import Layout
from .limits import Limits

SERVICE = cpu_steal.SERVICE
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


# The worker's group competes beside the stack's group, not inside it, and outweighs every
# thread there (the kernel's default weight is 1024 a group or thread in v1, 100 in v2): its
# quota, not its fair share, is what it gets. Measured 2026-11-29: inside the stack's group, at
# the default weight, it took 0.04 s of a 30-s saturation run (0.1 %), beside it and outweighing
# the rest, 3.0 s (10 %).
_WEIGHT = {1: ("cpu.shares", "262144"), 2: ("cpu.weight", "10000")}
# Its CFS period: short, so the pipeline loses a little often rather than a long stall every
# 100 ms, and long enough that the quota is at least the kernel's 1 ms.
_PERIOD_US = 10_000
_MIN_QUOTA_US = 1_000
_MAX_PERIOD_US = 1_000_000


def period_quota_us(share_pct: int, pipeline_cpus: Collection[int]) -> tuple[int, int]:
    """The worker's CFS period and quota (microseconds): `share_pct` % of the CPUs."""
    cores = share_pct * max(1, len(pipeline_cpus)) / 100
    period = min(_MAX_PERIOD_US, max(_PERIOD_US, math.ceil(_MIN_QUOTA_US / cores)))
    return period, round(cores * period)


def settings(share_pct: int, pipeline_cpus: Collection[int], version: int) -> dict[str, str]:
    """The files of the worker's group, in the order they are written (cgroup v1 or v2)."""
    period, quota = period_quota_us(share_pct, pipeline_cpus)
    weight_file, weight = _WEIGHT[version]
    if version == 1:
        return {weight_file: weight, "cpu.cfs_period_us": str(period),
                "cpu.cfs_quota_us": str(quota)}  # fmt: skip
    return {weight_file: weight, "cpu.max": f"{quota} {period}"}


def place(
    root: Path,
    share_pct: int,
    pipeline_cpus: Collection[int],
    hierarchies: Mapping[str, cgroups.Hierarchy] | None = None,
) -> cgroups.StackGroups:
    """The worker's group, made beside the stack's and written (`cgroups.enter(also=...)`
    records it with the stack's). Raises StackError, with nothing left made, when the kernel
    cannot hold the share: a worker without its quota would take whole CPUs; HandError, with
    nothing made, when the share is more than its one worker's CPU (`limits`)."""
    wanted = limits(share_pct, pipeline_cpus)
    found = cgroups.this_process() if hierarchies is None else dict(hierarchies)
    h = found.get("cpu")
    why = "no cgroup hierarchy with the cpu controller"
    made: list[str] = []
    if h is not None:
        try:
            folder = cgroups.group_beside(
                h, root, SERVICE, settings(share_pct, pipeline_cpus, h.version), made
            )
        except OSError as exc:
            why = cgroups.why_unwritten(exc, h)
            cgroups.remove(made)
        else:
            group = cgroups.Group("cpu", h.version, str(folder))
            placement = cgroups.Placement(SERVICE, wanted, [group])
            return cgroups.StackGroups({SERVICE: placement}, made)
    raise StackError(f"--hand cpu-steal={share_pct}: its CPU quota cannot be enforced: {why}")


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
