"""`compare --stacks kept` (the default): each side's stack starts on its first repeat, in its
own run directory at its own ports, the runs alternate on the two running stacks, and both are
stopped at the end, also on Ctrl-C; a candidate stack that does not start is its failure and
is tried again; the record says where its repeats ran (fake stacks and runs: no processes)."""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import pytest
from support.fakes.target import FakeTarget
from test_comparing import A, B, RunningStack, run_result

from loadgate import cli
from loadgate.capacity.compare import driver as comparing
from loadgate.capacity.compare.record import CompareRecord
from loadgate.capacity.compare.rule import BASELINE, CANDIDATE, P99_AT_RATE
from loadgate.capacity.compare.run_order import ScheduledRun
from loadgate.cli.seams import Seams
from loadgate.contract.spec import RunSpec
from loadgate.judge import run_figures
from loadgate.records.result import RunResult
from loadgate.runner import run as runner
from loadgate.stack import local
from loadgate.stack.ops import StackOps
from loadgate.stack.ports import Ports


@dataclass
class Stacks:
    """Stacks that say where each starts and stops, and runs that say where they ran."""

    events: list[str] = field(default_factory=list[str])
    fail_up: dict[str, BaseException] = field(
        default_factory=dict[str, BaseException]
    )  # by the run directory's name
    fail_run: BaseException | None = None
    up_count: int = 0

    def up(self, what: Any, ports: Ports, **kw: Any) -> Any:
        failure = self.fail_up.pop(kw["root"].name, None)
        if failure is not None:
            raise failure
        self.up_count += 1
        self.events.append(f"up {kw['root'].name}:{ports.otlp_http} owner={kw['owner'].run_id}")
        return kw["root"].name

    def down(self, root: Path | None = None, timeout: float = 20.0) -> list[str]:
        assert root is not None
        self.events.append(f"down {root.name}")
        return []

    def open_target(self, info: Any) -> FakeTarget:
        self.events.append(f"open {info}")
        return FakeTarget(on_close=lambda: None)

    def execute(self, spec: RunSpec, target: Any, results_root: Path, **kw: Any) -> RunResult:
        self.events.append(f"run {spec.run_id}")
        if self.fail_run is not None:
            raise self.fail_run
        result = run_result(spec.run_id, 10.0, 0.5)
        return replace(result, bottleneck=run_figures.bottleneck_block(result))

    @property
    def ops(self) -> StackOps:
        return StackOps(up=self.up, down=self.down)

    def seams(self) -> Seams:
        return Seams(
            build_missing=lambda *a, **kw: cli.EXIT_OK,  # pyright: ignore[reportUnknownLambdaType]
            stack=self.ops,
            open_target=self.open_target,
            execute=self.execute,
        )


def kept_on(tmp_path: Path, stacks: Stacks) -> comparing.KeptRepeats:
    root = tmp_path / "stack"
    return comparing.KeptRepeats(
        root=root,
        ports=Ports.from_base(20000),
        spec=RunSpec(rate=30_000, duration="10s"),
        results_root=tmp_path / "results",
        compare_id="cmp",
        metrics=comparing.parse_metrics("p99,cpu"),
        stack=stacks.ops,
        open_target=stacks.open_target,
        execute=stacks.execute,
        candidate_root=comparing.candidate_root(root),
        candidate_ports=comparing.candidate_ports(20000),
    )


def test_each_sides_stack_starts_once_and_both_stop_at_the_end(tmp_path: Path) -> None:
    stacks = Stacks()
    repeat = kept_on(tmp_path, stacks)
    try:
        record = comparing.drive(
            "cmp", A, B, repeats=2, metrics=repeat.metrics, run_one=repeat, order="ABBA",
            results_root=tmp_path / "results", stacks=repeat.STACKS,
        )  # fmt: skip
    finally:
        repeat.close()
    assert stacks.events == [
        "up stack:20001 owner=cmp-b1", "open stack", "run cmp-b1",
        "up stack-candidate:20011 owner=cmp-c1", "open stack-candidate", "run cmp-c1",
        "open stack-candidate", "run cmp-c2",
        "open stack", "run cmp-b2",
        "down stack-candidate", "down stack",
    ]  # fmt: skip
    assert record.stacks == "kept"
    assert "kept stacks" in record.plan_summary
    stored = json.loads((tmp_path / "results" / "cmp" / "compare.json").read_text())
    assert stored["stacks"] == "kept"
    repeat.close()  # a second close stops nothing again
    assert stacks.events.count("down stack") == 1


def test_ctrl_c_during_a_run_stops_both_stacks_at_close(tmp_path: Path) -> None:
    stacks = Stacks()
    repeat = kept_on(tmp_path, stacks)
    repeat(ScheduledRun(0, BASELINE, 1), A)
    stacks.fail_run = KeyboardInterrupt()
    with pytest.raises(KeyboardInterrupt):
        repeat(ScheduledRun(1, CANDIDATE, 1), B)
    assert not any(e.startswith("down") for e in stacks.events)  # still held
    repeat.close()
    assert stacks.events[-2:] == ["down stack-candidate", "down stack"]


def test_a_candidate_stack_that_does_not_start_is_its_failure_and_is_tried_again(
    tmp_path: Path,
) -> None:
    stacks = Stacks(fail_up={"stack-candidate": local.StackError("port 24301 is in use")})
    repeat = kept_on(tmp_path, stacks)
    outcome = repeat(ScheduledRun(1, CANDIDATE, 1), B)
    assert outcome.failures == ("the candidate stack did not start: port 24301 is in use",)
    assert set(outcome.values.values()) == {None}
    again = repeat(ScheduledRun(3, CANDIDATE, 2), B)
    assert again.failures == ()
    assert again.values[P99_AT_RATE.name] == 10.0
    assert stacks.up_count == 1
    stacks.fail_up["stack"] = local.StackError("no Loki binary")
    with pytest.raises(comparing.AbortedError, match="the baseline stack did not start"):
        repeat(ScheduledRun(0, BASELINE, 1), A)
    repeat.close()
    assert stacks.events[-1] == "down stack-candidate"


