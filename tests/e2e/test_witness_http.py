"""Issue 24: C2SP ``tlog-witness`` both ways, between real processes on ephemeral ports.
``thirteen serve --witness-url`` submits each checkpoint to ``thirteen witness --listen``, and
``GetCheckpoint`` carries the witness's cosignature (checked with the tests' own Ed25519 code,
``tests.e2e.test_witness.cosigned_at``). The lies of a fake log are refused by the HTTP witness
with the specification's status as by the polling (gRPC) witness with an alarm; hostile
requests get their precise status and change nothing; a restart keeps the witness's state.
Requests are made with ``http.client`` and bodies written here, not with the service's code."""

from __future__ import annotations

import base64
import hashlib
import http.client
import os
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from domain.tlog.checkpoint import Checkpoint, sign_checkpoint
from domain.tlog.note import Signer
from tests.e2e.helpers import seated_table, wait_until
from tests.e2e.test_transparency import PLAYERS, SCRIPT, checkpoint, play_round
from tests.e2e.test_witness import FakeLog as GrpcFakeLog
from tests.e2e.test_witness import (
    Serve,
    Setup,
    b64,
    cosigned_at,
    fake_log,  # noqa: F401 (a fixture)
    keys,
    mth,
    settled_head,
    subproof,
    witness,
)
from tests.support.tlog import read_checkpoint


class HttpWitness:
    """``thirteen witness --listen`` in a process of its own (port 0 unless ``port``)."""

    def __init__(self, log_pubs: list[str], key: Path, state: Path, port: int = 0) -> None:
        command = [str(SCRIPT), "witness", "--listen", f"127.0.0.1:{port}"]
        for pub in log_pubs:
            command += ["--log-public-key", pub]
        command += ["--key", str(key), "--state", str(state)]
        self.process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        self.lines: list[str] = []
        found: list[int] = []

        def read() -> None:
            assert self.process.stderr is not None
            for line in self.process.stderr:
                self.lines.append(line)
                if "serving tlog-witness on http://" in line and not found:
                    found.append(int(line.split("http://127.0.0.1:")[1].split()[0]))

        threading.Thread(target=read, daemon=True).start()
        wait_until(lambda: found or self.process.poll() is not None, "the witness to listen", 60)
        assert found, "".join(self.lines)
        self.port = found[0]
        self.url = f"http://127.0.0.1:{self.port}"

    def post(self, body: bytes, **headers: str) -> tuple[int, str, bytes]:
        """POST /add-checkpoint: the status, content type and body."""
        return request(self.port, "POST", "/add-checkpoint", body, headers)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=30)


