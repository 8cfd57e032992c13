"""`loadgate report`: the table of the result rows per revision (report.md) and plots; the
rows, Markdown and plots are loadgate.report."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.table import Table

from .. import paths, results
from ..report import COLUMNS, markdown, plot, row_of
from .common import EXIT_BAD_INPUT, EXIT_OK, Subparsers, console, stdout


def register(sub: Subparsers) -> None:
    p = sub.add_parser("report", help="table and plots of the result rows per revision")
    p.add_argument("--results", help="results folder (default ./results)")
    p.add_argument("--out", help="where to write report.md and PNGs (default results/)")
    p.set_defaults(handler=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    root = Path(args.results) if args.results else paths.results_dir()
    out = Path(args.out) if args.out else root
    rows = [row_of(d) for d in results.load_rows(root)]
    if not rows:
        console.print(f"loadgate report: no result.json under {root} (run `loadgate run` first)")
        return EXIT_BAD_INPUT
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.md").write_text(markdown(rows))
    pngs = plot(rows, out)
    table = Table(title=f"loadgate results ({len(rows)} runs; all columns in report.md)")
    shown = ("run", "labels", "accepted/min", "p99 ms", "errors", "ledger", "verdict")
    index = [COLUMNS.index(c) for c in shown]
    for col in shown:
        table.add_column(col)
    for r in rows:
        cells = r.cells()
        table.add_row(*(cells[i] for i in index))
    stdout.print(table)
    console.print(f"wrote {out / 'report.md'} and {', '.join(str(p) for p in pngs)}")
    return EXIT_OK
