"""Issue 12: the transparency log through the real API, on SQLite and PostgreSQL.

Every check a client would make is made here with the tests' own code (``tests.support.tlog``:
leaves recomputed from exported events, RFC 9162 proofs by its recursive definitions, Ed25519
signatures with ``cryptography``), never with the service's. The offline audit is the real
``thirteen audit`` console script."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import psycopg
import pytest

from domain.ids import round_uuid
from domain.tlog.chain import canonical, link
from domain.tlog.note import Signer, Verifier
from service._generated.thirteen.v1 import (
    audit_pb2,
    transparency_pb2,
)
from service.transparency.keys import load_or_create, read_signer
from service.transparency.log import TransparencyLog
from service.transparency.options import LogOptions
from tests.e2e.helpers import (
    Refusal,
    arrange_well,
    deal,
    refusal_of,
    reveal,
    seated_table,
    wait_until,
)
from tests.support.clock import ManualClock
from tests.support.serve_process import ServeProcess
from tests.support.server import ServerThread
from tests.support.stores import PG, store_environ
from tests.support.tlog import (
    Head,
    Witness,
    consistent,
    leaf_of,
    read_checkpoint,
    root_from_inclusion,
    signed_by,
)

SCRIPT = shutil.which("thirteen", path=str(Path(sys.executable).parent))
FAST_CHECKPOINTS = ("--checkpoint-interval", "0.2")
PLAYERS = {"ann": 5000, "bo": 5000, "cy": 5000}


# Clients -------------------------------------------------------------------------------------


def checkpoint(server: Any) -> str:
    return str(
        server.transparency.GetCheckpoint(transparency_pb2.GetCheckpointRequest()).checkpoint
    )


def vkey(server: ServerThread) -> str:
    return server.log_key.verifier.vkey


def log_of(server: ServerThread) -> TransparencyLog:
    """The server's transparency log: every server here runs one."""
    log = server.running.transparency
    assert log is not None
    return log


def play_round(server: Any, table_id: str) -> str:
    dealt = deal(server, table_id)
    arrange_well(server, dealt)
    reveal(server, dealt.round_id)
    return str(dealt.round_id)


def signed_head(server: Any, key: str, at_least: int = 1) -> Head:
    """The latest checkpoint, once it is signed by ``key`` and holds ``at_least`` events."""

    def ready() -> Head | None:
        try:
            note = checkpoint(server)
        except grpc.RpcError:
            return None
        if read_checkpoint(note).origin != key.split("+")[0]:
            return None  # a new log that has not signed yet serves the last of the old one
        head = signed_by(note, key)
        return head if head.size >= at_least else None

    found: Head = wait_until(ready, f"a checkpoint of at least {at_least} events")
    return found


def export(server: Any, round_id: str, earlier: int = 0) -> dict[str, Any]:
    request = audit_pb2.ExportRoundRequest(round_id=round_id, earlier_tree_size=earlier)
    document: dict[str, Any] = json.loads(server.audit.ExportRound(request).document)
    return document


def consistency(server: Any, old: int, new: int) -> list[bytes]:
    request = transparency_pb2.GetConsistencyProofRequest(old_size=old, new_size=new)
    return list(server.transparency.GetConsistencyProof(request).hashes)


def assert_extends(server: Any, older: Head, newer: Head) -> None:
    proof = consistency(server, older.size, newer.size)
    assert consistent(older.size, newer.size, older.root, newer.root, proof), (
        f"the checkpoint of {newer.size} events does not extend the one of {older.size}"
    )


# The offline audit ---------------------------------------------------------------------------


@dataclass
class Audit:
    status: int
    stdout: str
    stderr: str

    @property
    def report(self) -> dict[str, Any]:
        found: dict[str, Any] = json.loads(self.stdout)
        return found

    def log_findings(self) -> list[dict[str, Any]]:
        return [f for r in self.report["rounds"] for f in r["findings"] if f["rule"] == "LOG"]

    def others_pass(self) -> bool:
        """Whether every finding but the log's passes (the chain and the rules)."""
        return all(
            f["ok"] for r in self.report["rounds"] for f in r["findings"] if f["rule"] != "LOG"
        )


