"""`loadgate compare`: side settings, the interleaving driver against fake runs (order, a fresh
stack per run, compare.json after every run, partial records), the values a run contributes,
and the command line's refusals and exit codes (fake stacks and runs: no processes)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from support.fakes.target import FakeTarget

from loadgate import cli
from loadgate.capacity.compare import driver as comparing
from loadgate.capacity.compare import rule
from loadgate.capacity.compare.record import CompareRecord
from loadgate.capacity.compare.rule import BASELINE, CANDIDATE
from loadgate.capacity.compare.run_order import ScheduledRun
from loadgate.capacity.compare.sequential import Plan
from loadgate.capacity.search.record import SearchRecord, SearchStepRecord
from loadgate.capacity.search.rule import AT_LEAST_MAX, FOUND, SearchPlan, SearchResult
from loadgate.capacity.search.state import HOLD, Step, StepOutcome
from loadgate.cli import compare as compare_cli
from loadgate.cli.seams import Seams
from loadgate.contract.spec import RunSpec
from loadgate.contract.summary import ClientFigures
from loadgate.judge import ledger, run_figures
from loadgate.judge.attribution import Attribution
from loadgate.measure.pipeline import PipelineFigures
from loadgate.records.result import RunResult
from loadgate.runner import run as runner
from loadgate.stack import local, profile
from loadgate.stack.choice import StackFlags
from loadgate.stack.ops import StackOps
from loadgate.stack.ports import Ports

P99, CPU = rule.P99_AT_RATE.name, rule.CPU_PER_1000.name

# ---- sides ----------------------------------------------------------------------------------


def test_a_side_is_key_value_settings_in_one_value_or_repeated_flags() -> None:
    side = comparing.parse_side(
        "candidate",
        ["otelcol=rev160 queue-size=5000", "charm-config=processors=@p.yaml", "profile=batch"],
    )
    assert side.items == (
        ("otelcol", "rev160"),
        ("queue-size", "5000"),
        ("charm-config", "processors=@p.yaml"),
        ("profile", "batch"),
    )
    assert (
        side.label == "otelcol=rev160 queue-size=5000 charm-config=processors=@p.yaml profile=batch"
    )
    assert side.overrides() == {
        "otelcol_charm": "rev160",
        "queue_size": "5000",
        "charm_config": ["processors=@p.yaml"],
        "profile": "batch",
    }


def test_charm_options_repeat_and_add_after_the_shared_ones() -> None:
    side = comparing.parse_side(
        "baseline", ["charm-config=queue_size=10", "charm-config='cpu=1 core'", "loki=@main"]
    )
    shared = StackFlags(charm_config=("queue_size=5",), loki_charm=None, profile="charm-default")
    merged = compare_cli.side_flags(shared, side)
    assert merged == StackFlags(
        charm_config=("queue_size=5", "queue_size=10", "cpu=1 core"),
        loki_charm="@main",
        profile="charm-default",
    )
    assert shared.charm_config == ("queue_size=5",)  # the shared flags are not changed


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            ["foo=1"],
            "--baseline: unknown key 'foo' in 'foo=1'; allowed keys: profile, queue-size, "
            "otelcol, loki, charm-config, loki-config",
        ),
        (["queue-size"], "--baseline: expected KEY=VALUE, got 'queue-size'"),
        (["queue-size="], "--baseline: queue-size: empty value"),
        (["queue-size=1 queue-size=2"], "--baseline: queue-size given twice"),
        (["charm-config=queue_size"], "--baseline: charm-config: expected charm-config=OPTION="),
        (["otelcol='rev160"], "--baseline: cannot split"),
        ([""], "--baseline: empty"),
    ],
)
def test_malformed_side_settings_are_refused_naming_the_key(
    values: list[str], message: str
) -> None:
    with pytest.raises(comparing.SideError) as exc:
        comparing.parse_side("baseline", values)
    assert message in str(exc.value)


def test_metrics_parse_in_a_fixed_order_and_unknown_ones_are_named() -> None:
    assert comparing.parse_metrics("cpu,p99") == (rule.P99_AT_RATE, rule.CPU_PER_1000)
    (capacity,) = comparing.parse_metrics("capacity", 0.025)
    assert capacity.name == rule.CAPACITY.name
    assert capacity.resolution == 0.025
    with pytest.raises(comparing.SideError, match=r"--metrics: unknown 'p95'; allowed: capacity"):
        comparing.parse_metrics("p99,p95")
    with pytest.raises(comparing.SideError, match="--metrics: empty"):
        comparing.parse_metrics(" , ")


def test_two_sides_are_the_same_only_when_everything_they_run_is() -> None:
    nop = profile.get("nop", None)
    assert comparing.sameness(nop, profile.get("nop", None))
    assert not comparing.sameness(nop, profile.get("nop", 5000))


def test_a_hand_profile_side_names_its_binaries_versions() -> None:
    side = comparing.ComparedStack(
        comparing.SideSettings(BASELINE, (("profile", "hand-nop"),)), profile.get("nop", None)
    ).side()
    assert side.name == "profile=hand-nop (hand profile nop)"
    desc = side.description
    assert desc["kind"] == "hand-profile"
    assert desc["settings"] == "profile=hand-nop"
    assert desc["workloads"]["otelcol"]["version"].startswith("v")
    assert desc["workloads"]["loki"]["version"].startswith("v")


# ---- values of a run ------------------------------------------------------------------------


def run_result(
    run_id: str,
    p99: float | None,
    cpu_mean: float | None,
    accepted: int = 60_000,
    duration: float = 60.0,
    verdict: str = "PASS",
) -> RunResult:
    client = ClientFigures(
        requests=accepted // 5,
        failed=0,
        error_rate=0.0,
        p99_ms=p99,
        records_sent=accepted,
        records_accepted=accepted,
        records_per_minute=accepted / duration * 60,
        duration_s=duration,
    )
    figures = replace(PipelineFigures.unmeasured("test"), collector_cpu_mean=cpu_mean)
    return RunResult(
        run_id=run_id,
        target="local",
        spec=RunSpec(run_id=run_id),
        started_at=1000.0,
        ended_at=1000.0 + duration,
        client=client,
        pipeline=figures,
        delivered=None,
        ledger=ledger.build(client, figures, accepted),  # stored: every record (a sound run)
        gates=[],
        verdict=verdict,
    )


def test_a_fixed_rate_run_gives_p99_and_cpu_seconds_per_1000_records() -> None:
    values = comparing.fixed_rate_values(run_result("r", 12.5, 0.25, accepted=60_000))
    assert values[P99] == 12.5
    assert values[CPU] == pytest.approx(0.25 * 60 / 60_000 * 1000)  # 0.25 s per 1,000


def test_a_figure_a_run_did_not_measure_is_none_never_zero() -> None:
    values = comparing.fixed_rate_values(run_result("r", None, None))
    assert values == {P99: None, CPU: None}
    no_pipeline = replace(run_result("r", 3.0, 0.2), pipeline=None)
    assert comparing.fixed_rate_values(no_pipeline)[CPU] is None
    nothing_accepted = run_result("r", 3.0, 0.2, accepted=0)
    assert comparing.fixed_rate_values(nothing_accepted)[CPU] is None


# ---- the driver -----------------------------------------------------------------------------


def stack_of(role: str, queue: int | None) -> comparing.ComparedStack:
    items = (("profile", "hand-nop"),) + ((("queue-size", str(queue)),) if queue else ())
    return comparing.ComparedStack(comparing.SideSettings(role, items), profile.get("nop", queue))


A = stack_of(BASELINE, None)
B = stack_of(CANDIDATE, 5000)


@dataclass
class FakeRuns:
    """A run function with prescribed values per side; it checks compare.json as each starts."""

    values: dict[str, list[dict[str, float | None]]]
    results_root: Path
    compare_id: str
    seen: list[tuple[int, str, int, str]] = field(default_factory=list[tuple[int, str, int, str]])
    on_call: Callable[[ScheduledRun], None] | None = None

    def __call__(
        self, run: ScheduledRun, stack: comparing.ComparedStack
    ) -> comparing.RepeatOutcome:
        # compare.json already holds every run before this one.
        record = read_record(self.results_root, self.compare_id)
        assert [r.position for r in record.runs] == list(range(run.position))
        self.seen.append((run.position, run.side, run.repeat, stack.role))
        if self.on_call:
            self.on_call(run)
        return comparing.RepeatOutcome(
            self.values[run.side][run.repeat - 1], ref=f"{self.compare_id}-{run.side}{run.repeat}"
        )


def read_record(results_root: Path, compare_id: str) -> CompareRecord:
    return CompareRecord.from_json((results_root / compare_id / "compare.json").read_text())


def series(p99: list[float | None], cpu: list[float | None]) -> list[dict[str, float | None]]:
    return [{P99: p, CPU: c} for p, c in zip(p99, cpu, strict=True)]


def drive(tmp_path: Path, runs: FakeRuns, repeats: int, order: str = "ABAB") -> CompareRecord:
    return comparing.drive(
        runs.compare_id,
        A,
        B,
        repeats=repeats,
        metrics=(rule.P99_AT_RATE, rule.CPU_PER_1000),
        run_one=runs,
        results_root=tmp_path,
        order=order,
    )


SAME = series([10.0, 10.2, 9.9], [0.050, 0.0505, 0.0498])


def test_runs_alternate_baseline_and_candidate_and_each_side_gets_its_stack(
    tmp_path: Path,
) -> None:
    runs = FakeRuns({BASELINE: SAME, CANDIDATE: SAME}, tmp_path, "cmp1")
    drive(tmp_path, runs, 3)
    assert [(s, r) for _, s, r, _ in runs.seen] == [
        (BASELINE, 1), (CANDIDATE, 1), (BASELINE, 2), (CANDIDATE, 2), (BASELINE, 3),
        (CANDIDATE, 3),
    ]  # fmt: skip
    assert all(side == role for _, side, _, role in runs.seen)
    runs = FakeRuns({BASELINE: SAME, CANDIDATE: SAME}, tmp_path, "cmp2")
    drive(tmp_path, runs, 3, order="ABBA")
    assert [s[0] for _, s, _, _ in runs.seen] == list("bccbbc")


def test_identical_stacks_are_no_regression_exit_0(tmp_path: Path) -> None:
    runs = FakeRuns({BASELINE: SAME, CANDIDATE: SAME}, tmp_path, "same")
    record = drive(tmp_path, runs, 3)
    assert record.verdict == rule.NO_REGRESSION
    assert record.exit_code == 0
    stored = json.loads((tmp_path / "same" / "compare.json").read_text())
    assert stored["verdict"] == "no-regression"
    assert stored["exit_code"] == 0
    assert [r["ref"] for r in stored["runs"]] == [
        "same-baseline1", "same-candidate1", "same-baseline2", "same-candidate2",
        "same-baseline3", "same-candidate3",
    ]  # fmt: skip
    assert stored["baseline"]["name"] == "profile=hand-nop (hand profile nop)"
    assert stored["candidate"]["description"]["profile"]["queue_size"] == 5000
    assert stored["ended_at"] is not None
    assert stored["rule"] == rule.RULE


def test_a_candidate_20_percent_slower_is_a_regression_exit_1(tmp_path: Path) -> None:
    slower = series([12.0, 12.3, 11.9], [0.050, 0.0505, 0.0498])
    record = drive(tmp_path, FakeRuns({BASELINE: SAME, CANDIDATE: slower}, tmp_path, "slow"), 3)
    by_name = {d.metric.name: d for d in record.decisions}
    assert by_name[P99].decision == rule.REGRESSION
    assert by_name[CPU].decision == rule.NO_REGRESSION
    assert record.exit_code == 1


def test_values_too_spread_to_decide_are_too_noisy_exit_3_with_the_repeats_needed(
    tmp_path: Path,
) -> None:
    noisy = series([8.0, 14.0, 10.5], [0.050, 0.0505, 0.0498])
    record = drive(tmp_path, FakeRuns({BASELINE: SAME, CANDIDATE: noisy}, tmp_path, "noisy"), 3)
    p99 = next(d for d in record.decisions if d.metric.name == P99)
    assert p99.decision == rule.TOO_NOISY
    assert p99.repeats_needed is not None
    assert p99.repeats_needed > 3
    assert record.exit_code == 3


@pytest.mark.parametrize("side", [BASELINE, CANDIDATE])
def test_a_run_that_measured_nothing_contributes_none_and_notes(tmp_path: Path, side: str) -> None:
    # A baseline's: its pair counts for nothing and the comparison goes on. A candidate's,
    # where its baseline measured: a broken candidate, a regression, and the comparison stops.
    other = BASELINE if side == CANDIDATE else CANDIDATE
    values = {other: SAME, side: series([10.0, None, 10.1], [0.05, 0.0, 0.05])}

    class Partly(FakeRuns):
        def __call__(
            self, run: ScheduledRun, stack: comparing.ComparedStack
        ) -> comparing.RepeatOutcome:
            out = super().__call__(run, stack)
            if run.side == side and run.repeat == 2:
                return replace(out, notes=("the fixed-rate run failed: k6 exited 107",))
            return out

    record = drive(tmp_path, Partly(values, tmp_path, "part"), 3)
    run = next(r for r in record.runs if r.side == side and r.repeat == 2)
    assert run.values == {P99: None, CPU: None}  # 0.0 is not a measurement: None
    assert any("k6 exited 107" in n and f"{side} 2" in n for n in record.notes)
    p99 = next(d for d in record.decisions if d.metric.name == P99)
    if side == BASELINE:
        assert p99.baseline == (10.0, None, 10.1)
        assert p99.broken_pairs == ()
        assert record.broken is None
        assert record.verdict != rule.REGRESSION  # a baseline's gap is not the candidate's
        assert len(record.runs) == 6
        return
    assert p99.candidate == (10.0, None)  # the comparison stopped after that pair
    assert p99.decision == rule.REGRESSION
    assert p99.broken_pairs == (2,)
    assert record.broken is not None
    assert "pair 2: p99_ms, cpu_s_per_1000_records unknown" in record.broken
    assert record.stopped == "decided"
    assert record.exit_code == 1


def test_a_candidate_stack_that_does_not_start_is_a_regression_and_ends_the_comparison(
    tmp_path: Path,
) -> None:
    """A candidate repeat whose stack did not start (LocalRepeats' outcome: every value
    unknown, the failure said) is a broken candidate: a regression named so, exit 1, and no
    pair after it runs."""
    failure = "the candidate stack did not start: port 4318 is in use"

    class NotStarting(FakeRuns):
        def __call__(
            self, run: ScheduledRun, stack: comparing.ComparedStack
        ) -> comparing.RepeatOutcome:
            out = super().__call__(run, stack)
            if run.side == CANDIDATE and run.repeat == 2:
                nothing = dict.fromkeys(out.values)
                return comparing.RepeatOutcome(
                    nothing, notes=(f"{failure}: its metrics unknown",), failures=(failure,)
                )
            return out

    runs = NotStarting({BASELINE: SAME, CANDIDATE: SAME}, tmp_path, "dead")
    record = comparing.drive(
        "dead", A, B, plan=Plan(2, 5), metrics=(rule.P99_AT_RATE, rule.CPU_PER_1000),
        run_one=runs, results_root=tmp_path, order="ABAB",
    )  # fmt: skip
    assert [(s, r) for _, s, r, _ in runs.seen] == [
        (BASELINE, 1), (CANDIDATE, 1), (BASELINE, 2), (CANDIDATE, 2),
    ]  # fmt: skip
    assert record.stopped == "decided"
    assert record.verdict == rule.REGRESSION
    assert record.exit_code == 1
    assert all(d.decision == rule.REGRESSION and d.broken_pairs == (2,) for d in record.decisions)
    assert record.broken == (
        "broken candidate: it left metrics the baseline measured unknown: pair 2: p99_ms, "
        f"cpu_s_per_1000_records unknown ({failure}): a regression whatever the others say"
    )
    stored = read_record(tmp_path, "dead")
    assert stored.runs[3].failures == (failure,)
    assert stored.exit_code == 1


@pytest.mark.parametrize(
    "stop", [KeyboardInterrupt(), comparing.AbortedError("the baseline stack did not start")]
)
def test_an_interrupt_or_a_broken_stack_leaves_a_partial_record(
    tmp_path: Path, stop: BaseException
) -> None:
    def third(run: ScheduledRun) -> None:
        if run.position == 2:
            raise stop

    runs = FakeRuns({BASELINE: SAME, CANDIDATE: SAME}, tmp_path, "cut", on_call=third)
    with pytest.raises(type(stop)):
        drive(tmp_path, runs, 3)
    record = read_record(tmp_path, "cut")
    assert [r.position for r in record.runs] == [0, 1]
    assert record.ended_at is not None
    assert any(n.startswith("partial: ") and "after 2 of 6 runs" in n for n in record.notes)
    assert record.exit_code == 3  # one value a side: too noisy, never "no regression"


# ---- one repeat on the local stack (stack, run and search faked) ---------------------------


@dataclass
class FakeStack:
    """A stack, its target and runs that record what happens to them."""

    events: list[str] = field(default_factory=list[str])
    p99: dict[str, float | None] = field(default_factory=dict[str, float | None])
    fail_run: BaseException | None = None
    fail_up: BaseException | None = None
    fail_up_queue: int | None = None  # `fail_up` only for the side of this queue size

    def up(self, what: Any, ports: Ports, **kw: Any) -> Any:
        if self.fail_up is not None and self.fail_up_queue in (None, what.queue_size):
            raise self.fail_up
        self.events.append(f"up queue={what.queue_size} owner={kw['owner'].run_id}")
        return "info"

    def down(self, root: Path | None = None, timeout: float = 20.0) -> list[str]:
        self.events.append("down")
        return []

    def open_target(self, info: Any) -> FakeTarget:
        assert info == "info"
        return FakeTarget(on_close=lambda: self.events.append("close"))

    def execute(self, spec: RunSpec, target: Any, results_root: Path, **kw: Any) -> RunResult:
        self.events.append(f"run {spec.run_id} {spec.rate} {sorted(spec.labels.items())}")
        if self.fail_run is not None:
            raise self.fail_run
        result = run_result(spec.run_id, self.p99.get(spec.run_id, 10.0), 0.5)
        return replace(result, bottleneck=run_figures.bottleneck_block(result))

    @property
    def ops(self) -> StackOps:
        return StackOps(up=self.up, down=self.down)

    def seams(self, **more: Any) -> Seams:
        """The command line's seams on this stack (binaries: all built)."""
        return Seams(
            build_missing=lambda *a, **kw: cli.EXIT_OK,  # pyright: ignore[reportUnknownLambdaType]
            stack=self.ops,
            open_target=self.open_target,
            execute=self.execute,
            **more,
        )


