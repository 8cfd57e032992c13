"""`loadgate report`: reading records (result.json, series.json, search.json, compare.json),
rows per revision and scenario, knee curves, capacities, the page and the plots, from the
fixtures in tests/data/report/results (real runs trimmed; searches and a comparison made with
the record classes: see tests/data/report/regenerate.py)."""

from __future__ import annotations

import json
import shutil
import statistics
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from loadgate import cli
from loadgate.capacity.search.record import SearchRecord
from loadgate.capacity.search.rule import SATURATION, SearchPlan, Step, StepOutcome, run_search
from loadgate.measure import timeseries as ts
from loadgate.records.result import RunResult
from loadgate.report import blocks, naming, page, plots
from loadgate.report.capacity import Capacity, KneeCurve, KneePoint, capacity_of, knee_curve
from loadgate.report.content import ReportError, build, load
from loadgate.report.rows import Figure, Row, rows_of, search_step_runs
from loadgate.report.runs import run_of

FIXTURES = Path(__file__).parents[1] / "data" / "report" / "results"
REV160 = "20261122T225748Z-107dd9"
REV221_FAIL = "20261122T225612Z-087f56"
REV221_PASS = "20261122T231132Z-31c416"
STEP_RUN = "20261123T000000Z-step00"
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def results(tmp_path: Path) -> Path:
    root = tmp_path / "results"
    shutil.copytree(FIXTURES, root)
    return root


def doc(root: Path, run_id: str) -> dict[str, Any]:
    return json.loads((root / run_id / "result.json").read_text())


def texts(fig: Any) -> list[str]:
    out = [t.get_text() for ax in fig.axes for t in ax.texts]
    out += [ax.get_title() for ax in fig.axes]
    from matplotlib import pyplot  # after plots chose its backend (Agg)

    pyplot.close(fig)
    return out


# ---- reading -------------------------------------------------------------------------------


def test_every_record_kind_is_read(results: Path) -> None:
    records = load(results)
    assert [r.run_id for r in records.runs] == [REV221_FAIL, REV160, REV221_PASS, STEP_RUN]
    assert set(records.series) == {REV221_PASS}
    assert [s.search_id for s in records.searches] == ["search-rev160", "search-rev221"]
    assert [c.compare_id for c in records.compares] == ["compare-queue"]
    assert records.skipped == ()


def test_run_figures_and_how_they_are_computed(results: Path) -> None:
    data = doc(results, REV221_PASS)
    run = run_of(RunResult.from_dict(data))
    client, pipeline = data["client"], data["pipeline"]
    counts = {s["name"]: s["count"] for s in data["ledger"]["steps"]}
    minutes = client["duration_s"] / 60
    assert run.revision == "rev221"
    assert run.scenario == "otlp-logs constant-arrival-rate"
    assert run.offered_per_min == 60000
    assert run.accepted_per_min == pytest.approx(counts["accepted"] / minutes)
    assert run.exported_per_min == pytest.approx(counts["exported"] / minutes)
    assert run.stored_per_min == pytest.approx(counts["stored"] / minutes)
    load_s = data["ended_at"] - data["started_at"]
    cpu = pipeline["collector_cpu_mean"] * load_s / client["records_accepted"] * 1000
    assert run.cpu_s_per_1000 == pytest.approx(cpu)
    assert 0.1 < cpu < 1  # CPU seconds per 1,000 records: a plausible figure, not a rate
    rss = pipeline["collector_rss_max_mib"] / (client["records_per_minute"] / 1000)
    assert run.rss_mib_per_1000_per_min == pytest.approx(rss)
    assert run.p99_ms == client["p99_ms"]


def test_figures_not_measured_are_unknown_never_zero(results: Path) -> None:
    data = doc(results, REV160)
    data["pipeline"] = None
    data["ledger"]["steps"][3]["count"] = None  # stored: Loki read-back failed
    del data["client"]["error_rate"]
    run = run_of(RunResult.from_dict(data))
    assert run.cpu_s_per_1000 is None
    assert run.rss_mib_per_1000_per_min is None
    assert run.stored_per_min is None
    assert run.error_rate is None
    row = rows_of([run], [])[0]
    cells = dict(zip(page.ROW_COLUMNS, page.row_cells(row), strict=True))
    for col in ("CPU s / 1k rec", "RSS MiB / 1k rec/min", "stored/min", "errors"):
        assert cells[col] == "unknown"


