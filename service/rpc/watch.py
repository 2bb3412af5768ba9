"""Live table streams for ``WatchTable``.

Each stream is a coroutine waiting on its own small queue, so open streams hold no worker thread and
cannot starve unary calls (as a sync server's streams did, each holding one). Each event is encoded
once (record once, copy on read: docs/internals/decisions.md): the log follower's thread loads the
state after the event once and builds its message once per distinct viewer among the table's open
streams, then the event loop hands the same messages to every stream of the table. Nothing waits on
a stream: a stream whose client does not read fills its queue and is ended with RESOURCE_EXHAUSTED
and the position to resume after.

Catching up (the events stored after the requested position) runs on the worker pool, one call
per batch of events, at most ``CATCH_UPS`` batches at a time so that unary calls always find a
free worker; messages built lately (live or by another stream catching up) are reused.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Iterable
from typing import Any
from uuid import UUID

import grpc
import structlog
from eventsourcing.domain import Aggregate
from eventsourcing.utils import get_topic

from domain import visibility
from domain.ids import round_uuid
from domain.round import Round
from domain.table import Table
from service._generated.thirteen.v1 import table_pb2
from service.application import Thirteen
from service.bounded import AggregateWeights, Bounded
from service.rpc import mapping

log = structlog.get_logger(__name__)

QUEUE_LIMIT = 256
"""Messages a stream may have waiting; a client that lets more pile up is cut off."""
CATCH_UP_BATCH = 256
"""Stored events read (and at most messages built) per worker call while catching up."""
CATCH_UPS = 2
"""Catch-up batches running on the worker pool at once, over all streams."""
STATES = 64
"""Aggregate states kept to apply the next event to instead of reloading them (per stream)."""
STATES_BYTES = 4 * 2**20
"""What they may weigh together (a revealed round weighs 30-45 kB, a table grows with its
rounds: about 250 bytes each); the newest stays whatever it weighs."""
RECENT = 4096
"""Messages kept (by position and viewer) for streams catching up over the same events."""
RECENT_BYTES = 4 * 2**20
"""What they may weigh together, estimated as ``message_weight`` says."""

_weights = AggregateWeights()  # shared by every stream's states


def message_weight(message: Message) -> int:
    """An estimate of what a built message holds in memory: a few times its encoded size
    (protobuf keeps its fields as objects), and the cache's own entry."""
    return 256 + 4 * message.ByteSize()


TABLE_AND_ROUND_TOPICS = frozenset(
    get_topic(c)
    for aggregate in (Table, Round)
    for c in vars(aggregate).values()
    if isinstance(c, type) and issubclass(c, aggregate.Event)
)
"""What table streams and the deadline sweeper read; other events need not be decoded."""

EVENT_TYPES: dict[type, str] = {
    Table.Opened: "TableOpened",
    Table.PlayerSatDown: "PlayerSatDown",
    Table.PlayerStoodUp: "PlayerStoodUp",
    Table.RoundStarted: "RoundStarted",
    Table.RoundEnded: "RoundEnded",
    Round.Dealt: "RoundDealt",
    Round.Arranged: "HandArranged",
    Round.SpecialDeclared: "SpecialDeclared",
    Round.PlayerEscaped: "PlayerEscaped",
    Round.Revealed: "RoundRevealed",
    Round.Abandoned: "RoundAbandoned",
}

SUBMISSIONS = (Round.Arranged, Round.SpecialDeclared)
SUBMITTED = "HandSubmitted"
"""The type of a submission for whoever may not learn its kind (R10.4): an arrangement, a foul
draft and a declared special look alike to them."""

Run = Callable[..., Awaitable[Any]]
"""Runs a blocking call on the worker pool (``servicers.Runner``)."""

Message = table_pb2.WatchTableResponse


def messages(state: Any, position: int, event: Any, viewers: Iterable[str]) -> dict[str, Message]:
    """The ``WatchTableResponse`` of one event for each viewer; ``state`` is its aggregate
    after the event. A table looks the same to everyone, so its message is built once; a
    round shows each viewer what ``mapping.round_fields`` lets them see."""
    viewers = list(dict.fromkeys(viewers))
    if not isinstance(state, Round):
        shared = _message(state, position, event, "")
        return dict.fromkeys(viewers, shared)
    # Viewers who share a viewpoint share one build, however many made-up viewer names the
    # streams give.
    built: dict[str, Message] = {}
    for viewer in viewers:
        key = visibility.viewpoint(state, viewer)
        if key not in built:
            built[key] = _message(state, position, event, key)
        built[viewer] = built[key]
    return {viewer: built[viewer] for viewer in viewers}


