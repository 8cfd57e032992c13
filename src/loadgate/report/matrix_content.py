"""A matrix's comparison from its folder: the matrix record, its cell records and the runs and
searches they point to, as rows (report.matrix_table), and `matrix.md` written beside them.
Used by `loadgate matrix` after every cell and by `loadgate report`'s matrix section."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from loadgate.capacity.matrix.record import (
    MATRIX_FILE,
    RUNS_DIR,
    TABLE_FILE,
    CellRecord,
    MatrixRecord,
    read_cells,
    read_matrix,
)
from loadgate.capacity.search.record import SearchRecord
from loadgate.records import files
from loadgate.records import result as results
from loadgate.records.fields import RecordError
from loadgate.records.result import RunResult, write_atomic
from loadgate.report.matrix_table import MatrixRow, markdown, rows_of


@dataclass(frozen=True)
class MatrixContent:
    folder: Path
    record: MatrixRecord
    cells: dict[str, CellRecord]
    rows: tuple[MatrixRow, ...]
    # Every run and search under its runs/ (earlier attempts' too): not the report's rows.
    run_ids: frozenset[str] = frozenset()


def load_folder(folder: Path) -> MatrixContent | None:
    """The matrix in `folder` (None: no matrix.json). RecordError names a bad record."""
    record = read_matrix(folder)
    if record is None:
        return None
    cells = read_cells(folder)
    runs = folder / RUNS_DIR
    found: dict[str, RunResult] = {}
    searches: dict[str, SearchRecord] = {}
    for cell in cells.values():
        if cell.status != "done":
            continue
        if cell.kind == "search":
            path = runs / cell.ref / "search.json"
            if path.is_file():
                searches[cell.ref] = files.read(SearchRecord, path)
        else:
            path = results.run_dir(runs, cell.ref) / results.RESULT_FILE
            if path.is_file():
                found[cell.ref] = results.read(path)
    rows = tuple(rows_of(record, cells, found, searches))
    under = {p.name for p in runs.iterdir() if p.is_dir()} if runs.is_dir() else set[str]()
    refs = frozenset(under | {c.ref for c in cells.values()})
    return MatrixContent(folder, record, cells, rows, refs)


def write_table(content: MatrixContent) -> Path:
    """matrix.md beside matrix.json."""
    return write_atomic(content.folder / TABLE_FILE, markdown(content.record, list(content.rows)))


def load_all(root: Path) -> list[MatrixContent]:
    """Every matrix under `root` (a matrix.json at any depth), in path order."""
    out: list[MatrixContent] = []
    for path in sorted(root.rglob(MATRIX_FILE)):
        try:
            content = load_folder(path.parent)
        except RecordError as exc:
            raise RecordError(f"{path.relative_to(root)}: {exc}") from None
        if content is not None:
            out.append(content)
    return out
