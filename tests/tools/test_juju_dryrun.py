"""Dry runs of the Juju gate against a fake `juju` on PATH (support.fake_juju.world).

The integration suite (tests/integration, as CI runs it) and `loadgate run --target juju --model
M` run in their own processes against a fake juju that records every call and answers with
Juju 3.6-shaped JSON, and against the model's Prometheus and Loki served over HTTPS by a test CA
(certificates verified for each unit's in-cluster name). Then every call is checked: the juju
snap could read every file it was handed (bundle, overlays, charms, action params: the fake is
as confined as the snap), the bundle and overlays merge and pass the bundle checker, and every
action's params pass Juju's own schema validation (tests/support/jujuschema.py).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from support.dryrun import (
    assert_deploy_valid,
    assert_every_file_readable,
    assert_params_valid,
    loadgate_run,
    pytest_run,
)
from support.fake_juju import state
from support.fake_juju.charms import copy_bundles, k6_charm, upstream_charm
from support.fake_juju.cli import commands, params_of
from support.fake_juju.world import world as fake_world

from loadgate import paths

# ---- the integration suite -----------------------------------------------------------------


def test_integration_suite_dry_run(tmp_path: Path) -> None:
    with fake_world(tmp_path, snap=True) as world:
        bundle = copy_bundles(tmp_path / "bundles")
        done = pytest_run(
            world,
            "tests/integration",
            # The saturation gate takes minutes of a pipeline's time: a timed world's dry run
            # (test_juju_saturation_dryrun.py).
            "--ignore=tests/integration/test_saturation_gate.py",
            "--require-juju",
            "--bundle",
            str(bundle),
            "--overlay",
            str(bundle.parent / "overlays" / "ci-small-storage.yaml"),
            # The fake world's pipeline carries log records only (fake_juju/pipeline.py).
            "--gate-scenario",
            "otlp-logs",
        )
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
        assert "14 passed" in done.stdout
        calls = world.calls()
        prometheus_queries = list(world.telemetry.queries)
    assert all(c["rc"] == 0 for c in calls), [c for c in calls if c["rc"]]
    # The commands, in order of first use, and nothing else.
    first_use = list(dict.fromkeys(commands(calls)))
    assert first_use == [
        "controllers", "models", "add-model", "status", "deploy", "run", "ssh", "show-unit",
        "add-unit", "remove-unit", "destroy-model",
    ]  # fmt: skip
    assert commands(calls).count("deploy") == 1
    # Every file handed to juju: readable by the snap, under ~/snap/juju/common.
    assert assert_every_file_readable(world, calls) >= 8
    # The deployment: the staged bundle, the otelcol pin and the CI overlay, checked.
    deploy = next(c for c in calls if c["argv"][0] == "deploy")
    doc = assert_deploy_valid(deploy, world)
    k6 = doc["applications"]["k6"]
    assert Path(k6["charm"]).read_bytes() == (bundle.parent / paths.K6_CHARM_FILE).read_bytes()
    assert k6["resources"] == {"k6-image": "docker.io/grafana/k6:1.8.1"}
    assert doc["applications"]["otelcol"]["channel"] == "dev/edge"
    assert "revision" not in doc["applications"]["otelcol"]  # the channel head by default
    assert doc["applications"]["loki"]["storage"]["loki-chunks"] == "2G"  # ci-small-storage
    # Every action's params as Juju validates them.
    assert assert_params_valid(calls) == {
        "get-ca-certificate": 1,
        "start-load": 2,
        "get-results": 4,
    }
    # The figures follow the one Loki copy Prometheus scrapes: the bundle's one unit, as COS
    # Lite runs Loki (several units: test_model_reuse_labels_with_the_deployed_revision).
    assert 'count(loki_build_info{juju_application="loki"})' in prometheus_queries
    rows = [json.loads(p.read_text()) for p in (world.root / "results").glob("*/result.json")]
    assert len(rows) == 2
    for row in rows:
        assert row["labels"]["revision"] == "207"  # what the model runs (the fake head)
        assert row["labels"]["otelcol_channel"] == "dev/edge"
        assert row["environment"]["loki"]["unit"] == "loki/0"
        assert row["environment"]["scope"]["exporter"] == "loki/send-loki-logs/0"
        sent = row["ledger"]["steps"][0]["count"]
        assert row["pipeline"]["loki_received"] == sent > 0
        assert row["ledger"]["balanced"]


def test_model_reuse_refuses_another_revision(tmp_path: Path) -> None:
    """--model holding revision 1 while the run asks for 201: refused, nothing deployed."""
    models = {"cos": {"apps": state.deployed_apps({"rev": 1})}}
    with fake_world(tmp_path, snap=True, models=models) as world:
        done = pytest_run(
            world,
            "tests/integration/test_deployed_bundle.py",
            "--model",
            "cos",
            "--otelcol-revision",
            "201",
        )
        calls = world.calls()
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout[-3000:]
    assert "GateError: model cos: " in done.stdout
    assert (
        "otelcol runs opentelemetry-collector-k8s revision 1 from channel dev/edge; the run asks "
        "for opentelemetry-collector-k8s revision 201 from channel dev/edge (revision 1, not 201)"
    ) in done.stdout
    assert "deploy" not in commands(calls)
    assert "run" not in commands(calls)


def test_model_reuse_labels_with_the_deployed_revision(tmp_path: Path) -> None:
    models = {"cos": {"apps": state.deployed_apps({"rev": 1})}}
    with fake_world(tmp_path, snap=True, models=models) as world:
        done = pytest_run(
            world,
            "tests/integration/test_load_gates.py::test_result_row_written",
            "--model",
            "cos",
            "--gate-scenario",
            "otlp-logs",
        )
        calls = world.calls()
        rows = [json.loads(p.read_text()) for p in (world.root / "results").glob("*/result.json")]
    assert done.returncode == 0, done.stdout[-3000:]
    assert "deploy" not in commands(calls)
    assert [r["labels"]["revision"] for r in rows] == ["1"]


def test_model_reuse_without_the_traces_backend_is_refused(tmp_path: Path) -> None:
    """Gating otlp-traces (loadgate's gates.yaml gates every scenario) on a model with no traces
    backend: refused before any load, naming the overlay that adds one."""
    models = {"cos": {"apps": state.deployed_apps({"rev": 1})}}
    with fake_world(tmp_path, snap=True, models=models) as world:
        done = pytest_run(
            world, "tests/integration/test_load_gates.py::test_result_row_written", "--model", "cos"
        )
        calls = world.calls()
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout[-3000:]
    assert "model cos has no traces-standin, which the gated scenarios need" in done.stdout
    assert "overlays/traces-standin.yaml" in done.stdout
    assert "run" not in commands(calls)


def test_gating_traces_deploys_the_traces_backend(tmp_path: Path) -> None:
    """A fresh model whose tests gate otlp-traces: the bundle goes out with the traces
    stand-in's overlay after the CI one (and Loki's raised limits: the collector is under
    test), related as check-bundle checks, and the model's applications, the stand-in among
    them, come up."""
    with fake_world(tmp_path, snap=True) as world:
        bundle = copy_bundles(tmp_path / "bundles")
        done = pytest_run(
            world,
            "tests/integration/test_deployed_bundle.py::test_every_application_active_and_idle",
            "--gate-scenario",  # the first (and only) scenario gated: what the deployment serves
            "otlp-traces",
            "--bundle",
            str(bundle),
            "--overlay",
            str(bundle.parent / "overlays" / "ci-small-storage.yaml"),
        )
        calls = world.calls()
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    deploy = next(c for c in calls if c["argv"][0] == "deploy")
    argv = deploy["argv"]
    overlays = [Path(argv[i + 1]).name for i, a in enumerate(argv) if a == "--overlay"]
    assert [n for n in overlays if n != "otelcol-pin.yaml"] == [
        "overlay-0-ci-small-storage.yaml",
        "overlay-1-traces-standin.yaml",
        "overlay-2-loki-unthrottled.yaml",
    ]
    doc = assert_deploy_valid(deploy, world)
    assert doc["applications"]["traces-standin"]["charm"] == "opentelemetry-collector-k8s"
    assert ["otelcol:send-traces", "traces-standin:receive-traces"] in doc["relations"]


def test_a_charm_repository_gates_its_own_charm(tmp_path: Path) -> None:
    """The otelcol repository's CI: its packed charm, named by CHARM_PATH, in place of otelcol
    (images from its own metadata), loadgate's k6 charm from the env."""
    otelcol = upstream_charm(
        tmp_path / "opentelemetry-collector-k8s_amd64.charm",
        "opentelemetry-collector-k8s",
        "dev",
        {"opentelemetry-collector-image": "ubuntu/opentelemetry-collector:0.130-24.04"},
    )
    k6 = k6_charm(tmp_path / "k6" / paths.K6_CHARM_FILE)
    with fake_world(tmp_path, snap=True) as world:
        done = pytest_run(
            world,
            "tests/integration/test_deployed_bundle.py::test_every_application_active_and_idle",
            "tests/integration/test_load_gates.py::test_result_row_written",
            "--gate-scenario",
            "otlp-logs",
            env={"CHARM_PATH": str(otelcol), "LOADGATE_K6_CHARM": str(k6)},
        )
        calls = world.calls()
        rows = [json.loads(p.read_text()) for p in (world.root / "results").glob("*/result.json")]
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "$CHARM_PATH names the charm under test" in done.stdout
    assert_every_file_readable(world, calls)
    deploy = next(c for c in calls if c["argv"][0] == "deploy")
    doc = assert_deploy_valid(deploy, world)
    apps = doc["applications"]
    assert Path(apps["otelcol"]["charm"]).read_bytes() == otelcol.read_bytes()
    assert apps["otelcol"]["resources"] == {
        "opentelemetry-collector-image": "ubuntu/opentelemetry-collector:0.130-24.04"
    }
    assert "channel" not in apps["otelcol"]
    assert Path(apps["k6"]["charm"]).read_bytes() == k6.read_bytes()
    assert len(rows) == 1
    labels = rows[0]["labels"]
    assert labels["otelcol_charm"] == "local"
    assert labels["otelcol_sha256"] == hashlib.sha256(otelcol.read_bytes()).hexdigest()[:12]
    assert "revision" not in labels  # no Charmhub revision to claim


