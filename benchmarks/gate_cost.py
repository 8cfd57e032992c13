"""What a gate run costs in a CI job's minutes, phase by phase, with COS's one-minute scrape.

    .venv/bin/python benchmarks/gate_cost.py

Runs loadgate's own integration suite (tests/integration: the otlp-logs gate run, then the
saturation gate) against the timed fake model of the tool tests (tests/support/fake_juju: time
runs 60 times faster, COS scrapes the collector and Loki once a minute, the collector exports at
most 180,000 records/min), and prints each phase's length in model minutes from the gate's own
log: the target's setup (the CA, the collector's config), the baseline (a fresh scrape), the
load (gates.yaml's duration), the drain and the read-back. Deployment is instant in the fake
model: it is not measured here.
"""

from __future__ import annotations

import re
import sys
import tempfile
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.dryrun import pytest_run  # noqa: E402
from support.fake_juju.charms import copy_bundles  # noqa: E402
from support.fake_juju.world import Timed, world  # noqa: E402

LOG = ("-o", "log_cli=true", "--log-cli-level=INFO",
       "--log-cli-format=%(created).3f %(name)s %(message)s")  # fmt: skip
LINE = re.compile(r"^(\d+\.\d+) loadgate\.gate (.*)$")
PHASES = (
    ("settled", "waiting for "),
    ("baseline", ": baseline"),
    ("load", ": load"),
    ("drain", ": drain"),
    ("collect", ": collect"),
    ("done", "written to"),
)


def phases(stdout: str) -> dict[str, float]:
    """Each phase's start, in model seconds, from the gate's log lines."""
    found: dict[str, float] = {}
    for line in stdout.splitlines():
        m = LINE.match(line.strip())
        if not m:
            continue
        for name, marker in PHASES:
            if marker in m.group(2) and name not in found:
                found[name] = float(m.group(1))
    return found


def lengths(found: dict[str, float]) -> dict[str, float]:
    """Minutes from each phase to the next: setup (settled -> baseline) ... read-back."""
    names = ["settled", "baseline", "load", "drain", "collect", "done"]
    labels = ["target setup", "baseline", "load", "drain", "read-back"]
    have = [n for n in names if n in found]
    return {labels[names.index(a)]: (found[b] - found[a]) / 60 for a, b in pairwise(have)}


def run(test: str, tmp: Path) -> dict[str, float]:
    with world(tmp, timed=Timed()) as w:
        bundle = copy_bundles(tmp / "bundles")
        done = pytest_run(
            w, test, "--require-juju", "--gate-scenario", "otlp-logs", "--bundle", str(bundle),
            "--overlay", str(bundle.parent / "overlays" / "ci-small-storage.yaml"), *LOG,
        )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"{test} failed:\n{done.stdout[-3000:]}")
    return lengths(phases(done.stdout))


def main() -> int:
    runs = {
        "otlp-logs gate": "tests/integration/test_load_gates.py::test_gates_pass",
        "saturation gate": "tests/integration/test_saturation_gate.py::test_saturation_measured",
    }
    table: dict[str, dict[str, float]] = {}
    for name, test in runs.items():
        with tempfile.TemporaryDirectory(prefix="gate-cost-") as tmp:
            table[name] = run(test, Path(tmp))
    labels = list(next(iter(table.values())))
    print("| phase (model minutes) | " + " | ".join(table) + " |")
    print("|---|" + "---|" * len(table))
    for label in [*labels, "total"]:
        cells = [
            f"{(sum(t.values()) if label == 'total' else t.get(label, 0.0)):.1f}"
            for t in table.values()
        ]
        print(f"| {label} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
