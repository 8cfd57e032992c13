"""What the model runs, from `juju status`, labels the results; a mismatch with what the run asks
is refused (issue 12, point 13). The old gate skipped deployment on a reused model and labelled
the row with the pin (`revision=201` on a model running revision 1)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.fake_juju import state
from support.fake_juju.charms import upstream_charm
from support.fake_juju.inprocess import status_of

from loadgate.contract.spec import RunSpec
from loadgate.juju import deploy, deployed, settings
from loadgate.targets.juju import labelled_for_model

OTELCOL = "opentelemetry-collector-k8s"
CHARMHUB = status_of({"otelcol": state.app(OTELCOL, [0], rev=1, channel="dev/edge")})
LOCAL = status_of({"otelcol": state.app(OTELCOL, [0], origin="local", rev=3)})


def test_deployed_charm_from_status() -> None:
    d = deployed.read(CHARMHUB, "otelcol")
    assert (d.charm, d.origin, d.revision, d.channel) == (
        "opentelemetry-collector-k8s", "charmhub", 1, "dev/edge",
    )  # fmt: skip
    local = deployed.read(LOCAL, "otelcol")
    assert local.local
    assert local.revision == 3


@pytest.mark.parametrize(
    ("pin", "problem"),
    [
        (settings.OtelcolPin("dev/edge", 201, "option"), "(revision 1, not 201)"),
        (settings.OtelcolPin("0.130/edge", None, "option"), "(channel dev/edge, not 0.130/edge)"),
        (settings.OtelcolPin("dev/edge", 1, "option"), None),
        (settings.OtelcolPin("dev/edge", None, "channel head"), None),
    ],
)
def test_a_pin_the_model_does_not_run_is_refused(
    pin: settings.OtelcolPin, problem: str | None
) -> None:
    request = deployed.Request.otelcol(pin, None)
    if problem is None:
        assert deployed.check(CHARMHUB, [request])["otelcol"].revision == 1
        return
    with pytest.raises(deployed.MismatchError) as exc:
        deployed.check(CHARMHUB, [request])
    assert str(exc.value).startswith(
        "otelcol runs opentelemetry-collector-k8s revision 1 from channel dev/edge; the run asks"
    )
    assert str(exc.value).endswith(problem)


def test_a_local_charm_request_needs_a_local_charm(tmp_path: Path) -> None:
    packed = upstream_charm(
        tmp_path / "otelcol.charm", "opentelemetry-collector-k8s", "dev",
        {"opentelemetry-collector-image": "img:1"},
    )  # fmt: skip
    local = deploy.local_charm("otelcol", packed)
    request = deployed.Request.otelcol(None, local)
    with pytest.raises(deployed.MismatchError, match="a charm from charmhub, not a local charm"):
        deployed.check(CHARMHUB, [request])
    found = deployed.check(LOCAL, [request])
    assert deployed.labels(found, {"otelcol": local}) == {
        "otelcol_charm": "local",
        "otelcol_local_revision": "3",
        "otelcol_sha256": local.short_hash,
    }
    pinned = deployed.Request.otelcol(settings.OtelcolPin("dev/edge", 1, "option"), None)
    with pytest.raises(deployed.MismatchError, match="a local charm, not one from Charmhub"):
        deployed.check(LOCAL, [pinned])


def test_labels_say_what_the_model_runs() -> None:
    found = deployed.check(CHARMHUB, [deployed.Request("otelcol")])
    assert deployed.labels(found) == {"revision": "1", "otelcol_channel": "dev/edge"}


def test_loadgate_run_labels_from_the_model() -> None:
    spec = RunSpec.from_params({"run-id": "r1", "labels": "team=o11y"})
    labelled = labelled_for_model(spec, CHARMHUB, "otelcol")
    assert labelled.labels == {"revision": "1", "otelcol_channel": "dev/edge", "team": "o11y"}
    assert labelled.run_id == "r1"
    same = RunSpec.from_params({"labels": "revision=1"})
    assert labelled_for_model(same, CHARMHUB, "otelcol").labels["revision"] == "1"


def test_loadgate_run_refuses_a_label_the_model_contradicts() -> None:
    spec = RunSpec.from_params({"labels": "revision=201"})
    with pytest.raises(deployed.MismatchError, match="revision=201 but the model runs revision=1"):
        labelled_for_model(spec, CHARMHUB, "otelcol")


def test_a_model_without_the_collector_is_refused() -> None:
    empty = status_of({})
    with pytest.raises(deployed.MismatchError, match="the model has no application 'otelcol'"):
        labelled_for_model(RunSpec(), empty, "otelcol")
