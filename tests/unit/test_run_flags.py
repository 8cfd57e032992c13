"""Every flag of `loadgate run` with its bad values: exit code 2, the flag named, the text shown
as typed (never read as markup), and nothing started, built or written."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from loadgate import cli
from loadgate.build import binaries
from loadgate.cli import flags as cli_flags
from loadgate.cli import run as run_cli
from loadgate.cli.binaries_output import build_missing
from loadgate.cli.seams import Seams
from loadgate.stack.ops import StackOps
from loadgate.stack.profile import Profile

BAD: dict[str, list[str]] = {
    "--scenario": ["nope", ""],
    "--executor": ["bogus", ""],
    "--vus": ["0", "-1", "x", "10001", "1.5"],
    "--rate": ["-5", "0", "abc", "1e3", "2.5"],
    "--duration": ["abc", "", "0s", "25h", " 60s", "60s ", "60s\n", "\u0666\u0660s", "[/x]"],
    "--logs-per-request": ["0", "1001", "x"],
    "--requests-per-iteration": ["0", "101", "x"],
    "--body-min": ["0", "x", "1048577"],
    "--body-max": ["0", "1048577", "x"],
    "--p99-ms": ["0", "-1", "nan", "inf", "x"],
    "--max-error-rate": ["-0.1", "1.5", "nan", "x"],
    "--min-logs-per-minute": ["-1", "x", "1.5"],
    "--labels": ["nope", "a=[/red]", "[x]=1", "run_id=x", "a=b=c", "a=" + "v" * 129],
    "--run-id": ["abc\n", "../x", "-x", "a" * 65, "[/x]", "a b"],
    "--target": ["k8s"],
    "--model": ["m"],  # only with --target juju
    "--drain-timeout": ["-1", "nan", "inf", "-inf", "x", "86401"],
    "--profile": ["fast"],
    "--queue-size": ["0", "-1", "x", "1.5", "10000001"],
    "--base-port": ["80", "70000", "x"],
    "--otelcol-charm": ["", "x@", "@../x", " rev1", "a@b@c", "rev1\n", "x.tar.gz@rev1"],
    "--loki-charm": ["", "@-rf", "rev2 "],
    "--charm-config": ["queue_size", "=5", "processors=@/no/such/file"],
    "--loki-config": ["nokey", "=1"],
    "--signals": ["", "profiles", "metrics,traces", "logs,logs", "logs;metrics"],
    "--backend-fault": ["503=2", "", "drop=0.5", "delay=1x", "seed=1", "503=0.5,503=0.1"],
    # A scenario's own flags: out of bounds, not a number, or given to another scenario.
    "--series-per-request": ["0", "1001", "x", "10"],
    "--points-per-series": ["0", "101", "x", "5"],
    "--histogram-buckets": ["0", "65", "x", "8"],
    "--streams-per-request": ["0", "1001", "x", "10"],
    "--lines-per-stream": ["0", "1001", "x", "10"],
    "--loki-streams": ["0", "100001", "x", "100"],
    "--hand": ["exporter=kafka", "gomemlimit=lots", "x=1", "nokey", "num-consumers=0"],
    "--traces-per-request": ["0", "1001", "x", "5"],
    "--spans-per-trace": ["0", "101", "x", "1.5", "9"],
    "--span-attributes": ["-1", "129", "x", "20"],
    "--attribute-size": ["0", "16385", "x", "32"],
    "--push-rate": ["0", "1000000001", "x", "6000"],
    "--query-window": ["0", "86401", "x", "60"],
}
CASES = [(flag, value) for flag, values in BAD.items() for value in values]


def returns(value: Any) -> Callable[..., Any]:
    """A stand-in that takes any arguments and returns `value`."""

    def stand_in(*args: Any, **kwargs: Any) -> Any:
        return value

    return stand_in


def forbidden(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError(f"started something: {args!r}")


# Resolving a stack (charm rendering), a build, a stack, a session or a run: any is an error.
NOTHING_STARTS = Seams(
    resolve_stack=forbidden,
    build_missing=forbidden,
    stack=StackOps(up=forbidden, down=forbidden),
    open_target=forbidden,
    session=forbidden,
    execute=forbidden,
    run_search=forbidden,
)


@pytest.fixture
def nothing_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Isolated folders; the commands get NOTHING_STARTS as their seams (run_main)."""
    monkeypatch.setenv("LOADGATE_STACK_DIR", str(tmp_path / "stack"))
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("LOADGATE_BIN_DIR", str(tmp_path / "bin"))
    return tmp_path


def run_main(argv: list[str]) -> int:
    try:
        return cli.main(argv, seams=NOTHING_STARTS)
    except SystemExit as exc:  # argparse refuses choices and typed flags itself
        return exc.code if isinstance(exc.code, int) else -1


