"""`loadgate matrix FILE`: experiments x scenarios x rates from a YAML file, each experiment on
a fresh local stack, resumable (done cells are skipped, and said so), with the comparison
printed and saved as `results/<matrix_id>/matrix.md`. Exit 0 when every cell ran (PASS or
FAIL: the verdicts are in the table), 2 on a bad file or when a cell could not be run.

The file: loadgate.capacity.matrix.file; the cells and resuming: plan; the runs:
driver; the table: loadgate.report.matrix_table."""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.status import Status
from rich.table import Table
from rich.text import Text

from loadgate import paths
from loadgate.capacity.matrix import file as matrix_file
from loadgate.capacity.matrix import plan as matrix_plan
from loadgate.capacity.matrix.driver import Hooks, MatrixRun
from loadgate.capacity.matrix.file import MatrixFile, MatrixFileError
from loadgate.capacity.matrix.plan import Prior, Step
from loadgate.capacity.matrix.record import (
    CellRecord,
    MatrixRecord,
    matrix_dir,
    read_cells,
    read_matrix,
    write_matrix,
)
from loadgate.contract.spec import is_run_id
from loadgate.records.fields import RecordError
from loadgate.report import matrix_content
from loadgate.report.matrix_table import comparison
from loadgate.runner.target import Progress

from ..stack import local, runlock, session
from ..stack.ports import Ports
from .common import (
    EXIT_BAD_INPUT,
    EXIT_OK,
    Subparsers,
    UsageError,
    base_port,
    console,
    error,
    notice,
    shielded,
    stdout,
)
from .run import progress_line
from .stack import free_stack_dir, prepare_stack

if TYPE_CHECKING:
    from .seams import Seams

_CELLS_PER_TABLE = 4  # columns of cells a terminal table shows side by side


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "matrix",
        help="run experiments x scenarios x rates from a YAML file; print the comparison",
        description="Run every cell of a matrix file (experiments: stack settings; scenarios: "
        "run parameters; rates: records/min, saturate or search), each experiment on a fresh "
        "local stack, and print and save the comparison (results/<matrix-id>/matrix.md). "
        "Run it again to resume: done cells are skipped.",
    )
    p.add_argument("file", type=Path, help="the matrix file (YAML; see docs/manual.md)")
    p.add_argument("--matrix-id", help="the matrix's id (default: the file's `matrix`)")
    p.add_argument(
        "--plan", action="store_true", help="print the cells and what would run; start nothing"
    )
    p.add_argument(
        "--base-port",
        type=base_port,
        help="move every port of the stacks to base, base+1, ... (default: standard ports)",
    )
    p.set_defaults(handler=_cmd_matrix)


def _read_file(path: Path) -> MatrixFile:
    try:
        text = path.read_text()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return matrix_file.parse(text, str(path), path.resolve().parent)
    except MatrixFileError as exc:
        raise UsageError(str(exc)) from None


def _matrix_id_of(args: argparse.Namespace, matrix: MatrixFile) -> MatrixFile:
    given = args.matrix_id
    if given is None:
        return matrix
    if not is_run_id(given) or len(given) > 24:
        raise UsageError(f"--matrix-id: must be {matrix_file.NAME_RULE}; got {given!r}")
    return replace(matrix, matrix_id=given)


def _steps_of(matrix: MatrixFile, folder: Path) -> list[Step]:
    """The plan: each cell run or skipped, from the records of earlier invocations."""
    try:
        cells = matrix_plan.cells(matrix)
        recorded = read_cells(folder)
        priors = {k: Prior(c.status, c.digest, c.attempt, c.ref) for k, c in recorded.items()}
        return matrix_plan.resume(cells, priors)
    except (matrix_plan.PlanError, RecordError) as exc:
        raise UsageError(f"{matrix.source}: {exc}") from None


