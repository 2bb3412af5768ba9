"""What the Go verifier is given, taken from a real ``thirteen serve``: a log of a few thousand
events written through the API, the checkpoints it signs as it grows, the proofs it answers
(``GetInclusionProof``, ``GetConsistencyProof``, ``ExportRound``) and the leaves read from its
store with the service's own code. Nothing here computes a hash: the Go program does."""

from __future__ import annotations

import base64
import itertools
import json
import random
import threading
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
from tests.e2e.test_witness import Serve, Setup, cosigned_at, settled_head
from tests.support.tlog import Head, read_checkpoint

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


def take_log(server: Serve, setup: Setup, directory: Path) -> Head:
    """Write a log of ``EVENTS`` events through ``server``, have the witness cosign it, and
    put in ``directory`` what the Go program reads (``verifier/main.go``); the tree's head."""
    taken, rng = Taken(), random.Random(SEED)
    rounds: list[str] = []
    done = threading.Event()
    keeper = threading.Thread(target=keep_checkpoints, args=(server, taken.checkpoints, done))
    keeper.start()
    try:
        write_log(server, rounds)
        head = settled_head(server, setup.log_pub, EVENTS)
    finally:
        done.set()
        keeper.join()
    witnessed = setup.witness(server)
    assert witnessed.status == 0 and "cosigned" in witnessed.stdout, witnessed.stderr

    def cosigned() -> str | None:
        note = checkpoint(server)
        same = read_checkpoint(note).size == head.size
        return note if same and cosigned_at(note, setup.witness_pub) is not None else None

    latest = wait_until(cosigned, "the checkpoint cosigned by the witness", 30)
    taken.checkpoints = [n for n in taken.checkpoints if read_checkpoint(n).size < head.size]
    sizes = [*sizes_of(taken.checkpoints), head.size]
    assert len(sizes) >= 5, f"only {len(sizes)} checkpoints were signed as the log grew"
    by_position(server, taken, sizes, rng)
    consistency_proofs(server, taken, sizes, rng)
    exported(server, taken, rounds, sizes)

    directory.mkdir()
    (directory / "log.pub").write_text(setup.log_pub + "\n", encoding="utf-8")
    (directory / "log.key").write_text(read_signer(setup.tmp / "log" / "log.key").skey + "\n")
    (directory / "witness.pub").write_text(setup.witness_pub + "\n", encoding="utf-8")
    (directory / "checkpoint").write_text(latest, encoding="utf-8")
    leaves = stored_leaves(setup.data, setup.environ, head.size)
    (directory / "leaves").write_text(leaves, encoding="utf-8")
    (directory / "proofs.json").write_text(taken.proofs(), encoding="utf-8")
    return head
