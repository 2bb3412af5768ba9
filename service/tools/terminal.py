"""What the commands share at the terminal: the exit status for bad input and, for those that
read a store, the store opened with a one-line error instead of a traceback and a progress bar
on stderr."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

EXIT_BAD_INPUT = 2


class ProgressBar:
    """A one-line progress bar on stderr (a terminal redraws it; a log gets a few lines). A
    stderr that cannot be written (a full disk, closed) stops the bar, never the command."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.tty = _is_tty(sys.stderr)
        self.shown = -1
        self.failed = sys.stderr is None

    def __call__(self, position: int, last: int) -> None:
        if self.failed:
            return
        share = 1.0 if last <= 0 else min(position / last, 1.0)
        percent = int(share * 100)
        if percent == self.shown or (not self.tty and percent % 10 and percent != 100):
            return
        self.shown = percent
        bar = "#" * (percent // 4) + "." * (25 - percent // 4)
        end = "\r" if self.tty and percent < 100 else "\n"
        try:
            print(
                f"{self.label} [{bar}] {percent:3d}% ({position}/{last})",
                end=end,
                file=sys.stderr,
                flush=True,
            )
        except (OSError, ValueError):
            self.failed = True


class Eta:
    """Progress and the time left, on stderr, for long runs: redrawn in place on a terminal;
    with ``forced`` (a ``--progress`` flag) on any stderr as a line per tenth; else silent.
    ``advance`` counts units of work done out of ``total``. A stderr that cannot be written (a
    full disk, closed) stops the progress, never the run."""

    def __init__(
        self,
        label: str,
        total: float,
        *,
        forced: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.total = total
        self.tty = _is_tty(sys.stderr)
        self.shown = sys.stderr is not None and (self.tty or forced)
        self.clock = clock
        self.started = clock()
        self.done = 0.0
        self.drawn_at = -1.0
        self.tenth = -1

    def advance(self, units: float) -> None:
        self.done = min(self.done + units, self.total)
        if self.total - self.done < 1e-9 * self.total:  # units summed as floats
            self.done = self.total
        if not self.shown:
            return
        share = self.done / self.total if self.total > 0 else 1.0
        now = self.clock()
        if self.tty:
            if now - self.drawn_at < 0.2 and share < 1:
                return
        elif int(share * 10) == self.tenth:
            return
        self.drawn_at, self.tenth = now, int(share * 10)
        elapsed = now - self.started
        if share >= 1:
            left = f"done in {_duration(elapsed)}"
        elif share > 0 and elapsed >= 0.5:
            left = f"ETA {_duration(elapsed * (1 - share) / share)}"
        else:
            left = "ETA …"
        bar = "#" * int(share * 25) + "." * (25 - int(share * 25))
        end = "\r" if self.tty and share < 1 else "\n"
        clear = "\x1b[K" if self.tty else ""
        line = f"{self.label} [{bar}] {share:4.0%} {left}{clear}"
        try:
            print(line, end=end, file=sys.stderr, flush=True)
        except (OSError, ValueError):  # a full disk, a closed stderr: the run goes on unshown
            self.shown = False


def _is_tty(stream: Any) -> bool:
    """Whether ``stream`` is a terminal (None, closed or failing: not)."""
    try:
        return bool(stream is not None and stream.isatty())
    except (OSError, ValueError):
        return False


def _duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``1h02m``."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def open_store(command: str, data: str) -> Any:
    """The application on the configured store, or a one-line error and an exit status."""
    from service.eventstore.storage import StoreConfigError
    from service.opening import open_app

    try:
        return open_app(Path(data))
    except StoreConfigError as error:
        print(f"thirteen {command}: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as error:
        print(f"thirteen {command}: cannot open the event store: {error}", file=sys.stderr)
        return 1


def read_store(command: str, data: str) -> Any:
    """``open_store`` for commands that only read: a missing SQLite store is an error here,
    not a new empty one."""
    store = Path(data) / "thirteen.sqlite"
    if os.environ.get("THIRTEEN_STORE", "sqlite") == "sqlite" and not store.is_file():
        print(f"thirteen {command}: no event store in {data} (expected {store})", file=sys.stderr)
        return EXIT_BAD_INPUT
    absent = not_a_store(store)
    if absent is not None:
        print(f"thirteen {command}: {absent}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return open_store(command, data)


def not_a_store(events: Path) -> str | None:
    """Why the configured store holds no thirteen store (a SQLite file that is not a database
    or lacks the events table; a PostgreSQL schema that does not exist or lacks the events
    table), or None. Looked at read only: opening the application would create the tables."""
    if os.environ.get("THIRTEEN_STORE", "sqlite") == "sqlite":
        return not_a_sqlite_store(events)
    return _not_a_postgres_store()


def not_a_sqlite_store(events: Path) -> str | None:
    """Why the SQLite file ``events`` holds no thirteen store (it is not a database, or it
    lacks the events table), or None; opened read only."""
    import sqlite3
    from contextlib import closing

    try:
        with closing(sqlite3.connect(f"file:{events}?mode=ro", uri=True, timeout=30)) as db:
            found = db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'stored_events'"
            ).fetchone()
    except sqlite3.DatabaseError as error:
        return f"{events} is not an event store: {error}"
    return None if found else f"{events} is not an event store: it holds no events table"


def _not_a_postgres_store() -> str | None:
    import psycopg
    from psycopg.conninfo import make_conninfo

    from service.eventstore.postgres import settings
    from service.eventstore.storage import POSTGRES_DEFAULTS

    env = {k: os.environ.get(k, v) for k, v in POSTGRES_DEFAULTS.items()}
    schema = os.environ.get("POSTGRES_SCHEMA") or "public"
    try:
        with psycopg.connect(
            make_conninfo("", **settings(env)), connect_timeout=10, autocommit=True
        ) as conn:
            if conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone():
                table = conn.execute(
                    "SELECT 1 FROM information_schema.tables "
                    "WHERE table_schema = %s AND table_name = 'thirteen_events'",
                    (schema,),
                ).fetchone()
                if table is None:
                    return f"the PostgreSQL schema {schema} holds no event store (POSTGRES_SCHEMA)"
                return None
    except psycopg.Error:
        return None  # opening the store says what is wrong, as a fault
    return f"the PostgreSQL schema {schema} does not exist (POSTGRES_SCHEMA)"
