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
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import psycopg
import pytest

from domain.chain import canonical, link
from domain.ids import round_uuid
from domain.signed_note import Verifier
from service._generated.thirteen.v1 import (
    audit_pb2,
    audit_pb2_grpc,
    table_pb2_grpc,
    transparency_pb2,
    transparency_pb2_grpc,
    wallet_pb2_grpc,
)
from service.transparency.keys import load_or_create
from service.transparency.log import LogOptions
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
from tests.support.seed_key import ensure_seed_key
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
PLAYERS = {"ann": 5000, "bo": 5000, "cy": 5000}


# Clients -------------------------------------------------------------------------------------


def checkpoint(server: Any) -> str:
    return str(
        server.transparency.GetCheckpoint(transparency_pb2.GetCheckpointRequest()).checkpoint
    )


def vkey(server: ServerThread) -> str:
    return server.log_key.verifier.vkey


def play_round(server: Any, table_id: str) -> str:
    dealt = deal(server, table_id)
    arrange_well(server, dealt)
    reveal(server, dealt.round_id)
    return str(dealt.round_id)


def signed_head(server: Any, key: str, at_least: int = 1) -> Head:
    """The latest checkpoint, once it is signed by ``key`` and holds ``at_least`` events."""

    def ready() -> Head | None:
        try:
            head = signed_by(checkpoint(server), key)
        except grpc.RpcError:
            return None
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


def test_checkpoints_advance_as_rounds_are_played_and_each_extends_the_one_before(server):
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


def test_every_event_of_a_round_is_proven_in_the_signed_tree(server):
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


def test_proofs_outside_the_signed_tree_are_refused_with_their_reasons(server):
    seated_table(server, "t1", PLAYERS)
    play_round(server, "t1")
    head = signed_head(server, vkey(server))
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


def test_checkpoints_survive_a_restart_and_the_next_extends_the_last(start_server):
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


class ServeProcess:
    """``thirteen serve`` in a process of its own, to be killed with SIGKILL."""

    def __init__(self, data: Path, environ: dict[str, str]) -> None:
        ensure_seed_key(data / "seed.key")
        self.process = subprocess.Popen(
            [str(SCRIPT), "serve", "--address", "127.0.0.1:0", "--data", str(data)]  # noqa: RUF005
            + ["--checkpoint-interval", "0.2"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **environ},
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
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port[0]}")
        self.wallets = wallet_pb2_grpc.WalletServiceStub(self.channel)
        self.tables = table_pb2_grpc.TableServiceStub(self.channel)
        self.audit = audit_pb2_grpc.AuditServiceStub(self.channel)
        self.transparency = transparency_pb2_grpc.TransparencyServiceStub(self.channel)

    def kill(self) -> None:
        self.channel.close()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        self.channel.close()
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)


@pytest.fixture
def serve(store: dict[str, str], tmp_path: Path) -> Iterator[Callable[[], ServeProcess]]:
    started: list[ServeProcess] = []

    def start() -> ServeProcess:
        started.append(ServeProcess(tmp_path / "served", store))
        return started[-1]

    yield start
    for process in started:
        if process.process.poll() is None:
            process.process.kill()


def test_checkpoints_survive_kill_9_and_the_next_extends_the_last(serve, tmp_path):
    first = serve()
    key = next(line for line in first.lines if "created the log key file" in line)
    key = key.split("public key, for audits and witnesses: ")[1].split()[0]
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


def test_an_export_audits_offline_with_the_log_key_and_fails_with_another(server, tmp_path):
    seated_table(server, "t1", PLAYERS)
    round_id = play_round(server, "t1")
    document = export(server, round_id)
    assert document["format"] == "thirteen-round-export/2"
    passed = audit_offline(tmp_path, document, "--log-public-key", vkey(server))
    assert passed.status == 0, passed.stdout + passed.stderr
    assert all(f["ok"] for f in passed.log_findings()) and len(passed.log_findings()) == 2
    other = subprocess.run(
        [str(SCRIPT), "keys", "init", str(tmp_path / "other")], capture_output=True, text=True
    )
    assert other.returncode == 0, other.stderr
    refused = audit_offline(tmp_path, document, "--log-public-key", str(tmp_path / "other/log.pub"))
    assert refused.status == 1, refused.stdout + refused.stderr
    assert any(not f["ok"] and "not trusted" in f["message"] for f in refused.log_findings())