def test_the_candidates_place_is_beside_the_baselines() -> None:
    assert comparing.candidate_root(Path("/s/loadgate/stack")) == Path(
        "/s/loadgate/stack-candidate"
    )
    assert comparing.candidate_ports(None).otlp_grpc == 24300
    assert comparing.candidate_ports(30000).otlp_grpc == 30010
    assert comparing.candidate_ports(65518).prometheus == 65534
    with pytest.raises(ValueError, match="base port: at most 65518 when both sides' stacks"):
        comparing.candidate_ports(65519)


def test_a_record_before_kept_stacks_reads_as_fresh(tmp_path: Path) -> None:
    stacks = Stacks()
    repeat = kept_on(tmp_path, stacks)
    record = comparing.drive(
        "old", A, B, repeats=1, metrics=repeat.metrics, run_one=repeat,
        results_root=tmp_path / "results", stacks=repeat.STACKS,
    )  # fmt: skip
    repeat.close()
    data = record.to_dict()
    del data["stacks"]
    assert CompareRecord.from_dict(data).stacks == "fresh"
    with pytest.raises(Exception, match="stacks"):
        CompareRecord.from_dict({**data, "stacks": "warm"})


SIDES = ["--baseline", "profile=hand-nop", "--candidate", "profile=hand-nop queue-size=5000"]
FAST = ["--duration", "10s", "--metrics", "p99,cpu", "--order", "ABAB"]


def test_compare_keeps_both_stacks_by_default_and_fresh_is_one_at_a_time(
    cli_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stacks = Stacks()
    argv = ["compare", *SIDES, *FAST, "--repeats", "2", "--compare-id", "k"]
    cli.main(argv, seams=stacks.seams())
    assert [e for e in stacks.events if e.startswith(("up", "down"))] == [
        "up stack:4318 owner=k-b1", "up stack-candidate:24301 owner=k-c1",
        "down stack-candidate", "down stack",
    ]  # fmt: skip
    assert json.loads((cli_env / "k" / "compare.json").read_text())["stacks"] == "kept"
    assert "kept stacks" in " ".join(capsys.readouterr().out.split())
    stacks = Stacks()
    cli.main([*argv[:-1], "f", "--stacks", "fresh", "--base-port", "21000"],
             seams=stacks.seams())  # fmt: skip
    assert [e for e in stacks.events if e.startswith(("up", "down"))] == [
        "up stack:21001 owner=f-b1", "down stack", "up stack:21001 owner=f-c1", "down stack",
        "up stack:21001 owner=f-b2", "down stack", "up stack:21001 owner=f-c2", "down stack",
    ]  # fmt: skip
    assert json.loads((cli_env / "f" / "compare.json").read_text())["stacks"] == "fresh"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--stacks", "warm"], "argument --stacks: invalid choice: 'warm' (choose from"),
        (["--base-port", "65520"], "--base-port: base port: at most 65518 when both sides' "
         "stacks are kept up"),
    ],
)  # fmt: skip
def test_bad_stack_flags_are_refused_and_nothing_starts(
    cli_env: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    stacks = Stacks(fail_up={d: AssertionError("started") for d in ("stack", "stack-candidate")})
    refused = pytest.raises(SystemExit) if argv[0] == "--stacks" else contextlib.nullcontext()
    with refused:
        code = cli.main(["compare", *SIDES, *FAST, *argv], seams=stacks.seams())
        assert code == cli.EXIT_BAD_INPUT
    assert message in " ".join(capsys.readouterr().err.split())
    assert stacks.events == []
    assert not cli_env.exists()


def test_a_stack_running_where_the_candidates_would_start_is_refused(
    cli_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stacks = Stacks()
    seams = stacks.seams()

    def read_info(root: Path) -> Any:
        return RunningStack() if root.name == "stack-candidate" else None

    seams = replace(seams, stack=replace(seams.stack, read_info=read_info))
    assert cli.main(["compare", *SIDES, *FAST], seams=seams) == cli.EXIT_BAD_INPUT
    err = " ".join(capsys.readouterr().err.split())
    assert "a stack is running at" in err
    assert "stack-candidate" in err
    assert stacks.events == []


def test_a_failing_run_on_a_kept_stack_is_a_failure_the_stack_stays(tmp_path: Path) -> None:
    stacks = Stacks(fail_run=runner.RunError("k6 exited with code 107"))
    repeat = kept_on(tmp_path, stacks)
    outcome = repeat(ScheduledRun(0, BASELINE, 1), A)
    assert "k6 exited with code 107" in outcome.failures[0]
    stacks.fail_run = None
    assert repeat(ScheduledRun(2, BASELINE, 2), A).values[P99_AT_RATE.name] == 10.0
    repeat.close()
    assert [e for e in stacks.events if e.startswith(("up", "down"))] == [
        "up stack:20001 owner=cmp-b1", "down stack",
    ]  # fmt: skip


def test_kept_repeats_beside_fresh_ones_keep_every_setting(tmp_path: Path) -> None:
    kept = kept_on(tmp_path, Stacks())
    fresh = comparing.LocalRepeats(
        **{f.name: getattr(kept, f.name) for f in fields(comparing.LocalRepeats) if f.init}
    )
    again = comparing.KeptRepeats.beside(fresh, kept.candidate_root, kept.candidate_ports)
    assert again == kept
    assert again.candidate_root == tmp_path / "stack-candidate"
    assert again.candidate_ports.otlp_http == 20011
