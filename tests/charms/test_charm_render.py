"""The real charms render offline: what they write, that a render is reproducible, and that
nothing they do touches this machine."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from loadgate.stack import tls
from loadgate.charms import render, sources, venvs
from support.charm_render import LOKI_VERSION, OTELCOL_VERSION

HOST_TRUST = Path("/usr/local/share/ca-certificates")


def test_both_charms_are_active_with_the_bundle_relations(
    pipeline: render.RenderedPipeline,
) -> None:
    assert pipeline.otelcol.status == {"name": "active", "message": ""}
    assert pipeline.loki.status["name"] == "active"
    assert pipeline.loki_push_url == (
        "https://loki-0.loki-endpoints.loadgate.svc.cluster.local:3100/loki/api/v1/push"
    )


def test_the_collector_config_is_the_charms(pipeline: render.RenderedPipeline) -> None:
    config = yaml.safe_load(pipeline.otelcol.file("/etc/otelcol/config.yaml").read_text())
    exporter = config["exporters"]["loki/send-loki-logs/0"]
    assert exporter["endpoint"] == pipeline.loki_push_url
    assert exporter["sending_queue"]["queue_size"] == 1000
    # rev221 ships its own logs into its own OTLP receiver, with the loop breaker.
    telemetry = config["service"]["telemetry"]
    assert telemetry["resource"]["service.name"] == "otelcol-internal"
    assert "filter/internal-telemetry-loop-breaker/otelcol/0" in config["processors"]
    # The CA arrived over receive-ca-cert, written by the certificate-transfer provider code.
    ca = pipeline.otelcol.file("/usr/local/share/ca-certificates/juju_receive-ca-cert/0.crt")
    assert "BEGIN CERTIFICATE" in ca.read_text()
    assert pipeline.otelcol.published("receive-ca-cert")["app"] == {"version": "1"}


def test_loki_serves_tls_with_a_certificate_from_the_stack_ca(
    pipeline: render.RenderedPipeline, ca: tls.TLSMaterial
) -> None:
    from cryptography import x509

    config = yaml.safe_load(pipeline.loki.file("/etc/loki/loki-local-config.yaml").read_text())
    cert_path = config["server"]["http_tls_config"]["cert_file"]
    cert = x509.load_pem_x509_certificate(pipeline.loki.file(cert_path).read_bytes())
    issuer = x509.load_pem_x509_certificate(ca.ca_cert_pem)
    assert cert.issuer == issuer.subject
    cert.verify_directly_issued_by(issuer)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == [render.fqdn("loki")]
    assert config["limits_config"]["ingestion_rate_mb"] == 4.0
    assert config["analytics"]["reporting_enabled"] is False
    # The schema starts on the seeded day, not "today".
    assert config["schema_config"]["configs"][-1]["from"] == render.RENDER_EPOCH[:10]


def test_a_render_is_reproducible(
    pipeline: render.RenderedPipeline,
    otelcol_main: sources.CharmSource,
    loki_pinned: sources.CharmSource,
    ca: tls.TLSMaterial,
    tmp_path: Path,
) -> None:
    again = render.render_pipeline(
        otelcol_main,
        loki_pinned,
        tmp_path / "again",
        ca_cert=ca.ca_cert_pem.decode(),
        ca_key=ca.ca_key_pem.decode(),
        otelcol_options={},
        loki_options={},
        otelcol_version=OTELCOL_VERSION,
        loki_version=LOKI_VERSION,
    )
    for first, second in ((pipeline.otelcol, again.otelcol), (pipeline.loki, again.loki)):
        assert first.plans == second.plans
        configs = [p for p in first.files[first.container] if p.endswith((".yaml", ".crt"))]
        assert configs
        for path in configs:
            assert first.file(path).read_bytes() == second.file(path).read_bytes(), path


def test_recorded_fixtures_are_what_the_charms_render(pipeline: render.RenderedPipeline) -> None:
    """tests/data/rendered feeds the unit tests of localization; it must not drift."""
    data = Path(__file__).resolve().parents[1] / "data" / "rendered"
    pairs = {
        "otelcol-rev221-config.yaml": pipeline.otelcol.file("/etc/otelcol/config.yaml"),
        "loki-rev244-config.yaml": pipeline.loki.file("/etc/loki/loki-local-config.yaml"),
    }
    for name, rendered in pairs.items():
        assert (data / name).read_text() == rendered.read_text(), name
    for name, charm in (("otelcol-plan.yaml", pipeline.otelcol), ("loki-plan.yaml", pipeline.loki)):
        # The collector's `_reload` variable hashes the files it got, the CA among them.
        assert without_reload(yaml.safe_load((data / name).read_text())) == without_reload(
            charm.plan
        ), name


def without_reload(plan: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(plan)
    for service in out.get("services", {}).values():
        service.get("environment", {}).pop("_reload", None)
    return out


def test_the_loki_charm_is_sandboxed(pipeline: render.RenderedPipeline) -> None:
    """Loki's charm writes CAs into its own container's trust store and runs
    update-ca-certificates there; here its container is this machine. Both were caught."""
    journal = pipeline.loki.journal
    assert ["update-ca-certificates", "--fresh"] in journal["commands"]
    assert "/usr/local/share/ca-certificates/cos-ca.crt" in journal["redirected"]
    assert not (HOST_TRUST / "cos-ca.crt").exists()
    assert not (HOST_TRUST / "juju_receive-ca-cert").exists()
    sandboxed = pipeline.loki.out.parent / "host" / "usr/local/share/ca-certificates/cos-ca.crt"
    assert "BEGIN CERTIFICATE" in sandboxed.read_text()


EVIL_CHARM = """
import os, subprocess, socket, pathlib
import ops

