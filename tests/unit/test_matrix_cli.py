"""`loadgate matrix` on a fake stack: a fresh stack per experiment, a record per cell, cells
that fail to run (and whose stack does not start) recorded and resumed, bad files refused
before anything starts."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from support.fakes.target import FakeTarget
from support.runresults import run_result

from loadgate import cli
from loadgate.capacity.matrix.record import read_cells
from loadgate.cli.seams import Seams
from loadgate.contract.spec import RunSpec
from loadgate.measure.pipeline import Scope
from loadgate.records import result as results
from loadgate.records.result import RunResult
from loadgate.runner.run import RunError
from loadgate.stack import local
from loadgate.stack.ops import StackOps
from loadgate.stack.ports import Ports
from loadgate.stack.profile import Profile

MATRIX = """\
matrix: mx
experiments:
  - name: a
  - name: b
    queue_size: 5000
scenarios:
  - name: s
    duration: 10s
rates: [30000, 60000]
"""


@dataclass
class World:
    """A stack, a target and runs that record what happens to them."""

    events: list[str] = field(default_factory=list[str])
    fail_runs: set[str] = field(default_factory=set[str])
    fail_up: set[str] = field(default_factory=set[str])

    def resolve(self, request: Any) -> local.StackChoice:
        return Profile(name=f"queue-{request.charms.otelcol_pairs}")

    def up(self, what: Any, ports: Ports, **kw: Any) -> Any:
        run_id = kw["owner"].run_id
        if any(run_id.startswith(f"mx-{e}-") for e in self.fail_up):
            raise local.StackError("port in use: otelcol 4318")
        self.events.append(f"up {what.name} for {run_id}")
        return "info"

    def down(self, root: Path | None = None, timeout: float = 20.0) -> list[str]:
        self.events.append("down")
        return []

    def open_target(self, info: Any) -> FakeTarget:
        return FakeTarget(on_close=lambda: self.events.append("close"))

    def execute(self, spec: RunSpec, target: Any, results_root: Path, **kw: Any) -> RunResult:
        self.events.append(f"run {spec.run_id} {spec.rate}")
        assert kw["scope"] == Scope()
        if spec.run_id in self.fail_runs:
            raise RunError("k6 exited with code 107")
        result = run_result(spec)
        results.write(result, results_root)
        return result

    def seams(self) -> Seams:
        return Seams(
            resolve_stack=self.resolve,
            build_missing=lambda *a, **kw: cli.EXIT_OK,  # pyright: ignore[reportUnknownLambdaType]
            stack=StackOps(up=self.up, down=self.down),
            open_target=self.open_target,
            execute=self.execute,
        )


@pytest.fixture
def folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LOADGATE_STACK_DIR", str(tmp_path / "stack"))
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(tmp_path / "results"))
    (tmp_path / "mx.yaml").write_text(MATRIX)
    return tmp_path


def run(folders: Path, world: World, *more: str) -> int:
    return cli.main(["matrix", str(folders / "mx.yaml"), *more], seams=world.seams())


def said(capsys: pytest.CaptureFixture[str]) -> str:
    """What the command printed, on stdout and stderr, as one line."""
    got = capsys.readouterr()
    return " ".join((got.out + got.err).split())


def test_each_experiment_on_a_fresh_stack_and_a_record_per_cell(
    folders: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    world = World()
    assert run(folders, world) == cli.EXIT_OK
    assert world.events == [
        "up queue-() for mx-a-s-r30000", "run mx-a-s-r30000 30000", "run mx-a-s-r60000 60000",
        "close", "down",
        "up queue-('queue_size=5000',) for mx-b-s-r30000", "run mx-b-s-r30000 30000",
        "run mx-b-s-r60000 60000", "close", "down",
    ]  # fmt: skip
    folder = folders / "results" / "mx"
    cells = read_cells(folder)
    assert sorted(cells) == ["a.s.r30000", "a.s.r60000", "b.s.r30000", "b.s.r60000"]
    assert {c.status for c in cells.values()} == {"done"}
    assert cells["a.s.r30000"].verdict == "PASS"
    table = (folder / "matrix.md").read_text()
    assert "4 of 4 cells done" in table
    assert (folder / "matrix.json").is_file()
    out = said(capsys)
    assert "matrix mx" in out
    assert "comparison:" in out


def test_a_cell_that_fails_to_run_is_recorded_and_run_again_on_resume(
    folders: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    world = World(fail_runs={"mx-a-s-r60000"})
    assert run(folders, world) == cli.EXIT_BAD_INPUT  # a cell not done
    cells = read_cells(folders / "results" / "mx")
    failed = cells["a.s.r60000"]
    assert (failed.status, failed.error) == ("failed", "k6 exited with code 107")
    assert cells["b.s.r60000"].status == "done"  # the next cells still ran
    assert "not done: a.s.r60000" in capsys.readouterr().err

    again = World()
    assert run(folders, again) == cli.EXIT_OK
    assert again.events == [
        "up queue-() for mx-a-s-r60000-a2", "run mx-a-s-r60000-a2 60000", "close", "down",
    ]  # fmt: skip
    out = said(capsys)
    assert "a.s.r30000: done (mx-a-s-r30000), skipped" in out
    assert read_cells(folders / "results" / "mx")["a.s.r60000"].attempt == 2


def test_a_stack_that_does_not_start_fails_its_experiments_cells(
    folders: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    world = World(fail_up={"a"})
    assert run(folders, world) == cli.EXIT_BAD_INPUT
    cells = read_cells(folders / "results" / "mx")
    for cid in ("a.s.r30000", "a.s.r60000"):
        assert cells[cid].status == "failed"
        assert cells[cid].error == "the stack did not start: port in use: otelcol 4318"
    assert cells["b.s.r30000"].status == "done"


def test_plan_starts_nothing(folders: Path, capsys: pytest.CaptureFixture[str]) -> None:
    world = World()
    assert run(folders, world, "--plan") == cli.EXIT_OK
    assert world.events == []
    out = said(capsys)
    assert "2 experiments x 1 scenarios x 2 loads = 4 cells; 0 done, 4 to run" in out
    assert not (folders / "results").exists()


def forbidden(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError(f"started something: {args!r}")


NOTHING_STARTS = Seams(
    resolve_stack=forbidden, build_missing=forbidden, stack=StackOps(up=forbidden, down=forbidden),
    open_target=forbidden, session=forbidden, execute=forbidden, run_search=forbidden,
)  # fmt: skip


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (
            MATRIX.replace("queue_size: 5000", "queue_size: lots"),
            "experiments[1].queue_size (line 5)",
        ),
        (MATRIX.replace("[30000, 60000]", "[30000, fast]"), "rates[1] (line 9): must be records"),
        (MATRIX.replace("duration: 10s", "duration: soon"), "scenarios[0].duration (line 8)"),
        ("matrix: mx\n", "experiments: must be a non-empty list"),
    ],
)
def test_a_bad_matrix_file_is_refused_and_nothing_starts(
    folders: Path, text: str, named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (folders / "mx.yaml").write_text(text)
    assert cli.main(["matrix", str(folders / "mx.yaml")], seams=NOTHING_STARTS) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "invalid matrix file" in err
    assert named in err, err
    assert not (folders / "results").exists()
    assert not (folders / "stack").exists()


def test_the_report_has_a_section_per_matrix_with_a_plot(
    folders: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(folders, World()) == cli.EXIT_OK
    results_dir = folders / "results"
    assert cli.main(["report", "--results", str(results_dir)]) == cli.EXIT_OK
    text = (results_dir / "report" / "report.md").read_text()
    section = text.split("## Matrices", 1)[1]
    assert "### mx: 4 of 4 cells done" in section
    assert "| a | s | 30,000/min | 30,000 |" in section
    assert "![matrix mx](matrix-mx.png)" in section
    assert (results_dir / "report" / "matrix-mx.png").stat().st_size > 0
    rows = text.split("## Per revision and scenario", 1)[1].split("##", 1)[0]
    assert "mx-a-s" not in rows  # the cells' runs are the matrix's, not the rows'


def test_a_search_cell_is_a_capacity_search_on_the_experiments_stack(
    folders: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from loadgate.capacity.search import driver as search_driver
    from loadgate.capacity.search.record import SearchRecord
    from loadgate.capacity.search.rule import SearchPlan, Step, StepOutcome
    from loadgate.capacity.search.rule import run_search as rule_search

    (folders / "mx.yaml").write_text(
        MATRIX.replace("[30000, 60000]", "[search]") + "search: {precision: 0.1}\n"
    )
    searched: list[tuple[str, float]] = []

    def fake_search(target: Any, plan: SearchPlan, base: RunSpec, results_root: Path,
                    search_id: str, stack: Any, **kw: Any) -> SearchRecord:  # fmt: skip
        searched.append((search_id, plan.precision))
        assert kw["scope"] == Scope()

        def outcome(step: Step) -> StepOutcome:
            ok = step.rate <= 150_000
            verdict = "PASS" if ok else "FAIL"
            run_id = f"{search_id}-{step.index:02d}"
            return StepOutcome(
                step.rate, ok, float(step.rate), 5.0, 0.0, 1.0, 0.2, 0, verdict, run_id
            )

        search = rule_search(plan, outcome)
        record = SearchRecord.build(search_id, dict(stack), search, [(None, None)] * len(
            search.history), started_at=1.0, ended_at=2.0)  # fmt: skip
        search_driver.write_record(record, results_root)
        return record

    world = World()
    seams = replace(world.seams(), run_search=fake_search)
    assert cli.main(["matrix", str(folders / "mx.yaml")], seams=seams) == cli.EXIT_OK
    assert searched == [("mx-a-s-search", 0.1), ("mx-b-s-search", 0.1)]
    cells = read_cells(folders / "results" / "mx")
    assert cells["a.s.search"].verdict == "found"
    table = (folders / "results" / "mx" / "matrix.md").read_text()
    assert "| a | s | search | capacity 1" in table