def request(
    port: int,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, str, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        answer = connection.getresponse()
        return answer.status, answer.getheader("Content-Type", ""), answer.read()
    finally:
        connection.close()


def add_checkpoint(old: int, proof: list[bytes], note: str) -> bytes:
    """A request body as the specification writes it (the tests' own)."""
    lines = [f"old {old}"] + [base64.b64encode(h).decode() for h in proof]
    return ("\n".join(lines) + "\n\n" + note).encode()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def running() -> Iterator[list[HttpWitness]]:
    """The HTTP witnesses a test starts, stopped at its end."""
    started: list[HttpWitness] = []
    yield started
    for each in started:
        each.stop()


@pytest.fixture
def setup(tmp_path: Path) -> Setup:
    log_pub = keys(tmp_path / "log", "--name", "thirteen.test/log")
    witness_pub = keys(tmp_path / "w", "--witness", "--name", "witness.test/w1")
    return Setup(tmp_path, log_pub, witness_pub)


def state_file(state: Path, origin: str) -> Path:
    return state / "logs" / hashlib.sha256(origin.encode()).hexdigest() / "checkpoint"


# Our log, cosigned over HTTP -----------------------------------------------------------------


def test_our_log_is_cosigned_through_tlog_witness_and_a_restarted_witness_continues(
    setup: Setup, store: dict[str, str], running: list[HttpWitness]
) -> None:
    setup.environ = store
    http_witness = HttpWitness([setup.log_pub], setup.key, setup.state)
    running.append(http_witness)
    server = setup.serve("--witness-url", http_witness.url)
    try:
        seated_table(server, "t1", PLAYERS)
        play_round(server, "t1")
        head = settled_head(server, setup.log_pub, 1)

        def cosigned(size: int) -> int | None:
            note = checkpoint(server)
            shown = read_checkpoint(note)
            return cosigned_at(note, setup.witness_pub) if shown.size == size else None

        wait_until(lambda: cosigned(head.size), "GetCheckpoint to carry the cosignature", 30)
        kept = read_checkpoint(state_file(setup.state, "thirteen.test/log").read_text())
        assert (kept.size, kept.root) == (head.size, head.root)
        # The monitoring path serves it with the log's signature and the cosignature.
        origin = hashlib.sha256(b"thirteen.test/log").hexdigest()
        status, _, body = request(http_witness.port, "GET", f"/{origin}/checkpoint")
        assert status == 200 and cosigned_at(body.decode(), setup.witness_pub) is not None

        # Restarted on the same port, the witness knows the size it cosigned.
        http_witness.stop()
        again = HttpWitness([setup.log_pub], setup.key, setup.state, http_witness.port)
        running.append(again)
        assert f"last cosigned size {head.size} root {b64(head.root)}" in again.lines[0]
        status, kind, body = again.post(add_checkpoint(0, [], read_checkpoint_note(server)))
        assert (status, kind, body) == (409, "text/x.tlog.size", f"{head.size}\n".encode())
        play_round(server, "t1")
        longer = settled_head(server, setup.log_pub, head.size + 1)
        wait_until(lambda: cosigned(longer.size), "the longer tree to be cosigned", 60)
        kept = read_checkpoint(state_file(setup.state, "thirteen.test/log").read_text())
        assert kept.size == longer.size

        # A restarted log starts from old size 0: the witness's 409 tells it the size it knows,
        # and it submits again with the proof from there.
        server.stop()
        server = setup.serve("--witness-url", again.url)
        play_round(server, "t1")
        last = settled_head(server, setup.log_pub, longer.size + 1)
        wait_until(lambda: cosigned(last.size), "the log's next checkpoint to be cosigned", 60)
        conflicts = [line for line in server.lines if "witness_size_conflict" in line]
        assert conflicts and f'"size": {longer.size}' in conflicts[0], conflicts
    finally:
        server.stop()


def read_checkpoint_note(server: Serve) -> str:
    """The server's latest checkpoint with only the log's signature line."""
    note = checkpoint(server)
    text, _, lines = note.rpartition("\n\n")
    return text + "\n\n" + lines.split("\n")[0] + "\n"


def test_a_witness_out_of_reach_is_retried_and_serving_goes_on(
    setup: Setup, running: list[HttpWitness]
) -> None:
    port = free_port()  # nothing listens there yet
    url = f"http://127.0.0.1:{port}"
    server = setup.serve("--witness-url", url + "/", "--metrics", "127.0.0.1:0")
    try:
        seated_table(server, "t1", PLAYERS)
        play_round(server, "t1")  # served while every submission fails
        head = settled_head(server, setup.log_pub, 1)
        wait_until(
            lambda: any("witness_unreachable" in line for line in server.lines),
            "a failed submission logged",
            30,
        )
        assert cosigned_at(checkpoint(server), setup.witness_pub) is None
        running.append(HttpWitness([setup.log_pub], setup.key, setup.state, port))
        wait_until(
            lambda: cosigned_at(checkpoint(server), setup.witness_pub),
            "the cosignature once the witness answers",
            60,
        )
        assert read_checkpoint(checkpoint(server)).size == head.size
        (said,) = [line for line in server.lines if "serving metrics on" in line]
        metrics = said.split("http://")[1].split("/")[0]
        scrape = request(int(metrics.rsplit(":", 1)[1]), "GET", "/metrics")[2].decode()
        counted = {
            outcome: float(line.rsplit(" ", 1)[1])
            for line in scrape.splitlines()
            if line.startswith("thirteen_witness_submissions_total{") and f'witness="{url}"' in line
            for outcome in [line.split('outcome="')[1].split('"')[0]]
        }
        assert counted.get("unreachable", 0) >= 1 and counted.get("cosigned", 0) >= 1, counted
    finally:
        server.stop()


def test_witness_url_without_a_witness_key_or_malformed_is_one_line(setup: Setup) -> None:
    for extra, words in (
        (["--witness-url", "ftp://x"], "http(s)://HOST"),
        (["--witness-url", "http://127.0.0.1:1"], "--witness-url needs --witness-key"),
    ):
        done = subprocess.run(
            [str(SCRIPT), "serve", "--address", "127.0.0.1:0", "--data", str(setup.tmp / "d")]  # noqa: RUF005
            + ["--log-key", str(setup.tmp / "log" / "log.key"), *extra],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "THIRTEEN_STORE": "sqlite"},
        )
        assert done.returncode == 2, done.stderr
        assert words in done.stderr and "Traceback" not in done.stderr, done.stderr