def audit_offline(tmp_path: Path, document: dict[str, Any] | str, *extra: str) -> Audit:
    path = tmp_path / f"export-{time.monotonic_ns()}.json"
    text = document if isinstance(document, str) else json.dumps(document, ensure_ascii=False)
    path.write_text(text, encoding="utf-8")
    done = subprocess.run(
        [str(SCRIPT), "audit", "--file", str(path), "--json", *extra],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return Audit(done.returncode, done.stdout, done.stderr)


def relink(events: list[dict[str, Any]]) -> None:
    """Recompute the chain links of one stream's exported events, in order, as a forger would."""
    previous = ""
    for event in events:
        body = canonical(event["stream"], event["version"], event["topic"], event["state"])
        event["state"]["chain"] = previous = link(previous, body)


# Checkpoints and proofs ----------------------------------------------------------------------


def test_checkpoints_advance_as_rounds_are_played_and_each_extends_the_one_before(
    server: ServerThread,
) -> None:
    seated_table(server, "t1", PLAYERS)
    key = vkey(server)
    heads = [signed_head(server, key)]
    for _ in range(3):
        play_round(server, "t1")
        heads.append(signed_head(server, key, heads[-1].size + 1))
    sizes = [h.size for h in heads]
    assert sizes == sorted(set(sizes)), sizes
    assert {h.origin for h in heads} == {server.log_key.name}
    for older, newer in itertools.pairwise(heads):
        assert_extends(server, older, newer)
    assert_extends(server, heads[0], heads[-1])  # across several checkpoints at once
    # Nor does a proof between two sizes fit other roots.
    proof = consistency(server, heads[0].size, heads[-1].size)
    assert not consistent(heads[0].size, heads[-1].size, heads[1].root, heads[-1].root, proof)


def test_every_event_of_a_round_is_proven_in_the_signed_tree(server: ServerThread) -> None:
    seated_table(server, "t1", PLAYERS)
    round_id = play_round(server, "t1")
    document = export(server, round_id)
    head = signed_by(document["log"]["checkpoint"], vkey(server))
    answer = server.transparency.GetInclusionProof(
        transparency_pb2.GetInclusionProofRequest(round_id=round_id, tree_size=head.size)
    )
    assert answer.tree_size == head.size
    assert read_checkpoint(answer.checkpoint).root == head.root
    exported = {(e["stream"], e["version"]): e for e in document["round_events"]}
    assert len(answer.events) == len(exported) >= 4
    for proof in answer.events:
        leaf = leaf_of(exported[(proof.stream, proof.version)])
        found = root_from_inclusion(proof.leaf_index, head.size, leaf, list(proof.hashes))
        assert found == head.root, f"event {proof.position} is not in the signed tree"
        # The same event asked for by its position.
        single = server.transparency.GetInclusionProof(
            transparency_pb2.GetInclusionProofRequest(position=proof.position, tree_size=head.size)
        )
        assert (single.leaf_index, list(single.hashes)) == (proof.leaf_index, list(proof.hashes))
        assert single.events[0].stream == proof.stream
    # A leaf whose content differs is not proven by the same path.
    first = answer.events[0]
    edited = dict(exported[(first.stream, first.version)])
    edited["state"] = {**edited["state"], "caller": "someone else"}
    assert root_from_inclusion(first.leaf_index, head.size, leaf_of(edited), first.hashes) != (
        head.root
    )


def test_proofs_outside_the_signed_tree_are_refused_with_their_reasons(
    server: ServerThread,
) -> None:
    seated_table(server, "t1", PLAYERS)
    play_round(server, "t1")
    head = signed_head(server, vkey(server), server.app.max_position())  # nothing more to sign
    ask = server.transparency
    proofs = transparency_pb2.GetConsistencyProofRequest
    beyond = refusal_of(ask.GetConsistencyProof, proofs(old_size=1, new_size=head.size + 10**6))
    assert (beyond.code, beyond.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "NOT_YET_LOGGED")
    backwards = refusal_of(ask.GetConsistencyProof, proofs(old_size=head.size, new_size=1))
    assert backwards.code == grpc.StatusCode.INVALID_ARGUMENT
    inclusion = transparency_pb2.GetInclusionProofRequest
    nowhere = refusal_of(ask.GetInclusionProof, inclusion(position=10**9))
    assert nowhere.code == grpc.StatusCode.NOT_FOUND
    unknown = refusal_of(ask.GetInclusionProof, inclusion(round_id="no-such-round"))
    assert unknown.code == grpc.StatusCode.NOT_FOUND
    later = refusal_of(ask.GetInclusionProof, inclusion(position=1, tree_size=head.size + 1))
    assert later.code == grpc.StatusCode.FAILED_PRECONDITION


# Restarts ------------------------------------------------------------------------------------


def test_checkpoints_survive_a_restart_and_the_next_extends_the_last(
    start_server: Callable[[], ServerThread],
) -> None:
    first = start_server()
    key = vkey(first)
    seated_table(first, "t1", PLAYERS)
    play_round(first, "t1")
    before = signed_head(first, key)
    first.stop()
    second = start_server()
    assert vkey(second) == key  # the same log key file, so the same log
    assert signed_by(checkpoint(second), key).size >= before.size
    play_round(second, "t1")
    after = signed_head(second, key, before.size + 1)
    assert_extends(second, before, after)


@pytest.fixture
def serve(store: dict[str, str], tmp_path: Path) -> Iterator[Callable[[], ServeProcess]]:
    started: list[ServeProcess] = []

    def start() -> ServeProcess:
        started.append(ServeProcess(tmp_path / "served", *FAST_CHECKPOINTS, environ=store))
        return started[-1]

    yield start
    for process in started:
        if process.process.poll() is None:
            process.process.kill()


def test_checkpoints_survive_kill_9_and_the_next_extends_the_last(
    serve: Callable[[], ServeProcess], tmp_path: Path
) -> None:
    first = serve()
    key = read_signer(first.data / "log.key").verifier.vkey  # made for it, or by it on SQLite
    seated_table(first, "t1", PLAYERS)
    play_round(first, "t1")
    before = signed_head(first, key)
    play_round(first, "t1")  # stored, perhaps not yet in the tree or signed when killed
    first.kill()
    second = serve()
    play_round(second, "t1")
    after = signed_head(second, key, before.size + 1)
    assert_extends(second, before, after)
    second.stop()


# Exports audited offline ---------------------------------------------------------------------


def test_an_export_audits_offline_with_the_log_key_and_fails_with_another(
    server: ServerThread, tmp_path: Path
) -> None:
    seated_table(server, "t1", PLAYERS)
    round_id = play_round(server, "t1")
    document = export(server, round_id)
    assert document["format"] == "thirteen-round-export/2"
    passed = audit_offline(tmp_path, document, "--log-public-key", vkey(server))
    assert passed.status == 0, passed.stdout + passed.stderr
    assert all(f["ok"] for f in passed.log_findings()) and len(passed.log_findings()) == 3
    assert "cosignatures were not checked" in passed.log_findings()[-1]["message"]
    other = subprocess.run(
        [str(SCRIPT), "keys", "init", str(tmp_path / "other")], capture_output=True, text=True
    )
    assert other.returncode == 0, other.stderr
    refused = audit_offline(tmp_path, document, "--log-public-key", str(tmp_path / "other/log.pub"))
    assert refused.status == 1, refused.stdout + refused.stderr
    assert any(not f["ok"] and "not trusted" in f["message"] for f in refused.log_findings())


def test_an_event_altered_in_the_export_even_with_relinked_chains_fails_the_log_check(
    server: ServerThread, tmp_path: Path
) -> None:
    """Who dealt is recorded in the event; the rules do not check it, and a forger can link
    the chain again. Only the log shows the event is not the one it holds."""
    seated_table(server, "t1", PLAYERS)
    round_id = play_round(server, "t1")
    document = export(server, round_id)
    document["round_events"][0]["state"]["caller"] = "someone-else"
    relink(document["round_events"])
    unchecked = audit_offline(tmp_path, document)
    assert unchecked.others_pass(), unchecked.stdout  # the chain and the rules still pass
    caught = audit_offline(tmp_path, document, "--log-public-key", vkey(server))
    assert caught.status == 1, caught.stdout + caught.stderr
    failed = [f for f in caught.log_findings() if not f["ok"]]
    assert len(failed) == 1 and "Round.Dealt event, version 1" in failed[0]["event"], failed


def test_a_version_1_export_audits_as_before_and_says_the_log_was_not_checked(
    server: ServerThread, tmp_path: Path
) -> None:
    seated_table(server, "t1", PLAYERS)
    document = export(server, play_round(server, "t1"))
    del document["log"]
    document["format"] = "thirteen-round-export/1"
    audited = audit_offline(tmp_path, document)
    assert audited.status == 0, audited.stdout + audited.stderr
    assert [f["message"][:11] for f in audited.log_findings()] == ["not checked"]
    keyed = audit_offline(tmp_path, document, "--log-public-key", vkey(server))
    assert keyed.status == 1  # asked to check the log, it cannot


# A store rewritten by someone with write access (and the log key) ------------------------------


def rewrite_round(store: dict[str, str], data: Path, round_id: str) -> None:
    """Change who dealt the round in the database itself, with every link of the round's stream
    computed again, as someone with write access to the store can."""
    stream = round_uuid(round_id)
    # Either store's connection: the same execute, commit and close.
    db: sqlite3.Connection | psycopg.Connection[tuple[Any, ...]]
    write: Callable[[int, bytes], object]
    if store["THIRTEEN_STORE"] == "sqlite":
        import sqlite3

        db = sqlite3.connect(data / "thirteen.sqlite")
        db.execute("DROP TRIGGER stored_events_no_update")
        rows = db.execute(
            "SELECT originator_version, topic, state FROM stored_events WHERE originator_id = ? "
            "ORDER BY originator_version",
            (stream.hex,),
        ).fetchall()
        write = lambda version, state: db.execute(  # noqa: E731
            "UPDATE stored_events SET state = ? WHERE originator_id = ? AND originator_version = ?",
            (state, stream.hex, version),
        )
    else:
        db = psycopg.connect(autocommit=False, **PG)
        schema = store["POSTGRES_SCHEMA"]
        db.execute(f'ALTER TABLE "{schema}".thirteen_events DISABLE TRIGGER USER')
        rows = db.execute(
            f'SELECT originator_version, topic, state FROM "{schema}".thirteen_events '
            "WHERE originator_id = %s ORDER BY originator_version",
            (stream,),
        ).fetchall()
        write = lambda version, state: db.execute(  # noqa: E731
            f'UPDATE "{schema}".thirteen_events SET state = %s '
            "WHERE originator_id = %s AND originator_version = %s",
            (state, stream, version),
        )
    events = [
        {"stream": str(stream), "version": v, "topic": t, "state": json.loads(s)}
        for v, t, s in rows
    ]
    events[0]["state"]["caller"] = "forged"
    relink(events)
    for event in events:
        write(event["version"], json.dumps(event["state"]).encode())
    db.commit()
    db.close()


def drop_tree(store: dict[str, str], data: Path) -> None:
    """Throw the log's tables away, so that the server builds the tree again from the store."""
    tables = ("nodes", "gaps", "state", "checkpoints", "cosignatures")
    if store["THIRTEEN_STORE"] == "sqlite":
        import sqlite3

        with sqlite3.connect(data / "thirteen.sqlite") as db:
            for table in tables:
                db.execute(f"DROP TABLE tlog_{table}")
        return
    with psycopg.connect(autocommit=True, **PG) as db:
        for table in tables:
            db.execute(f'DROP TABLE "{store["POSTGRES_SCHEMA"]}".tlog_{table}')


@pytest.mark.parametrize("tree", ["kept", "rebuilt from the rewritten store"])
def test_a_rewritten_round_is_caught_offline_by_the_log(
    start_server: Callable[[], ServerThread], store: dict[str, str], tmp_path: Path, tree: str
) -> None:
    first = start_server()
    key = vkey(first)
    seated_table(first, "t1", PLAYERS)
    round_id = play_round(first, "t1")
    earlier = export(first, round_id)  # what a player kept: its checkpoint covers the round
    kept = tmp_path / "earlier.json"
    kept.write_text(json.dumps(earlier), encoding="utf-8")
    first.stop()
    rewrite_round(store, tmp_path / "data", round_id)
    if tree != "kept":
        drop_tree(store, tmp_path / "data")
    second = start_server()
    play_round(second, "t1")
    size = read_checkpoint(earlier["log"]["checkpoint"]).size
    signed_head(second, key, size + 1)
    fresh = export(second, round_id, earlier=size)
    assert fresh["round_events"][0]["state"]["caller"] == "forged"
    plain = audit_offline(tmp_path, fresh)
    assert plain.others_pass(), plain.stdout  # links and rules hold: the forger was careful
    keyed = audit_offline(tmp_path, fresh, "--log-public-key", key)
    against = audit_offline(
        tmp_path, fresh, "--log-public-key", key, "--earlier-checkpoint", str(kept)
    )
    assert against.status == 1, against.stdout + against.stderr
    failed = [f["message"] for f in against.log_findings() if not f["ok"]]
    if tree == "kept":
        # The log holds the event as it was: its leaf no longer matches.
        assert keyed.status == 1, keyed.stdout
        assert any("not what the signed log holds" in m for m in failed), failed
    else:
        # A log rebuilt from the rewritten store and signed again proves the forged event in
        # its own tree; only a checkpoint kept from before shows the history was rewritten.
        assert keyed.status == 0, keyed.stdout
        assert any("does not extend the earlier checkpoint" in m for m in failed), failed
    # The store itself, against the same kept checkpoint (issue 22): a rebuilt tree is not the
    # one signed before, whatever was signed since; a kept one holds the old event's leaf.
    stored = audit_store(
        store,
        tmp_path / "data",
        "--all",
        "--log-public-key",
        key,
        "--earlier-checkpoint",
        str(kept),
    )
    assert stored.status == 1, stored.stdout + stored.stderr
    expected = "history was rewritten" if tree != "kept" else "not what the log holds"
    assert expected in stored.stdout, stored.stdout


# Witnesses -----------------------------------------------------------------------------------

WITNESS = Witness("witness.test/w1", bytes(range(32)))
STRANGER = Witness("witness.test/stranger", bytes(range(1, 33)))


def witnessed_server(store: dict[str, str], tmp_path: Path, *witnesses: Witness) -> ServerThread:
    """A server whose AddCosignature keeps the lines of ``witnesses``."""
    key = load_or_create(tmp_path / "data" / "log.key")[0]
    known = tuple(Verifier.parse(w.vkey) for w in witnesses)
    return ServerThread(
        tmp_path / "data",
        store,
        ManualClock(),
        transparency=LogOptions(key, known, checkpoint_interval=0.2),
    )


def latest_note(server: ServerThread) -> tuple[Head, str]:
    """The latest checkpoint, as read and as served (one read, so that both agree)."""
    key = server.log_key.verifier.vkey
    signed_head(server, key)
    note = checkpoint(server)
    return signed_by(note, key), note


def add_cosignature(server: ServerThread, text: str) -> str:
    request = transparency_pb2.AddCosignatureRequest(checkpoint_cosignature=text)
    return str(server.transparency.AddCosignature(request).checkpoint)


def refused_cosignature(server: ServerThread, text: str) -> Refusal:
    with pytest.raises(grpc.RpcError) as refused:
        add_cosignature(server, text)
    return Refusal.of(refused.value)


def test_a_known_witness_cosignature_is_kept_and_others_are_refused(
    store: dict[str, str], tmp_path: Path
) -> None:
    server = witnessed_server(store, tmp_path, WITNESS)
    try:
        seated_table(server, "t1", PLAYERS)
        head, note = latest_note(server)
        now = int(server.clock.now().timestamp())
        cosigned = note + WITNESS.cosign(head.text, now)
        assert add_cosignature(server, cosigned) == cosigned
        if read_checkpoint(checkpoint(server)).size == head.size:
            assert checkpoint(server) == cosigned
        # A stranger's key, a forged signature, a checkpoint the log never signed.
        cases = {
            "UNKNOWN_WITNESS_KEY": note + STRANGER.cosign(head.text, now),
            "INVALID_COSIGNATURE": note + WITNESS.cosign(head.text, now + 1, forge=True),
        }
        other_root = head.text.replace(head.text.split("\n")[2], "A" * 43 + "=")
        cases["INVALID_COSIGNATURE "] = other_root + "\n" + WITNESS.cosign(other_root, now)
        for reason, text in cases.items():
            found = refused_cosignature(server, text)
            assert found.reason == reason.strip(), (reason, found)
            code = (
                grpc.StatusCode.PERMISSION_DENIED
                if reason.startswith("UNKNOWN")
                else (grpc.StatusCode.INVALID_ARGUMENT)
            )
            assert found.code == code
    finally:
        server.stop()


WITNESS2 = Witness("witness.test/w2", bytes(range(2, 34)))


def cosigned_times(server: ServerThread, size: int, witness: Witness) -> list[int]:
    """The times of ``witness``'s lines on the checkpoint of ``size`` events, as served."""
    request = transparency_pb2.GetInclusionProofRequest(position=1, tree_size=size)
    note = server.transparency.GetInclusionProof(request).checkpoint
    name, hex_id, _ = witness.vkey.split("+", 2)
    return [
        int.from_bytes(payload[4:12], "big")
        for signer, payload in read_checkpoint(note).signatures
        if signer == name and payload[:4].hex() == hex_id
    ]


def test_cosignatures_keep_the_newest_per_witness_and_a_request_is_kept_whole_or_not_at_all(
    store: dict[str, str], tmp_path: Path
) -> None:
    server = witnessed_server(store, tmp_path, WITNESS, WITNESS2)
    try:
        seated_table(server, "t1", PLAYERS)
        head, note = latest_note(server)
        now = int(server.clock.now().timestamp())
        add_cosignature(server, note + WITNESS.cosign(head.text, now))
        add_cosignature(server, note + WITNESS.cosign(head.text, now - 60))  # older: ignored
        assert cosigned_times(server, head.size, WITNESS) == [now]
        add_cosignature(server, note + WITNESS.cosign(head.text, now + 30))  # newer: replaces
        assert cosigned_times(server, head.size, WITNESS) == [now + 30]

        # One good line and one forged: refused, and the good one is not kept either.
        mixed = note + WITNESS2.cosign(head.text, now) + WITNESS.cosign(head.text, now, forge=True)
        assert refused_cosignature(server, mixed).reason == "INVALID_COSIGNATURE"
        assert cosigned_times(server, head.size, WITNESS2) == []
        assert cosigned_times(server, head.size, WITNESS) == [now + 30]
    finally:
        server.stop()


def test_cosignature_times_far_from_the_log_clock_are_refused(
    store: dict[str, str], tmp_path: Path
) -> None:
    """None (0), the largest there is, more than 10 minutes ahead or a day behind."""
    server = witnessed_server(store, tmp_path, WITNESS)
    try:
        seated_table(server, "t1", PLAYERS)
        head, note = latest_note(server)
        now = int(server.clock.now().timestamp())
        for stamp in (0, (1 << 63) - 1, now + 601, now - 86_401):
            found = refused_cosignature(server, note + WITNESS.cosign(head.text, stamp))
            assert (found.code, found.reason) == (
                grpc.StatusCode.INVALID_ARGUMENT,
                "COSIGNATURE_TIME",
            ), (stamp, found)
        assert cosigned_times(server, head.size, WITNESS) == []  # nothing kept
        add_cosignature(server, note + WITNESS.cosign(head.text, now + 600))  # a clock ahead
        assert cosigned_times(server, head.size, WITNESS) == [now + 600]
    finally:
        server.stop()


# PostgreSQL replicas -------------------------------------------------------------------------


def test_replicas_share_one_tree_one_signs_at_a_time_and_another_takes_over(tmp_path: Path) -> None:
    with store_environ("postgres", tmp_path) as environ:
        clock = ManualClock()
        servers = [ServerThread(tmp_path / "data", environ, clock) for _ in range(2)]
        try:
            key = vkey(servers[0])
            assert vkey(servers[1]) == key  # every replica is given the same log key file
            seated_table(servers[0], "t1", PLAYERS)
            heads: list[Head] = []
            for n in range(4):  # rounds through both replicas
                play_round(servers[n % 2], "t1")
                at_least = heads[-1].size + 1 if heads else 1
                heads.append(signed_head(servers[(n + 1) % 2], key, at_least))
            leading = [log_of(s).leading for s in servers]
            assert sorted(leading) == [False, True], leading
            for older, newer in itertools.pairwise(heads):
                assert_extends(servers[0], older, newer)
            leader = servers[leading.index(True)]
            other = servers[leading.index(False)]
            leader.stop()  # its advisory lock goes with its session: the other takes over
            play_round(other, "t1")
            after = signed_head(other, key, heads[-1].size + 1)
            assert_extends(other, heads[-1], after)
            # It leads from its next try of the lock (a second at most, on a quiet machine).
            wait_until(lambda: log_of(other).leading, "the other replica to lead the log", 60)
        finally:
            for server in servers:
                server.stop()


# Health: a log that signs nothing more, or cannot append, is NOT_SERVING; play goes on -------

LOG_SERVICE = "thirteen.v1.TransparencyService"


def health(server: ServerThread | ServeProcess, name: str) -> int:
    from grpc_health.v1 import health_pb2

    from tests.support.health import health_stub

    request = health_pb2.HealthCheckRequest(service=name)
    return int(health_stub(server.channel).Check(request).status)


def serving(server: ServerThread, name: str) -> bool:
    from grpc_health.v1 import health_pb2

    return health(server, name) == health_pb2.HealthCheckResponse.SERVING


def tree_size(store: dict[str, str], data: Path) -> int:
    if store["THIRTEEN_STORE"] == "sqlite":
        import sqlite3

        with sqlite3.connect(data / "thirteen.sqlite") as db:
            ((size,),) = db.execute("SELECT value FROM tlog_state WHERE name = 'size'")
            return int(size)
    with psycopg.connect(autocommit=True, **PG) as db:
        table = f'"{store["POSTGRES_SCHEMA"]}".tlog_state'
        ((size,),) = db.execute(f"SELECT value FROM {table} WHERE name = 'size'").fetchall()
        return int(size)


def plant_leaf(store: dict[str, str], data: Path, index: int, *, remove: bool = False) -> None:
    """Put a leaf where the next one will go (so that appending it breaks the table's key), or
    take it away again."""
    if store["THIRTEEN_STORE"] == "sqlite":
        import sqlite3

        with sqlite3.connect(data / "thirteen.sqlite") as db:
            if remove:
                db.execute("DROP TRIGGER IF EXISTS tlog_nodes_no_DELETE")
                db.execute("DELETE FROM tlog_nodes WHERE level = 0 AND idx = ?", (index,))
            else:
                db.execute("INSERT INTO tlog_nodes VALUES (0, ?, ?)", (index, bytes(32)))
        return
    table = f'"{store["POSTGRES_SCHEMA"]}".tlog_nodes'
    with psycopg.connect(autocommit=True, **PG) as db:
        if remove:
            db.execute(f"ALTER TABLE {table} DISABLE TRIGGER USER")
            db.execute(f"DELETE FROM {table} WHERE level = 0 AND idx = %s", (index,))
        else:
            db.execute(f"INSERT INTO {table} VALUES (0, %s, %s)", (index, bytes(32)))


def test_a_tree_changed_under_its_checkpoint_turns_the_log_not_serving_and_play_goes_on(
    start_server: Callable[[], ServerThread], store: dict[str, str], tmp_path: Path
) -> None:
    from tests.integration.test_transparency_log import tamper_node

    first = start_server()
    key = vkey(first)
    seated_table(first, "t1", PLAYERS)
    play_round(first, "t1")
    before = signed_head(first, key, first.app.max_position())  # all it signs before stopping
    first.stop()
    tamper_node(store, tmp_path / "data")
    second = start_server()
    assert serving(second, LOG_SERVICE)  # until it tries to sign over the changed tree
    play_round(second, "t1")
    wait_until(lambda: not serving(second, LOG_SERVICE), "the log to report NOT_SERVING")
    assert serving(second, "")  # the service as a whole still serves: play goes on
    play_round(second, "t1")
    assert signed_by(checkpoint(second), key).size == before.size  # nothing signed over it
    assert log_of(second).failure is not None


def test_an_appender_that_keeps_failing_is_not_serving_until_it_appends_again(
    start_server: Callable[[], ServerThread], store: dict[str, str], tmp_path: Path
) -> None:
    first = start_server()
    key = vkey(first)
    seated_table(first, "t1", PLAYERS)
    play_round(first, "t1")
    signed_head(first, key)
    first.stop()
    size = tree_size(store, tmp_path / "data")
    plant_leaf(store, tmp_path / "data", size)  # the next append breaks the nodes' key
    second = start_server()
    play_round(second, "t1")
    wait_until(lambda: not serving(second, LOG_SERVICE), "the log to report NOT_SERVING")
    assert serving(second, "")
    plant_leaf(store, tmp_path / "data", size, remove=True)
    wait_until(lambda: serving(second, LOG_SERVICE), "the log to serve again", 30)
    after = signed_head(second, key, size + 1)
    assert after.size == second.app.max_position()  # it caught up with every event


# The log key: a key swapped under the same name signs nothing --------------------------------


def test_a_log_key_swapped_under_the_same_name_signs_nothing_over_the_old_checkpoints(
    start_server: Callable[[], ServerThread], store: dict[str, str], tmp_path: Path
) -> None:
    from service.transparency.keys import write_signer

    first = start_server()
    old = first.log_key
    seated_table(first, "t1", PLAYERS)
    play_round(first, "t1")
    before = signed_head(first, old.verifier.vkey, first.app.max_position())
    first.stop()
    path = tmp_path / "data" / "log.key"
    path.unlink()
    write_signer(path, Signer.from_seed(old.name, bytes(range(32))))  # same name, new key
    second = start_server()
    assert second.log_key.name == old.name and second.log_key != old
    play_round(second, "t1")
    wait_until(lambda: not serving(second, LOG_SERVICE), "the log to report NOT_SERVING")
    assert "another key of that name" in str(log_of(second).failure)
    assert signed_by(checkpoint(second), old.verifier.vkey).size == before.size


# The audit of a round from the store checks the log -------------------------------------------


def audit_store(store: dict[str, str], data: Path, *args: str) -> Audit:
    done = subprocess.run(
        [str(SCRIPT), "audit", "--data", str(data), "--json", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **store},
    )
    return Audit(done.returncode, done.stdout, done.stderr)


def log_findings(answer: Any) -> list[Any]:
    return [f for f in answer.findings if f.rule == "LOG"]


def test_audit_round_proves_each_event_in_the_log_and_names_one_changed_after(
    start_server: Callable[[], ServerThread], store: dict[str, str], tmp_path: Path
) -> None:
    """The chain links recomputed by the forger and the rules all pass; the log does not."""
    first = start_server()
    seated_table(first, "t1", PLAYERS)
    round_id = play_round(first, "t1")
    export(first, round_id)  # waits for a checkpoint covering the round
    answer = first.audit.AuditRound(audit_pb2.AuditRoundRequest(round_id=round_id))
    assert answer.ok, [f for f in answer.findings if not f.ok]
    found = [f.message for f in log_findings(answer)]
    assert any("is signed by the log key" in m for m in found), found
    assert any("recomputed from the store, verifies" in m for m in found), found
    first.stop()
    data = tmp_path / "data"
    offline = audit_store(store, data, "--round", round_id, "--log-public-key", vkey(first))
    assert offline.status == 0 and all(f["ok"] for f in offline.log_findings()), offline.stdout

    rewrite_round(store, data, round_id)
    second = start_server()
    answer = second.audit.AuditRound(audit_pb2.AuditRoundRequest(round_id=round_id))
    failed = [f for f in answer.findings if not f.ok]
    assert not answer.ok and {f.rule for f in failed} == {"LOG"}, failed
    assert len(failed) == 1, failed  # the links are not in the leaves: only the deal changed
    assert "Round.Dealt event, version 1" in failed[0].event
    assert "not what the signed log holds" in failed[0].message
    second.stop()
    for args in (["--round", round_id], ["--all"]):
        caught = audit_store(store, data, *args)
        assert caught.status == 1, caught.stdout + caught.stderr
        assert caught.others_pass(), caught.stdout
        failed_offline = [f for f in caught.log_findings() if not f["ok"]]
        assert len(failed_offline) == 1 and "Round.Dealt" in failed_offline[0]["event"]


def test_audit_all_checks_the_stored_tree_against_the_latest_checkpoint(
    start_server: Callable[[], ServerThread], store: dict[str, str], tmp_path: Path
) -> None:
    from tests.integration.test_transparency_log import tamper_node

    server = start_server()
    seated_table(server, "t1", PLAYERS)
    export(server, play_round(server, "t1"))  # a checkpoint covers it
    key = vkey(server)
    server.stop()
    data = tmp_path / "data"
    clean = audit_store(store, data, "--all", "--log-public-key", key)
    assert clean.status == 0, clean.stdout + clean.stderr
    tamper_node(store, data)
    caught = audit_store(store, data, "--all", "--log-public-key", key)
    assert caught.status == 1, caught.stdout
    (tree,) = [r for r in caught.report["rounds"] if r["round_id"] == "(transparency log)"]
    assert any(
        not f["ok"] and "not the latest checkpoint's" in f["message"] for f in tree["findings"]
    ), tree


def test_events_not_yet_in_a_checkpoint_are_a_note_not_a_failure(
    store: dict[str, str], tmp_path: Path
) -> None:
    data = tmp_path / "data"
    key = load_or_create(data / "log.key")[0]
    server = ServerThread(
        data, store, ManualClock(), transparency=LogOptions(key, checkpoint_interval=3600)
    )
    try:
        seated_table(server, "t1", PLAYERS)
        first = signed_head(server, key.verifier.vkey)  # the first comes at once, the next in 1 h
        round_id = play_round(server, "t1")
        answer = server.audit.AuditRound(audit_pb2.AuditRoundRequest(round_id=round_id))
        assert answer.ok, [f for f in answer.findings if not f.ok]
        notes = [f.message for f in log_findings(answer) if "not checked yet" in f.message]
        assert len(notes) == 1 and f"latest checkpoint ({first.size} events)" in notes[0], notes
    finally:
        server.stop()


def test_a_rewritten_store_gets_no_fresh_signature(store: dict[str, str], tmp_path: Path) -> None:
    """Issue 22, finding 6: ``thirteen serve`` keeps the last checkpoint its key signed beside
    the key (outside the data directory here). A store whose round was rewritten (chain
    recomputed) and whose log's tables were emptied is served again: the rebuilt tree does not
    extend what the key signed, so nothing more is signed (one log line says why, the log's
    health is NOT_SERVING) while play goes on; the audit holding the kept checkpoint fails."""
    keys = tmp_path / "keys"
    keys.mkdir()
    log_key = keys / "log.key"
    key = load_or_create(log_key)[0].verifier.vkey
    data = tmp_path / "data"
    first = ServeProcess(data, "--log-key", str(log_key), *FAST_CHECKPOINTS, environ=store)
    try:
        seated_table(first, "t1", PLAYERS)
        round_id = play_round(first, "t1")
        kept = signed_head(first, key, first.stored_events())
    finally:
        first.stop()
    assert (keys / "log.key.signed").exists()
    rewrite_round(store, data, round_id)
    drop_tree(store, data)
    second = ServeProcess(data, "--log-key", str(log_key), *FAST_CHECKPOINTS, environ=store)
    try:
        play_round(second, "t1")  # play goes on
        wait_until(
            lambda: any("transparency_log_rewritten" in line for line in second.lines),
            "the log to refuse to sign the rewritten history",
        )
        wait_until(
            lambda: health(second, "thirteen.v1.TransparencyService") != 1,
            "the log's health to say it signs nothing",
            60,
        )
        try:
            newest = signed_by(checkpoint(second), key)
        except grpc.RpcError:
            newest = None  # nothing signed at all
        assert newest is None or (newest.size, newest.root) == (kept.size, kept.root)
    finally:
        second.stop()


def test_a_removed_record_of_what_the_key_signed_is_said_once(
    store: dict[str, str], tmp_path: Path
) -> None:
    """Issue 22: with ``log.key.signed`` removed while the store keeps its checkpoints, the
    server cannot check the store against what its key signed: it says so once
    (``signed_checkpoint_missing``) and writes the record again when it next signs."""
    keys = tmp_path / "keys"
    keys.mkdir()
    log_key = keys / "log.key"
    key = load_or_create(log_key)[0].verifier.vkey
    data = tmp_path / "data"
    flags = ("--log-key", str(log_key), *FAST_CHECKPOINTS)
    first = ServeProcess(data, *flags, environ=store)
    try:
        seated_table(first, "t1", PLAYERS)
        play_round(first, "t1")
        kept = signed_head(first, key, first.stored_events())
    finally:
        first.stop()
    (keys / "log.key.signed").unlink()
    second = ServeProcess(data, *flags, environ=store)
    try:
        play_round(second, "t1")
        signed_head(second, key, kept.size + 1)
        wait_until(lambda: (keys / "log.key.signed").exists(), "the record written again")
        assert sum("signed_checkpoint_missing" in line for line in second.lines) == 1
    finally:
        second.stop()
