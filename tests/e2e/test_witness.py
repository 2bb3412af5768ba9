"""Issue 12, item 4: ``thirteen witness`` against a real ``thirteen serve`` (SQLite), both as
processes of their own, and against a small fake log that serves forged, rolled-back and forked
checkpoints. Cosignatures are checked with the tests' own Ed25519 code, not the service's."""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from domain.checkpoint import Checkpoint, sign_checkpoint
from domain.signed_note import Signer
from service._generated.thirteen.v1 import (
    table_pb2_grpc,
    transparency_pb2,
    transparency_pb2_grpc,
    wallet_pb2_grpc,
)
from tests.e2e.helpers import seated_table, wait_until
from tests.e2e.test_transparency import (
    PLAYERS,
    SCRIPT,
    checkpoint,
    drop_tree,
    play_round,
    signed_head,
)
from tests.support.seed_key import ensure_seed_key
from tests.support.tlog import Head, read_checkpoint

SQLITE = {"THIRTEEN_STORE": "sqlite"}


# Processes -----------------------------------------------------------------------------------


def keys(directory: Path, *extra: str) -> str:
    """A new key pair by ``thirteen keys init``; the public key (vkey)."""
    done = subprocess.run(
        [str(SCRIPT), "keys", "init", str(directory), *extra], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    name = "witness.pub" if "--witness" in extra else "log.pub"
    return (directory / name).read_text(encoding="utf-8").strip()


class Serve:
    """``thirteen serve`` with a log key and a witness's public key, in a process of its own."""

    def __init__(
        self,
        data: Path,
        log_key: Path,
        witness_pub: Path,
        *extra: str,
        credentials: grpc.ChannelCredentials | None = None,
    ) -> None:
        ensure_seed_key(data / "seed.key")
        self.process = subprocess.Popen(
            [str(SCRIPT), "serve", "--address", "127.0.0.1:0", "--data", str(data)]  # noqa: RUF005
            + ["--log-key", str(log_key), "--witness-key", str(witness_pub)]
            + ["--checkpoint-interval", "0.2", *extra],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **SQLITE},
        )
        self.lines: list[str] = []
        port: list[int] = []

        def read() -> None:
            assert self.process.stderr is not None
            for line in self.process.stderr:
                self.lines.append(line)
                if "serving gRPC on" in line and not port:
                    port.append(int(line.split("serving gRPC on ")[1].split()[0].rsplit(":", 1)[1]))

        threading.Thread(target=read, daemon=True).start()
        wait_until(lambda: port or self.process.poll() is not None, "thirteen serve to start", 60)
        assert port, "".join(self.lines[-20:])
        self.address = f"127.0.0.1:{port[0]}"
        self.channel = (
            grpc.insecure_channel(self.address)
            if credentials is None
            else grpc.secure_channel(self.address, credentials)
        )
        self.wallets = wallet_pb2_grpc.WalletServiceStub(self.channel)
        self.tables = table_pb2_grpc.TableServiceStub(self.channel)
        self.transparency = transparency_pb2_grpc.TransparencyServiceStub(self.channel)

    def stop(self) -> None:
        self.channel.close()
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)


@dataclass
class Done:
    status: int
    stdout: str
    stderr: str


