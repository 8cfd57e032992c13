"""A default-shaped run beside another OTLP client, with the run's output (its loss ledger)
printed: issue 38's case. The local stack is brought up, a client of our own (not k6, not
loadgate) sends 100 log records a second to the collector from 3 s before the run to its end,
`loadgate run --duration 30s --rate 30000` runs, and the stack is brought down. Prints the run's
output and what the other client sent. Not a test (tests/local/test_other_traffic.py asserts
the same ledger); it shows what a user sees.

    .venv/bin/python benchmarks/beside_other_traffic.py [--duration 30s] [--rate 30000]
        [--per-second 100]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from support.other_client import OtherClient  # noqa: E402  (tests/support, as the test uses it)

LOADGATE = ROOT / ".venv" / "bin" / "loadgate"
URL = "http://127.0.0.1:4318/v1/logs"  # the stack's collector, OTLP/HTTP, standard ports


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--duration", default="30s", help="the run's load (default 30s)")
    parser.add_argument("--rate", default="30000", help="records per minute (default 30000)")
    parser.add_argument("--per-second", type=int, default=100,
                        help="the other client's records a second (default 100)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.per_second < 2:
        parser.error("--per-second: at least 2 (two requests a second)")
    subprocess.run([str(LOADGATE), "stack", "up"], check=True)
    try:
        with OtherClient(URL, args.per_second // 2) as client:
            time.sleep(3)  # it was sending before the run started
            run = subprocess.run(
                [str(LOADGATE), "run", "--duration", args.duration, "--rate", args.rate,
                 "--run-id", f"beside-other-{int(time.time())}"],
                check=False,
            )  # fmt: skip
    finally:
        subprocess.run([str(LOADGATE), "stack", "down"], check=False)
    print(f"\nthe other client: {client.sent:,} records sent and acknowledged, "
          f"{client.failed:,} refused or failed")  # fmt: skip
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
