"""The views' tables: a SQLite file of their own beside the event store, or tables prefixed
``thirteen_view_`` in the service's PostgreSQL schema.

Each batch of view changes is written in one transaction together with the tracking position,
advanced by compare-and-set: a batch applies exactly once even if two projectors race.

One module a reason to change: ``connections`` (SQLite or PostgreSQL, a connection a thread,
snapshots), ``schema`` (the tables and their version), ``writes`` (a batch of records and the
tracking position), ``queries`` (the reads).
"""

from __future__ import annotations

from projections.store.connections import ViewsMissing
from projections.store.queries import (
    HEAD,
    FinishedRound,
    LedgerEntry,
    PlayerRound,
    PlayerStats,
    Queries,
    ResumePoint,
    Tracking,
)
from projections.store.schema import NAME, SCHEMA, SCHEMA_VERSION, Schema
from projections.store.writes import StaleBatch, Writes


class ViewStore(Schema, Writes, Queries):
    """The views on SQLite (``path``) or PostgreSQL (``postgres`` connection settings)."""


__all__ = [
    "HEAD",
    "NAME",
    "SCHEMA",
    "SCHEMA_VERSION",
    "FinishedRound",
    "LedgerEntry",
    "PlayerRound",
    "PlayerStats",
    "ResumePoint",
    "StaleBatch",
    "Tracking",
    "ViewStore",
    "ViewsMissing",
]
