"""`loadgate search` on the command line: bad flags refused with exit code 2 before anything
starts, each named with what is allowed; the table and summary it prints; its exit codes."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Generator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from support.fakes.target import FakeTarget
from support.runresults import pipeline, run_result

from loadgate import cli
from loadgate.capacity.search import driver as searching
from loadgate.capacity.search.record import SearchRecord
from loadgate.capacity.search.rule import (
    AT_LEAST_MAX,
    BELOW_MIN,
    BISECT,
    FOUND,
    OUT_OF_BUDGET,
    OUT_OF_STEPS,
    Search,
    SearchPlan,
    StepOutcome,
    noiseless_worst_case,
    plan_problems,
)
from loadgate.cli import search as search_cli
from loadgate.cli import search_juju
from loadgate.cli.common import UsageError
from loadgate.cli.seams import Seams
from loadgate.contract.spec import RunSpec
from loadgate.judge.run_figures import assess
from loadgate.runner import run as runner
from loadgate.stack.choice import StackRequest
from loadgate.stack.profile import Profile
from loadgate.stack.session import SessionRequest


def returns(value: Any) -> Any:
    def stand_in(*args: Any, **kwargs: Any) -> Any:
        return value

    return stand_in


def boom(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("started something")


# Refused flags must not resolve, build or start anything.
NOTHING_STARTS = Seams(resolve_stack=boom, build_missing=boom, session=boom, run_search=boom)


@pytest.fixture
def nothing_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("LOADGATE_STACK_DIR", str(tmp_path / "stack"))
    return tmp_path


def search_main(argv: list[str]) -> int:
    """`loadgate search` with nothing started."""
    return cli.main(["search", *argv], seams=NOTHING_STARTS)


def search_seams(session: Callable[..., Any], run_search: Callable[..., Any]) -> Seams:
    """A resolved stack (a hand profile) with its binaries built, and this session and search."""
    return Seams(
        resolve_stack=returns(Profile()),
        build_missing=returns(cli.EXIT_OK),
        session=session,
        run_search=run_search,
    )


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--precision", "0.5"], "--precision: must be a number above 0.01 and at most 0.25"),
        (["--precision", "abc"], "--precision: must be a number; got 'abc'"),
        (["--probe", "x"], "--probe: must be an integer; got 'x'"),
        (["--probe", "0"], "--probe: must be an integer between 1 and 3600; got 0"),
        (
            ["--method", "bisect", "--hold", "5", "--probe", "10"],
            "--hold: must be at least --probe (10); got 5",
        ),
        (["--min-rate", "5000", "--max-rate", "4000"], "--max-rate: must be above --min-rate"),
        (
            ["--method", "bisect", "--start-rate", "5"],
            "--start-rate: must be between --min-rate (10000) and",
        ),
        (["--method", "bisect", "--budget", "100"], "--budget: must be at least 180 s"),
        (["--method", "bisect", "--max-steps", "2"], "--max-steps: must be at least 9"),
        (["--budget", "100"], "--budget: must be at least 150 s"),
        (["--max-steps", "2"], "--max-steps: must be at least 5"),
        (["--method", "fast"], "--method: must be one of saturate, bisect; got 'fast'"),
        (["--saturation", "10"], "--saturation: must be an integer between 15 and 3600; got 10"),
        (["--min-hold", "x"], "--min-hold: must be an integer; got 'x'"),
        (["--saturate-rate", "0"], "--saturate-rate: must be an integer between 1 and"),
        (["--p99-ms", "-1"], "--p99-ms: must be a number greater than 0"),
        (["--labels", "run_id=x"], "--labels: label name 'run_id' is reserved"),
        (["--search-id", "a b"], "--search-id: must be 1-60 characters"),
        (["--confidence", "1"], "--confidence: must be a number above 0.5 and at most 0.99"),
        (["--step-noise", "0.3"], "--step-noise: must be a number from 0 to 0.25; got 0.3"),
    ],
)
def test_bad_flags_are_refused_naming_the_flag_and_what_is_allowed(
    nothing_starts: Path, capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    assert search_main(argv) == cli.EXIT_BAD_INPUT
    err = " ".join(capsys.readouterr().err.split())
    assert "loadgate search:" in err
    assert expected in err


def test_every_bad_flag_is_named_at_once(
    nothing_starts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = search_main(["--max-rate", "5000", "--min-rate", "10000", "--vus", "0"])
    assert code == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "--max-rate: must be above --min-rate (10000); got 5000" in err
    assert "--vus: must be an integer between 1 and 10000; got 0" in err


def test_a_search_id_that_has_results_is_refused(
    nothing_starts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (nothing_starts / "results" / "taken").mkdir(parents=True)
    assert search_main(["--search-id", "taken"]) == cli.EXIT_BAD_INPUT
    assert "taken already has results" in capsys.readouterr().err


def test_method_and_saturation_flags_set_the_plan_and_the_error_gate_comes_from_the_run(
    nothing_starts: Path,
) -> None:
    args = cli.build_parser().parse_args(
        ["search", "--method", "bisect", "--saturate-rate", "200000", "--saturation", "20",
         "--min-hold", "25", "--hold", "50", "--max-error-rate", "0.02"]
    )  # fmt: skip
    plan, base = search_cli.plan_and_base(args)
    assert (plan.confidence, plan.step_noise, plan.measured_step_noise) == (0.9, 0.10, None)
    assert (plan.method, plan.saturate_rate, plan.saturate_s) == (BISECT, 200_000, 20)
    assert (plan.hold_min_s, plan.hold_s, plan.max_error_rate) == (25, 50, 0.02)
    assert base.max_error_rate == 0.02
    default, _ = search_cli.plan_and_base(cli.build_parser().parse_args(["search"]))
    assert default == SearchPlan()
    stated = ["search", "--confidence", "0.95", "--step-noise", "0.03"]
    plan, _ = search_cli.plan_and_base(cli.build_parser().parse_args(stated))
    assert (plan.confidence, plan.step_noise) == (0.95, 0.03)


def test_the_defaults_are_sound_and_within_five_minutes_of_load() -> None:
    plan = SearchPlan()
    assert plan_problems(plan) == []
    assert plan.budget_s <= 300
    assert noiseless_worst_case(plan)[1] <= plan.budget_s


def record_with(status: str, tmp_path: Path) -> SearchRecord:
    """A finished record of that status, steps from a simulated knee."""
    plans = {
        FOUND: (SearchPlan(method=BISECT), 150_000),
        AT_LEAST_MAX: (SearchPlan(method=BISECT), 10**9),
        BELOW_MIN: (SearchPlan(method=BISECT), 1),
        OUT_OF_BUDGET: (SearchPlan(method=BISECT, budget_s=180, hold_s=60), None),
        OUT_OF_STEPS: (SearchPlan(method=BISECT, max_steps=9), None),
    }
    plan, knee = plans[status]
    search = Search(plan)
    figures: list[Any] = []
    while (step := search.next_step()) is not None:
        if knee is None:  # holds fail where probes pass: the budget or step limit ends it
            passed = step.phase == "probe" and step.rate <= 150_000
        else:
            passed = step.rate <= knee
        spec = RunSpec.from_params({"rate": step.rate, "duration": step.duration, "run-id": "r"})
        result = (
            run_result(spec)
            if passed
            else run_result(
                spec,
                pipe=pipeline(accepted=round(step.rate * step.duration_s / 60), queue_size_max=1e3),
                p99_ms=500.0,
            )
        )
        search.record(step, StepOutcome(step.rate, passed, verdict="PASS" if passed else "FAIL"))
        figures.append(assess(result))
    return SearchRecord.build("sid", {}, search, figures, wall_s=400.0)


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (FOUND, cli.EXIT_OK),
        (AT_LEAST_MAX, cli.EXIT_OK),
        (BELOW_MIN, cli.EXIT_GATE_FAILED),
        (OUT_OF_BUDGET, cli.EXIT_GATE_FAILED),
        (OUT_OF_STEPS, cli.EXIT_GATE_FAILED),
    ],
)
def test_exit_codes_by_status(
    status: str,
    code: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    record = record_with(status, tmp_path)
    assert record.result.status == status
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(tmp_path / "results"))

    target = FakeTarget(name="local", environment={"profile": {"name": "charm-default"}})

    sessions: list[str] = []

    @contextlib.contextmanager
    def session(request: SessionRequest, hands: Any) -> Generator[FakeTarget]:
        sessions.append(f"{request.command} {request.run_id}")
        yield target

    seen: dict[str, Any] = {}

    def run_search(target: Any, plan: SearchPlan, base: RunSpec, *a: Any, **kw: Any) -> Any:
        seen.update(plan=plan, base=base, stack=a[2])
        return record

    argv = ["search", "--search-id", "sid", "--probe", "10", "--labels", "revision=9"]
    assert cli.main(argv, seams=search_seams(session, run_search)) == code
    assert sessions == ["search sid"]
    assert seen["plan"].probe_s == 10
    assert seen["base"].labels == {"revision": "9"}
    assert seen["stack"] == {"target": "local", "profile": {"name": "charm-default"}}
    out = " ".join(capsys.readouterr().out.split())
    assert f"status {status}" in out
    assert "search sid" in out  # the steps table
    if status == FOUND:
        capacity = record.result.capacity_per_min
        assert capacity is not None
        interval = record.result.interval
        assert interval is not None
        low, high, _ = interval
        precision = f"{(record.result.precision or 0) * 100:.1f}"
        assert (
            f"capacity {capacity:,} records/min, the knee between {low:,} and {high:,} records/min "
            f"with 90 % confidence (holds ±{precision} %, asked ±5 %; confirmed by a hold)"
        ) in out
        failing = record.result.lowest_failing_per_min
        assert f"bottleneck at {failing:,} records/min: collector" in out
        assert "queue_max = 1,000" in out
    assert f"load {record.result.load_s} s of {record.plan.budget_s} s budget, wall 400 s" in out


@pytest.mark.parametrize(
    ("stop", "code"),
    [(KeyboardInterrupt(), 130), (runner.RunError("the stack did not settle"), cli.EXIT_BAD_INPUT)],
)
def test_a_stopped_search_leaves_its_partial_record_and_closes_the_stack(
    stop: BaseException,
    code: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    results = tmp_path / "results"
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(results))
    events: list[str] = []

    target = FakeTarget(name="local")

    @contextlib.contextmanager
    def session(request: SessionRequest, hands: Any) -> Generator[FakeTarget]:
        events.append("stack up")
        try:
            yield target
        finally:
            events.append("stack down")  # what local_session does for a stack it started

    def run_search(
        target: Any, plan: SearchPlan, base: RunSpec, root: Path, sid: str, *a: Any, **kw: Any
    ) -> Any:
        searching.search_file(root, sid).parent.mkdir(parents=True)
        searching.search_file(root, sid).write_text("{}")  # the partial record run_search writes
        raise stop

    assert (
        cli.main(["search", "--search-id", "cut"], seams=search_seams(session, run_search)) == code
    )
    assert events == ["stack up", "stack down"]
    err = " ".join(capsys.readouterr().err.split())
    assert f"partial search: {results / 'cut' / 'search.json'}" in err


@pytest.mark.parametrize("value", ["0", "11", "x", "-1", "2.5"])
def test_a_bad_repeat_is_refused(
    nothing_starts: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    assert search_main(["--repeat", value]) == cli.EXIT_BAD_INPUT
    err = " ".join(capsys.readouterr().err.split())
    assert f"--repeat: must be an integer from 1 to 10; got '{value}'" in err


def test_a_repeated_search_id_must_stay_short_enough(
    nothing_starts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert search_main(["--repeat", "3", "--search-id", "x" * 59]) == cli.EXIT_BAD_INPUT
    assert "--search-id: with --repeat 3, must be 1-60 characters" in capsys.readouterr().err


def test_repeat_runs_each_search_on_one_stack_and_prints_the_spread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(results))
    found, short = record_with(FOUND, tmp_path), record_with(OUT_OF_BUDGET, tmp_path)

    target = FakeTarget(name="local")

    sessions: list[str] = []

    @contextlib.contextmanager
    def session(request: SessionRequest, hands: Any) -> Generator[FakeTarget]:
        sessions.append(request.run_id)
        yield target

    searches: list[tuple[Path, str]] = []

    def run_search(
        target: Any, plan: SearchPlan, base: RunSpec, root: Path, sid: str, *a: Any, **kw: Any
    ) -> Any:
        searches.append((root, sid))
        # the second search runs out of budget: it has no capacity, and is counted as such
        return replace(found if len(searches) != 2 else short, search_id=sid)

    argv = ["search", "--search-id", "rep", "--repeat", "3"]
    code = cli.main(argv, seams=search_seams(session, run_search))
    assert code == cli.EXIT_GATE_FAILED  # the worst of the three: one ran out of budget
    assert sessions == ["rep"]  # one stack for all three
    assert searches == [(results / "rep", f"rep-r{i}") for i in (1, 2, 3)]
    capacity = found.result.capacity_per_min
    assert capacity is not None
    out = " ".join(capsys.readouterr().out.split())
    assert (
        f"capacities of 3 searches: rep-r1: {capacity:,}, rep-r2: none (out-of-budget), "
        f"rep-r3: {capacity:,}" in out
    )
    assert f"spread: median {capacity:,}, {capacity:,}-{capacity:,} records/min" in out
    assert "1 without a capacity" in out
    data = json.loads((results / "rep" / "spread.json").read_text())
    assert data["format"] == "loadgate-search-spread/1"
    assert data["spread"]["found"] == [capacity, capacity]
    assert data["spread"]["not_found"] == 1
    assert data["statuses"] == [FOUND, OUT_OF_BUDGET, FOUND]
    # each search's figures: the benchmark of the search itself
    assert [f["search_id"] for f in data["figures"]] == ["rep-r1", "rep-r2", "rep-r3"]
    assert data["figures"][0] == {
        "search_id": "rep-r1",
        "method": BISECT,
        "status": FOUND,
        "capacity_per_min": capacity,
        "precision": found.result.precision,
        "saturation_per_min": None,
        "load_s": found.result.load_s,
        "wall_s": 400.0,
        "steps": found.result.steps,
        "knee_low_per_min": found.result.knee_low_per_min,
        "knee_high_per_min": found.result.knee_high_per_min,
        "confidence": 0.9,
    }
    assert data["figures"][1]["status"] == OUT_OF_BUDGET
    assert data["figures"][1]["capacity_per_min"] == short.result.capacity_per_min
    assert "3 searches" in out
    interval = found.result.interval
    assert interval is not None
    assert (
        f"rep-r1 │ bisect │ found │ {capacity:,} ({interval[0]:,}-{interval[1]:,} at 90 %) │ - │ "
        f"{found.result.load_s} │ 400 │ {found.result.steps}" in out
    )


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--scenario", "nope"], "--scenario: must be one of otlp-logs, otlp-metrics"),
        (
            ["--scenario", "logql-query", "--method", "saturate"],
            "--method: saturate measures otlp-logs only; logql-query searches by bisect",
        ),
        (["--scenario", "loki-push", "--traces-per-request", "3"], "--traces-per-request"),
        (["--scenario", "logql-query", "--start-rate", "50"], "--start-rate: must be between"),
    ],
)
def test_bad_scenario_flags_are_refused_and_nothing_starts(
    nothing_starts: Path, capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    assert search_main(argv) == cli.EXIT_BAD_INPUT
    assert expected in " ".join(capsys.readouterr().err.split())


def test_another_scenario_searches_by_bisection_from_its_own_rates(nothing_starts: Path) -> None:
    def plan_of(*argv: str) -> tuple[SearchPlan, RunSpec]:
        return search_cli.plan_and_base(cli.build_parser().parse_args(["search", *argv]))

    plan, base = plan_of("--scenario", "logql-query", "--push-rate", "12000")
    assert plan.method == BISECT
    assert (plan.start_rate, plan.min_rate, plan.max_rate) == (1_200, 120, 60_000)
    assert (base.scenario, base.push_rate, base.rate) == ("logql-query", 12_000, 1_200)
    plan, _ = plan_of("--scenario", "logql-query", "--max-rate", "9000")
    assert (plan.min_rate, plan.max_rate) == (120, 9_000)
    plan, base = plan_of("--scenario", "otlp-traces", "--traces-per-request", "3")
    assert (plan.method, plan.start_rate) == (BISECT, SearchPlan().start_rate)
    assert (base.scenario, base.traces_per_request) == ("otlp-traces", 3)
    plan, _ = plan_of("--scenario", "otlp-logs")
    assert plan == SearchPlan()


def test_a_scenario_search_carries_its_signal_scope_and_unit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(tmp_path / "results"))
    record = record_with(FOUND, tmp_path)

    target = FakeTarget(name="local", environment={"profile": {"name": "charm-default"}})

    asked: list[StackRequest] = []

    def resolve(request: StackRequest) -> Profile:
        asked.append(request)
        return Profile()

    @contextlib.contextmanager
    def session(request: SessionRequest, hands: Any) -> Generator[FakeTarget]:
        yield target

    seen: dict[str, Any] = {}

    def run_search(target: Any, plan: SearchPlan, base: RunSpec, *a: Any, **kw: Any) -> Any:
        seen.update(base=base, stack=a[2], scope=kw["scope"])
        return replace(record, stack=a[2])

    argv = ["search", "--search-id", "sid", "--scenario", "otlp-metrics"]
    seams = replace(search_seams(session, run_search), resolve_stack=resolve)
    assert cli.main(argv, seams=seams) == cli.EXIT_OK
    charms = asked[0].charms
    assert charms is not None
    assert "metrics" in charms.signals  # the stack carries the metrics signal
    assert seen["stack"]["scenario"] == "otlp-metrics"
    assert seen["base"].scenario == "otlp-metrics"
    assert seen["scope"].signal.name == "metrics"  # the settle reads the metrics pipeline
    out = " ".join(capsys.readouterr().out.split())
    assert f"capacity {record.result.capacity_per_min:,} points/min" in out
    assert "status found: 141,000 points/min" in out


# ---- on a model (--target juju) ---------------------------------------------------------------


def test_a_search_on_a_model_takes_steps_of_minutes() -> None:
    def plan_of(*argv: str) -> SearchPlan:
        args = cli.build_parser().parse_args(["search", *argv])
        return search_cli.plan_and_base(args, search_juju.check_target_flags(args))[0]

    on_model = plan_of("--target", "juju", "--model", "cos")
    assert (on_model.saturate_s, on_model.hold_s, on_model.hold_min_s) == (480, 300, 180)
    assert plan_problems(on_model) == []  # its budget covers its longest noiseless search
    assert plan_of("--target", "juju", "--model", "cos", "--hold", "240").hold_s == 240
    assert plan_of().saturate_s == SearchPlan().saturate_s  # the local stack's, unchanged
    bisect = plan_of("--target", "juju", "--model", "cos", "--scenario", "loki-push")
    assert (bisect.method, bisect.probe_s) == ("bisect", 180)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--target", "juju"], "--model: required with --target juju"),
        (["--model", "cos"], "--model: only applies with --target juju"),
    ],
)
def test_model_flags_are_checked(argv: list[str], message: str) -> None:
    args = cli.build_parser().parse_args(["search", *argv])
    with pytest.raises(UsageError, match=message):
        search_juju.check_target_flags(args)
