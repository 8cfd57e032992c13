"""The accumulated per-run table: rows from result.json files, Markdown and plots."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from loadgate import report, results


def result_doc(run_id: str, started: float, revision: str, verdict: str) -> dict[str, Any]:
    return {
        "format": "loadgate-result/1",
        "run_id": run_id,
        "target": "local",
        "started_at": started,
        "labels": {"revision": revision},
        "spec": {"executor": "constant-arrival-rate", "rate": 60000},
        "client": {
            "records_per_minute": 59990.5,
            "p99_ms": 3.25,
            "error_rate": 0.0,
            "records_sent": 60000,
        },
        "delivered": {"records": 60000},
        "ledger": {"balanced": True},
        "gates": [],
        "verdict": verdict,
        "environment": {"profile": {"name": "charm-default"}},
    }


def write(root: Path, doc: dict[str, Any]) -> None:
    folder = root / doc["run_id"]
    folder.mkdir(parents=True)
    (folder / results.RESULT_FILE).write_text(json.dumps(doc))


def test_rows_are_read_oldest_first_and_rendered(tmp_path: Path) -> None:
    write(tmp_path, result_doc("b", 2_000_000_000, "70", "FAIL"))
    write(tmp_path, result_doc("a", 1_900_000_000, "69", "PASS"))
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / results.RESULT_FILE).write_text("{not json")
    rows = [report.row_of(d) for d in results.load_rows(tmp_path)]
    assert [r.run_id for r in rows] == ["a", "b"]
    md = report.markdown(rows)
    lines = md.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| run |"))
    assert lines[header + 2].startswith("| a | ")
    assert "revision=69" in lines[header + 2]
    assert "| 59,990 | 3.25 | 0.00% | 60,000 | 60,000 | balanced | PASS |" in lines[header + 2]
    assert lines[header + 3].endswith("| FAIL |")
    assert [r.short_name for r in rows] == ["69", "70"]


def test_plots_are_written(tmp_path: Path) -> None:
    rows = [report.row_of(result_doc("a", 1_900_000_000, "69", "PASS"))]
    written = report.plot(rows, tmp_path)
    assert [p.name for p in written] == ["report-throughput.png", "report-p99.png"]
    for path in written:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