def test_revision_names_the_label_the_charm_revision_its_options_and_profile() -> None:
    charms = {"otelcol": {"source": {"revisions": [160, 221], "commit": "2a77867abc"}}}
    assert naming.revision_of(labels={"revision": "69"}) == "rev69"
    assert naming.revision_of(labels={"revision": "candidate"}) == "candidate"
    assert naming.revision_of(environment={"charms": charms}) == "rev160/221"
    charms["otelcol"]["source"]["ref"] = "rev160"
    assert naming.revision_of(environment={"charms": charms}) == "rev160"
    del charms["otelcol"]["source"]["ref"]
    charms["otelcol"]["source"]["revisions"] = []
    assert naming.revision_of(environment={"charms": charms}) == "2a77867"
    with_options = {
        "preset": "batch",
        "otelcol": {"source": {"revisions": [221]}, "options": {"queue_size": 5000}},
    }
    assert naming.revision_of(environment={"charms": with_options}) == (
        "rev221 (profile=batch, queue_size=5000)"
    )
    split = {"generator": [0], "pipeline": [1], "text": "..."}
    assert naming.revision_of(environment={"charms": with_options, "cpu_split": split}) == (
        "rev221 (profile=batch, queue_size=5000, cpu split 1:1)"
    )
    assert naming.revision_of(environment={"charms": charms, "cpu_split": None}) == "2a77867"
    assert naming.revision_of(environment={"profile": {"name": "hand-nop"}}) == "hand-nop"
    assert naming.revision_of() == "-"


# ---- errors --------------------------------------------------------------------------------


def test_a_missing_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="no such folder"):
        load(tmp_path / "nope")
    (tmp_path / "file").write_text("")
    with pytest.raises(ReportError, match="not a folder"):
        load(tmp_path / "file")


def test_unreadable_records_name_the_file_and_the_field(results: Path) -> None:
    path = results / REV160 / "result.json"
    data = json.loads(path.read_text())
    data["client"]["p99_ms"] = "fast"
    path.write_text(json.dumps(data))
    with pytest.raises(ReportError) as err:
        load(results)
    assert str(err.value).startswith(f"{REV160}/result.json: result.client.p99_ms: ")
    path.write_text("{not json")
    with pytest.raises(ReportError, match=f"{REV160}/result.json: not JSON"):
        load(results)


def test_a_bad_search_or_series_field_is_named(results: Path) -> None:
    path = results / "search-rev221" / "search.json"
    data = json.loads(path.read_text())
    data["steps"][2]["outcome"]["p99_ms"] = "slow"
    path.write_text(json.dumps(data))
    with pytest.raises(ReportError, match=r"search-rev221/search.json: .*steps\[2\]"):
        load(results)
    shutil.copy(FIXTURES / "search-rev221" / "search.json", path)
    series = results / REV221_PASS / "series.json"
    data = json.loads(series.read_text())
    del data["load_started"]
    series.write_text(json.dumps(data))
    with pytest.raises(ReportError, match=f"{REV221_PASS}/series.json: .*load_started"):
        load(results)


def test_records_of_an_unknown_format_are_skipped_with_a_note(results: Path) -> None:
    (results / "old").mkdir()
    (results / "old" / "result.json").write_text(json.dumps({"format": "loadgate-result/0"}))
    (results / "future" / "x").mkdir(parents=True)
    (results / "future" / "search.json").write_text(json.dumps({"format": "loadgate-search/2"}))
    records = load(results)
    assert records.skipped == (
        "old/result.json: format 'loadgate-result/0' is not 'loadgate-result/1': skipped",
        "future/search.json: format 'loadgate-search/2' is not 'loadgate-search/1': skipped",
    )
    document = page.document(build(records), {})
    assert "old/result.json: format" in blocks.markdown(document)
    assert len(records.runs) == 4


# ---- rows, curves, capacities --------------------------------------------------------------


