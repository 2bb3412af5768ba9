"""Which store: SQLite files under a data directory (the embedded default,
``service.eventstore.sqlite``) or PostgreSQL for several replicas (``THIRTEEN_STORE=postgres``
with the library's ``POSTGRES_*`` variables, ``service.eventstore.postgres``); and what every
process does before it uses one (create its tables one replica at a time, wait out a database
that is failing over)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import structlog

from service.eventstore.locks import FileLock
from service.eventstore.recorder import EventRecorder
from service.small_files import create_owner_only

log = structlog.get_logger("thirteen.storage")
T = TypeVar("T")
A = TypeVar("A")

STORES = ("sqlite", "postgres")
SQLITE = "service.eventstore.sqlite:Factory"
POSTGRES = "service.eventstore.postgres:Factory"
POSTGRES_DEFAULTS = {
    "POSTGRES_HOST": "127.0.0.1",
    "POSTGRES_PORT": "5432",
    "POSTGRES_USER": "postgres",
    "POSTGRES_PASSWORD": "",
    "POSTGRES_DBNAME": "thirteen",
}


class StoreConfigError(ValueError):
    """The configured store cannot be used; the message says what to change."""


def store_env(data: Path, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The application's persistence settings from ``THIRTEEN_STORE`` and the data dir."""
    environ = os.environ if environ is None else environ
    store = environ.get("THIRTEEN_STORE", "sqlite")
    if store not in STORES:
        raise StoreConfigError(f"THIRTEEN_STORE must be one of {', '.join(STORES)}, got {store!r}")
    if store == "postgres":
        env = {k: environ.get(k, v) for k, v in POSTGRES_DEFAULTS.items()}
        env["PERSISTENCE_MODULE"] = POSTGRES
        # A pooled session cut by the server (pg_terminate_backend, a restart, a fail-over) is
        # noticed before use and replaced, instead of failing the next command.
        env["POSTGRES_PRE_PING"] = environ.get("POSTGRES_PRE_PING", "y")
        # The writer's catch-up (``service.eventstore.writer``) relies on events becoming visible in
        # position order, which the recorder's table lock gives; its database function
        # variant inserts without that lock, so it stays off.
        env["POSTGRES_ENABLE_DB_FUNCTIONS"] = "n"
        if environ.get("POSTGRES_SCHEMA"):
            env["POSTGRES_SCHEMA"] = environ["POSTGRES_SCHEMA"]
        return env
    try:
        data.mkdir(mode=0o700, parents=True, exist_ok=True)  # hands in progress are in there
    except OSError as error:
        raise StoreConfigError(f"cannot create data directory {data}: {error.strerror}") from None
    events = data / "thirteen.sqlite"
    try:
        create_owner_only(events)  # before SQLite makes it 0644 less the umask
    except OSError as error:
        raise StoreConfigError(
            f"cannot create the event store {events}: {error.strerror}"
        ) from None
    # Readers' cached aggregates are brought up to date from the store on each read (the
    # library's fast-forward): the writer keeps aggregates of its own
    # (``service.eventstore.writer``).
    return {
        "PERSISTENCE_MODULE": SQLITE,
        "SQLITE_DBNAME": str(events),
    }


@contextmanager
def starting_together(env: Mapping[str, str]) -> Iterator[None]:
    """While this is held, no other replica of the store creates its tables (PostgreSQL,
    ``service.eventstore.postgres.starting_together``); a SQLite store has one process."""
    if env.get("PERSISTENCE_MODULE") != POSTGRES:
        yield
        return
    from service.eventstore.postgres import starting_together as postgres_starting

    with postgres_starting(env):
        yield


def opened(
    data: Path, environ: Mapping[str, str] | None, construct: Callable[[dict[str, str]], A]
) -> A:
    """``construct(env)``: an application on the store ``environ`` selects (``store_env``), with
    its tables created one replica at a time; on PostgreSQL tried again while a database that is
    failing over drops the connection (``while_starting``)."""
    env = store_env(data, environ)

    def attempt() -> A:
        with starting_together(env):
            return construct(env)

    if env["PERSISTENCE_MODULE"] != POSTGRES:
        return attempt()
    return while_starting("open the event store", attempt)


class StoreInUse(OSError):
    """Another ``thirteen serve`` serves this SQLite store."""


def serving(recorder: EventRecorder) -> FileLock | None:
    """The lock of the one process serving a SQLite store, held; None on PostgreSQL, where
    replicas serve together. Raises ``StoreInUse`` when another process holds it."""
    lock = recorder.serving_lock()
    if lock is not None and not lock.acquire():
        raise StoreInUse(
            f"another thirteen serve is serving {lock.path.parent} (it holds "
            f"{lock.path}); one process serves a SQLite store: use PostgreSQL for replicas"
        )
    return lock


STARTING_SECONDS = 20.0
"""How long start-up keeps trying when PostgreSQL cuts or refuses its sessions (a restart, a
fail-over, ``pg_terminate_backend``) before it gives up and says why."""


def while_starting(what: str, attempt: Callable[[], T], seconds: float = STARTING_SECONDS) -> T:
    """``attempt()``, tried again while the database drops the connection under it: a server
    started during a fail-over waits for the database instead of exiting. Other errors (a bad
    setting, a refused login) are raised at once; a cut session after ``seconds`` too."""
    import psycopg
    from eventsourcing.persistence import InterfaceError, OperationalError

    deadline = time.monotonic() + seconds
    pause = 0.1
    while True:
        try:
            return attempt()
        except (psycopg.OperationalError, OperationalError, InterfaceError) as error:
            if time.monotonic() + pause > deadline or "password" in str(error):
                raise
            log.warning("store_not_ready", step=what, error=str(error), retry_in=pause)
            time.sleep(pause)
            pause = min(pause * 2, 2.0)
