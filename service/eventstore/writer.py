"""Group commit: one thread per process runs every command, one after another, against the
aggregates it keeps in memory, and commits the events of all the commands that were waiting in
one transaction. Each caller is answered once its batch is durable.

- A command refused by the rules (it raises) stores nothing and leaves the others in its batch
  alone: whatever it changed in memory is rebuilt from the store and the batch's earlier events.
- A batch whose commit loses a race with another replica (``IntegrityError``) is run again
  command by command from fresh loads; a lone command that loses again is queued again after a
  short, growing pause (at most ``RETRIES`` times), so the writer never sleeps. A commit that
  fails otherwise, with the store in reach (an event that cannot be encoded or stored), is run
  again command by command too, so that only the command that poisoned it fails; when the store
  is out of reach every caller of the batch is told so.
- Commands see the batch's earlier commands (a transfer id used twice in one batch, an arrange
  and the reveal of one round) because they load the same in-memory aggregates.
- Loads are not copied: the writer owns its aggregates. On PostgreSQL each batch first reads
  what other replicas stored since the last batch (one query, the events themselves): the chain
  heads it holds move on at once, and the aggregates it holds take their new events when next
  loaded, without reading them again; a SQLite store has one writing process, so its aggregates
  are always current.
- A result is read on the writer thread right after its command (``present``), before a later
  command can change the aggregates it holds, and handed over once the batch is durable; what
  only the commit knows (a log position, a chain hash) is read from its ``Saved`` then.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol
from uuid import UUID

import structlog
from eventsourcing.application import project_aggregate
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import (
    EventStore,
    IntegrityError,
    InterfaceError,
    Notification,
    OperationalError,
    Recording,
)

from domain.errors import RuleError
from service.bounded import AggregateWeights, Bounded
from service.caller import CALLER_FIELD, current
from service.eventstore.answers import Saved
from service.eventstore.batch import Batch, UndoFailed
from service.eventstore.caught import Caught
from service.eventstore.chaining import ChainHeads
from service.eventstore.queue import RETRIES, CommandQueue, Job
from service.eventstore.recorder import EventRecorder

log = structlog.get_logger("thirteen.writer")

LIVE_SIZE = 5000  # aggregates the writer keeps in memory, at most
LIVE_BYTES = 32 * 2**20  # and what they weigh together (a revealed round weighs 30-45 kB)
CATCH_UP = 1000  # other replicas' events read per query when catching up
CATCH_UP_PAGES = 20  # queries before the writer forgets what it holds and starts afresh


class Log(Protocol):
    """What the writer needs of the event log it writes (``service.eventstore.eventlog``)."""

    @property
    def events(self) -> EventStore[UUID]: ...

    @property
    def database(self) -> EventRecorder: ...

    @property
    def heads(self) -> ChainHeads: ...

    caught: Caught  # what catch-ups read, kept for the follower (``service.eventstore.caught``)

    def max_position(self) -> int: ...

    def commit(self, events: Sequence[Any]) -> list[Recording[UUID]]: ...


class Writer(CommandQueue):
    """The one thread of a process that changes aggregates and stores their events."""

    def __init__(self, app: Log, *, fastforward: bool) -> None:
        super().__init__()
        self.app = app
        self.fastforward = fastforward
        self.weights = AggregateWeights()
        self.live: Bounded[UUID, Aggregate] = self._held()
        self.batch: Batch | None = None
        self.batches = 0  # transactions committed, for tests and benchmarks
        # Told (commands, seconds) after each committed batch (``service.metrics``).
        self.on_commit: Callable[[int, float], None] | None = None
        self._seen = -1  # with ``fastforward``: the log position this writer has looked at
        self._behind: set[UUID] = set()  # held aggregates to read again from the store
        # Events other replicas added to held aggregates, read by the catch-up: applied when
        # the aggregate is next loaded (most are, and then none is read again).
        self._newer: dict[UUID, list[Notification]] = {}

    def _held(self) -> Bounded[UUID, Aggregate]:
        return Bounded(LIVE_SIZE, LIVE_BYTES, self.weights)

    # Commands' view of the aggregates ------------------------------------------------------

    def load(self, aggregate_id: UUID) -> Aggregate | None:
        """The aggregate as this batch sees it: committed, then changed by earlier commands."""
        batch = self.batch
        assert batch is not None, "load outside a command"
        batch.read.add(aggregate_id)
        found = batch.touched.get(aggregate_id)
        if found is not None:
            return found
        try:
            found = self.live.get(aggregate_id)
        except KeyError:
            self._newer.pop(aggregate_id, None)  # held no more: read whole
            found = self._stored(aggregate_id)
        else:
            if aggregate_id in self._newer or aggregate_id in self._behind:
                try:
                    found = self._bring_up(aggregate_id, found)
                except BaseException:
                    self._evict(aggregate_id)
                    raise
        if found is None:
            return None
        batch.touched[aggregate_id] = found
        batch.stored[aggregate_id] = found.version
        return found

    def _bring_up(self, aggregate_id: UUID, held: Aggregate) -> Aggregate | None:
        """A held aggregate another replica added to: the events the catch-up read, when they
        follow on from it; else (or when a failed commit left it in doubt) its new events read
        from the store."""
        found: Aggregate | None = held
        after = held.version
        newer = [n for n in self._newer.pop(aggregate_id, ()) if n.originator_version > after]
        versions = [n.originator_version for n in newer]
        if newer and versions == list(range(after + 1, after + 1 + len(newer))):
            to_event = self.app.events.mapper.to_domain_event
            found = project_aggregate(held, [to_event(n) for n in newer])
        elif newer:  # not next to what is held: read what follows it
            self._behind.add(aggregate_id)
        if aggregate_id in self._behind and found is not None:
            self._behind.discard(aggregate_id)
            found = project_aggregate(found, self.app.events.get(aggregate_id, gt=found.version))
        return found

    def stage(self, objs: Sequence[Any]) -> Saved:
        """Take the new events of ``objs`` into the batch (stored when it commits), each
        naming the caller of the command that caused it (``service.caller``)."""
        batch = self.batch
        assert batch is not None, "save outside a command"
        events: list[Any] = []
        for obj in objs:
            if isinstance(obj, Aggregate):
                batch.touched[obj.id] = obj
                events += obj.collect_events()
        identity = current().identity
        for event in events:  # stored with the event, inside its chain link
            object.__setattr__(event, CALLER_FIELD, identity)
        saved = Saved(events)
        batch.saves.append((saved, len(batch.events)))
        batch.events += events
        return saved

    def staged(self, stream: UUID) -> Saved | None:
        """The latest save of this batch with events of ``stream``: an earlier command of the
        batch changed it, and what it answered is known once the batch commits."""
        batch = self.batch
        assert batch is not None, "staged outside a command"
        for saved, _ in reversed(batch.saves):
            if any(event.originator_id == stream for event in saved.events):
                return saved
        return None

    def _stored(self, aggregate_id: UUID, version: int | None = None) -> Aggregate | None:
        """The aggregate from the store (at ``version``, or its last)."""
        events = self.app.events.get(aggregate_id, lte=version)
        found: Aggregate | None = project_aggregate(None, events)
        return found

    # The thread ----------------------------------------------------------------------------

    def _catch_up(self) -> None:
        """Read the events other replicas stored since the last look (one query a batch): the
        chain heads held move on to them now, and the aggregates held take them when next
        loaded, so no command answers from a stale aggregate and none is read again one by one.
        (PostgreSQL's recorder locks the table to insert, so events become visible in position
        order: none can appear later below a position already seen.)"""
        if self._seen < 0:  # the first batch: nothing is held yet
            self._seen = self.app.caught.restart(self.app.max_position())
            return
        for _ in range(CATCH_UP_PAGES):
            changed = self.app.database.changed_since(self._seen, CATCH_UP)
            self.app.caught.read(self._seen, changed)  # the follower need not read them again
            for stored in changed:
                stream = stored.originator_id
                if not isinstance(stream, UUID):
                    stream = UUID(stream)
                version = stored.originator_version
                self.app.heads.follow(stream, version, stored.state)
                try:
                    held = self.live.get(stream)
                except KeyError:
                    continue
                if held.version < version:  # another replica's event, not one of ours
                    self._newer.setdefault(stream, []).append(stored)
            if changed:
                self._seen = changed[-1].id
            if len(changed) < CATCH_UP:
                return
        self.live = self._held()  # far behind: start afresh
        self._behind.clear()
        self._newer.clear()
        self._seen = self.app.caught.restart(self.app.max_position())

    def _batch(self, jobs: list[Job]) -> None:
        jobs = [j for j in jobs if not j.answer.done()]  # not cancelled while queued
        batch = self.batch = Batch()
        outcomes: list[tuple[Job, Any, Exception | None]] = []
        took: float | None = None  # the commit's seconds, once it is durable
        tracer = self.tracer
        traced: list[tuple[Any, int, int]] = []  # with a tracer: each job's mark and events
        if tracer is not None:
            tracer.taken([job.trace for job in jobs])
        try:
            if self.fastforward:
                self._catch_up()
            for job in jobs:
                if tracer is not None:
                    traced.append((job.trace, len(batch.events), 0))
                try:
                    result = self._run_one(job, batch)
                except UndoFailed:
                    raise
                except Exception as refused:
                    outcomes.append((job, None, refused))
                    continue
                try:  # now, before a later command of the batch changes what it shows
                    outcomes.append((job, job.present(result) if job.present else result, None))
                except Exception as failed:  # a fault in presenting: the command still stands
                    log.exception("present_failed")
                    outcomes.append((job, None, failed))
            if tracer is not None:
                traced = _spans(traced, len(batch.events))
            recordings: list[Recording[UUID]] = []
            if batch.events:
                started_ns = time.time_ns() if tracer is not None else 0
                started = time.perf_counter()
                recordings = self._commit(batch)
                took = time.perf_counter() - started
        except Exception as failed:  # nothing of this batch is stored
            lost, outcomes = self._failed(batch, jobs, failed)
        except BaseException:  # not the store's (an interrupt): nothing held may stay changed
            self._forget(batch)
            raise
        else:
            lost = False
            self.batches += bool(batch.events)
        finally:
            self.batch = None
        if lost:
            for job in jobs:  # who lost, or poisoned it? each again alone, from fresh loads
                if len(jobs) > 1:
                    self._batch([job])
                else:
                    self._retry_later(job)
            return
        for job, value, error in outcomes:
            job.answer.give(value, error)
        if took is not None and self.on_commit is not None:  # after every answer is given
            self.on_commit(len(jobs), took)
        if took is not None and tracer is not None:
            positions = [r.notification.id for r in recordings]
            tracer.committed([(mark, positions[a:b]) for mark, a, b in traced], started_ns)

    def _failed(
        self, batch: Batch, jobs: list[Job], failed: Exception
    ) -> tuple[bool, list[tuple[Job, Any, Exception | None]]]:
        """After a batch failed, storing nothing: whether it is lost (each of its commands runs
        again alone, from fresh loads), else what each caller is told."""
        self._forget(batch)
        if isinstance(failed, IntegrityError):  # another replica wrote one of these streams first
            return True, []
        if isinstance(failed, (OperationalError, InterfaceError, UndoFailed)):
            # The store is out of reach (or what it holds unknown): each caller is told so
            # (retryable).
            cause = failed.__cause__ if isinstance(failed, UndoFailed) else None
            failure = cause if isinstance(cause, Exception) else failed
            return False, [(job, None, failure) for job in jobs]
        # The commit refused what one command stored (its encoding, a value the database will
        # not take): who poisoned it?
        if len(jobs) > 1:
            log.warning("batch_commit_failed", commands=len(jobs), cause=repr(failed)[:200])
        return len(jobs) > 1, [(job, None, failed) for job in jobs]

    def _run_one(self, job: Job, batch: Batch) -> Any:
        """Run a command in the batch; a refusal changes nothing. On PostgreSQL a refusal is
        trusted only if what it read was still current: the aggregates are loaded one by one,
        and another replica may have changed one between two loads (a round read before its
        reveal elsewhere, its table after it). Then it runs again on what is stored."""
        for attempt in range(RETRIES):
            mark = (len(batch.events), len(batch.saves))
            batch.read = set()
            try:
                result = job.run()
                self._check_saved(batch)
                return result
            except Exception as refused:
                try:
                    self._undo(batch, *mark)
                except Exception as failed:  # the batch's state is unknown: it cannot commit
                    raise UndoFailed from failed
                if not (self.fastforward and isinstance(refused, RuleError)):
                    raise
                if attempt + 1 == RETRIES or not self._reread(batch):
                    raise
        raise AssertionError("unreachable")

    @staticmethod
    def _check_saved(batch: Batch) -> None:
        """A command saves whatever it changes: an aggregate it loaded with events it did not
        save would hand them to the next command that saves it."""
        unsaved = [i for i in batch.read if (a := batch.touched.get(i)) and a.pending_events]
        if unsaved:
            raise RuntimeError(f"a command changed {unsaved} without saving them")

    def _reread(self, batch: Batch) -> bool:
        """Whether another replica stored events of what the command read since it was loaded:
        those aggregates are read again on their next load. Those an earlier command of the
        batch changed are left to the commit, whose optimistic check then fails, and every
        command of the batch runs again alone."""
        loaded = {i: batch.stored[i] for i in batch.read if i in batch.stored}
        newer = self.app.database.stored_versions(list(loaded))
        changed = [i for i, version in newer.items() if version > loaded[i]]
        staged = {e.originator_id for e in batch.events}
        fresh = [i for i in changed if i not in staged]
        for aggregate_id in fresh:
            batch.touched.pop(aggregate_id, None)
            batch.stored.pop(aggregate_id, None)
            self._behind.add(aggregate_id)
        return bool(fresh)

    def _commit(self, batch: Batch) -> list[Recording[UUID]]:
        recordings = self.app.commit(batch.events)
        for saved, start in batch.saves:
            saved.recordings = recordings[start : start + len(saved.events)]
        for aggregate_id, aggregate in batch.touched.items():
            self.live.put(aggregate_id, aggregate)
        return recordings

    def _undo(self, batch: Batch, events: int, saves: int) -> None:
        """Put back the aggregates a refused command changed: the stored version the batch
        loaded, then the batch's earlier events (most refusals change nothing, and then this is
        cheap)."""
        dirty = {e.originator_id for e in batch.events[events:]}
        for aggregate_id, aggregate in batch.touched.items():
            if aggregate.pending_events:
                aggregate.collect_events()
                dirty.add(aggregate_id)
        del batch.events[events:]
        del batch.saves[saves:]
        for aggregate_id in dirty:  # never trust the changed instances again
            self._evict(aggregate_id)
            batch.touched.pop(aggregate_id, None)
        for aggregate_id in dirty:
            earlier = [e for e in batch.events if e.originator_id == aggregate_id]
            base = batch.stored.get(aggregate_id)  # as loaded: another replica may add to it
            start = None if base is None else self._stored(aggregate_id, base)
            rebuilt = project_aggregate(start, earlier)
            if rebuilt is not None:
                batch.touched[aggregate_id] = rebuilt

    def _forget(self, batch: Batch) -> None:
        """After a failed commit: what the batch changed is dropped (it holds events that were
        not stored); what it only read is still as stored, and is read up to date next time."""
        changed = {e.originator_id for e in batch.events}
        for aggregate_id in batch.touched:
            if aggregate_id in changed:
                self._evict(aggregate_id)
            elif self.fastforward:
                self._behind.add(aggregate_id)

    def _evict(self, aggregate_id: UUID) -> None:
        self._behind.discard(aggregate_id)
        self._newer.pop(aggregate_id, None)
        with contextlib.suppress(KeyError):
            self.live.get(aggregate_id, evict=True)


def _spans(traced: list[tuple[Any, int, int]], events: int) -> list[tuple[Any, int, int]]:
    """Each traced job's mark and first event, with where its events end: where the next job's
    begin, the last job's at the batch's ``events``."""
    ends = [first for _, first, _ in traced[1:]] + [events]
    return [(mark, first, end) for (mark, first, _), end in zip(traced, ends, strict=True)]
