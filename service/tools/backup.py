"""``thirteen backup`` and ``thirteen restore`` of a SQLite store (issue 23): a consistent copy
of a live store with SQLite's online backup, while ``serve`` runs, and putting it back into a
place that holds no store. The key files stay out unless asked (``--include-keys``): the seed
key and the store together predict every table's next deal. A PostgreSQL store is backed up
with ``pg_dump`` (docs/operating/backup.md)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from service.small_files import replace_private
from service.tools.terminal import not_a_sqlite_store
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


class BackupFailed(RuntimeError):
    """A backup that could not be written (a full disk, a failing device); the one-line message
    names the file. Nothing of it is left behind."""


def _new_file(path: Path) -> None:
    """``path`` made empty with mode 0600 (SQLite would make it 0644 less the umask)."""
    os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))


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
    the manifest as the log's key. The manifest written last says what the backup holds; a
    backup without it is incomplete. A copy that fails removes what it made (``BackupFailed``)."""
    _refuse(data, target)
    made_target = not target.exists()
    target.mkdir(mode=0o700, parents=True, exist_ok=True)
    writing = target
    try:
        copied = []
        if (data / VIEWS).is_file():
            writing = target / VIEWS
            _new_file(writing)
            _online_copy(data / VIEWS, writing)
            copied.append(VIEWS)
        writing = target / EVENTS
        _new_file(writing)
        _online_copy(data / EVENTS, writing)
        copied.append(EVENTS)
        keys = []
        for key_file in key_files:
            if key_file.is_file():
                (target / KEYS).mkdir(mode=0o700, exist_ok=True)
                writing = target / KEYS / key_file.name
                _new_file(writing)
                shutil.copyfile(key_file, writing)
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
        writing = target / MANIFEST
        writing.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    except (OSError, sqlite3.Error) as error:
        _remove_made(target, made_target)
        raise BackupFailed(
            f"cannot write {writing}: {error}; nothing of the backup is left"
        ) from None
    say(_backed_up(data, target, manifest, key_files))
    return manifest


def _refuse(data: Path, target: Path) -> None:
    """``BackupError`` unless ``data`` holds a SQLite store and ``target`` is a new or empty
    directory outside ``data``."""
    events = data / EVENTS
    if not events.is_file():
        raise BackupError(f"no event store in {data} (expected {events})")
    not_a_store = not_a_sqlite_store(events)
    if not_a_store is not None:
        raise BackupError(not_a_store)
    if target.exists() and any(target.iterdir()):
        raise BackupError(f"{target} exists and is not empty: a backup goes into a new directory")
    if target.resolve().is_relative_to(data.resolve()):
        raise BackupError(
            f"{target} is inside the data directory {data}: a backup there is lost with it"
        )


def _backed_up(data: Path, target: Path, manifest: dict[str, Any], key_files: list[Path]) -> str:
    """The line ``backup`` says: what it copied from ``data`` into ``target`` (``manifest``),
    and which of ``key_files`` were not there."""
    keys = manifest["keys"]
    return (
        f"backed up {manifest['events']} events"
        + (" and the views" if VIEWS in manifest["files"] else "")
        + f" of {data} into {target}"
        + (f", with the key files {', '.join(keys)} in {target / KEYS}" if keys else "")
        + "".join(f"; {k} is not there: not in the backup" for k in key_files if not k.is_file())
    )


def _remove_made(target: Path, made_target: bool) -> None:
    """Remove what a failed backup wrote into ``target`` (which was new or empty)."""
    for name in (VIEWS, EVENTS, MANIFEST, f"{EVENTS}-journal", f"{VIEWS}-journal"):
        (target / name).unlink(missing_ok=True)
    shutil.rmtree(target / KEYS, ignore_errors=True)
    if made_target:
        shutil.rmtree(target, ignore_errors=True)


def _plain_name(name: object) -> bool:
    """A file name with no directory part, not hidden, and not one of the backup's own."""
    return (
        isinstance(name, str)
        and name != ""
        and "/" not in name
        and "\\" not in name
        and not name.startswith(".")
        and name not in (EVENTS, VIEWS, MANIFEST, KEYS)
    )