def test_one_row_per_revision_and_scenario_median_with_n(results: Path) -> None:
    report = build(load(results))
    rows = {(r.revision, r.offered_per_min): r for r in report.rows}
    assert set(rows) == {("rev160", 60000), ("rev221", 60000)}
    r221 = rows[("rev221", 60000)]
    # The search's step run (rate 100,000) is in the knee curve, not a row.
    assert report.step_runs == frozenset({STEP_RUN})
    assert r221.run_ids == (REV221_FAIL, REV221_PASS)
    p99s = [doc(results, r)["client"]["p99_ms"] for r in r221.run_ids]
    assert r221.p99_ms == Figure(statistics.median(p99s), 2, 2)
    assert r221.verdict == "1 FAIL / 1 PASS"
    assert r221.latest_run == REV221_PASS
    assert rows[("rev160", 60000)].verdict == "PASS"
    # Capacity from the searches of that revision and scenario.
    assert r221.capacity_text == "200,000 ±4.3%"
    assert rows[("rev160", 60000)].capacity_text == "238,000 ±4.4%"
    cells = dict(zip(page.ROW_COLUMNS, page.row_cells(r221), strict=True))
    assert cells["runs"] == "2"
    assert cells["verdict"] == "1 FAIL / 1 PASS"


def test_partly_measured_figures_say_how_many_runs_measured_them() -> None:
    assert Figure.of([1.0, None, 3.0]) == Figure(2.0, 2, 3)
    assert Figure.of([None, None]) == Figure(None, 0, 2)
    none = Figure(None, 0, 0)
    row = Row(
        "rev1", "otlp-logs", 60_000, None, ("a", "b", "c"), "c", (), none, none, none,
        p99_ms=Figure(2.0, 2, 3), error_rate=Figure(None, 0, 2), cpu_s_per_1000=none,
        rss_mib_per_1000_per_min=none, verdict="PASS",
    )  # fmt: skip
    cells = dict(zip(page.ROW_COLUMNS, page.row_cells(row), strict=True))
    assert cells["p99 ms"] == "2.00 (2/3)"  # measured by 2 of the 3 runs
    assert cells["errors"] == "unknown"  # measured by none of them


def test_a_searched_revision_without_runs_gets_a_capacity_row(results: Path) -> None:
    records = load(results)
    runs = [r for r in records.runs if not r.revision.startswith("rev160")]
    by_id = {r.run_id: r for r in runs}
    caps = [capacity_of(s, by_id) for s in records.searches]
    rows = rows_of(runs, caps, search_step_runs(records.searches))
    alone = next(r for r in rows if r.revision == "rev160")
    assert alone.run_ids == ()
    assert alone.capacity_text == "238,000 ±4.4%"
    assert page.row_cells(alone)[5:8] == ("-", "-", "-")


def test_capacity_text_for_each_search_status() -> None:
    def cap(status: str, c: int | None, f: int | None, p: float | None) -> Capacity:
        return Capacity("s", "rev1", "sc", status, c, f, p, True, None)

    assert cap("found", 200_000, 218_000, 0.043).text == "200,000 ±4.3%"
    assert cap("at-least-max", 1_000_000, None, None).text == ">= 1,000,000"
    assert cap("below-min", None, 10_000, None).text == "< 10,000"
    assert cap("out-of-budget", None, None, None).text == "unknown (out-of-budget)"
    assert cap("out-of-budget", 150_000, 300_000, 0.33).text == "150,000 ±33.0% (out-of-budget)"


def test_knee_curves_hold_every_step_sorted_by_rate(results: Path) -> None:
    report = build(load(results))
    curve = next(c for c in report.curves if c.label == "rev221 [search-rev221]")
    assert [p.rate for p in curve.points] == sorted(p.rate for p in curve.points)
    assert len(curve.points) == 8
    assert curve.capacity_per_min == 200_000
    assert any(not p.passed for p in curve.points)
    neck = next(c.bottleneck for c in report.capacities if c.search_id == "search-rev221")
    assert neck is not None
    assert neck.startswith("collector: ")


# ---- plots ---------------------------------------------------------------------------------


