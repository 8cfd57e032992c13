"""A charm repository gates its own freshly packed charm: $CHARM_PATH (the charms' CI
convention) read for the application its charm's metadata names, --otelcol-charm /
--loki-charm / --k6-charm (or $LOADGATE_*_CHARM) winning for theirs, the OCI images from the
packed charm's own metadata, and the charm under test (gate/subject.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from support.fake_juju.charms import copy_bundles, fake_charm, k6_charm, upstream_charm

from loadgate import paths
from loadgate.bundle import charm_file
from loadgate.gate import subject
from loadgate.gate.subject import Given, Subject
from loadgate.juju import deploy, settings

OTELCOL_IMAGE = "ubuntu/opentelemetry-collector:0.130-24.04"
LOKI_IMAGE = "docker.io/ubuntu/loki:3.7-26.04"


def otelcol_charm(path: Path, image: str | None = OTELCOL_IMAGE) -> Path:
    return upstream_charm(
        path, "opentelemetry-collector-k8s", "dev", {"opentelemetry-collector-image": image}
    )


def loki_charm(path: Path) -> Path:
    images = {"loki-image": LOKI_IMAGE, "node-exporter-image": "docker.io/prom/node-exporter"}
    return upstream_charm(path, "loki-k8s", "3.7", images)


@pytest.fixture
def bundles(tmp_path: Path) -> Path:
    return copy_bundles(tmp_path / "bundles").parent


# ---- options -------------------------------------------------------------------------------


def test_charm_options_and_their_env_vars(tmp_path: Path) -> None:
    otelcol = otelcol_charm(tmp_path / "otelcol.charm")
    k6 = k6_charm(tmp_path / "k6.charm")
    env = {"LOADGATE_K6_CHARM": str(k6), "LOADGATE_LOKI_CHARM": ""}
    found = subject.given_charms({"otelcol": str(otelcol)}, env)
    assert found == {
        "otelcol": Given("otelcol", otelcol.resolve(), "--otelcol-charm"),
        "k6": Given("k6", k6.resolve(), "$LOADGATE_K6_CHARM"),
    }
    assert subject.subject_of(found, env) == Subject("otelcol", "--otelcol-charm")


@pytest.mark.parametrize(
    ("charm", "app", "component"),
    [("opentelemetry-collector-k8s", "otelcol", "collector"), ("loki-k8s", "loki", "loki")],
)
def test_charm_path_names_the_charm_under_test_by_its_metadata(
    tmp_path: Path, charm: str, app: str, component: str
) -> None:
    """$CHARM_PATH is the file the charms' CI packed: whichever charm it is, by its metadata."""
    packed = upstream_charm(tmp_path / "whatever_ubuntu@26.04-amd64.charm", charm, "dev", {})
    env = {"CHARM_PATH": str(packed)}
    found = subject.given_charms({}, env)
    assert found == {app: Given(app, packed.resolve(), "$CHARM_PATH")}
    chosen = subject.subject_of(found, env)
    assert (chosen.app, chosen.component) == (app, component)
    assert chosen.source == f"$CHARM_PATH ({packed.name})"


def test_an_option_wins_over_charm_path_for_its_application(tmp_path: Path) -> None:
    packed = otelcol_charm(tmp_path / "from-ci.charm")
    mine = otelcol_charm(tmp_path / "mine.charm")
    env = {"CHARM_PATH": str(packed)}
    found = subject.given_charms({"otelcol": str(mine)}, env)
    assert found == {"otelcol": Given("otelcol", mine.resolve(), "--otelcol-charm")}
    chosen = subject.subject_of(found, env)
    assert chosen.app == "otelcol"
    assert "--otelcol-charm wins" in chosen.source


