"""Running a matrix on the local stack: experiment by experiment, a fresh stack of the
experiment (stack up, its cells to run, stack down: always, also on Ctrl-C), each cell a run
(its rate, its scenario's own load, or `--saturate`'s) or a capacity search; a record per cell
when it starts and when it ends, and the comparison (matrix.md) rewritten after each.

A cell whose run cannot be carried out (k6 or Prometheus broke) is recorded as failed, with
why, and the next cell runs; a stack that does not start fails every cell of its experiment to
run, and the next experiment starts. An interrupt leaves the running cell `running`: the next
invocation runs it again (plan.resume).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from loadgate.capacity.matrix.file import Experiment, MatrixFile
from loadgate.capacity.matrix.plan import DONE, FAILED, RUNNING, Cell, Step, by_experiment
from loadgate.capacity.matrix.record import CellRecord, runs_root, write_cell
from loadgate.capacity.search import driver as searching
from loadgate.contract.spec import SpecError
from loadgate.measure.queries import QueryError
from loadgate.runner import run as runner
from loadgate.runner.target import OpenedTarget, Progress, ScopedTarget
from loadgate.stack import local, session
from loadgate.stack.ops import StackOps
from loadgate.stack.ports import Ports
from loadgate.stack.procs import ProcessId
from loadgate.targets.local import LocalTarget

_SearchFn = Callable[..., object]


@dataclass
class Hooks:
    """What the terminal hears (all optional)."""

    on_experiment: Callable[[Experiment, int], None] | None = None  # its cells to run
    on_cell: Callable[[Step, int], None] | None = None  # a cell starts (its position, 1-based)
    on_skip: Callable[[Step, int], None] | None = None
    on_done: Callable[[CellRecord, int], None] | None = None
    on_phase: Callable[[str], None] | None = None
    on_progress: Callable[[Progress], None] | None = None


@dataclass
class MatrixRun:
    """One invocation of a matrix on the local stack (the caller holds the stack's lock)."""

    matrix: MatrixFile
    stacks: Mapping[str, local.StackChoice]  # experiment name -> its prepared stack
    root: Path  # the stack's run directory
    ports: Ports
    folder: Path  # results/<matrix_id>
    results_root: Path
    after_cell: Callable[[], None] = lambda: None  # rewrite the table
    hooks: Hooks = field(default_factory=Hooks)
    up_timeout: float = 90.0
    bin_dir: Path | None = None
    guard: Callable[[], contextlib.AbstractContextManager[None]] = contextlib.nullcontext
    stack: StackOps = field(default_factory=StackOps)
    open_target: Callable[[local.StackInfo], OpenedTarget] = LocalTarget
    execute: searching.Execute = runner.execute
    run_search: Callable[..., object] = searching.run_search

    def _phase(self, text: str) -> None:
        if self.hooks.on_phase:
            self.hooks.on_phase(text)

    def run(self, steps: list[Step]) -> None:
        """Every step: skipped cells are said, the others run, experiment by experiment."""
        position = 0
        for experiment, group in by_experiment(steps):
            todo = [s for s in group if s.action == "run"]
            for step in group:
                position += 1
                if step.action == "skip" and self.hooks.on_skip:
                    self.hooks.on_skip(step, position)
            if not todo:
                continue
            first = position - len(group) + 1
            self._experiment(experiment, todo, first, group)

    def _experiment(
        self, experiment: Experiment, todo: list[Step], first: int, group: list[Step]
    ) -> None:
        if self.hooks.on_experiment:
            self.hooks.on_experiment(experiment, len(todo))
        positions = {id(s): first + i for i, s in enumerate(group)}
        try:
            with self._stack(experiment, todo[0]) as info:
                target = self.open_target(info)
                try:
                    for step in todo:
                        self._cell(step, positions[id(step)], target)
                finally:
                    with self.guard():
                        target.close()
        except local.StackError as exc:
            for step in todo:
                self._record(step, FAILED, error=f"the stack did not start: {exc}")
                self.after_cell()

    def _stack(
        self, experiment: Experiment, step: Step
    ) -> contextlib.AbstractContextManager[local.StackInfo]:
        owner = local.Owner(ProcessId.me(), step.cell.run_id(step.attempt), keep=False)
        where = session.FreshStack(self.root, self.ports, owner, self.bin_dir, self.up_timeout)
        self._phase(f"stack up: experiment {experiment.name}")
        stack = self.stacks[experiment.name]
        return session.fresh_stack(self.stack, stack, where, self._phase, self.guard)

    def _record(
        self,
        step: Step,
        status: str,
        *,
        error: str | None = None,
        verdict: str | None = None,
        started: float | None = None,
    ) -> CellRecord:
        cell = step.cell
        record = CellRecord(
            matrix_id=cell.matrix_id, cell_id=cell.cell_id, experiment=cell.experiment.name,
            scenario=cell.scenario.name, load=cell.load.key,
            load_text=cell.load.text(cell.scenario), kind=cell.kind, digest=cell.digest,
            definition=cell.definition(), status=status, attempt=step.attempt,
            ref=cell.run_id(step.attempt), started_at=started or time.time(),
            ended_at=None if status == RUNNING else time.time(), error=error, verdict=verdict,
        )  # fmt: skip
        write_cell(self.folder, record)
        return record

    def _cell(self, step: Step, position: int, target: ScopedTarget) -> None:
        if self.hooks.on_cell:
            self.hooks.on_cell(step, position)
        started = time.time()
        self._record(step, RUNNING, started=started)
        try:
            verdict = self._measure(step.cell, step.attempt, target)
        except (runner.RunError, QueryError, SpecError, ValueError) as exc:
            done = self._record(step, FAILED, error=str(exc), started=started)
        else:
            done = self._record(step, DONE, verdict=verdict, started=started)
        self.after_cell()
        if self.hooks.on_done:
            self.hooks.on_done(done, position)

    def _measure(self, cell: Cell, attempt: int, target: ScopedTarget) -> str:
        """Run the cell; its verdict (the run's, or the search's status)."""
        spec = cell.spec(attempt)
        runs = runs_root(self.results_root, cell.matrix_id)
        common = {"on_phase": self.hooks.on_phase, "on_progress": self.hooks.on_progress,
                  "drain_timeout": self.matrix.drain_timeout}  # fmt: skip
        if cell.kind == "search":
            record = self.run_search(
                target, self.matrix.search, spec, runs, spec.run_id,
                {"matrix": cell.matrix_id, "experiment": cell.experiment.settings(),
                 **target.environment()},
                scope=target.scope, execute=self.execute, **common,
            )  # fmt: skip
            status = getattr(getattr(record, "result", None), "status", None)
            return str(status or "unknown")
        result = self.execute(spec, target, runs, scope=target.scope, **common)
        return result.verdict
