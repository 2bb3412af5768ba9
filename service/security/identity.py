"""The caller's identity: its verified client certificate's first URI SAN, else its first DNS
SAN, else its subject's common name (issue 11 §3).

The server asks for a client certificate only when it also verifies it (``--client-ca``: gRPC's
``require_client_auth=True``), so a certificate in the call's auth context is one that chained to
the client CA; without ``--client-ca`` the TLS handshake carries none, and plaintext carries
nothing at all."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import grpc

if TYPE_CHECKING:
    from cryptography import x509

from service.caller import reserved
from service.security.policy import MAX_IDENTITY_LENGTH

CACHED_CERTIFICATES = 256  # distinct client certificates remembered; a miss parses (~30 µs)


def identity_of(context: grpc.aio.ServicerContext[Any, Any]) -> str | None:
    """The identity of the call's verified client certificate, or None when it has none."""
    auth = context.auth_context()
    if b"ssl" not in auth.get("transport_security_type", ()):
        return None
    pems = list(auth.get("x509_pem_cert", ()))
    return identity_in(pems[0]) if pems else None


@functools.lru_cache(maxsize=CACHED_CERTIFICATES)
def identity_in(pem: bytes) -> str | None:
    """The identity a PEM certificate names; None for one that names none usable (no SAN and
    no CN, an empty, overlong or unprintable name, or a certificate that does not parse)."""
    from cryptography import x509  # only a server with client certificates reads them

    try:
        name = _first_name(x509.load_pem_x509_certificate(pem))
    except Exception:  # any malformed field: such a caller has no identity, and no traceback
        return None
    if not name or len(name) > MAX_IDENTITY_LENGTH or not name.isprintable() or reserved(name):
        return None  # a reserved name would pass for the service itself (``service.caller``)
    return name


def _first_name(certificate: x509.Certificate) -> str | None:
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    try:
        sans = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        sans = None
    if sans is not None:
        for kind in (x509.UniformResourceIdentifier, x509.DNSName):
            values = sans.get_values_for_type(kind)
            if values:
                return values[0]
    common_names = certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    if not common_names:
        return None
    value = common_names[0].value
    return value if isinstance(value, str) else value.decode("utf-8")