def test_plots_render_pngs_from_the_recorded_fixtures(results: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert cli.main(["report", "--results", str(results), "--out", str(out)]) == cli.EXIT_OK
    files = list(out.iterdir())
    names = sorted(p.name for p in files)
    assert names == sorted(
        [
            "report.md", "report.html", "capacity.png", "knee.png",
            f"series-{REV221_PASS}.png", "compare-compare-queue.png",
        ]
    )  # fmt: skip
    for path in files:
        assert path.is_file()
        if path.suffix == ".png":
            assert path.read_bytes()[:8] == PNG
            assert path.stat().st_size > 5000


def test_plots_with_no_data_say_not_measured() -> None:
    assert any("knee curve not measured" in t for t in texts(plots.knee_figure([])))
    empty = KneeCurve("rev1 [s]", (KneePoint(1000, None, None, False, "probe"),), None)
    assert any("not measured" in t for t in texts(plots.knee_figure([empty])))
    assert any("capacity not measured" in t for t in texts(plots.capacity_figure([])))
    nothing = Capacity("s", "rev1", "sc", "out-of-budget", None, None, None, False, None)
    said = texts(plots.capacity_figure([nothing]))
    assert any("no search converged on a capacity" in t for t in said)


def test_a_run_with_a_missing_series_says_so_and_draws_the_others(results: Path) -> None:
    data = load(results).series[REV221_PASS]
    cpu = data.series[ts.CPU]
    gone = ts.TimeSeries(ts.CPU, cpu.query, cpu.unit, missing="Prometheus query failed: down")
    data = ts.RunSeries(
        data.run_id, data.start, data.end, data.step_s, data.load_started, data.load_ended,
        {**data.series, ts.CPU: gone},
    )  # fmt: skip
    fig = plots.run_series_figure(data, "t")
    drawn = [len(ax.lines) for ax in fig.axes]
    said = texts(fig)
    assert any("collector CPU, cores: not measured (Prometheus query failed" in t for t in said)
    assert drawn == [0, 1, 1]


def test_knee_figure_draws_each_search(results: Path) -> None:
    report = build(load(results))
    fig = plots.knee_figure(report.curves)
    lines = sum(len(ax.lines) for ax in fig.axes)
    said = texts(fig)
    assert not any("not measured" in t for t in said)
    assert lines >= 2 * len(report.curves)


# ---- the page ------------------------------------------------------------------------------


def test_markdown_and_html_carry_the_same_content_escaped(results: Path) -> None:
    path = results / REV160 / "result.json"
    data = json.loads(path.read_text())
    data["labels"] = data["spec"]["labels"] = {"revision": "<b>x</b>&"}
    path.write_text(json.dumps(data))
    report = build(load(results))
    document = page.document(report, {"knee": "knee.png", "capacity": "capacity.png"})
    md, html = blocks.markdown(document), blocks.html_page(document)
    assert "<b>x</b>&" not in html
    assert "&lt;b&gt;x&lt;/b&gt;&amp;" in html
    for b in document:
        if isinstance(b, blocks.Table):
            for row in b.rows:
                for cell in row:
                    assert cell.replace("|", "\\|") in md
    assert '<img src="knee.png" alt="knee curve">' in html
    assert "![knee curve](knee.png)" in md
    assert "regression" in md  # the comparison's decisions
    assert "compare-queue: rev221 queue_size=1000 vs rev221 queue_size=5000" in md


def test_a_row_without_series_says_not_measured(results: Path) -> None:
    (results / REV221_PASS / "series.json").unlink()
    report = build(load(results))
    md = blocks.markdown(page.document(report, {}))
    assert f"run {REV221_PASS}: not measured (the run has no series.json)" in md


# ---- the command ---------------------------------------------------------------------------


def test_report_command_writes_the_page(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "page"
    assert cli.main(["report", "--results", str(results), "--out", str(out)]) == cli.EXIT_OK
    for name in ("report.md", "report.html", "knee.png", "capacity.png"):
        assert (out / name).is_file()
    assert "rev221" in capsys.readouterr().out
    # report.html is one self-contained file: every PNG inlined.
    html = (out / "report.html").read_text()
    assert html.count('<img src="data:image/png;base64,') == len(list(out.glob("*.png")))


def test_report_without_flags_uses_the_results_dir(
    results: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(results))
    assert cli.main(["report"]) == cli.EXIT_OK
    assert (results / "report" / "report.md").is_file()
    # A second report reads the same records (its own folder holds no record).
    assert cli.main(["report"]) == cli.EXIT_OK


def test_report_refuses_missing_empty_or_broken_results(
    tmp_path: Path, results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["report", "--results", str(tmp_path / "none")]) == cli.EXIT_BAD_INPUT
    assert "no such folder" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert cli.main(["report", "--results", str(tmp_path / "empty")]) == cli.EXIT_BAD_INPUT
    assert "no result.json" in capsys.readouterr().err
    (results / "compare-queue" / "compare.json").write_text('{"format": "loadgate-compare/1"}')
    assert cli.main(["report", "--results", str(results)]) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "compare-queue/compare.json: compare.order: missing" in err


def test_records_nested_in_a_search_folder_are_read(results: Path) -> None:
    """A search may keep its step runs inside its own folder (search-id/runs/run-id/)."""
    nested = results / "search-rev221" / "runs" / STEP_RUN
    nested.parent.mkdir(parents=True)
    shutil.move(results / STEP_RUN, nested)
    report = build(load(results))
    assert STEP_RUN in {r.run_id for r in report.records.runs}
    assert report.step_runs == frozenset({STEP_RUN})
    assert all(STEP_RUN not in r.run_ids for r in report.rows)


def test_an_out_folder_that_cannot_be_written_is_refused(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "file").write_text("")
    code = cli.main(["report", "--results", str(results), "--out", str(tmp_path / "file")])
    assert code == cli.EXIT_BAD_INPUT
    assert f"--out {tmp_path / 'file'}: cannot write there" in capsys.readouterr().err


def test_a_comparison_side_without_values_says_not_measured(results: Path) -> None:
    record = load(results).compares[0]
    d = record.decisions[1]
    empty = replace(d, candidate=(None,) * len(d.candidate), candidate_mean=None)
    fig = plots.comparison_figure(replace(record, decisions=(record.decisions[0], empty)))
    assert "not measured" in texts(fig)


def test_a_row_takes_its_capacity_from_converged_searches_only() -> None:
    def cap(status: str, c: int | None, p: float | None = 0.04) -> Capacity:
        return Capacity("s", "rev1", "sc", status, c, None, p, status == "found", None)

    def row(*caps: Capacity) -> Row:
        return rows_of([], list(caps))[0]

    found = [cap("found", 90_000), cap("found", 100_000), cap("found", 95_000, 0.05)]
    assert row(*found).capacity_text == "95,000 ±5.0% (median, n=3/3)"
    assert row(*found, cap("in-progress", 70_000)).capacity_text == (
        "95,000 ±5.0% (median, n=3/3) (+1 not converged)"
    )
    assert row(found[0], cap("out-of-budget", 70_000, 0.2)).capacity_text == (
        "90,000 ±4.0% (+1 not converged)"
    )
    assert row(cap("in-progress", 70_000, None)).capacity_text == "70,000 (in-progress)"
    two = row(cap("in-progress", 70_000), cap("out-of-budget", None))
    assert two.capacity_text == "unknown (2 not converged)"


def test_a_saturate_search_shows_its_saturation_step_on_the_knee_curve() -> None:
    """The saturation step is a point at its rate that failed (the pipeline did not take all
    offered), with its p99 and error rate; the capacity is the holds'."""

    def execute(step: Step) -> StepOutcome:
        if step.phase == SATURATION:
            return StepOutcome(
                step.rate, False, p99_ms=250.0, error_rate=0.3, saturated=True,
                throughput_per_min=210_000.0, queue_records=5000.0,
            )  # fmt: skip
        passed = step.rate <= 210_000
        return StepOutcome(step.rate, passed, p99_ms=20.0, error_rate=0.0 if passed else 0.03)

    record = SearchRecord.build(
        "sat", {"labels": {"revision": "9"}}, run_search(SearchPlan(), execute)
    )
    curve = knee_curve(record, {})
    assert [(p.rate, p.phase, p.passed) for p in curve.points] == [
        (200_000, "hold", True),
        (221_000, "hold", False),
        (300_000, "saturation", False),
    ]
    assert curve.capacity_per_min == 200_000
    assert capacity_of(record, {}).text == "200,000 (178,000-249,000 at 90 %)"
    assert capacity_of(record, {}).interval_text == (
        "between 178,000 and 249,000 with 90 % confidence"
    )
    assert sum(len(ax.lines) for ax in plots.knee_figure([curve]).axes) >= 2


def test_an_unconverged_search_marks_no_knee(results: Path) -> None:
    records = load(results)
    search = records.searches[1]
    running = replace(search, result=replace(search.result, status="in-progress"))
    curve = knee_curve(running, {r.run_id: r for r in records.runs})
    assert curve.capacity_per_min is None
    assert curve.label == "rev221 [search-rev221] (in-progress)"
    assert knee_curve(search, {}).capacity_per_min == 200_000
