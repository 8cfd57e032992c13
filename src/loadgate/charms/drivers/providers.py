"""The provider side of the relations a charm exchanges certificates over, written by the
provider library code itself (the copy the charm ships, or the charmlibs package), run in
ops.testing as a one-unit provider application:

- `tls-certificates` (v4): sign each CSR the requirer published, as self-signed-certificates
  does, and publish certificate, CA and chain;
- `certificate_transfer` (v1): publish the CA certificates;
- `prometheus_remote_write` (v1): publish the remote-write URL, as the Prometheus charm does;
- `tracing` (tempo_coordinator_k8s v0): publish a receiver URL for each protocol the requirer
  asked for, as the Tempo coordinator charm does.

The last two come from another charm's `lib/` (the Prometheus charm's snapshot carries both
libraries), loaded from that file under a name of its own: the charm under render ships its own
copies of the same modules, already imported as `charms.…`.

Each function takes what the requirer wrote in its databags and returns the provider's
databags: (application data, unit data).
"""

from __future__ import annotations

import datetime as dt
import importlib
import importlib.util
import sys
import types
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import ops
from kit import own_unit_data
from ops import testing

_PROVIDER_APP = "ca"
_TLS_LIBS = (
    "charms.tls_certificates_interface.v4.tls_certificates",
    "charmlibs.interfaces.tls_certificates",
)
_TRANSFER_LIBS = (
    "charms.certificate_transfer_interface.v1.certificate_transfer",
    "charmlibs.interfaces.certificate_transfer",
)


def _library(candidates: Iterable[str], what: str) -> types.ModuleType:
    for name in candidates:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise SystemExit(
        f"no {what} provider library in the charm or its venv ({', '.join(candidates)})"
    )


def _library_file(lib_dir: str, module: str) -> types.ModuleType:
    """`module` (dotted, e.g. charms.prometheus_k8s.v1.prometheus_remote_write) from the file
    under another charm's `lib_dir`, imported as `provider_lib.<module>`."""
    path = Path(lib_dir, *module.split(".")).with_suffix(".py")
    name = "provider_lib." + module
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None or not path.is_file():
        raise SystemExit(f"no provider library {module} at {path}")
    lib = importlib.util.module_from_spec(spec)
    sys.modules[name] = lib
    spec.loader.exec_module(lib)
    return lib


def _run_provider(
    charm_type: type[ops.CharmBase],
    endpoint: str,
    interface: str,
    requirer_app: str,
    requirer_app_data: Mapping[str, str],
    requirer_unit_data: Mapping[str, str],
    provider_app: str = _PROVIDER_APP,
    event: str = "changed",
) -> tuple[dict[str, str], dict[str, str]]:
    meta = {"name": provider_app, "provides": {endpoint: {"interface": interface}}}
    ctx = testing.Context(charm_type, meta=meta, app_name=provider_app)
    rel = testing.Relation(
        endpoint,
        interface=interface,
        remote_app_name=requirer_app,
        remote_app_data=dict(requirer_app_data),
        remote_units_data={0: dict(requirer_unit_data)},
    )
    hook = ctx.on.relation_created(rel) if event == "created" else ctx.on.relation_changed(
        rel, remote_unit=0
    )
    out = ctx.run(hook, testing.State(leader=True, relations=[rel]))
    done = out.get_relation(rel.id)
    return dict(done.local_app_data), own_unit_data(done.local_unit_data)


def tls_certificates(
    requirer_app: str,
    requirer_app_data: Mapping[str, str],
    requirer_unit_data: Mapping[str, str],
    ca_pem: str,
    ca_key_pem: str,
    days: int,
) -> tuple[dict[str, str], dict[str, str]]:
    lib = _library(_TLS_LIBS, "tls-certificates")
    ca = lib.Certificate.from_string(ca_pem)
    key = lib.PrivateKey.from_string(ca_key_pem)

    class Provider(ops.CharmBase):
        def __init__(self, framework: ops.Framework):
            super().__init__(framework)
            self.tls = lib.TLSCertificatesProvidesV4(self, "certificates")
            framework.observe(self.on["certificates"].relation_changed, self._sign)

        def _sign(self, _: ops.EventBase) -> None:
            for request in self.tls.get_certificate_requests():
                csr = request.certificate_signing_request
                cert = _generate(lib, csr, ca, key, dt.timedelta(days=days))
                self.tls.set_relation_certificate(
                    lib.ProviderCertificate(
                        relation_id=request.relation_id,
                        certificate=cert,
                        certificate_signing_request=csr,
                        ca=ca,
                        chain=[cert, ca],
                    )
                )

    return _run_provider(
        Provider, "certificates", "tls-certificates", requirer_app, requirer_app_data,
        requirer_unit_data,
    )  # fmt: skip


