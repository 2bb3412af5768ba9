"""The event store as the application uses it: one writer per process
(``service.eventstore.writer``) that commits the commands waiting together, every commit chained for
tamper evidence (``service.eventstore.chaining``), listeners told of each commit, and the log read
by position. ``Thirteen`` builds its commands and queries on this."""

from __future__ import annotations

import bisect
import functools
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Collection, Sequence
from concurrent.futures import Future
from typing import Any, ParamSpec, TypeVar, cast
from uuid import UUID

import structlog
from eventsourcing.application import Application, Repository
from eventsourcing.persistence import JSONTranscoder, Mapper, Recording
from eventsourcing.utils import get_topic

from service.bounded import AggregateWeights, Bounded
from service.eventstore.answers import Present, Saved
from service.eventstore.caught import Caught
from service.eventstore.chaining import ChainHeads, ChainingMapper
from service.eventstore.recorder import EventRecorder
from service.eventstore.writer import Writer

log = structlog.get_logger("thirteen.event_log")
P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")
READER_STRIPES = 64  # locks over the aggregates readers copy (``ReaderRepository``)
RECENT = 1024  # events of the latest commits kept for the log's readers
READER_BYTES = 32 * 2**20  # what the readers' cached aggregates weigh together, at most


Topics = Collection[str] | Callable[[], Collection[str] | None] | None
"""Which topics a reader wants decoded: all (None), these, or what a function says now."""


class ReaderRepository(Repository[UUID]):
    """The library's repository for queries (commands use the writer's own aggregates): a cached
    aggregate is brought up to date from the store on each read, then copied for the reader.
    The library updates the cached object in place under a lock but copies it after releasing
    that lock, so two readers of one aggregate could copy it half updated; here both steps run
    under one lock per stripe of aggregates."""

    def __init__(self, app: Application[UUID], cache_maxsize: int | None) -> None:
        super().__init__(
            event_store=app.events,
            snapshot_store=app.snapshots,
            cache_maxsize=cache_maxsize,
            fastforward=True,  # the writer does not put its commits here: readers must read them
            fastforward_skipping=False,
            deepcopy_from_cache=True,
        )
        if cache_maxsize is not None and cache_maxsize > 0:
            # Bounded by bytes too: brought up to date in place, an aggregate is weighed again
            # as it is read (an estimate from its version, walked now and then).
            weights = AggregateWeights()
            self.cache = Bounded(
                cache_maxsize,
                READER_BYTES,
                weights,
                reweigh=functools.partial(weights, measure=False),
            )
        self._stripes = [threading.Lock() for _ in range(READER_STRIPES)]

    def get(self, aggregate_id: UUID, *args: Any, **kwargs: Any) -> Any:
        with self._stripes[hash(aggregate_id) % READER_STRIPES]:
            return super().get(aggregate_id, *args, **kwargs)