# The lies of a fake log, over both protocols -------------------------------------------------

LOG = Signer.from_seed("fake.test/log", bytes(32))
LEAVES = [hashlib.sha256(b"\x00" + bytes([n])).digest() for n in range(20)]


@dataclass(frozen=True)
class Lie:
    size: int
    root: bytes | None  # None: the honest root
    proof: list[bytes]
    old: int  # the old size the liar sends over HTTP
    alarm: str  # what the polling witness's ALARM says
    status: int  # what the HTTP witness answers
    forged: bool = False


LIES = {
    "forged signature": Lie(5, None, [], 5, "does not verify", 403, forged=True),
    "rollback": Lie(3, None, [], 5, "shrank", 400),
    "rollback claiming its own size": Lie(3, None, [], 3, "shrank", 409),
    "fork at the same size": Lie(5, bytes([6]) * 32, [], 5, "another root at the same", 422),
    "rewritten history": Lie(7, bytes([7]) * 32, [bytes(32)] * 3, 5, "does not extend", 422),
    "withheld proof": Lie(8, bytes([8]) * 32, [], 5, "does not extend", 422),
    "honest tree, withheld proof": Lie(8, None, [], 5, "does not extend", 422),
}


def forged(note: str) -> str:
    text, _, line = note.rpartition("\n\n")
    dash, name, payload = line.rstrip("\n").split(" ")
    raw = bytearray(base64.b64decode(payload))
    raw[-1] ^= 1
    return f"{text}\n\n{dash} {name} {b64(bytes(raw))}\n"


def signed(size: int, root: bytes | None = None) -> str:
    return sign_checkpoint(Checkpoint(LOG.name, size, root or mth(LEAVES[:size])), LOG)


@pytest.mark.parametrize("protocol", ["grpc", "http"])
@pytest.mark.parametrize("name", list(LIES))
def test_each_lie_of_a_fake_log_is_refused_over_both_protocols(
    name: str,
    protocol: str,
    setup: Setup,
    fake_log: tuple[GrpcFakeLog, str],  # noqa: F811
    running: list[HttpWitness],
) -> None:
    lie = LIES[name]
    note = signed(lie.size, lie.root)
    note = forged(note) if lie.forged else note
    if protocol == "grpc":
        log, address = fake_log
        log.signer = LOG
        log.show(5)
        assert witness(address, LOG.verifier.vkey, setup.key, setup.state).status == 0
        log.note, log.proof = note, lie.proof
        refused = witness(address, LOG.verifier.vkey, setup.key, setup.state)
        assert refused.status == 3, refused.stderr
        assert "ALARM" in refused.stderr and lie.alarm in refused.stderr, refused.stderr
        assert len(log.handed_back) == 1  # only the honest checkpoint was cosigned
        assert setup.accepted().size == 5
        return
    http_witness = HttpWitness([LOG.verifier.vkey], setup.key, setup.state)
    running.append(http_witness)
    status, _, body = http_witness.post(add_checkpoint(0, [], signed(5)))
    assert status == 200 and cosigned_at(signed(5) + body.decode(), setup.witness_pub)
    before = state_file(setup.state, LOG.name).read_bytes()
    status, kind, body = http_witness.post(add_checkpoint(lie.old, lie.proof, note))
    assert status == lie.status, body
    if status == 409:
        assert (kind, body) == ("text/x.tlog.size", b"5\n")
    assert not body.startswith("\u2014".encode())  # no cosignature
    assert state_file(setup.state, LOG.name).read_bytes() == before
    evidence = list(state_file(setup.state, LOG.name).parent.glob("evidence/*"))
    if status == 422:  # signed by the log and inconsistent: kept as it was sent
        assert [path.read_text() for path in evidence] == [note]
        assert evidence[0].name.startswith(f"{lie.size}-"), evidence
    else:
        assert not evidence


