"""The default `loadgate compare` against known regressions: the candidate's collector under a
CPU quota a share lower than the baseline's (the charm's own `cpu` option, enforced by cgroups
on the local stack), each try a whole default compare. Prints each try's outcome, exit code,
wall time and what it measured; a table at the end. Not a test: it takes 15 minutes a try.

    .venv/bin/python benchmarks/compare_injected.py [--losses 0,0.03,0.05,0.1,0.2] [--tries 3]
        [--tries-at 0.1=5] [--cpu-m 600] [--otelcol rev221] [--prefix inj] [--dry-run]

A loss of 0 is an A/A comparison (both sides at the same quota). The quota lowers what the
collector can do per second; what it does to saturation and to CPU per record is measured, not
assumed: each row prints both sides' means. Everything else is compare's defaults (budget,
pairs, metrics, thresholds, order).
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

ROOT = Path(__file__).resolve().parents[1]
LOADGATE = ROOT / ".venv" / "bin" / "loadgate"


@dataclass(frozen=True)
class Try:
    loss: float
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
            f"{metric} {d['decision']} {change * 100:+.1f} % ({lower * 100:+.1f} .. "
            f"{upper * 100:+.1f}), means {d.get('baseline_mean'):.4g} -> "
            f"{d.get('candidate_mean'):.4g}"
        )
    return verdict, pairs if isinstance(pairs, int) else None, "; ".join(parts)


def run_try(loss: float, number: int, prefix: str, otelcol: str, cpu_m: int, results: Path) -> Try:
    compare_id = f"{prefix}-{round(loss * 100)}-{number}-{time.strftime('%H%M%S')}"
    argv = argv_for(compare_id, otelcol, cpu_m, loss)
    print(f"try: loss {loss:.0%} #{number}: {' '.join(argv[1:])}", flush=True)
    began = time.monotonic()
    done = subprocess.run(argv, cwd=ROOT, check=False, stdin=subprocess.DEVNULL)
    wall = time.monotonic() - began
    path = results / compare_id / "compare.json"
    verdict, pairs, summary = "no record", None, ""
    if path.is_file():
        verdict, pairs, summary = _summary(json.loads(path.read_text()))
    found = Try(loss, number, compare_id, done.returncode, wall, verdict, pairs, summary)
    print(
        f"result: loss {loss:.0%} #{number}: {verdict}, exit {done.returncode}, "
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
    parser.add_argument("--losses", default="0,0.03,0.05,0.1,0.2")
    parser.add_argument("--tries", type=int, default=3, help="tries a loss (3)")
    parser.add_argument("--tries-at", default="0.1=5", help="more tries at some losses")
    parser.add_argument("--cpu-m", type=int, default=600, help="the baseline's quota (600m)")
    parser.add_argument("--otelcol", default="rev221")
    parser.add_argument("--prefix", default="inj")
    parser.add_argument("--results", default=str(ROOT / "results"))
    parser.add_argument("--dry-run", action="store_true", help="print the commands only")
    args = parser.parse_args(argv)
    losses = [float(x) for x in args.losses.split(",") if x.strip()]
    bad = [x for x in losses if not 0 <= x < 1]
    if bad:
        parser.error(f"--losses: each must be at least 0 and below 1; got {bad}")
    plan = _tries(losses, args.tries, _parse_more(args.tries_at))
    if args.dry_run:
        for loss, n in plan:
            print(" ".join(argv_for(f"{args.prefix}-{round(loss * 100)}-{n}", args.otelcol,
                                    args.cpu_m, loss)))  # fmt: skip
        return 0
    done = [
        run_try(loss, n, args.prefix, args.otelcol, args.cpu_m, Path(args.results))
        for loss, n in plan
    ]
    print(f"\n{'loss':>5} {'try':>3} {'verdict':<14} {'exit':>4} {'wall s':>7} {'pairs':>5}  id")
    for t in done:
        print(
            f"{t.loss:>5.0%} {t.number:>3} {t.verdict:<14} {t.exit_code:>4} {t.wall_s:>7.0f} "
            f"{t.pairs if t.pairs is not None else '-':>5}  {t.compare_id}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
