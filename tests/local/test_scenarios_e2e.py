"""`loadgate run --scenario otlp-metrics|loki-push` through the real stack (charm-rendered, with
the metrics signal): a short PASS run of each, its ledger balanced in its unit, its gates named
for it, and the figures read from its own counters and store."""

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

BASE_PORT = 25960


@pytest.fixture(scope="module")
def metrics_stack(
    built_bin_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[local.StackInfo]:
    flags = choice.StackFlags(signals=(signals.LOGS, signals.METRICS))
    prepared = choice.request(flags).prepare()
    assert isinstance(prepared, PreparedCharms)
    root = tmp_path_factory.mktemp("metrics-stack")
    info = local.up(prepared, Ports.from_base(BASE_PORT), root=root, bin_dir=built_bin_dir)
    try:
        yield info
    finally:
        local.down(root)


@pytest.fixture
def results(
    metrics_stack: local.StackInfo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    monkeypatch.setenv("LOADGATE_STACK_DIR", str(metrics_stack.root))
    folder = tmp_path / "results"
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(folder))
    return folder


def run(argv: list[str], results: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code = cli.main(["run", "--duration", "15s", "--rate", "12000", "--signals", "logs,metrics",
                     "--base-port", str(BASE_PORT), *argv])  # fmt: skip
    out = capsys.readouterr().out
    assert code == cli.EXIT_OK, out
    (path,) = results.glob("*/result.json")
    return json.loads(path.read_text())


def test_otlp_metrics_passes_with_its_ledger_balanced_in_data_points(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run(["--scenario", "otlp-metrics", "--labels", "revision=test"], results, capsys)
    assert result["verdict"] == "PASS"
    assert [g["name"] for g in result["gates"]] == [
        "error_rate", "p99_ms", "points_per_minute", "lost_points",
    ]  # fmt: skip
    client, pipeline, ledger = result["client"], result["pipeline"], result["ledger"]
    sent = client["records_sent"]
    assert sent > 0
    assert sent % 50 == 0  # 10 series x 5 points a request
    assert sent == client["records_accepted"] == pipeline["collector_accepted"]
    # The remote-write exporter also sent the collector's own scrape: taken out.
    assert pipeline["collector_exported"] == sent + pipeline["collector_scraped"]
    assert result["delivered"]["records"] == sent
    assert "Prometheus PromQL" in result["delivered"]["source"]
    assert ledger["unit"] == "data points"
    assert ledger["balanced"] is True
    assert [s["count"] for s in ledger["steps"]] == [sent] * 4
    assert pipeline["queue_capacity"] == 1000  # the remote-write queue, the charm's queue_size
    assert result["bottleneck"]["attribution"]["verdict"] == "none"


def test_loki_push_passes_with_its_ledger_balanced_in_lines(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run(["--scenario", "loki-push", "--loki-streams", "40"], results, capsys)
    assert result["verdict"] == "PASS"
    assert [g["name"] for g in result["gates"]][-2:] == ["lines_per_minute", "lost_lines"]
    client, ledger = result["client"], result["ledger"]
    sent = client["records_sent"]
    assert sent > 0
    assert sent % 100 == 0  # 10 streams x 10 lines a request
    assert [s["name"] for s in ledger["steps"]] == ["sent", "accepted", "stored"]
    assert [s["count"] for s in ledger["steps"]] == [sent] * 3
    assert ledger["unit"] == "lines"
    assert ledger["balanced"] is True
    assert result["pipeline"]["collector_accepted"] is None  # not on the load's path
    assert result["pipeline"]["loki_discarded"] == 0
    assert result["spec"]["loki_streams"] == 40
    assert result["bottleneck"]["attribution"]["verdict"] == "none"
