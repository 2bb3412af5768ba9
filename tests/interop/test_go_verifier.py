"""Issue 24: the transparency log checked by Go's reference code (golang.org/x/mod/sumdb/note and
sumdb/tlog, with crypto/ed25519 for the C2SP cosignature x/mod 0.7.0 predates), not by ours.

A real ``thirteen serve`` writes a log of a few thousand events (rounds at several tables
played at once, players with names JSON must not escape), a real ``thirteen witness --once``
cosigns it, and everything the Go program checks is what the server answered: the checkpoints
it signed as the log grew, inclusion proofs (``GetInclusionProof``, ``ExportRound``) and
consistency proofs (``GetConsistencyProof``). The leaves are read from the store with the
service's own code, as ``thirteen audit --all`` reads them, and an exported event's leaf data is
computed as ``thirteen audit --file`` computes it. The Go program recomputes every leaf hash and
root itself; one byte of ours that differs fails it, and a few changed bytes show it does."""

from __future__ import annotations

import base64
import itertools
import json
import random
import shutil
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from domain.tlog.evidence import leaf_data
from service._generated.thirteen.v1 import audit_pb2, transparency_pb2
from service.evidence import from_document
from service.evidence.document import record_of
from service.opening import open_app
from service.transparency.keys import read_signer
from tests.e2e.helpers import seated_table, wait_until
from tests.e2e.test_transparency import checkpoint, play_round
from tests.e2e.test_witness import Serve, Setup, cosigned_at, keys, settled_head
from tests.support.tlog import read_checkpoint

EVENTS = 3000  # at least this many events in the log
TABLES = 4  # tables playing at once, a thread each
# Player names with what canonical JSON keeps as it is (non-ASCII) or escapes (quote, backslash).
NAMES = ("ann", "bo 玩家", 'cy "🀄"', "dee\\é")
SEED = 24