@pytest.fixture
def fake_stack() -> FakeStack:
    return FakeStack()


def repeats_on(
    tmp_path: Path, fake: FakeStack, metrics: str = "p99,cpu", **kw: Any
) -> comparing.LocalRepeats:
    return comparing.LocalRepeats(
        root=tmp_path / "stack",
        ports=Ports.from_base(None),
        spec=RunSpec(rate=30_000, duration="10s", labels={"team": "o11y"}),
        results_root=tmp_path / "results",
        compare_id="cmp",
        metrics=comparing.parse_metrics(metrics),
        stack=fake.ops,
        open_target=fake.open_target,
        execute=fake.execute,
        **kw,
    )


def test_each_run_gets_a_fresh_stack_of_its_side_stopped_after_it(
    tmp_path: Path, fake_stack: FakeStack
) -> None:
    repeat = repeats_on(tmp_path, fake_stack)
    record = comparing.drive(
        "cmp", A, B, repeats=2, metrics=repeat.metrics, run_one=repeat,
        results_root=tmp_path / "results",
    )  # fmt: skip
    labels = "[('compare', 'cmp'), ('repeat', '{r}'), ('side', '{s}'), ('team', 'o11y')]"
    expected: list[str] = []
    for side, queue, letter, r in [
        (BASELINE, 1000, "b", 1), (CANDIDATE, 5000, "c", 1), (BASELINE, 1000, "b", 2),
        (CANDIDATE, 5000, "c", 2),
    ]:  # fmt: skip
        run_id = f"cmp-{letter}{r}"
        expected += [
            f"up queue={queue} owner={run_id}",
            f"run {run_id} 30000 " + labels.format(r=r, s=side),
            "close",
            "down",
        ]
    assert fake_stack.events == expected
    assert [r.ref for r in record.runs] == ["cmp-b1", "cmp-c1", "cmp-b2", "cmp-c2"]
    assert record.runs[0].values == {P99: 10.0, CPU: pytest.approx(0.5)}