def _message(state: Any, position: int, event: Any, viewer: str) -> Message:
    kind = EVENT_TYPES.get(type(event), type(event).__name__)
    if isinstance(event, SUBMISSIONS) and not visibility.tells_submission_kind(
        state, viewer, event.player_id
    ):
        kind = SUBMITTED
    message = table_pb2.WatchTableResponse(
        position=position,
        type=kind,
        player_id=getattr(event, "player_id", ""),
        occurred_at=mapping.timestamp(event.at),
    )
    if isinstance(state, Table):
        message.table_id = state.table_id
        message.table.CopyFrom(table_pb2.Table(**mapping.table_fields(state)))
    elif isinstance(state, Round):
        message.table_id = state.table_id
        message.round_id = state.round_id
        message.round.CopyFrom(table_pb2.Round(**mapping.round_fields(state, viewer)))
    return message


class States:
    """Aggregates as of the events seen last, so that the next event is applied to the state
    in hand rather than replayed from the store. Not thread-safe: one per thread of use."""

    def __init__(self, app: Thirteen, size: int = STATES) -> None:
        self.app = app
        self._known: Bounded[UUID, Aggregate] = Bounded(size, STATES_BYTES, _weights)

    def after(self, event: Any) -> Any:
        """The state of the event's aggregate just after the event."""
        try:
            known = self._known.get(event.originator_id, evict=True)
        except KeyError:
            known = None
        if known is not None and known.version == event.originator_version - 1:
            state = event.mutate(known)
        else:
            state = self.app.repository.get(event.originator_id, version=event.originator_version)
        self._known.put(event.originator_id, state)
        return state


class Recent:
    """The messages built lately, by position and viewer; the oldest make room. Thread-safe:
    the follower thread and the worker pool both fill it."""

    def __init__(self, size: int = RECENT, max_bytes: int = RECENT_BYTES) -> None:
        self._messages: Bounded[tuple[int, str], Message] = Bounded(size, max_bytes, message_weight)

    def get(self, position: int, viewer: str) -> Message | None:
        try:
            return self._messages.get((position, viewer))
        except KeyError:
            return None

    def put(self, position: int, built: dict[str, Message]) -> None:
        for viewer, message in built.items():
            self._messages.put((position, viewer), message)


class TableWatch:
    """One stream: the events of one table and of its rounds, as ``viewer`` sees them."""

    def __init__(self, table_id: UUID, viewer: str, limit: int) -> None:
        self.table_id = table_id
        self.viewer = viewer
        self.queue: asyncio.Queue[tuple[int, Message | None]] = asyncio.Queue(limit)  # None: ended
        self.last = 0  # the position of the last message given to the client
        self.live = False
        self.missed = False  # the queue overflowed while catching up: read the store again
        self.ended: tuple[grpc.StatusCode, str] | None = None

    def offer(self, position: int, message: Message) -> bool:
        """Queue a message (event loop); False when the queue overflowed and ended the stream."""
        try:
            self.queue.put_nowait((position, message))
        except asyncio.QueueFull:
            self._clear()
            if not self.live:  # the store still holds everything: catching up rereads it
                self.missed = True
                return True
            self.end(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"the stream fell behind: its client left {self.queue.maxsize} events unread",
            )
            return False
        return True

    def end(self, code: grpc.StatusCode, why: str) -> None:
        """Drop what waits and wake the stream to end with this status."""
        self._clear()
        self.ended = (code, why)
        self.queue.put_nowait((-1, None))

    def ending(self) -> tuple[grpc.StatusCode, str]:
        """The status that ends the stream, telling the client where to resume."""
        code, why = self.ended or (grpc.StatusCode.UNAVAILABLE, "the stream was interrupted")
        return code, f"{why}; resume with after={self.last}"

    def _clear(self) -> None:
        while not self.queue.empty():
            self.queue.get_nowait()


class _Watched:
    """A table with open streams, and the rounds of it that the hub knows."""

    def __init__(self) -> None:
        self.watches: set[TableWatch] = set()
        self.rounds: set[UUID] = set()


