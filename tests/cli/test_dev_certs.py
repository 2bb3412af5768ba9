"""``thirteen dev-certs DIR`` (issue 11 §2), the real console script: a development CA, a
server certificate for this machine, one client certificate per role and a policy that
``thirteen serve --policy`` loads."""

from __future__ import annotations

import datetime as dt
import ipaddress
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from service.security.policy import ROLES, Policy
from tests.support.cli import thirteen

KEYS = ["ca", "server", *ROLES, "console"]


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("dev-certs") / "certs"
    done = thirteen("dev-certs", str(directory))
    assert done.returncode == 0, done.stderr
    return directory


def load(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_it_writes_a_ca_a_server_and_a_certificate_per_role_and_a_policy(certs: Path) -> None:
    expected = {f"{name}.{ext}" for name in KEYS for ext in ("pem", "key")} | {"policy.toml"}
    assert {p.name for p in certs.iterdir()} == expected


def test_private_keys_are_readable_by_their_owner_only(certs: Path) -> None:
    for name in KEYS:
        assert stat.S_IMODE((certs / f"{name}.key").stat().st_mode) == 0o600, name


def test_keys_are_ecdsa_p256_and_belong_to_their_certificates(certs: Path) -> None:
    for name in KEYS:
        key = serialization.load_pem_private_key((certs / f"{name}.key").read_bytes(), None)
        assert isinstance(key, ec.EllipticCurvePrivateKey)
        assert key.curve.name == "secp256r1"
        assert key.public_key() == load(certs / f"{name}.pem").public_key(), name


def test_every_certificate_chains_to_the_ca_and_only_the_ca_may_sign(certs: Path) -> None:
    ca = load(certs / "ca.pem")
    ca.verify_directly_issued_by(ca)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    for name in ["server", *ROLES]:
        cert = load(certs / f"{name}.pem")
        cert.verify_directly_issued_by(ca)  # raises when another key signed it
        assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca


def test_they_are_valid_now_and_for_about_a_year(certs: Path) -> None:
    now = dt.datetime.now(dt.UTC)
    for name in KEYS:
        cert = load(certs / f"{name}.pem")
        assert cert.not_valid_before_utc <= now < cert.not_valid_after_utc
        assert dt.timedelta(days=360) < cert.not_valid_after_utc - now <= dt.timedelta(days=366)


def test_the_server_certificate_names_this_machine(certs: Path) -> None:
    cert = load(certs / "server.pem")
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["localhost"]
    assert set(sans.get_values_for_type(x509.IPAddress)) == {
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("::1"),
    }
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.SERVER_AUTH]


def test_each_client_certificate_names_its_role(certs: Path) -> None:
    for role in ROLES:
        cert = load(certs / f"{role}.pem")
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert sans.get_values_for_type(x509.UniformResourceIdentifier) == [
            f"spiffe://thirteen.dev/{role}"
        ]
        assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == role
        usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        assert list(usage) == [ExtendedKeyUsageOID.CLIENT_AUTH]


def test_the_policy_loads_and_grants_each_identity_its_role(certs: Path) -> None:
    policy = Policy.load(certs / "policy.toml")
    for role in ROLES:
        assert policy.roles_of(f"spiffe://thirteen.dev/{role}") == {role}
    assert policy.roles_of("spiffe://thirteen.dev/someone-else") == frozenset()


def test_it_prints_what_it_wrote_and_how_to_serve(tmp_path: Path) -> None:
    done = thirteen("dev-certs", str(tmp_path / "c"))
    assert done.returncode == 0
    assert "ca.pem" in done.stdout and "policy.toml" in done.stdout
    assert (
        f"thirteen serve --tls-cert {tmp_path}/c/server.pem --tls-key {tmp_path}/c/server.key "
        f"--client-ca {tmp_path}/c/ca.pem --policy {tmp_path}/c/policy.toml"
    ) in done.stdout


def test_it_refuses_to_overwrite_and_changes_nothing(certs: Path) -> None:
    before = {p.name: p.read_bytes() for p in certs.iterdir()}
    done = thirteen("dev-certs", str(certs))
    assert done.returncode == 2
    assert "already holds" in done.stderr and "--force" in done.stderr
    assert "Traceback" not in done.stderr
    assert {p.name: p.read_bytes() for p in certs.iterdir()} == before


def test_one_file_already_there_is_enough_to_refuse(tmp_path: Path) -> None:
    (tmp_path / "admin.key").write_text("mine\n")
    done = thirteen("dev-certs", str(tmp_path))
    assert done.returncode == 2
    assert "admin.key" in done.stderr
    assert (tmp_path / "admin.key").read_text() == "mine\n"
    assert not (tmp_path / "ca.pem").exists()


def test_force_replaces_them_with_a_new_ca_and_keys_stay_private(tmp_path: Path) -> None:
    assert thirteen("dev-certs", str(tmp_path)).returncode == 0
    old_ca = (tmp_path / "ca.pem").read_bytes()
    (tmp_path / "admin.key").chmod(0o644)
    done = thirteen("dev-certs", str(tmp_path), "--force")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "ca.pem").read_bytes() != old_ca
    assert stat.S_IMODE((tmp_path / "admin.key").stat().st_mode) == 0o600
    load(tmp_path / "admin.pem").verify_directly_issued_by(load(tmp_path / "ca.pem"))


def test_a_directory_it_cannot_create_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    done = thirteen("dev-certs", str(tmp_path / "file" / "certs"))
    assert done.returncode == 2
    assert done.stderr.startswith("thirteen dev-certs: cannot write")
    assert "Traceback" not in done.stderr
