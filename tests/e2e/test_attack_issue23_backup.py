"""Attacks from outside on what landed for issue 23's backups, restores, status and keys: the real
``thirteen`` command line, as a hostile or unlucky operator runs it. Each test is one finding
and fails on the code as found. Backup and restore are SQLite's (PostgreSQL's is ``pg_dump``);
``status`` is tried on both stores."""

from __future__ import annotations

import json
import resource
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.support.cli import SCRIPT, thirteen
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


def test_a_backup_inside_the_data_directory_is_refused(tmp_path: Path) -> None:
    """A backup into a folder of the data directory is lost with it (and a later backup of
    that directory would copy the earlier ones): refused, one line, nothing written."""
    data = tmp_path / "data"
    shutil.copytree(V1_STORE, data)
    for target in (data / "backups" / "today", data, data / ".." / "data" / "b"):
        line = one_line_refusal(thirteen("backup", "--data", data, target))
        assert "inside the data directory" in line or "not empty" in line, line
    assert not (data / "backups").exists() and not (data / "b").exists()


def test_include_keys_names_the_key_files_it_could_not_find(tmp_path: Path) -> None:
    """A key file named by --seed-key/--log-key that is not there is bad input; a default one
    that is not there (a store with no log yet) is said, not skipped quietly."""
    data = tmp_path / "data"
    shutil.copytree(V1_STORE, data)
    missing = tmp_path / "nowhere.key"
    named = thirteen(
        "backup", "--data", data, "--include-keys", "--log-key", missing, tmp_path / "b1"
    )
    assert str(missing) in one_line_refusal(named)
    assert not (tmp_path / "b1").exists()
    (data / "log.key").unlink(missing_ok=True)
    done = thirteen("backup", "--data", data, "--include-keys", tmp_path / "b2")
    assert done.returncode == 0, done.stderr
    assert f"{data / 'log.key'} is not there: not in the backup" in done.stdout


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