def test_each_run_says_what_gave_way_from_its_result(tmp_path: Path, fake_stack: FakeStack) -> None:
    outcome = repeats_on(tmp_path, fake_stack)(ScheduledRun(0, BASELINE, 1), A)
    block = run_figures.bottleneck_block(run_result("cmp-b1", 10.0, 0.5))
    expected = Attribution.from_dict(block["attribution"]).summary
    assert outcome.bottleneck == expected
    assert expected.split(":")[0] in ("none", "unknown", "collector", "loki", "generator")
    assert comparing.bottleneck_summary(None) is None
    assert comparing.bottleneck_summary({"attribution": "garbled"}) is None


def test_ctrl_c_during_a_run_still_stops_its_stack(tmp_path: Path, fake_stack: FakeStack) -> None:
    fake_stack.fail_run = KeyboardInterrupt()
    repeat = repeats_on(tmp_path, fake_stack)
    with pytest.raises(KeyboardInterrupt):
        comparing.drive(
            "cmp", A, B, repeats=2, metrics=repeat.metrics, run_one=repeat,
            results_root=tmp_path / "results",
        )  # fmt: skip
    assert fake_stack.events[-2:] == ["close", "down"]
    record = read_record(tmp_path / "results", "cmp")
    assert record.runs == ()
    assert "interrupted after 0 of 4 runs" in record.notes[-1]