def witness(address: str, log_pub: str, key: Path, state: Path, *extra: str) -> Done:
    """``thirteen witness --once``, run to its end."""
    done = subprocess.run(
        [str(SCRIPT), "witness", "--log", address, "--log-public-key", log_pub]  # noqa: RUF005
        + ["--key", str(key), "--state", str(state), "--once", *extra],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return Done(done.returncode, done.stdout, done.stderr)


def background_witness(address: str, log_pub: str, key: Path, state: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(SCRIPT), "witness", "--log", address, "--log-public-key", log_pub]  # noqa: RUF005
        + ["--key", str(key), "--state", str(state), "--interval", "0.2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


# The tests' own cosignature check (C2SP tlog-cosignature) -------------------------------------


def cosigned_at(note: str, witness_vkey: str) -> int | None:
    """The time of a verifying cosignature by ``witness_vkey`` on ``note``, None if none."""
    name, hex_id, material = witness_vkey.split("+", 2)
    raw = base64.b64decode(material)
    assert raw[0] == 4
    head = read_checkpoint(note)
    for signer, payload in head.signatures:
        if signer != name or payload[:4].hex() != hex_id:
            continue
        stamp, signature = payload[4:12], payload[12:]
        time = int.from_bytes(stamp, "big")
        message = f"cosignature/v1\ntime {time}\n{head.text}".encode()
        try:
            Ed25519PublicKey.from_public_bytes(raw[1:]).verify(signature, message)
        except InvalidSignature:
            raise AssertionError(f"the cosignature of {name} does not verify") from None
        return time
    return None


def b64(root: bytes) -> str:
    return base64.b64encode(root).decode()


@dataclass
class Setup:
    tmp: Path
    log_pub: str
    witness_pub: str

    @property
    def data(self) -> Path:
        return self.tmp / "data"

    @property
    def key(self) -> Path:
        return self.tmp / "w" / "witness.key"

    @property
    def state(self) -> Path:
        return self.tmp / "state"

    def serve(self, *extra: str, credentials: grpc.ChannelCredentials | None = None) -> Serve:
        log_key, witness_pub = self.tmp / "log" / "log.key", self.tmp / "w" / "witness.pub"
        return Serve(self.data, log_key, witness_pub, *extra, credentials=credentials)

    def witness(self, server: Any, *extra: str) -> Done:
        return witness(server.address, self.log_pub, self.key, self.state, *extra)

    def accepted(self) -> Head:
        return read_checkpoint((self.state / "checkpoint").read_text(encoding="utf-8"))


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    log_pub = keys(tmp_path / "log", "--name", "thirteen.test/log")
    witness_pub = keys(tmp_path / "w", "--witness", "--name", "witness.test/w1")
    yield Setup(tmp_path, log_pub, witness_pub)


def settled_head(server: Serve, key: str, at_least: int) -> Head:
    """The latest checkpoint once it covers ``at_least`` events and no newer one follows."""
    head = signed_head(server, key, at_least)
    while True:
        threading.Event().wait(0.6)  # three checkpoint intervals
        again = signed_head(server, key, at_least)
        if again.size == head.size:
            return again
        head = again


# Against the real server ---------------------------------------------------------------------


def test_the_witness_cosigns_as_rounds_are_played_and_a_restart_continues(setup):
    server = setup.serve()
    watcher = None
    try:
        watcher = background_witness(server.address, setup.log_pub, setup.key, setup.state)
        seated_table(server, "t1", PLAYERS)
        play_round(server, "t1")
        play_round(server, "t1")
        head = settled_head(server, setup.log_pub, 1)

        def cosigned() -> int | None:
            note = checkpoint(server)
            return cosigned_at(note, setup.witness_pub) if read_checkpoint(note) == head else None

        wait_until(cosigned, "the server's checkpoint to carry the witness's cosignature", 30)
        assert watcher.poll() is None  # still watching
        watcher.send_signal(signal.SIGTERM)
        out, _ = watcher.communicate(timeout=30)
        assert "cosigned size" in out, out
        assert setup.accepted().size == head.size and setup.accepted().root == head.root

        # Restarted, it continues from its state: nothing new, then a longer tree extends it.
        again = setup.witness(server)
        assert again.status == 0, again.stderr
        assert f"last accepted size {head.size} root {b64(head.root)}" in again.stderr
        assert "nothing new" in again.stdout, again.stdout
        play_round(server, "t1")
        longer = settled_head(server, setup.log_pub, head.size + 1)
        grown = setup.witness(server)
        assert grown.status == 0, grown.stderr
        assert f"cosigned size {longer.size} root {b64(longer.root)}" in grown.stdout
        assert setup.accepted().size == longer.size
        assert cosigned_at(checkpoint(server), setup.witness_pub) is not None
    finally:
        if watcher is not None and watcher.poll() is None:
            watcher.kill()
            watcher.wait()
        server.stop()


def test_a_rewritten_store_signed_again_makes_the_witness_refuse_and_alarm(setup):
    """Someone with write access and the log key rewrites a round (every chain link computed
    again) and has the log rebuilt and signed from the rewritten store: every proof the log
    gives now holds in its own tree, but not from the checkpoint the witness accepted."""
    from tests.e2e.test_transparency import rewrite_round

    server = setup.serve()
    try:
        seated_table(server, "t1", PLAYERS)
        round_id = play_round(server, "t1")
        before = settled_head(server, setup.log_pub, 1)
        first = setup.witness(server)
        assert first.status == 0 and "cosigned" in first.stdout, first.stderr
    finally:
        server.stop()
    rewrite_round(SQLITE, setup.data, round_id)
    drop_tree(SQLITE, setup.data)
    server = setup.serve()
    try:
        play_round(server, "t1")
        after = settled_head(server, setup.log_pub, before.size + 1)
        refused = setup.witness(server)
        assert refused.status == 3, (refused.stdout, refused.stderr)
        alarm = [line for line in refused.stderr.splitlines() if "ALARM" in line]
        assert len(alarm) == 1, refused.stderr
        assert "does not extend the last one" in alarm[0], alarm
        assert f"size {before.size} root {b64(before.root)}" in alarm[0], alarm
        assert f"size {after.size} root {b64(after.root)}" in alarm[0], alarm
        assert cosigned_at(checkpoint(server), setup.witness_pub) is None  # not cosigned
        assert setup.accepted().root == before.root  # its state still holds the old history
        assert setup.witness(server).status == 3  # and it alarms again on the next run
    finally:
        server.stop()


def test_over_mutual_tls_the_witness_role_cosigns_and_another_role_is_refused(setup):
    from service.security.tls import channel_credentials

    certs = setup.tmp / "certs"
    made = subprocess.run([str(SCRIPT), "dev-certs", str(certs)], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    admin = channel_credentials(certs / "ca.pem", certs / "admin.pem", certs / "admin.key")
    server = setup.serve(
        *("--tls-cert", str(certs / "server.pem"), "--tls-key", str(certs / "server.key")),
        *("--client-ca", str(certs / "ca.pem"), "--policy", str(certs / "policy.toml")),
        credentials=admin,
    )
    try:
        seated_table(server, "t1", PLAYERS)
        play_round(server, "t1")
        head = settled_head(server, setup.log_pub, 1)

        def as_role(role: str) -> Done:
            return setup.witness(
                server,
                *("--ca", str(certs / "ca.pem"), "--cert", str(certs / f"{role}.pem")),
                *("--cert-key", str(certs / f"{role}.key")),
            )

        refused = as_role("reader")
        assert refused.status == 1 and "PERMISSION_DENIED" in refused.stderr, refused.stderr
        cosigned = as_role("witness")
        assert cosigned.status == 0, cosigned.stderr
        assert f"cosigned size {head.size} root {b64(head.root)}" in cosigned.stdout
        assert cosigned_at(checkpoint(server), setup.witness_pub) is not None
        plain = setup.witness(server)  # no TLS against a TLS server: out of reach
        assert plain.status == 1 and "out of reach" in plain.stderr, plain.stderr
    finally:
        server.stop()


# Against a fake log serving what a dishonest operator might --------------------------------


@dataclass
class FakeLog(transparency_pb2_grpc.TransparencyServiceServicer):
    note: str = ""
    proof: list[bytes] = field(default_factory=list)
    handed_back: list[str] = field(default_factory=list)

    def GetCheckpoint(self, request: Any, context: Any) -> Any:
        return transparency_pb2.GetCheckpointResponse(checkpoint=self.note)

    def GetConsistencyProof(self, request: Any, context: Any) -> Any:
        return transparency_pb2.GetConsistencyProofResponse(
            old_size=request.old_size, new_size=request.new_size, hashes=self.proof
        )

    def AddCosignature(self, request: Any, context: Any) -> Any:
        self.handed_back.append(request.checkpoint_cosignature)
        return transparency_pb2.AddCosignatureResponse(checkpoint=request.checkpoint_cosignature)


@pytest.fixture
def fake_log() -> Iterator[tuple[FakeLog, str]]:
    log = FakeLog()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    transparency_pb2_grpc.add_TransparencyServiceServicer_to_server(log, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield log, f"127.0.0.1:{port}"
    server.stop(None)


def test_forged_rolled_back_forked_and_unproven_checkpoints_are_refused(fake_log, setup):
    log, address = fake_log
    signer = Signer.from_seed("fake.test/log", bytes(range(32)))
    vkey = signer.verifier.vkey

    def serve(size: int, root: bytes) -> str:
        log.note = sign_checkpoint(Checkpoint("fake.test/log", size, root), signer)
        return f"size {size} root {b64(root)}"

    def run() -> Done:
        return witness(address, vkey, setup.key, setup.state)

    # A forged signature: refused before anything is kept.
    five = serve(5, bytes([5]) * 32)
    text, _, line = log.note.rpartition("\n\n")
    dash, name, payload = line.split(" ")
    raw = bytearray(base64.b64decode(payload))
    raw[-1] ^= 1
    log.note = f"{text}\n\n{dash} {name} {b64(bytes(raw))}\n"
    forged = run()
    assert forged.status == 3, forged.stderr
    assert "ALARM" in forged.stderr and "does not verify" in forged.stderr
    assert f"last accepted none; the log now serves {five} (unverified)" in forged.stderr
    assert not log.handed_back and not (setup.state / "checkpoint").exists()

    # The genuine checkpoint: accepted, kept and cosigned.
    serve(5, bytes([5]) * 32)
    accepted = run()
    assert accepted.status == 0 and f"cosigned {five}" in accepted.stdout, accepted.stderr
    assert len(log.handed_back) == 1 and cosigned_at(log.handed_back[0], setup.witness_pub)

    # A smaller tree, another root at the same size, a longer tree without a valid proof.
    cases = {
        "shrank": (3, bytes([3]) * 32),
        "another root at the same tree size": (5, bytes([6]) * 32),
        "does not extend the last one": (7, bytes([7]) * 32),
    }
    log.proof = [bytes(32)] * 3
    for words, (size, root) in cases.items():
        shown = serve(size, root)
        refused = run()
        assert refused.status == 3, (words, refused.stderr)
        alarm = refused.stderr.strip().splitlines()[-1]
        assert "ALARM" in alarm and words in alarm, alarm
        assert f"last accepted {five}; the log now serves {shown}" in alarm, alarm
    assert len(log.handed_back) == 1  # nothing more was cosigned
    assert read_checkpoint((setup.state / "checkpoint").read_text()).size == 5


def test_an_unreachable_log_is_retried_and_bad_arguments_are_one_line(setup, tmp_path):
    dead = "127.0.0.1:9"  # discard: nothing serves gRPC there
    once = witness(dead, setup.log_pub, setup.key, setup.state)
    assert once.status == 1 and "out of reach" in once.stderr, once.stderr
    watcher = background_witness(dead, setup.log_pub, setup.key, setup.state)
    try:
        assert watcher.stderr is not None
        lines = [watcher.stderr.readline() for _ in range(3)]
        assert any("retrying in 0.2 s" in line for line in lines), lines
        assert watcher.poll() is None
    finally:
        watcher.kill()
        watcher.wait()
    missing = witness(dead, setup.log_pub, tmp_path / "nope.key", setup.state)
    assert missing.status == 2 and len(missing.stderr.strip().splitlines()) == 1, missing.stderr
    swapped = witness(dead, setup.witness_pub, setup.key, setup.state)  # not a log key
    assert swapped.status == 2 and "not a log key" in swapped.stderr, swapped.stderr
    other = Signer.from_seed("other.test/log", bytes(32))
    note = sign_checkpoint(Checkpoint("other.test/log", 1, bytes(32)), other)
    (setup.state / "checkpoint").write_text(note, encoding="utf-8")  # another log's state
    foreign = witness(dead, setup.log_pub, setup.key, setup.state)
    assert foreign.status == 2 and "not a checkpoint signed by the log key" in foreign.stderr
