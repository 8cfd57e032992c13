"""The collector related for metrics and traces: the relation data is what the Prometheus and
Tempo provider libraries write, the charm renders its remote-write and traces exporters from
it, and localizing sends them to the stack's backends with TLS verified where the charm uses
TLS."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from cryptography import x509

from loadgate.charms import render, signals
from loadgate.stack import charm_build, localize, localize_signals, standin, tls
from loadgate.stack.ports import Ports

DATA = Path(__file__).resolve().parents[1] / "data" / "rendered"
CONFIG = "/etc/otelcol/config.yaml"
CA_PUSHED = "/usr/local/share/ca-certificates/juju_receive-ca-cert/0.crt"
PROMETHEUS = "prometheus-0.prometheus-endpoints.loadgate.svc.cluster.local"
TEMPO = "tempo-0.tempo-endpoints.loadgate.svc.cluster.local"
REMOTE_WRITE = "prometheusremotewrite/send-remote-write/0"
TRACES = "otlphttp/send-traces-0"


def test_the_providers_wrote_the_bundle_relation_data(
    signals_pipeline: render.RenderedPipeline,
) -> None:
    assert signals_pipeline.otelcol.status == {"name": "active", "message": ""}
    written = signals_pipeline.otelcol.to_dict()["provider_data"]
    # prometheus_remote_write v1: the unit databag, the URL the Prometheus charm builds.
    remote_write = written["send-remote-write"]
    assert remote_write["app"] == {}
    assert json.loads(remote_write["units"]["0"]["remote_write"]) == {
        "url": f"https://{PROMETHEUS}:9090/api/v1/write"
    }
    # tracing v0: a receiver for each protocol the collector's requirer asked for.
    asked = signals_pipeline.otelcol.published("send-traces")["app"]
    assert json.loads(asked["receivers"]) == ["otlp_http", "otlp_grpc"]
    receivers = json.loads(written["send-traces"]["app"]["receivers"])
    assert sorted(receivers, key=lambda r: r["protocol"]["name"]) == [
        {"protocol": {"name": "otlp_grpc", "type": "grpc"}, "url": f"{TEMPO}:4317"},
        {"protocol": {"name": "otlp_http", "type": "http"}, "url": f"https://{TEMPO}:4318"},
    ]


def test_the_charm_renders_both_exporters_from_the_relations(
    signals_pipeline: render.RenderedPipeline,
) -> None:
    text = signals_pipeline.otelcol.file(CONFIG).read_text()
    # The unit tests localize this recorded render; it must not drift.
    assert (DATA / "otelcol-rev221-signals-config.yaml").read_text() == text
    config = yaml.safe_load(text)
    exporters = config["exporters"]
    assert exporters[REMOTE_WRITE]["endpoint"] == f"https://{PROMETHEUS}:9090/api/v1/write"
    assert exporters[REMOTE_WRITE]["tls"] == {"insecure_skip_verify": False}
    assert exporters[TRACES]["endpoint"] == f"https://{TEMPO}:4318"
    pipelines = config["service"]["pipelines"]
    assert pipelines["metrics/otelcol/0"]["exporters"] == [REMOTE_WRITE]
    assert pipelines["traces/otelcol/0"]["exporters"] == [TRACES]


def test_a_logs_only_render_has_neither(pipeline: render.RenderedPipeline) -> None:
    config = yaml.safe_load(pipeline.otelcol.file(CONFIG).read_text())
    roles = {localize_signals.exporter_role(name) for name in config["exporters"]}
    assert roles == {None}
    assert "provider_data" not in pipeline.otelcol.to_dict()


def test_localized_exporters_reach_the_stack_backends_with_tls_verified(
    signals_pipeline: render.RenderedPipeline, ca: tls.TLSMaterial, tmp_path: Path
) -> None:
    ports = Ports.from_base(25650)
    ca_file = signals_pipeline.otelcol.file(CA_PUSHED)
    base = localize.otelcol(
        yaml.safe_load(signals_pipeline.otelcol.file(CONFIG).read_text()),
        localize.OtelcolLocal(ports, tmp_path / "storage", ca_file, {}),
    )
    targets = charm_build.signal_targets(signals.SIGNALS, ports, ca_file)
    out = localize_signals.exporters(base, targets).config["exporters"]
    # Metrics: the stack's Prometheus (plain HTTP, said so in the change).
    assert out[REMOTE_WRITE]["endpoint"] == "http://127.0.0.1:25656/api/v1/write"
    # Traces: the stand-in on base+7, its certificate checked for Tempo's name against the CA
    # the charm installed from receive-ca-cert.
    bports = standin.TRACES.ports_for(ports)
    assert bports.otlp_http == 25657
    assert out[TRACES]["endpoint"] == "https://127.0.0.1:25657"
    assert out[TRACES]["tls"]["server_name_override"] == TEMPO
    assert out[TRACES]["tls"]["ca_file"] == str(ca_file)
    # The stand-in's certificate, from the same CA for that name, verifies as the exporter
    # is told to verify it.
    cert_pem, _ = tls.issue_server_cert(ca, (TEMPO,))
    leaf = x509.load_pem_x509_certificate(cert_pem)
    trusted = x509.load_pem_x509_certificate(ca_file.read_bytes())
    leaf.verify_directly_issued_by(trusted)
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == [TEMPO]