# ---- loadgate run --target juju --model M --------------------------------------------------


def test_loadgate_run_juju_dry_run(tmp_path: Path) -> None:
    models = {"cos": {"apps": state.deployed_apps()}}
    with fake_world(tmp_path, snap=True, models=models) as world:
        done = loadgate_run(
            world,
            *("--model", "cos", "--rate", "60000", "--duration", "1m", "--run-id", "dry-1"),
            *("--labels", "team=o11y", "--drain-timeout", "30"),
        )
        calls = world.calls()
        loki_asked = {unit for unit, _ in world.telemetry.loki_queries}
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert all(c["rc"] == 0 for c in calls), [c for c in calls if c["rc"]]
    assert list(dict.fromkeys(commands(calls))) == ["status", "run", "ssh"]
    ssh = next(c for c in calls if c["argv"][0] == "ssh")
    assert ssh["argv"][-5:] == [
        "--container",
        "otelcol",
        "otelcol/0",
        "cat",
        "/etc/otelcol/config.yaml",
    ]
    assert assert_every_file_readable(world, calls) == 2  # the two params files
    assert assert_params_valid(calls) == {
        "get-ca-certificate": 1,
        "start-load": 1,
        "get-results": 1,
    }
    start = next(c for c in calls if c["argv"][0] == "run" and "start-load" in c["argv"])
    assert params_of(start)["run-id"] == "dry-1"
    assert params_of(start)["labels"] == "otelcol_channel=dev/edge,revision=207,team=o11y"
    row = json.loads((world.root / "results" / "dry-1" / "result.json").read_text())
    assert row["labels"] == {"otelcol_channel": "dev/edge", "revision": "207", "team": "o11y"}
    assert row["verdict"] == "PASS"
    assert row["ledger"]["balanced"]
    assert row["pipeline"]["loki_received"] == 60000  # the leader's copy, not loki/0's zero
    assert row["delivered"]["records"] == 60000
    assert loki_asked == {"loki/1"}  # the LogQL count asks the followed unit


