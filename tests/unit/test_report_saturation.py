"""`loadgate report` with saturation (issue 17): each revision's saturation throughput (median,
spread, n) beside its capacity, and a sequential comparison of the default metrics, from the
fixtures in tests/data/report/saturation (made with the record classes: see
tests/data/report/regenerate_saturation.py) beside those of tests/data/report/results."""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path

import pytest

from loadgate import cli
from loadgate.capacity.compare.record import CompareRecord
from loadgate.records.result import RunResult
from loadgate.report import blocks, page
from loadgate.report.content import Report, build, load
from loadgate.report.runs import run_of

DATA = Path(__file__).parents[1] / "data" / "report"
FIXTURES, SATURATION = DATA / "results", DATA / "saturation"


@pytest.fixture
def results(tmp_path: Path) -> Path:
    root = tmp_path / "results"
    shutil.copytree(FIXTURES, root)
    shutil.copytree(SATURATION, root, dirs_exist_ok=True)
    return root


def sat_of(root: Path, run_id: str) -> float:
    return json.loads((root / run_id / "result.json").read_text())["saturation"]["accepted_per_min"]


def test_the_fixtures_are_shaped_as_the_records_write_them() -> None:
    for path in SATURATION.glob("*/result.json"):
        data = json.loads(path.read_text())
        assert RunResult.from_dict(data).to_dict() == data, path
        assert {"saturation", "cpu", "load_window"} <= set(data)
    text = (SATURATION / "compare-sat" / "compare.json").read_text()
    assert CompareRecord.from_json(text).to_json() == text


def test_a_run_gives_its_saturation_only_when_its_queue_filled(results: Path) -> None:
    data = json.loads((results / "compare-sat-b1-sat" / "result.json").read_text())
    assert run_of(RunResult.from_dict(data)).saturation_per_min == 238_400.0
    data["saturation"]["saturated"] = False  # its queue never filled, and it refused records:
    assert run_of(RunResult.from_dict(data)).saturation_per_min == 238_400.0  # its limit
    data["saturation"]["refused_per_min"] = 0.0  # the pipeline took all that was offered
    assert run_of(RunResult.from_dict(data)).saturation_per_min is None
    data["saturation"] = None
    assert run_of(RunResult.from_dict(data)).saturation_per_min is None
    pressure = json.loads((results / "compare-sat-b1-pr" / "result.json").read_text())
    assert pressure["saturation"]["saturated"] is False  # below the limit: a lower bound
    assert run_of(RunResult.from_dict(pressure)).saturation_per_min is None


def saturation_cells(report: Report, revision: str) -> dict[str, str]:
    """The page's saturation table, the row of `revision`: column -> cell."""
    table = next(
        b
        for b in page.document(report, {})
        if isinstance(b, blocks.Table) and b.header[2] == "saturation/min (median)"
    )
    row = next(r for r in table.rows if r[0] == revision)
    return dict(zip(table.header, row, strict=True))


def test_saturation_per_revision_beside_its_capacity(results: Path) -> None:
    report = build(load(results))
    rows = {r.revision: r for r in report.saturation}
    assert set(rows) == {"rev160", "rev221"}
    r160, r221 = rows["rev160"], rows["rev221"]
    assert r160.run_ids == ("compare-sat-b1-sat", "compare-sat-b2-sat")
    assert r221.run_ids == ("compare-sat-c1-sat", "compare-sat-c2-sat", "sat-rev221-solo")
    values = [sat_of(results, r) for r in r221.run_ids]
    assert r221.values == tuple(values)
    assert r221.median == statistics.median(values)
    assert r221.cv == pytest.approx(statistics.stdev(values) / statistics.fmean(values))
    assert r221.n == 3
    cells = saturation_cells(report, "rev221")
    assert cells == {
        "revision": "rev221",
        "scenario": "otlp-logs constant-arrival-rate",
        "saturation/min (median)": "201,300",
        "spread": "199,100 - 202,600 (1.7% of the median), CV 0.9%",
        "n": "3",
        "capacity (searches)": "200,000 ±4.3%",
    }
    assert tuple(saturation_cells(report, "rev160").values())[2:] == (
        "237,650", "236,900 - 238,400 (0.6% of the median), CV 0.4%", "2", "238,000 ±4.4%",
    )  # fmt: skip


def test_a_searched_revision_without_saturated_runs_says_unknown(results: Path) -> None:
    for run_id in ("compare-sat-b1-sat", "compare-sat-b2-sat"):
        shutil.rmtree(results / run_id)
    report = build(load(results))
    row = next(r for r in report.saturation if r.revision == "rev160")
    assert row.n == 0
    assert tuple(saturation_cells(report, "rev160").values())[2:] == (
        "unknown (no saturated run)", "-", "0", "238,000 ±4.4%",
    )  # fmt: skip


def test_the_page_shows_saturation_and_the_sequential_comparison(
    results: Path, tmp_path: Path
) -> None:
    report = build(load(results))
    md = blocks.markdown(page.document(report, {}))
    assert "## Saturation throughput and capacity per revision" in md
    assert "| rev221 | otlp-logs constant-arrival-rate | 201,300 |" in md
    assert "### compare-sat: otelcol rev160 vs otelcol rev221: regression" in md
    assert "2 pair(s) of 2-5, budget 10 min, stopped: budget, order ABAB" in md
    assert (
        "The pressure runs: pressure rate 166,880/min: 0.7 x the first saturation measured, "
        "238,400/min (compare-sat-b1-sat)."
    ) in md
    assert "| saturation_per_min (records/min, higher is better) | 238,400; 236,900 |" in md
    assert "at 98.75% | 5% | regression (at 2 pairs) |" in md  # a record of the first rule
    assert "too-noisy (needs about 3 pairs to settle)" in md
    assert "- pressure_p99_ms: 2 pair(s) run; pressure_p99_ms is decided from 3 pairs on" in md
    out = tmp_path / "out"
    assert cli.main(["report", "--results", str(results), "--out", str(out)]) == cli.EXIT_OK
    assert "compare-compare-sat.png" in {p.name for p in out.iterdir()}


def test_without_saturated_runs_the_page_says_so(tmp_path: Path) -> None:
    root = tmp_path / "results"
    shutil.copytree(FIXTURES, root)
    md = blocks.markdown(page.document(build(load(root)), {}))
    assert "No saturated runs recorded: saturation not measured" in md
