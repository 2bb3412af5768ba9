"""What a command hands back through the writer (``service.eventstore.writer``): its answer to the
caller, set once its batch is durable, for a thread (a ``concurrent.futures.Future``) or a
coroutine (an asyncio future, all of a batch's answers settled in one call onto the loop), and
``Saved``, what one ``save`` staged and where the commit stored it."""

from __future__ import annotations

import asyncio
import contextlib
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from typing import Any, Protocol
from uuid import UUID

from eventsourcing.persistence import Recording

from domain.tlog.chain import CHAIN


class Present(Protocol):
    def __call__(self, result: Any, /) -> Any: ...


@dataclass
class Saved:
    """The events one ``save`` staged, and where they were stored once the batch committed
    (or, from ``stored``, a save read back from the store)."""

    events: list[Any]
    recordings: list[Recording[UUID]] = field(default_factory=list)
    known: tuple[int, dict[UUID, str]] | None = None  # position and heads read from the store

    def __deepcopy__(self, memo: dict[int, Any]) -> Saved:
        return self  # a handle the commit fills in: copies of a result must share it

    @classmethod
    def stored(cls, position: int, stream: UUID, head: str) -> Saved:
        return cls([], known=(position, {stream: head}))

    @property
    def position(self) -> int:
        """The log position of this save's last event."""
        if self.known is not None:
            return self.known[0]
        if not self.recordings:
            raise RuntimeError("the save is not committed yet")
        return self.recordings[-1].notification.id

    def head(self, stream: UUID) -> str:
        """The chain hash of this save's last event in ``stream``."""
        if self.known is not None:
            return self.known[1][stream]
        for event in reversed(self.events):
            if event.originator_id == stream:
                return str(getattr(event, CHAIN))
        raise KeyError(stream)


class Answer(Protocol):
    """Where a command's outcome goes: ``done`` says the caller gave up before it ran;
    ``answered``, that it has an outcome (or gave up)."""

    def done(self) -> bool: ...

    def answered(self) -> bool: ...

    def give(self, value: Any, error: BaseException | None) -> None: ...


class ThreadAnswer:
    """For a caller on another thread: a ``concurrent.futures.Future``."""

    def __init__(self) -> None:
        self.future: Future[Any] = Future()

    def done(self) -> bool:
        return self.future.done()

    def answered(self) -> bool:
        return self.future.done()

    def give(self, value: Any, error: BaseException | None) -> None:
        with contextlib.suppress(InvalidStateError):  # cancelled meanwhile
            if error is None:
                self.future.set_result(value)
            else:
                self.future.set_exception(error)


class LoopAnswer:
    """For a coroutine: an asyncio future, settled on its loop. The writer hands over all of a
    batch's answers for one loop in one call (``Writer._hand_over``): one wake-up a batch."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.future: asyncio.Future[Any] = loop.create_future()
        self.outcome: tuple[Any, BaseException | None] | None = None

    def done(self) -> bool:
        return self.future.done()  # read from the writer: at worst a cancelled call runs

    def answered(self) -> bool:
        return self.outcome is not None or self.future.done()

    def give(self, value: Any, error: BaseException | None) -> None:
        self.outcome = (value, error)

    def settle(self) -> None:
        if self.future.done() or self.outcome is None:  # the caller gave up
            return
        value, error = self.outcome
        if error is None:
            self.future.set_result(value)
        else:
            self.future.set_exception(error)


def settle_all(answers: list[LoopAnswer]) -> None:
    """On the loop: settle a batch's answers to its coroutines, each whatever the others do."""
    for answer in answers:
        try:
            answer.settle()
        except Exception as error:  # e.g. an error asyncio refuses to carry (StopIteration)
            if not answer.future.done():
                answer.future.set_exception(RuntimeError(f"the command failed: {error!r}"))
