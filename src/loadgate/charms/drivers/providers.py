"""The provider side of the relations a charm exchanges certificates over, written by the
provider library code itself (the copy the charm ships, or the charmlibs package), run in
ops.testing as a one-unit provider application:

- `tls-certificates` (v4): sign each CSR the requirer published, as self-signed-certificates
  does, and publish certificate, CA and chain;
- `certificate_transfer` (v1): publish the CA certificates.

Each function takes what the requirer wrote in its databags and returns the provider's
databags: (application data, unit data).
"""

from __future__ import annotations

import datetime as dt
import importlib
import types
from collections.abc import Iterable, Mapping
from typing import Any

import ops
from kit import own_unit_data
from ops import testing

PROVIDER_APP = "ca"
TLS_LIBS = (
    "charms.tls_certificates_interface.v4.tls_certificates",
    "charmlibs.interfaces.tls_certificates",
)
TRANSFER_LIBS = (
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


def _run_provider(
    charm_type: type[ops.CharmBase],
    endpoint: str,
    interface: str,
    requirer_app: str,
    requirer_app_data: Mapping[str, str],
    requirer_unit_data: Mapping[str, str],
) -> tuple[dict[str, str], dict[str, str]]:
    meta = {"name": PROVIDER_APP, "provides": {endpoint: {"interface": interface}}}
    ctx = testing.Context(charm_type, meta=meta)
    rel = testing.Relation(
        endpoint,
        interface=interface,
        remote_app_name=requirer_app,
        remote_app_data=dict(requirer_app_data),
        remote_units_data={0: dict(requirer_unit_data)},
    )
    out = ctx.run(
        ctx.on.relation_changed(rel, remote_unit=0), testing.State(leader=True, relations=[rel])
    )
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
    lib = _library(TLS_LIBS, "tls-certificates")
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
    lib = _library(TRANSFER_LIBS, "certificate_transfer")
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
