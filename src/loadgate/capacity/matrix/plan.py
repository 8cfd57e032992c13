"""A matrix's cells and what to do with each, pure: every experiment x scenario x load is a
cell (experiment by experiment, in the file's order: one fresh stack per experiment), with
its run id, its run's spec and a digest of its definition; `resume` decides, from the cell
records an earlier invocation left, which cells are done (skipped) and which to run (again).

A cell is done when its record says so (its run finished, PASS or FAIL) and its definition
is unchanged; a cell that failed to run (its stack did not start, k6 or Prometheus broke) or
was interrupted runs again, under the next attempt's run id (`-a2`, ...), so no run id ever
names two runs. A done cell whose definition changed in the file is refused: its figures
would not be the file's (start another matrix id, or restore the file).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from loadgate.capacity.matrix.file import (
    SATURATE,
    SEARCH,
    Experiment,
    Load,
    MatrixFile,
    Scenario,
    definition_digest,
)
from loadgate.contract.spec import RunSpec, SpecError
from loadgate.measure.saturation import SATURATE_PARAMS

_MAX_BASE_RUN_ID = 54  # room for an attempt (`-a99`) and a search's step (`-NN`) in 64
DONE, FAILED, RUNNING = "done", "failed", "running"


class PlanError(ValueError):
    """The matrix cannot be planned or resumed; the message names the cells and fields."""


@dataclass(frozen=True)
class Cell:
    """One experiment x scenario x load of a matrix."""

    matrix_id: str
    index: int  # 0-based, in running order
    experiment: Experiment
    scenario: Scenario
    load: Load

    @property
    def cell_id(self) -> str:
        return f"{self.experiment.name}.{self.scenario.name}.{self.load.key}"

    @property
    def kind(self) -> str:
        """`run` (a rate or the scenario's own load), `saturate` or `search`."""
        return self.load.kind if self.load.kind in (SATURATE, SEARCH) else "run"

    def run_id(self, attempt: int = 1) -> str:
        base = f"{self.matrix_id}-{self.experiment.name}-{self.scenario.name}-{self.load.key}"
        return base if attempt <= 1 else f"{base}-a{attempt}"

    def definition(self) -> dict[str, Any]:
        """What the cell runs: its experiment's stack settings, its run and its load."""
        return {
            "experiment": self.experiment.settings(),
            "scenario": {k: v for k, v in self.scenario.spec.to_params().items() if k != "run-id"},
            "load": {"kind": self.load.kind, "rate": self.load.rate},
        }

    @property
    def digest(self) -> str:
        return definition_digest(self.definition())

    def labels(self) -> dict[str, str]:
        return {"matrix": self.matrix_id, "experiment": self.experiment.name, "cell": self.cell_id}

    def spec(self, attempt: int = 1) -> RunSpec:
        """The cell's run (for `search`, the base of its steps). Raises SpecError."""
        params = self.scenario.spec.to_params()
        if self.load.kind == "rate":
            params.update(rate=self.load.rate)
        elif self.load.kind == SATURATE:
            params.update({**SATURATE_PARAMS, "executor": "constant-arrival-rate"})
        labels = {**self.scenario.spec.labels, **self.labels()}
        params.update(run_id=self.run_id(attempt), labels=labels)
        return RunSpec.from_params(params, loopback_only=True)


def cells(matrix: MatrixFile) -> list[Cell]:
    """Every cell, experiment by experiment, then scenario, then load. Raises PlanError when a
    cell's run id is too long or its run is not valid (naming the cell and the fields)."""
    out: list[Cell] = []
    problems: list[str] = []
    for exp in matrix.experiments:
        for scn in matrix.scenarios:
            for load in matrix.loads:
                cell = Cell(matrix.matrix_id, len(out), exp, scn, load)
                problems += _cell_problems(cell)
                out.append(cell)
    if problems:
        raise PlanError("\n".join(problems))
    return out


def _cell_problems(cell: Cell) -> list[str]:
    run_id = cell.run_id()
    if len(run_id) > _MAX_BASE_RUN_ID:
        return [
            f"cell {cell.cell_id}: its run id {run_id!r} has {len(run_id)} characters, at most "
            f"{_MAX_BASE_RUN_ID}: shorten the matrix id (matrix) or the names of experiment "
            f"{cell.experiment.name!r} (line {cell.experiment.line}) or scenario "
            f"{cell.scenario.name!r} (line {cell.scenario.line})"
        ]
    try:
        cell.spec()
    except SpecError as exc:
        return [f"cell {cell.cell_id}: {name}: {why}" for name, why in exc.problems]
    return []


@dataclass(frozen=True)
class Prior:
    """What an earlier invocation recorded of a cell."""

    status: str  # DONE, FAILED or RUNNING (interrupted)
    digest: str
    attempt: int
    ref: str = ""  # its run (or search) id


@dataclass(frozen=True)
class Step:
    """What to do with a cell now: `skip` it (done) or `run` it as `attempt`."""

    cell: Cell
    action: str
    attempt: int
    reason: str
    prior: Prior | None = None


def resume(all_cells: list[Cell], priors: Mapping[str, Prior]) -> list[Step]:
    """Each cell's step. Raises PlanError naming every done cell whose definition changed, and
    every cell record that belongs to no cell of the file."""
    steps: list[Step] = []
    problems: list[str] = []
    ids = {c.cell_id for c in all_cells}
    problems += [
        f"cell {cid}: recorded, but the file has no such cell (experiment, scenario or rate "
        "removed or renamed)"
        for cid in sorted(set(priors) - ids)
    ]
    for cell in all_cells:
        prior = priors.get(cell.cell_id)
        if prior is None:
            steps.append(Step(cell, "run", 1, "not run yet"))
        elif prior.status == DONE and prior.digest != cell.digest:
            problems.append(
                f"cell {cell.cell_id}: done ({prior.ref}) with another definition than the "
                f"file's (experiment {cell.experiment.name!r}, scenario {cell.scenario.name!r} "
                "or the rate changed)"
            )
        elif prior.status == DONE:
            steps.append(Step(cell, "skip", prior.attempt, f"done ({prior.ref})", prior))
        else:
            why = "interrupted" if prior.status == RUNNING else "failed to run"
            steps.append(Step(cell, "run", prior.attempt + 1, f"{why} ({prior.ref}): again", prior))
    if problems:
        raise PlanError(
            "\n".join(problems)
            + "\nthe matrix's records do not fit the file: restore the file, or give another "
            "--matrix-id"
        )
    return steps


def by_experiment(steps: list[Step]) -> list[tuple[Experiment, list[Step]]]:
    """The steps grouped by experiment, in order (an experiment's stack runs its cells)."""
    groups: list[tuple[Experiment, list[Step]]] = []
    for step in steps:
        if groups and groups[-1][0].name == step.cell.experiment.name:
            groups[-1][1].append(step)
        else:
            groups.append((step.cell.experiment, [step]))
    return groups
