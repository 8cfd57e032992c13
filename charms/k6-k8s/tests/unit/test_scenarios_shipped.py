"""The scenario files ship under src/k6 (what charmcraft's uv plugin packs); without them the
charm says so loudly: Blocked, and start-load fails naming the missing folder or file."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import container, context, otlp_relation
from ops import testing

from charm import SCRIPTS, K6Charm
from workload import K6Workload, WorkloadError, scripts_problem

REPACK = "repack it (scripts/pack-k6-charm)"


def test_the_scenarios_are_where_the_uv_plugin_packs() -> None:
    """charmcraft's uv plugin copies only src/ and lib/ of the charm into the packed charm."""
    assert SCRIPTS.parts[0] == "src"
    charm_dir = Path(__file__).resolve().parents[2]
    assert (charm_dir / SCRIPTS / "otlp-logs.js").is_file()
    assert sorted(p.name for p in (charm_dir / SCRIPTS / "lib").glob("*.js"))
    assert not (charm_dir / "k6").exists()  # no second copy outside src/


def charm_root_with(tmp_path: Path, files: dict[str, str] | None) -> testing.Context[K6Charm]:
    """A Context whose charm directory has src/k6 with `files` (None: no folder at all)."""
    ctx = context(tmp_path, scripts=False)
    if files is not None:
        folder = Path(ctx.charm_root or tmp_path) / "src" / "k6"
        folder.mkdir(parents=True)
        for name, text in files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text)
    return ctx


@pytest.mark.parametrize(
    ("files", "problem"),
    [
        (None, "src/k6 is missing"),
        ({}, "lacks otlp-logs.js"),
        ({"lib/config.js": "export {}"}, "lacks otlp-logs.js"),
    ],
    ids=["no-folder", "empty", "no-scenario"],
)
def test_start_load_fails_loudly_without_the_scenarios(
    tmp_path: Path, disk: Path, files: dict[str, str] | None, problem: str
) -> None:
    ctx = charm_root_with(tmp_path, files)
    state = testing.State(leader=True, containers={container(disk)}, relations={otlp_relation()})
    with pytest.raises(testing.ActionFailed) as failed:
        ctx.run(ctx.on.action("start-load", params={}), state)
    assert problem in failed.value.message
    assert REPACK in failed.value.message
    out = failed.value.state
    assert isinstance(out, testing.State)
    assert "k6" not in out.get_container("k6").plan.services
    assert not (disk / "var-lib-k6" / "runs").exists()
    assert not (disk / "etc-k6" / "scripts").exists()
    assert out.unit_status == testing.BlockedStatus("the charm lacks its k6 scenarios: repack it")


def test_pebble_ready_without_the_scenarios_blocks(tmp_path: Path, disk: Path) -> None:
    ctx = charm_root_with(tmp_path, None)
    k6 = container(disk)
    out = ctx.run(
        ctx.on.pebble_ready(k6), testing.State(containers={k6}, relations={otlp_relation()})
    )
    assert out.unit_status == testing.BlockedStatus("the charm lacks its k6 scenarios: repack it")


def test_pebble_ready_pushes_the_scenarios(tmp_path: Path, disk: Path) -> None:
    ctx = context(tmp_path)
    k6 = container(disk)
    out = ctx.run(
        ctx.on.pebble_ready(k6), testing.State(containers={k6}, relations={otlp_relation()})
    )
    assert (disk / "etc-k6" / "scripts" / "otlp-logs.js").is_file()
    assert (disk / "etc-k6" / "scripts" / "lib" / "config.js").is_file()
    assert out.unit_status == testing.ActiveStatus("idle")


class NoPebble:
    def __getattr__(self, name: str) -> object:
        raise AssertionError(f"unexpected Pebble call {name}")


def test_push_scripts_pushes_nothing_from_a_broken_folder(tmp_path: Path) -> None:
    workload = K6Workload(NoPebble())  # type: ignore[arg-type]
    with pytest.raises(WorkloadError, match="is missing"):
        workload.push_scripts(tmp_path / "absent")
    (tmp_path / "empty").mkdir()
    with pytest.raises(WorkloadError, match=r"lacks otlp-logs\.js"):
        workload.push_scripts(tmp_path / "empty")
    assert scripts_problem(Path(__file__).resolve().parents[2] / SCRIPTS) is None