def _resolve(
    matrix: MatrixFile, steps: list[Step], port: int | None, seams: Seams
) -> dict[str, local.StackChoice]:
    """Each experiment that has a cell to run, resolved before anything starts."""
    out: dict[str, local.StackChoice] = {}
    for exp in matrix.experiments:
        if not any(s.action == "run" and s.cell.experiment.name == exp.name for s in steps):
            continue
        try:
            out[exp.name] = prepare_stack(replace(exp.flags, base_port=port), seams.resolve_stack)
        except UsageError as exc:
            raise UsageError(
                f"{matrix.source}: experiment {exp.name} (line {exp.line}): {exc}"
            ) from None
    return out


def _print_plan(matrix: MatrixFile, steps: list[Step]) -> None:
    todo = sum(s.action == "run" for s in steps)
    console.print(Text(
        f"matrix {matrix.matrix_id}: {len(matrix.experiments)} experiments x "
        f"{len(matrix.scenarios)} scenarios x {len(matrix.loads)} loads = {len(steps)} cells; "
        f"{len(steps) - todo} done, {todo} to run"
    ), soft_wrap=True)  # fmt: skip
    for i, step in enumerate(steps, 1):
        c = step.cell
        what = "skip" if step.action == "skip" else "run "
        console.print(Text(f"  {i:>3}. {what} {c.cell_id} ({c.load.text(c.scenario)}): "
                           f"{step.reason}"), soft_wrap=True)  # fmt: skip


def _print_tables(content: matrix_content.MatrixContent, path: Path) -> None:
    """The comparison side by side (a column per cell, CELLS_PER_TABLE at a time); every
    column of the per-cell table is in matrix.md."""
    rows = list(content.rows)
    for start in range(0, len(rows), _CELLS_PER_TABLE):
        part = rows[start : start + _CELLS_PER_TABLE]
        header, lines = comparison(part)
        end = start + len(part)
        table = Table(title=Text(f"matrix {content.record.matrix_id}: cells {start + 1}-{end}"))
        for col in header:
            table.add_column(col, overflow="fold")
        for line in lines:
            table.add_row(*(Text(v) for v in line))
        stdout.print(table)
    stdout.print(Text(f"comparison: {path}"), soft_wrap=True)


class _Live:
    def __init__(self, status: Status, total: int):
        self.status, self.total, self.what = status, total, ""

    def on_experiment(self, exp: matrix_file.Experiment, todo: int) -> None:
        console.rule(Text(f"experiment {exp.name}: {todo} cell(s) on a fresh stack"))

    def on_cell(self, step: Step, position: int) -> None:
        c = step.cell
        self.what = f"cell {position}/{self.total} {c.cell_id} ({c.load.text(c.scenario)})"
        console.print(Text(f"{self.what}: running as {c.run_id(step.attempt)}"), soft_wrap=True)
        self.status.update(escape(self.what))

    def on_skip(self, step: Step, position: int) -> None:
        console.print(Text(f"cell {position}/{self.total} {step.cell.cell_id}: {step.reason}, "
                           "skipped"), style="dim", soft_wrap=True)  # fmt: skip

    def on_done(self, cell: CellRecord, position: int) -> None:
        text = cell.verdict if cell.status == "done" else f"FAILED TO RUN: {cell.error}"
        console.print(Text(f"cell {position}/{self.total} {cell.cell_id}: {text}"),
                      soft_wrap=True)  # fmt: skip

    def on_phase(self, text: str) -> None:
        self.status.update(escape(f"{self.what}: {text}"))
        console.log(Text(text))

    def on_progress(self, p: Progress) -> None:
        self.status.update(f"{escape(self.what)}: " + progress_line(p))


