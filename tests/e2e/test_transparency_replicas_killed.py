"""Issue 12 re-attacked from outside: two ``thirteen serve`` replicas on one PostgreSQL schema
share one log key, rounds are played through both, and whichever leads the log is killed with
SIGKILL, again and again, while a real ``thirteen witness`` keeps cosigning. Every checkpoint
ever stored must extend every earlier one (the log never signs two inconsistent checkpoints,
whoever signs), the witness never alarms, and ``audit --all`` passes with the log's key."""

from __future__ import annotations

import itertools
import signal
from pathlib import Path

import psycopg

from tests.e2e.helpers import seated_table, wait_until
from tests.e2e.test_transparency import (
    PLAYERS,
    audit_store,
    checkpoint,
    consistency,
    play_round,
    signed_head,
)
from tests.e2e.test_witness import Serve, background_witness, cosigned_at, keys
from tests.support.stores import PG, store_environ
from tests.support.tlog import consistent, read_checkpoint


def stored_checkpoints(environ: dict[str, str]) -> list[str]:
    table = f'"{environ["POSTGRES_SCHEMA"]}".tlog_checkpoints'
    with psycopg.connect(autocommit=True, **PG) as db:
        return [str(n) for (n,) in db.execute(f"SELECT note FROM {table} ORDER BY size")]


def test_replicas_killed_while_leading_never_sign_two_inconsistent_checkpoints(
    tmp_path: Path,
) -> None:
    log_pub = keys(tmp_path / "log", "--name", "thirteen.test/replicas")
    witness_pub = keys(tmp_path / "w", "--witness", "--name", "witness.test/w1")
    log_key, witness_file = tmp_path / "log" / "log.key", tmp_path / "w" / "witness.pub"
    data = tmp_path / "data"
    with store_environ("postgres", tmp_path) as environ:

        def serve() -> Serve:
            return Serve(data, log_key, witness_file, environ=environ)

        replicas = [serve(), serve()]
        watcher = background_witness(
            replicas[0].address, log_pub, tmp_path / "w" / "witness.key", tmp_path / "state"
        )
        try:
            seated_table(replicas[0], "t1", PLAYERS)
            sizes = [signed_head(replicas[0], log_pub).size]
            for turn in range(4):
                play_round(replicas[turn % 2], "t1")
                play_round(replicas[(turn + 1) % 2], "t1")
                sizes.append(signed_head(replicas[1], log_pub, sizes[-1] + 1).size)
                victim = 1 if turn % 2 else 0  # each replica is killed in its turn
                if victim == 0:
                    watcher.send_signal(signal.SIGKILL)  # it follows replica 0: it goes too
                    watcher.wait()
                replicas[victim].channel.close()
                replicas[victim].process.send_signal(signal.SIGKILL)
                replicas[victim].process.wait()
                play_round(replicas[1 - victim], "t1")  # the other takes over the log
                replicas[victim] = serve()
                if victim == 0:
                    watcher = background_witness(
                        replicas[0].address,
                        log_pub,
                        tmp_path / "w" / "witness.key",
                        tmp_path / "state",
                    )
            last = signed_head(replicas[0], log_pub, sizes[-1] + 1)

            def cosigned() -> bool:
                note = checkpoint(replicas[0])
                head = read_checkpoint(note)
                return head.size >= last.size and cosigned_at(note, witness_pub) is not None

            wait_until(cosigned, "the witness to cosign the last checkpoint", 30)
            assert watcher.poll() is None, watcher.communicate()
        finally:
            if watcher.poll() is None:
                watcher.kill()
            _, err = watcher.communicate()
            for replica in replicas:
                replica.stop()
        assert "ALARM" not in err, err
        heads = [read_checkpoint(note) for note in stored_checkpoints(environ)]
        assert len(heads) >= 6, [h.size for h in heads]
        replica = serve()
        try:
            for older, newer in itertools.pairwise(heads):
                proof = consistency(replica, older.size, newer.size)
                assert consistent(older.size, newer.size, older.root, newer.root, proof)
        finally:
            replica.stop()
        audited = audit_store(environ, data, "--all", "--log-public-key", log_pub)
        assert audited.status == 0, audited.stdout[-2000:] + audited.stderr
