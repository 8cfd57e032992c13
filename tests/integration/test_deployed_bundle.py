"""The bundle deploys, settles, serves Loki over verified TLS and wires k6 to the collector."""

from __future__ import annotations

import json
import ssl

import httpx
import jubilant
import pytest

from loadgate import tlsclient as tls
from loadgate.gate import LoadGate
from loadgate.gate.model_gate import ModelGate
from loadgate.juju import endpoints
from loadgate.juju.model import BUNDLE_APPS
from loadgate.targets.juju import JujuTarget


@pytest.fixture
def deployed(loadgate: LoadGate, loadgate_state: ModelGate) -> jubilant.Juju:
    loadgate.deploy()
    return loadgate_state.juju


@pytest.fixture
def juju_target(loadgate_state: ModelGate) -> JujuTarget:
    return loadgate_state.target()


def test_every_application_active_and_idle(deployed: jubilant.Juju) -> None:
    status = deployed.status()
    assert set(BUNDLE_APPS) <= set(status.apps)
    assert jubilant.all_active(status, *BUNDLE_APPS)
    assert jubilant.all_agents_idle(status, *BUNDLE_APPS)


def test_loki_answers_https_verified_with_the_model_ca(juju_target: JujuTarget) -> None:
    for unit in juju_target.loki_units:
        with tls.verified_client(juju_target.ca_file, unit.hostname) as client:
            resp = client.get(f"{unit.url(endpoints.LOKI_PORT)}/ready")
        assert resp.status_code == 200, f"{unit.unit}: /ready answered {resp.status_code}"


def test_loki_certificate_is_refused_without_the_model_ca(juju_target: JujuTarget) -> None:
    unit = juju_target.loki_unit
    system_only = ssl.create_default_context()
    transport = tls.ServerNameTransport(unit.hostname, system_only)
    with (
        httpx.Client(transport=transport, timeout=30) as client,
        pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"),
    ):
        client.get(f"{unit.url(endpoints.LOKI_PORT)}/ready")


def test_collector_otlp_endpoint_reached_k6(deployed: jubilant.Juju) -> None:
    unit = endpoints.leader(deployed.status(), "k6")
    data = endpoints.related_app_data(deployed.show_unit(unit), "send-otlp")
    assert data, f"{unit} has no send-otlp relation"
    published = json.dumps(data)
    assert "otelcol" in published, f"no collector address in {unit}'s send-otlp: {published}"
    assert "4318" in published, f"no OTLP/HTTP port in {unit}'s send-otlp: {published}"
    k6 = deployed.status().apps["k6"].units[unit]
    assert k6.workload_status.current == "active", k6.workload_status.message