# Hostile and malformed requests --------------------------------------------------------------


def test_malformed_and_hostile_requests_get_their_status_and_change_nothing(
    setup: Setup, running: list[HttpWitness]
) -> None:
    other = Signer.from_seed("other.test/log", bytes(range(32)))
    impostor = Signer.from_seed(LOG.name, bytes(range(1, 33)))  # the log's name, another key
    http_witness = HttpWitness([LOG.verifier.vkey], setup.key, setup.state)
    running.append(http_witness)
    assert http_witness.post(add_checkpoint(0, [], signed(5)))[0] == 200
    kept = state_file(setup.state, LOG.name)
    before = kept.read_bytes()
    eight = signed(8)
    honest = subproof(5, LEAVES[:8], True)
    empty_root_wrong = sign_checkpoint(Checkpoint(LOG.name, 0, bytes(32)), LOG)
    cases: list[tuple[str, bytes, int]] = [
        ("not a request", b"hello", 400),
        ("not UTF-8", b"old 5\n\n\xff\xfe\n", 400),
        ("no old line", b"new 5\n\n" + eight.encode(), 400),
        ("leading zero", add_checkpoint(5, honest, eight).replace(b"old 5", b"old 05"), 400),
        ("negative", add_checkpoint(5, honest, eight).replace(b"old 5", b"old -5"), 400),
        ("proof not base64", add_checkpoint(5, [], eight).replace(b"old 5\n", b"old 5\n!!\n"), 400),
        ("proof not a hash", add_checkpoint(5, [b"short"], eight), 400),
        ("64 proof lines", add_checkpoint(5, [bytes(32)] * 64, eight), 400),
        ("no signature", add_checkpoint(5, honest, eight.rpartition("\n\n")[0] + "\n"), 400),
        ("old past the checkpoint", add_checkpoint(9, [], eight), 400),
        ("unknown origin", add_checkpoint(0, [], sign_checkpoint(
            Checkpoint(other.name, 1, LEAVES[0]), other)), 404),
        ("bad signature", add_checkpoint(5, honest, forged(eight)), 403),
        ("another key of the log's name", add_checkpoint(5, honest, sign_checkpoint(
            Checkpoint(LOG.name, 8, mth(LEAVES[:8])), impostor)), 403),
        ("old size past the known", add_checkpoint(7, [], eight), 409),
        ("old size short of the known", add_checkpoint(3, [], eight), 409),
        ("proof garbage", add_checkpoint(5, [bytes(32)] * len(honest), eight), 422),
        ("proof from old 0", add_checkpoint(0, honest, eight), 409),
        ("size 0, a root not the empty one", add_checkpoint(0, [], empty_root_wrong), 409),
    ]  # fmt: skip
    for name, body, expected in cases:
        status, kind, answer = http_witness.post(body)
        assert status == expected, (name, answer)
        assert not answer.startswith("\u2014".encode()), name
        if status == 409:
            assert (kind, answer) == ("text/x.tlog.size", b"5\n"), name
        assert kept.read_bytes() == before, name
    huge = b"old 5\n" + b"A" * (200 * 1024)
    assert http_witness.post(huge)[0] == 413
    chunks = http.client.HTTPConnection("127.0.0.1", http_witness.port, timeout=30)
    chunks.request("POST", "/add-checkpoint", body=iter([b"old 5\n"] + [b"A" * 4096] * 64))
    assert chunks.getresponse().status == 413  # no Content-Length: stopped as it arrives
    chunks.close()
    assert request(http_witness.port, "GET", "/add-checkpoint")[0] == 405
    assert request(http_witness.port, "POST", "/nothing", b"")[0] == 404
    assert request(http_witness.port, "GET", "/" + "0" * 64 + "/checkpoint")[0] == 404
    assert kept.read_bytes() == before
    # Still serving, and the honest extension is cosigned.
    status, _, answer = http_witness.post(add_checkpoint(5, honest, eight))
    assert status == 200 and cosigned_at(eight + answer.decode(), setup.witness_pub)
    assert read_checkpoint(kept.read_text()).size == 8
    assert not any("Traceback" in line for line in http_witness.lines)


