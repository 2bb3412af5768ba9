"""Attacks from outside on what landed for issue 23's keys, backups and status: the real
``thirteen`` command line, as a hostile or unlucky operator runs it. Each test is one finding
and fails on the code as found. Backup and restore are SQLite's (PostgreSQL's is ``pg_dump``);
``status`` is tried on both stores."""

from __future__ import annotations

import json
import resource
import shutil
import signal
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
import psycopg
import pytest

from service._generated.thirteen.v1 import transparency_pb2, transparency_pb2_grpc
from tests.e2e.helpers import credit, wait_until
from tests.support.cli import SCRIPT, thirteen
from tests.support.serve_process import ServeProcess
from tests.support.stores import PG

FAST = ("--checkpoint-interval", "0.2")
REFUSALS = (
    "transparency_log_rewritten",
    "transparency_log_inconsistent",
    "log_key_conflict",
    "log_key_foreign",
)

V1_STORE = Path(__file__).parents[1] / "fixtures" / "v1_store"


def one_line_refusal(done: subprocess.CompletedProcess[str]) -> str:
    """The one line of a refusal: exit status 2, no traceback, one line (JSON log lines aside)."""
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = [x for x in done.stderr.strip().splitlines() if not x.startswith("{")]
    assert len(lines) == 1, done.stderr
    return lines[0]


def made_backup(tmp_path: Path) -> Path:
    """A whole backup of a copy of the first release's store."""
    data = tmp_path / "data"
    shutil.copytree(V1_STORE, data)
    target = tmp_path / "backup"
    done = thirteen("backup", "--data", data, target)
    assert done.returncode == 0, done.stderr
    return target


def edit_manifest(backup: Path, change: Any) -> None:
    manifest = json.loads((backup / "backup.json").read_text(encoding="utf-8"))
    (backup / "backup.json").write_text(json.dumps(change(manifest)), encoding="utf-8")


# Restore ----------------------------------------------------------------------------------


def test_restore_refuses_a_backup_whose_events_file_is_truncated(tmp_path: Path) -> None:
    """A backup whose ``thirteen.sqlite`` was cut short (a copy that ran out of space, a torn
    transfer) is restored with exit status 0 and "restored 110 events"; the restored store then
    does not open (``status``: "database disk image is malformed"). Restore must check what it
    puts back (the manifest's event count, SQLite's integrity) and refuse, writing nothing."""
    backup = made_backup(tmp_path)
    events = backup / "thirteen.sqlite"
    with events.open("r+b") as file:
        file.truncate(events.stat().st_size // 3)
    restored = tmp_path / "restored"
    done = thirteen("restore", backup, "--data", restored)
    assert "thirteen.sqlite" in one_line_refusal(done)
    assert not (restored / "thirteen.sqlite").exists()


def test_restore_refuses_a_manifest_that_lists_no_events_file(tmp_path: Path) -> None:
    """An edited manifest whose ``files`` is empty: restore says "restored 110 events" and exits
    0, having restored nothing (the data directory is empty). It must refuse."""
    backup = made_backup(tmp_path)
    edit_manifest(backup, lambda m: {**m, "files": []})
    restored = tmp_path / "restored"
    done = thirteen("restore", backup, "--data", restored)
    one_line_refusal(done)
    assert not (restored / "thirteen.sqlite").exists()


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda m: {k: v for k, v in m.items() if k != "files"}, id="no-files"),
        pytest.param(lambda m: {k: v for k, v in m.items() if k != "events"}, id="no-events"),
        pytest.param(lambda m: [m], id="a-list"),
        pytest.param(lambda m: None, id="null"),
    ],
)
def test_restore_of_an_edited_manifest_is_one_line_not_a_traceback(
    tmp_path: Path, change: Any
) -> None:
    """A manifest that is JSON but not the backup's object (a key missing, a list, null): a
    KeyError or AttributeError traceback, exit status 1. One line, exit status 2, nothing
    written."""
    backup = made_backup(tmp_path)
    edit_manifest(backup, change)
    restored = tmp_path / "restored"
    done = thirteen("restore", backup, "--data", restored)
    one_line_refusal(done)
    assert not (restored / "thirteen.sqlite").exists()


