"""Dry runs of the Juju gate in a timed fake world (support.fake_juju.world.Timed): the fake k6
charm's runs take their duration, COS scrapes the collector and Loki once a minute, the
collector exports at most 180,000 records/min through a queue of 1,000 requests (so it fills
and refuses the excess under 300,000/min), and the world's time runs 60 times faster.

- the saturation gate of the integration suite (tests/integration/test_saturation_gate.py):
  measured over its steady window, judged against the floor of gates.yaml (none: recorded;
  a revision's floor above what the pipeline takes: the gate fails, naming it);
- `loadgate run --target juju --saturate`;
- `loadgate search --target juju` (issue 17): the capacity search through the k6 charm's
  actions, steps of minutes, finds the pipeline's 180,000/min within its precision;
- other traffic (issue 18): another application's logs through the collector are counted in
  Loki and taken out, the run's ledger balances and the verdict is that of a quiet model; a
  client pushing to Loki directly cannot be told from it, and the ledger says unknown, never a
  loss.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.dryrun import assert_params_valid, loadgate_run, loadgate_search, pytest_run
from support.fake_juju import state
from support.fake_juju.charms import copy_bundles
from support.fake_juju.cli import actions_run
from support.fake_juju.world import Timed, World
from support.fake_juju.world import world as fake_world

CAPACITY = 180_000  # records/min the timed world's collector exports at most
OTHER = 6_000  # records/min another application sends through the collector


def rows(world: World) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in (world.root / "results").glob("*/result.json")]


def start_params(world: World) -> list[dict[str, Any]]:
    return [p for _, action, p in actions_run(world.calls()) if action == "start-load"]


def saturation_suite(tmp_path: Path, world: World, *args: str) -> Any:
    bundle = copy_bundles(tmp_path / "bundles")
    return pytest_run(
        world,
        "tests/integration/test_saturation_gate.py",
        "--require-juju",
        "--bundle",
        str(bundle),
        "--overlay",
        str(bundle.parent / "overlays" / "ci-small-storage.yaml"),
        *args,
    )


def assert_saturated_at_capacity(sat: dict[str, Any]) -> None:
    """The steady window of a run offering 300,000/min to a pipeline taking 180,000/min."""
    assert sat["saturated"] is True, sat
    assert sat["offered_per_min"] == 300_000
    assert sat["window_s"] >= 180  # three scrapes of COS at least
    assert sat["window_s"] % 60 == 0  # its edges are scrapes
    assert sat["accepted_per_min"] == pytest.approx(CAPACITY, abs=5)
    assert sat["exported_per_min"] == pytest.approx(CAPACITY, abs=5)
    assert sat["stored_per_min"] == pytest.approx(CAPACITY, abs=5)
    assert sat["refused_per_min"] == pytest.approx(300_000 - CAPACITY, abs=5)
    assert sat["queue_capacity"] == 1000


def test_saturation_gate_dry_run_records_the_figure_without_a_floor(tmp_path: Path) -> None:
    with fake_world(tmp_path, timed=Timed()) as world:
        done = saturation_suite(tmp_path, world)
        calls = world.calls()
        params = start_params(world)
        found = rows(world)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "8 passed" in done.stdout
    assert all(c["rc"] == 0 for c in calls), [c for c in calls if c["rc"]]
    # Every start-load as Juju validates it against the charm's schema: the saturation run's
    # parameters over gates.yaml's defaults.
    assert assert_params_valid(calls)["start-load"] == 1
    (start,) = params
    assert {k: start[k] for k in ("rate", "vus", "duration", "max-error-rate", "p99-ms")} == {
        "rate": 300_000, "vus": 300, "duration": "8m", "max-error-rate": 1.0, "p99-ms": 3_600_000,
    }  # fmt: skip
    assert start["min-logs-per-minute"] == 0
    assert (start["body-min"], start["body-max"], start["logs-per-request"]) == (256, 2048, 5)
    assert "gate=saturation" in start["labels"].split(",")
    (row,) = found
    assert row["labels"]["gate"] == "saturation"
    assert row["labels"]["revision"] == "207"
    assert_saturated_at_capacity(row["saturation"])
    gate = next(g for g in row["gates"] if g["name"] == "saturation_per_minute")
    assert gate["threshold"] == "measured"
    assert gate["passed"] is True
    assert gate["value"] == row["saturation"]["accepted_per_min"]
    assert "no floor set" in gate["source"]
    steps = {s["name"]: s["count"] for s in row["ledger"]["steps"]}
    acknowledged = row["client"]["records_accepted"]
    assert steps["accepted"] == steps["exported"] == steps["stored"] == acknowledged
    assert steps["sent"] == row["client"]["records_sent"] == 2_400_000 > acknowledged
    assert row["bottleneck"]["attribution"]["verdict"] == "collector"
    measured = next(g for g in row["gates"] if g["name"] == "measured_component")
    assert (measured["value"], measured["passed"]) == (1.0, True)  # the collector, under test


def test_saturation_gate_dry_run_fails_below_the_revisions_floor(tmp_path: Path) -> None:
    """gates.yaml sets a floor, and a higher one for the revision the model runs (207, the
    fake channel head) than the pipeline takes: the gate fails and says so."""
    gates = tmp_path / "gates.yaml"
    gates.write_text(
        "defaults: {rate: 60000, duration: 5m, p99-ms: 250}\n"
        "saturation:\n"
        "  params: {duration: 9m}\n"
        "  floor: 150000\n"
        '  revisions: {"207": {floor: 200000}}\n'
    )
    with fake_world(tmp_path, timed=Timed()) as world:
        done = saturation_suite(tmp_path, world, "--gates-file", str(gates))
        calls = world.calls()
        (start,) = start_params(world)
        (row,) = rows(world)
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout[-4000:]
    assert "1 failed, 7 passed" in done.stdout
    assert "_ test_saturation_at_least_the_floor _" in done.stdout  # the one that failed
    assert "against >= 200,000 (collector accepted per minute" in done.stdout
    assert "(saturation.revisions.207.floor)" in done.stdout
    assert_params_valid(calls)
    assert start["duration"] == "9m"
    assert start["p99-ms"] == 3_600_000  # the saturation parameters over `defaults`
    assert_saturated_at_capacity(row["saturation"])
    gate = next(g for g in row["gates"] if g["name"] == "saturation_per_minute")
    assert (gate["threshold"], gate["passed"]) == (">= 200,000", False)
    assert row["verdict"] == "FAIL"


def test_loadgate_run_juju_saturate_dry_run(tmp_path: Path) -> None:
    models = {"cos": {"apps": state.deployed_apps()}}
    with fake_world(tmp_path, models=models, timed=Timed()) as world:
        done = loadgate_run(world, "--model", "cos", "--saturate", "--run-id", "sat-1")
        calls = world.calls()
        (start,) = start_params(world)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "saturation throughput 180,000/min (queue full)" in done.stdout
    assert assert_params_valid(calls)["start-load"] == 1
    assert (start["rate"], start["vus"], start["duration"]) == (300_000, 300, "8m")
    row = json.loads((world.root / "results" / "sat-1" / "result.json").read_text())
    assert_saturated_at_capacity(row["saturation"])
    assert "cpu" not in row  # no CPU from the kernel on Juju
    assert row["ledger"]["lost_after_acceptance"] == 0


def busy_model(*, other: bool) -> dict[str, Any]:
    apps = state.deployed_apps()
    if other:
        apps["flog"] = state.app("flog-k8s", [0], channel="latest/stable")
    return {"cos": {"apps": apps}}


def gate_run(tmp_path: Path, timed: Timed, *, other: bool) -> tuple[Any, dict[str, Any]]:
    """`loadgate run --target juju` of 60,000 records/min for 3 minutes in a timed world."""
    with fake_world(tmp_path, models=busy_model(other=other), timed=timed) as world:
        done = loadgate_run(
            world, "--model", "cos", "--rate", "60000", "--duration", "3m", "--run-id", "r1"
        )
        assert_params_valid(world.calls())
    path = world.root / "results" / "r1" / "result.json"
    return done, json.loads(path.read_text()) if path.exists() else {}


def test_other_traffic_on_the_model_is_taken_out_and_the_verdict_is_unchanged(
    tmp_path: Path,
) -> None:
    quiet_done, quiet = gate_run(tmp_path / "quiet", Timed(), other=False)
    done, busy = gate_run(tmp_path / "busy", Timed(other_per_min=OTHER), other=True)
    assert quiet_done.returncode == 0, quiet_done.stdout[-3000:] + quiet_done.stderr[-2000:]
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    ledger = busy["ledger"]
    assert ledger["balanced"], ledger
    assert [s["count"] for s in ledger["steps"]] == [180_000] * 4
    other = busy["delivered"]["other_traffic"]
    # The collector's counters window spans whole scrapes; the other application sent at
    # 6,000/min all along it.
    assert other["records"] == ledger["other_traffic"] > 0
    assert other["records"] == pytest.approx(OTHER * other["window_s"] / 60, abs=2)
    assert other["window_s"] % 60 == 0
    for step in ledger["steps"][1:3]:
        assert f"{other['records']:,} records of other traffic taken out" in step["note"]
    assert "other traffic" in done.stdout
    # Its records are in the collector's counts and in Loki under their own job.
    assert busy["pipeline"]["collector_accepted"] == 180_000 + other["records"]
    assert quiet["delivered"]["other_traffic"]["records"] == 0
    assert busy["verdict"] == quiet["verdict"] == "PASS"
    assert [(g["name"], g["passed"]) for g in busy["gates"]] == [
        (g["name"], g["passed"]) for g in quiet["gates"]
    ]


def test_a_client_pushing_to_loki_directly_makes_the_split_unknown_never_a_loss(
    tmp_path: Path,
) -> None:
    """Loki also holds lines that never passed through the collector (docs/juju-gate.md):
    counted as other traffic, they cannot be taken out of the collector's counts exactly, so
    the collector's steps are unknown with a lower bound, never a loss, and Loki received more
    than the collector's exporter sent it."""
    timed = Timed(other_per_min=OTHER, direct_per_min=1_200)
    done, row = gate_run(tmp_path, timed, other=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    sent, accepted, exported, stored = row["ledger"]["steps"]
    assert sent["count"] == stored["count"] == row["client"]["records_accepted"] == 180_000
    assert accepted["count"] is None
    assert exported["count"] is None
    assert "cannot be split from the run's" in accepted["note"]
    assert "more than the 480 other records near the window's edges explain" in accepted["note"]
    assert "at least 180,000" in accepted["note"]
    assert row["ledger"]["lost_after_acceptance"] == 0
    assert row["verdict"] == "PASS"
    pipeline = row["pipeline"]
    assert pipeline["loki_received"] > pipeline["collector_exported"]


def test_loadgate_search_juju_dry_run(tmp_path: Path) -> None:
    """`loadgate search --target juju`: a saturation step as long as the saturation gate's, then
    holds of minutes, every step a start-load Juju validates; the knee found where the
    pipeline gives way, the bracket around its 180,000/min."""
    models = {"cos": {"apps": state.deployed_apps()}}
    with fake_world(tmp_path, models=models, timed=Timed()) as world:
        done = loadgate_search(world, "--model", "cos", "--search-id", "js1")
        calls = world.calls()
        params = start_params(world)
        record = json.loads((world.root / "results" / "js1" / "search.json").read_text())
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-3000:]
    assert "saturation throughput 180,000/min" in done.stdout
    assert assert_params_valid(calls)["start-load"] == len(params) == len(record["steps"])
    # The saturation step of `loadgate run --target juju --saturate`, then holds of minutes.
    assert (params[0]["rate"], params[0]["duration"], params[0]["vus"]) == (300_000, "480s", 300)
    assert all(p["duration"].endswith("s") and int(p["duration"][:-1]) >= 180 for p in params)
    assert record["stack"]["target"] == "juju"
    assert record["stack"]["model"] == "cos"
    result = record["result"]
    assert result["status"] == "found"
    passed, failed = result["capacity_per_min"], result["lowest_failing_per_min"]
    assert result["confirmed"] is True
    assert passed <= CAPACITY < failed
    assert failed <= passed * 1.11  # within ±5 %
    saturation = record["steps"][0]["outcome"]
    assert saturation["saturated"] is True
    assert saturation["throughput_per_min"] == pytest.approx(CAPACITY, abs=5)
    labels = [p["labels"].split(",") for p in params]
    assert all("revision=207" in one for one in labels)  # what the model runs


def test_loadgate_search_juju_needs_a_model(tmp_path: Path) -> None:
    with fake_world(tmp_path, timed=Timed()) as world:
        done = loadgate_search(world, "--search-id", "js2")
        calls = world.calls()
    assert done.returncode == 2
    assert "--model: required with --target juju" in done.stdout + done.stderr
    assert calls == []
