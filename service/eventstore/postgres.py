"""The store for several replicas: PostgreSQL, the events and the views in one schema.

``PERSISTENCE_MODULE = "service.eventstore.postgres:Factory"`` selects it, with the library's
``POSTGRES_*`` settings. The recorder inserts under the library's table lock, so events become
visible in position order (the writer's catch-up relies on it; the library's database-function
variant inserts without that lock and stays off)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any
from uuid import UUID

from eventsourcing.persistence import (
    ApplicationRecorder,
    InterfaceError,
    Notification,
    OperationalError,
)
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresFactory
from eventsourcing.utils import retry
from psycopg.conninfo import make_conninfo
from psycopg.sql import SQL, Identifier

from projections.projector import Leadership
from projections.store import ViewStore
from service.eventstore.locks import VIEWS, AdvisoryLock, FileLock

_SETTINGS = (
    "POSTGRES_HOST",
    "POSTGRES_PORT",
    "POSTGRES_USER",
    "POSTGRES_PASSWORD",
    "POSTGRES_DBNAME",
    "POSTGRES_SCHEMA",
)

STARTING = 13014
"""The advisory lock key under which replicas create their tables one at a time."""

PROTECTING = 13013
"""The advisory lock key under which replicas install the immutability triggers one at a time."""

_REFUSE_CHANGE = (
    "CREATE OR REPLACE FUNCTION {schema}thirteen_refuse_change() RETURNS trigger "
    "LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'stored events are immutable'; END $$"
)


def settings(env: Mapping[str, str]) -> dict[str, str]:
    """libpq's connection settings from the library's ``POSTGRES_*`` ones (those given)."""
    found = {
        "host": env.get("POSTGRES_HOST") or "",
        "port": env.get("POSTGRES_PORT") or "",
        "user": env.get("POSTGRES_USER") or "",
        "dbname": env.get("POSTGRES_DBNAME") or "",
        "password": env.get("POSTGRES_PASSWORD") or "",
    }
    return {k: v for k, v in found.items() if v}


@contextmanager
def starting_together(env: Mapping[str, str]) -> Iterator[None]:
    """Replicas starting at once on a fresh schema race to create the same tables, and
    ``CREATE … IF NOT EXISTS`` is no guard against that in PostgreSQL (one of them fails on
    ``pg_type``): while this is held, no other replica runs its own table creation."""
    import psycopg

    with psycopg.connect(make_conninfo("", **settings(env)), autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (STARTING,))
        yield  # closing the session releases the lock


class PostgresEvents(PostgresApplicationRecorder):
    """The library's PostgreSQL recorder with the queries the service adds
    (``service.eventstore.recorder.EventRecorder``)."""

    kind = "postgres"
    several_writers = True
    env: Mapping[str, str] = {}  # the application's settings, given by ``Factory``

    @property
    def table_prefix(self) -> str:
        return '"' + self.datastore.schema.replace('"', '""') + '".'

    def replace_cut_sessions_at_once(self) -> None:
        """When the pool finds one cut session, a cut usually took all of them (a database
        restart, ``pg_terminate_backend``): check the idle ones there and then, so the caller
        gets a new session at once instead of meeting the next dead one after psycopg_pool's
        backoff (1 s, 2 s …) while holding the writer."""
        from psycopg_pool import ConnectionPool

        pool: Any = self.datastore.pool

        def check(conn: Any) -> None:
            try:
                ConnectionPool.check_connection(conn)
            except Exception:
                pool.check()
                raise

        pool._check = check  # the pool's pre-ping hook (psycopg_pool 3.2: ``check=``)

    def _notify_channel(self, curs: Any) -> None:
        """No ``NOTIFY``: the library sends one in every insert for subscriptions by
        ``LISTEN``, and nothing here listens (the log's readers poll, as on SQLite, and read
        what the writer already read from memory: ``service.eventstore.follower``); it was a
        statement more in every batch's transaction and a place in PostgreSQL's notification
        queue at its commit (issue 21)."""

    def protect(self) -> None:
        schema = self.env.get("POSTGRES_SCHEMA") or ""
        prefix = f'"{schema}".' if schema else ""
        table = self.events_table_name
        with self.datastore.transaction(commit=True) as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", (PROTECTING,))
            cursor.execute(_REFUSE_CHANGE.format(schema=prefix))
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

    def positions(self, events: Sequence[tuple[UUID, int]]) -> dict[tuple[UUID, int], int]:
        if not events:
            return {}
        rows = self._events_query(
            "SELECT notification_id, originator_id, originator_version FROM {events} "
            "WHERE (originator_id, originator_version) IN "
            "(SELECT * FROM unnest(%s::uuid[], %s::bigint[]))",
            ([s for s, _ in events], [v for _, v in events]),
        )
        return {(r["originator_id"], r["originator_version"]): r["notification_id"] for r in rows}

    def changed_since(self, position: int, limit: int) -> list[Notification]:
        rows = self._events_query(
            "SELECT notification_id, originator_id, originator_version, topic, state "
            "FROM {events} WHERE notification_id > %s ORDER BY notification_id LIMIT %s",
            (position, limit),
        )
        return [
            Notification(
                id=r["notification_id"],
                originator_id=r["originator_id"],
                originator_version=r["originator_version"],
                topic=r["topic"],
                state=bytes(r["state"]),
            )
            for r in rows
        ]

    def stored_versions(self, streams: Sequence[UUID]) -> dict[UUID, int]:
        if not streams:
            return {}
        rows = self._events_query(
            "SELECT originator_id, MAX(originator_version) AS version FROM {events} "
            "WHERE originator_id = ANY(%s) GROUP BY originator_id",
            (list(streams),),
        )
        return {r["originator_id"]: r["version"] for r in rows}

    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)  # as the library
    def _events_query(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        """Rows of a read of the event table (``{events}`` in ``sql``)."""
        table = SQL("{}.{}").format(
            Identifier(self.datastore.schema), Identifier(self.events_table_name)
        )
        with self.datastore.transaction(commit=False) as cursor:
            cursor.execute(SQL(sql).format(events=table), params)
            return list(cursor.fetchall())

    @contextmanager
    def transaction(self, *, commit: bool) -> Iterator[Any]:
        with self.datastore.transaction(commit=commit) as cursor:
            yield cursor

    def _scope(self) -> str:
        """What the elections are keyed by: the schema, or the database without one."""
        return self.env.get("POSTGRES_SCHEMA") or settings(self.env).get("dbname", "")

    def views(self) -> tuple[ViewStore, Leadership]:
        """Tables in the events' schema, kept by the replica that holds the views' advisory
        lock; their snapshots read the log's newest position in the same transaction."""
        found = settings(self.env)
        schema = self.env.get("POSTGRES_SCHEMA") or ""
        prefix = f'"{schema}".' if schema else ""
        head = f'SELECT COALESCE(MAX(notification_id), 0) FROM {prefix}"{self.events_table_name}"'
        lock = AdvisoryLock(make_conninfo("", **found), self._scope(), VIEWS)
        return ViewStore(postgres={**found, "schema": schema}, log_head=head), lock

    def leadership(self, purpose: str) -> Leadership | None:
        return AdvisoryLock(make_conninfo("", **settings(self.env)), self._scope(), purpose)

    def serving_lock(self) -> FileLock | None:
        return None  # replicas serve together


class Factory(PostgresFactory):
    """The library's PostgreSQL infrastructure with the service's recorder."""

    application_recorder_class = PostgresEvents

    def application_recorder(self) -> ApplicationRecorder:
        recorder = super().application_recorder()
        assert isinstance(recorder, PostgresEvents)
        recorder.env = {key: value for key in _SETTINGS if (value := self.env.get(key))}
        recorder.replace_cut_sessions_at_once()
        return recorder
