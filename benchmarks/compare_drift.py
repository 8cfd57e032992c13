"""Where a comparison's noise lives: within a run, between the runs of one side, within a pair.

For each recorded comparison (`results/<compare_id>/compare.json`) it prints every side's run
in the order they ran: when its pressure window began, its saturation and its collector CPU per
1,000 records, how much that CPU figure moved within the run (the coefficient of variation of
the collector's CPU over its accepted records, sample by sample, over the load window less its
first 12 s), and the CPU per 1,000 records in speed-probe jobs (`pressure-cpu-probe`; read
from the pressure run's result.json where the comparison did not compare it). Then, per
comparison and pooled over all given:

- **within a run**: the mean of those CVs (what a longer window or more windows per stack cannot
  go below: the run's own sampling noise);
- **one side, run to run**: the standard deviation of the log values of one side's runs (the
  machine's drift over the comparison plus each stack's own noise);
- **a pair**: the standard deviation of the paired log differences, ln B - ln A (what the rule's
  bounds see; the shipped margins file calibrates it at 6.1 % for saturation and 9.3 % for CPU
  per record in probe jobs);
- **the stacks' level** (pooled only): how far the comparisons' mean differences spread beyond
  what their pairs explain. A comparison on kept stacks draws each side's stack once, so a level
  one stack holds for the whole comparison is in its mean but not in its pairs' spread, and the
  rule's bounds do not see it. Only meaningful when every given comparison has the same true
  difference: A/As, or one injected cost.

Two independent runs differ by √2 times a value's spread. A pair's spread far above √2 times the
within-run CV and near √2 times the run-to-run spread says the noise is the machine moving
between the two runs of a pair, not the runs being short.

    .venv/bin/python benchmarks/compare_drift.py COMPARE_ID [COMPARE_ID ...] [--results DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from loadgate.capacity.compare import rule
from loadgate.capacity.compare.values import in_probe_jobs

ROOT = Path(__file__).resolve().parents[1]
CPU = rule.PRESSURE_CPU.name
PROBE = rule.PRESSURE_CPU_PROBE.name
SATURATION = rule.SATURATION.name
METRICS = ((CPU, "CPU per record"), (PROBE, "CPU per record in probe jobs"),
           (SATURATION, "saturation"))  # fmt: skip
SKIP_S = 12.0  # the load window's first seconds: the 10 s rate windows still hold the idle time


@dataclass(frozen=True)
class SideRun:
    side: str
    repeat: int
    began: float | None
    saturation: float | None
    cpu: float | None
    cpu_cv: float | None
    cpu_probe: float | None = None  # the CPU per record in speed-probe jobs

    def value(self, metric: str) -> float | None:
        return {SATURATION: self.saturation, CPU: self.cpu, PROBE: self.cpu_probe}[metric]


def _within_run_cv(series_file: Path) -> tuple[float | None, float | None]:
    """(the load's start, the CV of per-sample collector CPU per record) from series.json."""
    if not series_file.is_file():
        return None, None
    data = json.loads(series_file.read_text())
    series = data.get("series") or {}
    began = data.get("load_started")
    cores = series.get("collector_cpu_cores", {}).get("samples") or []
    taken = dict(series.get("collector_accepted_per_s", {}).get("samples") or [])
    if began is None:
        return None, None
    start, end = float(began) + SKIP_S, float(data.get("load_ended") or 0) - 2.0
    ratios = [
        c / taken[t]
        for t, c in cores
        if start <= t <= end and taken.get(t) and c is not None and taken[t] > 0
    ]
    if len(ratios) < 3:
        return float(began), None
    return float(began), statistics.stdev(ratios) / statistics.mean(ratios)


def _pressure_cpu(result_file: Path) -> tuple[float | None, float | None]:
    """(CPU s per 1,000 records, the same in speed-probe jobs) from a pressure run's
    result.json, where the comparison did not record them (a metric it did not compare)."""
    if not result_file.is_file():
        return None, None
    cpu = json.loads(result_file.read_text()).get("cpu") or {}
    per_1000 = (cpu.get("per_1000_records") or {}).get("otelcol")
    return per_1000, in_probe_jobs(per_1000, cpu.get("probe_ns_per_job"))


def side_runs(results: Path, compare_id: str) -> list[SideRun]:
    record = json.loads((results / compare_id / "compare.json").read_text())
    out: list[SideRun] = []
    for run in sorted(record["runs"], key=lambda r: r["position"]):
        values = run.get("values") or {}
        refs = run.get("refs") or []
        pressure = next((r for r in refs if r.endswith("-pr")), None)
        began, cv = _within_run_cv(results / pressure / "series.json") if pressure else (None, None)
        cpu, in_jobs = values.get(CPU), values.get(PROBE)
        if pressure and (cpu is None or in_jobs is None):
            read_cpu, read_jobs = _pressure_cpu(results / pressure / "result.json")
            cpu = cpu if cpu is not None else read_cpu
            in_jobs = in_jobs if in_jobs is not None else read_jobs
        side, repeat, saturation = run["side"], int(run["repeat"]), values.get(SATURATION)
        out.append(SideRun(side, repeat, began, saturation, cpu, cv, in_jobs))
    return out


def _log_sd(values: list[float]) -> float | None:
    logs = [math.log(v) for v in values if v and v > 0]
    return statistics.stdev(logs) if len(logs) >= 2 else None


def spreads(runs: list[SideRun], metric: str) -> dict[str, float | None]:
    """One side's run-to-run spread (pooled over the two sides) and a pair's, of log values."""
    by_side: dict[str, dict[int, float]] = {"baseline": {}, "candidate": {}}
    for r in runs:
        value = r.value(metric)
        if value is not None and value > 0:
            by_side[r.side][r.repeat] = value
    side_sds = [s for s in (_log_sd(list(v.values())) for v in by_side.values()) if s is not None]
    pairs = sorted(set(by_side["baseline"]) & set(by_side["candidate"]))
    diffs = [math.log(by_side["candidate"][p]) - math.log(by_side["baseline"][p]) for p in pairs]
    return {
        "run_to_run": math.sqrt(statistics.mean([s * s for s in side_sds])) if side_sds else None,
        "pair": statistics.stdev(diffs) if len(diffs) >= 2 else None,
        "pair_df": float(len(diffs) - 1) if len(diffs) >= 2 else 0.0,
        "mean": statistics.fmean(diffs) if diffs else None,
    }


def stack_level(per_comparison: list[dict[str, float | None]]) -> tuple[float | None, int]:
    """The spread of a comparison's mean pair difference beyond what its pairs explain, and
    over how many comparisons: what a kept stack's own level adds (each comparison draws its two
    stacks once, so its pairs cannot see it). Method of moments: the variance of the
    comparisons' means less the mean variance of a mean (a pair's variance over the pairs),
    0 when that is negative; None with fewer than 3 comparisons of 2 pairs or more. Only
    meaningful over comparisons of the same true difference (A/As, or one injected cost)."""
    usable = [s for s in per_comparison if s["pair"] is not None and s["mean"] is not None]
    if len(usable) < 3:
        return None, len(usable)
    means = [float(s["mean"] or 0.0) for s in usable]
    of_mean = [float(s["pair"] or 0.0) ** 2 / (float(s["pair_df"] or 0.0) + 1) for s in usable]
    excess = statistics.variance(means) - statistics.fmean(of_mean)
    return math.sqrt(max(excess, 0.0)), len(usable)


def pooled_pair_spread(per_comparison: list[dict[str, float | None]]) -> tuple[float | None, int]:
    """The paired spread pooled within comparisons (as calibrate pools it), and its df."""
    df = sum(int(s["pair_df"] or 0) for s in per_comparison if s["pair"] is not None)
    if df == 0:
        return None, 0
    ss = sum((s["pair"] or 0.0) ** 2 * (s["pair_df"] or 0.0) for s in per_comparison)
    return math.sqrt(ss / df), df


def _pct(value: float | None) -> str:
    return "unknown" if value is None else f"{100 * value:.1f} %"


def _num(value: float | None, fmt: str) -> str:
    return "unknown" if value is None else format(value, fmt)


def _mean_cv(runs: list[SideRun]) -> float | None:
    """The mean within-run CV of CPU per record over the runs that have one."""
    cvs = [r.cpu_cv for r in runs if r.cpu_cv is not None]
    return statistics.mean(cvs) if cvs else None


def _print_runs(runs: list[SideRun]) -> None:
    print(
        "  side       pair  pressure began  saturation/min  CPU s/1,000  within-run CV"
        "  in probe jobs"
    )
    for r in runs:
        began = time.strftime("%H:%M:%S", time.gmtime(r.began)) if r.began else "unknown"
        print(
            f"  {r.side:<9}  {r.repeat:>4}  {began:>14}  {_num(r.saturation, ',.0f'):>14}"
            f"  {_num(r.cpu, '.3f'):>11}  {_pct(r.cpu_cv):>13}  {_num(r.cpu_probe, '.1f'):>13}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("compare_ids", nargs="+", metavar="COMPARE_ID")
    parser.add_argument("--results", type=Path, default=ROOT / "results")
    args = parser.parse_args(argv)
    every_run: list[SideRun] = []
    per_comparison: list[dict[str, dict[str, float | None]]] = []  # each metric's spreads
    for compare_id in args.compare_ids:
        record = args.results / compare_id / "compare.json"
        if not record.is_file():
            print(f"compare_drift: no {record}", file=sys.stderr)
            return 2
        runs = side_runs(args.results, compare_id)
        print(f"{compare_id}")
        _print_runs(runs)
        found = {metric: spreads(runs, metric) for metric, _ in METRICS}
        for metric, name in METRICS:
            s = found[metric]
            extra = f", within a run {_pct(_mean_cv(runs))}" if metric == CPU else ""
            print(
                f"  {name}: one side run to run {_pct(s['run_to_run'])}, "
                f"a pair's difference {_pct(s['pair'])}{extra}"
            )
        every_run.extend(runs)
        per_comparison.append(found)
    if len(args.compare_ids) > 1:
        mean_cv = _pct(_mean_cv(every_run))
        print(f"all {len(args.compare_ids)}: within-run CV of CPU per record, mean {mean_cv}")
        for metric, name in METRICS:
            spread, df = pooled_pair_spread([found[metric] for found in per_comparison])
            where = "a pair's difference, pooled within comparisons"
            level, k = stack_level([found[metric] for found in per_comparison])
            print(
                f"  {name}: {where}, {_pct(spread)} on {df} df; the stacks' level beyond the "
                f"pairs {_pct(level)} over {k} comparisons (of one true difference only)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
