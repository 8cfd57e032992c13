"""A matrix's records under `results/<matrix_id>/`: `matrix.json` (the file it ran, its
experiments, scenarios and loads, the cells in order), one `cells/<cell_id>.json` per cell
(what it ran, its status and the run or search behind it), the runs under `runs/` and the
comparison as `matrix.md`. A cell's record is written when it starts (`running`) and when it
ends (`done`, or `failed` with why): an interrupted matrix leaves `running` cells, which the
next invocation runs again. No I/O here but `write_*` and `read_*`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from loadgate.records import fields as f
from loadgate.records import files
from loadgate.records.result import write_atomic

_MATRIX_FORMAT = "loadgate-matrix/1"
MATRIX_FILE = "matrix.json"
_CELL_FORMAT = "loadgate-matrix-cell/1"
_CELLS_DIR = "cells"
RUNS_DIR = "runs"
TABLE_FILE = "matrix.md"


@dataclass(frozen=True)
class CellRecord:
    """`cells/<cell_id>.json`."""

    FORMAT: ClassVar[str] = _CELL_FORMAT
    FILE: ClassVar[str] = "<cell_id>.json"  # under cells/, one per cell (read by read_cells)

    matrix_id: str
    cell_id: str
    experiment: str
    scenario: str
    load: str  # the load's key: r60000, sat, search, own
    load_text: str  # for people: 60,000/min, saturate, search, 50 VUs
    kind: str  # run, saturate, search
    digest: str  # of `definition`
    definition: dict[str, Any]
    status: str  # running, done, failed
    attempt: int
    ref: str  # the run id (a search's id for search cells)
    started_at: float
    ended_at: float | None = None
    error: str | None = None
    verdict: str | None = None  # the run's (PASS/FAIL) or the search's status

    def to_dict(self) -> dict[str, Any]:
        return {"format": _CELL_FORMAT, **asdict(self)}

    @classmethod
    def from_dict(cls, data: object, where: str = "cell") -> CellRecord:
        return f.read(cls, data, where)


@dataclass(frozen=True)
class MatrixRecord:
    """`matrix.json`: what the matrix is (not its figures: those are in the cells' runs)."""

    FORMAT: ClassVar[str] = _MATRIX_FORMAT
    FILE: ClassVar[str] = MATRIX_FILE

    matrix_id: str
    source: str  # the matrix file's path
    digest: str  # sha256 of its text when last run
    description: str
    experiments: list[dict[str, Any]]  # name, description, settings, stack (as resolved)
    scenarios: list[dict[str, Any]]  # name, description, params
    loads: list[str]
    cells: list[str]  # cell ids, in running order
    started_at: float
    updated_at: float
    invocations: int = 1  # how many times `loadgate matrix` ran it (resumes + 1)
    notes: list[str] = field(default_factory=list[str])

    def to_dict(self) -> dict[str, Any]:
        return {"format": _MATRIX_FORMAT, **asdict(self)}

    @classmethod
    def from_dict(cls, data: object, where: str = "matrix") -> MatrixRecord:
        return f.read(cls, data, where)


def matrix_dir(results_root: Path, matrix_id: str) -> Path:
    return results_root / matrix_id


def runs_root(results_root: Path, matrix_id: str) -> Path:
    return matrix_dir(results_root, matrix_id) / RUNS_DIR


def _cell_path(folder: Path, cell_id: str) -> Path:
    return folder / _CELLS_DIR / f"{cell_id}.json"


def write_cell(folder: Path, cell: CellRecord) -> Path:
    path = _cell_path(folder, cell.cell_id)
    return write_atomic(path, json.dumps(cell.to_dict(), indent=2) + "\n")


def write_matrix(folder: Path, record: MatrixRecord) -> Path:
    return write_atomic(folder / MATRIX_FILE, json.dumps(record.to_dict(), indent=2) + "\n")


def read_matrix(folder: Path) -> MatrixRecord | None:
    """The matrix.json in `folder` (None: none yet); RecordError names a bad field."""
    path = folder / MATRIX_FILE
    if not path.is_file():
        return None
    return files.read(MatrixRecord, path)


def read_cells(folder: Path) -> dict[str, CellRecord]:
    """Every cell record in `folder/cells`, by cell id; RecordError names a bad one."""
    out: dict[str, CellRecord] = {}
    for path in sorted((folder / _CELLS_DIR).glob("*.json")):
        cell = files.read(CellRecord, path)
        out[cell.cell_id] = cell
    return out
