"""Building the pinned parts: what needs no build tool (a build with a stand-in `go`:
tests/tools/test_binaries_build.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadgate.build import binaries


@pytest.fixture
def tools(tmp_path: Path) -> Path:
    folder = tmp_path / "tools" / "k6"
    folder.mkdir(parents=True)
    (folder / "go.mod").write_text("module x\n")
    (folder / "go.sum").write_text("")
    return tmp_path / "tools"


K6 = binaries.part("k6")


def test_missing_go_is_named(tmp_path: Path, tools: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(binaries.BuildError) as info:
        binaries.build(K6, tmp_path / "bin", tools)
    assert "`go` is not on PATH" in str(info.value)
    assert "k6 v1.8.1" in str(info.value)
    assert not (tmp_path / "bin").exists()


def test_every_part_has_a_committed_wrapper_module() -> None:
    tools = Path(__file__).resolve().parents[2] / "tools"
    for p in (*binaries.PARTS, binaries.OCB):
        module = tools / p.module
        assert (module / "go.mod").is_file(), p.name
        assert (module / "go.sum").is_file(), p.name
    assert (tools / "otelcol" / "manifest.yaml").is_file()


def test_go_environment_pins_hashes_locally() -> None:
    env = binaries.go_env()
    assert env["GOSUMDB"] == "off"
    assert env["GOTOOLCHAIN"] == "local"


def test_a_charm_workload_maps_to_the_part_that_runs_it() -> None:
    assert binaries.workload_part("otelcol", "0.130-26.04", "rev221").name == "otelcol"
    assert binaries.workload_part("otelcol", "0.130-24.04", "rev160").name == "otelcol"
    assert binaries.workload_part("loki", "3.7-26.04", "rev244").name == "loki"


@pytest.mark.parametrize("tag", ["0.98-22.04", None, ""])
def test_a_workload_version_without_a_build_is_refused_by_name(tag: str | None) -> None:
    expected = r"rev12 runs otelcol .*builds otelcol 0\.130 only"
    with pytest.raises(binaries.WorkloadBuildError, match=expected):
        binaries.workload_part("otelcol", tag, "rev12")
