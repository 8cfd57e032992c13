"""The capacity search against seeded simulated pipelines, scored: how often the knee it reports
(between X and Y with its confidence) holds the true knee, how often its holds' bracket [C, F]
alone does, and the seconds of load each search cost.

benchmarks/search_simulation.py prints these rows with many searches; test_search_simulation
runs a few to check the machinery. The pipelines are the saturate method's tests'
(`test_capacity_saturate.QueuePipeline`): a knee moved per step by log-normal `noise`, a
saturation step that reads it low (more under heavy overload), holds that fail when the pipeline
falls behind (sends on less than 1 - p/2 of what it takes in). Such a hold at r passes when the
step's knee is at least (1 - p/2) r, so the true knee, where a hold passes half the time, is
knee / (1 - p/2).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from test_capacity_saturate import QueuePipeline, log_uniform, rng

from loadgate.capacity.search.rule import FOUND, SearchPlan, SearchResult, run_search

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


def true_knee(plan: SearchPlan, knee: float) -> float:
    """The rate a hold that must keep up passes half the time, on a pipeline of this knee."""
    if not plan.keep_up_s:
        raise ValueError("the true knee is simulated for holds that must keep up only")
    return knee / (1 - plan.precision / 2)


def one_search(
    plan: SearchPlan, machine: Machine, noise: float, seed: int
) -> tuple[float, SearchResult]:
    """(true knee, result) of a search on a pipeline drawn for `seed`."""
    r = rng(seed)
    knee = log_uniform(r, machine.knee_lo, machine.knee_hi)
    pipeline = QueuePipeline(
        knee,
        low=r.uniform(*machine.low),
        overload_cost=r.uniform(*machine.overload_cost),
        sat_noise=machine.sat_noise,
        noise=noise,
        keep_up=1 - plan.precision / 2,
        seed=seed,
    )
    return true_knee(plan, knee), run_search(plan, pipeline).result()


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
    """What `searches` seeded searches on a machine at a step noise gave."""

    machine: str
    noise: float
    searches: int
    covered: float  # share whose reported interval held the true knee
    bracket_covered: float  # share whose holds' bracket [C, F] held it
    found: float  # share that found a knee within the budget
    load_median: float
    load_p95: float
    wall_median: float  # estimated: load + STEP_OVERHEAD_S a step
    half_width: float  # median of the interval's (Y - X) / (Y + X)


def simulate(plan: SearchPlan, machine: Machine, noise: float, searches: int, seed: int = 0) -> Row:
    """`searches` searches with seeds seed, seed + 1, ..., scored."""
    covered = bracket = found = 0
    loads: list[int] = []
    walls: list[int] = []
    widths: list[float] = []
    for i in range(searches):
        knee, result = one_search(plan, machine, noise, seed + i)
        covered += reported_covers(result, knee)
        bracket += bracket_covers(result, knee)
        found += result.status == FOUND
        loads.append(result.load_s)
        walls.append(result.load_s + STEP_OVERHEAD_S * result.steps)
        low, high = result.knee_low_per_min, result.knee_high_per_min
        if low is not None and high is not None:
            widths.append((high - low) / (high + low))
    return Row(
        machine.name,
        noise,
        searches,
        covered / searches,
        bracket / searches,
        found / searches,
        statistics.median(loads),
        percentile(loads, 0.95),
        statistics.median(walls),
        statistics.median(widths) if widths else math.nan,
    )


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


HEADER = (
    "pipelines", "noise", f"covered (goal >= {GOAL_COVERAGE:.0%})", "[C, F] covered", "found",
    f"load s median/p95 (goal median <= {GOAL_LOAD_S})", "wall s est.", "interval +-",
)  # fmt: skip


def cells(row: Row) -> tuple[str, ...]:
    """A row of the benchmark's table, with each goal's PASS or MISS."""
    return (
        row.machine,
        f"{row.noise:.0%}",
        f"{row.covered:.1%} {verdict(row.covered >= GOAL_COVERAGE)}",
        f"{row.bracket_covered:.1%}",
        f"{row.found:.1%}",
        f"{row.load_median:.0f}/{row.load_p95:.0f} {verdict(row.load_median <= GOAL_LOAD_S)}",
        f"{row.wall_median:.0f}",
        f"{row.half_width:.1%}",
    )


def table(rows: list[Row]) -> list[str]:
    """The rows as aligned text lines, the header first."""
    body = [HEADER, *(cells(r) for r in rows)]
    widths = [max(len(line[i]) for line in body) for i in range(len(HEADER))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in body
    ]