@pytest.mark.parametrize(("flag", "value"), CASES, ids=[f"{f}={v!r}" for f, v in CASES])
def test_every_bad_run_flag_exits_2_naming_it_and_starts_nothing(
    nothing_starts: Path, flag: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_main(["run", f"{flag}={value}"])
    err = capsys.readouterr().err
    assert code == cli.EXIT_BAD_INPUT, err
    assert flag in err
    assert "Traceback" not in err
    for folder in ("stack", "results", "bin"):
        assert not (nothing_starts / folder).exists(), folder


@pytest.mark.parametrize(
    "charm_flag", [["--otelcol-charm", "rev160"], ["--charm-config", "queue_size=5000"]]
)
def test_charm_flags_with_a_hand_written_profile_are_refused(
    nothing_starts: Path, charm_flag: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_main(["run", "--profile", "hand-nop", *charm_flag]) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert charm_flag[0] in err
    assert "hand-written" in err


def test_keep_stack_takes_no_value(
    nothing_starts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_main(["run", "--keep-stack=yes"]) == cli.EXIT_BAD_INPUT
    assert "--keep-stack" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (["--duration", "[/x]"], "got '[/x]'"),
        (["--labels", "a=[/red]"], "value '[/red]'"),
        (["--labels", "Ab-c=1"], "must match [a-zA-Z_][a-zA-Z0-9_]*"),
        (["--run-id", "[bold]x"], "got '[bold]x'"),
    ],
)
def test_user_text_is_printed_as_typed_not_as_markup(
    nothing_starts: Path, argv: list[str], shown: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_main(["run", *argv]) == cli.EXIT_BAD_INPUT
    assert shown in capsys.readouterr().err


def test_all_bad_spec_flags_are_listed_at_once(
    nothing_starts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_main(["run", "--rate", "-5", "--duration", "abc", "--run-id", "a\n"])
    err = capsys.readouterr().err
    assert code == cli.EXIT_BAD_INPUT
    assert "--rate:" in err
    assert "--duration:" in err
    assert "--run-id:" in err


def test_a_results_directory_that_is_a_file_is_refused_first(
    nothing_starts: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    results = nothing_starts / "results-file"
    results.write_text("not a folder")
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(results))
    assert run_main(["run"]) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert f"results directory {results}" in err
    assert "is a file" in err
    assert not (nothing_starts / "stack").exists()


@pytest.mark.parametrize("where", ["under-a-file", "proc"])
def test_an_unwritable_results_directory_is_refused_first(
    nothing_starts: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    where: str,
) -> None:
    if where == "under-a-file":
        (nothing_starts / "file").write_text("x")
        results = nothing_starts / "file" / "results"
    else:
        results = Path("/proc/loadgate-results")  # no one may create folders in /proc
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(results))
    assert run_main(["run"]) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "is not writable" in err
    assert not results.exists()
    assert not (nothing_starts / "stack").exists()


def test_a_run_id_that_already_has_results_is_refused(
    nothing_starts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (nothing_starts / "results" / "r1").mkdir(parents=True)
    assert run_main(["run", "--run-id", "r1"]) == cli.EXIT_BAD_INPUT
    assert "--run-id: r1 already has results" in capsys.readouterr().err


def failing_build(*args: Any, **kwargs: Any) -> None:
    raise binaries.BuildError("go: command not found")


# The real build_missing, with k6 missing and its build failing.
FAILING_BUILD = partial(build_missing, missing=returns(["k6"]), ensure=failing_build)


def test_run_errors_carry_the_run_prefix_not_binaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LOADGATE_STACK_DIR", str(tmp_path / "stack"))
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(tmp_path / "results"))
    seams = Seams(resolve_stack=returns(Profile()), build_missing=FAILING_BUILD)
    assert cli.main(["run"], seams=seams) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "loadgate run: go: command not found" in err
    assert "loadgate binaries:" not in err


def test_build_errors_of_binaries_keep_their_own_prefix(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert FAILING_BUILD(["k6"]) == cli.EXIT_BAD_INPUT
    assert "loadgate binaries: go: command not found" in capsys.readouterr().err


def test_the_flags_of_run_are_all_covered() -> None:
    """A new flag of `run` needs its bad values above."""
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")  # pyright: ignore[reportPrivateUsage]
    run = sub.choices["run"]  # pyright: ignore[reportUnknownMemberType, reportOptionalSubscript, reportIndexIssue]
    flags = {
        opt
        for action in run._actions  # pyright: ignore[reportUnknownMemberType, reportAttributeAccessIssue]
        for opt in action.option_strings  # pyright: ignore[reportUnknownMemberType]
        if opt.startswith("--") and opt != "--help"  # pyright: ignore[reportUnknownMemberType]
    }
    assert flags == {*BAD, "--keep-stack", "--saturate"}  # switches take no value
    assert cli_flags.MAX_DRAIN_TIMEOUT == 86400


def test_saturate_offers_more_with_gates_that_expect_refusals_and_given_flags_win() -> None:
    parser = cli.build_parser()
    spec = run_cli.spec_from_args(parser.parse_args(["run", "--saturate"]), loopback_only=True)
    assert spec.rate == 300_000
    assert spec.vus == 300
    assert spec.max_error_rate == 1.0
    assert spec.effective_min_logs_per_minute == 0
    given = parser.parse_args(["run", "--saturate", "--rate", "400000", "--p99-ms", "50"])
    spec = run_cli.spec_from_args(given, loopback_only=True)
    assert (spec.rate, spec.p99_ms, spec.max_error_rate) == (400_000, 50.0, 1.0)


def test_saturate_on_juju_runs_long_enough_for_a_steady_window_at_a_one_minute_scrape() -> None:
    parser = cli.build_parser()
    local = run_cli.spec_from_args(parser.parse_args(["run", "--saturate"]), loopback_only=True)
    juju_args = ["run", "--target", "juju", "--model", "m", "--saturate"]
    juju = run_cli.spec_from_args(parser.parse_args(juju_args), loopback_only=False)
    assert juju.duration == "8m" != local.duration
    assert (juju.rate, juju.vus, juju.max_error_rate) == (300_000, 300, 1.0)
    given = parser.parse_args([*juju_args, "--duration", "12m"])
    assert run_cli.spec_from_args(given, loopback_only=False).duration == "12m"
    plain = parser.parse_args(["run", "--target", "juju", "--model", "m"])
    assert run_cli.spec_from_args(plain, loopback_only=False).duration == local.duration
