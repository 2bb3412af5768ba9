"""Which store a replica serves, so that a peer of another store is never handed a table: a
random id kept in the store itself (a one-row table ``thirteen_store``, written by the first
replica to start), which every replica of the store reads alike and no other store holds.
Each replica answers ``grpc.health.v1`` for ``thirteen.store.<id>``; a peer that does not is
counted down (``service.routing.peers``)."""

from __future__ import annotations

import uuid

from service.eventstore.recorder import EventRecorder

HEALTH_PREFIX = "thirteen.store."


def store_identity(database: EventRecorder) -> str:
    """The store's id, created on the first call (run it among replicas starting together:
    ``service.eventstore.storage.starting_together``)."""
    table = f"{database.table_prefix}thirteen_store"
    mark = "%s" if database.kind == "postgres" else "?"
    with database.transaction(commit=True) as cursor:
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {table} "
            "(one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one), id TEXT NOT NULL)"
        )
        cursor.execute(
            f"INSERT INTO {table} (id) VALUES ({mark}) ON CONFLICT DO NOTHING", (uuid.uuid4().hex,)
        )
        cursor.execute(f"SELECT id FROM {table}")
        row = cursor.fetchone()
    found = row["id"] if isinstance(row, dict) else row[0]
    return str(found)


def health_name(store: str) -> str:
    """The ``grpc.health.v1`` service a replica of ``store`` answers SERVING."""
    return HEALTH_PREFIX + store
