"""Issue 11 §1–3 end to end: a real ``thirteen serve`` process with the files ``thirteen
dev-certs`` wrote, serving mutual TLS with a policy. A client with a role's certificate gets
in; no certificate, one from another CA, an expired one and a plaintext client do not (the
handshake fails: UNAVAILABLE at the client). Serving plaintext off loopback is refused unless
``--insecure``; flags that cannot work together are one line and exit status 2. Neither the
logs nor the store ever hold private key material."""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from service._generated.thirteen.v1 import (
    diagnostics_pb2,
    diagnostics_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
    wallet_pb2,
    wallet_pb2_grpc,
)
from service.security.tls import channel_credentials
from tests.support.cli import thirteen

SCRIPT = Path(sys.executable).parent / "thirteen"
SPIFFE = "spiffe://thirteen.dev/"
TIMEOUT = 10.0


class Served:
    """``thirteen serve ARGS`` in a process of its own; its stderr is kept in ``log``."""

    def __init__(self, data: Path, *args: str) -> None:
        self.data = data
        self.process = subprocess.Popen(
            [str(SCRIPT), "serve", "--data", str(data), *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "THIRTEEN_STORE": "sqlite"},
        )
        self.lines: list[str] = []
        self.port = 0
        self.banner = ""
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.monotonic() + 30
        while not self.port:
            assert time.monotonic() < deadline, self.log
            assert self.process.poll() is None, self.log
            time.sleep(0.05)

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line)
            if "serving gRPC on" in line:
                self.banner = line
                self.port = int(line.split("serving gRPC on ")[1].split()[0].rsplit(":", 1)[1])

    @property
    def log(self) -> str:
        return "".join(self.lines)

    def events(self) -> list[dict[str, object]]:
        return [json.loads(line) for line in self.lines if line.startswith("{")]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=30)


@dataclass(frozen=True)
class Certs:
    dir: Path
    key_files: list[Path]  # every private key a test wrote or had written

    def cert(self, name: str) -> Path:
        return self.dir / f"{name}.pem"

    def key(self, name: str) -> Path:
        return self.dir / f"{name}.key"


def connect(server: Served, certs: Certs, name: str | None, ca: str = "ca") -> grpc.Channel:
    """A channel to ``server`` trusting ``ca`` and showing ``name``'s certificate (None: none).
    The files go to gRPC as they are, unchecked, so the server is what refuses them."""
    credentials = grpc.ssl_channel_credentials(
        root_certificates=certs.cert(ca).read_bytes(),
        private_key=certs.key(name).read_bytes() if name else None,
        certificate_chain=certs.cert(name).read_bytes() if name else None,
    )
    return grpc.secure_channel(f"127.0.0.1:{server.port}", credentials)


