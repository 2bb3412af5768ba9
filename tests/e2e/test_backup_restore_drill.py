"""The backup and restore drill (issue 23), on both stores: a backup taken while rounds play
(SQLite: ``thirteen backup``, SQLite's online backup; PostgreSQL: ``pg_dump`` of the schema, as
docs/operating/backup.md says), restored into a fresh place (``thirteen restore``; ``pg_restore``
into another database), served again: every round acknowledged before the backup began is
there, ``thirteen audit --all`` passes, and the transparency log is explicit about what it is.
The old log key's record of what it signed (``log.key.signed``) is past the restored tree, so
under its old name the log signs nothing (it would fork what witnesses hold); the documented
step starts a new log (``keys init --name``, ``--new-log``), which a witness of the old log
reports as another log, not as a fork, and a witness given its key cosigns."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import psycopg
import pytest

from service._generated.thirteen.v1 import table_pb2
from tests.e2e.helpers import get_round, seated_table, wait_until
from tests.e2e.test_transparency import play_round, signed_head
from tests.support.cli import thirteen
from tests.support.serve_process import ServeProcess
from tests.support.stores import PG

FAST = ("--checkpoint-interval", "0.2")
PLAYERS = {"ann": 10**6, "bo": 10**6, "cy": 10**6}


def pg_tool(name: str) -> str:
    """``pg_dump`` or ``pg_restore``; the test skips without it, except in CI."""
    found = shutil.which(name) or next(
        (str(p) for p in sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))), None
    )
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{name} is not installed (Debian: postgresql-client)")
        pytest.skip(f"{name} is not installed")
    return found


class Play:
    """Rounds played on ``server`` in a thread until stopped; the rounds acknowledged so far."""

    def __init__(self, server: ServeProcess) -> None:
        self.server = server
        self.acknowledged: list[str] = []
        self.failure: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self.acknowledged.append(play_round(self.server, "t1"))
        except BaseException as error:  # seen by the test
            self.failure = error

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)
        assert self.failure is None, self.failure


@contextlib.contextmanager
def fresh_database(store: dict[str, str]) -> Iterator[dict[str, str]]:
    """Another PostgreSQL database to restore into: the same schema name, nothing in it."""
    name = f"restore_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(autocommit=True, **PG) as db:
        db.execute(f'CREATE DATABASE "{name}"')
    try:
        yield {**store, "POSTGRES_DBNAME": name}
    finally:
        with psycopg.connect(autocommit=True, **PG) as db:
            db.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def back_up(store: dict[str, str], data: Path, target: Path) -> None:
    if store["THIRTEEN_STORE"] == "sqlite":
        done = thirteen("backup", "--data", data, target, env=store)
        assert done.returncode == 0, done.stderr
        assert not (target / "keys").exists()  # never the keys unless asked
        return
    done = subprocess.run(
        [
            *(pg_tool("pg_dump"), "--format=custom", f"--schema={store['POSTGRES_SCHEMA']}"),
            *(f"--file={target}", "--host", PG["host"], "--port", str(PG["port"])),
            *("--username", PG["user"], PG["dbname"]),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def put_back(store: dict[str, str], source: Path, data: Path, restored: dict[str, str]) -> None:
    if store["THIRTEEN_STORE"] == "sqlite":
        done = thirteen("restore", source, "--data", data, env=store)
        assert done.returncode == 0, done.stderr
        assert "start a new log: `thirteen keys init DIR --name NEW`" in done.stdout
    else:
        done = subprocess.run(
            [
                *(pg_tool("pg_restore"), f"--dbname={restored['POSTGRES_DBNAME']}"),
                *("--host", PG["host"], "--port", str(PG["port"]), "--username", PG["user"]),
                *("--no-owner", str(source)),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        data.mkdir()


def witness(
    address: str, log_pub: Path, key: Path, state: Path
) -> subprocess.CompletedProcess[str]:
    return thirteen(
        "witness", "--log", address, "--log-public-key", log_pub.read_text().strip(),
        "--key", key, "--state", state, "--once", timeout=60,
    )  # fmt: skip


def test_a_backup_taken_while_rounds_play_restores_audits_and_starts_a_new_log(
    tmp_path: Path, store: dict[str, str]
) -> None:
    keys, data, copy = tmp_path / "keys", tmp_path / "data", tmp_path / "backup"
    assert thirteen("keys", "init", keys, "--name", "thirteen.test/drill").returncode == 0
    assert thirteen("keys", "init", tmp_path / "w", "--witness").returncode == 0
    watched = ("--witness-key", str(tmp_path / "w" / "witness.pub"), *FAST)
    old_key = ("--log-key", str(keys / "log.key"), *watched)
    server = ServeProcess(data, *old_key, environ=store)
    first_witness = tmp_path / "w" / "state"
    try:
        seated_table(server, "t1", PLAYERS)
        play = Play(server)
        wait_until(lambda: len(play.acknowledged) >= 3, "three rounds played", 120)
        before = list(play.acknowledged)  # acknowledged before the backup began
        back_up(store, data, copy)
        done = len(play.acknowledged)  # those acknowledged while it ran may be in it or not
        wait_until(lambda: len(play.acknowledged) >= done + 3, "rounds after it", 120)
        play.stop()
        last = signed_head(server, (keys / "log.pub").read_text().strip(), server.stored_events())
        assert witness(server.address, keys / "log.pub", tmp_path / "w" / "witness.key",
                       first_witness).returncode == 0  # fmt: skip
    finally:
        server.stop()
    after = play.acknowledged[done:]  # acknowledged once the backup was made

    with contextlib.ExitStack() as stack:
        restored_store = (
            stack.enter_context(fresh_database(store))
            if store["THIRTEEN_STORE"] == "postgres"
            else store
        )
        restored = tmp_path / "restored"
        put_back(store, copy, restored, restored_store)
        shutil.copy2(data / "seed.key", restored / "seed.key")  # kept apart, put back

        # Under the old name the log signs nothing: it signed past the restored tree.
        again = ServeProcess(restored, *old_key, environ=restored_store)
        try:
            wait_until(
                lambda: any("transparency_log_rewritten" in x for x in again.lines),
                "the old key to refuse the restored, older history",
                60,  # its first signature comes after start-up and catch-up, slow when loaded
            )
        finally:
            again.stop()

        # The documented step: a new log, on purpose.
        new_keys = tmp_path / "keys-2"
        made = thirteen("keys", "init", new_keys, "--name", "thirteen.test/drill-2")
        assert made.returncode == 0
        new_key = ("--log-key", str(new_keys / "log.key"), "--new-log", *watched)
        served = ServeProcess(restored, *new_key, environ=restored_store)
        try:
            for round_id in before:
                assert get_round(served, round_id).phase == table_pb2.ROUND_PHASE_REVEALED
            lost = 0
            for round_id in after:
                try:
                    get_round(served, round_id)
                except grpc.RpcError:
                    lost += 1
            assert lost >= 1  # what was played after the backup is not in it
            seated_table(served, "t2", {"di": 1000, "ed": 1000})  # t1 may hold a round the
            play_round(served, "t2")  # backup caught between its deal and reveal: play goes on
            new_pub = (new_keys / "log.pub").read_text().strip()
            head = signed_head(served, new_pub, served.stored_events())
            assert head.origin == "thirteen.test/drill-2"
            assert head.size < last.size + len(after) * 20  # one tree, another name

            # The old log's witness: another log, not a fork; a witness of the new one cosigns.
            seen = witness(served.address, keys / "log.pub", tmp_path / "w" / "witness.key",
                           first_witness)  # fmt: skip
            assert seen.returncode == 1, seen.stderr
            assert "a new log, not a fork of this one" in seen.stderr and "ALARM" not in seen.stderr
            fresh = witness(served.address, new_keys / "log.pub", tmp_path / "w" / "witness.key",
                            tmp_path / "w" / "state-2")  # fmt: skip
            assert fresh.returncode == 0, fresh.stderr
        finally:
            served.stop()
        audited = thirteen("audit", "--data", restored, "--all", env=restored_store)
        assert audited.returncode == 0, audited.stdout + audited.stderr
