"""The default `loadgate compare` plan, simulated: how often it says regression (or worse) when
nothing changed, and how often it finds a real worsening. Seeded, not timed.

    .venv/bin/python benchmarks/compare_simulation.py [--comparisons 10000] [--seed 33] [--jobs 1]

Every comparison is the real rule and the real sequential procedure, driven pair by pair as the
driver drives them (tests/support/compare_simulation.py): the default metrics with the default
margins (the shipped margins file, data/margins.yaml), the default plan (2-5 pairs, a 15-minute
budget, pairs of 3.5-3.7 minutes: 4 pairs fit), values drawn at the spreads that file states.

Rows:
- A/A (both sides the same): at the documented spreads, at twice them, with heavy-tailed noise
  (Student's t, 3 df, scaled to the spread), and with a drift shared within pairs (both runs of
  a pair moved by the same random factor, its standard deviation the spread). Goal: regression
  at most 5 %, and regression or worse (any lower bound above 0) at most 5 %.
- Power: one metric truly worse by 1x and 2x its margin (relative: 2x a 20 % margin is 40 %
  worse), the others unchanged, at the documented spreads. Goal at 2x: regression at least 80 %.
- For comparison, the margins before issue 33 (10 %, 60 %, 10 %) under today's rule: why the
  shipped margins are wider (printed, not judged).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.compare_simulation import T3, Row, Tally, simulate  # noqa: E402

from loadgate.capacity.compare import margins_file, rule, values  # noqa: E402
from loadgate.capacity.compare import sequential as seq  # noqa: E402
from loadgate.capacity.compare.rule import Metric  # noqa: E402

PREVIOUS_MARGINS = {"saturation": 0.10, "pressure-p99": 0.60, "pressure-cpu": 0.10}
FALSE_GOAL = 0.05
POWER_GOAL = 0.80


@dataclass(frozen=True)
class Case:
    """A row to simulate, with its metrics and what it is judged on."""

    row: Row
    metrics: tuple[Metric, ...]
    kind: str  # "a/a", "power" (judged at 2x), "power-1x" or "info"


def default_metrics() -> tuple[Metric, ...]:
    parsed = values.parse_metrics(",".join(values.DEFAULT_METRICS))
    return margins_file.apply(parsed, margins_file.shipped())


def documented_spreads() -> dict[str, float]:
    shipped = margins_file.shipped()
    out: dict[str, float] = {}
    for key, entry in shipped.metrics.items():
        if entry.spread is None:
            raise SystemExit(f"the margins file states no spread for {key}")
        out[values.METRIC_KEYS[key].name] = entry.spread
    return out


def cases() -> list[Case]:
    metrics = default_metrics()
    spreads = documented_spreads()
    twice = {k: 2 * v for k, v in spreads.items()}
    out = [
        Case(Row("A/A, documented spreads", spreads), metrics, "a/a"),
        Case(Row("A/A, 2x the spreads", twice), metrics, "a/a"),
        Case(Row("A/A, t(3 df) noise", spreads, noise=T3), metrics, "a/a"),
        Case(Row("A/A, t(3 df) noise, 2x", twice, noise=T3), metrics, "a/a"),
        Case(Row("A/A, drift shared in pairs", spreads, drift=1.0), metrics, "a/a"),
        Case(Row("A/A, drift shared, 2x", twice, drift=1.0), metrics, "a/a"),
    ]
    for m in metrics:
        key = values.key_of(m.name)
        for times in (1, 2):
            name = f"{key} worse by {times}x margin (+{times * m.margin:.0%})"
            row = Row(name, spreads, worse={m.name: times * m.margin})
            out.append(Case(row, metrics, "power" if times == 2 else "power-1x"))
    previous = tuple(
        replace(m, margin=PREVIOUS_MARGINS[values.key_of(m.name) or ""]) for m in metrics
    )
    out.append(Case(Row("previous margins: A/A", spreads), previous, "info"))
    for m in previous:
        key = values.key_of(m.name)
        name = f"previous margins: {key} 2x (+{2 * m.margin:.0%})"
        out.append(Case(Row(name, spreads, worse={m.name: 2 * m.margin}), previous, "info"))
    return out


def plan() -> seq.Plan:
    return seq.Plan(seq.DEFAULT_MIN_PAIRS, seq.DEFAULT_MAX_PAIRS, budget_s=seq.DEFAULT_BUDGET_S)


def run_case(case: Case, comparisons: int, seed: int) -> Tally:
    return simulate(case.metrics, plan(), case.row, comparisons, seed)


def judged(case: Case, tally: Tally) -> tuple[str, str]:
    """The goal of the row, and PASS or MISS (or - where none is set)."""
    regression = tally.share(rule.REGRESSION)
    shown = tally.share(rule.REGRESSION, rule.WORSE)
    if case.kind == "a/a":
        ok = regression <= FALSE_GOAL and shown <= FALSE_GOAL
        return (
            f"regr. <= {FALSE_GOAL:.0%}, regr.+worse <= {FALSE_GOAL:.0%}",
            "PASS" if ok else "MISS",
        )
    if case.kind == "power":
        return f"regr. >= {POWER_GOAL:.0%}", "PASS" if regression >= POWER_GOAL else "MISS"
    return "-", "-"


def median_pairs(tally: Tally) -> int:
    seen = sorted(tally.pairs.elements())
    return seen[len(seen) // 2] if seen else 0


def table(results: Sequence[tuple[Case, Tally]]) -> list[str]:
    head = (
        f"{'row':<44} {'n':>6} {'regr.':>6} {'worse':>6} {'r+w':>6} {'noisy':>6} {'clear':>6} "
        f"{'pairs':>5}  {'goal':<34} result"
    )
    lines = [head, "-" * len(head)]
    for case, tally in results:
        goal, result = judged(case, tally)
        lines.append(
            f"{case.row.name:<44} {tally.comparisons:>6} "
            f"{tally.share(rule.REGRESSION):>6.1%} {tally.share(rule.WORSE):>6.1%} "
            f"{tally.share(rule.REGRESSION, rule.WORSE):>6.1%} "
            f"{tally.share(rule.TOO_NOISY):>6.1%} {tally.share(rule.NO_REGRESSION):>6.1%} "
            f"{median_pairs(tally):>5}  {goal:<34} {result}"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--comparisons", type=int, default=10_000, help="per row (10,000)")
    parser.add_argument("--seed", type=int, default=33)
    parser.add_argument("--jobs", type=int, default=1, help="processes (the rows split)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    todo = cases()
    metrics = default_metrics()
    spreads = documented_spreads()
    print(f"default plan: {plan().to_dict()['method']}; pairs {seq.DEFAULT_MIN_PAIRS}-"
          f"{seq.DEFAULT_MAX_PAIRS}, budget {seq.DEFAULT_BUDGET_S / 60:g} min, "
          "pairs of 3.5-3.7 min")  # fmt: skip
    for m in metrics:
        print(f"  {m.name}: margin {m.margin:.0%}, spread {spreads[m.name]:.2%}, first look at "
              f"{max(seq.DEFAULT_MIN_PAIRS, m.min_pairs)} pairs")  # fmt: skip
    print(f"seed {args.seed}, {args.comparisons:,} comparisons a row; shares of comparisons: "
          "regr. = regression, r+w = regression or worse, noisy = too noisy, clear = no "
          "regression; pairs = median pairs run")  # fmt: skip
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            tallies = list(pool.map(run_case, todo, [args.comparisons] * len(todo),
                                    [args.seed] * len(todo)))  # fmt: skip
    else:
        tallies = [run_case(c, args.comparisons, args.seed) for c in todo]
    results = list(zip(todo, tallies, strict=True))
    for line in table(results):
        print(line)
    misses = [c.row.name for c, t in results if judged(c, t)[1] == "MISS"]
    print(f"{len(misses)} row(s) miss their goal" + (f": {', '.join(misses)}" if misses else ""))
    print(f"took {time.monotonic() - started:.0f} s")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