def read_manifest(source: Path) -> dict[str, Any]:
    """The manifest of the backup in ``source``; ``BackupError`` when it is not a whole one."""
    path = source / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BackupError(
            f"{source} holds no {MANIFEST}: not a backup made by thirteen backup, or not a "
            "whole one"
        ) from None
    except (OSError, ValueError) as error:
        raise BackupError(f"cannot read {path}: {error}") from None
    if not isinstance(manifest, dict):
        raise BackupError(f"{path} is not a backup's manifest (not a JSON object)")
    if manifest.get("format") != FORMAT:
        raise BackupError(
            f"{source} is a backup of format {manifest.get('format')!r}, not {FORMAT}"
        )
    files = manifest.get("files")
    if not isinstance(files, list) or EVENTS not in files or not set(files) <= {EVENTS, VIEWS}:
        raise BackupError(
            f"{path}: its files must list {EVENTS} (and {VIEWS}, if backed up), got {files!r}"
        )
    events = manifest.get("events")
    if not isinstance(events, int) or isinstance(events, bool) or events < 0:
        raise BackupError(f"{path}: its events must be a count of events, got {events!r}")
    keys = manifest.get("keys", [])
    if not isinstance(keys, list) or not all(_plain_name(k) for k in keys):
        raise BackupError(f"{path}: its keys must be a list of plain file names, got {keys!r}")
    if not isinstance(manifest.get("made_at"), str):
        raise BackupError(f"{path}: made_at must be a date, got {manifest.get('made_at')!r}")
    checkpoint = manifest.get("checkpoint")
    if checkpoint is not None and not (
        isinstance(checkpoint, dict)
        and isinstance(checkpoint.get("note"), str)
        and isinstance(checkpoint.get("size"), int)
    ):
        raise BackupError(f"{path}: its checkpoint is not one, got {checkpoint!r}")
    for name in files:
        if not (source / name).is_file():
            raise BackupError(f"{source} lacks {name}: the backup is not whole")
    return manifest


def _check_copy(copy: Path, original: Path, events: int | None) -> None:
    """``BackupError`` unless the copy of ``original`` is a whole SQLite database (and, for the
    events, holds the manifest's count of them)."""
    try:
        with closing(sqlite3.connect(f"file:{copy}?mode=ro", uri=True)) as db:
            verdict = [str(row[0]) for row in db.execute("PRAGMA integrity_check")]
            count = None
            if events is not None and verdict == ["ok"]:
                (count,) = db.execute(
                    "SELECT COALESCE(MAX(rowid), 0) FROM stored_events"
                ).fetchone()
    except sqlite3.DatabaseError as error:
        raise BackupError(f"{original} is damaged: {error}; nothing restored") from None
    if verdict != ["ok"]:
        raise BackupError(f"{original} is damaged: {verdict[0]}; nothing restored")
    if events is not None and count != events:
        raise BackupError(
            f"{original} holds {count} events, its manifest says {events}; nothing restored"
        )


def restore(source: Path, data: Path, with_keys: bool) -> dict[str, Any]:
    """Put the backup in ``source`` into ``data``, which holds no store; the key files too with
    ``with_keys`` (into ``data``, where ``serve`` looks by default). Its manifest. Everything
    is checked before anything is put in place: each file is copied under a temporary name in
    ``data``, checked, and renamed only when all are; a refusal leaves ``data`` as it was."""
    manifest = read_manifest(source)
    if (data / EVENTS).exists():
        raise BackupError(
            f"{data} holds a store already ({data / EVENTS}): restore into a new directory, "
            "never over a store"
        )
    keys: list[str] = list(manifest.get("keys", [])) if with_keys else []
    for name in keys:
        if (data / name).exists():
            raise BackupError(f"{data / name} exists: a key file is never replaced")
        if not (source / KEYS / name).is_file():
            raise BackupError(f"{source} lacks {KEYS}/{name}: the backup is not whole")
    made_data = not data.exists()
    data.mkdir(mode=0o700, parents=True, exist_ok=True)
    partials: list[tuple[Path, Path]] = []
    try:
        for name in manifest["files"]:
            partial = data / f".{name}.restoring"
            partials.append((partial, data / name))
            partial.unlink(missing_ok=True)  # left by a restore cut short
            _new_file(partial)
            shutil.copyfile(source / name, partial)
            _check_copy(partial, source / name, manifest["events"] if name == EVENTS else None)
        for name in keys:
            partial = data / f".{name}.restoring"
            partials.append((partial, data / name))
            partial.unlink(missing_ok=True)  # left by a restore cut short
            _new_file(partial)
            shutil.copyfile(source / KEYS / name, partial)
        # The events last: a directory without them holds no store, and may be restored again.
        for partial, final in sorted(partials, key=lambda p: p[1].name == EVENTS):
            partial.replace(final)
        log_key = restored_log_key(manifest) if with_keys else None
        if log_key is not None:
            _mark_restored(data / log_key, manifest)
    except BaseException:
        for partial, _ in partials:
            partial.unlink(missing_ok=True)
        if made_data:
            shutil.rmtree(data, ignore_errors=True)
        raise
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
