"""The locks that elect one process among those of a store: for the views' projector, the
transparency log's appender, and the one process that serves a SQLite store. Each is held as
long as its process lives and released by the operating system or the database when it dies,
so a standby takes over without anyone cleaning up."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from pathlib import Path
from typing import Any

import structlog

log = structlog.get_logger("thirteen.locks")

VIEWS = "thirteen-views"
"""What the projectors' advisory lock elects (part of its key: replicas of every version agree)."""


class Solo:
    """A single process owns the views (SQLite): always the leader."""

    def acquire(self) -> bool:
        return True

    def release(self) -> None:
        pass


class Standby:
    """Never leads: a serving process whose background work a ``thirteen worker`` does
    (``serve --background worker``) follows what the worker stores and keeps nothing."""

    def acquire(self) -> bool:
        return False

    def release(self) -> None:
        pass


class FileLock:
    """One process keeps the SQLite views: an exclusive lock on a file beside them, released
    by the operating system when the process ends."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: Any = None

    def acquire(self) -> bool:
        if self._file is not None:
            return True
        # Owner-only whatever the umask (issue 22); held open for the lock's lifetime.
        handle = os.fdopen(os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600), "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            return False
        self._file = handle
        return True

    def release(self) -> None:
        if self._file is not None:
            fcntl.flock(self._file, fcntl.LOCK_UN)
            self._file.close()
            self._file = None


class AdvisoryLock:
    """PostgreSQL session advisory lock, keyed by the schema (and what it elects: the views'
    projector, or the transparency log's appender), on a dedicated connection."""

    def __init__(self, conninfo: str, scope: str, purpose: str = VIEWS) -> None:
        self.conninfo = conninfo
        self.role = "projector" if purpose == VIEWS else purpose  # names its log lines
        self.key = int.from_bytes(
            hashlib.sha256(f"{purpose}:{scope}".encode()).digest()[:8], "big", signed=True
        )
        self._conn: Any = None

    def acquire(self) -> bool:
        import psycopg

        try:
            if self._conn is not None:
                self._conn.execute("SELECT 1")  # still connected, so still holding the lock
                return True
            conn = psycopg.connect(self.conninfo, autocommit=True)
            ((got,),) = conn.execute("SELECT pg_try_advisory_lock(%s)", (self.key,)).fetchall()
            if got:
                self._conn = conn
                log.info(f"{self.role}_leading")
                return True
            conn.close()
        except Exception as error:
            log.warning(f"{self.role}_lock_lost", error=str(error))
            self.release()
        return False

    def release(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):  # already closed or broken: the lock is gone
                self._conn.close()
            self._conn = None