def test_charm_path_of_another_charm_is_refused_with_the_allowed_ones(tmp_path: Path) -> None:
    """In a repository of another charm, CHARM_PATH names a charm the gate does not run: the
    gate's tests say so (nothing is deployed as k6 or anything else)."""
    k6 = k6_charm(tmp_path / "loadgate-k6-k8s_amd64.charm")
    with pytest.raises(subject.SubjectError) as err:
        subject.given_charms({}, {"CHARM_PATH": str(k6)})
    assert "is the charm 'loadgate-k6-k8s', which the load gate does not deploy" in str(err.value)
    assert "loki-k8s (as loki), opentelemetry-collector-k8s (as otelcol)" in str(err.value)


def test_without_any_charm_otelcol_from_its_channel_is_under_test() -> None:
    assert subject.subject_of({}, {}) == Subject("otelcol", "otelcol from its channel")


def test_a_charm_option_must_name_a_packed_charm(tmp_path: Path) -> None:
    with pytest.raises(subject.SubjectError, match=r"--loki-charm: must name a packed \.charm"):
        subject.given_charms({"loki": str(tmp_path)}, {})
    with pytest.raises(subject.SubjectError, match=r"\$LOADGATE_OTELCOL_CHARM: must name a packed"):
        subject.given_charms({}, {"LOADGATE_OTELCOL_CHARM": str(tmp_path / "x.charm")})
    with pytest.raises(subject.SubjectError, match=r"\$CHARM_PATH: must name a packed"):
        subject.given_charms({}, {"CHARM_PATH": str(tmp_path / "missing.charm")})


@pytest.mark.parametrize(
    ("option", "env", "keep"),
    [(False, {}, False), (True, {}, True), (False, {"KEEP_MODELS": ""}, True),
     (False, {"KEEP_MODELS": "true"}, True)],
)  # fmt: skip
def test_keep_models_as_the_charms_read_it(option: bool, env: dict[str, str], keep: bool) -> None:
    assert subject.keep_models(option, env) is keep


def test_resource_options() -> None:
    assert deploy.parse_resource_options(["otelcol:opentelemetry-collector-image=img:1"]) == {
        "otelcol": {"opentelemetry-collector-image": "img:1"}
    }
    with pytest.raises(deploy.DeployError, match="--resource: must be APP:RESOURCE=IMAGE"):
        deploy.parse_resource_options(["otelcol=img"])


# ---- a packed charm and its images ---------------------------------------------------------


def test_images_come_from_the_charms_own_metadata(tmp_path: Path) -> None:
    packed = otelcol_charm(tmp_path / "otelcol.charm")
    assert charm_file.read(packed).oci_images() == {"opentelemetry-collector-image": OTELCOL_IMAGE}
    local = deploy.local_charm("otelcol", packed)
    assert local.name == "opentelemetry-collector-k8s"
    assert local.resources == {"opentelemetry-collector-image": OTELCOL_IMAGE}
    assert len(local.sha256) == 64
    both = deploy.local_charm("loki", loki_charm(tmp_path / "loki.charm"))
    assert set(both.resources) == {"loki-image", "node-exporter-image"}


def test_an_image_the_metadata_does_not_name_must_be_given(tmp_path: Path) -> None:
    packed = otelcol_charm(tmp_path / "otelcol.charm", image=None)
    with pytest.raises(
        deploy.DeployError,
        match=r"names no upstream-source image: pass --resource "
        r"otelcol:opentelemetry-collector-image=IMAGE",
    ):
        deploy.local_charm("otelcol", packed)
    given = {"opentelemetry-collector-image": "mine:1"}
    assert deploy.local_charm("otelcol", packed, given).resources == given
    with pytest.raises(deploy.DeployError, match="has no OCI image resource nope"):
        deploy.local_charm("otelcol", packed, {"nope": "x"})


def test_another_charm_is_refused_for_an_application(tmp_path: Path) -> None:
    packed = otelcol_charm(tmp_path / "otelcol.charm")
    with pytest.raises(
        deploy.DeployError,
        match=r"--k6-charm: .* is the charm 'opentelemetry-collector-k8s', not 'loadgate-k6-k8s'",
    ):
        deploy.local_charm("k6", packed, option="--k6-charm")


