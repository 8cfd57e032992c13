"""The capacity search against seeded simulated pipelines, scored: how often the knee it reports
(between X and Y with its confidence) holds the true knee, how often its holds' bracket [C, F]
alone does, and the seconds of load each search cost.

benchmarks/search_simulation.py prints these rows with many searches; test_search_simulation
runs a few to check the machinery. The pipelines are the search tests' simulated pipeline
(`support.fakes.pipeline.SimulatedPipeline`): a knee moved per step by log-normal `noise`, a
saturation step that reads it low (more under heavy overload), a sending queue that fills at
the excess over the step's knee. The true knee is where a hold passes half the time: for holds
that must keep up (fail when the pipeline sends on less than 1 - p/2 of what it takes in: the
default plan) knee / (1 - p/2); for holds judged by their gates alone (the Juju plan) the knee
plus the excess a hold of that length absorbs before refusing past the 1 % error gate.
A row's plan states its step noise (`SearchPlan.step_noise`, 10 % by default), or is given the
pipeline's own as measured (`given_noise`: `SearchPlan.measured_step_noise`, as calibrate or
repeated searches would measure it).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace

from support.fakes.pipeline import QUEUE, SimulatedPipeline, log_uniform, rng
from test_capacity_saturate import seen_excess

from loadgate.capacity.search.rule import FOUND, HOLD, SearchPlan, SearchResult, run_search

__all__ = [
    "GOAL_COVERAGE", "GOAL_LOAD_S", "HEADER", "NOISY", "QUIET", "STEP_OVERHEAD_S", "Machine",
    "Row", "SimulatedPipeline", "bracket_covers", "cells", "given_noise", "one_search",
    "percentile", "reported_covers", "seen_excess", "simulate", "table", "true_knee", "verdict",
]  # fmt: skip

# The benchmark's goals: the reported interval holds the true knee in at least this share of
# searches, on every row; a search's median load at most this (the quiet machine's budget).
GOAL_COVERAGE = 0.90
GOAL_LOAD_S = 120
# Seconds of wall each step costs beside its load on a quiet 2-core machine (settling, the quiet
# wait, drain, read-back): 30 s steps took 50-53 s of wall (docs/measurements.md, search k1),
# five searches of four 30 s steps 206-214 s.
STEP_OVERHEAD_S = 22


@dataclass(frozen=True)
class Machine:
    """The pipelines a row draws, one per search: a knee log-uniform in [knee_lo, knee_hi], a
    saturation step that reads it `low` times (uniform in the range), times
    (offered / knee) ** -overload_cost (uniform in its range), with `sat_noise` more."""

    name: str
    knee_lo: float
    knee_hi: float
    low: tuple[float, float]
    overload_cost: tuple[float, float]
    sat_noise: float


# The saturate tests' noisy pipelines: knees across the range, read up to 15 % low and more under
# heavy overload.
NOISY = Machine("noisy", 60_000, 280_000, (0.85, 1.0), (0.0, 0.2), 0.03)
# The default collector on its own CPU of a quiet 2-core machine (the saturate tests' "near this
# machine's split knee"): 100,000-120,000/min, a heavy step 5-15 % low, a milder one 0-10 % high.
QUIET = Machine("quiet", 100_000, 120_000, (0.95, 1.05), (0.1, 0.1), 0.0)


def given_noise(plan: SearchPlan, noise: float) -> SearchPlan:
    """`plan` given the pipeline's step noise as measured (`SearchPlan.measured_step_noise`)."""
    return replace(plan, measured_step_noise=noise)


def true_knee(plan: SearchPlan, knee: float, hold_s: int) -> float:
    """The rate a hold of `hold_s` passes half the time, on a pipeline of this knee (behind the
    default queue)."""
    if plan.keep_up_s:
        return knee / (1 - plan.precision / 2)
    return knee + seen_excess(knee, hold_s, QUEUE)


def one_search(
    plan: SearchPlan, machine: Machine, noise: float, seed: int
) -> tuple[float, SearchResult]:
    """(true knee, result) of a search on a pipeline drawn for `seed`; the true knee for the
    search's longest hold (a search's holds all last as long but where its saturation reading
    changes between them)."""
    r = rng(seed)
    knee = log_uniform(r, machine.knee_lo, machine.knee_hi)
    pipeline = SimulatedPipeline(
        knee,
        low=r.uniform(*machine.low),
        overload_cost=r.uniform(*machine.overload_cost),
        sat_noise=machine.sat_noise,
        noise=noise,
        keep_up=1 - plan.precision / 2 if plan.keep_up_s else None,
        seed=seed,
    )
    result = run_search(plan, pipeline).result()
    hold = max((s.duration_s for s in pipeline.offered if s.phase == HOLD), default=plan.hold_s)
    return true_knee(plan, knee, hold), result