def _generate(lib: types.ModuleType, csr: Any, ca: Any, key: Any, validity: dt.timedelta) -> Any:
    generate = getattr(lib.Certificate, "generate", None)
    if generate is not None:
        return generate(csr=csr, ca=ca, ca_private_key=key, validity=validity)
    return lib.generate_certificate(csr=csr, ca=ca, ca_private_key=key, validity=validity)


def certificate_transfer(
    requirer_app: str, requirer_app_data: Mapping[str, str], certificates: Iterable[str]
) -> tuple[dict[str, str], dict[str, str]]:
    lib = _library(_TRANSFER_LIBS, "certificate_transfer")
    pems = {c.strip() for c in certificates if c.strip()}

    class Provider(ops.CharmBase):
        def __init__(self, framework: ops.Framework):
            super().__init__(framework)
            self.transfer = lib.CertificateTransferProvides(self, "send-ca-cert")
            framework.observe(self.on["send-ca-cert"].relation_changed, self._send)

        def _send(self, _: ops.EventBase) -> None:
            self.transfer.add_certificates(pems)

    return _run_provider(
        Provider, "send-ca-cert", "certificate_transfer", requirer_app, requirer_app_data, {}
    )


_REMOTE_WRITE_LIB = "charms.prometheus_k8s.v1.prometheus_remote_write"
_TRACING_LIB = "charms.tempo_coordinator_k8s.v0.tracing"


def prometheus_remote_write(
    lib_dir: str, provider_app: str, requirer_app: str, server_url: str, endpoint_path: str
) -> tuple[dict[str, str], dict[str, str]]:
    """The Prometheus charm's `receive-remote-write` side: its provider, built as the charm
    builds it (`server_url_func` its most external URL, `endpoint_path`), publishes the URL
    when the relation is created."""
    lib = _library_file(lib_dir, _REMOTE_WRITE_LIB)

    class Provider(ops.CharmBase):
        def __init__(self, framework: ops.Framework):
            super().__init__(framework)
            self.remote_write = lib.PrometheusRemoteWriteProvider(
                self,
                relation_name="receive-remote-write",
                server_url_func=lambda: server_url,
                endpoint_path=endpoint_path,
            )

    return _run_provider(
        Provider, "receive-remote-write", "prometheus_remote_write", requirer_app, {}, {},
        provider_app, event="created",
    )  # fmt: skip


def tracing(
    lib_dir: str,
    provider_app: str,
    requirer_app: str,
    requirer_app_data: Mapping[str, str],
    receiver_urls: Mapping[str, str],
) -> tuple[dict[str, str], dict[str, str]]:
    """The Tempo coordinator's `tracing` side: the protocols the requirer asked for (read by
    the library), each published with its URL from `receiver_urls`."""
    lib = _library_file(lib_dir, _TRACING_LIB)

    class Provider(ops.CharmBase):
        def __init__(self, framework: ops.Framework):
            super().__init__(framework)
            self.tracing = lib.TracingEndpointProvider(self, relation_name="tracing")
            framework.observe(self.on["tracing"].relation_changed, self._publish)

        def _publish(self, _: ops.EventBase) -> None:
            asked = sorted(self.tracing.requested_protocols())
            unknown = [p for p in asked if p not in receiver_urls]
            if unknown:
                raise SystemExit(f"tracing: no receiver URL for {unknown} (asked {asked})")
            self.tracing.publish_receivers([(p, receiver_urls[p]) for p in asked])

    return _run_provider(
        Provider, "tracing", "tracing", requirer_app, requirer_app_data, {}, provider_app
    )
