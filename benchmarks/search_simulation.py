"""The capacity search's rows of the simulation benchmark (issue 33): seeded, not a timed test.

    .venv/bin/python benchmarks/search_simulation.py [--searches N] [--seed S]

For the default plan (the saturate method, keep-up holds of 30 s, ±5 %), over N seeded searches
a row (default 10,000): how often the knee the search reports ("between X and Y with 90 %
confidence") holds the true knee, at 0, 3 and 6 % step noise and at the 7 % the plan allows
for, on the saturate tests' noisy pipelines (knees 60,000-280,000/min, a saturation step that
reads 0-15 % low and lower under heavy overload); how often the holds' bracket [C, F] alone
does (what `±5 %` claimed before); the share found within the budget; the median and 95th
percentile of load seconds a search; the median wall time estimated from the measured cost of
a step (load + 22 s a step); the interval's median half-width. The quiet rows are the default
collector on its own CPU of a quiet 2-core machine (knee 100,000-120,000/min): the load the
plan implies there. The juju rows are the Juju plan's (steps of minutes, holds judged by their
gates alone, as long as the queue takes to fill: the true knee is the knee plus what such a hold
absorbs), whose load has no goal. Goals: coverage >= 90 % on every row, median load <= 120 s.

The simulation is tests/unit/search_coverage.py (test_search_simulation runs it briefly).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# the simulation and its pipelines are the unit tests' (pytest's path: tests, tests/unit)
sys.path[:0] = [str(ROOT / "tests" / "unit"), str(ROOT / "tests")]

from search_coverage import (  # noqa: E402  # pyright: ignore[reportMissingImports]
    NOISY,
    QUIET,
    Row,
    simulate,
    table,
)

from loadgate.capacity.search.rule import SearchPlan, plan_from_settings  # noqa: E402
from loadgate.cli.search_juju import JUJU_PLAN  # noqa: E402

ROWS = ((NOISY, 0.0), (NOISY, 0.03), (NOISY, 0.06), (NOISY, 0.07), (QUIET, 0.0), (QUIET, 0.03))
JUJU_ROWS = ((NOISY, 0.0), (NOISY, 0.03), (NOISY, 0.06))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="the capacity search's simulation benchmark")
    parser.add_argument("--searches", type=int, default=10_000, help="searches a row")
    parser.add_argument("--seed", type=int, default=0, help="the first search's seed")
    args = parser.parse_args(argv)
    plan = SearchPlan()
    print(
        f"capacity search, default plan ({plan.method}, keep-up holds of {plan.keep_up_s} s, "
        f"±{plan.precision:.0%}, budget {plan.budget_s} s): the knee between X and Y with "
        f"{plan.confidence:.0%} confidence at step noise up to {plan.step_noise:.0%}; "
        f"{args.searches:,} seeded searches a row (seeds {args.seed}-"
        f"{args.seed + args.searches - 1})"
    )
    started = time.monotonic()
    rows: list[Row] = []
    for machine, noise in ROWS:
        rows.append(simulate(plan, machine, noise, args.searches, args.seed))
    juju = plan_from_settings(JUJU_PLAN)
    for machine, noise in JUJU_ROWS:
        rows.append(simulate(juju, machine, noise, args.searches, args.seed, "juju", None, None))
    for line in table(rows):
        print(line)
    print(f"({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