def test_restore_never_writes_a_key_file_outside_the_data_directory(tmp_path: Path) -> None:
    """``restore --include-keys`` copies each name of the manifest's ``keys`` to ``<data>/NAME``
    unchecked: a backup (from elsewhere, or edited) naming ``../evil`` writes a file beside the
    data directory, exit status 0. A key name must be a plain file name; others are refused."""
    backup = made_backup(tmp_path)
    (backup / "keys").mkdir()
    (backup / "evil").write_text("written outside the data directory\n", encoding="utf-8")
    edit_manifest(backup, lambda m: {**m, "keys": ["../evil"]})
    outside = tmp_path / "outside"
    outside.mkdir()
    done = thirteen("restore", backup, "--data", outside / "restored", "--include-keys")
    assert not (outside / "evil").exists(), "restore wrote outside --data"
    one_line_refusal(done)


def test_a_restore_refused_for_a_key_file_there_writes_no_store(tmp_path: Path) -> None:
    """The operator put the seed key in place first, then ``restore --include-keys``: exit
    status 2 ("seed.key exists: a key file is never replaced"), but only after the events and
    views were copied in; run again (without the key), it is refused once more, as the
    directory now "holds a store already". A refusal must write nothing: check the key files
    before copying anything."""
    data = tmp_path / "data"
    shutil.copytree(V1_STORE, data)
    (tmp_path / "keys").mkdir()
    seed_key = tmp_path / "keys" / "seed.key"
    assert thirteen("seed-key", "init", seed_key).returncode == 0
    backup = tmp_path / "backup"
    made = thirteen("backup", "--data", data, backup, "--include-keys", "--seed-key", seed_key)
    assert made.returncode == 0, made.stderr
    restored = tmp_path / "restored"
    restored.mkdir()
    shutil.copy(seed_key, restored / "seed.key")
    done = thirteen("restore", backup, "--data", restored, "--include-keys")
    one_line_refusal(done)
    assert sorted(p.name for p in restored.iterdir()) == ["seed.key"]


# Backup -----------------------------------------------------------------------------------


