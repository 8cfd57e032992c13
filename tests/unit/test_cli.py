"""The CLI refuses bad input before anything starts, naming the flag and what is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadgate import cli


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LOADGATE_STACK_DIR", str(tmp_path / "stack"))
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("LOADGATE_BIN_DIR", str(tmp_path / "bin"))
    return tmp_path


@pytest.mark.parametrize(
    ("argv", "fragments"),
    [
        (["--rate", "-5"], ["--rate: must be an integer between 1 and"]),
        (["--body-min", "3000", "--body-max", "2048"], ["--body-min: must not exceed body-max"]),
        (["--executor", "bogus"], ["--executor: must be one of constant-vus"]),
        (["--duration", "abc"], ["--duration: must be a k6 duration"]),
        (["--rate", "-5", "--duration", "abc"], ["--rate:", "--duration:"]),
        (["--labels", "nope"], ["--labels: expected k=v"]),
    ],
)
def test_bad_run_flags_are_refused_before_anything_starts(
    isolated: Path, argv: list[str], fragments: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.main(["run", *argv])
    err = capsys.readouterr().err
    assert code == cli.EXIT_BAD_INPUT
    for fragment in fragments:
        assert fragment in err
    # Nothing was built, started or written.
    assert not (isolated / "stack").exists()
    assert not (isolated / "results").exists()
    assert not (isolated / "bin").exists()


def test_model_only_with_the_juju_target(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "--model", "m"]) == cli.EXIT_BAD_INPUT
    assert "--model: only applies with --target juju" in capsys.readouterr().err


def test_unknown_profile_is_refused_by_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(["stack", "up", "--profile", "fast"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "--profile" in err
    assert "charm-default" in err


@pytest.mark.parametrize("port", ["80", "70000", "x"])
def test_bad_base_port(port: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["stack", "up", "--base-port", port])
    assert "--base-port" in capsys.readouterr().err


def test_status_without_a_stack(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["stack", "status"]) == cli.EXIT_BAD_INPUT
    assert "not running" in capsys.readouterr().err


def test_down_without_a_stack(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["stack", "down"]) == cli.EXIT_OK
    assert "nothing was running" in capsys.readouterr().err


def test_report_without_results(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["report"]) == cli.EXIT_BAD_INPUT
    assert "no result.json" in capsys.readouterr().err
