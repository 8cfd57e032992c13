"""`loadgate compare` through the real stack: a tiny comparison of two queue sizes (2 repeats a
side, 10 s runs), each run on a fresh charm-rendered stack, ending in a complete compare.json
whose verdict is the exit code, and nothing left running."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import processes_mentioning

from loadgate import cli
from loadgate.records.compare import CompareRecord
from loadgate.stack import local

pytestmark = pytest.mark.local


def test_a_tiny_compare_of_two_queue_sizes_is_complete_and_exits_with_its_verdict(
    built_bin_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    stack_dir, results = tmp_path / "stack", tmp_path / "results"
    monkeypatch.setenv("LOADGATE_STACK_DIR", str(stack_dir))
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(results))
    code = cli.main(
        [
            "compare", "--baseline", "queue-size=1000", "--candidate", "queue-size=5000",
            "--repeats", "2", "--duration", "10s", "--rate", "12000", "--compare-id", "tiny",
            "--base-port", "24700",
        ]
    )  # fmt: skip
    out = capsys.readouterr().out
    text = (results / "tiny" / "compare.json").read_text()
    record = CompareRecord.from_json(text)  # checks every field
    data = json.loads(text)
    assert code == record.exit_code == data["exit_code"], out
    assert f"verdict {record.verdict} (exit {code})" in " ".join(out.split())

    # Both sides, with their charm sources, commits and workload versions.
    for side, queue in (("baseline", 1000), ("candidate", 5000)):
        desc = data[side]["description"]
        assert desc["settings"] == f"queue-size={queue}"
        assert desc["otelcol"]["options"] == {"queue_size": queue}
        assert len(desc["otelcol"]["source"]["commit"]) >= 7
        assert desc["otelcol"]["workload"]["version"].startswith("v")
        assert desc["loki"]["workload"]["version"].startswith("v")

    # A B A B, each run's result on disk, every metric measured (a value, never 0).
    assert [(r.side, r.repeat) for r in record.runs] == [
        ("baseline", 1), ("candidate", 1), ("baseline", 2), ("candidate", 2),
    ]  # fmt: skip
    for run in record.runs:
        assert run.ref is not None
        result = json.loads((results / run.ref / "result.json").read_text())
        assert result["labels"]["compare"] == "tiny"
        assert result["labels"]["side"] == run.side
        assert set(run.values) == {"p99_ms", "cpu_s_per_1000_records"}
        for name, value in run.values.items():
            assert value is not None, (run.ref, name, record.notes)
            assert value > 0
        assert run.values["p99_ms"] == result["client"]["p99_ms"]
    assert {d.metric.name for d in record.decisions} == {"p99_ms", "cpu_s_per_1000_records"}
    assert record.ended_at is not None
    assert not any(n.startswith("partial") for n in record.notes)

    # Every stack it started was stopped.
    assert local.read_info(stack_dir) is None  # stack.json goes with the stack
    assert processes_mentioning(stack_dir) == []
