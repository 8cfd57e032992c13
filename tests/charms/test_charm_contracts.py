"""Contracts with the real charms: our k6 charm reads what they really publish.

- `send-otlp`: the k6 charm publishes its requirer data, the real otelcol charm (rendered
  offline) answers on `receive-otlp`, and the k6 charm finds the collector's OTLP/HTTP endpoint
  in that answer;
- `receive-ca-cert`: the certificate-transfer provider code that self-signed-certificates runs
  (`charms.certificate_transfer_interface.v1`, the copy the otelcol charm ships) publishes a CA,
  and the k6 charm puts it in the CA bundle k6 trusts.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ops import testing

from loadgate.stack import tls
from loadgate.charms import render, sources

from support.charm_render import LOKI_VERSION, OTELCOL_VERSION

ROOT = Path(__file__).resolve().parents[2]
K6_CHARM = ROOT / "charms" / "k6-k8s"
DRIVERS = ROOT / "src" / "loadgate" / "charms" / "drivers"


@pytest.fixture(scope="module")
def k6_charm() -> Iterator[type[Any]]:
    """The k6 charm class, imported from its source as Juju runs it."""
    added = [str(K6_CHARM / "src")]
    sys.path[:0] = added
    try:
        import charm  # pyright: ignore[reportMissingImports]

        yield charm.K6Charm
    finally:
        for path in added:
            sys.path.remove(path)


def k6_context(charm_type: type[Any], tmp_path: Path) -> testing.Context[Any]:
    root = tmp_path / "k6-root"
    (root / "src").mkdir(parents=True)
    (root / "src" / "k6").symlink_to(K6_CHARM / "src" / "k6")
    return testing.Context(charm_type, charm_root=root, app_name="k6", unit_id=0)


def k6_container(disk: Path) -> testing.Container:
    (disk / "runs").mkdir(parents=True, exist_ok=True)
    (disk / "etc").mkdir(parents=True, exist_ok=True)
    return testing.Container(
        "k6",
        can_connect=True,
        mounts={
            "runs": testing.Mount(location="/var/lib/k6", source=disk / "runs"),
            "etc": testing.Mount(location="/etc/k6", source=disk / "etc"),
        },
    )


def test_k6_finds_the_otlp_endpoint_the_otelcol_charm_publishes(
    k6_charm: type[Any],
    otelcol_main: sources.CharmSource,
    loki_pinned: sources.CharmSource,
    ca: tls.TLSMaterial,
    tmp_path: Path,
) -> None:
    ctx = k6_context(k6_charm, tmp_path)
    send = testing.Relation("send-otlp", interface="otlp", remote_app_name="otelcol")
    container = k6_container(tmp_path / "disk")
    asked = ctx.run(
        ctx.on.relation_created(send),
        testing.State(leader=True, relations=[send], containers=[container]),
    )
    requirer_data = dict(asked.get_relation(send.id).local_app_data)

    pipeline = render.render_pipeline(
        otelcol_main,
        loki_pinned,
        tmp_path / "render",
        ca_cert=ca.ca_cert_pem.decode(),
        ca_key=ca.ca_key_pem.decode(),
        otelcol_options={},
        loki_options={},
        otelcol_version=OTELCOL_VERSION,
        loki_version=LOKI_VERSION,
        otelcol_relations=[
            {
                "endpoint": "receive-otlp",
                "interface": "otlp",
                "remote_app_name": "k6",
                "remote_app_data": requirer_data,
            }
        ],
    )
    published = pipeline.otelcol.published("receive-otlp")["app"]
    assert published, "the otelcol charm published nothing on receive-otlp"

    answered = testing.Relation(
        "send-otlp", interface="otlp", remote_app_name="otelcol", remote_app_data=published
    )
    state = testing.State(leader=True, relations=[answered], containers=[container])
    with ctx(ctx.on.update_status(), state) as manager:
        from targets import otlp_http_base  # pyright: ignore[reportMissingImports]

        url = otlp_http_base(manager.charm)
        manager.run()
    assert url == f"http://{render.fqdn('otelcol')}:4318"


def test_k6_trusts_the_ca_the_transfer_provider_code_sends(
    k6_charm: type[Any], otelcol_main: sources.CharmSource, ca: tls.TLSMaterial, tmp_path: Path
) -> None:
    ctx = k6_context(k6_charm, tmp_path)
    disk = tmp_path / "disk"
    container = k6_container(disk)
    rel = testing.Relation("receive-ca-cert", interface="certificate_transfer", remote_app_name="ca")
    asked = ctx.run(
        ctx.on.relation_created(rel),
        testing.State(leader=True, relations=[rel], containers=[container]),
    )
    requirer_app_data = dict(asked.get_relation(rel.id).local_app_data)

    # The provider library as the CA charm runs it (the otelcol charm ships the same v1 copy).
    sys.path[:0] = [str(DRIVERS), str(otelcol_main.path / "lib")]
    try:
        import providers  # pyright: ignore[reportMissingImports]

        app_data, unit_data = providers.certificate_transfer(
            "k6", requirer_app_data, [ca.ca_cert_pem.decode()]
        )
    finally:
        del sys.path[:2]
    assert json.loads(app_data["certificates"]) == [ca.ca_cert_pem.decode().strip()]

    sent = testing.Relation(
        "receive-ca-cert",
        interface="certificate_transfer",
        remote_app_name="ca",
        remote_app_data=app_data,
        remote_units_data={0: unit_data},
    )
    state = testing.State(leader=True, relations=[sent], containers=[container])
    ctx.run(ctx.on.pebble_ready(container), state)
    bundle = (disk / "etc" / "ca" / "bundle.pem").read_text()
    assert ca.ca_cert_pem.decode().strip() in bundle
