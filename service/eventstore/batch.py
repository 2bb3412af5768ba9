"""What one transaction of the writer (``service.eventstore.writer``) holds while its commands
run: the events staged, the aggregates loaded or saved and the versions they were loaded at."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate

from service.eventstore.answers import Saved


class UndoFailed(Exception):
    """Undoing a refused command failed (the store could not be read): the batch's aggregates
    may hold its changes, so the whole batch fails with the cause, storing nothing."""


@dataclass
class Batch:
    """What the commands of one transaction have done so far."""

    events: list[Any] = field(default_factory=list)  # staged, in order
    touched: dict[UUID, Aggregate] = field(default_factory=dict)  # loaded or saved
    saves: list[tuple[Saved, int]] = field(default_factory=list)  # with its first event's index
    stored: dict[UUID, int] = field(default_factory=dict)  # version as loaded from the store
    read: set[UUID] = field(default_factory=set)  # loaded by the command now running