def reported_covers(result: SearchResult, knee: float) -> bool:
    """The search found a knee and its interval (X..Y with its confidence) holds `knee`."""
    low, high = result.knee_low_per_min, result.knee_high_per_min
    return result.status == FOUND and low is not None and high is not None and low <= knee <= high


def bracket_covers(result: SearchResult, knee: float) -> bool:
    """The search found a knee and its holds' bracket [C, F] holds `knee`."""
    c, f = result.capacity_per_min, result.lowest_failing_per_min
    return result.status == FOUND and c is not None and f is not None and c <= knee <= f


def percentile(values: list[int], share: float) -> float:
    """The `share` quantile of `values` (nearest rank)."""
    ordered = sorted(values)
    return float(ordered[max(0, math.ceil(share * len(ordered)) - 1)])


@dataclass(frozen=True)
class Row:
    """What `searches` seeded searches of a plan on a machine at a step noise gave."""

    plan: str
    machine: str
    noise: float
    searches: int
    covered: float  # share whose reported interval held the true knee
    bracket_covered: float  # share whose holds' bracket [C, F] held it
    found: float  # share that found a knee within the budget
    load_median: float
    load_p95: float
    wall_median: float | None  # estimated: load + the overhead a step (the local stack's)
    half_width: float  # median of the interval's (Y - X) / (Y + X)
    load_goal: float | None = GOAL_LOAD_S  # the median load's goal, if any


def simulate(
    plan: SearchPlan,
    machine: Machine,
    noise: float,
    searches: int,
    seed: int = 0,
    name: str = "default",
    load_goal: float | None = GOAL_LOAD_S,
    overhead_s: float | None = STEP_OVERHEAD_S,
) -> Row:
    """`searches` searches of `plan` (called `name`) with seeds seed, seed + 1, ..., scored;
    the wall time estimated with `overhead_s` a step (None: not estimated)."""
    covered = bracket = found = 0
    loads: list[int] = []
    walls: list[float] = []
    widths: list[float] = []
    for i in range(searches):
        knee, result = one_search(plan, machine, noise, seed + i)
        covered += reported_covers(result, knee)
        bracket += bracket_covers(result, knee)
        found += result.status == FOUND
        loads.append(result.load_s)
        walls.append(result.load_s + (overhead_s or 0) * result.steps)
        low, high = result.knee_low_per_min, result.knee_high_per_min
        if low is not None and high is not None:
            widths.append((high - low) / (high + low))
    return Row(
        name,
        machine.name,
        noise,
        searches,
        covered / searches,
        bracket / searches,
        found / searches,
        statistics.median(loads),
        percentile(loads, 0.95),
        statistics.median(walls) if overhead_s is not None else None,
        statistics.median(widths) if widths else math.nan,
        load_goal,
    )


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


HEADER = (
    "plan", "pipelines", "noise", f"covered (goal >= {GOAL_COVERAGE:.0%})", "[C, F] covered",
    "found", f"load s median/p95 (goal median <= {GOAL_LOAD_S})", "wall s est.", "interval +-",
)  # fmt: skip


def cells(row: Row) -> tuple[str, ...]:
    """A row of the benchmark's table, with each goal's PASS or MISS."""
    load = f"{row.load_median:.0f}/{row.load_p95:.0f}"
    if row.load_goal is not None:
        load += f" {verdict(row.load_median <= row.load_goal)}"
    return (
        row.plan,
        row.machine,
        f"{row.noise:.0%}",
        f"{row.covered:.1%} {verdict(row.covered >= GOAL_COVERAGE)}",
        f"{row.bracket_covered:.1%}",
        f"{row.found:.1%}",
        load,
        "-" if row.wall_median is None else f"{row.wall_median:.0f}",
        f"{row.half_width:.1%}",
    )


def table(rows: list[Row]) -> list[str]:
    """The rows as aligned text lines, the header first."""
    body = [HEADER, *(cells(r) for r in rows)]
    widths = [max(len(line[i]) for line in body) for i in range(len(HEADER))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in body
    ]
