"""`loadgate compare`'s terminal output: a comparison driven with its live lines (each run's
progress and figures, the decisions after every pair) and the result's tables."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.markup import escape
from rich.status import Status
from rich.text import Text

from loadgate.capacity.compare import driver as comparing
from loadgate.capacity.compare import rule
from loadgate.capacity.compare.record import COMPARE_FILE, CompareRecord
from loadgate.capacity.compare.run_order import ScheduledRun
from loadgate.capacity.compare.sequential import Plan
from loadgate.capacity.search.record import SearchRecord
from loadgate.report import compare_tables
from loadgate.runner.target import Progress
from loadgate.stack import local
from loadgate.stack.same_stack import Sameness

from .common import EXIT_BAD_INPUT, console, error, notice, stdout
from .compare_input import IF_SAME_SKIP
from .run import progress_line


def _print_result(record: CompareRecord, path: Path) -> None:
    """The decisions' tables and where the record is."""
    for line in compare_tables.result_lines(record):
        stdout.print(line, soft_wrap=True)
    stdout.print(Text(f"compare: {path}"), soft_wrap=True)


def print_replay(recorded: CompareRecord, replayed: CompareRecord, written: Path | None) -> None:
    """A replay: what was recorded, the re-decision's tables, and where it went (if anywhere)."""
    stdout.print(Text(compare_tables.replay_line(recorded)), soft_wrap=True)
    for line in compare_tables.result_lines(replayed):
        stdout.print(line, soft_wrap=True)
    where = f"written to {written}" if written else "not written (--write records it)"
    stdout.print(Text(f"replay of {replayed.compare_id}: {where}"), soft_wrap=True)


@dataclass
class _LiveView:
    """What the terminal shows while a comparison runs: each run's progress and figures, the
    pressure rate once set, and each metric's decision so far after every pair."""

    status: Status
    metrics: tuple[rule.Metric, ...]
    total: str  # runs: "6", or "10 at most"
    what: str = ""

    def on_start(self, run: ScheduledRun, stack: comparing.ComparedStack) -> None:
        self.what = f"run {run.position + 1}/{self.total} {run.side} #{run.repeat}"
        self.status.update(escape(self.what))
        console.rule(Text(f"{self.what}: {stack.name}"))

    def on_phase(self, text: str) -> None:
        self.status.update(escape(f"{self.what}: {text}"))
        console.log(Text(text))

    def on_progress(self, p: Progress) -> None:
        self.status.update(f"{escape(self.what)}: " + progress_line(p))

    def on_done(
        self,
        run: ScheduledRun,
        stack: comparing.ComparedStack,
        outcome: comparing.RepeatOutcome,
        record: CompareRecord,
    ) -> None:
        line = compare_tables.run_line(run, self.total, outcome, self.metrics)
        console.print(line, soft_wrap=True)
        if record.pressure is not None and run.position == 0:
            console.print(compare_tables.pressure_line(record.pressure), soft_wrap=True)

    def on_pair(self, pairs: int, record: CompareRecord) -> None:
        console.print(compare_tables.pair_table(record, pairs))

    def on_search_step(self, search: SearchRecord) -> None:
        line = compare_tables.search_step_line(search)
        if line is not None:
            console.print(line, soft_wrap=True)


def drive_live(
    compare_id: str,
    sides: comparing.Sides,
    plan: Plan,
    order: str,
    repeat: comparing.LocalRepeats,
    results_root: Path,
    fail_on: str = rule.DEFAULT_FAIL_ON,
) -> int:
    """The comparison driven with its live view, then its result; the exit code (a partial
    record's path said when it stops early)."""
    metrics = repeat.metrics
    path = comparing.compare_dir(results_root, compare_id) / COMPARE_FILE
    console.print(Text(f"compare {compare_id}: {compare_tables.plan_line(plan, order)}, metrics "
                       + ", ".join(m.name for m in metrics)), soft_wrap=True)  # fmt: skip
    console.print(Text(f"  baseline:  {sides.baseline.name}"), soft_wrap=True)
    console.print(Text(f"  candidate: {sides.candidate.name}"), soft_wrap=True)
    if sides.aa:
        console.print(Text(f"  {compare_tables.AA_NOTE}", style="yellow"), soft_wrap=True)
    started = time.monotonic()
    with console.status("starting") as status:
        total = f"{2 * plan.max_pairs}" + (" at most" if plan.sequential else "")
        live = _LiveView(status, metrics, total)
        repeat.on_phase = live.on_phase
        repeat.on_progress = live.on_progress
        repeat.on_search_step = live.on_search_step
        try:
            record = comparing.drive(
                compare_id, sides.baseline, sides.candidate, plan=plan, metrics=metrics,
                run_one=repeat, results_root=results_root, order=order, aa=sides.aa,
                fail_on=fail_on, stacks=repeat.STACKS, on_start=live.on_start,
                on_done=live.on_done,
                on_pair=live.on_pair,
            )  # fmt: skip
        except comparing.AbortedError as exc:
            error("compare", exc)
            console.print(Text(f"partial record: {path}"), soft_wrap=True)
            return EXIT_BAD_INPUT
        except KeyboardInterrupt:
            console.print(Text(f"partial record: {path}"), soft_wrap=True)
            raise
    _print_result(record, path)
    console.print(f"wall time {time.monotonic() - started:.0f}s")
    return record.exit_code


# ---- `--if-same skip`: a comparison whose sides run the same stack ----------------------------


def skip_line(baseline: comparing.ComparedStack, candidate: comparing.ComparedStack) -> str:
    """The verdict line of a skipped comparison."""
    return (
        f"verdict skipped (exit 0): the candidate ({candidate.name}) runs the same stack as "
        f"the baseline ({baseline.name}): the same collector and Loki configs, Pebble services "
        "and checks, options, limits and binaries; nothing to compare (--if-same skip)"
    )


def skipped(
    if_same: str | None,
    baseline: comparing.ComparedStack,
    candidate: comparing.ComparedStack,
    same_stack: Callable[[local.StackChoice, local.StackChoice], Sameness],
) -> bool:
    """Whether the comparison is skipped (its verdict line printed): `--if-same skip` and both
    sides run the same stack (both rendered with their charms' code first: stack.same_stack).
    Otherwise what differs, or why it could not be told, is said, and the comparison runs (a
    side that does not render meets the comparison's own handling of a broken stack)."""
    if if_same != IF_SAME_SKIP:
        return False
    notice("compare: rendering both sides to tell whether they run the same stack (--if-same skip)")
    found = same_stack(baseline.what, candidate.what)
    if found.unknown is not None:
        notice(f"compare: could not tell whether the sides run the same stack ({found.unknown}); "
               "comparing them")  # fmt: skip
        return False
    if not found.same:
        notice("compare: the sides differ in " + "; ".join(found.differences))
        return False
    stdout.print(Text(skip_line(baseline, candidate)), soft_wrap=True)
    return True
