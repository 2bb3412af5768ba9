"""``thirteen backup`` and ``thirteen restore`` of a SQLite store (issue 23): a consistent copy
of a live store with SQLite's online backup, while ``serve`` runs, and putting it back into a
place that holds no store. The key files stay out unless asked (``--include-keys``): the seed
key and the store together predict every table's next deal. A PostgreSQL store is backed up
with ``pg_dump`` (docs/operating/backup.md)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from service.small_files import replace_private
from service.transparency.remembered import restored_beside

EVENTS = "thirteen.sqlite"
VIEWS = "views.sqlite"
MANIFEST = "backup.json"
FORMAT = "thirteen-backup/1"
KEYS = "keys"
"""The folder of a backup that holds key files, when ``--include-keys`` put them there."""


class BackupError(ValueError):
    """A backup or restore that cannot be made; the one-line message says why."""


def _online_copy(source: Path, target: Path) -> None:
    """A consistent copy of the SQLite database ``source`` at ``target`` (its WAL included),
    read while others write it: one step, in one read transaction, which in WAL mode holds up
    no writer (copied in several steps, a write by the server between two would start the
    copy again, and under load it might never end)."""
    with (
        closing(sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=30)) as live,
        closing(sqlite3.connect(target)) as copy,
    ):
        live.backup(copy)
        copy.execute("PRAGMA journal_mode=DELETE")  # one file, whole


def _facts(events: Path) -> dict[str, Any]:
    """What the copied events file holds: events and the log's size and latest checkpoint."""
    with closing(sqlite3.connect(f"file:{events}?mode=ro", uri=True)) as db:
        (count,) = db.execute("SELECT COALESCE(MAX(rowid), 0) FROM stored_events").fetchone()
        found: dict[str, Any] = {"events": int(count), "log_size": None, "checkpoint": None}
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        if "tlog_state" in tables:
            sizes = dict(db.execute("SELECT name, value FROM tlog_state").fetchall())
            found["log_size"] = int(sizes.get("size", 0))
        if "tlog_checkpoints" in tables:
            row = db.execute(
                "SELECT size, note FROM tlog_checkpoints ORDER BY size DESC LIMIT 1"
            ).fetchone()
            if row is not None:
                found["checkpoint"] = {"size": int(row[0]), "note": str(row[1])}
    return found


def backup(
    data: Path,
    target: Path,
    key_files: list[Path],
    say: Callable[[str], None],
    log_key: Path | None = None,
) -> dict[str, Any]:
    """Copy the store under ``data`` into the new directory ``target``: the views first, then
        the events (so the views never hold an event the copied log lacks: a restored server's
        projector goes on from the views' position), each with SQLite's online backup; then
        ``key_files`` (those that exist) into ``target/keys``, ``log_key`` (one of them) named in
    the manifest as the log's key. The manifest written last says what
        the backup holds; a backup without it is incomplete."""
    events = data / EVENTS
    if not events.is_file():
        raise BackupError(f"no event store in {data} (expected {events})")
    if target.exists() and any(target.iterdir()):
        raise BackupError(f"{target} exists and is not empty: a backup goes into a new directory")
    target.mkdir(mode=0o700, parents=True, exist_ok=True)
    copied = []
    if (data / VIEWS).is_file():
        _online_copy(data / VIEWS, target / VIEWS)
        copied.append(VIEWS)
    _online_copy(events, target / EVENTS)
    copied.append(EVENTS)
    for name in copied:
        (target / name).chmod(0o600)
    keys = []
    for key_file in key_files:
        if key_file.is_file():
            (target / KEYS).mkdir(mode=0o700, exist_ok=True)
            shutil.copy2(key_file, target / KEYS / key_file.name)
            (target / KEYS / key_file.name).chmod(0o600)
            keys.append(key_file.name)
    manifest = {
        "format": FORMAT,
        "made_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "from": str(data),
        "files": copied,
        "keys": keys,
        "log_key": log_key.name if log_key is not None and log_key.name in keys else None,
        **_facts(target / EVENTS),
    }
    (target / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    say(
        f"backed up {manifest['events']} events"
        + (" and the views" if VIEWS in copied else "")
        + f" of {data} into {target}"
        + (f", with the key files {', '.join(keys)} in {target / KEYS}" if keys else "")
    )
    return manifest


def read_manifest(source: Path) -> dict[str, Any]:
    """The manifest of the backup in ``source``; ``BackupError`` when it is not a whole one."""
    try:
        manifest: dict[str, Any] = json.loads((source / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BackupError(
            f"{source} holds no {MANIFEST}: not a backup made by thirteen backup, or not a "
            "whole one"
        ) from None
    except (OSError, ValueError) as error:
        raise BackupError(f"cannot read {source / MANIFEST}: {error}") from None
    if manifest.get("format") != FORMAT:
        raise BackupError(
            f"{source} is a backup of format {manifest.get('format')!r}, not {FORMAT}"
        )
    if not (source / EVENTS).is_file():
        raise BackupError(f"{source} lacks {EVENTS}: the backup is not whole")
    return manifest


def restore(source: Path, data: Path, with_keys: bool) -> dict[str, Any]:
    """Put the backup in ``source`` into ``data``, which holds no store; the key files too with
    ``with_keys`` (into ``data``, where ``serve`` looks by default). Its manifest."""
    manifest = read_manifest(source)
    if (data / EVENTS).exists():
        raise BackupError(
            f"{data} holds a store already ({data / EVENTS}): restore into a new directory, "
            "never over a store"
        )
    data.mkdir(mode=0o700, parents=True, exist_ok=True)
    for name in manifest["files"]:
        partial = data / f".{name}.restoring"
        shutil.copyfile(source / name, partial)
        partial.chmod(0o600)
        partial.replace(data / name)
    if with_keys:
        for name in manifest["keys"]:
            if (data / name).exists():
                raise BackupError(f"{data / name} exists: a key file is never replaced")
            shutil.copy2(source / KEYS / name, data / name)
            (data / name).chmod(0o600)
        log_key = restored_log_key(manifest)
        if log_key is not None:
            _mark_restored(data / log_key, manifest)
    return manifest


def restored_log_key(manifest: dict[str, Any]) -> str | None:
    """The name of the log key file among the backup's keys (``log.key`` in a backup made
    before the manifest named it), or None."""
    keys = manifest.get("keys") or []
    name = manifest.get("log_key", "log.key")
    return name if isinstance(name, str) and name in keys and Path(name).name == name else None


def _mark_restored(key_file: Path, manifest: dict[str, Any]) -> None:
    """Mark the log key put back in ``key_file`` (``service.transparency.remembered.RESTORED``):
    it comes without its record of what it signed after the backup, so the log signs nothing
    under its name until the operator removes the mark or starts a new log."""
    checkpoint = manifest.get("checkpoint") or {}
    replace_private(
        restored_beside(key_file),
        f"{key_file.name} was put back by thirteen restore from a backup made "
        f"{manifest.get('made_at')} (its last checkpoint: {checkpoint.get('size')} events). "
        "The log signs nothing under this key's name while this file is here: start a new log "
        "(docs/operating/keys.md), or remove this file if the key signed nothing after the "
        "backup.\n",
    )
