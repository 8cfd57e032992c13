"""`loadgate report`: report.md, report.html and PNGs from every run, search and comparison under
the results folder. Reading and aggregation are loadgate.report.content, the page
loadgate.report.page, the plots loadgate.report.plots."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

from loadgate.report import blocks, page, plots
from loadgate.report import content as rep

from .. import paths
from .common import EXIT_BAD_INPUT, EXIT_OK, Subparsers, console, error, notice, stdout

if TYPE_CHECKING:
    from .seams import Seams

_REPORT_DIR = "report"


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "report",
        help="page (Markdown, HTML, PNGs) of the runs, searches and comparisons per revision",
    )
    p.add_argument("--results", help="results folder (default $LOADGATE_RESULTS_DIR or ./results)")
    p.add_argument(
        "--out",
        help=f"where to write report.md, report.html and PNGs (default RESULTS/{_REPORT_DIR})",
    )
    p.set_defaults(handler=_cmd_report)


def _write_report(report: rep.Report, out: Path) -> list[Path]:
    """Every PNG, report.md and report.html into `out`; returns the files written."""
    out.mkdir(parents=True, exist_ok=True)
    images: dict[str, str] = {}
    written: list[Path] = []

    def keep(key: str, path: Path) -> None:
        images[key] = path.name
        written.append(path)

    keep("capacity", plots.capacity(report.capacities, out / "capacity.png"))
    keep("knee", plots.knee(report.curves, out / "knee.png"))
    for row in report.rows:
        run_id = row.latest_run
        if run_id is None or run_id not in report.series:
            continue
        name = f"series-{plots.safe_name(run_id)}.png"
        title = f"{row.revision}, {row.scenario}, {row.load}: run {run_id}"
        keep(f"series:{run_id}", plots.run_series(report.series[run_id], title, out / name))
    for c in report.records.compares:
        name = f"compare-{plots.safe_name(c.compare_id)}.png"
        keep(f"compare:{c.compare_id}", plots.comparison(c, out / name))
    for m in report.records.matrices:
        name = f"matrix-{plots.safe_name(m.record.matrix_id)}.png"
        keep(f"matrix:{m.record.matrix_id}", plots.matrix(m, out / name))
    document = page.document(report, images)
    md, html = out / "report.md", out / "report.html"
    md.write_text(blocks.markdown(document))
    embedded = {p.name: p.read_bytes() for p in written}
    html.write_text(blocks.html_page(document, embedded=embedded))
    return [md, html, *written]


def _cmd_report(args: argparse.Namespace, seams: Seams) -> int:
    root = Path(args.results) if args.results else paths.results_dir()
    out = Path(args.out) if args.out else root / _REPORT_DIR
    try:
        records = rep.load(root)
    except rep.ReportError as exc:
        error("report", exc)
        return EXIT_BAD_INPUT
    for note in records.skipped:
        notice(f"loadgate report: {note}")
    if records.empty:
        error(
            "report",
            f"no result.json, search.json, compare.json or matrix.json under {root} (run "
            "`loadgate run` first)",
        )
        return EXIT_BAD_INPUT
    report = rep.build(records)
    try:
        files = _write_report(report, out)
    except OSError as exc:
        error("report", f"--out {out}: cannot write there: {exc.strerror or exc}")
        return EXIT_BAD_INPUT
    table = Table(title=f"loadgate report ({len(records.runs)} runs; every column in report.md)")
    shown = ("revision", "scenario", "offered", "runs", "capacity", "p99 ms", "errors", "verdict")
    index = [page.ROW_COLUMNS.index(c) for c in shown]
    for col in shown:
        table.add_column(col)
    for r in report.rows:
        cells = page.row_cells(r)
        table.add_row(*(cells[i] for i in index))
    stdout.print(table)
    console.print(Text("wrote " + ", ".join(str(p) for p in files)), soft_wrap=True)
    return EXIT_OK
