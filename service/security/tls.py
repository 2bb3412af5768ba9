"""TLS for ``thirteen serve`` and its clients (issue 11 §1): the files are checked at start, so a
wrong path, a key that is not the certificate's or an expired certificate is one clear line
instead of a failed handshake at the first call."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

import grpc
from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.types import PublicKeyTypes

from service.small_files import TooLarge, read_small

LOOPBACK_NAMES = ("localhost",)


class TlsConfigError(ValueError):
    """A certificate or key file cannot be used; the message names the file and the problem."""


@dataclass(frozen=True)
class ServerTls:
    """What ``thirteen serve`` was given: its credentials, and whether clients must present a
    certificate (mutual TLS)."""

    credentials: grpc.ServerCredentials
    mutual: bool


def server_credentials(cert: Path, key: Path, client_ca: Path | None = None) -> ServerTls:
    """Credentials serving ``cert`` (leaf first, then any intermediates) with ``key``; with
    ``client_ca`` every client must present a certificate that chains to it."""
    chain = _pair(cert, key)
    roots = _certificates(client_ca, "client CA") if client_ca is not None else None
    credentials = grpc.ssl_server_credentials(
        [(_read(key, "key"), chain)], root_certificates=roots, require_client_auth=roots is not None
    )
    return ServerTls(credentials, mutual=roots is not None)


def channel_credentials(
    ca: Path, cert: Path | None = None, key: Path | None = None
) -> grpc.ChannelCredentials:
    """Credentials for a client that trusts the server certificates ``ca`` signed and, with
    ``cert`` and ``key``, presents its own certificate (mutual TLS)."""
    if (cert is None) != (key is None):
        raise TlsConfigError("a client certificate and its key go together: give both or neither")
    roots = _certificates(ca, "CA")
    if cert is None or key is None:
        return grpc.ssl_channel_credentials(root_certificates=roots)
    chain = _pair(cert, key)
    return grpc.ssl_channel_credentials(
        root_certificates=roots, private_key=_read(key, "key"), certificate_chain=chain
    )


def is_loopback(address: str) -> bool:
    """Whether ``HOST:PORT`` listens only on this machine (127.0.0.0/8, ::1, localhost).

    >>> [is_loopback(a) for a in ("127.0.0.1:1", "[::1]:1", "localhost:1", "0.0.0.0:1")]
    [True, True, True, False]
    """
    host = address.rpartition(":")[0].strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: it may resolve anywhere
        return False


def _read(path: Path, what: str) -> bytes:
    try:
        return read_small(path)
    except TooLarge as error:
        raise TlsConfigError(f"the TLS {what} {path} {error}") from None
    except FileNotFoundError:
        raise TlsConfigError(f"the TLS {what} {path} does not exist") from None
    except IsADirectoryError:
        raise TlsConfigError(f"the TLS {what} {path} is a directory, not a file") from None
    except OSError as error:
        raise TlsConfigError(f"cannot read the TLS {what} {path}: {error.strerror}") from None


def _certificates(path: Path, what: str) -> bytes:
    """The PEM certificates in ``path``, each checked to be valid now."""
    data = _read(path, what)
    try:
        certificates = x509.load_pem_x509_certificates(data)
    except ValueError:
        raise TlsConfigError(
            f"the TLS {what} {path} is not a PEM certificate (expected -----BEGIN CERTIFICATE-----)"
        ) from None
    now = datetime.datetime.now(datetime.UTC)
    for certificate in certificates:
        subject = certificate.subject.rfc4514_string() or "(no subject)"
        if certificate.not_valid_after_utc < now:
            raise TlsConfigError(
                f"the TLS {what} {path} has expired: {subject} was valid until "
                f"{certificate.not_valid_after_utc:%Y-%m-%d %H:%M} UTC; issue a new one"
            )
        if certificate.not_valid_before_utc > now:
            raise TlsConfigError(
                f"the TLS {what} {path} is not valid yet: {subject} is valid from "
                f"{certificate.not_valid_before_utc:%Y-%m-%d %H:%M} UTC; check the clock"
            )
    return data


def _pair(cert: Path, key: Path) -> bytes:
    """The certificate chain in ``cert``, checked to belong to the private key in ``key``."""
    chain = _certificates(cert, "certificate")
    data = _read(key, "key")
    try:
        private = serialization.load_pem_private_key(data, password=None)
    except TypeError:  # it needs a password, which gRPC cannot take
        raise TlsConfigError(
            f"the TLS key {key} is encrypted; give an unencrypted PEM key (mode 0600)"
        ) from None
    except (ValueError, UnsupportedAlgorithm):
        raise TlsConfigError(
            f"the TLS key {key} is not a PEM private key (expected -----BEGIN PRIVATE KEY-----)"
        ) from None
    leaf = x509.load_pem_x509_certificates(chain)[0]
    if _spki(private.public_key()) != _spki(leaf.public_key()):
        raise TlsConfigError(
            f"the TLS key {key} does not match the certificate {cert}: give the key that "
            "certificate was issued for"
        )
    return chain


def _spki(public: PublicKeyTypes) -> bytes:
    return public.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
