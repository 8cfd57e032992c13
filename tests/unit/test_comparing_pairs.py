"""`loadgate compare` in pairs (issue 17), with fake runs and a fake stack (no processes): pairs
added until every gating metric is decided, a regression, the budget or the most pairs; the
saturation and pressure runs of a repeat and the pressure rate set once from the first
saturation measured, either side's; the CPU's source; A/A comparisons; the command line's new
flags."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from support.fakes.target import FakeTarget
from support.runresults import run_result

from loadgate import cli
from loadgate.capacity.compare import driver as comparing
from loadgate.capacity.compare import repeat as comparing_repeat
from loadgate.capacity.compare import rule, run_order
from loadgate.capacity.compare import sequential as seq
from loadgate.capacity.compare import values as comparing_values
from loadgate.capacity.compare.record import CompareRecord, Pressure
from loadgate.capacity.compare.rule import BASELINE, CANDIDATE
from loadgate.capacity.compare.run_order import ScheduledRun
from loadgate.capacity.compare.sequential import Plan
from loadgate.cli.seams import Seams
from loadgate.contract.gates import FAIL, Gate
from loadgate.contract.spec import RunSpec
from loadgate.measure import saturation as sat_states
from loadgate.measure.cpu import CpuFigures
from loadgate.measure.saturation import SaturationFigures
from loadgate.records.result import RunResult
from loadgate.stack import profile
from loadgate.stack.ops import StackOps
from loadgate.stack.ports import Ports

SAT, P99, CPU = rule.SATURATION.name, rule.PRESSURE_P99.name, rule.PRESSURE_CPU.name
CPU_K6 = rule.PRESSURE_CPU_K6.name
# The calibration these tests' arithmetic was written against (2026-11-27, fresh stacks: a
# pair's spread 3.38 % saturation, 28.3 % p99, 5.02 % CPU, 17 df), fixed here so the bounds
# below do not move with each new data/margins.yaml; no stacks' level (test_compare_level).
METRICS = (
    replace(rule.SATURATION, paired_spread=0.0338, paired_df=17, level_spread=None, level_df=0),
    replace(rule.PRESSURE_P99, paired_spread=0.28343, paired_df=17, level_spread=None, level_df=0),
    replace(rule.PRESSURE_CPU, paired_spread=0.05017, paired_df=17, level_spread=None, level_df=0),
)


def stack_of(role: str, queue: int | None) -> comparing.ComparedStack:
    items = (("profile", "hand-nop"),) + ((("queue-size", str(queue)),) if queue else ())
    return comparing.ComparedStack(comparing.SideSettings(role, items), profile.get("nop", queue))


A = stack_of(BASELINE, None)
B = stack_of(CANDIDATE, 5000)


# ---- the driver, with fake runs ----------------------------------------------------------------


@dataclass
class Pairs:
    """A run function with a value per side and repeat for each metric; every run takes
    `run_s` on the fake clock."""

    values: dict[str, dict[str, list[float | None]]]  # side -> metric -> by repeat
    sources: dict[str, str] = field(default_factory=dict[str, str])
    run_s: float = 150.0
    now: float = 0.0
    seen: list[tuple[str, int]] = field(default_factory=list[tuple[str, int]])

    def __call__(
        self, run: ScheduledRun, stack: comparing.ComparedStack
    ) -> comparing.RepeatOutcome:
        self.seen.append((run.side, run.repeat))
        self.now += self.run_s
        by_metric = self.values[run.side]
        values = {name: series[run.repeat - 1] for name, series in by_metric.items()}
        pressure = Pressure(0.7, 140_000, 200_000.0, "cmp-b1-sat")
        return comparing.RepeatOutcome(
            values, ref=f"{run.side}{run.repeat}", sources=dict(self.sources), pressure=pressure
        )

    def clock(self) -> float:
        return self.now


def steady(value: float, n: int = 10, wobble: float = 0.002) -> list[float | None]:
    return [value * (1 + wobble * (-1) ** i) for i in range(n)]


def noisy(value: float, n: int = 10) -> list[float | None]:
    return [value * f for f in (1.0, 1.3, 0.75, 1.2, 0.8, 1.25, 0.7, 1.3, 0.9, 1.1)[:n]]


def drive(tmp_path: Path, runs: Pairs, plan: Plan, **kw: Any) -> CompareRecord:
    return comparing.drive(
        "cmp", A, B, plan=plan, metrics=METRICS, run_one=runs, results_root=tmp_path,
        monotonic=runs.clock, **kw,
    )  # fmt: skip


def same(
    sat: float, p99: float, cpu: float, wobble: float = 0.002
) -> dict[str, list[float | None]]:
    return {SAT: steady(sat, wobble=wobble), P99: steady(p99, wobble=wobble),
            CPU: steady(cpu, wobble=wobble)}  # fmt: skip


def test_pairs_are_added_until_every_gating_metric_is_decided(tmp_path: Path) -> None:
    # Steady to 0.05 %: the calibrated spread of a pair (saturation 3.4 %, CPU 5.0 %) is what
    # the bounds narrow from; saturation's upper bound drops below its 5 % at 5 pairs, the
    # CPU's at 7. The pressure p99 (reported beside, gating nothing) stays too noisy and holds
    # no pair.
    calm = same(200_000, 12.0, 0.3, wobble=0.0005)
    runs = Pairs({BASELINE: calm, CANDIDATE: calm})
    seen: list[tuple[int, list[str]]] = []
    plan = Plan(2, 10, budget_s=3600.0)
    record = drive(
        tmp_path, runs, plan,
        on_pair=lambda n, r: seen.append((n, [d.decision for d in r.decisions])),  # pyright: ignore[reportUnknownLambdaType]
    )  # fmt: skip
    assert [n for n, _ in seen] == [1, 2, 3, 4, 5, 6, 7]
    assert seen[3][1] == [rule.NO_REGRESSION, rule.TOO_NOISY, rule.NO_REGRESSION]
    assert record.stopped == seq.DECIDED
    assert record.verdict == rule.NO_REGRESSION
    assert record.repeats == 7
    assert runs.seen == [(side, n) for n in range(1, 8) for side in (BASELINE, CANDIDATE)]
    sat, p99, cpu = record.decisions
    assert (sat.settled, sat.pairs, cpu.settled, cpu.pairs) == (True, 5, True, 7)
    assert (p99.decision, p99.settled, p99.metric.gates) == (rule.TOO_NOISY, False, False)
    stored = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert stored["plan"] == {
        "min_pairs": 2, "max_pairs": 10, "sequential": True, "budget_s": 3600.0,
        "method": "alpha spending (alpha shared by weight, alpha/K per metric when equal, "
        "O'Brien-Fleming shape over its looks, "
        "union bound; the last look spends what is left)",
    }  # fmt: skip
    assert stored["stopped"] == "decided"
    assert stored["pressure"] == {
        "fraction": 0.7, "rate_per_min": 140000, "saturation_per_min": 200000.0,
        "set_by": "cmp-b1-sat",
    }  # fmt: skip
    stored_sat = stored["decisions"][0]
    assert (stored_sat["pairs"], stored_sat["looks"]) == (5, 9)
    # O'Brien-Fleming at 5 of 10, of the half of the 5 % that is saturation's (K = 2: the p99
    # does not gate; it spends a 5 % of its own).
    assert stored_sat["confidence"] == pytest.approx(0.99887, abs=2e-5)
    assert stored_sat["confidence"] == plan.confidences(sat.metric, 5, family=2)[-1]
    assert p99.confidence == plan.confidences(p99.metric, 7, family=1)[-1]
    assert stored_sat["family"] == 0.95


def test_a_regression_stops_the_comparison_at_the_pair_that_shows_it(tmp_path: Path) -> None:
    # 25 % less throughput: a regression at saturation's first look (2 pairs, 99.99 %). It is
    # final and the verdict whatever the others show, so the comparison stops there though the
    # CPU is not settled yet.
    worse = {SAT: steady(150_000), P99: steady(12.0), CPU: steady(0.3)}
    runs = Pairs({BASELINE: same(200_000, 12.0, 0.3), CANDIDATE: worse})
    record = drive(tmp_path, runs, Plan(2, 6, budget_s=3600.0))
    by_name = {d.metric.name: d for d in record.decisions}
    assert by_name[SAT].decision == rule.REGRESSION
    assert by_name[SAT].pairs == 2
    assert not by_name[CPU].settled
    assert record.repeats == 2
    assert record.exit_code == 1
    assert record.stopped == seq.DECIDED


def test_the_most_pairs_end_a_noisy_comparison_too_noisy_saying_by_how_much(
    tmp_path: Path,
) -> None:
    wide = {SAT: noisy(200_000), P99: steady(12.0), CPU: steady(0.3)}
    runs = Pairs({BASELINE: same(200_000, 12.0, 0.3), CANDIDATE: wide})
    record = drive(tmp_path, runs, Plan(2, 4, budget_s=3600.0))
    assert record.stopped == seq.MAX_PAIRS_RUN
    assert record.repeats == 4
    sat = record.decisions[0]
    assert sat.decision == rule.TOO_NOISY
    assert sat.lower is not None
    assert sat.upper is not None
    assert sat.lower <= 0  # no worsening shown
    assert sat.upper >= 2 * 0.06  # nor one of twice the 6 % ruled out
    # This machine is noisier than the calibration: the comparison's own spread, alone.
    assert "its own: noisier than calibrated, 3 df" in sat.reason
    assert sat.repeats_needed is not None
    assert sat.repeats_needed > 4
    assert f"about {sat.repeats_needed} pairs would narrow the bounds to ±6 %" in sat.reason
    assert record.exit_code == 3


def test_no_pair_starts_past_the_budget(tmp_path: Path) -> None:
    runs = Pairs({BASELINE: same(200_000, 12.0, 0.3),
                  CANDIDATE: {SAT: noisy(200_000), P99: steady(12.0), CPU: steady(0.3)}},
                 run_s=150.0)  # fmt: skip
    # 300 s a pair: after 3 pairs (900 s), another would end at 1,200 s > 1,000 s.
    record = drive(tmp_path, runs, Plan(2, 10, budget_s=1000.0))
    assert record.repeats == 3
    assert record.stopped == seq.BUDGET_SPENT
    assert record.decisions[0].decision == rule.TOO_NOISY


def test_repeats_alone_run_that_many_pairs_and_look_once(tmp_path: Path) -> None:
    runs = Pairs({BASELINE: same(200_000, 12.0, 0.3), CANDIDATE: same(200_000, 12.0, 0.3)})
    record = comparing.drive(
        "fixed", A, B, repeats=4, metrics=METRICS, run_one=runs, results_root=tmp_path,
        monotonic=runs.clock,
    )  # fmt: skip
    assert record.repeats == 4
    assert record.stopped == seq.REPEATS_RUN
    # One look: each gating metric's bounds at its half of the 5 % (saturation, CPU), the
    # pressure p99's (reported beside) at its own 5 %.
    assert [(d.looks, d.confidence) for d in record.decisions] == [
        (1, 1 - 0.05 / 2), (1, 0.95), (1, 1 - 0.05 / 2)
    ]  # fmt: skip


def test_an_undecided_metric_is_not_hidden_by_anothers_worse(tmp_path: Path) -> None:
    # Saturation 3 % lower in every pair: worse beyond the noise, estimated below its 5 %.
    # The CPU measured in no run, either side: too noisy. Too noisy comes first (exit 3): a
    # "worse" (exit 0) would pass a candidate whose CPU nobody saw.
    unmeasured: list[float | None] = [None] * 10
    base = {SAT: steady(200_000), P99: steady(12.0), CPU: unmeasured}
    cand = {SAT: steady(194_000), P99: steady(12.0), CPU: unmeasured}
    runs = Pairs({BASELINE: base, CANDIDATE: cand})
    record = comparing.drive(
        "prec", A, B, repeats=8, metrics=METRICS, run_one=runs, results_root=tmp_path,
        monotonic=runs.clock,
    )  # fmt: skip
    by_name = {d.metric.name: d.decision for d in record.decisions}
    assert by_name == {SAT: rule.WORSE, P99: rule.NO_REGRESSION, CPU: rule.TOO_NOISY}
    assert rule.overall(record.decisions) == rule.TOO_NOISY
    assert record.verdict == rule.TOO_NOISY
    assert record.exit_code == 3
    assert replace(record, fail_on=rule.WORSE).exit_code == 3  # not 1: undecided, not worse


def test_a_value_of_another_source_is_left_out(tmp_path: Path) -> None:
    class Switching(Pairs):
        def __call__(
            self, run: ScheduledRun, stack: comparing.ComparedStack
        ) -> comparing.RepeatOutcome:
            self.sources = {CPU: "prometheus" if run.position == 3 else "kernel"}
            return super().__call__(run, stack)

    runs = Switching({BASELINE: same(200_000, 12.0, 0.3), CANDIDATE: same(200_000, 12.0, 0.3)})
    record = drive(tmp_path, runs, Plan(2, 2))
    assert [r.values[CPU] is None for r in record.runs] == [False, False, False, True]
    assert record.runs[0].sources == {CPU: "kernel"}
    assert any("came from prometheus where earlier runs had kernel" in n for n in record.notes)


def test_an_interrupted_sequential_comparison_says_how_far_it_got(tmp_path: Path) -> None:
    class Cut(Pairs):
        def __call__(
            self, run: ScheduledRun, stack: comparing.ComparedStack
        ) -> comparing.RepeatOutcome:
            if run.position == 3:
                raise KeyboardInterrupt
            return super().__call__(run, stack)

    runs = Cut({BASELINE: same(200_000, 12.0, 0.3), CANDIDATE: same(200_000, 12.0, 0.3)})
    with pytest.raises(KeyboardInterrupt):
        drive(tmp_path, runs, Plan(2, 5))
    record = CompareRecord.from_json((tmp_path / "cmp" / "compare.json").read_text())
    assert "partial: interrupted after 3 of at most 10 runs" in record.notes[-1]
    assert record.stopped is None
    assert record.exit_code == 3


# ---- one repeat: saturation and pressure runs on a fresh stack ----------------------------------


def saturation(accepted: float | None, saturated: bool | None = True) -> SaturationFigures:
    return SaturationFigures(
        offered_per_min=300_000.0, saturated=saturated, window_start=1010.0, window_end=1030.0,
        window_s=20.0, fill_s=6.0, accepted_per_min=accepted, exported_per_min=accepted,
        stored_per_min=accepted, refused_per_min=90_000.0 if saturated else 0.0,
        queue_capacity=1000.0,
        reason="" if saturated is not None else "fewer than two scrapes",
    )  # fmt: skip


def cpu_block(per_1000: float | None, quiet: bool = True) -> CpuFigures:
    return CpuFigures(
        window_s=30.0, idle_s=5.0, records=70_000, idle_cores={"otelcol": 0.01},
        used_s={"otelcol": 9.0, "k6": 6.0, "loki": 4.5}, marginal_s={"otelcol": 8.7, "k6": None},
        per_1000_records={"otelcol": per_1000}, busy_elsewhere_cores=0.05 if quiet else 0.9,
        quiet=quiet,
    )  # fmt: skip


@dataclass
class SatStack:
    """A stack whose runs give a saturation per side (in repeat order) and a p99 and kernel CPU
    at any pressure; it records every stack up, run (id, rate, VUs) and stack down."""

    sat: dict[str, list[float | None]]
    p99: float = 12.0
    cpu: float | None = 0.12
    kernel: bool = True
    quiet: bool = True
    took_all: float | None = None  # a side that took all offered carried this much
    refused_all: str | None = None  # this side's collector refuses everything (shedding)
    events: list[str] = field(default_factory=list[str])

    def up(self, what: Any, ports: Ports, **kw: Any) -> Any:
        self.events.append(f"up {kw['owner'].run_id}")
        return "info"

    def down(self, root: Path | None = None, timeout: float = 20.0) -> list[str]:
        self.events.append("down")
        return []

    def open_target(self, info: Any) -> FakeTarget:
        return FakeTarget()

    def execute(self, spec: RunSpec, target: Any, results_root: Path, **kw: Any) -> RunResult:
        self.events.append(f"run {spec.run_id} {spec.rate} vus={spec.vus}")
        result = run_result(spec, p99_ms=self.p99)
        if spec.labels.get("side") == self.refused_all:
            if spec.run_id.endswith("-sat"):  # a saturation run has no error-rate gate
                refusing = replace(saturation(0.0, False), refused_per_min=300_000.0)
                return replace(result, saturation=refusing)
            return replace(result, verdict=FAIL, gates=(
                Gate("error_rate", "<= 1%", 1.0, False, "k6"),))  # fmt: skip
        if spec.run_id.endswith("-sat"):
            side, repeat = spec.labels["side"], int(spec.labels["repeat"])
            value = self.sat[side][repeat - 1]
            if value is None and self.took_all is not None:
                return replace(result, saturation=saturation(self.took_all, False))
            return replace(result, saturation=saturation(value, value is not None))
        cpu = cpu_block(self.cpu, self.quiet) if self.kernel else None
        return replace(result, cpu=cpu)

    def seams(self) -> Seams:
        return Seams(
            build_missing=lambda *a, **kw: cli.EXIT_OK,  # pyright: ignore[reportUnknownLambdaType]
            stack=StackOps(up=self.up, down=self.down),
            open_target=self.open_target,
            execute=self.execute,
        )


def local_repeats(
    tmp_path: Path, fake: SatStack, metrics: str = "saturation,pressure-p99,pressure-cpu", **kw: Any
) -> comparing.LocalRepeats:
    return comparing.LocalRepeats(
        root=tmp_path / "stack", ports=Ports.from_base(None),
        spec=RunSpec(rate=60_000, duration="30s"), results_root=tmp_path / "results",
        compare_id="cmp", metrics=comparing.parse_metrics(metrics), stack=StackOps(
            up=fake.up, down=fake.down), open_target=fake.open_target, execute=fake.execute, **kw,
    )  # fmt: skip


def runs_of(repeat: comparing.LocalRepeats, pairs: int) -> Iterator[comparing.RepeatOutcome]:
    for run in run_order.schedule(pairs):
        yield repeat(run, A if run.side == BASELINE else B)


def test_a_repeat_saturates_then_runs_at_the_pressure_rate_on_one_fresh_stack(
    tmp_path: Path,
) -> None:
    fake = SatStack({BASELINE: [200_000.0, 190_000.0], CANDIDATE: [150_000.0, 160_000.0]})
    outcomes = list(runs_of(local_repeats(tmp_path, fake), 2))
    assert fake.events[:4] == [
        "up cmp-b1", "run cmp-b1-sat 300000 vus=300", "run cmp-b1-pr 140000 vus=300", "down",
    ]  # fmt: skip
    # The rate is set once, from the first baseline saturation: both sides, every pair.
    pressure_runs = [e for e in fake.events if "-pr " in e]
    assert pressure_runs == [
        f"run cmp-{s}-pr 140000 vus=300" for s in ("b1", "c1", "b2", "c2")
    ]  # fmt: skip
    first = outcomes[0]
    assert first.values == {SAT: 200_000.0, P99: 12.0, CPU: 0.12}
    assert first.sources == {CPU: "kernel"}
    assert first.refs == ("cmp-b1-sat", "cmp-b1-pr")
    assert first.pressure == Pressure(0.7, 140_000, 200_000.0, "cmp-b1-sat")
    assert first.verdict == "saturation PASS, pressure PASS"
    assert outcomes[1].values[SAT] == 150_000.0


def test_pressure_metrics_alone_saturate_only_the_first_baseline(tmp_path: Path) -> None:
    fake = SatStack({BASELINE: [200_000.0, 1.0], CANDIDATE: [1.0, 1.0]})
    repeat = local_repeats(tmp_path, fake, "pressure-p99,pressure-cpu")
    list(runs_of(repeat, 2))
    assert [e for e in fake.events if e.startswith("run")] == [
        "run cmp-b1-sat 300000 vus=300", "run cmp-b1-pr 140000 vus=300",
        "run cmp-c1-pr 140000 vus=300", "run cmp-b2-pr 140000 vus=300",
        "run cmp-c2-pr 140000 vus=300",
    ]  # fmt: skip


def test_a_given_pressure_rate_needs_no_saturation_run(tmp_path: Path) -> None:
    fake = SatStack({BASELINE: [None], CANDIDATE: [None]})
    given = Pressure(None, 100_000, None, "--pressure-rate")
    repeat = local_repeats(tmp_path, fake, "pressure-p99", pressure=given)
    outcome = repeat(ScheduledRun(0, BASELINE, 1), A)
    assert [e for e in fake.events if e.startswith("run")] == ["run cmp-b1-pr 100000 vus=300"]
    assert outcome.pressure == given


def test_an_unsaturated_first_run_leaves_the_pressure_rate_to_the_next_saturation_measured(
    tmp_path: Path,
) -> None:
    fake = SatStack({BASELINE: [None, 200_000.0], CANDIDATE: [150_000.0, 150_000.0]})
    outcomes = list(runs_of(local_repeats(tmp_path, fake), 2))
    assert outcomes[0].values == {SAT: None, P99: None, CPU: None}
    assert any("not saturated in cmp-b1-sat" in n for n in outcomes[0].notes)
    assert any("the pressure rate is not set yet" in n for n in outcomes[0].notes)
    # The next saturation measured sets it, whichever side's (here the candidate's), once.
    rate = Pressure(0.7, 105_000, 150_000.0, "cmp-c1-sat")
    assert [o.pressure for o in outcomes[1:]] == [rate] * 3
    assert outcomes[1].values == {SAT: 150_000.0, P99: 12.0, CPU: 0.12}
    assert outcomes[2].values[SAT] == 200_000.0  # measured, and the rate stays
    pressure_runs = [e for e in fake.events if "-pr " in e]
    assert pressure_runs == [f"run cmp-{s}-pr 105000 vus=300" for s in ("c1", "b2", "c2")]


def test_the_pressure_rate_comes_from_the_first_saturation_whichever_side_ran_first(
    tmp_path: Path,
) -> None:
    # A drawn order may run the candidate first, the first pair too ("seq"'s does): its
    # saturation sets the rate both sides run at, and the baseline saturates for nothing.
    schedule = run_order.schedule(2, "random", seed="seq")
    assert [(r.side, r.repeat) for r in schedule] == [
        (CANDIDATE, 1), (BASELINE, 1), (BASELINE, 2), (CANDIDATE, 2),
    ]  # fmt: skip
    fake = SatStack({BASELINE: [200_000.0, 200_000.0], CANDIDATE: [150_000.0, 150_000.0]})
    repeat = local_repeats(tmp_path, fake, "pressure-p99,pressure-cpu")
    repeat.compare_id = "seq"
    record = comparing.drive(
        "seq", A, B, repeats=2, metrics=repeat.metrics, run_one=repeat,
        results_root=tmp_path / "results", order="random",
    )  # fmt: skip
    assert [e for e in fake.events if e.startswith("run")] == [
        "run seq-c1-sat 300000 vus=300", "run seq-c1-pr 105000 vus=300",
        "run seq-b1-pr 105000 vus=300", "run seq-b2-pr 105000 vus=300",
        "run seq-c2-pr 105000 vus=300",
    ]  # fmt: skip
    assert record.pressure == Pressure(0.7, 105_000, 150_000.0, "seq-c1-sat")
    assert all(r.values[P99] == 12.0 for r in record.runs)  # every run measured, both sides


def test_without_the_kernels_figures_the_cpu_comes_from_prometheus(tmp_path: Path) -> None:
    fake = SatStack({BASELINE: [200_000.0], CANDIDATE: [200_000.0]}, kernel=False)
    outcome = local_repeats(tmp_path, fake)(ScheduledRun(0, BASELINE, 1), A)
    assert outcome.sources == {CPU: "prometheus"}
    # runresults' pipeline: 0.2 cores over the run's 30 s, per 1,000 of its records.
    assert outcome.values[CPU] == pytest.approx(0.2 * 30 / (140_000 * 30 / 60) * 1000)


def test_a_busy_machine_is_noted_and_a_lost_collector_cpu_is_unknown(tmp_path: Path) -> None:
    fake = SatStack({BASELINE: [200_000.0], CANDIDATE: [200_000.0]}, cpu=None, quiet=False)
    outcome = local_repeats(tmp_path, fake)(ScheduledRun(0, BASELINE, 1), A)
    assert outcome.values[CPU] is None  # the kernel lost it: not swapped for Prometheus's
    assert outcome.sources == {}
    assert any("the machine was not quiet during cmp-b1-pr: 0.9 cores" in n for n in outcome.notes)


def test_the_collectors_cpu_per_k6_cpu_is_the_kernels_marginal_over_k6s(tmp_path: Path) -> None:
    fake = SatStack({BASELINE: [200_000.0], CANDIDATE: [200_000.0]})
    repeat = local_repeats(tmp_path, fake, "pressure-cpu,pressure-cpu-k6")
    outcome = repeat(ScheduledRun(0, BASELINE, 1), A)
    # cpu_block: the collector's marginal 8.7 s over k6's 6.0 s in the same window
    assert outcome.values == {CPU: 0.12, CPU_K6: pytest.approx(8.7 / 6.0)}
    assert outcome.sources == {CPU: "kernel", CPU_K6: "kernel"}


def test_without_the_kernels_figures_the_cpu_per_k6_cpu_is_unknown(tmp_path: Path) -> None:
    fake = SatStack({BASELINE: [200_000.0], CANDIDATE: [200_000.0]}, kernel=False)
    outcome = local_repeats(tmp_path, fake, "pressure-cpu-k6")(ScheduledRun(0, BASELINE, 1), A)
    assert outcome.values == {CPU_K6: None}  # Prometheus does not see k6: unknown, never 0
    assert outcome.sources == {}


@pytest.mark.parametrize(
    ("marginal", "k6"), [(None, 6.0), (8.7, None), (8.7, 0.0)]
)  # fmt: skip
def test_a_cpu_per_k6_cpu_missing_either_figure_is_unknown(
    marginal: float | None, k6: float | None
) -> None:
    block = replace(cpu_block(0.1), marginal_s={"otelcol": marginal}, used_s={"k6": k6})
    result = replace(run_result(RunSpec(rate=60_000, duration="30s")), cpu=block)
    assert comparing_values.cpu_per_k6_cpu(result) is None
    assert comparing_values.cpu_per_k6_cpu(replace(result, cpu=cpu_block(0.1))) == 8.7 / 6.0


# ---- the command line --------------------------------------------------------------------------


NOP = ["--baseline", "profile=hand-nop"]
NOP_5000 = ["--candidate", "profile=hand-nop queue-size=5000"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--repeats", "3", "--budget", "10m"], "--repeats: a fixed number of pairs; --budget"),
        (["--budget", "soon"], "--budget: must be a duration like 15m, 900s or 1h"),
        (["--budget", "25h"], "--budget: must be a duration like 15m"),
        (["--min-pairs", "0"], "--min-pairs: must be an integer between 1 and 100; got '0'"),
        (["--max-pairs", ""], "--max-pairs: must be an integer between 1 and 100; got ''"),
        (["--min-pairs", "4", "--max-pairs", "3"], "--max-pairs: must be at least --min-pairs"),
        (["--pressure-fraction", "1.5"], "--pressure-fraction: must be a number more than 0"),
        (["--pressure-rate", "fast"], "--pressure-rate: must be an integer between 1 and"),
        (["--saturate-rate", "0"], "--saturate-rate: must be an integer between 1 and"),
        (["--metrics", "saturation,speed"], "--metrics: unknown 'speed'; allowed: capacity, "
         "saturation, pressure-p99, pressure-cpu, pressure-cpu-probe, pressure-cpu-k6, "
         "pressure-cpu-loki, p99, cpu"),
    ],
)  # fmt: skip
def test_bad_plan_flags_are_refused_with_exit_2_and_nothing_starts(
    cli_env: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    fake = SatStack({})
    assert cli.main(["compare", *NOP, *NOP_5000, *argv], seams=fake.seams()) == 2
    assert message in " ".join(capsys.readouterr().err.split())
    assert fake.events == []
    assert not cli_env.exists()


def test_the_default_compare_adds_pairs_until_decided_and_shows_each_pair(
    cli_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = SatStack({BASELINE: steady(200_000), CANDIDATE: steady(150_000)})
    code = cli.main(["compare", *NOP, *NOP_5000, "--compare-id", "seq"], seams=fake.seams())
    out = capsys.readouterr()
    record = CompareRecord.from_json((cli_env / "seq" / "compare.json").read_text())
    assert code == record.exit_code == 1
    assert [d.metric.name for d in record.decisions] == [
        SAT, P99, rule.PRESSURE_CPU_PROBE.name, rule.PRESSURE_CPU_LOKI.name,
    ]  # fmt: skip
    assert record.decisions[0].decision == rule.REGRESSION
    assert record.plan == Plan(2, 5, budget_s=900.0)
    assert record.stopped == seq.DECIDED
    # Saturation's 25 % loss is a regression at its first look (2 pairs): final, it ends the
    # comparison though the CPU is not settled.
    assert record.repeats == 2
    assert not record.decisions[2].settled
    # "seq"'s first pair runs the candidate first: its saturation sets the pressure rate.
    assert record.runs[0].side == CANDIDATE
    assert record.pressure == Pressure(0.7, 105_210, 150_300.0, "seq-c1-sat")
    err = " ".join(out.err.split())
    assert "pairs until decided (2 to 5, budget 15 min)" in err
    assert "after 1 pair(s): too-noisy" in err
    assert "after 2 pair(s): regression" in err
    assert "pressure rate 105,210/min: 0.7 x the" in err
    assert "first saturation measured, 150,300/min (seq-c1-sat)" in err
    assert "run 1/10 at most candidate #1 (seq-c1-sat): saturation_per_min 150,300" in err
    text = " ".join(out.out.split())
    assert "verdict regression (exit 1)" in text
    assert "2 pair(s) of 2-5, budget 15 min, stopped: decided" in text


def test_the_same_stack_on_both_sides_is_an_a_a_comparison(
    cli_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = SatStack({BASELINE: steady(200_000), CANDIDATE: steady(200_000)})
    argv = ["compare", *NOP, "--candidate", "profile=hand-nop", "--compare-id", "aa",
            "--metrics", "saturation", "--max-pairs", "3"]  # fmt: skip
    assert cli.main(argv, seams=fake.seams()) == 0
    out = capsys.readouterr()
    record = CompareRecord.from_json((cli_env / "aa" / "compare.json").read_text())
    assert record.aa
    assert record.verdict == rule.NO_REGRESSION
    assert "A/A comparison: both sides run the same stack" in " ".join(out.out.split())
    assert "A/A comparison" in " ".join(out.err.split())
    # The pressure rate was not needed: saturation runs only.
    assert all(e.endswith("-sat 300000 vus=300") for e in fake.events if e.startswith("run"))


def test_a_baseline_that_takes_everything_sets_the_pressure_from_that_lower_bound(
    tmp_path: Path,
) -> None:
    # The batch profile takes all of 300,000/min: its saturation is unknown (a lower bound),
    # yet 0.7 of what it carried is a rate it carries at most at 0.7 of its limit.
    fake = SatStack({BASELINE: [None, None], CANDIDATE: [110_000.0, 120_000.0]})
    fake.took_all = 299_973.0
    outcomes = list(runs_of(local_repeats(tmp_path, fake), 2))
    set_by = "cmp-b1-sat, a lower bound: the baseline took all it was offered"
    assert outcomes[0].pressure == Pressure(0.7, 209_981, 299_973.0, set_by)
    assert outcomes[0].values == {SAT: None, P99: 12.0, CPU: 0.12}
    assert any("not saturated in cmp-b1-sat" in n for n in outcomes[0].notes)
    pressure_runs = [e for e in fake.events if "-pr " in e]
    assert pressure_runs == [f"run cmp-{s}-pr 209981 vus=300" for s in ("b1", "c1", "b2", "c2")]


def test_a_candidate_that_ran_first_and_took_everything_sets_the_pressure_from_that_bound(
    tmp_path: Path,
) -> None:
    fake = SatStack({BASELINE: [None], CANDIDATE: [None]}, took_all=299_973.0)
    outcome = local_repeats(tmp_path, fake)(ScheduledRun(0, CANDIDATE, 1), B)
    set_by = "cmp-c1-sat, a lower bound: the candidate took all it was offered"
    assert outcome.pressure == Pressure(0.7, 209_981, 299_973.0, set_by)
    assert outcome.values == {SAT: None, P99: 12.0, CPU: 0.12}
    assert [e for e in fake.events if "-pr " in e] == ["run cmp-c1-pr 209981 vus=300"]


def test_a_candidate_that_refuses_everything_first_sets_no_pressure_and_is_broken(
    tmp_path: Path,
) -> None:
    # A collector whose memory limiter refuses every record (dshed-1, 2026-11-29): its queue
    # never fills, yet it did not "take all" offered. Its 0/min is no lower bound to set the
    # pressure rate from (it set 1/min before): the baseline's saturation sets it.
    fake = SatStack({BASELINE: [110_000.0], CANDIDATE: [None]}, refused_all=CANDIDATE)
    repeats = local_repeats(tmp_path, fake)
    first = repeats(ScheduledRun(0, CANDIDATE, 1), B)
    assert first.pressure is None
    assert first.values == {SAT: None, P99: None, CPU: None}
    assert any("took none of the 300,000/min offered (it refused 300,000/min" in n
               for n in first.notes), first.notes  # fmt: skip
    assert [e for e in fake.events if "-pr " in e] == []  # no pressure run without a rate
    second = repeats(ScheduledRun(1, BASELINE, 1), A)
    assert second.pressure == Pressure(0.7, 77_000, 110_000.0, "cmp-b1-sat")


def test_the_default_compare_calls_a_candidate_that_refuses_everything_a_regression_named_so(
    cli_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = SatStack({BASELINE: steady(110_000), CANDIDATE: [None] * 10}, refused_all=CANDIDATE)
    code = cli.main(["compare", *NOP, *NOP_5000, "--compare-id", "shed"], seams=fake.seams())
    out = " ".join(capsys.readouterr().out.split())
    record = CompareRecord.from_json((cli_env / "shed" / "compare.json").read_text())
    assert code == record.exit_code == 1
    assert record.verdict == rule.REGRESSION
    assert record.repeats == 1  # a broken candidate ends the comparison after its pair
    assert record.pressure is not None
    assert record.pressure.set_by.endswith("-b1-sat")
    assert record.broken is not None
    assert record.broken.startswith("broken candidate: ")
    assert "took none" in out


def test_a_saturation_run_that_took_none_and_counted_no_refusal_is_no_lower_bound() -> None:
    # eshed-1 (2026-11-29): the memory limiter refused every record, k6 saw 99.9 % of its
    # requests fail, yet the collector's refused counter did not move over the window: accepted
    # 0, refused 0, the queue empty. That is not "took all": no pressure rate from it.
    silent = replace(saturation(0.0, False), refused_per_min=0.0)
    assert silent.reading.state == sat_states.REFUSING
    assert silent.reading.limit == 0.0
    result = replace(run_result(RunSpec(rate=300_000, duration="30s", run_id="x-sat")),
                     saturation=silent)  # fmt: skip
    assert comparing_repeat.took_at_least(result) is None
    # Taking all but k6 seeing its requests refused: no lower bound either.
    took = replace(saturation(250_000.0, False), refused_per_min=0.0)
    assert took.reading.state == sat_states.TOOK_ALL
    refused_client = replace(result, saturation=took,
                             client=replace(result.client, error_rate=0.4))  # fmt: skip
    assert comparing_repeat.took_at_least(refused_client) is None
    quiet = replace(refused_client, client=result.client)
    assert comparing_repeat.took_at_least(quiet) == 250_000.0


def test_a_saturation_run_whose_queue_grew_without_filling_is_saturated_at_what_it_sent_on(
    tmp_path: Path,
) -> None:
    # The batch profile here: the receiver took all 300,000/min, the exporter sent on 215,250
    # (Loki rate-limited it), the queue of whole batches never filled in 30 s.
    grew = replace(saturation(300_013.0, False), exported_per_min=215_250.0)
    result = replace(run_result(RunSpec(rate=300_000, duration="30s", run_id="x-sat")),
                     saturation=grew)  # fmt: skip
    value, notes = comparing_values.saturation_value(result)
    assert value == 215_250.0
    assert "the queue never filled but grew" in notes[0]
    # Sent on nearly all it took: not its limit.
    took = replace(saturation(300_013.0, False), exported_per_min=290_000.0)
    value, notes = comparing_values.saturation_value(replace(result, saturation=took))
    assert value is None
    assert "not saturated in x-sat" in notes[0]
