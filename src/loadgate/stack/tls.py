"""TLS material for the local stack: a fresh CA per stack and a server certificate for loopback.

Keys are RSA 2048, as the self-signed-certificates charm makes them: the charms' TLS library
signs their certificate requests with this CA when the stack renders them, and it takes RSA
CA keys only. The clients that trust such a CA are `loadgate.tlsclient` (no `cryptography`).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.asymmetric.types import CertificateIssuerPrivateKeyTypes
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_DEFAULT_HOSTNAMES = ("localhost",)
_DEFAULT_IPS = ("127.0.0.1", "::1")


@dataclass(frozen=True)
class TLSMaterial:
    ca_cert_pem: bytes
    ca_key_pem: bytes
    server_cert_pem: bytes
    server_key_pem: bytes


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "loadgate local stack"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def ca_certificate(
    key: CertificateIssuerPrivateKeyTypes, name: x509.Name, start: dt.datetime, end: dt.datetime
) -> x509.Certificate:
    """A self-signed CA certificate (path length 0) for `key`, valid from start to end."""
    return (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .sign(key, hashes.SHA256())
    )


def generate(
    hostnames: tuple[str, ...] = _DEFAULT_HOSTNAMES,
    ips: tuple[str, ...] = _DEFAULT_IPS,
    days: int = 30,
    now: dt.datetime | None = None,
) -> TLSMaterial:
    """A new CA and a server certificate it signs for the given hostnames and IP addresses."""
    start = (now or dt.datetime.now(dt.UTC)) - dt.timedelta(minutes=5)
    end = start + dt.timedelta(days=days)

    ca_key = _new_key()
    ca_name = _name("loadgate local CA")
    ca_cert = ca_certificate(ca_key, ca_name, start, end)

    key = _new_key()
    server_cert = _server_certificate(key, ca_key, ca_name, hostnames, ips, start, end)
    return TLSMaterial(
        ca_cert_pem=ca_cert.public_bytes(serialization.Encoding.PEM),
        ca_key_pem=_pem_key(ca_key),
        server_cert_pem=server_cert.public_bytes(serialization.Encoding.PEM),
        server_key_pem=_pem_key(key),
    )


def _server_certificate(
    key: rsa.RSAPrivateKey,
    ca_key: rsa.RSAPrivateKey,
    ca_name: x509.Name,
    hostnames: tuple[str, ...],
    ips: tuple[str, ...],
    start: dt.datetime,
    end: dt.datetime,
) -> x509.Certificate:
    sans: list[x509.GeneralName] = [x509.DNSName(h) for h in hostnames]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    return (
        x509.CertificateBuilder()
        .subject_name(_name(hostnames[0] if hostnames else ips[0]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )


def issue_server_cert(
    material: TLSMaterial,
    hostnames: tuple[str, ...],
    ips: tuple[str, ...] = _DEFAULT_IPS,
    days: int = 30,
    now: dt.datetime | None = None,
) -> tuple[bytes, bytes]:
    """Another server certificate from the stack's CA (for a backend's in-cluster name):
    (certificate PEM, key PEM)."""
    return issue(material.ca_cert_pem, material.ca_key_pem, hostnames, ips, days, now)


def issue(
    ca_cert_pem: bytes,
    ca_key_pem: bytes,
    hostnames: tuple[str, ...],
    ips: tuple[str, ...] = _DEFAULT_IPS,
    days: int = 30,
    now: dt.datetime | None = None,
) -> tuple[bytes, bytes]:
    """A server certificate (and its key), PEM, that an existing CA signs for the names."""
    ca_cert = x509.load_pem_x509_certificate(ca_cert_pem)
    ca_key = serialization.load_pem_private_key(ca_key_pem, password=None)
    if not isinstance(ca_key, rsa.RSAPrivateKey):
        raise ValueError("the stack's CA key is not an RSA key")
    start = (now or dt.datetime.now(dt.UTC)) - dt.timedelta(minutes=5)
    end = start + dt.timedelta(days=days)
    key = _new_key()
    cert = _server_certificate(key, ca_key, ca_cert.subject, hostnames, ips, start, end)
    return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)


def _new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _pem_key(key: rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


@dataclass(frozen=True)
class TLSPaths:
    ca_cert: Path
    ca_key: Path
    server_cert: Path
    server_key: Path


def write(material: TLSMaterial, folder: Path) -> TLSPaths:
    folder.mkdir(parents=True, exist_ok=True)
    out = TLSPaths(
        folder / "ca.crt", folder / "ca.key", folder / "server.crt", folder / "server.key"
    )
    out.ca_cert.write_bytes(material.ca_cert_pem)
    out.ca_key.touch(mode=0o600)
    out.ca_key.write_bytes(material.ca_key_pem)
    out.server_cert.write_bytes(material.server_cert_pem)
    out.server_key.touch(mode=0o600)
    out.server_key.write_bytes(material.server_key_pem)
    return out