def test_a_failed_run_contributes_unknown_values_and_the_comparison_goes_on(
    tmp_path: Path, fake_stack: FakeStack
) -> None:
    fake_stack.fail_run = runner.RunError("k6 exited with code 107")
    repeat = repeats_on(tmp_path, fake_stack)
    outcome = repeat(ScheduledRun(0, BASELINE, 1), A)
    assert outcome.values == {P99: None, CPU: None}
    assert outcome.verdict is None
    assert "k6 exited with code 107" in outcome.notes[0]
    assert fake_stack.events[-2:] == ["close", "down"]


def test_a_candidate_stack_that_does_not_start_is_its_failure_a_baselines_aborts(
    tmp_path: Path, fake_stack: FakeStack
) -> None:
    fake_stack.fail_up = local.StackError("port 4318 is in use")
    repeat = repeats_on(tmp_path, fake_stack)
    outcome = repeat(ScheduledRun(1, CANDIDATE, 1), B)  # not AbortedError
    assert outcome.values == {P99: None, CPU: None}
    assert outcome.failures == ("the candidate stack did not start: port 4318 is in use",)
    assert "the candidate stack did not start: port 4318 is in use: its metrics unknown" in (
        outcome.notes
    )
    assert outcome.verdict is None
    assert not any(e.startswith("run ") for e in fake_stack.events)
    # Nothing to compare with: the baseline's stack that does not start ends the comparison.
    with pytest.raises(comparing.AbortedError, match="the baseline stack did not start: port"):
        repeat(ScheduledRun(0, BASELINE, 1), A)


