"""`--backend-fault`: its syntax and the proxy's decisions (stack/faults.py), pure and seeded."""

from __future__ import annotations

import pytest

from loadgate.stack import faults
from loadgate.stack.faults import Decider, Decision, FaultPlan


def test_the_seeds_example_parses() -> None:
    plan = faults.parse("503=0.7,delay=1s@0.7,outage=20s+15s")
    assert plan.statuses == {503: 0.7}
    assert (plan.delay_s, plan.delay_share) == (1.0, 0.7)
    assert (plan.outage_start_s, plan.outage_length_s) == (20.0, 15.0)
    assert (plan.until_s, plan.seed) == (None, 1)
    assert plan.spec == "503=0.7,delay=1s@0.7,outage=20s+15s"
    assert FaultPlan.from_dict(plan.to_dict()) == plan


def test_other_forms() -> None:
    plan = faults.parse("429=10%,503=25%,delay=250ms,until=1.5m,seed=7")
    assert plan.statuses == {429: 0.1, 503: 0.25}
    assert (plan.delay_s, plan.delay_share) == (0.25, 1.0)
    assert (plan.until_s, plan.seed) == (90.0, 7)
    assert FaultPlan.from_dict(plan.to_dict()) == plan
    assert faults.parse("outage=0s+2m").outage_length_s == 120.0


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ("", "expected KEY=VALUE"),
        ("503", "expected KEY=VALUE"),
        ("503=", "expected KEY=VALUE"),
        ("404=0.5", "status 404 is not one of"),
        ("503=1.5", "not a share between 0 and 1"),
        ("503=lots", "is not a share"),
        ("503=0.6,500=0.6", "add up to more than 1"),
        ("503=0.1,503=0.2", "503 is given twice"),
        ("delay=1", "'1' is not a duration"),
        ("delay=1h", "'1h' is not a duration"),
        ("delay=1s@2", "not a share between 0 and 1"),
        ("outage=20s", "an outage is START+LENGTH"),
        ("outage=20s+0s", "lasts more than 0s"),
        ("seed=-1", "is not a whole number"),
        ("seed=3", "no fault given"),
        ("until=10s", "no fault given"),
        ("drop=0.5", "unknown fault 'drop'"),
    ],
)
def test_a_bad_value_is_refused_naming_the_flag_and_the_form(spec: str, why: str) -> None:
    with pytest.raises(faults.FaultError) as info:
        faults.parse(spec)
    text = str(info.value)
    assert text.startswith("--backend-fault: ")
    assert why in text
    assert "allowed: comma-separated CODE=SHARE" in text


def decisions(plan: FaultPlan, times: list[float]) -> list[Decision]:
    decider = Decider(plan)
    return [decider.decide(t) for t in times]


def test_a_seed_gives_the_same_sequence_and_another_seed_another() -> None:
    times = [i * 0.1 for i in range(200)]
    first = decisions(faults.parse("503=0.5,delay=1s@0.3,seed=4"), times)
    assert decisions(faults.parse("503=0.5,delay=1s@0.3,seed=4"), times) == first
    assert decisions(faults.parse("503=0.5,delay=1s@0.3,seed=5"), times) != first


def test_restart_starts_the_sequence_over() -> None:
    decider = Decider(faults.parse("503=0.5,seed=9"))
    first = [decider.decide(0) for _ in range(50)]
    decider.restart()
    assert [decider.decide(0) for _ in range(50)] == first


def test_the_shares_are_what_was_asked() -> None:
    got = decisions(faults.parse("503=0.7,429=0.1,delay=2s@0.25"), [1.0] * 20_000)
    share = {code: sum(d.status == code for d in got) / len(got) for code in (503, 429, None)}
    assert share[503] == pytest.approx(0.7, abs=0.015)
    assert share[429] == pytest.approx(0.1, abs=0.01)
    assert share[None] == pytest.approx(0.2, abs=0.015)
    delayed = [d for d in got if d.delay_s]
    assert len(delayed) / len(got) == pytest.approx(0.25, abs=0.015)
    assert {d.delay_s for d in delayed} == {2.0}
    assert not any(d.outage for d in got)


def test_the_outage_window_answers_every_request_503() -> None:
    plan = faults.parse("outage=20s+15s")
    assert [d.status for d in decisions(plan, [0, 19.9, 20, 30, 34.9, 35, 60])] == [
        None, None, 503, 503, 503, None, None,
    ]  # fmt: skip
    inside = Decider(plan).decide(25)
    assert inside == Decision(503, 0.0, outage=True)


def test_the_shares_stop_at_until_but_the_sequence_keeps_its_pace() -> None:
    plan = faults.parse("503=1,delay=1s,until=10s")
    before, after = decisions(plan, [9.9, 10.0])
    assert before == Decision(503, 1.0)
    assert after == Decision(None)
    # the decisions after `until` draw as before: an earlier decision never shifts a later one
    mixed = decisions(faults.parse("503=0.5,until=5s"), [0, 9, 1])
    same = decisions(faults.parse("503=0.5"), [0, 9, 1])
    assert (mixed[0], mixed[2]) == (same[0], same[2])
