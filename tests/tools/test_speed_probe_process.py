"""The speed probe as the local target runs it: a real process, pinned, writing its jobs, stopped
with the load; and stopping by itself after `--for`."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from loadgate.measure import speed_probe
from loadgate.targets.probe_process import PROBE_FILE, ProbeProcess


def test_the_probe_writes_its_jobs_until_stopped(tmp_path: Path) -> None:
    cpu = min(os.sched_getaffinity(0))
    began = time.time()
    probe = ProbeProcess.start(tmp_path, (cpu,), 1.0)
    try:
        time.sleep(2.5)
    finally:
        probe.stop()
    assert probe.proc.returncode is not None
    assert probe.out_file == tmp_path / PROBE_FILE
    ns, jobs = probe.reading(began, time.time())
    assert jobs >= 5
    assert ns is not None
    assert 0 < ns < 1e9
    lines = probe.out_file.read_text().splitlines()
    size = len(lines)
    time.sleep(0.6)
    assert len(probe.out_file.read_text().splitlines()) == size  # stopped: no more jobs


def test_the_probe_stops_by_itself(tmp_path: Path) -> None:
    out = tmp_path / "probe.tsv"
    argv = [sys.executable, "-m", "loadgate.measure.speed_probe", "--out", str(out), "--for", "1"]
    done = subprocess.run(argv, timeout=30, check=False)
    assert done.returncode == 0
    samples = speed_probe.parse(out.read_text().splitlines())
    assert 2 <= len(samples) <= 6  # every 0.25 s for 1 s
    assert all(s.ns > 0 for s in samples)
