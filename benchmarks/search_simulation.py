"""The capacity search's rows of the simulation benchmark (issue 33): seeded, not a timed test.

    .venv/bin/python benchmarks/search_simulation.py [--searches N] [--seed S]

For the default plan (the saturate method, keep-up holds of 30 s, ±5 %), over N seeded searches
a row (default 10,000): how often the knee the search reports ("between X and Y with 90 %
confidence") holds the true knee, at 0, 3, 5, 7 and 10 % step noise, on the saturate tests'
noisy pipelines (knees 60,000-280,000/min, a saturation step that reads 0-15 % low and lower
under heavy overload), with the step noise the plan states (10 %: nothing measured) and, in the
"measured" rows, given the pipeline's own as measured (`SearchPlan.measured_step_noise`, as
`loadgate calibrate` or repeated searches would give it); how often the holds' bracket [C, F] alone
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
    given_noise,
    simulate,
    table,
)

from loadgate.capacity.search.rule import SearchPlan, plan_from_settings  # noqa: E402
from loadgate.cli.search_juju import JUJU_PLAN  # noqa: E402

NOISES = (0.0, 0.03, 0.05, 0.07, 0.10)
ROWS = (*((NOISY, n) for n in NOISES), (QUIET, 0.0), (QUIET, 0.03))
MEASURED_ROWS = tuple((NOISY, n) for n in NOISES[1:])
JUJU_ROWS = ((NOISY, 0.0), (NOISY, 0.03), (NOISY, 0.10))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="the capacity search's simulation benchmark")
    parser.add_argument("--searches", type=int, default=10_000, help="searches a row")
    parser.add_argument("--seed", type=int, default=0, help="the first search's seed")
    args = parser.parse_args(argv)
    plan = SearchPlan()
    print(
        f"capacity search, default plan ({plan.method}, keep-up holds of {plan.keep_up_s} s, "
        f"±{plan.precision:.0%}, budget {plan.budget_s} s): the knee between X and Y with "
        f"{plan.confidence:.0%} confidence at the step noise measured, else up to the "
        f"{plan.step_noise:.0%} stated; "
        f"{args.searches:,} seeded searches a row (seeds {args.seed}-"
        f"{args.seed + args.searches - 1})"
    )
    started = time.monotonic()
    rows: list[Row] = []
    for machine, noise in ROWS:
        rows.append(simulate(plan, machine, noise, args.searches, args.seed))
    for machine, noise in MEASURED_ROWS:
        measured = given_noise(plan, noise)
        rows.append(simulate(measured, machine, noise, args.searches, args.seed, "measured"))
    juju = plan_from_settings(JUJU_PLAN)
    for machine, noise in JUJU_ROWS:
        rows.append(simulate(juju, machine, noise, args.searches, args.seed, "juju", None, None))
    for line in table(rows):
        print(line)
    print(f"({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
