"""Live table streams for ``WatchTable``.

Each stream is a coroutine waiting on its own bounded queue, so open streams hold no worker
thread and cannot starve unary calls (NOTES.md). The log follower's thread hands every new
event to the event loop, which files it into the queues of the streams it concerns.
"""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import UUID

from eventsourcing.utils import get_topic

from domain.ids import round_uuid
from domain.round import Round
from domain.table import Table

QUEUE_LIMIT = 10_000
TABLE_AND_ROUND_TOPICS = frozenset(
    get_topic(c)
    for aggregate in (Table, Round)
    for c in vars(aggregate).values()
    if isinstance(c, type) and issubclass(c, aggregate.Event)
)
"""What table streams and the deadline sweeper read; other events need not be decoded."""


class TableWatch:
    """One stream: the events of one table and of its rounds."""

    def __init__(self, table_id: UUID, round_ids: set[UUID]) -> None:
        self.table_id = table_id
        self.round_ids = round_ids
        self.queue: asyncio.Queue[tuple[int, Any]] = asyncio.Queue(QUEUE_LIMIT)
        self.overflowed = False

    def concerns(self, event: Any) -> bool:
        if event.originator_id == self.table_id:
            if isinstance(event, Table.RoundStarted):  # saved before the round's own events
                self.round_ids.add(round_uuid(event.round_id))
            return True
        return event.originator_id in self.round_ids

    def offer(self, position: int, event: Any) -> None:
        if self.overflowed or not self.concerns(event):
            return
        try:
            self.queue.put_nowait((position, event))
        except asyncio.QueueFull:
            self.overflowed = True
            self.queue.get_nowait()
            self.queue.put_nowait((-1, None))  # wakes the stream to end it


class WatchHub:
    """Fans the follower's events out to the open streams, on the event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.watches: set[TableWatch] = set()

    def on_event(self, position: int, event: Any) -> None:  # called on the follower thread
        if self.watches:
            self.loop.call_soon_threadsafe(self._offer, position, event)

    def _offer(self, position: int, event: Any) -> None:
        for watch in list(self.watches):
            watch.offer(position, event)

    def open(self, table_id: UUID, round_ids: set[UUID]) -> TableWatch:
        watch = TableWatch(table_id, round_ids)
        self.watches.add(watch)
        return watch

    def close(self, watch: TableWatch) -> None:
        self.watches.discard(watch)
