"""The stack's TLS material: the CA verifies the server certificate for loopback names."""

from __future__ import annotations

import contextlib
import datetime as dt
import ipaddress
import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID

from loadgate.stack import tls


@pytest.fixture(scope="module")
def material() -> tls.TLSMaterial:
    return tls.generate()


def test_ca_signs_the_server_certificate(material: tls.TLSMaterial) -> None:
    ca = x509.load_pem_x509_certificate(material.ca_cert_pem)
    server = x509.load_pem_x509_certificate(material.server_cert_pem)
    assert server.issuer == ca.subject
    pub = ca.public_key()
    # RSA: the charms' TLS library signs their requests with this CA and takes RSA keys only.
    assert isinstance(pub, rsa.RSAPublicKey)
    assert pub.key_size == 2048
    key = serialization.load_pem_private_key(material.ca_key_pem, None)
    assert isinstance(key, rsa.RSAPrivateKey)
    assert key.public_key().public_numbers() == pub.public_numbers()
    server.verify_directly_issued_by(ca)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    assert server.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    eku = server.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert ExtendedKeyUsageOID.SERVER_AUTH in eku


def test_server_names_and_addresses(material: tls.TLSMaterial) -> None:
    server = x509.load_pem_x509_certificate(material.server_cert_pem)
    san = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["localhost"]
    ips = san.get_values_for_type(x509.IPAddress)
    assert ipaddress.ip_address("127.0.0.1") in ips
    assert ipaddress.ip_address("::1") in ips


def test_a_fresh_ca_each_time(material: tls.TLSMaterial) -> None:
    assert tls.generate().ca_cert_pem != material.ca_cert_pem


def test_validity_window() -> None:
    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    server = x509.load_pem_x509_certificate(tls.generate(days=2, now=now).server_cert_pem)
    assert server.not_valid_before_utc < now < server.not_valid_after_utc
    assert server.not_valid_after_utc - now < dt.timedelta(days=2)


def test_python_ssl_accepts_the_pair_for_loopback_only(
    material: tls.TLSMaterial, tmp_path: Path
) -> None:
    paths = tls.write(material, tmp_path)
    assert paths.server_key.stat().st_mode & 0o077 == 0
    # A TLS handshake in memory: the client trusts only our CA and checks the host name.
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(paths.server_cert, paths.server_key)
    client_ctx = ssl.create_default_context(cafile=str(paths.ca_cert))

    def handshake(name: str) -> None:
        c_in, c_out, s_in, s_out = (ssl.MemoryBIO() for _ in range(4))
        client = client_ctx.wrap_bio(c_in, c_out, server_hostname=name)
        server = server_ctx.wrap_bio(s_in, s_out, server_side=True)
        for _ in range(10):
            for side, out_bio, peer_in in ((client, c_out, s_in), (server, s_out, c_in)):
                with contextlib.suppress(ssl.SSLWantReadError):
                    side.do_handshake()
                peer_in.write(out_bio.read())
        client.do_handshake()

    handshake("localhost")
    handshake("127.0.0.1")
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake("example.com")


def test_another_server_certificate_from_the_stack_ca() -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    from loadgate.stack import tls as tls_mod

    material = tls_mod.generate()
    cert_pem, key_pem = tls_mod.issue_server_cert(material, ("tempo-0.x.svc",))
    cert = x509.load_pem_x509_certificate(cert_pem)
    ca = x509.load_pem_x509_certificate(material.ca_cert_pem)
    cert.verify_directly_issued_by(ca)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["tempo-0.x.svc"]
    key = serialization.load_pem_private_key(key_pem, password=None)
    spki = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    assert key.public_key().public_bytes(*spki) == cert.public_key().public_bytes(*spki)
    assert cert_pem != material.server_cert_pem
