"""The views' database: a SQLite file or a PostgreSQL schema, one connection a thread, and the
little that differs between the two (placeholders, transactions, a session that was cut)."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


class ViewsMissing(Exception):
    """A read found a view table missing: another process is rebuilding the views (it drops
    them before it replays the log), or they were left by a version without that table."""


class Connections:
    """The views' connections on SQLite (``path``) or PostgreSQL (``postgres`` connection
    settings): one a thread, and on SQLite with the log attached one more for snapshots."""

    def __init__(
        self,
        *,
        path: Path | None = None,
        postgres: dict[str, str] | None = None,
        log_head: str = "",
        log_file: Path | None = None,
    ) -> None:
        """``log_head``: a query of the event log's newest position, which every snapshot
        (``as_of``) runs with the tracking rows (``Tracking.head``). ``log_file``: a SQLite
        log's file, attached as ``log`` to the connections that read snapshots, and only to
        those: a write transaction would lock every attached file, the log's too."""
        if (path is None) == (postgres is None):
            raise ValueError("give exactly one of path or postgres")
        self.path = path
        self.postgres = postgres
        self.log_head = log_head
        self.log_file = log_file
        self.prefix = "thirteen_view_" if postgres else "view_"
        self._local = threading.local()  # one connection per thread (and a reader, on SQLite)
        self._all: list[Any] = []
        self._lock = threading.Lock()

    def settings(self) -> dict[str, Any]:
        """What opens these views again, in another process (``Connections(**settings)``)."""
        return {
            "path": self.path,
            "postgres": self.postgres,
            "log_head": self.log_head,
            "log_file": self.log_file,
        }

    @property
    def reads_head(self) -> bool:
        """Whether snapshots read the log's head (``log_head``)."""
        return bool(self.log_head)

    def _connect(self) -> Any:
        conn = getattr(self._local, "conn", None)
        if conn is not None and self.postgres and (conn.closed or conn.broken):
            # The session was cut (pg_terminate_backend, a restart, a fail-over): open another.
            with self._lock:
                if conn in self._all:
                    self._all.remove(conn)
            conn.close()
            conn = None
        if conn is None:
            conn = self._open()
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    def _open(self) -> Any:
        if self.path is not None:
            conn = _sqlite(self.path)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            return conn
        import psycopg
        from psycopg.conninfo import make_conninfo

        settings = dict(self.postgres or {})
        schema = settings.pop("schema", "")
        if schema:
            settings["options"] = f"-c search_path={schema}"
        return psycopg.connect(make_conninfo("", **settings), autocommit=True)

    def _reader(self) -> Any:
        """The connection of this thread's snapshots: on SQLite with the log attached, one of
        its own that never writes; else the thread's connection."""
        if self.path is None or self.log_file is None:
            return self._connect()
        conn = getattr(self._local, "reader", None)
        if conn is None:
            conn = _sqlite(self.path)
            conn.execute("ATTACH DATABASE ? AS log", (str(self.log_file),))
            self._local.reader = conn
            with self._lock:
                self._all.append(conn)
        return conn

    def _sql(self, statement: str) -> str:
        statement = statement.replace("{p}", self.prefix)
        return statement.replace("?", "%s") if self.postgres else statement

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        conn = self._connect()
        if self.postgres:
            with conn.transaction():
                yield conn.cursor()
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn.cursor()
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _query(self, statement: str, params: Sequence[Any] = ()) -> list[Any]:
        """Rows of a read; a read on a session that was cut is tried once more on a new one
        (a write is not: the projector's compare-and-set makes its own retry safe), unless it
        is part of a snapshot (``_snapshot`` then runs the whole snapshot again)."""
        snapshot = getattr(self._local, "snapshot", None)
        for attempt in (1, 2):
            cursor = (self._connect() if snapshot is None else snapshot).cursor()
            try:
                cursor.execute(self._sql(statement), params)
                return list(cursor.fetchall())
            except Exception as error:
                if _missing_table(error):
                    raise ViewsMissing(str(error)) from error
                if attempt == 2 or snapshot is not None or not self._cut():
                    raise
        raise AssertionError("unreachable")

    def _snapshot(self, read: Callable[[], T]) -> T:
        """``read()`` in one snapshot: every read of this thread until it returns sees the
        state of the first. A session that was cut is replaced and the whole snapshot read
        again, once."""
        for attempt in (1, 2):
            try:
                return self._snapshot_once(read)
            except Exception:
                if attempt == 2 or not self._cut():
                    raise
        raise AssertionError("unreachable")

    def _snapshot_once(self, read: Callable[[], T]) -> T:
        """A read-only transaction (PostgreSQL: repeatable read, so that every statement sees
        the state of the first); every read of this thread until its end is part of it."""
        conn = self._reader()
        conn.execute(
            "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" if self.postgres else "BEGIN"
        )
        self._local.snapshot = conn
        try:
            result = read()
        except BaseException:
            with suppress(Exception):  # a cut session has no transaction left to end
                conn.execute("ROLLBACK")
            raise
        else:
            conn.execute("COMMIT")
            return result
        finally:
            self._local.snapshot = None

    def _cut(self) -> bool:
        conn = getattr(self._local, "conn", None)
        return bool(self.postgres and conn is not None and (conn.closed or conn.broken))

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
        self._local = threading.local()


def _sqlite(path: Path) -> sqlite3.Connection:
    # Owner-only whatever the umask (issue 22): SQLite would create the file 0644 less the umask,
    # and gives its WAL and shared-memory files the file's mode. An existing file is left as is.
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    # Transactions are begun and ended by hand (``isolation_level=None``).
    return sqlite3.connect(path, timeout=30, check_same_thread=False, isolation_level=None)


def _missing_table(error: Exception) -> bool:
    """SQLite's "no such table", or PostgreSQL's undefined_table (SQLSTATE 42P01)."""
    if isinstance(error, sqlite3.OperationalError):
        return str(error).startswith("no such table")
    return getattr(error, "sqlstate", None) == "42P01"
