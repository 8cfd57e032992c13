"""`loadgate run --scenario otlp-traces|logql-query` through the real stack (charm-rendered, with
the traces signal and its backend stand-in): a short PASS run of each, its ledger balanced in
its unit (spans; logql-query's in the lines it pushed), its gates named for it, its answers
checked."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from loadgate import cli
from loadgate.charms import signals
from loadgate.stack import choice, local
from loadgate.stack.charm_stack import PreparedCharms
from loadgate.stack.ports import Ports

pytestmark = pytest.mark.local

BASE_PORT = 26160


@pytest.fixture(scope="module")
def traces_stack(
    built_bin_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[local.StackInfo]:
    flags = choice.StackFlags(signals=(signals.LOGS, signals.TRACES))
    prepared = choice.request(flags).prepare()
    assert isinstance(prepared, PreparedCharms)
    root = tmp_path_factory.mktemp("traces-stack")
    info = local.up(prepared, Ports.from_base(BASE_PORT), root=root, bin_dir=built_bin_dir)
    try:
        yield info
    finally:
        local.down(root)


@pytest.fixture
def results(traces_stack: local.StackInfo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LOADGATE_STACK_DIR", str(traces_stack.root))
    folder = tmp_path / "results"
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(folder))
    return folder


def run(argv: list[str], results: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code = cli.main(["run", "--duration", "15s", "--signals", "logs,traces",
                     "--base-port", str(BASE_PORT), *argv])  # fmt: skip
    out = capsys.readouterr().out
    assert code == cli.EXIT_OK, out
    (path,) = results.glob("*/result.json")
    return json.loads(path.read_text())


def test_otlp_traces_passes_with_its_ledger_balanced_in_spans(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run(["--scenario", "otlp-traces", "--rate", "12000", "--labels", "revision=test"],
                 results, capsys)  # fmt: skip
    assert result["verdict"] == "PASS"
    assert [g["name"] for g in result["gates"]] == [
        "error_rate", "p99_ms", "spans_per_minute", "lost_spans",
    ]  # fmt: skip
    client, pipeline, ledger = result["client"], result["pipeline"], result["ledger"]
    sent = client["records_sent"]
    assert sent > 0
    assert sent % 45 == 0  # 5 traces x 9 spans a request
    assert sent == client["records_accepted"] == pipeline["collector_accepted"]
    assert pipeline["collector_exported"] == sent  # no scrape of its own in a traces pipeline
    assert result["delivered"]["records"] == sent  # what the stand-in's receiver accepted
    assert "stand-in" in result["delivered"]["source"]
    assert ledger["unit"] == "spans"
    assert ledger["balanced"] is True
    assert [s["count"] for s in ledger["steps"]] == [sent] * 4
    assert pipeline["queue_capacity"] == 1000  # the traces exporter's queue, the charm's
    assert result["bottleneck"]["attribution"]["verdict"] == "none"


def test_logql_query_passes_with_right_answers_and_its_pushes_balanced_in_lines(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run(["--scenario", "logql-query", "--rate", "300", "--push-rate", "3000",
                  "--p99-ms", "2000"], results, capsys)  # fmt: skip
    assert result["verdict"] == "PASS"
    assert [g["name"] for g in result["gates"]] == [
        "error_rate", "p99_ms", "queries_per_minute", "wrong_answers", "lost_lines",
    ]  # fmt: skip
    client, ledger = result["client"], result["ledger"]
    assert client["records_accepted"] >= 70  # 5 queries a second for 15 s
    assert client["wrong_answers"] == 0
    lines = client["lines_sent"]
    # Pushes of 100 lines (3,000 a minute: 750 in 15 s) and a probe line per query.
    bulk = lines - client["records_sent"]
    assert bulk % 100 == 0
    assert 700 <= bulk <= 800
    assert [s["name"] for s in ledger["steps"]] == ["sent", "accepted", "stored"]
    assert [s["count"] for s in ledger["steps"]] == [lines] * 3
    assert ledger["unit"] == "lines"
    assert ledger["balanced"] is True
    assert result["pipeline"]["loki_discarded"] == 0
    assert result["spec"]["push_rate"] == 3000
    assert result["bottleneck"]["attribution"]["verdict"] == "none"