class EventLogApplication(Application[UUID]):
    """An eventsourcing application whose commits are linked into hash chains and whose log is
    read by position (by the follower, the projector, the watch streams and the audit)."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        super().__init__(env)
        self.listeners: list[Callable[[list[Recording[UUID]]], None]] = []
        self.heads = ChainHeads(self)
        # The SQL of the store's own (``service.eventstore.recorder``), by database.
        self.database = cast(EventRecorder, self.recorder)
        # PostgreSQL replicas write the same streams: before each batch the writer asks which
        # of them the others changed; a SQLite store has one writing process.
        self.writer = Writer(self, fastforward=self.database.several_writers)
        # What this process committed last, with positions: readers that follow the log (the
        # follower, the projector, the watch streams) take them from here instead of reading
        # and decoding again, where nothing else can lie between (``from_memory``). The event
        # objects are shared with the writer's aggregates and every reader: nothing may change
        # an event (or a list or dict in it) once it is committed.
        self.recent: deque[tuple[int, Any]] = deque(maxlen=RECENT)
        # What the writer read of the others' events catching up (PostgreSQL): with ``recent``
        # the whole log over a span, which the follower then need not read (``caught``).
        self.caught = Caught()
        # The transparency log's leaf hash of each event this process committed last, by
        # position: its appender takes them from here instead of reading and hashing again.
        self.logged: deque[tuple[int, bytes]] = deque(maxlen=4 * RECENT)

    def construct_repository(self) -> Repository[UUID]:
        size = self.env.get(self.AGGREGATE_CACHE_MAXSIZE)
        return ReaderRepository(self, int(size) if size else None)

    def construct_mapper(self) -> Mapper[UUID]:
        transcoder = self.construct_transcoder()
        assert isinstance(transcoder, JSONTranscoder)
        return ChainingMapper(transcoder)

    def submit(
        self, command: Callable[..., Any], *args: Any, present: Present | None = None
    ) -> Future[Any]:
        """Queue ``command(*args)`` for the writer; a future of ``present(result)``, set once
        the command's events are durable (``service.eventstore.writer``)."""
        return self.writer.submit(functools.partial(command, *args), present)

    def perform(
        self, command: Callable[..., R], *args: Any, present: Callable[[R], T]
    ) -> Awaitable[T]:
        """``submit`` for a coroutine: awaits ``present(result)`` without holding a thread."""
        done: Awaitable[T] = self.writer.perform(functools.partial(command, *args), present)
        return done

    def save(self, *objs: Any, **kwargs: Any) -> Saved:  # type: ignore[override]
        """Stage the new events of ``objs`` for the batch's one transaction: only a command
        saves, on the writer, with aggregates the writer loaded (``service.eventstore.writer``)."""
        if kwargs:
            raise TypeError(f"save takes no options here: {sorted(kwargs)}")
        if not self.writer.is_current():
            raise RuntimeError("save outside a command: make it a command (service.application)")
        return self.writer.stage(objs)

    def commit(self, events: Sequence[Any]) -> list[Recording[UUID]]:
        """Store ``events`` in one transaction, each linked to the one before it in its stream
        (``domain.tlog.chain``) as it is encoded, and tell the listeners."""
        recordings = self.heads.commit(events, functools.partial(self.events.put, events))
        self.recent.extend((r.notification.id, r.domain_event) for r in recordings)
        if recordings:
            self.caught.committed(recordings[0].notification.id, recordings[-1].notification.id)
        if self.heads.keep_leaves:
            self._keep_leaves(recordings)
        for listener in self.listeners:  # stored already: a listener's fault is only logged
            try:
                listener(recordings)
            except Exception:
                log.exception("commit_listener_failed")
        return recordings

    def _keep_leaves(self, recordings: list[Recording[UUID]]) -> None:
        """The commit's leaf hashes by position, for the transparency log; none when one is
        missing (it then reads those events from the store)."""
        leaves = self.heads.leaves
        logged = []
        for r in recordings:
            leaf = leaves.get((r.domain_event.originator_id, r.domain_event.originator_version))
            if leaf is None:
                return
            logged.append((r.notification.id, leaf))
        self.logged.extend(logged)

    def chain_head(self, aggregate_id: UUID, version: int | None = None) -> str:
        """The chain hash of a stream's event at ``version`` (default: its last event)."""
        return self.heads.head(aggregate_id, version)

    def close(self) -> None:
        self.writer.stop()
        super().close()

    def max_position(self) -> int:
        """The position of the newest stored event (0 when there is none)."""
        return self.recorder.max_notification_id() or 0

    def load(self, aggregate_id: UUID, version: int) -> Any:
        """An aggregate as it was at ``version``."""
        return self.repository.get(aggregate_id, version=version)

    def events_after(
        self, position: int, limit: int = 500, topics: Topics = None, *, caught: bool = False
    ) -> list[tuple[int, Any]]:
        """Stored events after a position in the log, with their positions. With ``topics``,
        only events of those topics are decoded; the others come as ``None`` so that a reader
        still advances past them. ``topics`` may be a function, asked once the events are read
        (so that a reader that starts wanting more, a live stream opening, misses none stored
        after it asked). This process's own latest commits come from memory (``from_memory``),
        the rest from the log, where an event this process committed is not decoded again
        either. With ``caught`` (the follower), what the writer's catch-ups read is taken from
        memory too (``service.eventstore.caught``): then the events may end before the log's
        newest, at the last one memory holds whole (the others' later events come with the
        next catch-up, or the next read that finds nothing in memory)."""
        span = self.caught.whole if caught else None  # before the snapshot of ``recent``
        recent = list(self.recent)  # a snapshot: the writer appends meanwhile
        run, whole = from_memory(recent, position, limit, only_writer=not self.writer.fastforward)
        wanted = topics() if callable(topics) else topics
        found = [
            (p, event if wanted is None or get_topic(type(event)) in wanted else None)
            for p, event in run
        ]
        if whole or (span is not None and run and span[0] >= 0 and span[1] <= run[-1][0]):
            return found  # with ``caught``: nothing is known past this process's newest commit
        after = run[-1][0] if run else position
        held = self.caught.after(after, limit - len(run), recent, RECENT, span) if caught else None
        if held is None:
            read = self.recorder.select_notifications(start=after + 1, limit=limit - len(run))
            known = mine_after(recent, after) if read else {}
            held = [(n.id, n.topic, n, known.get(n.id)) for n in read]
        topics = topics() if callable(topics) else topics
        for n_id, topic, stored, mine in held:
            if topics is not None and topic not in topics:
                found.append((n_id, None))
            elif mine is not None:
                found.append((n_id, mine))
            else:
                assert stored is not None
                found.append((n_id, self.mapper.to_domain_event(stored)))
        return found


