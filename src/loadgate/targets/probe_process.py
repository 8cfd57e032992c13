"""The speed probe (measure.speed_probe) as a process beside a run's load: started with k6 on
the pipeline's CPUs, stopped when k6 is done, its jobs read back over the load window."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from loadgate.measure import speed_probe
from loadgate.stack import procs

PROBE_FILE = "speed-probe.tsv"
_LIFETIME_MARGIN_S = 600.0  # past the load's duration, at which it stops by itself


def command(out_file: Path, cpus: Sequence[int], lifetime_s: float) -> list[str]:
    """The probe's argv: this Python, pinned to `cpus` (none: unpinned), appending to
    `out_file`, stopping by itself after `lifetime_s` at most."""
    argv = [sys.executable, "-m", "loadgate.measure.speed_probe", "--out", str(out_file)]
    if cpus:
        argv += ["--cpus", ",".join(str(c) for c in cpus)]
    lifetime = min(speed_probe.MAX_LIFETIME_S, max(1.0, lifetime_s))
    return [*argv, "--for", f"{lifetime:g}"]


@dataclass
class ProbeProcess:
    out_file: Path
    proc: subprocess.Popen[bytes]

    @classmethod
    def start(cls, out_dir: Path, cpus: Sequence[int], load_s: float) -> ProbeProcess:
        out_file = out_dir / PROBE_FILE
        out_file.unlink(missing_ok=True)
        proc = subprocess.Popen(
            command(out_file, cpus, load_s + _LIFETIME_MARGIN_S),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return cls(out_file, proc)

    def stop(self) -> None:
        """Stop it (SIGTERM, then SIGKILL after 5 s); its file stays."""
        procs.stop_child(self.proc, 5.0)

    def reading(self, start: float, end: float) -> tuple[float | None, int]:
        """The median CPU ns of its jobs that ended within [start, end], and how many did."""
        return speed_probe.read(self.out_file, start, end)