def _record(matrix: MatrixFile, steps: list[Step], stacks: dict[str, local.StackChoice],
            previous: MatrixRecord | None) -> MatrixRecord:  # fmt: skip
    now = time.time()
    experiments = [
        {"name": e.name, "description": e.description, "settings": e.settings(),
         "text": _settings_text(e)}
        for e in matrix.experiments
    ]  # fmt: skip
    scenarios = [
        {"name": s.name, "description": s.description, "params": s.spec.to_params()}
        for s in matrix.scenarios
    ]
    notes = list(previous.notes) if previous else []
    if previous is not None and previous.digest != matrix.digest:
        notes.append(f"{time.strftime('%Y-%m-%d %H:%M:%S')}: resumed from a changed file "
                     "(the done cells' definitions are unchanged)")  # fmt: skip
    del stacks
    return MatrixRecord(
        matrix.matrix_id, matrix.source, matrix.digest, matrix.description, experiments,
        scenarios, sorted({s.cell.load.text(s.cell.scenario) for s in steps}),
        [s.cell.cell_id for s in steps], previous.started_at if previous else now, now,
        (previous.invocations + 1) if previous else 1, notes,
    )  # fmt: skip


def _settings_text(exp: matrix_file.Experiment) -> str:
    parts = [f"{k}={v}" for k, v in exp.settings().items() if k not in ("charm_config", "hand")]
    parts += [f"charm-config {p}" for p in exp.flags.charm_config]
    parts += [f"hand {p}" for p in exp.flags.hand]
    return ", ".join(p.replace("\n", " ") for p in parts) or "charm defaults"


def _cmd_matrix(args: argparse.Namespace, seams: Seams) -> int:
    matrix = _matrix_id_of(args, _read_file(args.file))
    results_root = paths.results_dir()
    folder = matrix_dir(results_root, matrix.matrix_id)
    steps = _steps_of(matrix, folder)
    _print_plan(matrix, steps)
    if args.plan:
        return EXIT_OK
    try:
        previous = read_matrix(folder)
    except RecordError as exc:
        raise UsageError(str(exc)) from None
    todo = [s for s in steps if s.action == "run"]
    stacks = _resolve(matrix, steps, args.base_port, seams)
    parts = {"k6", *(p for what in stacks.values() for p in local.stack_parts(what))}
    if todo and seams.build_missing(tuple(sorted(parts)), command="matrix") != EXIT_OK:
        return EXIT_BAD_INPUT
    write_matrix(folder, _record(matrix, steps, stacks, previous))
    if todo:
        code = _run(matrix, steps, stacks, args.base_port, folder, results_root, seams)
        if code != EXIT_OK:
            return code
    content = matrix_content.load_folder(folder)
    assert content is not None
    path = matrix_content.write_table(content)
    _print_tables(content, path)
    failed = [r.cell_id for r in content.rows if r.status != "done"]
    if failed:
        notice(f"not done: {', '.join(failed)}; run the matrix again to resume them")
        return EXIT_BAD_INPUT
    return EXIT_OK


def _run(matrix: MatrixFile, steps: list[Step], stacks: dict[str, local.StackChoice],
         port: int | None, folder: Path, results_root: Path, seams: Seams) -> int:  # fmt: skip
    root = paths.stack_dir()
    try:
        with session.held_lock(root, "matrix", matrix.matrix_id, notice, shielded):
            if not free_stack_dir(root, seams.stack):
                return EXIT_BAD_INPUT
            started = time.monotonic()
            with console.status("starting") as status:
                live = _Live(status, len(steps))
                hooks = Hooks(live.on_experiment, live.on_cell, live.on_skip, live.on_done,
                              live.on_phase, live.on_progress)  # fmt: skip

                def after_cell() -> None:
                    content = matrix_content.load_folder(folder)
                    if content is not None:
                        matrix_content.write_table(content)

                MatrixRun(
                    matrix, stacks, root, Ports.from_base(port), folder, results_root, after_cell,
                    hooks, guard=shielded, stack=seams.stack, open_target=seams.open_target,
                    execute=seams.execute, run_search=seams.run_search,
                ).run(steps)  # fmt: skip
            console.print(f"wall time {time.monotonic() - started:.0f}s")
            return EXIT_OK
    except runlock.BusyError as exc:
        error("matrix", exc)
        return EXIT_BAD_INPUT