@dataclass
class FakeSearch:
    """A search that ends as told, recording what it was asked."""

    status: str
    capacity: int | None
    calls: list[tuple[str, int, str]] = field(default_factory=list[tuple[str, int, str]])
    lost_at: int | None = None  # a hold at this rate lost 1,200 acknowledged records

    def __call__(
        self, target: Any, plan: SearchPlan, base: RunSpec, results_root: Path, search_id: str,
        stack: dict[str, Any], **kw: Any,
    ) -> SearchRecord:  # fmt: skip
        self.calls.append((search_id, plan.hold_s, stack["side"]))
        result = SearchResult(
            status=self.status,
            capacity_per_min=self.capacity,
            confirmed=self.status == FOUND,
            lowest_failing_per_min=None,
            precision=None,
            steps=5,
            load_s=120,
            wall_s=None,
            summary="a summary",
        )
        steps: tuple[SearchStepRecord, ...] = ()
        if self.lost_at is not None:
            step = Step(3, self.lost_at, 60, HOLD)
            lost = StepOutcome(self.lost_at, False, run_id=f"{search_id}-03", lost_records=1_200)
            steps = (SearchStepRecord(step, lost),)
        return SearchRecord(search_id, dict(stack), plan, steps, result)


def test_capacity_comes_from_a_search_on_the_same_fresh_stack(
    tmp_path: Path, fake_stack: FakeStack
) -> None:
    search = FakeSearch(FOUND, 210_000)
    repeat = repeats_on(tmp_path, fake_stack, "capacity,p99", search=search)
    outcome = repeat(ScheduledRun(1, CANDIDATE, 1), B)
    assert outcome.values == {rule.CAPACITY.name: 210_000.0, P99: 10.0}
    assert search.calls == [("cmp-c1-s", 60, CANDIDATE)]
    assert outcome.refs == ("cmp-c1", "cmp-c1-s")
    assert fake_stack.events[0].startswith("up")
    assert fake_stack.events[-1] == "down"
    assert sum(e.startswith("up") for e in fake_stack.events) == 1


