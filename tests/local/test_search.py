"""`loadgate search` through the real stack: a tiny search (a narrow range below what the
pipeline takes: a 20 s saturation step that takes everything, a 15 s hold that keeps up) whose
search.json is complete and agrees with the runs of its steps; on the suite's shared stack."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loadgate import cli
from loadgate.capacity.search.record import SearchRecord
from loadgate.stack import local

pytestmark = pytest.mark.local


def test_a_tiny_search_records_every_step_consistently_with_its_runs(
    stack: local.StackInfo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("LOADGATE_STACK_DIR", str(stack.root))
    results = tmp_path / "results"
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(results))
    argv = [
        "search", "--search-id", "tiny", "--min-rate", "10000", "--max-rate", "14000",
        "--saturation", "20", "--keep-up-hold", "15", "--budget", "50",
        "--labels", "revision=test",
    ]  # fmt: skip
    code = cli.main(argv)
    out = capsys.readouterr().out
    assert code == cli.EXIT_OK, out
    record = SearchRecord.from_json((results / "tiny" / "search.json").read_text())
    # Nothing fails this low: the saturation step at --max-rate took everything, 14,000 held.
    assert record.result.status == "at-least-max"
    assert [(s.step.rate, s.step.phase, s.step.duration_s) for s in record.steps] == [
        (14_000, "saturation", 20),
        (14_000, "hold", 15),
    ]
    assert record.result.capacity_per_min == 14_000
    assert record.result.confirmed
    assert record.result.load_s == 20 + 15
    assert record.ended_at is not None
    assert record.wall_s is not None
    assert record.wall_s >= record.result.load_s
    assert record.stack["target"] == "local"
    saturation = record.steps[0].outcome
    assert saturation.saturated is False  # the queue never filled
    assert saturation.passed
    assert saturation.throughput_per_min == pytest.approx(14_000, rel=0.05)
    assert saturation.queue_records == 1000 * 5  # the default queue, 5 records a request
    assert not record.notes  # the steady window was measured
    sat_run = results / "tiny" / "runs" / "tiny-00" / "result.json"
    assert json.loads(sat_run.read_text())["saturation"]["saturated"] is False
    for s in record.steps:
        run_id = s.outcome.run_id
        assert run_id is not None
        assert run_id == f"tiny-{s.step.index:02d}"
        result = json.loads((results / "tiny" / "runs" / run_id / "result.json").read_text())
        assert result["spec"]["rate"] == s.step.rate
        assert result["spec"]["duration_s"] == s.step.duration_s
        assert result["spec"]["max_error_rate"] == (1.0 if s.step.phase == "saturation" else 0.01)
        assert result["labels"] == {"revision": "test"}
        assert result["verdict"] == "PASS"
        assert s.outcome.passed
        assert s.outcome.accepted_per_min == result["client"]["records_per_minute"]
        assert s.outcome.queue_max == result["pipeline"]["queue_size_max"]
        assert s.outcome.loki_discarded == result["pipeline"]["loki_discarded"] == 0
        assert s.outcome.saturated is False  # no queue filled, and the hold kept up
        assert s.figures is not None
        assert s.figures.to_dict() == result["bottleneck"]["figures"]
        assert s.figures.k6_cpu_s is not None
        assert s.figures.k6_cpu_s > 0
        assert s.attribution is not None
        assert s.attribution.verdict == "none"
    assert "capacity 14,000 records/min" in out
    assert "status at-least-max" in out
    assert not (results / "tiny-00").exists()  # the steps' runs live under the search
