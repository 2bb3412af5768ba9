"""Issue 12, item 4: ``thirteen witness`` against a real ``thirteen serve`` (SQLite), both as
processes of their own, and against a small fake log that serves forged, rolled-back and forked
checkpoints. Cosignatures are checked with the tests' own Ed25519 code, not the service's."""

from __future__ import annotations

import base64
import hashlib
import re
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

from domain.tlog.checkpoint import Checkpoint, sign_checkpoint
from domain.tlog.note import Signer
from service._generated.thirteen.v1 import (
    transparency_pb2,
    transparency_pb2_grpc,
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
from tests.support.serve_process import ServeProcess
from tests.support.tlog import Head, read_checkpoint

SQLITE = {"THIRTEEN_STORE": "sqlite"}


def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


# Processes -----------------------------------------------------------------------------------


def keys(directory: Path, *extra: str) -> str:
    """A new key pair by ``thirteen keys init``; the public key (vkey)."""
    done = subprocess.run(
        [str(SCRIPT), "keys", "init", str(directory), *extra], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    name = "witness.pub" if "--witness" in extra else "log.pub"
    return (directory / name).read_text(encoding="utf-8").strip()


class Serve(ServeProcess):
    """``thirteen serve`` with a log key and a witness's public key, in a process of its own, on
    the store ``environ`` selects."""

    def __init__(
        self,
        data: Path,
        log_key: Path,
        witness_pub: Path,
        *extra: str,
        credentials: grpc.ChannelCredentials | None = None,
        environ: dict[str, str] | None = None,
    ) -> None:
        super().__init__(
            data,
            *("--log-key", str(log_key), "--witness-key", str(witness_pub)),
            *("--checkpoint-interval", "0.2", *extra),
            credentials=credentials,
            environ=environ,
        )


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


def background_witness(
    address: str, log_pub: str, key: Path, state: Path, *extra: str
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(SCRIPT), "witness", "--log", address, "--log-public-key", log_pub]  # noqa: RUF005
        + ["--key", str(key), "--state", str(state), "--interval", "0.2", *extra],
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
    environ: dict[str, str] = field(default_factory=lambda: dict(SQLITE))

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
        return Serve(
            self.data,
            log_key,
            witness_pub,
            *extra,
            credentials=credentials,
            environ=self.environ,
        )

    def witness(self, server: Any, *extra: str) -> Done:
        return witness(server.address, self.log_pub, self.key, self.state, *extra)

    def accepted(self) -> Head:
        return read_checkpoint((self.state / "checkpoint").read_text(encoding="utf-8"))


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    log_pub = keys(tmp_path / "log", "--name", "thirteen.test/log")
    witness_pub = keys(tmp_path / "w", "--witness", "--name", "witness.test/w1")
    yield Setup(tmp_path, log_pub, witness_pub)


@pytest.fixture
def on_store(setup: Setup, store: dict[str, str]) -> Setup:
    """``setup`` with ``thirteen serve`` on SQLite, then on PostgreSQL."""
    setup.environ = store
    return setup


def settled_head(server: Serve, key: str, at_least: int) -> Head:
    """The latest checkpoint once it covers every event the store holds (and ``at_least``):
    with nothing more to log, no newer one follows, however slowly the log catches up."""
    return signed_head(server, key, max(at_least, server.stored_events()))


# Against the real server ---------------------------------------------------------------------


def test_the_witness_cosigns_as_rounds_are_played_and_a_restart_continues(on_store: Setup) -> None:
    setup = on_store
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
            shown = read_checkpoint(note)  # its signature lines grow as witnesses cosign
            same = (shown.size, shown.root) == (head.size, head.root)
            return cosigned_at(note, setup.witness_pub) if same else None

        said: list[str] = []  # the witness's lines as it prints them
        assert watcher.stdout is not None
        reader = threading.Thread(target=lambda: said.extend(watcher.stdout or ()), daemon=True)
        reader.start()
        wait_until(cosigned, "the server's checkpoint to carry the witness's cosignature", 30)
        # The server keeps the cosignature before the witness, answered, says so: wait for it.
        wait_until(lambda: any("cosigned size" in line for line in said), "the witness's line", 30)
        assert watcher.poll() is None  # still watching
        watcher.send_signal(signal.SIGTERM)
        watcher.wait(timeout=30)
        reader.join(timeout=30)
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


def test_a_rewritten_store_signed_again_makes_the_witness_refuse_and_alarm(on_store: Setup) -> None:
    """Someone with write access and the log key rewrites a round (every chain link computed
    again), removes what the key remembers signing (``log.key.signed``: the server would sign
    nothing more otherwise, issue 22) and has the log rebuilt and signed from the rewritten
    store: every proof the log gives now holds in its own tree, but not from the checkpoint the
    witness accepted."""
    from tests.e2e.test_transparency import rewrite_round

    setup = on_store
    server = setup.serve()
    try:
        seated_table(server, "t1", PLAYERS)
        round_id = play_round(server, "t1")
        before = settled_head(server, setup.log_pub, 1)
        first = setup.witness(server)
        assert first.status == 0 and "cosigned" in first.stdout, first.stderr
    finally:
        server.stop()
    rewrite_round(setup.environ, setup.data, round_id)
    drop_tree(setup.environ, setup.data)
    remembered = setup.tmp / "log" / "log.key.signed"
    assert remembered.exists()
    remembered.unlink()
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
        kept = evidence(refused)
        assert read_checkpoint(kept.read_text()).root == after.root  # what the log showed
        assert cosigned_at(checkpoint(server), setup.witness_pub) is None  # not cosigned
        assert setup.accepted().root == before.root  # its state still holds the old history
        assert setup.witness(server).status == 3  # and it alarms again on the next run
    finally:
        server.stop()


def test_over_mutual_tls_the_witness_role_cosigns_and_another_role_is_refused(setup: Setup) -> None:
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


def mth(leaves: list[bytes]) -> bytes:
    """RFC 6962's Merkle tree hash of these leaf hashes (the tests' own, from the RFC)."""
    if len(leaves) == 1:
        return leaves[0]
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return sha256(b"\x01" + mth(leaves[:k]) + mth(leaves[k:]))


def subproof(m: int, leaves: list[bytes], whole: bool) -> list[bytes]:
    """RFC 6962 2.1.2's SUBPROOF(m, D[n], b)."""
    n = len(leaves)
    if m == n:
        return [] if whole else [mth(leaves)]
    k = 1
    while k * 2 < n:
        k *= 2
    if m <= k:
        return [*subproof(m, leaves[:k], whole), mth(leaves[k:])]
    return [*subproof(m - k, leaves[k:], False), mth(leaves[:k])]


@dataclass
class FakeLog(transparency_pb2_grpc.TransparencyServiceServicer):
    """A log that serves whatever the test sets: a note, a proof, or a refusal of the proof."""

    note: str = ""
    proof: list[bytes] | None = field(default_factory=list)  # None: the proof of ``leaves``
    refuse: grpc.StatusCode | None = None
    refuse_sizes: set[int] = field(default_factory=set)  # refuse only proofs touching these
    handed_back: list[str] = field(default_factory=list)
    signer: Signer = field(default_factory=lambda: Signer.from_seed("fake.test/log", bytes(32)))
    leaves: list[bytes] = field(
        default_factory=lambda: [sha256(b"\x00" + bytes([n])) for n in range(20)]
    )

    def show(self, size: int, root: bytes | None = None) -> str:
        """Serve the checkpoint of ``size`` (of the fake's honest tree unless ``root``)."""
        root = root if root is not None else mth(self.leaves[:size])
        self.note = sign_checkpoint(Checkpoint(self.signer.name, size, root), self.signer)
        return f"size {size} root {b64(root)}"

    def GetCheckpoint(self, request: Any, context: Any) -> Any:
        return transparency_pb2.GetCheckpointResponse(checkpoint=self.note)

    def GetConsistencyProof(self, request: Any, context: Any) -> Any:
        touched = {request.old_size, request.new_size}
        if self.refuse is not None and (not self.refuse_sizes or touched & self.refuse_sizes):
            context.abort(self.refuse, "not now")
        proof = self.proof
        if proof is None:
            proof = subproof(request.old_size, self.leaves[: request.new_size], True)
        return transparency_pb2.GetConsistencyProofResponse(
            old_size=request.old_size, new_size=request.new_size, hashes=proof
        )

    def AddCosignature(self, request: Any, context: Any) -> Any:
        self.handed_back.append(request.checkpoint_cosignature)
        return transparency_pb2.AddCosignatureResponse(checkpoint=request.checkpoint_cosignature)


@pytest.fixture
def fake_log() -> Iterator[tuple[FakeLog, str]]:
    # The stubs declare every RPC abstract; the fake serves the two a witness asks for.
    log = FakeLog()  # type: ignore[abstract]
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    transparency_pb2_grpc.add_TransparencyServiceServicer_to_server(log, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield log, f"127.0.0.1:{port}"
    server.stop(None)


def evidence(done: Done) -> Path:
    """The evidence file an ALARM line names."""
    (alarm,) = [line for line in done.stderr.splitlines() if "ALARM" in line]
    found = re.search(r"; evidence (\S+);", alarm)
    assert found, alarm
    return Path(found.group(1))


def test_forged_rolled_back_forked_and_unproven_checkpoints_are_refused(
    fake_log: tuple[FakeLog, str], setup: Setup
) -> None:
    log, address = fake_log
    vkey = log.signer.verifier.vkey

    def serve(size: int, root: bytes) -> str:
        return log.show(size, root)

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
    assert evidence(forged).read_text() == log.note  # kept as shown

    # The genuine checkpoint: accepted, kept and cosigned.
    serve(5, bytes([5]) * 32)
    accepted = run()
    assert accepted.status == 0 and f"cosigned {five}" in accepted.stdout, accepted.stderr
    assert len(log.handed_back) == 1 and cosigned_at(log.handed_back[0], setup.witness_pub)

    # A smaller tree, another root at the same size, a longer tree without a valid proof (a
    # wrong one, none at all, hashes of the wrong length): each an alarm at the first poll.
    cases = {
        "shrank": (3, bytes([3]) * 32, []),
        "another root at the same tree size": (5, bytes([6]) * 32, []),
        "does not extend the last one": (7, bytes([7]) * 32, [bytes(32)] * 3),
        "does not extend the last one ": (8, bytes([8]) * 32, []),
        "does not extend the last one  ": (9, bytes([9]) * 32, [b"short"] * 3),
    }
    for words, (size, root, proof) in cases.items():
        log.proof = proof
        shown = serve(size, root)
        refused = run()
        assert refused.status == 3, (words, refused.stderr)
        alarm = refused.stderr.strip().splitlines()[-1]
        assert "ALARM" in alarm and words.strip() in alarm, alarm
        assert f"last accepted {five}; the log now serves {shown}" in alarm, alarm
        assert evidence(refused).read_text() == log.note
    assert len(log.handed_back) == 1  # nothing more was cosigned
    assert read_checkpoint((setup.state / "checkpoint").read_text()).size == 5


def test_an_unreachable_log_is_retried_and_bad_arguments_are_one_line(
    setup: Setup, tmp_path: Path
) -> None:
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


# A log that shows a newer checkpoint and will not prove it -----------------------------------

REFUSALS = [
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.INTERNAL,
    grpc.StatusCode.DEADLINE_EXCEEDED,
]


@pytest.mark.parametrize("refusal", REFUSALS, ids=[r.name for r in REFUSALS])
def test_a_newer_checkpoint_left_unproven_three_polls_in_a_row_is_an_alarm(
    fake_log: tuple[FakeLog, str], setup: Setup, refusal: grpc.StatusCode
) -> None:
    log, address = fake_log

    def run(*extra: str) -> Done:
        return witness(address, log.signer.verifier.vkey, setup.key, setup.state, *extra)

    five = log.show(5)
    assert run().status == 0  # accepted and cosigned
    eight = log.show(8)
    log.refuse = refusal
    for count in (1, 2):
        unproven = run()
        assert unproven.status == 1, unproven.stderr
        assert f"the log shows {eight} but does not prove it extends {five}" in unproven.stderr
        assert f"({refusal.name}: not now); unproven {count} of 3 polls" in unproven.stderr
        assert "ALARM" not in unproven.stderr
    alarmed = run()
    assert alarmed.status == 3, alarmed.stderr
    (alarm,) = [line for line in alarmed.stderr.splitlines() if "ALARM" in line]
    assert "without proving it extends the accepted one at 3 polls in a row" in alarm, alarm
    assert f"last accepted {five}; the log now serves {eight}" in alarm, alarm
    assert evidence(alarmed).read_text() == log.note  # the signed note it was shown
    assert len(log.handed_back) == 1  # the newer checkpoint was never cosigned
    assert setup.accepted().size == 5
    assert run().status == 3  # and again on every later poll


def test_a_proven_checkpoint_resets_the_count_and_alarm_after_is_an_option(
    fake_log: tuple[FakeLog, str], setup: Setup
) -> None:
    log, address = fake_log

    def run(*extra: str) -> Done:
        return witness(address, log.signer.verifier.vkey, setup.key, setup.state, *extra)

    log.show(5)
    assert run().status == 0
    log.show(8)
    log.refuse = grpc.StatusCode.UNAVAILABLE
    assert [run().status, run().status] == [1, 1]
    log.refuse, log.proof = None, None  # now the log proves it: accepted, the count forgotten
    proven = run()
    assert proven.status == 0 and "cosigned size 8" in proven.stdout, proven.stderr
    assert not (setup.state / "unproven").exists()
    log.show(11)
    log.refuse = grpc.StatusCode.UNAVAILABLE
    again = run()
    assert again.status == 1 and "unproven 1 of 3" in again.stderr, again.stderr
    at_once = run("--alarm-after", "1")
    assert at_once.status == 3 and "at 2 polls in a row" in at_once.stderr, at_once.stderr
    for bad in ("0", "1001", "x"):
        refused = run("--alarm-after", bad)
        assert refused.status == 2 and len(refused.stderr.strip().splitlines()) == 1, bad


def test_a_running_witness_alarms_by_itself_when_the_proof_keeps_being_refused(
    fake_log: tuple[FakeLog, str], setup: Setup
) -> None:
    log, address = fake_log
    log.show(5)
    assert witness(address, log.signer.verifier.vkey, setup.key, setup.state).status == 0
    log.show(8)
    log.refuse = grpc.StatusCode.PERMISSION_DENIED
    watcher = background_witness(address, log.signer.verifier.vkey, setup.key, setup.state)
    _, err = watcher.communicate(timeout=60)
    assert watcher.returncode == 3, err
    assert err.count("asking again in 0.2 s") == 2 and "at 3 polls in a row" in err, err


def test_a_second_witness_on_the_same_state_is_refused(
    fake_log: tuple[FakeLog, str], setup: Setup
) -> None:
    log, address = fake_log
    log.show(5)
    watcher = background_witness(address, log.signer.verifier.vkey, setup.key, setup.state)
    try:
        assert watcher.stderr is not None
        assert "watching" in watcher.stderr.readline()  # it holds the state's lock now
        second = witness(address, log.signer.verifier.vkey, setup.key, setup.state)
        assert second.status == 2, second.stderr
        (line,) = second.stderr.strip().splitlines()
        assert f"another witness is using the state directory {setup.state}" in line
    finally:
        watcher.kill()
        watcher.wait()
    assert witness(address, log.signer.verifier.vkey, setup.key, setup.state).status == 0


# A log that shows a fork now and then, between checkpoints it proves -------------------------


def fork_of(size: int) -> bytes:
    """A root the fake log signs for ``size`` that its honest tree does not have."""
    return sha256(b"fork" + bytes([size]))


def against(log: FakeLog, address: str, setup: Setup) -> Done:
    """``thirteen witness --once`` against the fake log."""
    return witness(address, log.signer.verifier.vkey, setup.key, setup.state)


def fork_shown_unproven(log: FakeLog, address: str, setup: Setup, size: int) -> str:
    """The witness accepts the fake's honest checkpoint of 5, then is shown a fork of ``size``
    whose proof the log refuses as if out of reach (counted once); the fork, described."""
    log.show(5)
    assert against(log, address, setup).status == 0
    forked = log.show(size, fork_of(size))
    log.refuse = grpc.StatusCode.UNAVAILABLE
    assert against(log, address, setup).status == 1
    return forked


def test_a_fork_shown_unproven_then_an_honest_checkpoint_of_its_size_is_an_alarm(
    fake_log: tuple[FakeLog, str], setup: Setup
) -> None:
    """The log signed two roots for one size: showing the fork when it cannot be proven and the
    honest tree when it can must not dodge the alarm."""
    log, address = fake_log
    forked = fork_shown_unproven(log, address, setup, 8)
    log.refuse, log.proof = None, None
    honest = log.show(8)
    caught = against(log, address, setup)
    assert caught.status == 3, (caught.stdout, caught.stderr)
    (alarm,) = [line for line in caught.stderr.splitlines() if "ALARM" in line]
    assert "two roots for one tree size" in alarm and forked in alarm and honest in alarm, alarm
    assert f"last accepted size 5 root {b64(mth(log.leaves[:5]))}" in alarm, alarm
    assert len(log.handed_back) == 1 and setup.accepted().size == 5  # neither was cosigned
    again = against(log, address, setup)  # the next run: the fork is still unexplained
    assert again.status == 3, again.stderr


def test_a_fork_shown_unproven_is_checked_against_the_next_proven_checkpoint(
    fake_log: tuple[FakeLog, str], setup: Setup
) -> None:
    log, address = fake_log
    forked = fork_shown_unproven(log, address, setup, 9)
    log.refuse, log.proof = None, None  # the honest proofs from here on
    twelve = log.show(12)
    caught = against(log, address, setup)
    assert caught.status == 3, (caught.stdout, caught.stderr)
    (alarm,) = [line for line in caught.stderr.splitlines() if "ALARM" in line]
    assert "two checkpoints the log signed are inconsistent" in alarm, alarm
    assert forked in alarm and twelve in alarm, alarm
    assert len(log.handed_back) == 1 and setup.accepted().size == 5


def test_a_fork_the_log_never_proves_counts_even_between_proven_checkpoints(
    fake_log: tuple[FakeLog, str], setup: Setup
) -> None:
    """The log proves every honest checkpoint but refuses, as if out of reach, every proof that
    involves the fork it showed: each such poll counts, and it alarms at the third."""
    log, address = fake_log
    forked = fork_shown_unproven(log, address, setup, 9)
    log.refuse_sizes, log.proof = {9}, None  # from here on only the fork's proofs are refused
    log.show(12)
    held = against(log, address, setup)
    assert held.status == 1, (held.stdout, held.stderr)
    assert f"does not prove {forked}" in held.stderr and "unproven 2 of 3" in held.stderr
    log.show(5)  # the accepted checkpoint again in between does not help: the poll counts
    alarmed = against(log, address, setup)
    assert alarmed.status == 3, (alarmed.stdout, alarmed.stderr)
    (alarm,) = [line for line in alarmed.stderr.splitlines() if "ALARM" in line]
    assert "at 3 polls in a row" in alarm and forked in alarm, alarm
    assert len(log.handed_back) == 1 and setup.accepted().size == 5


def test_a_checkpoint_unproven_during_an_outage_is_settled_once_the_log_proves_it(
    fake_log: tuple[FakeLog, str], setup: Setup
) -> None:
    log, address = fake_log
    log.show(5)
    assert against(log, address, setup).status == 0
    log.show(9)  # honest, but its proof is not available now
    log.refuse = grpc.StatusCode.UNAVAILABLE
    assert against(log, address, setup).status == 1
    log.refuse, log.proof = None, None
    twelve = log.show(12)
    settled = against(log, address, setup)
    assert settled.status == 0 and f"cosigned {twelve}" in settled.stdout, settled.stderr
    assert not (setup.state / "unproven").exists()
    assert against(log, address, setup).status == 0  # nothing left to settle