class WatchHub:
    """Fans the follower's events out to the open streams, encoding each event once per
    viewer. The registry is shared by the event loop (streams open and close), the follower
    thread (routing) and the worker pool (catching up), so it is guarded by a lock."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, app: Thirteen, queue_limit: int = QUEUE_LIMIT
    ) -> None:
        self.loop = loop
        self.app = app
        self.queue_limit = queue_limit
        self._lock = threading.Lock()
        self._tables: dict[UUID, _Watched] = {}
        self._round_tables: dict[UUID, UUID] = {}  # round → its table, for watched tables
        self._states = States(app)  # the follower thread's
        self._recent = Recent()
        self._catch_ups = asyncio.Semaphore(CATCH_UPS)

    # Streams (event loop) ---------------------------------------------------------------------

    def open(self, table_id: UUID, round_ids: Collection[UUID], viewer: str) -> TableWatch:
        """Register a stream before it catches up, so that no event falls between the two."""
        watch = TableWatch(table_id, viewer, self.queue_limit)
        with self._lock:
            watched = self._tables.setdefault(table_id, _Watched())
            watched.watches.add(watch)
            for round_id in round_ids:
                self._learn(watched, table_id, round_id)
        return watch

    def close(self, watch: TableWatch) -> None:
        with self._lock:
            watched = self._tables.get(watch.table_id)
            if watched is None or watch not in watched.watches:
                return
            watched.watches.discard(watch)
            if not watched.watches:
                del self._tables[watch.table_id]
                for round_id in watched.rounds:
                    self._round_tables.pop(round_id, None)

    def end_all(self, code: grpc.StatusCode, why: str) -> None:
        """End every stream (event loop), each telling its client where to resume."""
        with self._lock:
            watches = [w for watched in self._tables.values() for w in watched.watches]
        for watch in watches:
            watch.end(code, why)

    def watching(self) -> bool:
        """Whether any table has an open stream here (the follower then decodes every table
        and round event, not only those the sweeper needs)."""
        return bool(self._tables)

    def streams(self, *, live: bool = False) -> int:
        """Open streams (with ``live``, only those past their catch-up)."""
        with self._lock:
            watches = [w for watched in self._tables.values() for w in watched.watches]
        return sum(1 for w in watches if w.live or not live)

    async def follow(self, watch: TableWatch, after: int, run: Run) -> AsyncIterator[Message]:
        """The stream's messages: those stored after ``after``, then live ones, until the
        stream ends (``watch.ending()`` says why). ``watch.last`` follows what was given."""
        watch.last = after
        states = States(self.app)
        while not watch.live:  # catch up, one worker call per batch
            watch.missed = False
            async with self._catch_ups:
                read, found = await run(self.catch_up, watch, watch.last, states)
            for position, message in found:
                yield message
                watch.last = position
            # Caught up once a read finds nothing, unless live messages were dropped since it
            # began; those events are stored, so read again.
            watch.live = read == watch.last and not found and not watch.missed
            watch.last = read
        while True:  # live: the hub's messages, shared with the table's other streams
            position, message = await watch.queue.get()
            if message is None:
                return
            if position > watch.last:
                yield message
                watch.last = position

    # Live events (follower thread, then event loop) -------------------------------------------

    def on_event(self, position: int, event: Any) -> None:
        """Called on the follower thread with every table and round event, in log order."""
        with self._lock:
            table_id = self._table_of(event)
            if table_id is None:
                return
            viewers = {watch.viewer for watch in self._tables[table_id].watches}
        built: dict[str, Message] | None = None  # None: the streams end and say where to resume
        try:
            built = messages(self._states.after(event), position, event, viewers)
            self._recent.put(position, built)
        except Exception:
            log.exception("watch_encode_failed", position=position)
        self.loop.call_soon_threadsafe(self._deliver, table_id, position, built)

    def _deliver(self, table_id: UUID, position: int, built: dict[str, Message] | None) -> None:
        watched = self._tables.get(table_id)  # only the event loop changes the watch sets
        if watched is None:
            return
        for watch in list(watched.watches):
            if built is None:
                watch.end(grpc.StatusCode.UNAVAILABLE, "the server could not encode an event")
                self.close(watch)
                continue
            message = built.get(watch.viewer)
            # A viewer missing here opened after the event was read, so its catch-up has it.
            if message is not None and not watch.offer(position, message):
                self.close(watch)

    # Catching up (worker pool) ----------------------------------------------------------------

    def catch_up(
        self, watch: TableWatch, after: int, states: States, limit: int = CATCH_UP_BATCH
    ) -> tuple[int, list[tuple[int, Message]]]:
        """One batch of the stored log after ``after``: the position read up to and the
        stream's messages in it (none read: caught up)."""
        batch = self.app.events_after(after, limit, TABLE_AND_ROUND_TOPICS)
        viewer = watch.viewer
        found = []
        for position, event in batch:
            if event is None:
                continue
            with self._lock:
                concerned = self._table_of(event) == watch.table_id
            if not concerned:
                continue
            state = states.after(event)  # also when the message is known: the next needs it
            message = self._recent.get(position, viewer)
            if message is None:
                message = messages(state, position, event, [viewer])[viewer]
                self._recent.put(position, {viewer: message})
            found.append((position, message))
        return (batch[-1][0] if batch else after), found

    # Routing (under the lock) -----------------------------------------------------------------

    def _table_of(self, event: Any) -> UUID | None:
        """The watched table the event concerns, if any; learns the rounds a table starts
        (their RoundStarted is saved before the round's own events)."""
        originator: UUID = event.originator_id
        watched = self._tables.get(originator)
        if watched is None:
            return self._round_tables.get(originator)
        if isinstance(event, Table.RoundStarted):
            self._learn(watched, originator, round_uuid(event.round_id))
        return originator

    def _learn(self, watched: _Watched, table_id: UUID, round_id: UUID) -> None:
        watched.rounds.add(round_id)
        self._round_tables[round_id] = table_id
