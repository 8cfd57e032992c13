"""A run's figures table (report.tables.figures_table) read back as figure -> value, the text
`loadgate run` prints in each row."""

from __future__ import annotations

from loadgate.records.result import RunResult
from loadgate.report import tables


def figure_values(result: RunResult) -> dict[str, str]:
    """Each row of the run's figures table: its figure's name -> its value, as plain text."""
    table = tables.figures_table(result)
    figures = [str(cell) for cell in table.columns[0].cells]
    values = [str(cell) for cell in table.columns[1].cells]
    return dict(zip(figures, values, strict=True))
