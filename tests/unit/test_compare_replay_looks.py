"""A replay looks after every recorded pair and stops where the driver stops: every gating
metric settled, or a regression whatever more pairs would show (a gating metric's regression at
a look of a sequential plan; a candidate that lost acknowledged records or broke). Recorded
comparisons of the steal knob (docs/records/2026-11-29-evening) decided again from their
recorded values (replay.decided_again)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from loadgate.capacity.compare import margins_file, replay
from loadgate.capacity.compare import sequential as seq
from loadgate.capacity.compare.record import CompareRecord, RepeatRecord
from loadgate.capacity.compare.rule import Metric

EVENING = Path(__file__).resolve().parents[2] / "docs" / "records" / "2026-11-29-evening"


def _recorded(prefix: str) -> CompareRecord:
    (path,) = EVENING.glob(f"{prefix}-*/compare.json")
    return CompareRecord.from_json(path.read_text())


def _metrics(record: CompareRecord) -> tuple[Metric, ...]:
    return margins_file.apply(replay.todays_metrics(record), margins_file.shipped())


def test_a_regression_recorded_at_its_second_look_is_decided_there_again() -> None:
    u6 = _recorded("u6")  # a 10 % steal: a regression on saturation after 2 pairs
    assert (u6.verdict, u6.stopped, u6.repeats) == ("regression", seq.DECIDED, 2)
    again = replay.decided_again(u6, list(u6.runs), _metrics(u6))
    assert (again.verdict, again.stopped, again.repeats) == ("regression", seq.DECIDED, 2)
    assert not any("would have run more pairs" in n for n in again.notes), again.notes


def test_pairs_recorded_after_a_gating_regression_are_left_out() -> None:
    u6 = _recorded("u6")
    # Two more pairs in which the candidate equals the baseline: at 4 pairs the loss would be
    # half as large, but the driver stops at the regression of the second look, and so does
    # the replay.
    baseline = {r.repeat: r for r in u6.runs if r.side == "baseline"}
    more: list[RepeatRecord] = []
    for repeat, position in ((3, 4), (4, 6)):
        was = baseline[repeat - 2]
        more.append(replace(was, repeat=repeat, position=position))
        more.append(replace(was, side="candidate", repeat=repeat, position=position + 1))
    longer = replace(u6, runs=(*u6.runs, *more), repeats=4, stopped=seq.MAX_PAIRS_RUN)
    again = replay.decided_again(longer, list(longer.runs), _metrics(longer))
    assert (again.verdict, again.stopped, again.repeats) == ("regression", seq.DECIDED, 2)
    assert any("the recorded pairs after it (2) are left out" in n for n in again.notes)