def test_a_fresh_witness_accepts_an_empty_tree_only_with_the_empty_root(
    setup: Setup, running: list[HttpWitness]
) -> None:
    http_witness = HttpWitness([LOG.verifier.vkey], setup.key, setup.state)
    running.append(http_witness)
    wrong = sign_checkpoint(Checkpoint(LOG.name, 0, bytes(32)), LOG)
    assert http_witness.post(add_checkpoint(0, [], wrong))[0] == 422
    assert not state_file(setup.state, LOG.name).exists()
    assert http_witness.post(add_checkpoint(0, [bytes(32)], signed(3)))[0] == 422
    empty = sign_checkpoint(Checkpoint(LOG.name, 0, hashlib.sha256(b"").digest()), LOG)
    assert http_witness.post(add_checkpoint(0, [], empty))[0] == 200


def test_several_logs_a_restart_and_a_second_witness_on_the_same_state(
    setup: Setup, running: list[HttpWitness]
) -> None:
    other = Signer.from_seed("other.test/log", bytes(range(32)))
    first = HttpWitness([LOG.verifier.vkey, other.verifier.vkey], setup.key, setup.state)
    running.append(first)
    assert first.post(add_checkpoint(0, [], signed(5)))[0] == 200
    other_note = sign_checkpoint(Checkpoint(other.name, 1, LEAVES[0]), other)
    assert first.post(add_checkpoint(0, [], other_note))[0] == 200
    second = subprocess.run(
        [str(SCRIPT), "witness", "--listen", "127.0.0.1:0", "--log-public-key"]  # noqa: RUF005
        + [LOG.verifier.vkey, "--key", str(setup.key), "--state", str(setup.state)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert second.returncode == 2, second.stderr
    assert "another witness is using the state directory" in second.stderr
    first.stop()
    again = HttpWitness([LOG.verifier.vkey, other.verifier.vkey], setup.key, setup.state)
    running.append(again)
    assert again.post(add_checkpoint(0, [], signed(8))) == (409, "text/x.tlog.size", b"5\n")
    assert again.post(add_checkpoint(0, [], other_note))[2] == b"1\n"
    proof = subproof(5, LEAVES[:8], True)
    assert again.post(add_checkpoint(5, proof, signed(8)))[0] == 200


def test_concurrent_requests_for_one_log_are_checked_and_recorded_one_at_a_time(
    setup: Setup, running: list[HttpWitness]
) -> None:
    """Twelve logs' worth of honest extensions from size 5 at once: exactly one is cosigned,
    every other is answered 409 with that one's size, and the record is the one cosigned (no
    request checked against a record another was replacing)."""
    from concurrent.futures import ThreadPoolExecutor

    http_witness = HttpWitness([LOG.verifier.vkey], setup.key, setup.state)
    running.append(http_witness)
    assert http_witness.post(add_checkpoint(0, [], signed(5)))[0] == 200
    sizes = list(range(6, 18))
    bodies = [add_checkpoint(5, subproof(5, LEAVES[:n], True), signed(n)) for n in sizes]
    with ThreadPoolExecutor(len(bodies)) as pool:
        answers = list(pool.map(http_witness.post, bodies))
    won = [size for size, (status, _, _) in zip(sizes, answers, strict=True) if status == 200]
    assert len(won) == 1, answers
    others = [answer for answer in answers if answer[0] != 200]
    assert all(a == (409, "text/x.tlog.size", f"{won[0]}\n".encode()) for a in others), answers
    assert read_checkpoint(state_file(setup.state, LOG.name).read_text()).size == won[0]


def test_a_checkpoint_with_an_extension_line_is_cosigned_over_its_whole_text(
    setup: Setup, running: list[HttpWitness]
) -> None:
    """tlog-cosignature signs the whole note body, extension lines included (checked here with
    ``cryptography`` directly)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from domain.tlog.note import sign

    http_witness = HttpWitness([LOG.verifier.vkey], setup.key, setup.state)
    running.append(http_witness)
    text = f"{LOG.name}\n3\n{b64(mth(LEAVES[:3]))}\nan extension line\n"
    status, _, answer = http_witness.post(add_checkpoint(0, [], sign(text, LOG)))
    assert status == 200, answer
    dash, name, payload = answer.decode().rstrip("\n").split(" ")
    assert (dash, name) == ("\u2014", "witness.test/w1")
    raw = base64.b64decode(payload)
    time = int.from_bytes(raw[4:12], "big")
    public = base64.b64decode(setup.witness_pub.split("+", 2)[2])[1:]
    message = f"cosignature/v1\ntime {time}\n{text}".encode()
    Ed25519PublicKey.from_public_bytes(public).verify(raw[12:], message)  # raises if not


def test_bad_witness_arguments_are_one_line(setup: Setup, running: list[HttpWitness]) -> None:
    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(SCRIPT), "witness", "--key", str(setup.key), "--state", str(setup.state), *extra],
            capture_output=True,
            text=True,
            timeout=60,
        )

    vkey = LOG.verifier.vkey
    twin = Signer.from_seed(LOG.name, bytes(range(32))).verifier.vkey
    taken = HttpWitness([vkey], setup.key, setup.tmp / "other-state")
    running.append(taken)
    for extra, status, words in (
        (["--log-public-key", vkey], 2, "give --log HOST:PORT"),
        (["--listen", "127.0.0.1:0"], 2, "--log-public-key is required"),
        (["--listen", "127.0.0.1:0", "--log-public-key", vkey, "--once"], 2, "--once polls"),
        (["--listen", "127.0.0.1:0", "--log-public-key", vkey, "--log-public-key", twin], 2,
         "two log keys for the log"),
        (["--log", "127.0.0.1:1", "--log-public-key", vkey, "--log-public-key", twin, "--once"],
         2, "one --log-public-key"),
        (["--listen", f"127.0.0.1:{taken.port}", "--log-public-key", vkey], 1, "cannot listen"),
    ):  # fmt: skip
        done = run(*extra)
        assert done.returncode == status, (extra, done.stderr)
        assert words in done.stderr and "Traceback" not in done.stderr, (extra, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1, (extra, done.stderr)


def test_one_record_per_log_whichever_way_it_is_witnessed(
    setup: Setup, running: list[HttpWitness]
) -> None:
    """A polling witness (``--log``) and a serving one (``--listen``) keep their records of a log
    in different files of ``--state``: one after the other on the same directory, the same key
    kept two records of one log and could cosign two forks of one size (found following the
    docs). Each now refuses a directory holding the other's record of its log, one line, exit
    status 2, and changes nothing."""
    served = HttpWitness([LOG.verifier.vkey], setup.key, setup.state)
    running.append(served)
    assert served.post(add_checkpoint(0, [], signed(3)))[0] == 200
    served.stop()
    recorded = state_file(setup.state, LOG.name).read_bytes()
    polling = subprocess.run(
        [str(SCRIPT), "witness", "--log", f"127.0.0.1:{free_port()}", "--once"]  # noqa: RUF005
        + ["--log-public-key", LOG.verifier.vkey, "--key", str(setup.key)]
        + ["--state", str(setup.state)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert polling.returncode == 2 and "one record per log" in polling.stderr, polling.stderr
    assert len(polling.stderr.strip().splitlines()) == 1, polling.stderr
    assert not (setup.state / "checkpoint").exists()
    assert state_file(setup.state, LOG.name).read_bytes() == recorded
    polled = setup.tmp / "polled"
    polled.mkdir()
    (polled / "checkpoint").write_text(signed(5), encoding="utf-8")  # as a polling witness keeps
    listening = subprocess.run(
        [str(SCRIPT), "witness", "--listen", "127.0.0.1:0"]  # noqa: RUF005
        + ["--log-public-key", LOG.verifier.vkey, "--key", str(setup.key)]
        + ["--state", str(polled)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listening.returncode == 2 and "one record per log" in listening.stderr
    assert not state_file(polled, LOG.name).exists()
