"""The default `loadgate compare` against known regressions, each try a whole default compare.
Prints each try's outcome, exit code, wall time and what it measured; a table at the end. Not a
test: it takes 15 minutes a try. Three knobs:

- `--knob quota` (default): the candidate's collector under a CPU quota a share lower than the
  baseline's (the charm's own `cpu` option, enforced by cgroups on the local stack); `--losses`
  are the shares, `--cpu-m` the baseline's quota (400m: at 600m the collector of 2026-11-29 was
  throttled in 0-7 % of its periods and a 10 % cut took 0-17 % of saturation, as fast as the
  host was; at 400m both sides were throttled in 82-90 %).
- `--knob cpu-cost`: the candidate's collector computes N SHA-256 digests of each log record's
  body (`--hand cpu-cost=N`: more CPU per record, no quota on either side); `--costs` are the Ns.
- `--knob steal`: a worker on the candidate's pipeline CPUs takes N % of them while each of its
  runs loads (`--hand cpu-steal=N`: the collector and Loki on N % less CPU, their CPU per record
  unchanged, no quota on either's own group); `--steals` are the Ns.

    .venv/bin/python benchmarks/compare_injected.py [--knob quota] [--losses 0,0.03,0.05,0.1,0.2]
        [--costs 0,2,4] [--steals 0,3,5,10,20] [--tries 3] [--tries-at 0.1=5] [--cpu-m 400]
        [--otelcol rev221] [--prefix inj] [--dry-run]

A loss or a cost of 0 is an A/A comparison. What a knob does to saturation and to CPU per record
is measured, not assumed: each row prints both sides' means, and the share of CPU periods in
which each side's collector was throttled over its saturation runs (a quota above what the
collector uses barely binds: a small cut of it is then nearly an A/A). Everything else is compare's
defaults (budget, pairs, metrics, thresholds, order).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from loadgate.capacity.compare.rule import percent_text

ROOT = Path(__file__).resolve().parents[1]
LOADGATE = ROOT / ".venv" / "bin" / "loadgate"


@dataclass(frozen=True)
class Try:
    level: str
    number: int
    compare_id: str
    exit_code: int
    wall_s: float
    verdict: str
    pairs: int | None
    summary: str


def _side(otelcol: str, cpu_m: int) -> str:
    return f"otelcol={otelcol} charm-config=cpu={cpu_m}m"


def argv_for(compare_id: str, otelcol: str, cpu_m: int, loss: float) -> list[str]:
    """The compare of one try: the baseline at `cpu_m`, the candidate `loss` lower."""
    candidate_m = round(cpu_m * (1 - loss))
    return [
        str(LOADGATE), "compare", "--compare-id", compare_id,
        "--baseline", _side(otelcol, cpu_m), "--candidate", _side(otelcol, candidate_m),
    ]  # fmt: skip


def argv_for_hand(compare_id: str, otelcol: str, key: str, n: int) -> list[str]:
    """The compare of one try: the candidate with the hand change `key=n` (cpu-cost: digests
    of each record's body; cpu-steal: the percent of its pipeline's CPUs taken)."""
    candidate = f"otelcol={otelcol}" + (f" hand={key}={n}" if n else "")
    return [
        str(LOADGATE), "compare", "--compare-id", compare_id,
        "--baseline", f"otelcol={otelcol}", "--candidate", candidate,
    ]  # fmt: skip


def _summary(record: dict[str, object]) -> tuple[str, int | None, str]:
    """The verdict, pairs and each metric's worsening with its bounds, from compare.json."""
    verdict = str(record.get("verdict"))
    pairs = record.get("repeats")
    parts: list[str] = []
    for d in record.get("decisions", []):  # type: ignore[union-attr]
        assert isinstance(d, dict)
        metric = d["metric"]["name"]
        change, lower, upper = d.get("change"), d.get("lower"), d.get("upper")
        if change is None:
            parts.append(f"{metric} {d['decision']}")
            continue
        parts.append(
            f"{metric} {d['decision']} {percent_text(change)} ({_share(lower)} .. "
            f"{_share(upper)}), means {_mean(d.get('baseline_mean'))} -> "
            f"{_mean(d.get('candidate_mean'))}"
        )
    return verdict, pairs if isinstance(pairs, int) else None, "; ".join(parts)


def _share(x: object) -> str:
    return percent_text(x, "") if isinstance(x, int | float) else "unknown"


def _mean(x: object) -> str:
    return f"{x:.4g}" if isinstance(x, int | float) else "unknown"


def throttled_text(record: dict[str, object], results: Path, role: str = "otelcol") -> str:
    """The share of CFS periods in which each side's `role` (the collector; the CPU steal's
    worker) was throttled, over its saturation runs (the runs' result.json): whether a quota
    bound at all. "" when no run says."""
    shares: dict[str, list[float]] = {}
    for run in record.get("runs", []):  # type: ignore[union-attr]
        assert isinstance(run, dict)
        refs = run.get("refs") or []
        path = results / str(refs[0]) / "result.json" if refs else None
        if path is None or not path.is_file():
            continue
        services = json.loads(path.read_text()).get("resources", {}).get("services", {})
        group = services.get(role) or {}
        periods, throttled = group.get("cpu_periods"), group.get("cpu_throttled_periods")
        if periods and throttled is not None:
            shares.setdefault(str(run.get("side")), []).append(throttled / periods)
    parts = [
        f"{side} {min(v):.0%}-{max(v):.0%}" if len(v) > 1 else f"{side} {v[0]:.0%}"
        for side, v in sorted(shares.items())
    ]
    who = "collector" if role == "otelcol" else role
    return f"; {who} throttled in {', '.join(parts)} of CPU periods" if parts else ""


