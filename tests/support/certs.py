"""Certificates for tests: a CA, a server certificate for 127.0.0.1 and client certificates
with any identity (URI SAN, DNS SAN, CN, or none), made with ``cryptography``."""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

NOW = dt.datetime.now(dt.UTC)


@dataclass(frozen=True)
class Issued:
    cert: Path
    key: Path

    def pair(self) -> tuple[bytes, bytes]:
        return self.key.read_bytes(), self.cert.read_bytes()


def _write(
    directory: Path, name: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey
) -> Issued:
    cert_path, key_path = directory / f"{name}.pem", directory / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return Issued(cert_path, key_path)


class Authority:
    """A test CA in ``directory``; ``ca.pem`` is what a server or client trusts."""

    def __init__(self, directory: Path, name: str = "thirteen test CA") -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(NOW - dt.timedelta(days=1))
            .not_valid_after(NOW + dt.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(self.key, hashes.SHA256())
        )
        self.ca = _write(directory, "ca", self.cert, self.key).cert

    def issue(
        self,
        name: str,
        *,
        uri: str | None = None,
        dns: str | None = None,
        cn: str | None = None,
        server: bool = False,
        expired: bool = False,
    ) -> Issued:
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)] if cn else [])
        names: list[x509.GeneralName] = []
        if uri:
            names.append(x509.UniformResourceIdentifier(uri))
        if dns:
            names.append(x509.DNSName(dns))
        if server:
            names += [
                x509.DNSName("localhost"),
                x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
            ]
        start, end = NOW - dt.timedelta(days=1), NOW + dt.timedelta(days=30)
        if expired:
            start, end = NOW - dt.timedelta(days=30), NOW - dt.timedelta(days=1)
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        )
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        return _write(self.directory, name, builder.sign(self.key, hashes.SHA256()), key)
