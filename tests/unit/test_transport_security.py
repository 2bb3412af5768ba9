"""The caller's identity from its client certificate, and the checks ``thirteen serve`` makes
of its TLS files before serving (issue 11 §1, §3). Certificates are made here with
``cryptography``; the call context is a fake with the ``auth_context()`` gRPC hands out."""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, cast

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from service.security.identity import identity_of
from service.security.tls import (
    TlsConfigError,
    channel_credentials,
    is_loopback,
    server_credentials,
)

NOW = dt.datetime.now(dt.UTC)
KEY = ec.generate_private_key(ec.SECP256R1())


def certificate(
    *,
    cn: str | None = None,
    names: Iterable[x509.GeneralName] = (),
    key: ec.EllipticCurvePrivateKey = KEY,
    days: tuple[int, int] = (-1, 30),
) -> x509.Certificate:
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)] if cn else [])
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test")]))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(NOW + dt.timedelta(days=days[0]))
        .not_valid_after(NOW + dt.timedelta(days=days[1]))
    )
    names = list(names)
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(KEY, hashes.SHA256())


def pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def corrupted(cert: x509.Certificate, old: bytes, new: bytes) -> bytes:
    """``cert`` with bytes of a field replaced (its signature no longer matters here: gRPC
    verified the chain before the identity is read)."""
    der = cert.public_bytes(serialization.Encoding.DER)
    assert der.count(old) == 1
    return pem(x509.load_der_x509_certificate(der.replace(old, new)))


class FakeContext:
    def __init__(self, auth: Mapping[str, Iterable[bytes]]) -> None:
        self.auth = auth

    def auth_context(self) -> Mapping[str, Iterable[bytes]]:
        return self.auth


def fake_call(auth: Mapping[str, Iterable[bytes]]) -> grpc.aio.ServicerContext[Any, Any]:
    """A call context that answers only ``auth_context()``, all ``identity_of`` reads."""
    return cast("grpc.aio.ServicerContext[Any, Any]", FakeContext(auth))


def tls_call(cert_pem: bytes) -> grpc.aio.ServicerContext[Any, Any]:
    return fake_call({"transport_security_type": [b"ssl"], "x509_pem_cert": [cert_pem]})


URI = x509.UniformResourceIdentifier
DNS = x509.DNSName


def test_the_identity_is_the_first_uri_san() -> None:
    cert = certificate(
        cn="dealer-cn",
        names=[DNS("dealer.example"), URI("spiffe://thirteen.dev/dealer"), URI("spiffe://x/2")],
    )
    assert identity_of(tls_call(pem(cert))) == "spiffe://thirteen.dev/dealer"


def test_without_a_uri_san_the_identity_is_the_first_dns_san() -> None:
    cert = certificate(cn="desk-cn", names=[DNS("desk.example"), DNS("other.example")])
    assert identity_of(tls_call(pem(cert))) == "desk.example"


def test_without_a_san_the_identity_is_the_common_name() -> None:
    assert identity_of(tls_call(pem(certificate(cn="desk")))) == "desk"


def test_a_certificate_naming_nobody_has_no_identity() -> None:
    assert identity_of(tls_call(pem(certificate()))) is None
    # An IP address SAN is not an identity either; without a CN nothing is left.
    ip_only = certificate(names=[x509.IPAddress(ipaddress.ip_address("10.0.0.1"))])
    assert identity_of(tls_call(pem(ip_only))) is None


def test_a_common_name_that_is_not_utf8_gives_no_identity_and_no_exception() -> None:
    cert = certificate(cn="QQQQ")
    assert identity_of(tls_call(corrupted(cert, b"QQQQ", b"\xff\xfe\xff\xfe"))) is None


def test_a_uri_san_that_does_not_parse_gives_no_identity() -> None:
    cert = certificate(cn="fallback", names=[URI("spiffe://x/QQQQ")])
    assert identity_of(tls_call(corrupted(cert, b"QQQQ", b"\xff\xfe\xff\xfe"))) is None


def test_an_unprintable_or_overlong_name_gives_no_identity() -> None:
    assert identity_of(tls_call(pem(certificate(cn="a\nb")))) is None
    assert identity_of(tls_call(pem(certificate(names=[DNS("a" * 600)])))) is None


def test_garbage_instead_of_a_certificate_gives_no_identity() -> None:
    broken = b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
    assert identity_of(tls_call(broken)) is None
    assert identity_of(tls_call(b"not a certificate")) is None


def test_plaintext_and_tls_without_a_client_certificate_have_no_identity() -> None:
    assert identity_of(fake_call({})) is None
    assert identity_of(fake_call({"transport_security_type": [b"insecure"]})) is None
    assert identity_of(fake_call({"transport_security_type": [b"ssl"]})) is None


