"""The embedded store: SQLite files under a data directory, served by one process at a time.

``PERSISTENCE_MODULE = "service.eventstore.sqlite:Factory"`` selects it; ``SQLITE_DBNAME`` is
the events' file, and the views keep a file of their own beside it (the library's table names
are fixed, so two applications cannot share one file)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from uuid import UUID

from eventsourcing.persistence import Notification
from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteFactory

from projections.projector import Leadership
from projections.store import ViewStore
from service.eventstore.locks import FileLock

_IMMUTABLE = [
    "CREATE TRIGGER IF NOT EXISTS stored_events_no_update BEFORE UPDATE ON stored_events "
    "BEGIN SELECT RAISE(ABORT, 'stored events are immutable'); END",
    "CREATE TRIGGER IF NOT EXISTS stored_events_no_delete BEFORE DELETE ON stored_events "
    "BEGIN SELECT RAISE(ABORT, 'stored events are immutable'); END",
]


class SQLiteEvents(SQLiteApplicationRecorder):
    """The library's SQLite recorder with the queries the service adds
    (``service.eventstore.recorder.EventRecorder``)."""

    kind = "sqlite"
    several_writers = False  # one process serves a SQLite store (``serving_lock``)
    table_prefix = ""

    @property
    def path(self) -> Path:
        """The events' file."""
        return Path(self.datastore.pool.db_name)

    def protect(self) -> None:
        with self.datastore.transaction(commit=True) as cursor:
            for statement in _IMMUTABLE:
                cursor.execute(statement)

    def positions(self, events: Sequence[tuple[UUID, int]]) -> dict[tuple[UUID, int], int]:
        found = {}
        with self.datastore.transaction(commit=False) as cursor:
            for stream, version in events:
                cursor.execute(
                    f"SELECT rowid FROM {self.events_table_name} "
                    "WHERE originator_id = ? AND originator_version = ?",
                    (stream.hex, version),
                )
                row = cursor.fetchone()
                if row is not None:
                    found[stream, version] = int(row[0])
        return found

    def changed_since(self, position: int, limit: int) -> list[Notification]:
        return list(self.select_notifications(position + 1, limit))

    def stored_versions(self, streams: Sequence[UUID]) -> dict[UUID, int]:
        found = {}
        with self.datastore.transaction(commit=False) as cursor:
            for stream in streams:
                cursor.execute(
                    f"SELECT MAX(originator_version) FROM {self.events_table_name} "
                    "WHERE originator_id = ?",
                    (stream.hex,),
                )
                row = cursor.fetchone()
                if row is not None and row[0] is not None:
                    found[stream] = int(row[0])
        return found

    @contextmanager
    def transaction(self, *, commit: bool) -> Iterator[Any]:
        with self.datastore.transaction(commit=commit) as cursor:
            yield cursor

    def views(self) -> tuple[ViewStore, Leadership]:
        """A file of their own beside the events, kept by the process holding ``views.lock``;
        their snapshots read the log's newest position too (``ViewStore.as_of``), from the
        events' file attached as ``log``."""
        head = f'SELECT COALESCE(MAX(rowid), 0) FROM log."{self.events_table_name}"'
        views = ViewStore(path=self.path.parent / "views.sqlite", log_head=head, log_file=self.path)
        return views, FileLock(self.path.parent / "views.lock")

    def leadership(self, purpose: str) -> Leadership | None:
        """A lock file per ``purpose`` beside the events (``<purpose>.lock``): the process
        serving the store holds it, or one of the ``thirteen worker`` processes beside it."""
        return FileLock(self.path.parent / f"{purpose}.lock")

    def serving_lock(self) -> FileLock | None:
        """One process serves a SQLite store (its writer trusts the aggregates it holds, and the
        log's readers take its commits from memory): an exclusive lock on a file beside the
        events, released by the operating system when the process ends."""
        return FileLock(self.path.parent / "serve.lock")


class Factory(SQLiteFactory):
    """The library's SQLite infrastructure with the service's recorder."""

    application_recorder_class = SQLiteEvents
