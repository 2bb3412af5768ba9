"""``thirteen dev-certs DIR``: a development CA, a server certificate for this machine, one client
certificate per role and the policy that grants each its role (issue 11 §2), for trying mutual
TLS on one machine. Not for production: the CA key sits beside the certificates it signs."""

from __future__ import annotations

import datetime
import json
import os
import sys
from collections.abc import Sequence
from ipaddress import ip_address
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from service.security.policy import ROLES, Policy
from service.tools.terminal import EXIT_BAD_INPUT

VALIDITY = datetime.timedelta(days=365)
CLOCK_SKEW = datetime.timedelta(minutes=5)  # valid a little before now, for a clock behind
TRUST_DOMAIN = "spiffe://thirteen.dev"
SERVER_NAMES = ("localhost", "127.0.0.1", "::1")
CONSOLE = "console"
IDENTITIES = {**{role: (role,) for role in ROLES}, CONSOLE: ("reader", "auditor")}
"""Each development client certificate's name and the roles the policy grants it: one per
role, and the dispute console's, which reads rounds (reader) and their exports (auditor)."""


def identity(name: str) -> str:
    """The URI SAN of a client certificate (a role's, or the console's), which the policy
    names."""
    return f"{TRUST_DOMAIN}/{name}"


def file_names() -> list[str]:
    """Every file ``write`` creates, in the order it lists them."""
    names = ["ca.pem", "ca.key", "server.pem", "server.key"]
    for name in IDENTITIES:
        names += [f"{name}.pem", f"{name}.key"]
    return [*names, "policy.toml"]


def write(directory: Path, *, force: bool = False, now: datetime.datetime | None = None) -> int:
    """Write the files into ``directory``; refuse (exit status 2) to overwrite any without
    ``force``."""
    existing = [name for name in file_names() if (directory / name).exists()]
    if existing and not force:
        print(
            f"thirteen dev-certs: {directory} already holds {', '.join(existing)}; "
            "give --force to replace them, or another directory",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    try:
        directory.mkdir(parents=True, exist_ok=True)
        written = _write_all(directory, now or datetime.datetime.now(datetime.UTC))
    except OSError as error:
        print(f"thirteen dev-certs: cannot write {directory}: {error.strerror}", file=sys.stderr)
        return EXIT_BAD_INPUT
    Policy.load(directory / "policy.toml")  # what serve --policy will read must load
    _report(directory, written)
    return 0


def _write_all(directory: Path, now: datetime.datetime) -> list[str]:
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "thirteen development CA")])
    ca = (
        _builder(ca_name, ca_name, ca_key.public_key(), now)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(signs_certificates=True), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    _save(directory, "ca", ca, ca_key)
    server_names: list[x509.GeneralName] = [
        x509.DNSName(SERVER_NAMES[0]),
        *(x509.IPAddress(ip_address(name)) for name in SERVER_NAMES[1:]),
    ]
    _save(
        directory,
        "server",
        *_leaf(ca, ca_key, "localhost", server_names, ExtendedKeyUsageOID.SERVER_AUTH, now),
    )
    for name in IDENTITIES:
        names: list[x509.GeneralName] = [x509.UniformResourceIdentifier(identity(name))]
        _save(
            directory, name, *_leaf(ca, ca_key, name, names, ExtendedKeyUsageOID.CLIENT_AUTH, now)
        )
    policy = "".join(
        f'"{identity(name)}" = {json.dumps(list(roles))}\n' for name, roles in IDENTITIES.items()
    )
    (directory / "policy.toml").write_text(
        "# Written by thirteen dev-certs: each development client certificate's identity (its\n"
        "# URI SAN) and the roles it holds.\n[identities]\n" + policy,
        encoding="utf-8",
    )
    return file_names()


def _builder(
    subject: x509.Name,
    issuer: x509.Name,
    public_key: ec.EllipticCurvePublicKey,
    now: datetime.datetime,
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW)
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
    )


def _leaf(
    ca: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    common_name: str,
    names: Sequence[x509.GeneralName],
    usage: x509.ObjectIdentifier,
    now: datetime.datetime,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    certificate = (
        _builder(subject, ca.subject, key.public_key(), now)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(signs_certificates=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return certificate, key


def _key_usage(*, signs_certificates: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=not signs_certificates,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=signs_certificates,
        crl_sign=signs_certificates,
        encipher_only=False,
        decipher_only=False,
    )


def _save(
    directory: Path, name: str, certificate: x509.Certificate, key: ec.EllipticCurvePrivateKey
) -> None:
    (directory / f"{name}.pem").write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    path = directory / f"{name}.key"
    # Created 0600 rather than chmod-ed after the write, so the key is never readable by others;
    # fchmod too, since O_CREAT's mode does not apply to a file that --force replaces.
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        os.fchmod(file.fileno(), 0o600)
        file.write(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )


def _report(directory: Path, written: list[str]) -> None:
    d = directory
    print(f"wrote to {d}: {', '.join(written)}")
    print(
        f"  a development CA (ca.pem; ca.key signs them all: keep it to this machine), a server "
        f"certificate for {', '.join(SERVER_NAMES)}, one client certificate per role "
        f"({', '.join(ROLES)}) named {TRUST_DOMAIN}/<role>, one for the dispute console "
        f"({CONSOLE}.pem: reader and auditor), and policy.toml granting each its roles; keys "
        "are ECDSA P-256, mode 0600, valid for a year"
    )
    print("serve with mutual TLS and the policy:")
    print(
        f"  thirteen serve --tls-cert {d}/server.pem --tls-key {d}/server.key "
        f"--client-ca {d}/ca.pem --policy {d}/policy.toml"
    )
    print("and call it as admin:")
    print(
        f"  thirteen demo --address 127.0.0.1:50051 --ca {d}/ca.pem "
        f"--cert {d}/admin.pem --key {d}/admin.key"
    )
    print("and read it in the dispute console:")
    print(
        f"  thirteen console --address 127.0.0.1:50051 --ca {d}/ca.pem "
        f"--cert {d}/{CONSOLE}.pem --key {d}/{CONSOLE}.key"
    )