def test_a_search_without_a_knee_gives_no_capacity_value(
    tmp_path: Path, fake_stack: FakeStack
) -> None:
    repeat = repeats_on(
        tmp_path, fake_stack, "capacity", search=FakeSearch(AT_LEAST_MAX, 1_000_000)
    )
    outcome = repeat(ScheduledRun(0, BASELINE, 1), A)
    assert outcome.values == {rule.CAPACITY.name: None}
    assert "ended at-least-max" in outcome.notes[0]
    assert not any(e.startswith("run ") for e in fake_stack.events)  # capacity only: no fixed run

    def fails(*args: Any, **kw: Any) -> SearchRecord:
        raise runner.RunError("the stack did not settle")

    failed = repeats_on(tmp_path, fake_stack, "capacity", search=fails)(
        ScheduledRun(0, BASELINE, 1), A
    )
    assert failed.values == {rule.CAPACITY.name: None}
    assert "the capacity search failed, capacity unknown: the stack did not settle" in failed.notes


def test_a_search_that_lost_acknowledged_records_is_an_unsound_run_of_its_side(
    tmp_path: Path, fake_stack: FakeStack
) -> None:
    """Issue 38, item 7: a candidate that loses records inside its search is a loss regression
    (its losses are the repeat's unsound runs, which the record's lost-records check reads);
    the search's capacity is no value."""
    search = FakeSearch(FOUND, 190_000, lost_at=200_000)
    outcome = repeats_on(tmp_path, fake_stack, "capacity", search=search)(
        ScheduledRun(1, CANDIDATE, 1), B
    )
    assert outcome.values == {rule.CAPACITY.name: None}
    assert [(u.run_id, u.lost) for u in outcome.unsound] == [("cmp-c1-03", 1_200)]
    assert "hold at 200,000/min" in outcome.unsound[0].reason