def test_a_file_that_is_not_a_charm_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.charm"
    bad.write_text("not a zip")
    with pytest.raises(deploy.DeployError, match=r"--loki-charm: .*not a packed charm"):
        deploy.local_charm("loki", bad, option="--loki-charm")


# ---- staged deployments --------------------------------------------------------------------


def test_a_packed_charm_replaces_its_application(bundles: Path, tmp_path: Path) -> None:
    local = {
        "otelcol": deploy.local_charm("otelcol", otelcol_charm(tmp_path / "otelcol.charm")),
        "loki": deploy.local_charm("loki", loki_charm(tmp_path / "loki.charm")),
    }
    staged = deploy.stage(
        bundles / "bundle.yaml",
        tmp_path / "stage",
        charms=local,
        pin=settings.OtelcolPin("dev/edge", 207, "option"),
    )
    assert staged.overlays == ()  # no pin for a local otelcol
    doc = yaml.safe_load(staged.bundle.read_text())
    otelcol = doc["applications"]["otelcol"]
    assert otelcol["charm"] == str(staged.charms["otelcol"])
    assert "channel" not in otelcol
    assert "revision" not in otelcol
    assert otelcol["resources"] == {"opentelemetry-collector-image": OTELCOL_IMAGE}
    assert otelcol["trust"] is True
    assert otelcol["storage"] == {"persisted": "10G"}
    assert doc["applications"]["loki"]["scale"] == 1
    assert doc["applications"]["k6"]["charm"] == str(staged.charms["k6"])
    deploy.check(staged)  # endpoints read from inside each packed charm


def test_a_packed_charm_without_an_endpoint_is_refused(bundles: Path, tmp_path: Path) -> None:
    packed = otelcol_charm(tmp_path / "otelcol.charm")
    metadata = charm_file.read(packed).metadata
    requires = dict(metadata["requires"])
    del requires["send-loki-logs"]
    broken = fake_charm(tmp_path / "old-otelcol.charm", {**metadata, "requires": requires})
    staged = deploy.stage(
        bundles / "bundle.yaml",
        tmp_path / "stage",
        charms={"otelcol": deploy.local_charm("otelcol", broken)},
    )
    with pytest.raises(
        deploy.DeployError, match="otelcol:send-loki-logs: no such endpoint on opentelemetry"
    ):
        deploy.check(staged)


def test_the_k6_charm_option_replaces_a_missing_packed_file(bundles: Path, tmp_path: Path) -> None:
    (bundles / paths.K6_CHARM_FILE).unlink()
    with pytest.raises(
        deploy.DeployError,
        match=r"k6: bundle.yaml deploys the local charm ./loadgate-k6-k8s.charm, and .* does not "
        r"exist: run scripts/pack-k6-charm in a loadgate checkout \(or python -m "
        r"loadgate.gate.k6_charm pack\), or pass --k6-charm",
    ):
        deploy.stage(bundles / "bundle.yaml", tmp_path / "stage")
    k6 = deploy.local_charm("k6", k6_charm(tmp_path / "built" / "k6.charm"))
    staged = deploy.stage(bundles / "bundle.yaml", tmp_path / "stage2", charms={"k6": k6})
    deploy.check(staged)


def test_an_overlay_may_not_fight_a_charm_option(bundles: Path, tmp_path: Path) -> None:
    overlay = tmp_path / "mine.yaml"
    overlay.write_text("applications:\n  otelcol:\n    charm: ./other.charm\n")
    local = {"otelcol": deploy.local_charm("otelcol", otelcol_charm(tmp_path / "o.charm"))}
    with pytest.raises(deploy.DeployError, match="sets otelcol's charm, and --otelcol-charm"):
        deploy.stage(bundles / "bundle.yaml", tmp_path / "stage", charms=local, overlays=[overlay])
