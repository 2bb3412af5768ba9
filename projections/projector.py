"""Keeps the views up to date: reads the event log after the views' tracking position, folds
the events, and writes the records and the new position in one transaction (exactly once).

On PostgreSQL, replicas elect one projector with an advisory lock held on a connection of its
own; when that process dies its connection closes, the lock is released, and another replica's
projector takes over from the tracking position.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Collection
from typing import Any, Protocol
from uuid import UUID

import structlog

from projections.folds import Record, ViewFold
from projections.stall import Stall
from projections.store import SCHEMA_VERSION, StaleBatch, ViewStore

log = structlog.get_logger("thirteen.projector")

DATABASE_FAILURES_BEFORE_UNHEALTHY = 3
STALL_CHECK = 1.0  # seconds between looks at views kept by another process (``stall_after``)


class EventSource(Protocol):
    def events_after(
        self, position: int, limit: int = ..., topics: Collection[str] | None = ...
    ) -> list[tuple[int, Any]]: ...

    def max_position(self) -> int: ...

    def load(self, aggregate_id: UUID, version: int) -> Any: ...


class Leadership(Protocol):
    """Who keeps the views among the processes of a store (``service.eventstore.locks``);
    without one, this process alone keeps them."""

    def acquire(self) -> bool:
        """Try to become (or stay) the one projector; True while leading."""
        ...

    def release(self) -> None: ...


class ProjectionError(Exception):
    """An event the views cannot take in; names it."""

    def __init__(self, position: int, event: Any) -> None:
        self.position = position
        self.event = (
            f"{type(event).__qualname__} v{event.originator_version} of {event.originator_id}"
        )
        super().__init__(f"cannot project event {position} ({self.event})")


class NewerViews(Exception):
    """The views are of a later schema than this server's: a server of a newer version keeps
    them (a rolling upgrade on PostgreSQL). This one must neither write them nor rebuild them
    back to its own schema."""

    def __init__(self, found: int) -> None:
        self.found = found
        super().__init__(
            f"the views are of schema {found}, newer than this server's {SCHEMA_VERSION}: a "
            "server of a later version keeps them; this one leaves them alone (upgrade it)"
        )


class Stalled(Exception):
    """Views kept by another process have not advanced while events waited (``Stall``)."""


class Projector:
    """Keeps the views; ``failure`` says why it cannot, and ``on_health(ok)`` is told each
    time it stops or starts being able to (the server turns that into health statuses).

    With ``stall_after``, a process that does not lead (its leadership never acquires: a
    serving process whose views a ``thirteen worker`` keeps) judges the keeper instead: it
    fails while the views have not advanced for that many seconds with events waiting."""

    def __init__(
        self,
        source: EventSource,
        store: ViewStore,
        *,
        leadership: Leadership | None = None,
        interval: float = 0.1,
        batch: int = 2000,
        on_health: Callable[[bool], None] | None = None,
        stall_after: float | None = None,
    ) -> None:
        self.source = source
        self.store = store
        self.leadership = leadership
        self.interval = interval
        self.batch = batch
        self.on_health = on_health
        self.failure: str | None = None
        self.leading = False  # whether this process keeps the views now
        self.failed_runs = {"event": 0, "database": 0, "schema": 0}  # by cause (metrics)
        # Told (after, last, began) once the views took in the events after position ``after``
        # up to ``last``, a batch begun at ``began`` (``time.time_ns()``): ``service.tracing``.
        self.on_projected: Callable[[int, int, int], None] | None = None
        self.fold = ViewFold()
        self._balances: dict[str, int] | None = None
        self._stall = None if stall_after is None else Stall(stall_after)
        self.stalled = False  # the views another process keeps have stalled (``stall_after``)
        self._stall_checked = float("-inf")
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="projector", daemon=True)

    def poke(self) -> None:
        self._wake.set()

    def _load(self, aggregate_id: UUID, version: int) -> Any:
        return self.source.load(aggregate_id, version)

    def run_once(self, progress: Callable[[int], None] | None = None) -> int:
        """Project every event stored after the views' position; returns how many."""
        done = 0
        while True:
            traced = self.on_projected
            began = time.time_ns() if traced is not None else 0
            start = self.store.position()
            events = self.source.events_after(start, self.batch, ViewFold.TOPICS)
            if not events:
                return done
            if self._balances is None:
                self._balances = self.store.balances()
            records: list[tuple[int, Record]] = []
            for position, event in events:
                if event is None:
                    continue
                try:
                    records.extend((position, r) for r in self.fold.apply(event, self._load))
                except Exception as error:
                    self._reset()  # the fold may hold half of this batch
                    raise ProjectionError(position, event) from error
            balances = dict(self._balances)
            try:
                self.store.write(records, start, events[-1][0], balances)
            except StaleBatch:
                self._reset()
                continue
            except BaseException:
                self._reset()
                raise
            self._balances = balances
            done += len(events)
            if traced is not None:
                traced(start, events[-1][0], began)
            if progress is not None:
                progress(events[-1][0])

    def _reset(self) -> None:
        """Forget what may be ahead of or behind the stored views."""
        self.fold = ViewFold()
        self._balances = None

    def wait(self, position: int, timeout: float) -> bool:
        """Until the views include every event up to ``position`` (read-your-writes); False
        at the timeout, or at once while the projector is failing."""
        deadline = time.monotonic() + timeout
        pause = 0.0005
        while self.store.position() < position:
            if time.monotonic() >= deadline or self.failure is not None:
                return False
            self.poke()
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
        return True

    def start(self) -> None:
        self.store.create()
        self._thread.start()

    def stop(self) -> None:
        """Stop following; the leader first takes in what was stored up to now, so that a
        graceful stop leaves the views at the end of the log."""
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=10)
        if self.leading and not self._thread.is_alive():
            try:
                self.run_once()
            except Exception as error:  # the next start catches up from the stored position
                log.warning("projection_not_drained", cause=repr(error))
        if self.leadership is not None:
            self.leadership.release()

    def upgrade(self) -> bool:
        """Rebuild views of an earlier schema from the log (once, by the leader); True if it
        did. Until it is done, readers wait or are told the views are unavailable."""
        found = self.store.schema_version()
        if found == SCHEMA_VERSION:
            return False
        if found > SCHEMA_VERSION:
            raise NewerViews(found)
        log.warning("views_rebuilding", found_schema=found, schema=SCHEMA_VERSION)
        replayed = rebuild(self.source, self.store)
        self._reset()
        log.info("views_rebuilt", events=replayed, schema=SCHEMA_VERSION)
        return True

    def _healthy(self, ok: bool, error: BaseException | None = None) -> None:
        was = self.failure is None
        self.failure = None if ok else str(error or "the views cannot be updated")
        if ok != was and self.on_health is not None:
            self.on_health(ok)

    def _judge_keeper(self) -> None:
        """Healthy, unless the views another process keeps have stalled (``stall_after``);
        looked at every ``STALL_CHECK`` seconds however often readers poke."""
        if self._stall is None:
            self._healthy(True)
            return
        now = time.monotonic()
        if now - self._stall_checked < STALL_CHECK:
            return
        self._stall_checked = now
        problem = self._stall.observe(self.store.position(), self.source.max_position(), now)
        self.stalled = problem is not None
        if problem is None:
            if self.failure is not None:
                log.info("views_advancing")
            self._healthy(True)
        elif self.failure is None:
            log.error("views_stalled", reason=problem)
            self._healthy(False, Stalled(problem))

    def _run(self) -> None:
        leading = False
        failures = 0
        while not self._stop.is_set():
            try:
                now_leading = self.leadership is None or self.leadership.acquire()
                if now_leading and not leading:
                    self._reset()
                    self.upgrade()
                leading = self.leading = now_leading
                if leading:
                    self.run_once()
                    self._healthy(True)
                else:
                    self._judge_keeper()
                failures = 0
            except NewerViews as error:
                # Leave the views to a newer server: give the lead up so that one can take it.
                log.error("views_of_newer_schema", found_schema=error.found, schema=SCHEMA_VERSION)
                self.failed_runs["schema"] += 1
                if self.leadership is not None:
                    self.leadership.release()
                leading = self.leading = False
                self._healthy(False, error)
                self._stop.wait(5.0)
            except ProjectionError as error:
                log.error(
                    "projection_failed",
                    position=error.position,
                    failed_event=error.event,
                    cause=repr(error.__cause__),
                    exc_info=True,
                )
                self.failed_runs["event"] += 1
                self._healthy(False, error)
                self._stop.wait(1.0)
            except Exception as error:
                # The database, not the events: a cut session or a lock wait. A warning at
                # once; a failure, on health too, only if it lasts.
                failures += 1
                self.failed_runs["database"] += 1
                if failures >= DATABASE_FAILURES_BEFORE_UNHEALTHY:
                    log.exception("projection_failed", cause=repr(error), attempt=failures)
                    self._healthy(False, error)
                else:
                    log.warning("projection_retrying", cause=repr(error), attempt=failures)
                self._reset()
                self._stop.wait(min(1.0, 0.1 * failures))
                with contextlib.suppress(Exception):  # e.g. the tables were dropped by a rebuild
                    self.store.create()
            self._wake.wait(self.interval if leading else 1.0)
            self._wake.clear()


def rebuild(
    source: EventSource, store: ViewStore, progress: Callable[[int, int], None] | None = None
) -> int:
    """Drop the views and replay the whole log into them; returns the events replayed.
    ``progress(position, last)`` is told how far it has got."""
    store.drop()
    store.create()
    last = source.max_position()
    projector = Projector(source, store, batch=5000)
    return projector.run_once(
        progress=(lambda position: progress(position, last)) if progress else None
    )
