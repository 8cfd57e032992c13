"""`compare --if-same skip`: a comparison whose sides run the same stack runs nothing and says
so (exit 0); sides that differ are compared, with what differs said; what cannot be told is
compared; the default compares without rendering anything first. And the pure part of telling
two rendered stacks apart (stack.same_stack). Fake stacks and runs: no processes."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from test_compare_kept import FAST, SIDES, Stacks

from loadgate import cli
from loadgate.stack import same_stack
from loadgate.stack.local import StackChoice
from loadgate.stack.same_stack import Rendered, Sameness

ARGV = ["compare", *SIDES, *FAST, "--repeats", "1", "--compare-id", "s"]


def _seams(stacks: Stacks, found: Sameness | None, asked: list[str]):
    def tell(a: StackChoice, b: StackChoice) -> Sameness:
        asked.append(f"{a} | {b}")
        if found is None:
            raise AssertionError("rendered without --if-same skip")
        return found

    return replace(stacks.seams(), same_stack=tell)


def test_sides_that_run_the_same_stack_are_skipped_and_nothing_starts(
    cli_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stacks, asked = Stacks(), list[str]()
    code = cli.main([*ARGV, "--if-same", "skip"], seams=_seams(stacks, Sameness(True), asked))
    assert code == cli.EXIT_OK
    assert len(asked) == 1
    assert stacks.events == []
    out = " ".join(capsys.readouterr().out.split())
    assert out.startswith("verdict skipped (exit 0): the candidate (")
    assert "runs the same stack as the baseline" in out
    assert not (cli_env / "s").exists()


def test_sides_that_differ_are_compared_and_what_differs_is_said(
    cli_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stacks, asked = Stacks(), list[str]()
    found = Sameness(False, ("collector config: exporters.loki.sending_queue.queue_size",))
    code = cli.main([*ARGV, "--if-same", "skip"], seams=_seams(stacks, found, asked))
    assert code != cli.EXIT_BAD_INPUT
    assert any(e.startswith("up ") for e in stacks.events)
    err = " ".join(capsys.readouterr().err.split())
    assert "the sides differ in collector config: exporters.loki.sending_queue.queue_size" in err
    assert json.loads((cli_env / "s" / "compare.json").read_text())["compare_id"] == "s"


def test_a_side_that_cannot_be_rendered_is_compared_and_the_reason_said(
    cli_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stacks, asked = Stacks(), list[str]()
    found = Sameness(False, unknown="otelcol rev999 is blocked: no relation")
    cli.main([*ARGV, "--if-same", "skip"], seams=_seams(stacks, found, asked))
    assert any(e.startswith("up ") for e in stacks.events)
    err = " ".join(capsys.readouterr().err.split())
    assert "could not tell whether the sides run the same stack (otelcol rev999 is blocked" in err
    assert (cli_env / "s" / "compare.json").exists()


def test_by_default_nothing_is_rendered_first_and_the_comparison_runs(cli_env: Path) -> None:
    stacks, asked = Stacks(), list[str]()
    cli.main(ARGV, seams=_seams(stacks, None, asked))
    assert asked == []
    assert any(e.startswith("up ") for e in stacks.events)
    assert (cli_env / "s" / "compare.json").exists()


def test_a_bad_if_same_is_refused_naming_the_choices(
    cli_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stacks, asked = Stacks(), list[str]()
    with pytest.raises(SystemExit):
        cli.main([*ARGV, "--if-same", "maybe"], seams=_seams(stacks, None, asked))
    err = " ".join(capsys.readouterr().err.split())
    assert "argument --if-same: invalid choice: 'maybe' (choose from" in err
    assert "compare" in err
    assert "skip" in err
    assert stacks.events == []
    assert asked == []
    assert not cli_env.exists()


# ---- telling rendered stacks apart (pure) ----------------------------------------------------


def test_differences_are_the_dotted_paths_that_differ_or_exist_on_one_side_only() -> None:
    a = {"exporters": {"loki": {"queue": 1000, "retry": True}}, "service": {"pipelines": ["x"]}}
    b = {"exporters": {"loki": {"queue": 5000, "retry": True}, "debug": {}}, "service": {
        "pipelines": ["x"]}}  # fmt: skip
    assert same_stack.differences(a, b) == ["exporters.debug", "exporters.loki.queue"]
    assert same_stack.differences(a, a) == []
    assert same_stack.differences([1, 2], [2, 1]) == ["(the whole value)"]


def _rendered(**changes: object) -> Rendered:
    base = Rendered(
        settings={"otelcol": {"options": {"queue_size": 1000}}},
        collector_config={"receivers": {"otlp": {}}},
        loki_config={"limits_config": {"ingestion_rate_mb": 4}},
        services={"otelcol": {"command": "otelcol --config c.yaml"}},
        checks={"ready": {"http": {"url": "x"}}},
    )
    return replace(base, **changes)  # pyright: ignore[reportArgumentType]


def test_rendered_stacks_name_the_part_and_path_that_differ_and_count_past_a_few() -> None:
    a = _rendered()
    assert same_stack.rendered_differences(a, _rendered()) == []
    b = _rendered(loki_config={"limits_config": {"ingestion_rate_mb": 8}})
    assert same_stack.rendered_differences(a, b) == ["Loki config: limits_config.ingestion_rate_mb"]
    many = _rendered(collector_config={f"k{i:02}": i for i in range(12)})
    found = same_stack.rendered_differences(a, many)
    assert len(found) == 9
    assert found[-1] == "and 5 more"


def test_the_charms_sources_are_not_part_of_what_a_stack_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Prepared:
        def to_dict(self) -> dict[str, object]:
            return {"preset": "charm-default",
                    "otelcol": {"source": {"commit": "abc"}, "options": {"q": 1}},
                    "loki": {"source": {"commit": "def"}, "options": {}}}  # fmt: skip

    settings = same_stack.settings_of(Prepared())  # pyright: ignore[reportArgumentType]
    assert settings == {"preset": "charm-default", "otelcol": {"options": {"q": 1}},
                        "loki": {"options": {}}}  # fmt: skip


def test_a_replay_refuses_if_same_skip_it_runs_nothing_anyway(
    cli_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    del cli_env
    assert cli.main(["compare", "--replay", "any", "--if-same", "skip"]) == cli.EXIT_BAD_INPUT
    err = " ".join(capsys.readouterr().err.split())
    assert "--replay: --if-same skip not taken: a replay runs nothing" in err
