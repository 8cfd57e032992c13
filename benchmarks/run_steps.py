"""How long each step of `loadgate run` takes beside its load, on the local stack.

    .venv/bin/python benchmarks/run_steps.py [--runs 3] [--duration 5s] [--rate 3000]

Starts a stack of its own (the charm-rendered default, on ports from 25900, in a temporary
folder), runs `loadgate run` on it `--runs` times in a row, and prints per run the wall time of
each of the runner's steps (baseline: the wait for a quiet collector and the idle CPU window;
load; drain and collect: the drain, the wait for a quiet collector after it, the collection;
read back; judge and write) and the whole run; then stops the stack. The first run follows the
stack's start (the collector's own start-up records are still coming in); the others follow a
run, as in a comparison. Measure on a quiet machine: the waits follow Prometheus's scrapes
(every 2 s here).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loadgate.cli import main as loadgate_main
from loadgate.runner import run as runner

STEPS = ("baseline", "load", "drain_and_collect", "read_back", "judge", "write")
BASE_PORT = "25900"


def timed_steps(into: dict[str, float]) -> Callable[[], None]:
    """Wrap the runner's steps so each adds its wall time to `into`; returns the undo."""
    originals = {name: getattr(runner.RunSteps, name) for name in STEPS}

    def wrap(name: str, step: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(step)
        def timed(*args: Any, **kwargs: Any) -> Any:
            began = time.monotonic()
            try:
                return step(*args, **kwargs)
            finally:
                into[name] = into.get(name, 0.0) + time.monotonic() - began

        return timed

    for name, step in originals.items():
        setattr(runner.RunSteps, name, wrap(name, step))

    def undo() -> None:
        for name, step in originals.items():
            setattr(runner.RunSteps, name, step)

    return undo


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs in a row (default 3)")
    parser.add_argument("--duration", default="5s", help="each run's load (default 5s)")
    parser.add_argument("--rate", default="3000", help="records/min (default 3000)")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error(f"--runs: at least 1; got {args.runs}")
    with tempfile.TemporaryDirectory(prefix="loadgate-run-steps-") as folder:
        os.environ["LOADGATE_STACK_DIR"] = str(Path(folder) / "stack")
        os.environ["LOADGATE_RESULTS_DIR"] = str(Path(folder) / "results")
        if loadgate_main(["stack", "up", "--base-port", BASE_PORT]) != 0:
            print("run_steps: the stack did not start", file=sys.stderr)
            return 2
        rows: list[tuple[int, dict[str, float], float, int]] = []
        try:
            for n in range(1, args.runs + 1):
                spent: dict[str, float] = {}
                undo = timed_steps(spent)
                began = time.monotonic()
                try:
                    code = loadgate_main(
                        ["run", "--duration", args.duration, "--rate", args.rate,
                         "--run-id", f"steps-{n}"]
                    )  # fmt: skip
                finally:
                    undo()
                rows.append((n, spent, time.monotonic() - began, code))
        finally:
            loadgate_main(["stack", "down"])
    print()
    print(f"`loadgate run --duration {args.duration} --rate {args.rate}`, seconds of wall a step:")
    print("| run | " + " | ".join(STEPS) + " | whole run | exit |")
    print("|---" * (len(STEPS) + 3) + "|")
    for n, spent, whole, code in rows:
        cells = " | ".join(f"{spent[s]:.2f}" if s in spent else "not reached" for s in STEPS)
        print(f"| {n} | {cells} | {whole:.2f} | {code} |")
    return 0 if all(code == 0 for *_, code in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