@dataclass
class Taken:
    """What the server answered, as the Go program reads it (``verifier/main.go``)."""

    checkpoints: list[str] = field(default_factory=list)
    inclusion: list[dict[str, Any]] = field(default_factory=list)
    consistency: list[dict[str, Any]] = field(default_factory=list)

    def proofs(self) -> str:
        return json.dumps(vars(self))


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def write_log(server: Serve, rounds: list[str]) -> None:
    """Rounds played at ``TABLES`` tables at once until the store holds ``EVENTS`` events."""
    errors: list[BaseException] = []

    def play(table: int) -> None:
        try:
            players = {f"{name}-{table}": 10_000_000 for name in NAMES[: 2 + table % 3]}
            seated_table(server, f"table-{table}", players)
            while server.stored_events() < EVENTS and not errors:
                rounds.append(play_round(server, f"table-{table}"))
        except BaseException as error:  # handed to the test's thread
            errors.append(error)

    threads = [threading.Thread(target=play, args=(table,)) for table in range(TABLES)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    if errors:
        raise errors[0]


def keep_checkpoints(server: Serve, kept: list[str], done: threading.Event) -> None:
    """Every distinct checkpoint ``GetCheckpoint`` serves while the log grows."""
    seen: set[str] = set()
    while not done.wait(0.05):
        try:
            note = checkpoint(server)
        except grpc.RpcError:
            continue
        text = read_checkpoint(note).text
        if text not in seen:
            seen.add(text)
            kept.append(note)


def sizes_of(notes: list[str]) -> list[int]:
    return sorted({read_checkpoint(note).size for note in notes})


def by_position(server: Serve, taken: Taken, sizes: list[int], rng: random.Random) -> None:
    """``GetInclusionProof`` by position in signed trees of many sizes, for leaves at the
    edges, at tile and subtree boundaries and at random."""
    latest = sizes[-1]
    chosen = [sizes[0], *rng.sample(sizes[1:-1], min(10, len(sizes) - 2)), latest]
    for size in chosen:
        leaves = {0, 1, size // 2, size - 2, size - 1, 255, 256, 257, 4095, 4096}
        leaves |= {rng.randrange(size) for _ in range(12 if size != latest else 60)}
        for leaf in sorted(n for n in leaves if 0 <= n < size):
            request = transparency_pb2.GetInclusionProofRequest(position=leaf + 1, tree_size=size)
            try:
                answer = server.transparency.GetInclusionProof(request)
            except grpc.RpcError as error:
                if error.code() == grpc.StatusCode.NOT_FOUND:
                    continue  # a position the store skipped (PostgreSQL's sequence)
                raise
            (event,) = answer.events
            assert answer.tree_size == size
            taken.inclusion.append(
                {
                    "source": "GetInclusionProof",
                    "position": event.position,
                    "leaf": answer.leaf_index,
                    "size": size,
                    "hashes": [b64(h) for h in answer.hashes],
                }
            )


def consistency_proofs(server: Serve, taken: Taken, sizes: list[int], rng: random.Random) -> None:
    """``GetConsistencyProof`` between consecutive signed trees, random pairs of them, and
    sizes at powers of two and at random up to the latest."""
    latest = sizes[-1]
    pairs = set(itertools.pairwise(sizes))
    for _ in range(40):
        old, new = sorted(rng.sample(sizes, 2))
        pairs.add((old, new))
    powers = [1 << k for k in range(latest.bit_length()) if 1 << k <= latest]
    pairs |= {(p, latest) for p in powers} | {(p, min(p + 1, latest)) for p in powers}
    pairs |= {(1, 1), (latest, latest), (latest - 1, latest)}
    for _ in range(100):
        old = rng.randrange(1, latest + 1)
        pairs.add((old, rng.randrange(old, latest + 1)))
    for old, new in sorted(pairs):
        request = transparency_pb2.GetConsistencyProofRequest(old_size=old, new_size=new)
        answer = server.transparency.GetConsistencyProof(request)
        assert (answer.old_size, answer.new_size) == (old, new)
        taken.consistency.append(
            {"old": old, "new": new, "hashes": [b64(h) for h in answer.hashes]}
        )


def exported(server: Serve, taken: Taken, rounds: list[str], sizes: list[int]) -> None:
    """``ExportRound`` of a few rounds, each from an earlier signed tree: its checkpoint, its
    events' inclusion proofs with their leaf data as ``thirteen audit --file`` computes it, and
    its consistency proof."""
    for round_id, earlier in zip(rounds[:: max(1, len(rounds) // 4)], sizes[::7], strict=False):
        request = audit_pb2.ExportRoundRequest(round_id=round_id, earlier_tree_size=earlier)
        text = server.audit.ExportRound(request).document
        log = json.loads(text)["log"]
        size = read_checkpoint(log["checkpoint"]).size
        taken.checkpoints.append(log["checkpoint"])
        records = {(r.stream, r.version): r for r in from_document(text).records()}
        for proof in log["proofs"]:
            record = records[(proof["stream"], proof["version"])]
            taken.inclusion.append(
                {
                    "source": "ExportRound",
                    "position": proof["position"],
                    "leaf": proof["leaf_index"],
                    "size": size,
                    "hashes": proof["hashes"],
                    "data": b64(leaf_data(record)),
                }
            )
        if log["earlier_size"]:
            taken.consistency.append(
                {"old": log["earlier_size"], "new": size, "hashes": log["consistency"]}
            )


def stored_leaves(data: Path, environ: dict[str, str], size: int) -> str:
    """The first ``size`` leaves, read from the store as ``thirteen audit --all`` reads them:
    each stored event's leaf data (``domain.tlog.evidence.leaf_data``) with its position."""
    app = open_app(data, environ=environ)
    lines: list[str] = []
    try:
        position = 0
        while len(lines) < size:
            batch = app.recorder.select_notifications(start=position + 1, limit=1000)
            assert batch, f"the store holds {len(lines)} events, the checkpoint {size}"
            for stored in batch[: size - len(lines)]:
                lines.append(f"{stored.id} {b64(leaf_data(record_of(stored.id, stored)))}\n")
            position = batch[-1].id
    finally:
        app.close()
    return "".join(lines)


def run(verifier: Path, directory: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(verifier), "-dir", str(directory)], capture_output=True, text=True, timeout=120
    )


def test_go_reference_code_verifies_our_notes_tree_proofs_and_cosignature(
    go_verifier: Path, tmp_path: Path, store: dict[str, str]
) -> None:
    log_pub = keys(tmp_path / "log", "--name", "thirteen.test/log")
    witness_pub = keys(tmp_path / "w", "--witness", "--name", "witness.test/w1")
    setup = Setup(tmp_path, log_pub, witness_pub, store)
    taken, rng = Taken(), random.Random(SEED)
    rounds: list[str] = []
    server = setup.serve()
    try:
        done = threading.Event()
        keeper = threading.Thread(target=keep_checkpoints, args=(server, taken.checkpoints, done))
        keeper.start()
        try:
            write_log(server, rounds)
            head = settled_head(server, log_pub, EVENTS)
        finally:
            done.set()
            keeper.join()
        witnessed = setup.witness(server)
        assert witnessed.status == 0 and "cosigned" in witnessed.stdout, witnessed.stderr

        def cosigned() -> str | None:
            note = checkpoint(server)
            same = read_checkpoint(note).size == head.size
            return note if same and cosigned_at(note, witness_pub) is not None else None

        latest = wait_until(cosigned, "the checkpoint cosigned by the witness", 30)
        taken.checkpoints = [n for n in taken.checkpoints if read_checkpoint(n).size < head.size]
        sizes = [*sizes_of(taken.checkpoints), head.size]
        assert len(sizes) >= 5, f"only {len(sizes)} checkpoints were signed as the log grew"
        by_position(server, taken, sizes, rng)
        consistency_proofs(server, taken, sizes, rng)
        exported(server, taken, rounds, sizes)
    finally:
        server.stop()

    given = tmp_path / "given"
    given.mkdir()
    (given / "log.pub").write_text(log_pub + "\n", encoding="utf-8")
    (given / "log.key").write_text(read_signer(tmp_path / "log" / "log.key").skey + "\n")
    (given / "witness.pub").write_text(witness_pub + "\n", encoding="utf-8")
    (given / "checkpoint").write_text(latest, encoding="utf-8")
    (given / "leaves").write_text(stored_leaves(setup.data, store, head.size), encoding="utf-8")
    (given / "proofs.json").write_text(taken.proofs(), encoding="utf-8")

    passed = run(go_verifier, given)
    print(passed.stdout, end="")  # the Go program's own account, one line per check
    assert passed.returncode == 0, passed.stdout + passed.stderr
    lines = passed.stdout.splitlines()
    assert len(lines) == 9 and all(line.startswith("ok   ") for line in lines[:-1]), lines
    assert f"{head.size} leaves" in lines[1] and "witness.test/w1" in lines[7], lines

    caught = changed_bytes_are_caught(go_verifier, given, tmp_path / "changed")
    assert caught == sorted(CHANGES), caught


# One byte of ours changed: the Go program must say which check it fails --------------------------


def flip(encoded: str, at: int = -1) -> str:
    """``encoded`` (base64) with one bit of its byte ``at`` flipped."""
    raw = bytearray(base64.b64decode(encoded))
    raw[at] ^= 1
    return b64(bytes(raw))


def edit_json(directory: Path, change: Callable[[dict[str, Any]], None]) -> None:
    path = directory / "proofs.json"
    proofs = json.loads(path.read_text(encoding="utf-8"))
    change(proofs)
    path.write_text(json.dumps(proofs), encoding="utf-8")


def edit_line(path: Path, pick: Callable[[list[str]], int], change: Callable[[str], str]) -> None:
    lines = path.read_text(encoding="utf-8").split("\n")
    at = pick(lines)
    lines[at] = change(lines[at])
    path.write_text("\n".join(lines), encoding="utf-8")


def signature_line(name: str) -> Callable[[list[str]], int]:
    return lambda lines: next(i for i, line in enumerate(lines) if line.startswith(f"— {name} "))


def flip_signature(line: str) -> str:
    dash, name, encoded = line.split(" ")
    return f"{dash} {name} {flip(encoded)}"


def first(source: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda proofs: next(p for p in proofs["inclusion"] if p["source"] == source)


def flip_first_hash(proof: dict[str, Any]) -> None:
    proof["hashes"][0] = flip(proof["hashes"][0])


def flip_leaf(line: str) -> str:
    position, encoded = line.split(" ")
    data = bytearray(base64.b64decode(encoded))
    data[len(data) // 2] ^= 1
    return f"{position} {b64(bytes(data))}"


CHANGES: dict[str, tuple[Callable[[Path], None], str]] = {
    "a bit of the log's signature": (
        lambda d: edit_line(d / "checkpoint", signature_line("thirteen.test/log"), flip_signature),
        "FAIL checkpoint: note.Open: invalid signature",
    ),
    "a bit of the witness's cosignature": (
        lambda d: edit_line(d / "checkpoint", signature_line("witness.test/w1"), flip_signature),
        "FAIL cosignature by witness.test/w1",
    ),
    "a bit of a leaf's data": (
        lambda d: edit_line(d / "leaves", lambda lines: len(lines) // 2, flip_leaf),
        "FAIL tree hash",
    ),
    "a bit of an inclusion proof": (
        lambda d: edit_json(d, lambda p: flip_first_hash(first("GetInclusionProof")(p))),
        "FAIL inclusion proof (GetInclusionProof)",
    ),
    "a bit of an exported event's leaf data": (
        lambda d: edit_json(
            d, lambda p: first("ExportRound")(p).update(data=flip(first("ExportRound")(p)["data"]))
        ),
        "is not the log's (",
    ),
    "a bit of a consistency proof": (
        lambda d: edit_json(
            d, lambda p: flip_first_hash(next(c for c in p["consistency"] if c["hashes"]))
        ),
        "FAIL consistency proof from",
    ),
    "a line added to an earlier checkpoint": (
        lambda d: edit_json(
            d,
            lambda p: p["checkpoints"].__setitem__(
                0, p["checkpoints"][0].replace("\n\n", "\nextension\n\n", 1)
            ),
        ),
        "FAIL earlier checkpoint: note.Open: invalid signature",
    ),
}


def changed_bytes_are_caught(verifier: Path, given: Path, work: Path) -> list[str]:
    """The changes the Go program catches: exit status 1 and the failing check named."""
    caught = []
    for what, (change, said) in CHANGES.items():
        changed = work / what.replace(" ", "-").replace("'", "")
        shutil.copytree(given, changed)
        change(changed)
        done = run(verifier, changed)
        if done.returncode == 1 and said in done.stdout:
            caught.append(what)
        else:
            print(f"not caught: {what} (exit status {done.returncode})\n{done.stdout}")
    return sorted(caught)


def test_the_verifier_refuses_a_directory_it_cannot_read(go_verifier: Path, tmp_path: Path) -> None:
    done = run(go_verifier, tmp_path)
    assert done.returncode == 2 and "log.pub" in done.stderr, done.stderr