def test_loadgate_run_refuses_a_label_the_model_contradicts(tmp_path: Path) -> None:
    models = {"cos": {"apps": state.deployed_apps({"rev": 1})}}
    with fake_world(tmp_path, snap=False, models=models) as world:
        done = loadgate_run(world, "--model", "cos", "--labels", "revision=201")
        calls = world.calls()
    assert done.returncode == 2
    assert "revision=201 but the model runs revision=1" in done.stderr
    assert commands(calls) == ["status"]


def test_loadgate_run_juju_loki_push_dry_run(tmp_path: Path) -> None:
    """A loki-push run through the k6 charm: start-load gets scenario=loki-push and the followed
    Loki unit as target=, and its params pass Juju's own validation of the charm's schema
    (with the defaults Juju fills in, which the charm drops for another scenario)."""
    models = {"cos": {"apps": state.deployed_apps()}}
    with fake_world(tmp_path, snap=True, models=models) as world:
        done = loadgate_run(
            world,
            *("--model", "cos", "--scenario", "loki-push", "--rate", "60000", "--duration", "1m"),
            *("--run-id", "push-1", "--loki-streams", "50", "--drain-timeout", "30"),
        )
        calls = world.calls()
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert assert_params_valid(calls) == {
        "get-ca-certificate": 1,
        "start-load": 1,
        "get-results": 1,
    }
    start = next(c for c in calls if c["argv"][0] == "run" and "start-load" in c["argv"])
    params = params_of(start)
    assert params["scenario"] == "loki-push"
    # The Loki unit the figures follow (the leader, loki/1), by the name its certificate holds.
    assert params["target"] == "https://loki-1.loki-endpoints.cos.svc.cluster.local:3100"
    assert params["loki-streams"] == 50
    assert "logs-per-request" not in params  # otlp-logs' own: not asked for
    row = json.loads((world.root / "results" / "push-1" / "result.json").read_text())
    assert row["verdict"] == "PASS"
    assert [g["name"] for g in row["gates"]][-2:] == ["lines_per_minute", "lost_lines"]
    assert row["ledger"]["unit"] == "lines"
    assert row["ledger"]["balanced"]
    assert row["delivered"]["records"] == 60000