def test_a_certificate_outside_tls_is_not_trusted() -> None:
    cert = pem(certificate(names=[URI("spiffe://thirteen.dev/admin")]))
    context = fake_call({"transport_security_type": [b"local"], "x509_pem_cert": [cert]})
    assert identity_of(context) is None


@pytest.mark.parametrize(
    ("address", "loopback"),
    [
        ("127.0.0.1:50051", True),
        ("127.8.9.10:1", True),
        ("[::1]:50051", True),
        ("::1:50051", True),
        ("localhost:0", True),
        ("LOCALHOST:0", True),
        ("0.0.0.0:50051", False),
        ("[::]:50051", False),
        ("10.1.2.3:50051", False),
        ("example.com:50051", False),
        (":50051", False),
    ],
)
def test_only_loopback_addresses_count_as_loopback(address: str, loopback: bool) -> None:
    assert is_loopback(address) is loopback


def write_pair(
    directory: Path, name: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey = KEY
) -> tuple[Path, Path]:
    cert_path, key_path = directory / f"{name}.pem", directory / f"{name}.key"
    cert_path.write_bytes(pem(cert))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def test_good_files_make_server_and_channel_credentials(tmp_path: Path) -> None:
    cert, key = write_pair(tmp_path, "server", certificate(cn="localhost"))
    assert not server_credentials(cert, key).mutual
    assert server_credentials(cert, key, client_ca=cert).mutual
    assert channel_credentials(cert, cert, key) is not None
    assert channel_credentials(cert) is not None


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    cert, key = write_pair(tmp_path, "server", certificate(cn="localhost"))
    with pytest.raises(TlsConfigError, match=r"certificate .*nope\.pem does not exist"):
        server_credentials(tmp_path / "nope.pem", key)
    with pytest.raises(TlsConfigError, match=r"key .*nope\.key does not exist"):
        server_credentials(cert, tmp_path / "nope.key")
    with pytest.raises(TlsConfigError, match=r"client CA .*ca\.pem does not exist"):
        server_credentials(cert, key, tmp_path / "ca.pem")
    with pytest.raises(TlsConfigError, match="is a directory"):
        server_credentials(tmp_path, key)


def test_files_that_are_not_pem_are_named(tmp_path: Path) -> None:
    cert, key = write_pair(tmp_path, "server", certificate(cn="localhost"))
    junk = tmp_path / "junk"
    junk.write_text("hello\n")
    with pytest.raises(TlsConfigError, match=r"junk is not a PEM certificate"):
        server_credentials(junk, key)
    with pytest.raises(TlsConfigError, match=r"junk is not a PEM private key"):
        server_credentials(cert, junk)
    with pytest.raises(TlsConfigError, match=r"server\.pem is not a PEM private key"):
        server_credentials(cert, cert)


def test_a_key_that_is_not_the_certificates_is_refused(tmp_path: Path) -> None:
    other = ec.generate_private_key(ec.SECP256R1())
    cert, _ = write_pair(tmp_path, "server", certificate(cn="localhost"))
    _, wrong = write_pair(tmp_path, "other", certificate(cn="x", key=other), other)
    with pytest.raises(TlsConfigError, match=r"other\.key does not match the certificate"):
        server_credentials(cert, wrong)
    with pytest.raises(TlsConfigError, match="does not match"):
        channel_credentials(cert, cert, wrong)


def test_an_encrypted_key_is_refused(tmp_path: Path) -> None:
    cert, key = write_pair(tmp_path, "server", certificate(cn="localhost"))
    key.write_bytes(
        KEY.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"secret"),
        )
    )
    with pytest.raises(TlsConfigError, match="is encrypted"):
        server_credentials(cert, key)


def test_an_expired_or_not_yet_valid_certificate_is_refused(tmp_path: Path) -> None:
    expired, key = write_pair(tmp_path, "expired", certificate(cn="localhost", days=(-30, -1)))
    with pytest.raises(TlsConfigError, match=r"expired\.pem has expired: CN=localhost"):
        server_credentials(expired, key)
    with pytest.raises(TlsConfigError, match=r"client CA .* has expired"):
        server_credentials(*write_pair(tmp_path, "ok", certificate(cn="localhost")), expired)
    early, key = write_pair(tmp_path, "early", certificate(cn="localhost", days=(2, 30)))
    with pytest.raises(TlsConfigError, match="is not valid yet"):
        server_credentials(early, key)


def test_a_client_certificate_needs_its_key(tmp_path: Path) -> None:
    cert, key = write_pair(tmp_path, "client", certificate(cn="c"))
    with pytest.raises(TlsConfigError, match="go together"):
        channel_credentials(cert, cert, None)
    with pytest.raises(TlsConfigError, match="go together"):
        channel_credentials(cert, None, key)