def _issue(
    directory: Path,
    name: str,
    issuer: tuple[x509.Certificate, ec.EllipticCurvePrivateKey] | None,
    *,
    uri: str | None = None,
    cn: str = "",
    days: tuple[int, int] = (-1, 30),
    ca: bool = False,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A certificate (self-signed when ``issuer`` is None) and its key, written as NAME.pem and
    NAME.key."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn or name)])
    signer_cert, signer_key = issuer if issuer else (None, key)
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(signer_cert.subject if signer_cert else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now + dt.timedelta(days=days[0]))
        .not_valid_after(now + dt.timedelta(days=days[1]))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if uri:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.UniformResourceIdentifier(uri)]), critical=False
        )
    cert = builder.sign(signer_key, hashes.SHA256())
    (directory / f"{name}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (directory / f"{name}.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert, key


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    """``thirteen dev-certs``' files, and beside them: an admin certificate from another CA,
    an expired admin certificate from the right CA, a valid one whose URI SAN the policy does
    not know (its CN names the admin: the URI SAN must win), and an expired server pair."""
    directory = tmp_path_factory.mktemp("tls") / "certs"
    done = subprocess.run(
        [str(SCRIPT), "dev-certs", str(directory)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    dev_ca = (
        x509.load_pem_x509_certificate((directory / "ca.pem").read_bytes()),
        serialization.load_pem_private_key((directory / "ca.key").read_bytes(), None),
    )
    assert isinstance(dev_ca[1], ec.EllipticCurvePrivateKey)
    signer = (dev_ca[0], dev_ca[1])
    rogue = _issue(directory, "rogue-ca", None, ca=True)
    _issue(directory, "rogue-admin", rogue, uri=SPIFFE + "admin")
    _issue(directory, "expired-admin", signer, uri=SPIFFE + "admin", days=(-30, -1))
    _issue(directory, "stranger", signer, uri=SPIFFE + "stranger", cn=SPIFFE + "admin")
    _issue(directory, "expired-server", signer, cn="localhost", days=(-30, -1))
    return Certs(directory, sorted(directory.glob("*.key")))


@pytest.fixture(scope="module")
def mtls(certs: Certs, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One mutual-TLS server with the dev-certs policy, logging at debug level."""
    data = tmp_path_factory.mktemp("mtls-data")
    served = Served(
        data,
        "--address=127.0.0.1:0",
        f"--tls-cert={certs.cert('server')}",
        f"--tls-key={certs.key('server')}",
        f"--client-ca={certs.cert('ca')}",
        f"--policy={certs.dir / 'policy.toml'}",
        "--log-level=debug",
    )
    yield served
    served.stop()
    assert not leaks(served.log, certs.key_files)
    assert not leaks_in_files(data, certs.key_files)


def credit(channel: grpc.Channel, player: str, amount: int, transfer: str) -> int:
    stub = wallet_pb2_grpc.WalletServiceStub(channel)
    request = wallet_pb2.CreditRequest(player_id=player, amount=amount, transfer_id=transfer)
    return stub.Credit(request, timeout=TIMEOUT).balance


def balance(channel: grpc.Channel, player: str) -> int:
    stub = wallet_pb2_grpc.WalletServiceStub(channel)
    request = wallet_pb2.GetBalanceRequest(player_id=player)
    return stub.GetBalance(request, timeout=TIMEOUT).balance


def refused(channel: grpc.Channel) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        balance(channel, "anyone")
    error = caught.value
    assert isinstance(error, grpc.RpcError)
    return error


# Who gets in ----------------------------------------------------------------------------------


def test_the_admin_certificate_credits_and_reads_a_balance(mtls: Served, certs: Certs) -> None:
    with connect(mtls, certs, "admin") as channel:
        assert credit(channel, "alice", 500, "tls-admin-1") == 500
        assert balance(channel, "alice") == 500
    assert "over mutual TLS" in mtls.banner


def test_the_policy_sees_the_certificates_uri_san(mtls: Served, certs: Certs) -> None:
    with connect(mtls, certs, "cashier") as channel:
        assert credit(channel, "bob", 70, "tls-cashier-1") == 70
    with connect(mtls, certs, "reader") as channel:
        assert balance(channel, "bob") == 70
        with pytest.raises(grpc.RpcError) as caught:
            credit(channel, "bob", 1, "tls-reader-1")
    assert caught.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert f"{SPIFFE}reader" in (caught.value.details() or "")
    with connect(mtls, certs, "admin") as channel:
        assert balance(channel, "bob") == 70  # the refused credit stored nothing


def test_the_uri_san_wins_over_a_common_name_naming_the_admin(mtls: Served, certs: Certs) -> None:
    with connect(mtls, certs, "stranger") as channel:
        error = refused(channel)
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    assert f"{SPIFFE}stranger" in (error.details() or "")


def test_the_caller_is_recorded_from_its_certificate(mtls: Served, certs: Certs) -> None:
    with connect(mtls, certs, "cashier") as channel:
        for player in ("p1", "p2"):
            credit(channel, player, 1000, f"tls-seat-{player}")
    with connect(mtls, certs, "dealer") as channel:
        tables = table_pb2_grpc.TableServiceStub(channel)
        tables.OpenTable(table_pb2.OpenTableRequest(table_id="tls-t"), timeout=TIMEOUT)
        for player in ("p1", "p2"):
            tables.SitDown(
                table_pb2.SitDownRequest(table_id="tls-t", player_id=player), timeout=TIMEOUT
            )
        round_id = tables.Deal(table_pb2.DealRequest(table_id="tls-t"), timeout=TIMEOUT).round_id
    data = mtls.data
    done = subprocess.run(
        [str(SCRIPT), "replay", "--round", round_id, "--data", str(data), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "THIRTEEN_STORE": "sqlite"},
    )
    assert done.returncode == 0, done.stderr
    callers = {step["event"]["caller"] for step in json.loads(done.stdout)}
    assert callers == {f"{SPIFFE}dealer"}


# Who does not ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "client",
    [
        pytest.param(None, id="no client certificate"),
        pytest.param("rogue-admin", id="a certificate from another CA"),
        pytest.param("expired-admin", id="an expired certificate"),
    ],
)
def test_a_client_the_client_ca_does_not_vouch_for_cannot_call(
    mtls: Served, certs: Certs, client: str | None
) -> None:
    with connect(mtls, certs, client) as channel:
        assert refused(channel).code() == grpc.StatusCode.UNAVAILABLE
    with connect(mtls, certs, "admin") as channel:  # the server is still there for others
        assert balance(channel, "alice") == 500


def test_a_plaintext_client_cannot_call_a_tls_server(mtls: Served, certs: Certs) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{mtls.port}") as channel:
        assert refused(channel).code() == grpc.StatusCode.UNAVAILABLE


def test_a_client_that_does_not_trust_the_server_certificate_cannot_call(
    mtls: Served, certs: Certs
) -> None:
    with connect(mtls, certs, "admin", ca="rogue-ca") as channel:
        assert refused(channel).code() == grpc.StatusCode.UNAVAILABLE


def test_the_demo_plays_over_mutual_tls_with_the_admin_certificate(
    mtls: Served, certs: Certs
) -> None:
    done = subprocess.run(
        [
            str(SCRIPT),
            "demo",
            f"--address=127.0.0.1:{mtls.port}",
            f"--ca={certs.cert('ca')}",
            f"--cert={certs.cert('admin')}",
            f"--key={certs.key('admin')}",
            "--rounds=1",
            "--seed=tls",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "every deal verified fair" in done.stdout


def test_the_demo_without_a_client_certificate_says_what_failed(mtls: Served, certs: Certs) -> None:
    done = subprocess.run(
        [str(SCRIPT), "demo", f"--address=127.0.0.1:{mtls.port}", f"--ca={certs.cert('ca')}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "over TLS the handshake fails" in done.stderr


# Private keys stay out of logs and the store --------------------------------------------------


def _key_fragments(path: Path) -> list[str]:
    """The key's base64 lines, its whole base64 body, and its DER in hex."""
    lines = [
        line.strip()
        for line in path.read_text().splitlines()
        if line.strip() and not line.startswith("-----")
    ]
    body = "".join(lines)
    return [*lines, body, base64.b64decode(body).hex()]


def leaks(text: str, key_files: list[Path]) -> list[str]:
    """The key files any of whose material appears in ``text``."""
    return [str(path) for path in key_files if any(f in text for f in _key_fragments(path))]


def leaks_in_files(directory: Path, key_files: list[Path]) -> list[str]:
    found = []
    for path in directory.rglob("*"):
        if path.is_file():
            text = path.read_bytes().decode("latin-1")
            found += [f"{path}: {leak}" for leak in leaks(text, key_files)]
    return found


def test_the_scan_finds_key_material_where_there_is_some(certs: Certs) -> None:
    key = certs.key("admin")
    assert leaks(f'{{"event": "x", "pem": {json.dumps(key.read_text())}}}', [key]) == [str(key)]
    assert leaks("no keys here", certs.key_files) == []


def test_the_server_log_and_store_hold_no_private_key_material(mtls: Served, certs: Certs) -> None:
    for client in (None, "rogue-admin", "expired-admin", "admin", "stranger"):
        with connect(mtls, certs, client) as channel, pytest.raises(grpc.RpcError):
            credit(channel, "mallory", 1, "")  # refused at the handshake or as invalid
    with connect(mtls, certs, "admin") as channel:
        echo = diagnostics_pb2_grpc.DiagnosticsServiceStub(channel)
        echo.Echo(diagnostics_pb2.EchoRequest(message="hi"), timeout=TIMEOUT)
    assert any(event.get("event") == "rpc_ok" for event in mtls.events())  # debug is on
    assert leaks(mtls.log, certs.key_files) == []
    data = mtls.data
    assert leaks_in_files(data, certs.key_files) == []


# Serving plaintext, and flags that cannot work ------------------------------------------------


def serve_refused(tmp_path: Path, *args: str) -> str:
    done = thirteen("serve", "--data", str(tmp_path / "data"), *args)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "data").exists()  # refused before opening the store
    return done.stderr


def test_plaintext_off_loopback_is_refused(tmp_path: Path) -> None:
    message = serve_refused(tmp_path, "--address", "0.0.0.0:0")
    assert "refusing to serve 0.0.0.0:0 without TLS" in message
    assert "--tls-cert and --tls-key" in message and "--insecure" in message


def test_insecure_serves_plaintext_off_loopback_and_warns(tmp_path: Path) -> None:
    served = Served(tmp_path / "data", "--address", "0.0.0.0:0", "--insecure")
    try:
        with grpc.insecure_channel(f"127.0.0.1:{served.port}") as channel:
            assert credit(channel, "carol", 5, "insecure-1") == 5
        warnings = {e["event"] for e in served.events() if e.get("level") == "warning"}
        assert {"insecure_plaintext", "every_caller_is_admin"} <= warnings
        assert "over plaintext" in served.banner
    finally:
        served.stop()


def test_tls_without_client_ca_serves_any_client_and_says_everyone_is_admin(
    tmp_path: Path, certs: Certs
) -> None:
    served = Served(
        tmp_path / "data",
        "--address=127.0.0.1:0",
        f"--tls-cert={certs.cert('server')}",
        f"--tls-key={certs.key('server')}",
    )
    try:
        credentials = channel_credentials(certs.cert("ca"))
        with grpc.secure_channel(f"127.0.0.1:{served.port}", credentials) as channel:
            assert credit(channel, "dave", 9, "tls-only-1") == 9
        assert "over TLS" in served.banner and "mutual" not in served.banner
        assert any(e["event"] == "every_caller_is_admin" for e in served.events())
    finally:
        served.stop()
    assert leaks(served.log, certs.key_files) == []


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--policy=P"], "--policy needs --client-ca"),
        (["--tls-cert=S.pem", "--tls-key=S.key", "--policy=P"], "--policy needs --client-ca"),
        (["--tls-cert=S.pem"], "--tls-cert and --tls-key go together"),
        (["--tls-key=S.key"], "--tls-cert and --tls-key go together"),
        (["--client-ca=CA"], "--client-ca needs --tls-cert and --tls-key"),
        (["--insecure", "--tls-cert=S.pem", "--tls-key=S.key"], "--insecure serves plaintext"),
        (["--tls-cert=S.pem", "--tls-key=A.key"], "admin.key does not match the certificate"),
        (["--tls-cert=X.pem", "--tls-key=X.key"], "expired-server.pem has expired"),
        (["--tls-cert=P", "--tls-key=S.key"], "policy.toml is not a PEM certificate"),
        (["--tls-cert=S.pem", "--tls-key=S.pem"], "server.pem is not a PEM private key"),
        (["--tls-cert=none.pem", "--tls-key=S.key"], "none.pem does not exist"),
        (
            ["--tls-cert=S.pem", "--tls-key=S.key", "--client-ca=CA", "--policy=S.pem"],
            "server.pem is not valid TOML",
        ),
    ],
)
def test_flags_that_cannot_work_are_one_line_and_exit_2(
    tmp_path: Path, certs: Certs, flags: list[str], message: str
) -> None:
    names = {
        "S.pem": certs.cert("server"),
        "S.key": certs.key("server"),
        "A.key": certs.key("admin"),
        "X.pem": certs.cert("expired-server"),
        "X.key": certs.key("expired-server"),
        "CA": certs.cert("ca"),
        "P": certs.dir / "policy.toml",
        "none.pem": tmp_path / "none.pem",
    }
    args = []
    for flag in flags:
        name, _, value = flag.partition("=")
        args.append(f"{name}={names[value]}" if value else name)
    assert message in serve_refused(tmp_path, "--address=127.0.0.1:0", *args)
