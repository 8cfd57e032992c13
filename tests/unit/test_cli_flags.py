"""The flags several commands share come from one declaration: the run parameters from the table
in loadgate.contract.params (help and default included), `--drain-timeout` with one limit."""

from __future__ import annotations

import argparse
from typing import cast

import pytest

from loadgate import cli
from loadgate.cli import bench, compare_input, run, search
from loadgate.cli.flags import MAX_DRAIN_TIMEOUT
from loadgate.contract.params import BY_NAME, PARAMS


def subparser(*names: str) -> argparse.ArgumentParser:
    parser = cli.build_parser()
    for name in names:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))  # pyright: ignore[reportPrivateUsage]
        parser = cast(dict[str, argparse.ArgumentParser], sub.choices)[name]
    return parser


def flag_help(parser: argparse.ArgumentParser) -> dict[str, str]:
    return {
        opt: str(action.help)
        for action in parser._actions  # pyright: ignore[reportPrivateUsage]
        for opt in action.option_strings
        if opt.startswith("--")
    }


COMMANDS = [
    (("run",), run.RUN_PARAMS),
    (("search",), search.SEARCH_PARAMS),
    (("compare",), compare_input.COMPARE_PARAMS),
    (("bench", "generator"), bench.BENCH_PARAMS),
]


@pytest.mark.parametrize(("command", "names"), COMMANDS, ids=[" ".join(c) for c, _ in COMMANDS])
def test_each_run_parameter_flag_is_the_tables(command: tuple[str, ...], names: list[str]) -> None:
    helps = flag_help(subparser(*command))
    for name in names:
        param = BY_NAME[name]
        assert helps[f"--{name}"].startswith(param.help), name
    for param in PARAMS:
        if param.name not in names:
            assert f"--{param.name}" not in helps or param.name == "target", param.name


def test_the_help_shows_the_tables_default_with_its_unit() -> None:
    helps = flag_help(subparser("run"))
    assert helps["--rate"].endswith("(default 60000 records/min)")
    assert helps["--p99-ms"].endswith("(default 100 ms)")
    assert helps["--max-error-rate"].endswith("(default 0.01)")
    assert "95%% of rate" in helps["--min-logs-per-minute"]  # argparse shows it as 95%
    assert "one of constant-vus, constant-arrival-rate, ramping-arrival-rate" in helps["--executor"]
    assert helps["--target"] == "default local"  # run's --target is where the load goes
    bench_help = flag_help(subparser("bench", "generator"))
    assert bench_help["--vus"].endswith("(default 4)")  # the benchmark's own default
    assert helps["--vus"].endswith("(default 10)")  # the table's default, elsewhere


@pytest.mark.parametrize("command", ["run", "search", "compare"])
def test_drain_timeout_has_one_limit(command: str) -> None:
    parser = subparser(command)
    drain = next(a for a in parser._actions if "--drain-timeout" in a.option_strings)  # pyright: ignore[reportPrivateUsage]
    assert drain.default == 60.0
    parse = drain.type
    assert callable(parse)
    assert parse(str(MAX_DRAIN_TIMEOUT)) == MAX_DRAIN_TIMEOUT
    with pytest.raises(argparse.ArgumentTypeError, match="at most 86400"):
        parse(str(MAX_DRAIN_TIMEOUT + 1))
