"""Where events are stored: SQLite files under a data directory (the embedded default) or
PostgreSQL for several replicas (``THIRTEEN_STORE=postgres`` with the library's ``POSTGRES_*``
variables). Stored events are made immutable by triggers in either database."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import structlog
from psycopg.conninfo import make_conninfo

from projections.projector import AdvisoryLock, FileLock, Leadership
from projections.store import ViewStore
from service.application import Thirteen
from service.clock import Clock
from service.seed_keys import SEED_KEY_FILE, load_or_create

log = structlog.get_logger("thirteen.storage")
T = TypeVar("T")

STORES = ("sqlite", "postgres")
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
        env["PERSISTENCE_MODULE"] = "eventsourcing.postgres"
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
    # Readers' cached aggregates are brought up to date from the store on each read (the
    # library's fast-forward): the writer keeps aggregates of its own (``service.eventstore.writer``).
    return {
        "PERSISTENCE_MODULE": "eventsourcing.sqlite",
        "SQLITE_DBNAME": str(data / "thirteen.sqlite"),
    }


_SQLITE_TRIGGERS = [
    "CREATE TRIGGER IF NOT EXISTS stored_events_no_update BEFORE UPDATE ON stored_events "
    "BEGIN SELECT RAISE(ABORT, 'stored events are immutable'); END",
    "CREATE TRIGGER IF NOT EXISTS stored_events_no_delete BEFORE DELETE ON stored_events "
    "BEGIN SELECT RAISE(ABORT, 'stored events are immutable'); END",
]

_POSTGRES_FUNCTION = (
    "CREATE OR REPLACE FUNCTION {schema}thirteen_refuse_change() RETURNS trigger "
    "LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'stored events are immutable'; END $$"
)


def protect(app: Thirteen) -> None:
    """Refuse UPDATE and DELETE (and TRUNCATE) on the event table, at the database."""
    datastore = app.recorder.datastore  # type: ignore[attr-defined]
    table = app.recorder.events_table_name  # type: ignore[attr-defined]
    if app.env.get("PERSISTENCE_MODULE") == "eventsourcing.sqlite":
        with datastore.transaction(commit=True) as cursor:
            for statement in _SQLITE_TRIGGERS:
                cursor.execute(statement)
        return
    schema = app.env.get("POSTGRES_SCHEMA") or ""
    prefix = f'"{schema}".' if schema else ""
    with datastore.transaction(commit=True) as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(13013)")  # replicas start together
        cursor.execute(_POSTGRES_FUNCTION.format(schema=prefix))
        for name, when in (
            (f"{table}_immutable_rows", "UPDATE OR DELETE"),
            (f"{table}_immutable_table", "TRUNCATE"),
        ):
            level = "ROW" if when != "TRUNCATE" else "STATEMENT"
            cursor.execute(f'DROP TRIGGER IF EXISTS "{name}" ON {prefix}"{table}"')
            cursor.execute(
                f'CREATE TRIGGER "{name}" BEFORE {when} ON {prefix}"{table}" '
                f"FOR EACH {level} EXECUTE FUNCTION {prefix}thirteen_refuse_change()"
            )


def _postgres_settings(env: Mapping[str, str]) -> dict[str, str]:
    settings = {
        "host": env.get("POSTGRES_HOST") or "",
        "port": env.get("POSTGRES_PORT") or "",
        "user": env.get("POSTGRES_USER") or "",
        "dbname": env.get("POSTGRES_DBNAME") or "",
        "password": env.get("POSTGRES_PASSWORD") or "",
    }
    return {k: v for k, v in settings.items() if v}


STARTING = 13014
"""The advisory lock key under which PostgreSQL replicas create their tables one at a time."""


@contextmanager
def starting_together(env: Mapping[str, str]) -> Iterator[None]:
    """Replicas starting at once on a fresh schema race to create the same tables, and
    ``CREATE … IF NOT EXISTS`` is no guard against that in PostgreSQL (one of them fails on
    ``pg_type``): while this is held, no other replica runs its own table creation."""
    if env.get("PERSISTENCE_MODULE") != "eventsourcing.postgres":
        yield
        return
    import psycopg

    with psycopg.connect(make_conninfo("", **_postgres_settings(env)), autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (STARTING,))
        yield  # closing the session releases the lock


def _replace_cut_sessions_at_once(app: Thirteen) -> None:
    """When the pool finds one cut session, a cut usually took all of them (a database restart,
    ``pg_terminate_backend``): check the idle ones there and then, so the caller gets a new
    session at once instead of meeting the next dead one after psycopg_pool's backoff (1 s,
    2 s …) while holding the writer."""
    from psycopg_pool import ConnectionPool

    pool = app.recorder.datastore.pool  # type: ignore[attr-defined]

    def check(conn: Any) -> None:
        try:
            ConnectionPool.check_connection(conn)
        except Exception:
            pool.check()
            raise

    pool._check = check  # the pool's pre-ping hook (psycopg_pool 3.2: ``check=``)


class StoreInUse(OSError):
    """Another ``thirteen serve`` serves this SQLite store."""


def serving(app: Thirteen) -> FileLock | None:
    """One process serves a SQLite store (its writer trusts the aggregates it holds, and the
    log's readers take its commits from memory): an exclusive lock on a file beside the events,
    released by the operating system when the process ends. None on PostgreSQL, where replicas
    serve together."""
    if app.env.get("PERSISTENCE_MODULE") != "eventsourcing.sqlite":
        return None
    events = Path(app.env.get("SQLITE_DBNAME") or "")
    lock = FileLock(events.parent / "serve.lock")
    if not lock.acquire():
        raise StoreInUse(
            f"another thirteen serve is serving {events.parent} (it holds "
            f"{lock.path}); one process serves a SQLite store: use PostgreSQL for replicas"
        )
    return lock


def open_views(app: Thirteen) -> tuple[ViewStore, Leadership]:
    """The views beside the event store: a SQLite file of their own next to the events, or
    tables in the same PostgreSQL schema with one projector elected among the replicas. Their
    snapshots read the log's newest position too (``ViewStore.as_of``)."""
    table = app.recorder.events_table_name  # type: ignore[attr-defined]
    if app.env.get("PERSISTENCE_MODULE") == "eventsourcing.sqlite":
        events = Path(app.env.get("SQLITE_DBNAME") or "")
        head = f'SELECT COALESCE(MAX(rowid), 0) FROM log."{table}"'  # as max_notification_id
        views = ViewStore(path=events.parent / "views.sqlite", log_head=head, log_file=events)
        return views, FileLock(events.parent / "views.lock")
    settings = _postgres_settings(app.env)
    schema = app.env.get("POSTGRES_SCHEMA") or ""
    lock = AdvisoryLock(make_conninfo("", **settings), schema or settings.get("dbname", ""))
    prefix = f'"{schema}".' if schema else ""
    head = f'SELECT COALESCE(MAX(notification_id), 0) FROM {prefix}"{table}"'
    return ViewStore(postgres={**settings, "schema": schema}, log_head=head), lock


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


def open_app(
    data: Path,
    *,
    clock: Clock | None = None,
    environ: Mapping[str, str] | None = None,
    seed_key: Path | None = None,
) -> Thirteen:
    """The application on the configured store, with its event table protected. Its server
    seeds are derived from the keys in ``seed_key`` (default ``<data>/seed.key``), read (or
    created) when first needed, so that tools that only read the store never touch it."""
    env = store_env(data, environ)
    keys = functools.partial(load_or_create, seed_key or data / SEED_KEY_FILE)

    def attempt() -> Thirteen:
        with starting_together(env):
            app = Thirteen(env, clock=clock, seed_keys=keys)
            protect(app)
        return app

    if env.get("PERSISTENCE_MODULE") != "eventsourcing.postgres":
        return attempt()
    app = while_starting("open the event store", attempt)
    _replace_cut_sessions_at_once(app)
    return app