def _no_room() -> None:
    """A file size limit in the child: writes past 40 kB fail as on a full disk."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (40_000, 40_000))


def test_a_backup_that_runs_out_of_room_says_so_and_leaves_nothing(tmp_path: Path) -> None:
    """On a full disk ``backup`` exits 1 with "disk I/O error" (naming neither the file nor the
    target), and leaves the target with a half-written ``views.sqlite`` (mode 0644, unlike the
    0600 it promises) and no manifest; the retry once room is made is refused ("exists and is
    not empty") until the operator cleans up by hand. It must say which file could not be
    written and remove what it made."""
    data = tmp_path / "data"
    shutil.copytree(V1_STORE, data)
    target = tmp_path / "backup"
    assert SCRIPT is not None
    done = subprocess.run(
        [SCRIPT, "backup", "--data", str(data), str(target)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=_no_room,
    )
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert str(target) in done.stderr, done.stderr
    assert not target.exists() or not any(target.iterdir()), sorted(target.iterdir())
    again = thirteen("backup", "--data", data, target)
    assert again.returncode == 0, again.stderr


def test_a_backup_of_a_file_that_is_not_a_store_is_refused_and_writes_nothing(
    tmp_path: Path,
) -> None:
    """``thirteen.sqlite`` that is not a database: exit status 1 ("file is not a database"),
    and the target directory is made, holding a ``thirteen.sqlite`` of its own. Bad input: exit
    status 2, one line, nothing written."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "thirteen.sqlite").write_text("not a database\n", encoding="utf-8")
    target = tmp_path / "backup"
    done = thirteen("backup", "--data", data, target)
    one_line_refusal(done)
    assert not target.exists()


# Status -----------------------------------------------------------------------------------


def test_status_of_a_file_that_is_not_a_store_is_bad_input(tmp_path: Path) -> None:
    """``thirteen.sqlite`` holding text: ``status`` exits 1, as for a fault of its own; it is
    the operator's input, exit status 2."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "thirteen.sqlite").write_text("not a database\n", encoding="utf-8")
    one_line_refusal(thirteen("status", "--data", data))


def _tables(schema: str) -> list[str]:
    with psycopg.connect(connect_timeout=3, autocommit=True, **PG) as conn:
        rows = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
            (schema,),
        ).fetchall()
    return sorted(str(row[0]) for row in rows)


def test_status_of_an_empty_postgres_schema_writes_nothing(
    tmp_path: Path, store: dict[str, str]
) -> None:
    """``status`` "reads, and writes nothing", but on an empty PostgreSQL schema (a mistyped
    ``POSTGRES_SCHEMA``) it creates the event table ``thirteen_events`` and reports a store of
    0 events. It must leave the schema as it was (and say no store is there)."""
    if store["THIRTEEN_STORE"] != "postgres":
        pytest.skip("SQLite's empty directory is refused (tested in test_upgrade)")
    schema = store["POSTGRES_SCHEMA"]
    before = _tables(schema)
    thirteen("status", "--data", tmp_path, env=store)
    assert _tables(schema) == before


def test_status_of_a_postgres_schema_that_does_not_exist_is_bad_input(
    tmp_path: Path, store: dict[str, str]
) -> None:
    """``POSTGRES_SCHEMA`` naming no schema: exit status 1 ("cannot open the event store"), as
    for a fault; it is the operator's input: exit status 2, one line."""
    if store["THIRTEEN_STORE"] != "postgres":
        pytest.skip("a PostgreSQL setting")
    env = {**store, "POSTGRES_SCHEMA": store["POSTGRES_SCHEMA"] + "_missing"}
    one_line_refusal(thirteen("status", "--data", tmp_path, env=env))


# Keys -------------------------------------------------------------------------------------


def test_keys_init_into_a_file_names_the_file(tmp_path: Path) -> None:
    """``keys init PATH`` where PATH is a file: "thirteen keys init: 17 exists: a key file is
    never replaced" (the errno, not the path)."""
    path = tmp_path / "a-file"
    path.write_text("", encoding="utf-8")
    line = one_line_refusal(thirteen("keys", "init", path))
    assert str(path) in line, line


def test_a_start_refused_for_a_bad_log_key_makes_no_seed_key_and_no_store(
    tmp_path: Path,
) -> None:
    """A fresh SQLite directory with a ``log.key`` that is not a key: ``serve`` exits 2 but
    first makes ``seed.key`` and ``thirteen.sqlite`` and prints two lines (the seed key's
    creation, then the refusal). A refusal is one line and writes nothing."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "log.key").write_text("garbage\n", encoding="utf-8")
    done = thirteen("serve", "--address", "127.0.0.1:0", "--data", data, timeout=60)
    one_line_refusal(done)
    assert sorted(p.name for p in data.iterdir()) == ["log.key"]


# The log key through a backup -------------------------------------------------------------


def _checkpoint(server: ServeProcess) -> tuple[str, int] | None:
    """The served checkpoint's (origin, size), or None before one is signed."""
    try:
        note = server.transparency.GetCheckpoint(transparency_pb2.GetCheckpointRequest()).checkpoint
    except grpc.RpcError:
        return None
    if not note:
        return None
    origin, size = note.split("\n")[:2]
    return origin, int(size)


def _signed_past(server: ServeProcess, size: int) -> tuple[str, int] | None:
    found = _checkpoint(server)
    return found if found is not None and found[1] > size else None


def test_a_log_key_restored_with_include_keys_does_not_sign_a_fork(tmp_path: Path) -> None:
    """The documented round trip: ``backup --include-keys`` (the log key is in the data
    directory, its default), the log signs on, the store is lost, ``restore --include-keys``,
    ``serve``. The restored key comes back without its record of what it signed
    (``log.key.signed`` is left out on purpose), so nothing stops it: the restored server signs
    new checkpoints under the old name over a history that lacks what the old log's later
    checkpoints covered: two inconsistent checkpoints by one key, a fork that every witness of
    the log alarms on. Only a printed sentence warns. The log key must not sign a restored
    store under its old name unless the operator says it signed nothing since (or the backup
    must record what lets the log tell)."""
    data = tmp_path / "data"
    first = ServeProcess(data, *FAST)
    try:
        credit(first, "ann", 100, "before-backup")
        at_backup = wait_until(lambda: _checkpoint(first), "a signed checkpoint")
        backup = tmp_path / "backup"
        made = thirteen("backup", "--data", data, backup, "--include-keys")
        assert made.returncode == 0, made.stderr
        in_backup = json.loads((backup / "backup.json").read_text(encoding="utf-8"))
        backed_size = int(in_backup["checkpoint"]["size"])
        for n in range(5):
            credit(first, "bo", 10, f"after-backup-{n}")
        later = wait_until(lambda: _signed_past(first, backed_size), "a checkpoint past the backup")
    finally:
        first.stop()
    assert later[0] == at_backup[0]

    restored = tmp_path / "restored"
    done = thirteen("restore", backup, "--data", restored, "--include-keys")
    assert done.returncode == 0, done.stderr
    second = ServeProcess(restored, *FAST, make_keys=False)
    try:
        for n in range(8):
            credit(second, "cy", 10, f"after-restore-{n}")

        def outcome() -> str | None:
            refused = [x for x in second.lines if any(e in x for e in REFUSALS)]
            if refused:
                return "refused"
            signed = _signed_past(second, backed_size)
            return f"signed {signed}" if signed is not None and signed[0] == later[0] else None

        assert wait_until(outcome, "a signature or a refusal") == "refused", (
            f"the restored key signed under {later[0]} past {backed_size} events, while the old "
            f"log signed {later[1]} events of another history: a fork"
        )
    finally:
        second.stop()


# The witness: a new log or a fork ---------------------------------------------------------


class _Renamed(transparency_pb2_grpc.TransparencyServiceServicer):
    """A log that answers with a checkpoint of another name, signed by nobody."""

    def GetCheckpoint(
        self, request: object, context: object
    ) -> transparency_pb2.GetCheckpointResponse:
        note = "evil.example/log\n1000000\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n"
        return transparency_pb2.GetCheckpointResponse(checkpoint=note)


def test_a_witness_does_not_call_an_unsigned_checkpoint_of_another_name_a_new_log(
    tmp_path: Path,
) -> None:
    """A witness that has cosigned a log is then served, at the log's address, a checkpoint of
    another name that no key signed (no signature line at all). It says "a new log, not a fork
    of this one", exits 1 (no alarm) and keeps no evidence: whoever answers at the address can
    silence every witness of the log this way, and a log that forks its history under a new
    name is waved through the same. A note that is not even signed proves no new log: it is to
    be kept as evidence and alarmed on (exit status 3), or at least not called "not a fork"."""
    data = tmp_path / "data"
    keys = tmp_path / "w"
    assert thirteen("keys", "init", keys, "--witness").returncode == 0
    state = tmp_path / "state"
    server = ServeProcess(data, *FAST, "--witness-key", str(keys / "witness.pub"))
    try:
        credit(server, "ann", 100, "witnessed")
        wait_until(lambda: _checkpoint(server), "a signed checkpoint")
        log_pub = (data / "log.pub").read_text(encoding="utf-8").strip()
        first = thirteen(
            "witness", "--log", server.address, "--log-public-key", log_pub,
            "--key", keys / "witness.key", "--state", state, "--once", timeout=60,
        )  # fmt: skip
        assert first.returncode == 0, first.stderr
    finally:
        server.stop()
    fake = grpc.server(ThreadPoolExecutor(max_workers=2))
    transparency_pb2_grpc.add_TransparencyServiceServicer_to_server(
        _Renamed(),  # type: ignore[abstract]  # the rest answers UNIMPLEMENTED
        fake,
    )
    port = fake.add_insecure_port("127.0.0.1:0")
    fake.start()
    try:
        seen = thirteen(
            "witness", "--log", f"127.0.0.1:{port}", "--log-public-key", log_pub,
            "--key", keys / "witness.key", "--state", state, "--once", timeout=60,
        )  # fmt: skip
    finally:
        fake.stop(None)
    assert "not a fork" not in seen.stderr, seen.stderr