def run_try(level: str, number: int, argv: list[str], compare_id: str, results: Path) -> Try:
    print(f"try: {level} #{number}: {' '.join(argv[1:])}", flush=True)
    began = time.monotonic()
    done = subprocess.run(argv, cwd=ROOT, check=False, stdin=subprocess.DEVNULL)
    wall = time.monotonic() - began
    path = results / compare_id / "compare.json"
    verdict, pairs, summary = "no record", None, ""
    if path.is_file():
        record = json.loads(path.read_text())
        verdict, pairs, summary = _summary(record)
        summary += throttled_text(record, results) + throttled_text(record, results, "cpu-steal")
    found = Try(level, number, compare_id, done.returncode, wall, verdict, pairs, summary)
    print(
        f"result: {level} #{number}: {verdict}, exit {done.returncode}, "
        f"{wall:.0f} s, {pairs} pairs: {summary}",
        flush=True,
    )
    return found


def _tries(losses: Sequence[float], tries: int, more: dict[float, int]) -> list[tuple[float, int]]:
    return [(loss, n) for loss in losses for n in range(1, more.get(loss, tries) + 1)]


def _parse_more(text: str) -> dict[float, int]:
    out: dict[float, int] = {}
    for item in filter(None, (x.strip() for x in text.split(","))):
        loss, _, count = item.partition("=")
        out[float(loss)] = int(count)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--knob", choices=("quota", "cpu-cost", "steal"), default="quota")
    parser.add_argument("--losses", default="0,0.03,0.05,0.1,0.2", help="--knob quota's shares")
    parser.add_argument("--costs", default="0,2,4", help="--knob cpu-cost's digests a record")
    parser.add_argument(
        "--steals", default="0,3,5,10,20", help="--knob steal's percent of the pipeline's CPUs"
    )
    parser.add_argument("--tries", type=int, default=3, help="tries a loss (3)")
    parser.add_argument("--tries-at", default="0.1=5", help="more tries at some losses")
    parser.add_argument(
        "--cpu-m", type=int, default=400,
        help="the baseline's quota (400m: below the collector's use at saturation: it binds)",
    )  # fmt: skip
    parser.add_argument("--otelcol", default="rev221")
    parser.add_argument("--prefix", default="inj")
    parser.add_argument("--results", default=str(ROOT / "results"))
    parser.add_argument("--dry-run", action="store_true", help="print the commands only")
    args = parser.parse_args(argv)
    if args.knob == "quota":
        levels = [float(x) for x in args.losses.split(",") if x.strip()]
        bad = [x for x in levels if not 0 <= x < 1]
        if bad:
            parser.error(f"--losses: each must be at least 0 and below 1; got {bad}")
    else:
        flag, text, most = (
            ("--costs", args.costs, 200)
            if args.knob == "cpu-cost"
            else ("--steals", args.steals, 90)
        )
        try:
            levels = [float(int(x)) for x in text.split(",") if x.strip()]
        except ValueError:
            parser.error(f"{flag}: integers from 0 to {most}, comma-separated; got {text!r}")
        if any(not 0 <= x <= most for x in levels):
            parser.error(f"{flag}: each from 0 to {most}; got {text!r}")
    plan = _tries(levels, args.tries, _parse_more(args.tries_at))

    def one(level: float, n: int, stamp: str) -> tuple[str, str, list[str]]:
        if args.knob == "quota":
            cid = f"{args.prefix}-{round(level * 100)}-{n}{stamp}"
            return f"loss {level:.0%}", cid, argv_for(cid, args.otelcol, args.cpu_m, level)
        word, key = ("cost", "cpu-cost") if args.knob == "cpu-cost" else ("steal", "cpu-steal")
        cid = f"{args.prefix}-{word}{int(level)}-{n}{stamp}"
        return f"{word} {int(level)}", cid, argv_for_hand(cid, args.otelcol, key, int(level))

    if args.dry_run:
        for level, n in plan:
            print(" ".join(one(level, n, "")[2]))
        return 0
    done: list[Try] = []
    for level, n in plan:
        name, cid, argv_ = one(level, n, time.strftime("-%H%M%S"))
        done.append(run_try(name, n, argv_, cid, Path(args.results)))
    print(f"\n{'level':>9} {'try':>3} {'verdict':<14} {'exit':>4} {'wall s':>7} {'pairs':>5}  id")
    for t in done:
        print(
            f"{t.level:>9} {t.number:>3} {t.verdict:<14} {t.exit_code:>4} {t.wall_s:>7.0f} "
            f"{t.pairs if t.pairs is not None else '-':>5}  {t.compare_id}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
