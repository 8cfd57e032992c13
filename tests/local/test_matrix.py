"""`loadgate matrix` through the real stack: a 2-cell matrix (the charm's defaults against the
collector sending to a Loki stand-in with its GC traced; 10 s at 30,000 records/min), each
experiment on a fresh stack, its comparison written; then a resume after an interrupted cell:
the done cell is skipped (and said so), the interrupted one runs again under its next
attempt's run id, and nothing is left running. The base port is
$LOADGATE_TEST_MATRIX_BASE_PORT (default 24800)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import processes_mentioning

from loadgate import cli
from loadgate.capacity.matrix.record import read_cells
from loadgate.stack import local

pytestmark = pytest.mark.local

BASE_PORT = os.environ.get("LOADGATE_TEST_MATRIX_BASE_PORT", "24800")
MATRIX = """\
matrix: tiny
description: the charm's defaults against a Loki stand-in
experiments:
  - name: loki
  - name: standin
    hand: {exporter: standin, gc_trace: on}
scenarios:
  - name: s
    duration: 10s
    vus: 20
rates: [30000]
drain_timeout: 60
"""


def said(capsys: pytest.CaptureFixture[str]) -> str:
    """What the command printed, on stdout and stderr, as one line."""
    got = capsys.readouterr()
    return " ".join((got.out + got.err).split())


def test_a_two_cell_matrix_and_its_resume(
    built_bin_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    stack_dir, results = tmp_path / "stack", tmp_path / "results"
    monkeypatch.setenv("LOADGATE_STACK_DIR", str(stack_dir))
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(results))
    path = tmp_path / "tiny.yaml"
    path.write_text(MATRIX)
    argv = ["matrix", str(path), "--base-port", BASE_PORT]

    code = cli.main(argv)
    out = said(capsys)
    assert code == 0, out
    folder = results / "tiny"
    cells = read_cells(folder)
    assert {k: (c.status, c.attempt) for k, c in cells.items()} == {
        "loki.s.r30000": ("done", 1),
        "standin.s.r30000": ("done", 1),
    }
    table = (folder / "matrix.md").read_text()
    assert "2 of 2 cells done" in table
    assert "| loki | s | 30,000/min |" in table
    assert "| standin | s | 30,000/min |" in table

    loki = json.loads((folder / "runs" / "tiny-loki-s-r30000" / "result.json").read_text())
    assert loki["ledger"]["lost_after_acceptance"] == 0
    assert loki["labels"] == {"matrix": "tiny", "experiment": "loki", "cell": "loki.s.r30000"}
    assert {"mean_ms", "p90_ms", "p95_ms", "max_ms"} <= set(loki["client"])
    standin = json.loads((folder / "runs" / "tiny-standin-s-r30000" / "result.json").read_text())
    accepted = standin["client"]["records_accepted"]
    assert standin["resources"]["standin"]["received"] == accepted > 0
    go = standin["resources"]["go_runtime"]
    assert go["gc_trace"] is True
    assert go["gc_count"] > 0, go
    assert go["heap_alloc_max_mib"] > 0
    assert standin["environment"]["charms"]["hand"]["exporter"] == "standin"

    # An interrupt leaves the running cell `running`: the next invocation runs it again.
    record = folder / "cells" / "standin.s.r30000.json"
    data = json.loads(record.read_text())
    record.write_text(json.dumps({**data, "status": "running", "ended_at": None}))
    code = cli.main(argv)
    out = said(capsys)
    assert code == 0, out
    assert "loki.s.r30000: done (tiny-loki-s-r30000), skipped" in out
    assert "running as tiny-standin-s-r30000-a2" in out
    again = read_cells(folder)["standin.s.r30000"]
    assert (again.status, again.attempt, again.ref) == ("done", 2, "tiny-standin-s-r30000-a2")
    assert (folder / "runs" / "tiny-standin-s-r30000-a2" / "result.json").is_file()

    # A third invocation has nothing to run: it prints the comparison and starts nothing.
    code = cli.main(argv)
    out = said(capsys)
    assert code == 0, out
    assert "2 done, 0 to run" in out
    assert local.read_info(stack_dir) is None
    assert processes_mentioning(stack_dir) == []
