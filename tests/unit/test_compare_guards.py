"""Guards (compare.rule.Metric.guard, `loadgate compare --guards`): a metric that counts only when
it finds a regression. Its "too noisy" neither makes the comparison too noisy nor keeps it
running once it has had its first look; its regression is the comparison's."""

from __future__ import annotations

from dataclasses import replace

import pytest

from loadgate.capacity.compare import values as comparing
from loadgate.capacity.compare.rule import (
    NO_REGRESSION,
    PRESSURE_CPU_K6,
    PRESSURE_P99,
    REGRESSION,
    SATURATION,
    TOO_NOISY,
    Metric,
    MetricDecision,
    overall,
)
from loadgate.capacity.compare.sequential import DECIDED, Plan, decide_sequential, stop_reason
from loadgate.capacity.compare.sides import SideError

P99_GUARD = replace(PRESSURE_P99, guard=True)
PLAN = Plan(2, 5, budget_s=900.0)
QUIET = ([100.0, 100.3, 99.8], [100.1, 99.9, 100.2])  # saturation: no regression at 2 pairs
WILD_P99 = ([3.0, 8.0, 4.0], [6.0, 3.5, 9.0])  # p99s spread as the VM's do
BAD_P99 = ([3.0, 3.1, 2.9], [12.0, 12.5, 11.8])  # four times worse, beyond the noise


def decisions(
    p99: tuple[list[float], list[float]], guard: bool, pairs: int = 3
) -> list[MetricDecision]:
    metric = P99_GUARD if guard else PRESSURE_P99
    return [
        decide_sequential(SATURATION, QUIET[0][:pairs], QUIET[1][:pairs], PLAN),
        decide_sequential(metric, p99[0][:pairs], p99[1][:pairs], PLAN),
    ]


def test_a_noisy_guard_does_not_hold_the_verdict_at_too_noisy() -> None:
    as_metric = decisions(WILD_P99, guard=False)
    as_guard = decisions(WILD_P99, guard=True)
    assert [d.decision for d in as_guard] == [NO_REGRESSION, TOO_NOISY]
    assert overall(as_metric) == TOO_NOISY
    assert overall(as_guard) == NO_REGRESSION


def test_a_guard_that_finds_a_regression_makes_the_comparison_one() -> None:
    found = decisions(BAD_P99, guard=True)
    assert found[1].decision == REGRESSION, found[1].reason
    assert overall(found) == REGRESSION


def test_guards_alone_decide_nothing() -> None:
    d = decide_sequential(P99_GUARD, *WILD_P99, PLAN)
    assert overall([d]) == TOO_NOISY
    assert stop_reason(PLAN, [d], 3, 0.0, 0.0) is None


def test_a_guard_stops_keeping_the_comparison_running_after_its_first_look() -> None:
    assert PLAN.first_look(P99_GUARD) == 3
    at_two = decisions(WILD_P99, guard=True, pairs=2)
    assert stop_reason(PLAN, at_two, 2, 0.0, 0.0) is None  # the guard has not looked yet
    at_three = decisions(WILD_P99, guard=True, pairs=3)
    assert stop_reason(PLAN, at_three, 3, 0.0, 0.0) == DECIDED
    as_metric = decisions(WILD_P99, guard=False, pairs=3)
    assert stop_reason(PLAN, as_metric, 3, 0.0, 0.0) is None  # a deciding metric: run on


def test_an_undecided_guard_says_what_it_could_still_find() -> None:
    d = decide_sequential(P99_GUARD, *WILD_P99, PLAN, last=True)
    assert d.decision == TOO_NOISY
    assert (
        "a guard, it does not hold the verdict: at this spread it finds a worsening of "
        "about +" in d.reason
    )
    reach = float(d.reason.rsplit("about +", 1)[1].split(" %")[0])
    assert reach > PRESSURE_P99.margin * 100  # wider than the margin at this spread


def test_by_default_every_metric_decides_and_guards_are_chosen() -> None:
    defaults = comparing.parse_metrics(",".join(comparing.DEFAULT_METRICS))
    # Their margins are chosen from their spread here (compare.margins): none is a guard.
    assert comparing.apply_guards(defaults, None) == defaults
    assert not any(m.guard for m in comparing.apply_guards(defaults, "none"))
    one = comparing.apply_guards(defaults, "pressure-p99")
    assert [m.guard for m in one] == [False, True, False]
    two = comparing.apply_guards(defaults, "pressure-p99,pressure-cpu")
    assert [m.guard for m in two] == [False, True, True]
    with_k6 = comparing.parse_metrics("saturation,pressure-p99,pressure-cpu-k6")
    assert [m.guard for m in comparing.apply_guards(with_k6, "pressure-cpu-k6")] == [
        False, False, True
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("p95", "--guards: 'p95' not among the metrics compared; allowed: saturation, "
         "pressure-p99, pressure-cpu, or none"),
        (" , ", "--guards: empty"),
        ("saturation,pressure-p99,pressure-cpu", "--guards: every metric compared would be "
         "a guard"),
    ],
)  # fmt: skip
def test_bad_guards_are_refused_naming_the_flag(value: str, message: str) -> None:
    defaults = comparing.parse_metrics(",".join(comparing.DEFAULT_METRICS))
    with pytest.raises(SideError) as err:
        comparing.apply_guards(defaults, value)
    assert message in str(err.value)


def test_a_guard_is_written_only_when_set_and_read_back() -> None:
    assert "guard" not in PRESSURE_CPU_K6.to_dict()  # records from before guards read the same
    data = P99_GUARD.to_dict()
    assert data["guard"] is True
    assert Metric.from_dict(data) == P99_GUARD
    assert Metric.from_dict(PRESSURE_P99.to_dict()).guard is False
