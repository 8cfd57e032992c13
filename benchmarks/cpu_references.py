"""Which reference cancels the noise of the collector's CPU per record: a comparison of the
collector's CPU over each candidate reference, read from recorded comparisons' pressure runs.

For each comparison (`results/<compare_id>/compare.json`) and each of its pressure runs
(`result.json`'s `cpu` block, the kernel's seconds over the load window) it takes the collector's
CPU seconds over:
- `records`: the records k6 had accepted (the raw CPU per record);
- `probe`: the speed probe's median CPU per job (`probe_ns_per_job`: the host's speed);
- `k6`: k6's CPU seconds (the load generator, on the other CPU under the CPU split);
- `loki`: Loki's CPU seconds (the stack's own store, on the collector's CPUs).

and prints, pooled over the comparisons given, each reference's paired spread (the standard
deviation of a pair's ln B - ln A within comparisons) and the stacks' level (over the A/A
comparisons among them: the mean square of their means less the mean of s²/n; 0 when that is
negative), as `loadgate calibrate` computes them; and per comparison each reference's mean
worsening. `--tsv FILE` writes every pressure run's figures (one line a run), the table a
reader recomputes these from.

    .venv/bin/python benchmarks/cpu_references.py ID [ID ...] [--results DIR] [--tsv FILE]

An A/A comparison is one whose record says `aa` (both sides the same stack).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class PressureRun:
    compare_id: str
    run_id: str
    side: str
    repeat: int
    records: int
    otelcol_s: float
    loki_s: float
    k6_s: float | None
    probe_ns_per_job: float | None


Reference = Callable[[PressureRun], float | None]
REFERENCES: dict[str, Reference] = {
    "records": lambda r: r.otelcol_s / r.records if r.records else None,
    "probe": lambda r: (
        r.otelcol_s / r.records / r.probe_ns_per_job if r.records and r.probe_ns_per_job else None
    ),
    "k6": lambda r: r.otelcol_s / r.k6_s if r.k6_s else None,
    "loki": lambda r: r.otelcol_s / r.loki_s if r.loki_s else None,
}


def pressure_runs(results: Path, compare_id: str) -> tuple[bool, list[PressureRun]]:
    """Whether the comparison is an A/A, and its pressure runs with a `cpu` block."""
    record = json.loads((results / compare_id / "compare.json").read_text())
    found: list[PressureRun] = []
    for run in record["runs"]:
        for ref in run.get("refs") or [run.get("ref")]:
            if not ref or not ref.endswith("-pr"):
                continue
            path = results / ref / "result.json"
            if not path.is_file():
                continue
            cpu = json.loads(path.read_text()).get("cpu")
            if not cpu:
                continue
            used = cpu["used_s"]
            if not used.get("otelcol") or not used.get("loki"):
                continue
            found.append(PressureRun(
                compare_id, ref, run["side"], int(run["repeat"]), int(cpu["records"]),
                float(used["otelcol"]), float(used["loki"]), used.get("k6"),
                cpu.get("probe_ns_per_job"),
            ))  # fmt: skip
    return bool(record.get("aa")), found


def pair_differences(runs: Sequence[PressureRun], reference: Reference) -> list[float]:
    """ln B - ln A of each complete pair (repeat) where both values are known."""
    by = {(r.side, r.repeat): reference(r) for r in runs}
    out: list[float] = []
    for repeat in sorted({r.repeat for r in runs}):
        a, b = by.get(("baseline", repeat)), by.get(("candidate", repeat))
        if a and b and a > 0 and b > 0:
            out.append(math.log(b) - math.log(a))
    return out


@dataclass(frozen=True)
class Pooled:
    paired_spread: float | None
    paired_df: int
    level: float | None
    level_df: int


def pooled(comparisons: Sequence[tuple[bool, list[PressureRun]]], reference: Reference) -> Pooled:
    """The paired spread within comparisons and the stacks' level over the A/A ones."""
    squares, df = 0.0, 0
    means: list[tuple[float, float]] = []
    for aa, runs in comparisons:
        diffs = pair_differences(runs, reference)
        if len(diffs) < 2:
            continue
        mean = statistics.fmean(diffs)
        squares += sum((d - mean) ** 2 for d in diffs)
        df += len(diffs) - 1
        if aa:
            means.append((mean, statistics.variance(diffs) / len(diffs)))
    spread = math.sqrt(squares / df) if df else None
    if len(means) < 3:
        return Pooled(spread, df, None, 0)
    square = statistics.fmean(m * m for m, _ in means) - statistics.fmean(v for _, v in means)
    return Pooled(spread, df, math.sqrt(max(square, 0.0)), len(means))


def _pct(value: float | None) -> str:
    return "unknown" if value is None else f"{100 * value:.2f} %"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("compare_ids", nargs="+", metavar="ID")
    parser.add_argument("--results", default=str(ROOT / "results"))
    parser.add_argument("--tsv", help="write every pressure run's figures here")
    args = parser.parse_args(argv)
    results = Path(args.results)
    comparisons = [pressure_runs(results, i) for i in args.compare_ids]
    print("per comparison, the candidate's mean worsening of the collector's CPU over each "
          "reference:")  # fmt: skip
    for cid, (aa, runs) in zip(args.compare_ids, comparisons, strict=True):
        cells = []
        for name, ref in REFERENCES.items():
            diffs = pair_differences(runs, ref)
            mean = math.expm1(statistics.fmean(diffs)) if diffs else None
            cells.append(f"{name} {_pct(mean):>9}")
        print(f"  {cid:28s} {'A/A' if aa else '   '} " + "  ".join(cells))
    print("pooled:")
    for name, ref in REFERENCES.items():
        p = pooled(comparisons, ref)
        print(f"  {name:8s} a pair {_pct(p.paired_spread)} ({p.paired_df} df); the stacks' "
              f"level {_pct(p.level)} over {p.level_df} A/A comparisons")  # fmt: skip
    if args.tsv:
        lines = ["compare_id\trun_id\tside\trepeat\trecords\totelcol_used_s\tloki_used_s\t"
                 "k6_used_s\tprobe_ns_per_job"]  # fmt: skip
        for _, runs in comparisons:
            for r in runs:
                lines.append("\t".join(str(x) for x in (
                    r.compare_id, r.run_id, r.side, r.repeat, r.records, r.otelcol_s, r.loki_s,
                    "" if r.k6_s is None else r.k6_s,
                    "" if r.probe_ns_per_job is None else r.probe_ns_per_job,
                )))  # fmt: skip
        Path(args.tsv).write_text("\n".join(lines) + "\n")
        print(f"wrote {args.tsv}: {sum(len(r) for _, r in comparisons)} pressure runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