# ---- the command line ------------------------------------------------------------------------


NOP = ["--baseline", "profile=hand-nop"]
NOP_5000 = ["--candidate", "profile=hand-nop queue-size=5000"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--baseline", "colour=red", *NOP_5000], "--baseline: unknown key 'colour'"),
        ([*NOP, "--candidate", "profile=hand-nop queue-size=0"],
         "--candidate: queue-size: must be an integer between 1 and 10,000,000, got '0'"),
        ([*NOP, "--candidate", "profile=fast"], "--candidate: profile: unknown profile 'fast'; "
         "allowed: charm-default"),
        ([*NOP, "--candidate", "profile=hand-nop otelcol=rev160"],
         "--candidate (profile=hand-nop otelcol=rev160): --otelcol-charm: apply to a "
         "charm-rendered stack"),
        ([*NOP, *NOP_5000, "--repeats", "0"], "--repeats: must be an integer between 1 and 100"),
        ([*NOP, *NOP_5000, "--metrics", "p99,speed"], "--metrics: unknown 'speed'"),
        ([*NOP], "--candidate: required"),
        ([*NOP, *NOP_5000, "--fail-on", "noise"], "--fail-on: must be one of regression, worse; "
         "got 'noise'"),
        ([*NOP, *NOP_5000, "--write"], "--write: records a replay's re-decision"),
        ([*NOP, *NOP_5000, "--margins-file", "none.yaml"], "--margins-file: none.yaml: cannot "
         "read"),
        ([*NOP, *NOP_5000, "--metrics", "p99,cpu", "--margins", "saturation=5"],
         "--margins: 'saturation' is not among the metrics compared; allowed: p99, cpu, each "
         "=PERCENT (more than 0, at most 500)"),
        ([*NOP, *NOP_5000, "--margins", "pressure-p99=0"],
         "--margins: pressure-p99 must be a percentage more than 0 and at most 500, e.g. "
         "pressure-p99=25; got 'pressure-p99=0'"),
        ([*NOP, *NOP_5000, "--rate", "-5"], "--rate: must be an integer"),
        ([*NOP, *NOP_5000, "--labels", "side=a"], "--labels: side are set by compare"),
        ([*NOP, *NOP_5000, "--compare-id", "../x"], "--compare-id: must be 1-52 characters"),
        ([*NOP, *NOP_5000, "--search-precision", "0.5"], "--search-precision: 0.5 makes an "
         "unsound search plan: precision must be a number"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_with_exit_2_and_nothing_starts(
    cli_env: Path,
    fake_stack: FakeStack,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    message: str,
) -> None:
    fake_stack.fail_up = AssertionError("a stack was started")
    assert cli.main(["compare", *argv], seams=fake_stack.seams()) == cli.EXIT_BAD_INPUT
    err = " ".join(capsys.readouterr().err.split())
    assert message in err
    assert not cli_env.exists()


@dataclass
class RunningStack:
    """What `read_info` gives for a stack someone else runs."""

    abandoned: bool = False
    name: str = "charms:charm-default"

    def pebble_alive(self) -> bool:
        return True


def test_a_running_stack_is_refused_before_any_run(
    cli_env: Path, fake_stack: FakeStack, capsys: pytest.CaptureFixture[str]
) -> None:
    def running(root: Path) -> Any:
        return RunningStack()

    seams = fake_stack.seams()
    seams = replace(seams, stack=replace(seams.stack, read_info=running))
    assert cli.main(["compare", *NOP, *NOP_5000], seams=seams) == cli.EXIT_BAD_INPUT
    err = " ".join(capsys.readouterr().err.split())
    assert "a stack is running at" in err
    assert "loadgate stack down" in err


def test_the_command_prints_the_table_writes_compare_json_and_exits_with_its_verdict(
    cli_env: Path, fake_stack: FakeStack, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_stack.p99 = {"cmpx-b1": 10.0, "cmpx-b2": 10.2, "cmpx-c1": 13.0, "cmpx-c2": 13.26}
    code = cli.main(["compare", *NOP, *NOP_5000, "--repeats", "2", "--compare-id", "cmpx",
                     "--order", "ABAB", "--duration", "10s", "--metrics", "p99,cpu"],
                    seams=fake_stack.seams())  # fmt: skip
    out = capsys.readouterr()
    stored = json.loads((cli_env / "cmpx" / "compare.json").read_text())
    assert code == stored["exit_code"] == 1
    assert stored["verdict"] == "regression"
    assert len(stored["runs"]) == 4
    decisions = {d["metric"]["name"]: d for d in stored["decisions"]}
    assert decisions[P99]["decision"] == "regression"
    assert decisions[P99]["baseline"] == [10.0, 10.2]
    text = " ".join(out.out.split())
    assert "verdict regression (exit 1)" in text
    assert "rule: Per metric" in text
    assert "+30.0%" in text  # the change, in the table
    assert "compare: " in text
    assert "cmpx/compare.json" in text
    assert "run 4/4 candidate #2 (cmpx-c2): p99_ms 13.3" in " ".join(out.err.split())


@pytest.mark.parametrize(
    ("queue", "code"), [(5000, cli.EXIT_GATE_FAILED), (1000, cli.EXIT_BAD_INPUT)]
)  # fmt: skip
def test_a_candidate_stack_that_does_not_start_exits_1_a_baselines_exits_2(
    cli_env: Path,
    fake_stack: FakeStack,
    capsys: pytest.CaptureFixture[str],
    queue: int,
    code: int,
) -> None:
    fake_stack.fail_up = local.StackError("port 4318 is in use")
    fake_stack.fail_up_queue = queue  # the candidate's stack (5000), or the baseline's
    argv = ["compare", *NOP, *NOP_5000, "--compare-id", "up", "--order", "ABAB",
            "--duration", "10s", "--metrics", "p99,cpu"]  # fmt: skip
    assert cli.main(argv, seams=fake_stack.seams()) == code
    out = capsys.readouterr()
    stored = json.loads((cli_env / "up" / "compare.json").read_text())
    if queue == 1000:  # nothing to compare with: the comparison aborts, a partial record
        err = " ".join(out.err.split())
        assert "the baseline stack did not start: port 4318 is in use" in err
        assert stored["runs"] == []
        return
    assert stored["exit_code"] == 1
    assert stored["verdict"] == "regression"
    assert stored["stopped"] == "decided"
    assert [r["side"] for r in stored["runs"]] == [BASELINE, CANDIDATE]  # no pair after it
    assert stored["runs"][1]["failures"] == [
        "the candidate stack did not start: port 4318 is in use"
    ]
    text = " ".join(out.out.split())
    assert "broken candidate: it left metrics the baseline measured unknown: pair 1" in text
    assert "verdict regression (exit 1)" in text


def test_margins_set_what_counts_and_are_recorded(
    cli_env: Path, fake_stack: FakeStack, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_stack.p99 = {"cmpm-b1": 10.0, "cmpm-b2": 10.2, "cmpm-c1": 13.0, "cmpm-c2": 13.26}
    code = cli.main(["compare", *NOP, *NOP_5000, "--repeats", "2", "--compare-id", "cmpm",
                     "--order", "ABAB", "--duration", "10s", "--metrics", "p99,cpu",
                     "--margins", "p99=50%"], seams=fake_stack.seams())  # fmt: skip
    capsys.readouterr()
    stored = json.loads((cli_env / "cmpm" / "compare.json").read_text())
    decisions = {d["metric"]["name"]: d for d in stored["decisions"]}
    # +30 % is beyond the noise but below a 50 % margin: no longer a regression.
    assert decisions[P99]["metric"]["margin"] == 0.5
    assert decisions[P99]["decision"] != "regression"
    assert decisions[CPU]["metric"]["margin"] == rule.CPU_PER_1000.margin  # untouched
    assert code == stored["exit_code"] != 1


def test_compare_ids_with_results_are_refused(
    cli_env: Path, fake_stack: FakeStack, capsys: pytest.CaptureFixture[str]
) -> None:
    (cli_env / "old-c2").mkdir(parents=True)
    argv = ["compare", *NOP, *NOP_5000, "--repeats", "2", "--compare-id", "old"]
    assert cli.main(argv, seams=fake_stack.seams()) == 2
    assert "--compare-id: old already has results" in " ".join(capsys.readouterr().err.split())