class Evil(ops.CharmBase):
    def __init__(self, framework):
        super().__init__(framework)
        framework.observe(self.on.config_changed, self._go)

    def _go(self, _):
        action, target = self.config["action"], self.config["target"]
        if action == "write":
            pathlib.Path(target).write_text("owned")
        elif action == "remove":
            os.remove(target)
        elif action == "spawn":
            subprocess.Popen(["touch", target])
        elif action == "connect":
            socket.create_connection(("127.0.0.1", 22), timeout=1)
"""


@pytest.mark.parametrize(
    ("action", "refused"),
    [("write", "write of"), ("remove", "os.remove of"), ("spawn", "subprocess.Popen refused"),
     ("connect", "network connection")],
)  # fmt: skip
def test_the_sandbox_refuses_what_a_charm_must_not_do(
    action: str, refused: str, tmp_path: Path
) -> None:
    """A charm revision that does something new fails the render, naming it."""
    charm = tmp_path / "evil"
    (charm / "src").mkdir(parents=True)
    (charm / "charmcraft.yaml").write_text(
        "name: evil\ntype: charm\nsummary: s\ndescription: d\nbase: ubuntu@24.04\n"
        "platforms:\n  amd64:\ncontainers:\n  otelcol:\n    resource: img\n"
        "resources:\n  img: {type: oci-image}\n"
        "config:\n  options:\n    action: {type: string}\n    target: {type: string}\n"
    )
    (charm / "src" / "charm.py").write_text(EVIL_CHARM)
    victim = tmp_path / "outside" / "victim.txt"
    victim.parent.mkdir()
    victim.write_text("mine")
    source = sources.CharmSource(
        "otelcol", "evil", str(charm), "checkout", str(charm), None, None, False, (), charm,
        None, None, "0" * 64,
    )  # fmt: skip
    own = venvs.CharmVenv(
        Path(sys.prefix), venvs.Interpreter(Path(sys.executable), "", ""), False, 0.0
    )
    config = {"action": action, "target": str(victim)}
    request = render.driver_request(
        "otelcol", source, tmp_path / "work", config, [], [], "otelcol version 0"
    )
    with pytest.raises(render.RenderError, match=refused):
        render.run_driver(source, own, request)
    assert victim.read_text() == "mine"


def test_the_venv_says_which_interpreter_and_why(pipeline: render.RenderedPipeline) -> None:
    venv = pipeline.otelcol.venv
    info = json.loads((venv.path / "loadgate-venv.json").read_text())
    assert info["interpreter"]["version"] == pipeline.otelcol.python
    assert info["interpreter"]["why"]
    # rev221's base (26.04) runs Python 3.14: used when here, else the reason says it is not.
    assert pipeline.otelcol.python.startswith("3.14") or "3.14" in venv.interpreter.why