def test_an_event_altered_in_the_export_even_with_relinked_chains_fails_the_log_check(
    server, tmp_path
):
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


def test_a_version_1_export_audits_as_before_and_says_the_log_was_not_checked(server, tmp_path):
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
def test_a_rewritten_round_is_caught_offline_by_the_log(start_server, store, tmp_path, tree):
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


# Witnesses -----------------------------------------------------------------------------------

WITNESS = Witness("witness.test/w1", bytes(range(32)))
STRANGER = Witness("witness.test/stranger", bytes(range(1, 33)))


def test_a_known_witness_cosignature_is_kept_and_others_are_refused(store, tmp_path):
    data = tmp_path / "data"
    key = load_or_create(data / "log.key")[0]
    witness = Verifier.parse(WITNESS.vkey)
    server = ServerThread(
        data,
        store,
        ManualClock(),
        transparency=LogOptions(key, (witness,), checkpoint_interval=0.2),
    )
    try:
        seated_table(server, "t1", PLAYERS)
        head = signed_head(server, key.verifier.vkey)
        note = checkpoint(server)
        add = server.transparency.AddCosignature
        cosigned = note + WITNESS.cosign(head.text, 1_700_000_000)
        answer = add(transparency_pb2.AddCosignatureRequest(checkpoint_cosignature=cosigned))
        assert answer.checkpoint == cosigned
        if read_checkpoint(checkpoint(server)).size == head.size:
            assert checkpoint(server) == cosigned
        # A stranger's key, a forged signature, a checkpoint the log never signed.
        cases = {
            "UNKNOWN_WITNESS_KEY": note + STRANGER.cosign(head.text, 1_700_000_000),
            "INVALID_COSIGNATURE": note + WITNESS.cosign(head.text, 1_700_000_001, forge=True),
        }
        other_root = head.text.replace(head.text.split("\n")[2], "A" * 43 + "=")
        cases["INVALID_COSIGNATURE "] = other_root + "\n" + WITNESS.cosign(other_root, 5)
        for reason, text in cases.items():
            with pytest.raises(grpc.RpcError) as refused:
                add(transparency_pb2.AddCosignatureRequest(checkpoint_cosignature=text))
            found = Refusal.of(refused.value)
            assert found.reason == reason.strip(), (reason, found)
            code = (
                grpc.StatusCode.PERMISSION_DENIED
                if reason.startswith("UNKNOWN")
                else (grpc.StatusCode.INVALID_ARGUMENT)
            )
            assert found.code == code
    finally:
        server.stop()


# PostgreSQL replicas -------------------------------------------------------------------------


def test_replicas_share_one_tree_one_signs_at_a_time_and_another_takes_over(tmp_path):
    with store_environ("postgres", tmp_path) as environ:
        clock = ManualClock()
        servers = [ServerThread(tmp_path / "data", environ, clock) for _ in range(2)]
        try:
            key = vkey(servers[0])
            assert vkey(servers[1]) == key  # every replica is given the same log key file
            seated_table(servers[0], "t1", PLAYERS)
            heads = []
            for n in range(4):  # rounds through both replicas
                play_round(servers[n % 2], "t1")
                at_least = heads[-1].size + 1 if heads else 1
                heads.append(signed_head(servers[(n + 1) % 2], key, at_least))
            leading = [s.running.transparency.leading for s in servers]
            assert sorted(leading) == [False, True], leading
            for older, newer in itertools.pairwise(heads):
                assert_extends(servers[0], older, newer)
            leader = servers[leading.index(True)]
            other = servers[leading.index(False)]
            leader.stop()  # its advisory lock goes with its session: the other takes over
            play_round(other, "t1")
            after = signed_head(other, key, heads[-1].size + 1)
            assert_extends(other, heads[-1], after)
            assert other.running.transparency.leading
        finally:
            for server in servers:
                server.stop()
