"""What the service asks of its event store beyond the library's application recorder: the
queries of its own (log positions, what other replicas stored), the triggers that make stored
events immutable, a transaction for the tables kept beside the events (the transparency log's),
where the views live and the locks that elect one process. Each database answers in its own SQL
(``service.eventstore.sqlite``, ``service.eventstore.postgres``), as the eventsourcing
library's own examples do: a recorder subclass per database, chosen by the infrastructure
factory that ``PERSISTENCE_MODULE`` names."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol
from uuid import UUID

from eventsourcing.persistence import Notification

from projections.projector import Leadership
from projections.store import ViewStore
from service.eventstore.locks import FileLock


class EventRecorder(Protocol):
    """The recorder of a thirteen store, SQLite or PostgreSQL."""

    kind: str
    """``sqlite`` or ``postgres``: names the store in logs, and picks a dialect's few words."""

    several_writers: bool
    """Whether other processes may write the store at once (PostgreSQL replicas): then a writer
    looks at what they stored before each batch (``service.eventstore.writer``)."""

    table_prefix: str
    """What qualifies a table of the service's beside the events (``"schema".`` or nothing)."""

    def protect(self) -> None:
        """Refuse UPDATE, DELETE (and TRUNCATE) of stored events, at the database."""
        ...

    def positions(self, events: Sequence[tuple[UUID, int]]) -> dict[tuple[UUID, int], int]:
        """The log position of each stored event among ``events`` (stream, version)."""
        ...

    def changed_since(self, position: int, limit: int) -> list[Notification]:
        """The events stored after ``position``, oldest first, at most ``limit``: a writer's
        catch-up with other replicas, which brings the aggregates and chain heads it holds up
        to date from these without reading each again (``service.eventstore.writer``)."""
        ...

    def stored_versions(self, streams: Sequence[UUID]) -> dict[UUID, int]:
        """The stored version of each of ``streams`` that has events."""
        ...

    def max_notification_id(self) -> int | None: ...

    def transaction(self, *, commit: bool) -> AbstractContextManager[Any]:
        """A cursor in a transaction of the store's own connections."""
        ...

    def views(self) -> tuple[ViewStore, Leadership]:
        """The views beside the events, and the lock that elects the one process keeping them."""
        ...

    def leadership(self, purpose: str) -> Leadership | None:
        """The lock that elects one process of the store for ``purpose`` (None: the store has
        one process, which leads)."""
        ...

    def serving_lock(self) -> FileLock | None:
        """The lock a serving process holds (SQLite: one process serves a store), or None."""
        ...
