"""The one way an RPC reads the views (``projections.store``): as of the call, or UNAVAILABLE.

One process keeps the views (SQLite: the server; PostgreSQL: one replica at a time; with
``serve --background worker``, a ``thirteen worker``); the others only read them, and any of
them may find the views behind the log, of another version or being rebuilt. ``Views.read``
answers from views of this server's schema that hold every event stored before the call
(read-your-writes), read in one snapshot with their tracking rows; when they lag it waits for
them (``CATCH_UP_SECONDS`` at most, and never past the call's deadline), and otherwise says
UNAVAILABLE: never a partial answer, never an internal error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from projections.projector import Projector
from projections.store import SCHEMA_VERSION, FinishedRound, Tracking, ViewsMissing, ViewStore
from service.errors import Unavailable
from service.rpc.runner import remaining

T = TypeVar("T")

CATCH_UP_SECONDS = 5.0


class Behind(Exception):
    """The snapshot's views do not hold the log up to ``target`` yet."""

    def __init__(self, target: int) -> None:
        super().__init__(target)
        self.target = target


class Views:
    """The views of ``store``, kept by ``projector`` (this process's, or on PostgreSQL perhaps
    another replica's: ``projector.wait`` watches the views' position either way)."""

    def __init__(self, store: ViewStore, projector: Projector) -> None:
        if not store.reads_head:
            raise ValueError("the views must read the log's head: open them with database.views()")
        self.store = store
        self.projector = projector

    def read(self, read: Callable[[ViewStore], T], what: str, *, upto: int | None = None) -> T:
        """``read(store)`` from views of this server's schema that hold every event up to the
        log position ``upto``: by default the newest stored when this is called, so a command
        answered before the call is in the answer. ``what`` names what is read, for the
        message when the views cannot hold it in time. A later page of a listing ordered by
        log position needs only ``upto`` where it starts; a row that is final once written
        (a round that ended) needs ``upto=0``.

        When the views are current this costs one small query besides the read, in the same
        read-only transaction: the views' tracking rows and the log's newest position."""
        return self.attempted(lambda upto: snapshot(self.store, read, upto), what, upto=upto)

    def attempted(self, attempt: Callable[[int | None], T], what: str, *, upto: int | None) -> T:
        """``read``'s waiting around ``attempt(upto)``, a read of a snapshot here or in a
        reader process (``service.rpc.reader``): it raises ``Behind`` when the views do not
        hold the log up to ``upto`` (None: the head its snapshot read), and ``ViewsMissing``
        while they are rebuilt."""
        try:
            try:
                return attempt(upto)
            except Behind as behind:
                target = behind.target
            self._wait(target, what)
            try:
                return attempt(target)
            except Behind:  # caught up, then dropped and rebuilt from the start since
                raise _rebuilding() from None
        except ViewsMissing:
            raise _rebuilding() from None

    def finished_round(self, round_id: str, ended: Callable[[], bool]) -> FinishedRound | None:
        """The views' row of a round: one found is final, so the views need not be current;
        one not found is waited for (to the store's newest event) only when ``ended()`` says
        the round is over (it may refuse the round instead: unknown, not over)."""
        found = self.read(lambda s: s.finished_round(round_id), f"round {round_id}", upto=0)
        if found is not None or not ended():
            return found
        found = self.read(lambda s: s.finished_round(round_id), f"round {round_id}")
        assert found is not None, f"round {round_id} is over but not in views that hold its end"
        return found

    def _wait(self, target: int, what: str) -> None:
        """Until the views hold every event up to ``target``, at most ``CATCH_UP_SECONDS``;
        UNAVAILABLE rather than stale data. Bounded by the call's deadline too: the views
        may be kept by another process (a ``thirteen worker``), whose stored position is
        polled."""
        if self.projector.wait(target, remaining(CATCH_UP_SECONDS)):
            return
        if self.projector.stalled:
            raise Unavailable(
                "the results view has stopped advancing: no thirteen worker keeps it (see the "
                f"server's health); {what} is not in it yet"
            )
        if self.projector.failure is not None:
            raise Unavailable(
                "the results view cannot take in new events (see the server's health and "
                f"log); {what} is not in it yet"
            )
        raise Unavailable(
            f"the results view has not caught up with {what} within "
            f"{CATCH_UP_SECONDS:g} s; retry shortly"
        )


def snapshot(store: ViewStore, read: Callable[[ViewStore], T], upto: int | None) -> T:
    """``read(store)`` in a snapshot of views of this schema that hold the log up to ``upto``
    (None: its head in the same snapshot); ``Behind`` when they do not yet."""

    def current(tracking: Tracking) -> T:
        _check_schema(tracking.schema)
        target = tracking.head if upto is None else upto
        assert target is not None  # the store reads the head (``Views``)
        if tracking.position < target:
            raise Behind(target)
        return read(store)

    return store.as_of(current)


def _check_schema(found: int) -> None:
    """Views of another version are read by no server of this one: an earlier version's lack
    what this one answers from, a later version's may mean something else."""
    if found == SCHEMA_VERSION:
        return
    if found < SCHEMA_VERSION:
        raise Unavailable(
            f"the results view is of schema {found}, kept by a server of an earlier version; "
            f"this server needs schema {SCHEMA_VERSION}, which a server of its version builds "
            "when it keeps the views (stop the earlier one); retry then"
        )
    raise Unavailable(
        f"the results view is of schema {found}, kept by a server of a later version; this "
        f"server reads only schema {SCHEMA_VERSION} and leaves those views alone (upgrade it)"
    )


def _rebuilding() -> Unavailable:
    return Unavailable(
        "the results view is being rebuilt by the server that keeps it; retry shortly"
    )