def command(method: Callable[P, R]) -> Callable[P, R]:
    """A command: run on the process's one writer (``service.eventstore.writer``), which commits it
    with the commands waiting beside it and re-runs it from fresh loads when that commit lost a race
    with another process (PostgreSQL replicas). Called on the writer (by another command) it
    runs in place; from any other thread it waits and returns a copy of the result."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        app = args[0]
        assert isinstance(app, EventLogApplication)
        if app.writer.is_current():
            return method(*args, **kwargs)
        result: R = app.writer.call(functools.partial(method, *args, **kwargs))
        return result

    return wrapper


def from_memory(
    recent: Sequence[tuple[int, T]], after: int, limit: int, *, only_writer: bool
) -> tuple[list[tuple[int, T]], bool]:
    """What a reader at position ``after`` can take from ``recent`` (this process's latest
    commits, by position, oldest first), and whether that is all it needs now.

    The run is the entries at ``after + 1``, ``after + 2``, … up to the first gap, at most
    ``limit``: each was committed by this process and every position between ``after`` and the
    last of them is one of them, so the reader misses nothing, on SQLite or on PostgreSQL, where
    other replicas commit in the gaps. It is all when it reaches ``limit``, or when this process
    is the store's ``only_writer`` and the run ends at its latest commit (nothing can have been
    committed since); otherwise the reader goes on in the log after the run."""
    if limit <= 0:  # nothing asked for: not the entry after ``after``, nor the log's LIMIT -1
        return [], True
    if not recent:
        return [], False
    start = bisect.bisect_left(recent, after + 1, key=lambda entry: entry[0])
    if start == len(recent) or recent[start][0] != after + 1:
        return [], only_writer and recent[-1][0] == after
    run = [recent[start]]
    for entry in recent[start + 1 : start + limit]:
        if entry[0] != run[-1][0] + 1:
            break
        run.append(entry)
    return run, len(run) == limit or (only_writer and run[-1][0] == recent[-1][0])


def mine_after(recent: Sequence[tuple[int, T]], after: int) -> dict[int, T]:
    """The entries of ``recent`` after position ``after``, by position: what a read of the log
    need not decode (or hash) again."""
    start = bisect.bisect_right(recent, after, key=lambda entry: entry[0])
    return dict(recent[start:])
