"""A matrix's cells and resuming it (capacity/matrix/plan.py)."""

from __future__ import annotations

import pytest

from loadgate.capacity.matrix import plan
from loadgate.capacity.matrix.file import parse
from loadgate.capacity.matrix.plan import DONE, FAILED, RUNNING, PlanError, Prior

TEXT = """\
matrix: mx
experiments:
  - name: base
  - name: batch
    profile: batch
scenarios:
  - name: small
    duration: 20s
rates: [30000, saturate]
"""


def cells(text: str = TEXT) -> list[plan.Cell]:
    return plan.cells(parse(text, "mx.yaml"))


def test_cells_run_experiment_by_experiment() -> None:
    got = cells()
    assert [c.cell_id for c in got] == [
        "base.small.r30000", "base.small.sat", "batch.small.r30000", "batch.small.sat",
    ]  # fmt: skip
    first = got[0]
    assert first.run_id() == "mx-base-small-r30000"
    assert first.run_id(3) == "mx-base-small-r30000-a3"
    spec = first.spec(2)
    assert (spec.rate, spec.run_id) == (30_000, "mx-base-small-r30000-a2")
    assert spec.labels == {"matrix": "mx", "experiment": "base", "cell": "base.small.r30000"}
    sat = got[1].spec()
    assert (sat.rate, sat.vus, sat.max_error_rate, sat.executor) == (
        300_000, 300, 1.0, "constant-arrival-rate",
    )  # fmt: skip
    assert got[1].kind == "saturate"
    assert got[0].digest != got[2].digest  # another experiment: another definition


def test_a_run_id_too_long_is_refused_naming_the_names() -> None:
    long_text = TEXT.replace("name: small", "name: a-long-scenario-name-xy").replace(
        "matrix: mx", "matrix: a-long-matrix-identifie"
    )
    with pytest.raises(PlanError, match=r"at most 54: shorten the matrix id"):
        cells(long_text)


def test_a_fresh_matrix_runs_every_cell() -> None:
    steps = plan.resume(cells(), {})
    assert [(s.action, s.attempt) for s in steps] == [("run", 1)] * 4


def test_resume_skips_done_cells_and_runs_the_others_again() -> None:
    all_cells = cells()
    priors = {
        all_cells[0].cell_id: Prior(DONE, all_cells[0].digest, 1, "mx-base-small-r30000"),
        all_cells[1].cell_id: Prior(FAILED, all_cells[1].digest, 1, "mx-base-small-sat"),
        all_cells[2].cell_id: Prior(RUNNING, all_cells[2].digest, 2, "mx-batch-small-r30000-a2"),
    }
    steps = plan.resume(all_cells, priors)
    assert [(s.action, s.attempt) for s in steps] == [
        ("skip", 1), ("run", 2), ("run", 3), ("run", 1),
    ]  # fmt: skip
    assert steps[0].reason == "done (mx-base-small-r30000)"
    assert steps[1].reason == "failed to run (mx-base-small-sat): again"
    assert steps[2].reason == "interrupted (mx-batch-small-r30000-a2): again"
    groups = plan.by_experiment(steps)
    assert [(e.name, len(g)) for e, g in groups] == [("base", 2), ("batch", 2)]


def test_a_done_cell_whose_definition_changed_is_refused() -> None:
    before = cells()
    after = cells(TEXT.replace("duration: 20s", "duration: 30s"))
    priors = {before[0].cell_id: Prior(DONE, before[0].digest, 1, "mx-base-small-r30000")}
    with pytest.raises(PlanError, match=r"cell base.small.r30000: done \(mx-base-small-r30000\)"):
        plan.resume(after, priors)
    # a failed cell may change: it runs again with the new definition
    failed = {before[0].cell_id: Prior(FAILED, before[0].digest, 1, "x")}
    assert plan.resume(after, failed)[0].action == "run"


def test_a_recorded_cell_the_file_no_longer_has_is_refused() -> None:
    priors = {"gone.small.r30000": Prior(DONE, "d", 1, "x")}
    with pytest.raises(PlanError, match=r"gone\.small\.r30000: recorded, but the file has no such"):
        plan.resume(cells(), priors)
